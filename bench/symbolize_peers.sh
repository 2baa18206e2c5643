#!/usr/bin/env bash
# Offline symbolization benchmarks against external peers, on a generated program with more
# than 80 MB of DWARF (generated here, never committed):
#   (a) lookups per second with inline chains: hangwatch's index vs LLVM's GSYM reader
#       (symbols_bench, same addresses, same run)
#   (b) index build time per GB of DWARF (1 thread and all threads, medians of 5) and index
#       size vs DWARF size; the same build with libdw reading the DIEs (symbols_bench);
#       llvm-gsymutil's conversion time for reference
#   (c) a cold 50-address stack end to end, no index yet: `hangwatch symbolize` vs
#       `llvm-symbolizer` (median of RUNS runs; hyperfine when installed)
#
# Usage: bench/symbolize_peers.sh [BUILD_DIR]   (default: build; WORK=/tmp/hangwatch-bigbin,
#        UNITS=32 generated units, RUNS=15)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
work=${WORK:-/tmp/hangwatch-bigbin}
units=${UNITS:-32}
runs=${RUNS:-15}
hw=${HANGWATCH:-$build/tools/hangwatch}
# The full CLI when it is built and has the subcommands, else the symbols-only test CLI.
"$hw" symbols --help > /dev/null 2>&1 || hw=$build/tests/symbols/hangwatch_symbols_cli
bench=$build/bench/symbols_bench
[ -x "$hw" ] || { echo "no hangwatch binary in $build (build it first)" >&2; exit 1; }
[ -x "$bench" ] || { echo "no $bench (build symbols_bench first)" >&2; exit 1; }
gsymutil=$(command -v llvm-gsymutil-14 || command -v llvm-gsymutil || true)

mkdir -p "$work"
bin=$work/big
if [ ! -x "$bin" ]; then
  echo "== generating $units units in $work (takes a few minutes)"
  python3 "$root/bench/gen_big_binary.py" "$work/src" "$units" 40
  ( cd "$work/src" && ls *.cc | xargs -P "$(nproc)" -I{} g++ -std=c++17 -O2 -g -c {} -o {}.o )
  g++ -o "$bin" "$work"/src/*.o
fi
dwarf_bytes=$(readelf -SW "$bin" | awk '$2 ~ /^\.debug_/ {s += strtonum("0x" $6)} END {print s}' 2>/dev/null ||
              size -A "$bin" | awk '$1 ~ /^\.debug_/ {s += $2} END {print s}')
[ -n "$dwarf_bytes" ] || dwarf_bytes=$(size -A "$bin" | awk '$1 ~ /^\.debug_/ {s += $2} END {print s}')
echo "binary: $bin, DWARF $((dwarf_bytes / 1000000)) MB"

if [ ! -s "$bin.addrs" ]; then
  objdump -d --no-show-raw-insn -j .text "$bin" | python3 -c '
import re, sys
addrs, after = [], False
for line in sys.stdin:
    m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line)
    if not m:
        after = False
        continue
    if after:
        addrs.append(int(m.group(1), 16) - 1)
    after = m.group(2).startswith("call")
step = max(1, len(addrs) // 10000)
for a in addrs[::step][:10000]:
    print(hex(a))
' > "$bin.addrs"
fi
echo "addresses: $(wc -l < "$bin.addrs") return addresses - 1 of call sites"

if [ -n "$gsymutil" ] && [ ! -s "$bin.gsym" ]; then
  t0=$(date +%s%N)
  "$gsymutil" --convert "$bin" --out-file "$bin.gsym" > /dev/null
  t1=$(date +%s%N)
  echo "llvm-gsymutil --convert: $(( (t1 - t0) / 1000000 )) ms, GSYM $(( $(stat -c %s "$bin.gsym") / 1000000 )) MB"
fi

echo "== (b) index build"
for threads in 1 "$(nproc)"; do
  cache=$(mktemp -d)
  # Wall and CPU (user + sys) time: on a shared machine CPU time is the steadier number.
  python3 - "$hw" "$threads" "$cache" "$bin" "$dwarf_bytes" <<'PY'
import os, resource, subprocess, sys, time
hw, threads, cache, binary, dwarf = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
import shutil, statistics
walls, cpus = [], []
for _ in range(5):  # medians of 5 builds, each into an empty cache
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([hw, "symbols", "index", "--threads", threads, "--cache-dir", cache, binary],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    walls.append(time.perf_counter() - t0)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
wall, cpu = statistics.median(walls), statistics.median(cpus)
size = sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))
gb = dwarf / 1e9
print(f"threads={threads}: wall {wall*1000:.0f} ms ({wall/gb:.1f} s/GB), CPU {cpu*1000:.0f} ms "
      f"({cpu/gb:.1f} s/GB of DWARF per core); index {size/1e6:.1f} MB = "
      f"{100*size/dwarf:.1f} % of the DWARF")
PY
  rm -rf "$cache"
done

echo "-- the same build in process, our DIE reader (libdw:0) against libdw alone (libdw:1)"
HANGWATCH_BENCH_BIG=$bin "$bench" --benchmark_filter='Offline_IndexBuild' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 |
  grep -E '_median|Skip|ERROR' || true

echo "== (a) lookups (symbols_bench, same addresses)"
HANGWATCH_BENCH_BIG=$bin "$bench" --benchmark_filter='Offline_(HangwatchIndex|LlvmGsym)' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.5 2>&1 |
  grep -E '_median|Skip|ERROR' || true

echo "== (c) cold 50-address stack, no index"
# Two stacks: 50 addresses spread over the whole program (every unit: the worst case), and 50
# from 5 places (10 consecutive call sites each), closer to a real stack.
python3 - "$bin.addrs" "$work/stack50" "$work/stack50-clustered" <<'PY'
import sys
addrs = open(sys.argv[1]).read().split()
step = max(1, len(addrs) // 50)
open(sys.argv[2], "w").write("\n".join(addrs[::step][:50]) + "\n")
picked = []
for k in range(5):
    start = (k * 2 + 1) * len(addrs) // 11
    picked += addrs[start:start + 10]
open(sys.argv[3], "w").write("\n".join(picked) + "\n")
PY
for stack in "$work/stack50" "$work/stack50-clustered"; do
echo "-- $(basename "$stack")"
if command -v hyperfine > /dev/null; then
  hyperfine -N --warmup 2 --runs "$runs" --input "$stack" \
    "$hw symbolize --no-cache --obj $bin" "llvm-symbolizer --obj=$bin"
else
  python3 - "$hw" "$bin" "$stack" "$runs" <<'PY'
import statistics, subprocess, sys, time
hw, binary, stack, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = open(stack, "rb").read()
import resource
def median_ms(cmd):
    subprocess.run(cmd, input=data, stdout=subprocess.DEVNULL, check=True)  # warm page cache
    walls, cpus = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, input=data, stdout=subprocess.DEVNULL, check=True)
        walls.append((time.perf_counter() - t) * 1000)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000)
    return statistics.median(walls), statistics.median(cpus)
ours = median_ms([hw, "symbolize", "--no-cache", "--obj", binary])
llvm = median_ms(["llvm-symbolizer", "--obj=" + binary])
print(f"hangwatch symbolize: median wall {ours[0]:.1f} ms, CPU {ours[1]:.1f} ms; "
      f"llvm-symbolizer: median wall {llvm[0]:.1f} ms, CPU {llvm[1]:.1f} ms; "
      f"ratio (CPU) {llvm[1] / ours[1]:.2f}x")
same = subprocess.run([hw, "symbolize", "--no-cache", "--obj", binary], input=data,
                      capture_output=True).stdout == subprocess.run(
                          ["llvm-symbolizer", "--obj=" + binary], input=data,
                          capture_output=True).stdout
print("outputs identical:", same)
PY
fi
done
