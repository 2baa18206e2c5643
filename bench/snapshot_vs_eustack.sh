#!/usr/bin/env bash
# `hangwatch snapshot PID` vs `eu-stack -p PID` (elfutils) on the same process: 8 threads in
# known call chains, each recursing to about 64 frames (tests/snapshot/snapshot_target.cc,
# built by the test build), 2 of them busy, 6 blocked in read/nanosleep/futex/epoll_wait/poll.
#
# For each tool, RUNS alternating runs; prints the medians of:
#   wall    end-to-end time of the command (ms): perf stat's duration_time, from the exec of the
#           command to its exit, so that neither perf's own start-up nor the script's clock reads
#           are counted (they would add ~12 ms to every tool alike, squeezing the ratios);
#           without perf, bash's $EPOCHREALTIME around /usr/bin/time (no fork for the clock)
#   cpu     CPU time of the command (ms; perf stat task-clock, else /usr/bin/time at 10 ms)
#   pause   the longest time the target's busy "spinner" thread went without running during the
#           command (µs), measured by the target itself with the cycle counter: what the
#           snapshot costs the target, whatever the tool. A baseline row (no tool running)
#           shows the scheduler's own share on this machine.
#   window  how long threads are kept stopped. hangwatch: the window it measures itself (first
#           PTRACE_INTERRUPT to last PTRACE_DETACH; every thread is stopped at most that long).
#           hangwatch --per-thread: the longest any one thread was stopped (each is copied and
#           resumed as soon as it stops).
#           eu-stack attaches, unwinds and detaches one thread after the other: its figure is
#           the median over threads of PTRACE_ATTACH -> PTRACE_DETACH, read from strace
#           timestamps (only ptrace calls traced, with --seccomp-bpf), when strace is present.
# and the threads and frames each tool printed (same threads, frames compared), then ratios,
# then where hangwatch's CPU goes: the medians of its own `--timings` phases.
#
# The "floor" rows run bench/snapshot_floor.c (built here with cc -static): exec'ing a static
# binary that exits at once, and one that only seizes, interrupts, waits for, reads the
# registers and 16 KiB of stack of, and detaches every thread. No snapshot tool can be faster
# than the second row on this machine.
#
# hangwatch runs with DWARF file:line + inlines (its default) from a warm symbol-index cache
# (the warm-up indexes the target's modules); eu-stack runs with its defaults (function names
# only) and, separately, with -s -i (files, lines, inlines: the same information).
#
# usage: bench/snapshot_vs_eustack.sh [BUILD_DIR] [RUNS]   (defaults: build, 11)
#   HW_BASELINE=/path/to/another/hangwatch adds that build (e.g. an older commit) as one more
#   row, measured in the same runs, with the ratio to it.
#   TARGET_ARGS="--depth 60 --quiet" runs it against a target whose threads all block (no busy
#   thread: the stop window is then bounded by wake-up latency, not by waiting for a CPU);
#   its "pause" column is then meaningless (the spinner does not spin).
set -euo pipefail

build=${1:-build}
runs=${2:-11}
hw=$build/tools/hangwatch
target_bin=$build/tests/snapshot/snapshot_target
for f in "$hw" "$target_bin"; do
  [[ -x $f ]] || { echo "missing $f (build the tests first: ninja -C $build hangwatch_cli snapshot_target)" >&2; exit 2; }
done
command -v eu-stack >/dev/null || { echo "eu-stack not found (apt-get install elfutils)" >&2; exit 2; }

have_perf=0
perf stat -x, -e task-clock,duration_time -o /dev/null -- true 2>/dev/null && have_perf=1
work=$(mktemp -d)
floor=$work/snapshot_floor
have_floor=0
cc -O2 -static -o "$floor" "$(dirname "$0")/snapshot_floor.c" 2>"$work/floor.err" && have_floor=1
export HANGWATCH_CACHE_DIR=$work/cache
# shellcheck disable=SC2086
coproc TARGET { exec "$target_bin" ${TARGET_ARGS:---depth 60}; }
target_pid=$TARGET_PID
cleanup() {
  kill "$target_pid" 2>/dev/null || true
  wait "$target_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
read -r ready <&"${TARGET[0]}"
[[ $ready == ready* ]] || { echo "target did not start: $ready" >&2; exit 1; }

ask() {  # one command to the target, one line back
  echo "$1" >&"${TARGET[1]}"
  local line
  read -r line <&"${TARGET[0]}"
  echo "$line"
}

# Runs "$@" once; appends "wall_ms cpu_ms pause_us" to the file named by $out_file, leaves the
# command's stdout in $work/last.out.
measure() {
  ask g >/dev/null
  local wall_ms cpu_ms
  if [[ $have_perf == 1 ]]; then
    perf stat -x, -e task-clock,duration_time -o "$work/cpu" -- "$@" \
      >"$work/last.out" 2>"$work/last.err" || true
    cpu_ms=$(awk -F, '$3 ~ /^task-clock/ { print $1 }' "$work/cpu")
    wall_ms=$(awk -F, '$3 ~ /^duration_time/ { printf "%.3f", $1 / 1e6 }' "$work/cpu")
  else
    local t0=$EPOCHREALTIME
    /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" >"$work/last.out" 2>"$work/last.err" || true
    local t1=$EPOCHREALTIME
    cpu_ms=$(awk '{ print ($1 + $2) * 1000 }' "$work/cpu")
    wall_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) * 1000 }')
  fi
  local pause
  pause=$(ask g)
  echo "$wall_ms $cpu_ms $pause" >>"$out_file"
}

median() {  # column $1 of file $2
  awk -v c="$1" '{ print $c }' "$2" | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# Warm-up: index the modules (first run), write each index's inflated twin (second run: see
# symbols/index/symbol_index.h), fill the page cache for both tools.
"$hw" snapshot "$target_pid" >/dev/null
"$hw" snapshot "$target_pid" >/dev/null
eu-stack -p "$target_pid" >/dev/null 2>&1 || true
eu-stack -s -i -p "$target_pid" >/dev/null 2>&1 || true

: >"$work/hw" ; : >"$work/hwpt" ; : >"$work/eu" ; : >"$work/eusi" ; : >"$work/base" ; : >"$work/hwold"
: >"$work/fexit" ; : >"$work/floor"
: >"$work/window" ; : >"$work/ptwindow"
for ((i = 0; i < runs; i++)); do
  out_file=$work/base measure true
  out_file=$work/hw measure "$hw" snapshot "$target_pid"
  sed -n 's/^stopped for \([0-9.]*\) ms.*/\1/p' "$work/last.out" >>"$work/window"
  cp "$work/last.out" "$work/hw.out"
  if [[ -n ${HW_BASELINE:-} ]]; then
    out_file=$work/hwold measure "$HW_BASELINE" snapshot "$target_pid"
  fi
  out_file=$work/hwpt measure "$hw" snapshot --per-thread "$target_pid"
  sed -n 's/^threads stopped one at a time, each for at most \([0-9.]*\) ms.*/\1/p' \
    "$work/last.out" >>"$work/ptwindow"
  out_file=$work/eu measure eu-stack -p "$target_pid"
  cp "$work/last.out" "$work/eu.out"
  out_file=$work/eusi measure eu-stack -s -i -p "$target_pid"
  if [[ $have_floor == 1 ]]; then
    out_file=$work/fexit measure "$floor" --exit
    out_file=$work/floor measure "$floor" "$target_pid"
  fi
done

# Where hangwatch's time goes: its own --timings line (CPU/wall/minor page faults per phase),
# medians over RUNS runs. "start-up" is CPU time before the command's code runs, counted from
# the fork (so it includes the shell's share of the fork, which perf's task-clock above does
# not); the kernel's exit is in no phase.
: >"$work/phases"
for ((i = 0; i < runs; i++)); do
  ask g >/dev/null
  "$hw" snapshot --timings "$target_pid" 2>&1 >/dev/null | grep '^timings' >>"$work/phases" || true
done

# eu-stack's per-thread stop (ATTACH -> DETACH of the same tid), from strace timestamps.
: >"$work/eu_window"
if command -v strace >/dev/null; then
  for ((i = 0; i < runs; i++)); do
    strace -f --seccomp-bpf -e trace=ptrace -ttt -o "$work/strace" eu-stack -p "$target_pid" \
      >/dev/null 2>&1 || true
    awk '/PTRACE_ATTACH, [0-9]+\)/ { match($0, /PTRACE_ATTACH, [0-9]+/); t = substr($0, RSTART + 15, RLENGTH - 15); a[t] = $2 }
         /PTRACE_DETACH, [0-9]+,/ { match($0, /PTRACE_DETACH, [0-9]+/); t = substr($0, RSTART + 15, RLENGTH - 15); if (t in a) printf "%.3f\n", ($2 - a[t]) * 1000 }' \
      "$work/strace" >>"$work/eu_window"
  done
fi

# Threads and frames of the last run of each (inlined entries are not frames).
hw_threads=$(grep -c '^thread ' "$work/hw.out")
hw_frames=$(grep '^  #' "$work/hw.out" | grep -vc '(inlined)$' || true)
eu_threads=$(grep -c '^TID ' "$work/eu.out")
eu_frames=$(grep -c '^#' "$work/eu.out" || true)

printf '\ntarget: %s, pid %s, %s threads (8 chains x ~64 frames + main), %s runs each, %s cores, load %s\n' \
  "${TARGET_ARGS:---depth 60}" "$target_pid" "$hw_threads" "$runs" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %10s %10s %12s %12s\n' "median of $runs runs" "wall ms" "cpu ms" "pause us" "window ms"
printf '%-28s %10s %10s %12s %12s\n' "no tool (scheduler noise)" "-" "-" "$(median 3 "$work/base")" "-"
printf '%-28s %10s %10s %12s %12s\n' "hangwatch snapshot" "$(median 1 "$work/hw")" \
  "$(median 2 "$work/hw")" "$(median 3 "$work/hw")" "$(median 1 "$work/window")"
if [[ -n ${HW_BASELINE:-} ]]; then
  printf '%-28s %10s %10s %12s %12s\n' "baseline (HW_BASELINE)" "$(median 1 "$work/hwold")" \
    "$(median 2 "$work/hwold")" "$(median 3 "$work/hwold")" "-"
fi
printf '%-28s %10s %10s %12s %12s\n' "hangwatch --per-thread" "$(median 1 "$work/hwpt")" \
  "$(median 2 "$work/hwpt")" "$(median 3 "$work/hwpt")" "$(median 1 "$work/ptwindow")"
printf '%-28s %10s %10s %12s %12s\n' "eu-stack -p" "$(median 1 "$work/eu")" \
  "$(median 2 "$work/eu")" "$(median 3 "$work/eu")" "$(median 1 "$work/eu_window")"
printf '%-28s %10s %10s %12s %12s\n' "eu-stack -s -i -p" "$(median 1 "$work/eusi")" \
  "$(median 2 "$work/eusi")" "$(median 3 "$work/eusi")" "-"
if [[ $have_floor == 1 ]]; then
  printf '%-28s %10s %10s %12s %12s\n' "floor: static exec + exit" "$(median 1 "$work/fexit")" \
    "$(median 2 "$work/fexit")" "$(median 3 "$work/fexit")" "-"
  printf '%-28s %10s %10s %12s %12s\n' "floor: + ptrace all threads" "$(median 1 "$work/floor")" \
    "$(median 2 "$work/floor")" "$(median 3 "$work/floor")" "-"
fi
printf '\nthreads: hangwatch %s, eu-stack %s; frames: hangwatch %s, eu-stack %s\n' \
  "$hw_threads" "$eu_threads" "$hw_frames" "$eu_frames"
if [[ -s $work/phases ]]; then
  # "timings (ms cpu/wall/page faults): start-up 0.7/-/95 modules 0.2/0.2/18 ..."
  awk '{ for (i = 5; i + 1 <= NF; i += 2) if ($(i + 1) ~ /\//) {
           split($(i + 1), v, "/"); n[$i] = n[$i] + 0; c[$i, n[$i]] = v[1]; f[$i, n[$i]] = v[3]; n[$i]++
           if (!($i in seen)) { seen[$i] = 1; order[++k] = $i } } }
       function med(a, name, cnt,   j, x, t, m) {
         for (j = 0; j < cnt; j++) x[j] = a[name, j]
         for (j = 1; j < cnt; j++) { t = x[j]; for (m = j - 1; m >= 0 && x[m] > t; m--) x[m + 1] = x[m]; x[m + 1] = t }
         return cnt % 2 ? x[(cnt - 1) / 2] : (x[cnt / 2 - 1] + x[cnt / 2]) / 2 }
       END { printf "hangwatch CPU by phase (--timings, median of %d, ms / page faults):", NR
             for (j = 1; j <= k; j++) printf " %s %.3f/%d", order[j], med(c, order[j], n[order[j]]), med(f, order[j], n[order[j]])
             printf "\n" }' "$work/phases"
fi
printf 'hangwatch stopped window: min %s ms, median %s ms, max %s ms (all threads stopped together)\n' \
  "$(sort -g "$work/window" | head -1)" "$(median 1 "$work/window")" "$(sort -g "$work/window" | tail -1)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }
printf 'eu-stack -p / hangwatch:        wall %s, cpu %s, target pause %s, stop per thread %s\n' \
  "$(ratio "$(median 1 "$work/eu")" "$(median 1 "$work/hw")")" \
  "$(ratio "$(median 2 "$work/eu")" "$(median 2 "$work/hw")")" \
  "$(ratio "$(median 3 "$work/eu")" "$(median 3 "$work/hw")")" \
  "$(ratio "$(median 1 "$work/eu_window")" "$(median 1 "$work/window")")"
printf 'eu-stack -p / hangwatch --per-thread: wall %s, cpu %s, stop per thread %s\n' \
  "$(ratio "$(median 1 "$work/eu")" "$(median 1 "$work/hwpt")")" \
  "$(ratio "$(median 2 "$work/eu")" "$(median 2 "$work/hwpt")")" \
  "$(ratio "$(median 1 "$work/eu_window")" "$(median 1 "$work/ptwindow")")"
printf 'eu-stack -s -i -p / hangwatch:  wall %s, cpu %s, target pause %s\n' \
  "$(ratio "$(median 1 "$work/eusi")" "$(median 1 "$work/hw")")" \
  "$(ratio "$(median 2 "$work/eusi")" "$(median 2 "$work/hw")")" \
  "$(ratio "$(median 3 "$work/eusi")" "$(median 3 "$work/hw")")"
if [[ -n ${HW_BASELINE:-} ]]; then
  printf 'baseline / hangwatch:           wall %s, cpu %s\n' \
    "$(ratio "$(median 1 "$work/hwold")" "$(median 1 "$work/hw")")" \
    "$(ratio "$(median 2 "$work/hwold")" "$(median 2 "$work/hw")")"
fi
if [[ $have_floor == 1 ]]; then
  printf 'eu-stack -p / floor (best any tool could do): wall %s, cpu %s\n' \
    "$(ratio "$(median 1 "$work/eu")" "$(median 1 "$work/floor")")" \
    "$(ratio "$(median 2 "$work/eu")" "$(median 2 "$work/floor")")"
  printf 'hangwatch / floor:                            wall %s, cpu %s\n' \
    "$(ratio "$(median 1 "$work/hw")" "$(median 1 "$work/floor")")" \
    "$(ratio "$(median 2 "$work/hw")" "$(median 2 "$work/floor")")"
fi
