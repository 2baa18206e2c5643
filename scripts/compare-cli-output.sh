#!/usr/bin/env bash
# compare-cli-output.sh OLD_DIR NEW_DIR [REPORT...]: runs every command of two builds of the
# command line (OLD_DIR/hangwatch and NEW_DIR/hangwatch, each with its hangwatch-top) over the
# same inputs, with every output format, and compares what they print and write, byte for
# byte, with their exit statuses. For changes that must not change behaviour (issue: "every
# output stays byte-identical"): exit 0 when all agree, 1 with the differing cases listed.
#
# Inputs: tests/tools/report_corpus/*.jsonl and the REPORTs given (real reports: run
# `hangwatch run --report R -- PROGRAM` once and pass R to both). Every case runs in the same
# directory for both builds, so paths in outputs agree. With libhangwatch_preload.so beside each
# hangwatch (the same file), the `run` cases watch real programs; with $STALL_PROGRAM
# (tests/tools/stall_program of a build), one that hangs.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_DIR NEW_DIR [REPORT...]" >&2
  exit 2
fi
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
reports=("$root"/tests/tools/report_corpus/*.jsonl "$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cases=0
failed=0

# run_case NAME ARGS...: `hangwatch ARGS` of each build in $work/run (files it writes there
# are compared too), stdout, stderr and status.
run_case() {
  local name=$1
  shift
  # The `run` cases start processes: their ids, times and temporary directories differ from
  # one run to the next, whatever the build.
  # JUnit files carry the time they took.
  local normalize='s/(time)="[0-9.]+"/\1="T"/g'
  case $name in
    run-*) normalize+='; s/(pid |\[)[0-9]+/\1N/g; s/(time)="[0-9.]+"/\1="T"/g; s/[0-9.]+ (ms|s)\b/T \1/g; s#hangwatch-run\.[A-Za-z0-9]+#hangwatch-run.X#g' ;;
  esac
  local side
  for side in old new; do
    local bin=$old
    [ $side = new ] && bin=$new
    rm -rf "$work/run" && mkdir -p "$work/run"
    (cd "$work/run" && "$bin/hangwatch" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
     echo "status $?" >"$work/status")
    # What the build writes names its own directory: make it the same word on both sides.
    mkdir -p "$work/$side"
    {
      cat "$work/status"
      echo "-- stdout"; cat "$work/stdout"
      echo "-- stderr"; cat "$work/stderr"
      for f in $(cd "$work/run" && find . -type f | sort); do
        echo "-- file $f"; cat "$work/run/$f"
      done
    } | sed -E "s#$bin/#BIN/#g; $normalize" >"$work/$side/out"
  done
  cases=$((cases + 1))
  if ! cmp -s "$work/old/out" "$work/new/out"; then
    failed=$((failed + 1))
    echo "DIFFERS: hangwatch $*"
    diff "$work/old/out" "$work/new/out" | head -20
  fi
}

run_case help --help
run_case none
run_case unknown frobnicate
for c in report gate top export run snapshot symbolize symbols; do
  run_case "$c-help" $c --help
  run_case "$c-badflag" $c --no-such-flag
done
run_case report-missing report /nonexistent/report.jsonl
run_case report-dir report /
for r in "${reports[@]}"; do
  for f in text json folded trace; do
    run_case report-$f report --format $f "$r"
    run_case report-$f-nosym report --no-symbolize --format $f "$r"
  done
  run_case report-svg report --format svg -o out.svg "$r"
  run_case report-pprof report --format pprof -o out.pb.gz "$r"
  run_case report-html report --format html -o out.html "$r"
  run_case gate gate "$r"
  run_case gate-json gate --format json "$r"
  run_case gate-files gate --junit j.xml --markdown m.md --github "$r"
  run_case gate-base gate --baseline "$r" "$r"
  run_case gate-budget gate --max-hang-ms 100000 --max-hangs 3 "$r"
  for by in signature fingerprint culprit; do
    run_case top-$by top --by $by "$r"
    run_case top-$by-json top --by $by --format json "$r"
  done
done
run_case report-all report "${reports[@]}"
run_case top-all top --format json "${reports[@]}"
run_case gate-all gate --format json "${reports[@]}"
run_case symbolize symbolize --obj "$new/hangwatch" 0x1000 0x2000
run_case run-true run -- true
run_case run-false run -- false
run_case run-missing run -- /nonexistent/program
if [ -n "${STALL_PROGRAM:-}" ]; then
  run_case run-stall run -- "$STALL_PROGRAM" 0 0
  run_case run-stall-gate run --max-hangs 5 --junit j.xml -- "$STALL_PROGRAM" 0 0
fi
run_case snapshot-dead snapshot 999999999
echo "$cases cases, $failed differ"
[ $failed -eq 0 ]
