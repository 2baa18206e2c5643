#!/usr/bin/env bash
# Installs the Debian packages the build, demo and tests need, if any is missing.
# Idempotent and silent when everything is present. Usage: scripts/bootstrap.sh
set -euo pipefail

packages=(
  g++ clang lld cmake ninja-build pkg-config make python3 git file
  libabsl-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdw-dev libelf-dev libunwind-dev libzstd-dev liblzma-dev zlib1g-dev libbz2-dev
  libuv1-dev libglib2.0-dev nlohmann-json3-dev
  elfutils gdb llvm binutils llvm-14-dev xz-utils libclang-rt-14-dev
  libxml2-utils chromium redis-server redis-tools postgresql-15 nodejs
)
# npm: the HTML report's browser test installs puppeteer-core with it. A nodejs from elsewhere
# (NodeSource) brings its own npm and conflicts with Debian's package.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "bootstrap: installing ${missing[*]}" >&2
log=$(mktemp)
if ! { $sudo apt-get update -qq && \
       DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
         "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "bootstrap: apt-get failed (log above)" >&2
  exit 1
fi
rm -f "$log"
