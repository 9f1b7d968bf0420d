#!/bin/bash
# bench/corpus/queue_risk.sh [OUT_DIR]: on the GPU machine, the corpus's multi-stream programs under PREEMPT_STRESS with
# CUDA's 8 hardware queues (what a process that evicts without MPS has asked for since 60a5081) and with 32 (before),
# to tell the hardware-queue trap (docs/preemption.md) from slowness: simpleStreams timed out under stress with 8.
# Each run: wall time, exit code, whether the timeout killed it, the stress line; a killed run is rerun with
# PREEMPT_STRESS=2 and the last actions it logged are kept. Unpacks bench/corpus/out/corpus.tar.xz (build.sh).
# QUEUE_RISK_ONLY=REGEX: programs to run (default: the corpus's programs tagged streams); QUEUE_RISK_TIMEOUT_S (30).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-$here/out/queue_risk}}
timeout_s=${QUEUE_RISK_TIMEOUT_S:-30}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/queue_risk.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "${CORPUS_TARBALL:-$here/out/corpus.tar.xz}" -C "$work" || { echo "queue_risk.sh: no corpus tarball" >&2; exit 1; }
corpus=$work/corpus
export LD_LIBRARY_PATH=$corpus/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
programs=$(awk -F'\t' -v only="${QUEUE_RISK_ONLY:-}" 'NR > 1 && $1 != "" {
  if (only != "" ? $1 ~ only : $NF ~ /streams/) print $1 }' "$here/programs.tsv")
results=$out/queue_risk.jsonl
: > "$results"
# run NAME BUILD QUEUES STRESS: one JSON line.
run() {
  local name=$1 build=$2 queues=$3 stress=$4 dir=$corpus/$2 start rc killed
  [ -x "$dir/$name" ] || { echo "{\"program\": \"$name\", \"build\": \"$build\", \"missing\": true}" >> "$results"; return; }
  local args
  args=$(awk -F'\t' -v n="$name" '$1 == n && $6 != "-" { print $6 }' "$here/programs.tsv")
  start=$(date +%s%N)
  (cd "$dir" && env CUDA_DEVICE_MAX_CONNECTIONS="$queues" ${stress:+PREEMPT_STRESS=$stress} \
    timeout -s KILL "$timeout_s" "./$name" $args > "$work/$name.$build.$queues.out" 2> "$work/$name.$build.$queues.err")
  rc=$?
  killed=false
  [ $rc -eq 137 ] && killed=true
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  local line
  line=$(grep -m1 'preempt: stress:' "$work/$name.$build.$queues.err" | sed 's/"/\\"/g')
  echo "{\"program\": \"$name\", \"build\": \"$build\", \"queues\": $queues, \"stress\": \"${stress:-off}\", \"rc\": $rc, \"killed\": $killed, \"ms\": $ms, \"stress_line\": \"$line\"}" >> "$results"
  if $killed && [ -n "$stress" ]; then
    (cd "$dir" && env CUDA_DEVICE_MAX_CONNECTIONS="$queues" PREEMPT_STRESS=2 timeout -s KILL "$timeout_s" "./$name" $args \
      > /dev/null 2> "$work/verbose.err")
    tail -40 "$work/verbose.err" > "$out/$name.$queues.last_actions.txt"
  fi
}
echo "queue_risk.sh: GPU: ${gpu:-none}; programs: $(echo $programs | tr '\n' ' ')"
for name in $programs; do
  run "$name" original 8 ""
  for queues in 8 32; do run "$name" plugin "$queues" 1; done
done
{
  echo "# Multi-stream corpus programs under PREEMPT_STRESS with 8 and 32 hardware queues"
  echo
  echo "- GPU: ${gpu:-none}; commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null); command: bash bench/corpus/queue_risk.sh $*"
  echo
  echo "| program | original ms | stress, 8 queues ms (rc) | stress, 32 queues ms (rc) |"
  echo "|---|---|---|---|"
  python3 - "$results" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["program"], {})[(r["build"], r.get("queues"))] = r
def cell(r):
    if not r or r.get("missing"):
        return "missing"
    return f"{r['ms']} ({'KILLED' if r['killed'] else r['rc']})"
for name, runs in by.items():
    print(f"| {name} | {cell(runs.get(('original', 8)))} | {cell(runs.get(('plugin', 8)))} | {cell(runs.get(('plugin', 32)))} |")
EOF
} > "$out/queue_risk.md"
cat "$out/queue_risk.md"
