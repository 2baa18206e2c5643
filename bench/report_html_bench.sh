#!/usr/bin/env bash
# How long a `hangwatch report --format html` page of many hangs takes to become interactive in
# headless Chromium, and how big it is next to its JSON Lines.
#
#   bench/report_html_bench.sh [BUILD_DIR] [HANGS] [RUNS]      (defaults: build 10000 7)
#
# Needs, in BUILD_DIR: tools/hangwatch, tests/tools/report_html_fixture (the synthetic report of
# the tests) and tests/tools/html_node/node_modules (puppeteer-core, installed by the test
# fixture: `ctest -R report_html_npm`). Prints the size of both files, the time to write the
# page, and for RUNS fresh loads the time from the start of navigation until the page is
# interactive (html[data-ready]) and from a click on a hang until its flame graph is drawn,
# with their medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
hangs=${2:-10000}
runs=${3:-7}
modules=$build/tests/tools/html_node/node_modules
for f in "$build/tools/hangwatch" "$build/tests/tools/report_html_fixture" "$modules/puppeteer-core"; do
  if [ ! -e "$f" ]; then
    echo "report_html_bench: $f is missing (build hangwatch_cli and report_html_fixture, then" \
         "ctest -R report_html_npm)" >&2
    exit 2
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/tests/tools/report_html_fixture" "$hangs" 1 >"$tmp/report.jsonl"
start=$(date +%s%N)
"$build/tools/hangwatch" report "$tmp/report.jsonl" --no-symbolize --format html -o "$tmp/report.html"
end=$(date +%s%N)
in=$(stat -c %s "$tmp/report.jsonl")
out=$(stat -c %s "$tmp/report.html")
echo "hangs: $hangs"
echo "JSON Lines: $in bytes; HTML: $out bytes ($(awk "BEGIN{printf \"%.2f\", $out/$in}")x)"
echo "hangwatch report --format html: $(( (end - start) / 1000000 )) ms"
NODE_PATH=$modules node "$root/tests/tools/html/browser_check.js" load "$tmp/report.html" "$runs" |
  node -e '
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const f = a => a.map(v => v.toFixed(0)).join(" ");
    console.log("interactive after (ms):       " + f(r.ready_ms) + "   median " + r.ready_median_ms.toFixed(0));
    console.log("click to flame graph (ms):    " + f(r.click_ms) + "   median " + r.click_median_ms.toFixed(0));
    if (r.console.length || r.requests.length) {
      console.log("console: " + JSON.stringify(r.console) + " requests: " + JSON.stringify(r.requests));
      process.exit(1);
    }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
