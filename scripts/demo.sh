#!/usr/bin/env bash
# README command 1: install what is missing, build, run the demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
HANGWATCH_PROGRESS=1 scripts/build.sh build
exec build/examples/hangwatch_demo "$@"
