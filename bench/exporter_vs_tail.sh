#!/usr/bin/env bash
# `hangwatch exporter` following a growing report vs `tail -F FILE | wc -l` following the same
# one, in the same run, both pinned to one core (taskset -c 0; the writer on core 1).
#
# Per run and follower, the same generated JSON Lines report (bench/gen_hang_reports.py: SIZE_MB
# MB of hang records from 300 hosts) is appended to an empty file in 10 MB chunks paced at
# RATE_MB MB/s (default 100). Measured: the follower's CPU time over the wall time of the
# appending (its share of the one core: under 1.0 means it keeps up at that rate), and how long
# after the last append it had read everything (the exporter: /metrics counts every hang; tail:
# its file offset reached the end). Prints the median of RUNS runs of each and the ratios.
#
# usage: bench/exporter_vs_tail.sh [BUILD_DIR] [SIZE_MB] [RUNS] [RATE_MB]  (defaults: build 1000 5 100)
set -euo pipefail

build=${1:-build}
size_mb=${2:-1000}
runs=${3:-5}
rate_mb=${4:-100}
exporter=$build/tools/hangwatch-exporter
[[ -x $exporter ]] || { echo "missing $exporter (ninja -C $build hangwatch_exporter_cli)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset not found (util-linux)" >&2; exit 2; }
python=/usr/bin/python3.11
[[ -x $python ]] || python=python3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
src=$work/source.jsonl
echo "generating ${size_mb} MB..." >&2
"$python" "$here/gen_hang_reports.py" "$src" "$size_mb"
bytes=$(stat -c %s "$src")
hangs=$(grep -c '"type":"hang"' "$src")
cat "$src" >/dev/null  # warm the page cache

# CPU seconds (user + system) of the processes given.
cpu_of() {
  local total=0 p
  for p in "$@"; do
    total=$(awk -v t="$total" '{print t + ($14 + $15) / 100}' "/proc/$p/stat")
  done
  echo "$total"
}
now() { date +%s.%N; }
# Gives up (exit 1) 120 s after $1 with the message $2.
deadline() {
  if (($(echo "$(now) - $1 > 120" | bc))); then
    echo "exporter_vs_tail: $2 after 120 s" >&2
    exit 1
  fi
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Appends $src to $1 in 10 MB chunks at $rate_mb MB/s, on core 1.
append_paced() {
  taskset -c 1 "$python" - "$src" "$1" "$rate_mb" <<'PY'
import sys, time
src, dst, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]) * 1e6
chunk = 10 * 1000 * 1000
start = time.monotonic()
sent = 0
with open(src, 'rb') as s, open(dst, 'ab', buffering=0) as d:
    while True:
        data = s.read(chunk)
        if not data:
            break
        # Cut at a newline so that each write ends a line (as an agent's writes do).
        rest = s.readline()
        d.write(data + rest)
        sent += len(data) + len(rest)
        delay = start + sent / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
PY
}

# One run of the exporter: prints "share delay".
run_exporter() {
  local file=$work/e.jsonl port pid t0 t1 t2 c0 c1 n
  : >"$file"
  taskset -c 0 "$exporter" exporter --listen 127.0.0.1:0 --poll-ms 100 "$file" 2>"$work/e.err" &
  pid=$!
  pids+=("$pid")
  until grep -q 'metrics' "$work/e.err" 2>/dev/null; do sleep 0.05; done
  port=$(grep -o ':[0-9]*/metrics' "$work/e.err" | tr -dc 0-9)
  c0=$(cpu_of "$pid")
  t0=$(now)
  append_paced "$file"
  t1=$(now)
  until n=$(curl -s "127.0.0.1:$port/metrics" | awk '/^hangwatch_hangs_total/ {s += $2} END {print s + 0}') &&
      [[ $n == "$hangs" ]]; do
    deadline "$t1" "the exporter counted $n of $hangs hangs"
    sleep 0.02
  done
  t2=$(now)
  c1=$(cpu_of "$pid")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  awk -v c="$(echo "$c1 - $c0" | bc)" -v w="$(echo "$t1 - $t0" | bc)" -v d="$(echo "$t2 - $t1" | bc)" \
    'BEGIN {printf "%.4f %.3f\n", c / w, d}'
}

# One run of tail -F | wc -l: prints "share delay".
run_tail() {
  local file=$work/t.jsonl tail_pid wc_pid t0 t1 t2 c0 c1 fd pos
  : >"$file"
  taskset -c 0 bash -c 'tail -n +1 -F "$1" | wc -l >/dev/null' _ "$file" &
  pids+=("$!")
  until tail_pid=$(pgrep -f -n "^tail -n \+1 -F $file\$"); do sleep 0.02; done
  wc_pid=$(pgrep -P "$(ps -o ppid= -p "$tail_pid" | tr -d ' ')" -x wc)
  pids+=("$tail_pid" "$wc_pid")
  c0=$(cpu_of "$tail_pid" "$wc_pid")
  t0=$(now)
  append_paced "$file"
  t1=$(now)
  while :; do
    fd=""
    for f in /proc/"$tail_pid"/fd/*; do
      if [[ $(readlink "$f") == "$file" ]]; then fd=${f##*/}; fi
    done
    pos=0
    [[ -n $fd ]] && pos=$(awk '/^pos:/ {print $2}' "/proc/$tail_pid/fdinfo/$fd")
    [[ $pos -ge $bytes ]] && break
    deadline "$t1" "tail read $pos of $bytes bytes"
    sleep 0.02
  done
  t2=$(now)
  c1=$(cpu_of "$tail_pid" "$wc_pid")
  kill "$tail_pid" "$wc_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  awk -v c="$(echo "$c1 - $c0" | bc)" -v w="$(echo "$t1 - $t0" | bc)" -v d="$(echo "$t2 - $t1" | bc)" \
    'BEGIN {printf "%.4f %.3f\n", c / w, d}'
}

: >"$work/exporter" && : >"$work/tail"
for ((i = 0; i < runs; i++)); do  # alternating, so that both see the same machine
  run_exporter >>"$work/exporter"
  run_tail >>"$work/tail"
done
es=$(cut -d' ' -f1 "$work/exporter" | median); ed=$(cut -d' ' -f2 "$work/exporter" | median)
ts=$(cut -d' ' -f1 "$work/tail" | median); td=$(cut -d' ' -f2 "$work/tail" | median)
printf '%s MB (%s hangs) appended at %s MB/s, %s runs each, medians:\n' \
  "$((bytes / 1000000))" "$hangs" "$rate_mb" "$runs"
printf '  hangwatch exporter:  %.1f %% of one core, everything counted %.3f s after the last append\n' \
  "$(echo "$es * 100" | bc -l)" "$ed"
printf '  tail -F | wc -l:     %.1f %% of one core, everything read %.3f s after the last append\n' \
  "$(echo "$ts * 100" | bc -l)" "$td"
printf '  exporter / tail CPU: %.2fx; exporter throughput at 100 %% of a core: %.0f MB/s\n' \
  "$(echo "$es / $ts" | bc -l)" "$(echo "$rate_mb / $es" | bc -l)"
