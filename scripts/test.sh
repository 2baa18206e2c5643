#!/usr/bin/env bash
# README command 2: install what is missing, build, run the whole test suite: plain, then under
# AddressSanitizer + UndefinedBehaviorSanitizer; then under ThreadSanitizer the capture stress
# test (a target hammering malloc, mutexes and stdio while it is captured) and the symbol index
# built by several threads.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Each phase's line says when it started (seconds since the script did), so a CI log tells
# where the time went.
phase() { echo "== $* (at ${SECONDS} s)"; }
scripts/bootstrap.sh
jobs=$(nproc)
# ctest runs one test more than there are cores: many tests wait (on a child, a server, a
# threshold) more than they compute; at -j2 the plain suite kept 2 cores 69 % busy (390 s of
# CPU in 283 s), at -j3 it takes 205 s.
test_jobs=$((jobs + 1))

# The function-length rule (.clang-tidy's readability-function-size, 150 lines) over every
# source, in about a second, before anything is built: clang-tidy over the tree takes 25 minutes
# (scripts/tidy.sh runs it, and its other checks, over the files a change touches).
phase "function length"
scripts/check-function-length.py

phase "plain build"
scripts/build.sh build
# The cross checks (label cross) are left for later: they build a lot, and would disturb the
# suite's timing-sensitive tests. The fuzzers (label fuzz) run in the ASan tree, which builds
# them with the libraries its tests use (a tree of their own would compile those again).
phase "plain tests"
ctest --test-dir build --output-on-failure -j "$test_jobs" --timeout 900 -LE 'cross|fuzz'

# The macOS check only compiles and links: it runs beside the ASan build, which has no timing
# to disturb either. (The aarch64 check runs the agent's timed tests under qemu: alone, below.)
phase "macOS cross check, beside the ASan build"
# --no-tests=error: a check that no longer matches its name fails instead of passing unrun.
ctest --test-dir build --output-on-failure --no-tests=error --timeout 2400 -R '^check_macos$' \
  >build/check-macos.log 2>&1 &
cross=$!
trap 'kill "$cross" 2>/dev/null || true' EXIT  # not left running when a later step fails

phase "ASan + UBSan build"
# Built with clang, the GCC build above being the one whose warnings and code ship: with both
# sanitizers clang compiles a file in 0.57 of GCC's time (agent/core/agent.cc: 15.5 s against
# 27.4 s; GCC's UBSan alone doubles its time), and with clang the tree builds the fuzzers of
# fuzz/ too. -O1 with line tables, as AddressSanitizer's own documentation suggests: they are
# all its reports need. Only what its ctest run below needs (hangwatch_tests:
# cmake/test_suite.cmake), not the examples or libhangwatch.so. (A tree configured with GCC
# before is configured afresh.)
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
# Linked with lld: a test binary links in 0.2 s instead of 0.5 s with GNU ld (the relink of
# 137 of them: 25 s of CPU instead of 56 s). The CLI's libraries as unity builds: 187 s of CPU
# instead of 231 s (tools/CMakeLists.txt). The plain tree keeps the system's default linker,
# the one most users build with, and compiles each source on its own.
lld=-fuse-ld=lld
HANGWATCH_TARGETS=hangwatch_tests scripts/build.sh build-asan -DHANGWATCH_ASAN=ON -DHANGWATCH_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_EXE_LINKER_FLAGS=$lld -DCMAKE_SHARED_LINKER_FLAGS=$lld -DCMAKE_MODULE_LINKER_FLAGS=$lld \
  -DHANGWATCH_UNITY_TOOLS=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG"
cross_status=0
wait "$cross" || cross_status=$?
cat build/check-macos.log
if [ "$cross_status" -ne 0 ]; then
  echo "the macOS cross check failed (log above)" >&2
  exit 1
fi

phase "ASan + UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$test_jobs" --timeout 900 -LE 'no_asan|real_component'

phase "aarch64 cross check (the unwind/ and agent/ tests under qemu-user)"
ctest --test-dir build --output-on-failure --no-tests=error --timeout 2400 -R '^check_aarch64$'

phase "ThreadSanitizer: the capture stress test, the multi-threaded symbol index build, the lock and deadlock causes, watched threads, hang context"
# (A few test binaries: precompiling GoogleTest's headers would cost more than it saves.)
HANGWATCH_TARGETS="capture_stress_test dwarf_die_reader_test lock_owner_test wait_cause_e2e_test thread_watch_test three_loop_threads_test context_e2e_test" \
  scripts/build.sh build-tsan \
  -DHANGWATCH_TSAN=ON -DHANGWATCH_BUILD_BENCH=OFF -DHANGWATCH_TEST_PCH=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
build-tsan/tests/unwind/capture_stress_test
build-tsan/tests/symbols/dwarf_die_reader_test --gtest_filter='IndexThreads*'
# Threads watched besides main: their registry slots, run-loop words and monitors, handed between
# each thread and the watchdog (the case that forks is left to the plain and ASan builds).
build-tsan/tests/agent/thread_watch_test --gtest_filter='ThreadWatchTest.*:ThreadWatchLagTest.*'
build-tsan/tests/integrations/three_loop_threads_test
# Labels and sources written by the watched threads while the watchdog copies them (the case that
# forks is left to the plain and ASan builds).
build-tsan/tests/agent/context_e2e_test --gtest_filter='ContextE2eTest.*-*Fork*'
# The lock owners, chains and deadlocks: read from other threads' lock words while those
# threads block on them (the binary's sleep and child decoders, one thread each, are left out).
build-tsan/tests/cause/lock_owner_test --gtest_filter='LockOwnerTest.*'
build-tsan/tests/agent/wait_cause_e2e_test \
  --gtest_filter='WaitCauseE2eTest.MutexHeld*:WaitCauseE2eTest.ChainOfTwoLocks*'
# The deadlock case forks a child (from this single-threaded process: TSan supports that) that
# deadlocks on purpose: TSan's own deadlock detector would report the lock-order inversion it
# is made of and halt the child before the agent sees it, so that detector is off for it.
TSAN_OPTIONS=$TSAN_OPTIONS:detect_deadlocks=0 build-tsan/tests/agent/wait_cause_e2e_test \
  --gtest_filter='WaitCauseE2eTest.DeadlockLiveAndAfterKill'
phase "done"
