#!/usr/bin/env bash
# Configures (once) and builds one build tree; prints the compiler's output only on failure.
# Usage: scripts/build.sh DIR [cmake -D options...]
# HANGWATCH_TARGETS="a b" builds only those targets (default: all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1; shift
mkdir -p "$dir"
if [ ! -f "$dir/build.ninja" ]; then
  if ! cmake -S "$root" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2; exit 1
  fi
fi
# shellcheck disable=SC2086  # a list of target names
if ! ninja -C "$dir" ${HANGWATCH_TARGETS:-} >"$dir/build.log" 2>&1; then
  grep -v '^\[' "$dir/build.log" | head -n 200 >&2
  echo "build failed in $dir (full log: $dir/build.log)" >&2
  exit 1
fi
