#!/usr/bin/env bash
# Configures (once) and builds one build tree; prints the compiler's output only on failure.
# Usage: scripts/build.sh DIR [cmake -D options...]
# HANGWATCH_TARGETS="a b" builds only those targets (default: all).
# HANGWATCH_PROGRESS=1 prints, on stderr, a line when configuring starts and one at each tenth
# of the build steps ("build: 40% (212/530 steps)"), instead of minutes of silence.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1; shift
progress=${HANGWATCH_PROGRESS:-}
mkdir -p "$dir"
if [ ! -f "$dir/build.ninja" ]; then
  [ -z "$progress" ] || echo "$dir: configuring" >&2
  if ! cmake -S "$root" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2; exit 1
  fi
fi

# Ninja's status lines ("[finished/total] description", the format set below) read one by one
# (in bash: awk would read its input in blocks, and print late): a line to stderr when the share
# of steps finished reaches the next tenth. CMake's own checks before the build are left out
# (ninja counts the build anew after them).
show_progress() {
  local line finished total tenth last=-1 status_line='^\[([0-9]+)/([0-9]+)\] (.*)$'
  while IFS= read -r line; do
    [[ $line =~ $status_line ]] || continue
    case ${BASH_REMATCH[3]} in "Re-running CMake"* | "Re-checking globbed directories"*) continue ;; esac
    finished=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    [ "$total" -gt 0 ] || continue
    tenth=$((finished * 10 / total))
    if [ "$tenth" -gt "$last" ]; then
      echo "$dir: $((tenth * 10))% ($finished/$total steps)" >&2
      last=$tenth
    fi
  done
}

status=0
# shellcheck disable=SC2086  # a list of target names
if [ -z "$progress" ]; then
  NINJA_STATUS="[%f/%t] " ninja -C "$dir" ${HANGWATCH_TARGETS:-} >"$dir/build.log" 2>&1 || status=$?
else
  NINJA_STATUS="[%f/%t] " ninja -C "$dir" ${HANGWATCH_TARGETS:-} 2>&1 |
    tee "$dir/build.log" | show_progress || status=$?
fi
if [ "${status:-0}" -ne 0 ]; then
  grep -v '^\[' "$dir/build.log" | head -n 200 >&2
  echo "build failed in $dir (full log: $dir/build.log)" >&2
  exit 1
fi
