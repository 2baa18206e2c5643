#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) and runs each briefly on a
# seed corpus of real binaries (gcc/clang, DWARF 4/5, compressed, stripped, MiniDebugInfo) and
# of indexes built from them. Any crash, sanitizer report, leak or timeout fails the test.
# Usage: run_fuzzers.sh SOURCE_DIR WORK_DIR HANGWATCH_CLI   (FUZZ_SECONDS=10 per target)
set -euo pipefail
src=$1
work=$2
cli=$3
seconds=${FUZZ_SECONDS:-10}
mkdir -p "$work"
log=$work/build.log
if ! { cmake -S "$src/fuzz" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ &&
       cmake --build "$work/build"; } > "$log" 2>&1; then
  cat "$log"
  echo "run_fuzzers: building the fuzz targets failed" >&2
  exit 1
fi

seeds=$work/seeds
mkdir -p "$seeds/elf" "$seeds/index" "$seeds/lines" "$seeds/dies" "$work/corpus/elf" \
  "$work/corpus/index" "$work/corpus/lines" "$work/corpus/dies"
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
le32() { printf "\\x%02x\\x%02x\\x%02x\\x%02x" $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
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

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {
  local target=$1 corpus=$2 seed=$3
  echo "== $target (${seconds}s)"
  "$work/build/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -max_len=4000000 -print_final_stats=1 -artifact_prefix="$work/" "$corpus" "$seed" \
    > "$work/$target.log" 2>&1 || { tail -60 "$work/$target.log"; exit 1; }
  grep -E "stat::number_of_executed_units|Done" "$work/$target.log" | tail -2
}
run symbol_index_reader_fuzzer "$work/corpus/index" "$seeds/index"
run symbol_index_builder_fuzzer "$work/corpus/elf" "$seeds/elf"
run dwarf_line_table_fuzzer "$work/corpus/lines" "$seeds/lines"
run dwarf_die_reader_fuzzer "$work/corpus/dies" "$seeds/dies"
