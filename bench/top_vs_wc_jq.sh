#!/usr/bin/env bash
# `hangwatch top` vs `wc -l` vs `jq` doing the same grouping, on the same generated JSON Lines
# report (bench/gen_hang_reports.py: ~SIZE_MB MB of hangs from 300 hosts, 40 kinds of hang), with
# a warm page cache. Prints the median wall time of each (RUNS alternating runs; jq, which is
# ~50x slower, JQ_RUNS runs) and of its CPU time (user + system), the throughput, and the
# ratios to `wc -l`; then checks that `hangwatch top` and jq found the same groups with the same
# counts and totals.
#
# The target of `hangwatch top`: at most 4x the time of `wc -l` (about 1 GB/s on 2 cores).
#
# usage: bench/top_vs_wc_jq.sh [BUILD_DIR] [SIZE_MB] [RUNS] [JQ_RUNS]   (defaults: build 800 7 3)
#   KEEP=FILE keeps (or reuses) the generated file at FILE.
set -euo pipefail

build=${1:-build}
size_mb=${2:-800}
runs=${3:-7}
jq_runs=${4:-3}
hw=$build/tools/hangwatch
[[ -x $hw ]] || { echo "missing $hw (ninja -C $build hangwatch_cli)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file=${KEEP:-$work/hangs.jsonl}
if [[ ! -s $file ]]; then
  echo "generating $file (${size_mb} MB)..." >&2
  python3 "$here/gen_hang_reports.py" "$file" "$size_mb"
fi
bytes=$(stat -c %s "$file")
cat "$file" >/dev/null  # warm the page cache

# The grouping `hangwatch top --by signature --format json` does, in jq: per signature the
# count, distinct hosts, distinct (host, pid), total and max duration, busy and blocked hangs.
# Streaming (reduce over inputs), so that jq's memory stays bounded like hangwatch's.
# shellcheck disable=SC2016  # jq variables, not shell ones
jq_program='reduce (inputs | select(.type == "hang" and .format_version == 1)) as $h ({};
  .[$h.signature // ""] |= (
    .count += 1 | .total += $h.duration_ms
    | .max = ([.max // 0, $h.duration_ms] | max)
    | .busy += (if $h.class == "busy" then 1 else 0 end)
    | .blocked += (if $h.class == "blocked" then 1 else 0 end)
    | .hosts[$h.host // ""] = 1
    | .procs[($h.host // "") + "/" + ($h.pid | tostring)] = 1
    | .culprit = (.culprit // $h.culprit.symbol)))
| to_entries | map({key, count: .value.count, total: .value.total, max: .value.max,
    busy: .value.busy, blocked: .value.blocked, hosts: (.value.hosts | length),
    processes: (.value.procs | length), culprit: .value.culprit})
| sort_by(-.count, .key)'

# Median of the numbers on stdin.
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# One run of "$@" (stdout to $out, default /dev/null; stderr dropped: `top` warns there about
# the generated report's binaries, which are on no disk): prints "wall cpu" in seconds, from
# bash's `time` (no fork to read the clock; cpu = user + system of the command).
out=/dev/null
measure() {
  local TIMEFORMAT='%R %U %S' t
  t=$({ time "$@" >"$out" 2>/dev/null; } 2>&1)
  awk '{printf "%.4f %.4f\n", $1, $2 + $3}' <<<"$t"
}

declare -a r_wc r_top r_top1 r_jq
for ((i = 0; i < runs; i++)); do
  r_wc+=("$(measure wc -l "$file")")
  r_top+=("$(measure "$hw" top --format json "$file")")
  r_top1+=("$(measure "$hw" top --format json --jobs 1 "$file")")
done
out=$work/jq_raw.json
for ((i = 0; i < jq_runs; i++)); do
  r_jq+=("$(measure jq -n -c "$jq_program" "$file")")
done
wall_of() { printf '%s\n' "$@" | cut -d' ' -f1 | median; }
cpu_of() { printf '%s\n' "$@" | cut -d' ' -f2 | median; }
m_wc=$(wall_of "${r_wc[@]}")
m_top=$(wall_of "${r_top[@]}")
m_top1=$(wall_of "${r_top1[@]}")
m_jq=$(wall_of "${r_jq[@]}")
c_wc=$(cpu_of "${r_wc[@]}")

lines=$(wc -l <"$file")
printf 'file: %s bytes, %s lines; %s CPUs; load average %s\n' "$bytes" "$lines" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %9s %8s %9s %8s %9s\n' tool "wall s" "MB/s" "x wc -l" "CPU s" "x wc -l"
row() {
  awk -v n="$1" -v t="$2" -v c="$3" -v w="$m_wc" -v cw="$c_wc" -v b="$bytes" -v r="$4" \
    'BEGIN {printf "%-28s %9.3f %8.0f %9.2f %8.3f %9.2f  (%s runs)\n", n, t, b / t / 1e6, t / w, c, c / cw, r}'
}
row "wc -l" "$m_wc" "$c_wc" "$runs"
row "hangwatch top (all CPUs)" "$m_top" "$(cpu_of "${r_top[@]}")" "$runs"
row "hangwatch top --jobs 1" "$m_top1" "$(cpu_of "${r_top1[@]}")" "$runs"
row "jq (same grouping)" "$m_jq" "$(cpu_of "${r_jq[@]}")" "$jq_runs"
awk -v a="$m_jq" -v b="$m_top" 'BEGIN {printf "jq / hangwatch top (wall): %.1fx\n", a / b}'
echo "medians; wall depends on what else runs (see the load average), CPU time much less"

# Same answer: per group key, count, total, max, busy, blocked, hosts, processes.
"$hw" top --format json "$file" 2>/dev/null |
  jq -c 'map({key, count, total: .duration_ms.total, max: .duration_ms.max,
              busy: .classes.busy, blocked: .classes.blocked, hosts, processes})
         | sort_by(-.count, .key)' >"$work/top.json"
jq -c 'map({key, count, total, max, busy, blocked, hosts, processes})' "$work/jq_raw.json" \
  >"$work/jq.json"
if cmp -s "$work/top.json" "$work/jq.json"; then
  echo "same groups: yes ($(jq length "$work/top.json") groups, identical counts and durations)"
else
  echo "same groups: NO" >&2
  diff <(jq . "$work/top.json") <(jq . "$work/jq.json") | head -20 >&2
  exit 1
fi
