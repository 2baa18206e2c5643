#!/usr/bin/env bash
# README command 2: install what is missing, build, run the whole test suite: plain, then under
# AddressSanitizer + UndefinedBehaviorSanitizer; then under ThreadSanitizer the capture stress
# test (a target hammering malloc, mutexes and stdio while it is captured) and the symbol index
# built by several threads.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
jobs=$(nproc)

echo "== plain build"
scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900

echo "== ASan + UBSan build"
# -O1 -g1, as AddressSanitizer's own documentation suggests: line tables are all its reports
# need, and a heavy test file compiles in less than half the time of -O2 -g.
scripts/build.sh build-asan -DHANGWATCH_ASAN=ON -DHANGWATCH_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900 -LE 'no_asan|real_component'

echo "== ThreadSanitizer: the capture stress test, the multi-threaded symbol index build"
HANGWATCH_TARGETS="capture_stress_test dwarf_die_reader_test" scripts/build.sh build-tsan \
  -DHANGWATCH_TSAN=ON -DHANGWATCH_BUILD_BENCH=OFF
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
build-tsan/tests/unwind/capture_stress_test
build-tsan/tests/symbols/dwarf_die_reader_test --gtest_filter='IndexThreads*'

