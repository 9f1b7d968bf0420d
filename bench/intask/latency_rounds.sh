#!/usr/bin/env bash
# latency_rounds.sh OUT [M] [ROUNDS]: in-task eviction latency (issue 8) as the host sees it and on the GPU's clock.
# Per round and kernel, two processes of M (default 100) evictions at random moments: `host` (preempt_query's EVICTED,
# from the request's return) and `timed` (PREEMPT_TIME_EVICTIONS=1: the same, and each eviction from the runtime's
# event after its words to the last grid's end, preempt_get_eviction_time). ROUNDS default 2. Builds: build/bench/
# preempt, and any other build/bench/<name>/intask_bench named in LATENCY_EXTRA_BUILDS (comma-separated); period from
# PREEMPT_INTASK_PERIOD_US as usual. Writes OUT/latency_rounds.jsonl, the runs' stderr in OUT/stderr.txt, and prints a
# table (latency_rounds.md in OUT).
set -uo pipefail
out=${1:?usage: latency_rounds.sh OUT [M] [ROUNDS]}
evictions=${2:-100}
rounds=${3:-2}
source "$(dirname "$0")/rounds.sh"
rounds_builds "${LATENCY_EXTRA_BUILDS:-}" preempt
mkdir -p "$out"
log=$out/latency_rounds.jsonl
: > "$log"
latency_one() {
  local round=$1 kernel=$2 build=$3 binary=$4 how timed line
  for how in host timed; do
    timed=0
    [ "$how" = timed ] && timed=1
    echo "== $build $kernel $how round $round" >> "$out/stderr.txt"
    line=$(env "${intask_env[@]}" PREEMPT_TIME_EVICTIONS=$timed timeout -s KILL 120 "$binary" latency "$kernel" \
      "$evictions" 2>> "$out/stderr.txt" | tail -1)
    [ "${line:0:1}" = "{" ] || line='{"failed": true}'
    echo "{\"round\": $round, \"kernel\": \"$kernel\", \"build\": \"$build\", \"how\": \"$how\", \"result\": $line}" \
      >> "$log"
  done
}
each_run "$rounds" latency_one
python3 "$root/bench/intask/report_latency_rounds.py" "$log" | tee "$out/latency_rounds.md"
