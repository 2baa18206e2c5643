#!/usr/bin/env bash
# Runs clang-tidy with the repository's .clang-tidy over the product's sources and fails on any
# finding (WarningsAsErrors). Not part of scripts/test.sh: over every file it takes about
# 25 minutes on two shared cores, so by default it checks only the sources changed since main.
# Its function-length rule (150 lines) runs in CI all the same: scripts/check-function-length.py,
# from the sources alone, in a second (scripts/test.sh).
#
# Usage: scripts/tidy.sh [--all] [FILE...]
#   (no argument)  the .cc files of agent/ cause/ python/ ruby/ js/ jvm/ hang/ report/ symbols/ unwind/
#                  integrations/ tools/ that differ from main (committed or not), and those that
#                  include a changed header of those folders or include/ (one level of
#                  #include); every file when .clang-tidy changed
#   --all          every .cc file of those folders
#   FILE...        these files
# HANGWATCH_TIDY_BASE=REV: what "changed" is measured against (default: main).
# HANGWATCH_TIDY_BUILD=DIR: the build tree whose compile_commands.json is used (default: build,
# configured and built by scripts/build.sh when missing; its generated layer headers are needed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${HANGWATCH_TIDY_BUILD:-build}
folders=(agent cause python ruby js jvm hang report symbols unwind integrations tools)

if ! command -v clang-tidy >/dev/null 2>&1; then
  echo "tidy.sh: clang-tidy not found (scripts/bootstrap.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
  scripts/build.sh "$build"
fi

# The sources the build compiles (files only built for macOS are not in the database).
mapfile -t compiled < <(python3 - "$build/compile_commands.json" "$root" "${folders[@]}" <<'EOF'
import json, sys
db, root, folders = sys.argv[1], sys.argv[2] + "/", sys.argv[3:]
files = {e["file"] for e in json.load(open(db))}
for f in sorted(files):
    if f.startswith(root) and f[len(root):].split("/")[0] in folders:
        print(f[len(root):])
EOF
)

files=()
if [ "${1:-}" = "--all" ]; then
  files=("${compiled[@]}")
elif [ $# -gt 0 ]; then
  files=("$@")
else
  base=$(git merge-base HEAD "${HANGWATCH_TIDY_BASE:-main}" 2>/dev/null || echo HEAD)
  mapfile -t changed < <({
    git diff --name-only "$base" --
    git ls-files --others --exclude-standard
  } | sort -u)
  if printf '%s\n' "${changed[@]}" | grep -qxF .clang-tidy; then
    changed=("${compiled[@]}")  # the checks changed: every file
  fi
  headers=()
  for f in "${changed[@]}"; do
    case "$f" in
      *.h) headers+=("${f#include/}") ;;
    esac
  done
  for f in "${compiled[@]}"; do
    if printf '%s\n' "${changed[@]}" | grep -qxF "$f"; then
      files+=("$f")
      continue
    fi
    for h in "${headers[@]}"; do
      if grep -qF "#include \"$h\"" "$f"; then
        files+=("$f")
        break
      fi
    done
  done
fi

if [ ${#files[@]} -eq 0 ]; then
  echo "tidy.sh: no source to check"
  exit 0
fi
echo "tidy.sh: ${#files[@]} files"
# One file per clang-tidy process, as many at a time as there are cores; the output of each
# file only when it has findings.
if ! printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -I{} sh -c \
    'out=$(clang-tidy -p "$0" --quiet "$1" 2>&1) || { printf "%s\n" "$out" | grep -v "warnings\? generated"; exit 1; }' \
    "$build" {}; then
  echo "tidy.sh: findings above" >&2
  exit 1
fi
echo "tidy.sh: clean"
