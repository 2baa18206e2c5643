#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/, built by the ASan tree that calls it (FUZZ_BIN_DIR), or
# else built here in a fuzz tree of the project (HANGWATCH_FUZZ: clang, ASan + UBSan; the target
# hangwatch_fuzzers, so only the libraries they link); each runs for a fixed number of inputs
# (not a time: the same work on a fast or a busy machine) from seed corpora made here: real
# binaries (gcc/clang, DWARF 4/5, compressed, stripped, MiniDebugInfo) and indexes built from
# them, files the targets write with the code they test (open-hang files,
# Mach-O images, this binary's own stack), the line tables of the installed CPythons, small text
# files, tests/tools/report_corpus and tests/report/corpus (the readers' conformance corpus).
# Any crash, sanitizer report, leak or timeout fails the test.
# Usage: run_fuzzers.sh SOURCE_DIR WORK_DIR HANGWATCH_CLI [FUZZ_BIN_DIR]
#   FUZZ_RUNS_SCALE=N runs N times as many inputs per target (default 1);
#   FUZZ_SECONDS=S runs each target for S seconds instead.
set -euo pipefail
src=$1
work=$2
cli=$3
prebuilt=${4:-}
scale=${FUZZ_RUNS_SCALE:-1}
# The targets that read files write them here: memory, not the disk (the state file is fsynced).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
mkdir -p "$work"
# build_fuzz_tree: configures (once) and builds the fuzz tree in $work/build.
build_fuzz_tree() {
  local log=$work/build.log src_abs
  # A tree configured from another source directory (before fuzz/ was part of the project, it
  # was a project of its own) cannot be configured again: start afresh.
  src_abs=$(cd "$src" && pwd)
  if [ -f "$work/build/CMakeCache.txt" ] &&
     ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src_abs" "$work/build/CMakeCache.txt"; then
    rm -rf "$work/build"
  fi
  # Without -Werror: the warnings are enforced by the GCC build; clang's set differs by version.
  if ! { cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_C_COMPILER=clang \
           -DCMAKE_CXX_COMPILER=clang++ -DHANGWATCH_FUZZ=ON -DHANGWATCH_WERROR=OFF &&
         cmake --build "$work/build" --target hangwatch_fuzzers; } > "$log" 2>&1; then
    cat "$log"
    echo "run_fuzzers: building the fuzz targets failed" >&2
    exit 1
  fi
}
if [ -n "$prebuilt" ]; then
  bin=$prebuilt
else
  build_fuzz_tree
  bin=$work/build/fuzz
fi
seeds=$work/seeds
rm -rf "$work/corpus"
mkdir -p "$seeds/elf" "$seeds/index" "$seeds/lines" "$seeds/dies"
if [ ! -e "$seeds/done" ]; then
  cat > "$seeds/s.cc" <<'CC'
#include <map>
#include <string>
namespace { template <typename T> inline T Twice(T v) { return v + v; } }
__attribute__((noinline)) int F(int x) { std::map<int, std::string> m; m[x] = "a"; return Twice(x) + int(m.size()); }
int main(int argc, char**) { return F(argc); }
CC
  g++ -O2 -g -o "$seeds/elf/gcc5" "$seeds/s.cc"
  g++ -O2 -gdwarf-4 -o "$seeds/elf/gcc4" "$seeds/s.cc"
  clang++ -O2 -g -fuse-ld=lld -o "$seeds/elf/clang5" "$seeds/s.cc"
  objcopy --compress-debug-sections=zlib "$seeds/elf/gcc5" "$seeds/elf/gcc5-zlib"
  objcopy --compress-debug-sections=zstd "$seeds/elf/gcc4" "$seeds/elf/gcc4-zstd" || true
  strip --strip-all -o "$seeds/elf/stripped" "$seeds/elf/gcc5"
  printf 'F\n' > "$seeds/keep"
  objcopy --only-keep-debug "$seeds/elf/gcc5" "$seeds/dbg"
  objcopy -S --keep-symbols="$seeds/keep" "$seeds/dbg" "$seeds/mini" && xz -f "$seeds/mini"
  objcopy --add-section .gnu_debugdata="$seeds/mini.xz" "$seeds/elf/stripped" "$seeds/elf/minidebuginfo"
  touch "$seeds/done"
fi
# Index seeds in the current format (rebuilt every run: the format may have changed).
rm -rf "$seeds/cache" "$seeds"/index/*
for f in "$seeds"/elf/*; do
  "$cli" symbols index --cache-dir "$seeds/cache" "$f" > /dev/null 2>&1 || true
done
cp "$seeds"/cache/*.hwsym "$seeds/index/" 2>/dev/null || true
# .debug_line sections of the seed binaries (DWARF 4 and 5, gcc and clang).
for f in gcc5 gcc4 clang5; do
  objcopy --dump-section .debug_line="$seeds/lines/$f" "$seeds/elf/$f" /dev/null 2>/dev/null || true
done

# DIE reader inputs: the sections DieSections names, each as a 32-bit little-endian length and
# its bytes (see fuzz/dwarf_die_reader_fuzzer.cc).
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
for f in gcc5 gcc4 clang5; do
  out="$seeds/dies/$f"
  : > "$out"
  for sec in info abbrev str line_str str_offsets addr ranges rnglists; do
    part="$seeds/dies/.part"
    : > "$part"
    objcopy --dump-section ".debug_$sec=$part" "$seeds/elf/$f" /dev/null 2>/dev/null || : > "$part"
    printf "$(le32 "$(stat -c %s "$part")")" >> "$out"
    cat "$part" >> "$out"
  done
  rm -f "$seeds/dies/.part"
done

# Seeds that only the code under test can write.
for t in open_hang_file macho_parser cfi_unwinder; do
  rm -rf "${seeds:?}/$t" && mkdir -p "$seeds/$t"
  HANGWATCH_FUZZ_WRITE_SEEDS="$seeds/$t" "$bin/${t}_fuzzer" > "$work/$t.seeds.log" 2>&1 ||
    { cat "$work/$t.seeds.log"; echo "run_fuzzers: ${t}_fuzzer could not write its seeds" >&2; exit 1; }
done
# Small text seeds.
mkdir -p "$seeds/perf_map" "$seeds/otlp_state" "$seeds/launch_log"
printf '7f0012340000 40 LazyCompile:~main file:///app.js:1\n0x7f0012340040 0x1c0 py::worker:/app/w.py\n7f0012340100 10 [stub] overlaps\r\n1 0 empty\nnot a line\n7f00aa 10 torn' \
  > "$seeds/perf_map/node"
cat > "$seeds/otlp_state/state.json" <<JSON
{"version":1,"files":[{"path":"$seeds/otlp_state/state.json","dev":"2049","inode":"1234","size":"4096","offset":"2048","head_len":"2048","head_hash":"cbf29ce484222325"},
 {"path":"/nonexistent/r.jsonl","dev":1,"inode":2,"size":3,"offset":4,"head_len":4,"head_hash":"0"}]}
JSON
printf 'load 100 1 5000 sh\t/usr/bin/dash\nexec 100 1 5000 sh\tkept\t/usr/bin/python3\tpython3 a.py\nload 100 1 5000 python3\t/usr/bin/python3.11\nexec 100 1 5000 python3\tkept\t/bin/true\ttrue\nexecfail 100 1 5000 python3\t2\nload 101 100 5001 worker\t/usr/bin/worker\narmed 101 100 5001 worker\t\nspawn 101 100 5001 worker\tstripped\t/bin/sh\tsh -c x\nexec 104 101 5004 worker\tabsent\t/bin/env\tenv -i y...\noff 102 100 5002 bad\tno event loop\nexec 103 1 5003 a b\tkept\t/x\t\ntorn 1' \
  > "$seeds/launch_log/log"

# CPython line tables (python/line_table.h): every code object of tests/python/dump_line_tables.py
# as compiled by each installed interpreter, in the fuzzer's input format (a format byte, 4 bytes
# of co_firstlineno, the table; fuzz/python_line_table_fuzzer.cc).
rm -rf "$seeds/python_lines" && mkdir -p "$seeds/python_lines"
for py in /usr/bin/python3.1[0-9] "$HOME"/.pyenv/versions/3.1[0-9].*/bin/python3.1[0-9]; do
  [ -x "$py" ] || continue
  "$py" "$src/tests/python/dump_line_tables.py" |
    python3 -c '
import json, struct, sys
d = json.load(sys.stdin)
for i, c in enumerate(d["codes"]):
    with open("%s/3.%d-%d" % (sys.argv[1], d["minor"], i), "wb") as f:
        f.write(struct.pack("<Bi", 1 if d["minor"] <= 10 else 0, c["first_line"]))
        f.write(bytes.fromhex(c["table"]))
' "$seeds/python_lines"
done
[ -n "$(ls "$seeds/python_lines")" ] || printf '\x00\x01\x00\x00\x00' > "$seeds/python_lines/empty"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {
  local target=$1 runs=$2 max_len=$3
  shift 3
  local corpus=$work/corpus/$target budget
  mkdir -p "$corpus"
  if [ -n "${FUZZ_SECONDS:-}" ]; then budget=-max_total_time=$FUZZ_SECONDS; else budget=-runs=$((runs * scale)); fi
  echo "== $target ($budget)"
  local start=$SECONDS
  "$bin/$target" "$budget" -seed=1 -timeout=20 -rss_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$work/$target-" "$corpus" "$@" \
    > "$work/$target.log" 2>&1 || { tail -60 "$work/$target.log"; exit 1; }
  echo "   $(grep -E "stat::number_of_executed_units" "$work/$target.log" | tail -1), $((SECONDS - start)) s"
}
run symbol_index_reader_fuzzer 4000 4000000 "$seeds/index"
run symbol_index_builder_fuzzer 300 4000000 "$seeds/elf"
run dwarf_line_table_fuzzer 10000 4000000 "$seeds/lines"
run dwarf_die_reader_fuzzer 10000 4000000 "$seeds/dies"
run perf_map_fuzzer 20000 4096 "$seeds/perf_map"
run macho_parser_fuzzer 50000 4096 "$seeds/macho_parser"
run cfi_unwinder_fuzzer 20000 20000 "$seeds/cfi_unwinder"
run open_hang_file_fuzzer 3000 200000 "$seeds/open_hang_file"
run otlp_state_fuzzer 5000 4096 "$seeds/otlp_state" -dict="$src/fuzz/json.dict"
run launch_log_fuzzer 20000 4096 "$seeds/launch_log"
run report_reader_fuzzer 20000 4096 "$src/tests/tools/report_corpus" "$src/tests/report/corpus" -dict="$src/fuzz/json.dict"
run gate_scan_fuzzer 5000 8192 "$src/tests/tools/report_corpus" "$src/tests/report/corpus" -dict="$src/fuzz/json.dict"
run python_line_table_fuzzer 300000 4096 "$seeds/python_lines"
run top_scan_fuzzer 20000 8192 "$src/tests/tools/report_corpus" "$src/tests/report/corpus" -dict="$src/fuzz/json.dict"
run report_html_data_fuzzer 3000 8192 "$src/tests/tools/report_corpus" -dict="$src/fuzz/json.dict"
