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

# Ninja's status lines ("[done/total] description", the format set below) read one by one: a
# line to stderr when the share of steps done reaches the next tenth. The step that re-runs
# CMake is left out: ninja then counts the build anew.
show_progress() {
  awk -v dir="$dir" -v last=-1 '
    /^\[[0-9]+\/[0-9]+\] Re-running CMake/ { next }
    /^\[[0-9]+\/[0-9]+\] / {
      split(substr($0, 2, index($0, "]") - 2), n, "/")
      tenth = int(n[1] * 10 / n[2])
      if (tenth > last) {
        printf "%s: %d%% (%d/%d steps)\n", dir, tenth * 10, n[1], n[2]
        fflush()
        last = tenth
      }
    }' >&2
}

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
