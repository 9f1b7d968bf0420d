#!/usr/bin/env bash
# run-tests.sh: sets up a fresh machine, builds preempt and runs every test (lit: plugin, runtime, lib).
# The README's test command; .ci/run calls it. Its last line is "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PREEMPT_BUILD_DIR:-$root/build}
bash "$root/tools/setup.sh" || exit 1
bash "$root/tools/build.sh" || { echo "run-tests.sh: build failed"; echo "0 passed, 1 failed"; exit 1; }
log=$(mktemp)
/usr/lib/llvm-22/bin/lit -v "$build/test/lit" 2>&1 | tee "$log"
passed=$(grep -cE '^(PASS|XFAIL): ' "$log")
failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$log")
skipped=$(grep -cE '^UNSUPPORTED: ' "$log")
rm -f "$log"
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
  echo "run-tests.sh: lit ran no test" >&2
  failed=1
fi
[ "$skipped" -eq 0 ] || echo "run-tests.sh: $skipped tests skipped (a tool they need is missing)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
