#!/usr/bin/env bash
# period_sweep.sh OUT: how the in-task check period trades eviction latency for time (issue 8, docs/intask.md), on
# the GPU machine from build/bench. Per kernel and PREEMPT_INTASK_PERIOD_US: eviction latency (intask_bench latency,
# INTASK_LATENCY_M evictions, default 40) and time never evicted, interleaved with the -preempt-intask=0 build over
# ROUNDS rounds (default 3; one process each). A period short enough that a check comes every iteration or two
# leaves the latency's fixed part: the eviction word's write, the save, the grid's end and the host seeing it.
# Environment: SWEEP_KERNELS (default stencil,gemm), SWEEP_PERIODS (µs, default 2,5,10,20), SWEEP_BUILD (the plugin
# build's folder under build/bench, default preempt), ROUNDS, INTASK_LATENCY_M.
# Writes OUT/period_sweep.jsonl and prints a table (OUT/period_sweep.md).
set -uo pipefail
out=${1:?usage: period_sweep.sh OUT}
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=${PREEMPT_BUILD_DIR:-$root/build}/bench
build=${SWEEP_BUILD:-preempt}
rounds=${ROUNDS:-3}
latency_m=${INTASK_LATENCY_M:-40}
IFS=, read -r -a kernels <<< "${SWEEP_KERNELS:-stencil,gemm}"
IFS=, read -r -a periods <<< "${SWEEP_PERIODS:-2,5,10,20}"
for binary in "$bench/$build/intask_bench" "$bench/preempt_nointask/intask_bench"; do
  [ -x "$binary" ] || { echo "period_sweep.sh: $binary missing (bench/build_suite.sh builds it)" >&2; exit 1; }
done
mkdir -p "$out"
log=$out/period_sweep.jsonl
: > "$log"
env_common=(PREEMPT_FORM=persistent PREEMPT_ONE_WAVE=persistent PREEMPT_DAEMON=off PREEMPT_INTASK=on PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1)
# record KIND KERNEL PERIOD ROUND BINARY ARGS...: one JSON line (the program's last line) with its labels.
record() {
  local kind=$1 kernel=$2 period=$3 round=$4 binary=$5
  shift 5
  local line
  line=$(env "${env_common[@]}" ${period:+PREEMPT_INTASK_PERIOD_US=$period} timeout -s KILL 100 "$binary" "$@" \
    2> /dev/null | tail -1)
  [ "${line:0:1}" = "{" ] || line='{"failed": true}'
  echo "{\"kind\": \"$kind\", \"kernel\": \"$kernel\", \"period_us\": \"${period:-none}\", \"round\": $round, \"result\": $line}" >> "$log"
}
for kernel in "${kernels[@]}"; do
  for period in "${periods[@]}"; do
    record latency "$kernel" "$period" 0 "$bench/$build/intask_bench" latency "$kernel" "$latency_m"
  done
done
for round in $(seq "$rounds"); do
  for kernel in "${kernels[@]}"; do
    record time "$kernel" "" "$round" "$bench/preempt_nointask/intask_bench" time "$kernel"
    for period in "${periods[@]}"; do
      record time "$kernel" "$period" "$round" "$bench/$build/intask_bench" time "$kernel"
    done
  done
done
python3 - "$log" <<'PY' | tee "$out/period_sweep.md"
import json, statistics, sys
lines = [json.loads(t) for t in open(sys.argv[1])]
gpu = next((l["result"].get("gpu") for l in lines if l["result"].get("gpu")), "?")
print(f"Eviction latency (µs) and time never evicted (per-round ratio to -preempt-intask=0), per check period; {gpu}.\n")
print("| kernel | period µs | latency median | p99 | max | time ratio median (min..max) |")
print("|---|---|---|---|---|---|")
base = {(l["kernel"], l["round"]): l["result"]["time"]["median"] for l in lines
        if l["kind"] == "time" and l["period_us"] == "none" and "time" in l["result"]}
for l in lines:
    if l["kind"] != "latency":
        continue
    k, p, lat = l["kernel"], l["period_us"], l["result"].get("latency", {})
    ratios = [m["result"]["time"]["median"] / base[(k, m["round"])] for m in lines
              if m["kind"] == "time" and m["kernel"] == k and m["period_us"] == p and "time" in m["result"]
              and (k, m["round"]) in base]
    cell = f"{statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f})" if ratios else "n/a"
    def get(name):
        v = lat.get(name)
        return f"{v:.1f}" if isinstance(v, (int, float)) else "n/a"
    print(f"| {k} | {p} | {get('median')} | {get('p99')} | {get('max')} | {cell} |")
PY
