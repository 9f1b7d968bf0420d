#!/usr/bin/env bash
# time_rounds.sh OUT [ROUNDS]: the in-task overhead (issue 8) with the builds interleaved, ROUNDS (default 5) rounds;
# one process per build, kernel and round (intask_bench time: the median of 7 launches). A single process per build
# moved by 2-3% between runs of the same binary, more than the spread inside one; the rounds take that into the
# spread. Builds: preempt_nointask (-preempt-intask=0, the baseline), preempt (in-task points, never evicted),
# preempt@runtime and preempt@chunks (the same build forced to one in-task shape: run-time chunks, constant chunks;
# `preempt` alone runs the one the runtime chose), preempt_countdown (every point counts down) and any other
# build/bench/<name>/intask_bench (or <name>@<shape>) named in TIME_EXTRA_BUILDS (comma-separated). Writes OUT/time_rounds.jsonl and prints a table (time_rounds.md in OUT):
# per build, the median over rounds of each round's ratio to the baseline of the same round, with min..max.
set -uo pipefail
out=${1:?usage: time_rounds.sh OUT [ROUNDS]}
rounds=${2:-5}
source "$(dirname "$0")/rounds.sh"
rounds_builds "${TIME_EXTRA_BUILDS:-}" preempt_nointask preempt preempt@runtime preempt@chunks preempt_countdown
mkdir -p "$out"
log=$out/time_rounds.jsonl
: > "$log"
time_one() {
  local round=$1 kernel=$2 build=$3 binary=$4 line
  line=$(env "${intask_env[@]}" timeout -s KILL 60 "$binary" time "$kernel" 2> /dev/null | tail -1)
  [ "${line:0:1}" = "{" ] || line='{"failed": true}'
  echo "{\"round\": $round, \"kernel\": \"$kernel\", \"build\": \"$build\", \"result\": $line}" >> "$log"
}
each_run "$rounds" time_one
python3 - "$log" "${builds[@]}" <<'PY' | tee "$out/time_rounds.md"
import json, statistics, sys
log, builds = sys.argv[1], sys.argv[2:]
times = {}
for text in open(log):
    line = json.loads(text)
    median = line["result"].get("time", {}).get("median")
    if median:
        times.setdefault((line["kernel"], line["build"]), {})[line["round"]] = median
kernels = list(dict.fromkeys(k for k, _ in times))  # first seen: rounds.sh's order
gpu = next((json.loads(t)["result"].get("gpu") for t in open(log) if '"gpu"' in t), "?")
print(f"Per-round ratio to preempt_nointask (same round), median (min..max) over rounds; {gpu}.\n")
print("| kernel | nointask ms | " + " | ".join(b for b in builds[1:]) + " |")
print("|---|---|" + "---|" * (len(builds) - 1))
for k in kernels:
    base = times.get((k, builds[0]), {})
    cells = [f"{statistics.median(base.values()):.3f}" if base else "n/a"]
    for b in builds[1:]:
        t = times.get((k, b), {})
        ratios = [t[r] / base[r] for r in t if r in base]
        cells.append(f"{statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f}, n={len(ratios)})"
                     if ratios else "n/a")
    print(f"| {k} | " + " | ".join(cells) + " |")
PY
