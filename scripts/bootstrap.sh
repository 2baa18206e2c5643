#!/usr/bin/env bash
# Installs the Debian packages the build, demo and tests need, if any is missing.
# Idempotent and silent when everything is present. Usage: scripts/bootstrap.sh
set -euo pipefail

packages=(
  g++ clang clang-tidy lld cmake ninja-build pkg-config make python3 git file
  libabsl-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdw-dev libelf-dev libunwind-dev libzstd-dev liblzma-dev zlib1g-dev libbz2-dev
  libuv1-dev libglib2.0-dev nlohmann-json3-dev qtbase5-dev qt6-base-dev libasio-dev
  elfutils gdb llvm binutils llvm-14-dev xz-utils libclang-rt-14-dev
  libxml2-utils chromium redis-server redis-tools postgresql-15
  libcurl4-openssl-dev libdebuginfod-dev debuginfod python3-yaml
  protobuf-compiler libprotobuf-dev golang-go golang-github-google-pprof-dev jq
  prometheus-cpp-dev prometheus
  e2fsprogs
  emacs-nox gunicorn xvfb xauth zenity python3-gi gir1.2-gtk-3.0 nginx tk tmux sqlite3 python3-tk
  python3-psycopg2 fuse3 libfuse3-dev libpq-dev libpython3.11-dev
  # display_input_real_test: a window opened with Xlib, typed into by xdotool, on Xvfb
  libx11-dev xdotool
  # javac and java; openjdk-17-jre has AWT's X11 library (a Swing program under xvfb-run)
  openjdk-17-jdk-headless openjdk-17-jre
  # Ruby 3.1 frames: Debian's interpreter, and WEBrick with Rack for a real Rack server
  ruby ruby-webrick ruby-rack
)
# node and npm run the OTLP receiver of the `hangwatch export` tests and the HTML report's
# browser test (puppeteer-core). A node that came from elsewhere (NodeSource, its own npm
# included) is used as it is: Debian's npm would not install beside it.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# The official OTLP schemas for those tests (npm, pinned): in a cache directory, not the tree.
# tests/tools/CMakeLists.txt passes the same directory to the tests.
npm_dir=${HANGWATCH_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hangwatch-npm}
otlp_schema=$npm_dir/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js
install_npm_packages() {
  [ -f "$otlp_schema" ] && return 0
  mkdir -p "$npm_dir"
  echo "bootstrap: npm install @opentelemetry/otlp-transformer@0.52.1 into $npm_dir" >&2
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
    @opentelemetry/otlp-transformer@0.52.1 >&2
}

if [ ${#missing[@]} -eq 0 ]; then
  install_npm_packages
  exit 0
fi

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
install_npm_packages
