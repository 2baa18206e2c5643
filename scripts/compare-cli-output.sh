#!/usr/bin/env bash
# compare-cli-output.sh OLD_DIR NEW_DIR [REPORT...]: runs every command of two builds of the
# command line (OLD_DIR/hangwatch and NEW_DIR/hangwatch, each with its hangwatch-top) over the
# same inputs, with every output format, and compares what they print and write, byte for
# byte, with their exit statuses: exit 0 when all agree, 1 with the differing cases listed.
# A tool for refactors, not a CI gate: it compares two builds (the tree before a change that must
# not change behaviour, and after it), and CI has one. Run it by hand for such a change, against
# a build of the commit before it (docs/building-and-testing.md).
#
# Inputs: tests/tools/report_corpus/*.jsonl and the REPORTs given (real reports: run
# `hangwatch run --report R -- PROGRAM` once and pass R to both). Every case runs in the same
# directory for both builds, so paths in outputs agree. With the shim (libhangwatch_preload.so
# and libhangwatch_preload_agent.so) beside each hangwatch (the same files), the `run` cases
# watch real programs; with $STALL_PROGRAM (tests/tools/stall_program of a build), one that
# hangs.
set -uo pipefail
export HANGWATCH_CACHE_DIR  # set per case below
unset DEBUGINFOD_URLS
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_DIR NEW_DIR [REPORT...]" >&2
  exit 2
fi
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
shift 2
for dir in "$old" "$new"; do
  for bin in hangwatch hangwatch-top; do
    if [ ! -x "$dir/$bin" ]; then
      echo "$0: $dir/$bin: not an executable (a build's tools/ directory is wanted)" >&2
      exit 2
    fi
  done
done
if cmp -s "$old/hangwatch" "$new/hangwatch"; then
  echo "$0: $old/hangwatch and $new/hangwatch are the same file: nothing to compare" >&2
  exit 2
fi
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
    # A hang's addresses (ASLR), samples and CPU differ from one run to the next too: only
    # its shape is compared.
    run-hang-*) normalize+='; s/0x[0-9a-f]+/0xH/g; s/[0-9]+/N/g' ;;&
    run-*) normalize+='; s/(pid |\[)[0-9]+/\1N/g; s/(time)="[0-9.]+"/\1="T"/g; s/[0-9.]+ (ms|s)\b/T \1/g; s#hangwatch-run\.[A-Za-z0-9]+#hangwatch-run.X#g' ;;
  esac
  local side
  for side in old new; do
    local bin=$old
    [ $side = new ] && bin=$new
    # Each case symbolizes with an empty index cache of its own: a build must not read the index
    # the other one wrote (nor the user's), and debuginfod stays out (no network in the answer).
    rm -rf "$work/run" "$work/cache" && mkdir -p "$work/run" "$work/cache"
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
# The command lines' one flag parser (tools/common/flag_parser.h): --help as -h, "--", values
# missing at the end, bad and out-of-range numbers, "--flag=V", for every command.
r=${reports[${#reports[@]}-1]}
for c in report gate top export; do
  run_case "$c-h" $c -h
  run_case "$c-noargs" $c
  run_case "$c-dashdash" $c --no-symbolize -- "$r"
  run_case "$c-lonedash" $c --no-symbolize -
done
for f in --format -f --output -o --title --hang --search --debug-dir --cache-dir; do
  run_case "report-missing$f" report "$r" $f
done
for f in --baseline --allow --max-hang-ms --max-hangs --max-p99-ms --max-slow-passes --junit \
         --markdown --format --search --debug-dir --cache-dir; do
  run_case "gate-missing$f" gate "$r" $f
done
for f in --by --format -f --sort --label --since --until --limit --jobs -j --output -o --search \
         --debug-dir --cache-dir; do
  run_case "top-missing$f" top "$r" $f
done
for f in --otlp --protocol --header --state --batch-size --timeout-ms --retries --backoff-ms \
         --max-backoff-ms --search --debug-dir --cache-dir; do
  run_case "export-missing$f" export "$r" $f
done
for f in --threshold-ms --sample-ms --startup-ms --report --baseline --allow --max-hang-ms \
         --max-hangs --max-p99-ms --max-slow-passes --junit --markdown; do
  run_case "run-missing$f" run $f
done
for f in --max-frames --stack-kb --stop-timeout-ms; do
  run_case "snapshot-missing$f" snapshot 1 $f
done
for f in --obj --exe -e --build-id --search --debug-dir --debug-file-directory --cache-dir; do
  run_case "symbolize-missing$f" symbolize $f
done
for f in --debug-dir --cache-dir --threads; do
  run_case "symbols-missing$f" symbols index $f
done
for v in abc 12x -1 "" 0 99999999999999999999999; do
  run_case "report-hang[$v]" report --no-symbolize --hang "$v" "$r"
  run_case "report-hang=[$v]" report --no-symbolize "--hang=$v" "$r"
  for f in --limit --jobs -j; do run_case "top$f[$v]" top --no-symbolize $f "$v" "$r"; done
  for f in --batch-size --timeout-ms --retries --backoff-ms --max-backoff-ms; do
    run_case "export$f[$v]" export --otlp http://127.0.0.1:9 $f "$v" /nonexistent
  done
  for f in --threshold-ms --sample-ms --startup-ms --max-hang-ms --max-hangs --max-p99-ms; do
    run_case "run$f[$v]" run $f "$v" -- /nonexistent/program
  done
  for f in --max-hang-ms --max-hangs --max-p99-ms; do
    run_case "gate$f[$v]" gate --no-symbolize $f "$v" "$r"
  done
  run_case "gate-slow[$v]" gate --no-symbolize --max-slow-passes "50:$v" "$r"
  run_case "gate-slow-ms[$v]" gate --no-symbolize --max-slow-passes "$v:5" "$r"
  for f in --max-frames --stack-kb --stop-timeout-ms; do
    run_case "snapshot$f[$v]" snapshot 999999999 $f "$v"
  done
  run_case "snapshot-pid[$v]" snapshot "$v"
done
for v in 512 513 100 101 3600000 3600001; do
  run_case "export-range[$v]" export --otlp http://127.0.0.1:9 --batch-size "$v" --retries "$v" \
    --timeout-ms "$v" /nonexistent
  run_case "run-range[$v]" run --threshold-ms "$v" --sample-ms 3600000 -- /nonexistent/program
done
for v in 65536 65537 600000 600001 1073741823 1073741824; do
  run_case "snapshot-range[$v]" snapshot 999999999 --max-frames "$v"
  run_case "snapshot-range-stop[$v]" snapshot 999999999 --stop-timeout-ms "$v"
  # Never a live process: a snapshot would stop it, and its stacks differ from run to run.
  [ -e "/proc/$v" ] || run_case "snapshot-range-pid[$v]" snapshot "$v"
done
run_case report-format-bad report --format nope "$r"
run_case report-inline report --no-symbolize --format=json --hang=0 "-o=o.json" "$r"
run_case gate-format-bad gate --format=xml "$r"
run_case gate-allow-twice gate --allow a --allow b "$r"
run_case gate-baseline-list gate --no-symbolize --baseline "$r" "$r" --format json "$r"
run_case gate-baseline-inline gate --no-symbolize "--baseline=$r" "$r"
run_case gate-slow-twice gate --max-slow-passes 50:1 --max-slow-passes 50:2 "$r"
run_case gate-slow-bad gate --max-slow-passes 51:1 "$r"
run_case gate-budgets-junit gate --no-symbolize --max-hangs 100 --max-hang-ms 1 --junit j.xml "$r"
run_case gate-lag-junit gate --no-symbolize --max-p99-ms 1000 --max-slow-passes 50:10 \
  --junit j.xml "${reports[@]}"
run_case top-inline top --no-symbolize --by=culprit --sort=total --limit=3 -j=1 -f=json "$r"
run_case top-label-bad top --label =x "$r"
run_case top-since-bad top --since yesterday "$r"
run_case top-until top --no-symbolize --until 2000-01-01 --since=1 "$r"
run_case top-by-bad top --by nope "$r"
run_case top-sort-bad top --sort nope "$r"
run_case export-protocol-bad export --otlp x --protocol nope "$r"
run_case export-header-bad export --otlp x --header 'nokey' "$r"
run_case export-no-endpoint export "$r"
run_case export-unknown-redacted export --otlp x '--http://user:secret@host/' "$r"
run_case symbolize-dashdash symbolize --obj "$new/hangwatch" -- 0x1000
run_case symbolize-negative symbolize --obj "$new/hangwatch" -5 0x1000
run_case symbolize-none symbolize 0x1000
run_case symbols-none symbols
run_case symbols-help symbols -h
run_case symbols-index-help symbols index --help
run_case symbols-index-none symbols index
run_case symbols-index-dashdash symbols index --
run_case symbols-other symbols other
run_case symbols-other-escaped symbols $'o\033]0;x\a'
run_case report-unknown-escaped report $'--x\033[2J'
run_case snapshot-pid-escaped snapshot $'1\033x'
run_case snapshot-none snapshot
run_case snapshot-two snapshot 999999999 2
run_case snapshot-lonedash snapshot -
run_case snapshot-dashdash snapshot -- 999999999
run_case snapshot-h snapshot -h
run_case run-none run
run_case run-h run -h
run_case run-sample-over run --threshold-ms 100 --sample-ms 200 -- true
run_case run-unknown-after run --quiet --bogus -- true
run_case run-junit-missing run --junit j.xml -- /nonexistent/program
run_case run-junit-true run --junit j.xml --markdown m.md --github -- true
run_case run-inline-true run --threshold-ms=300 --quiet --fail-on-hang true
if [ -n "${STALL_PROGRAM:-}" ]; then
  run_case run-junit-stall run --junit j.xml -- "$STALL_PROGRAM" 0 0
  run_case run-hang-junit run --junit j.xml -- "$STALL_PROGRAM" 0 600
  run_case run-hang-gate run --max-hangs 0 --junit j.xml --markdown m.md -- "$STALL_PROGRAM" 0 600
fi
echo "$cases cases, $failed differ"
[ $failed -eq 0 ]
