#!/usr/bin/env bash
# coexec_check.sh OUT [PAIRS...]: FlexSched's co-execution measured on the GPU (issue 7), from build/bench (built
# by bench/build_suite.sh). Per pair: its co-execution space, sequential and plain-stream makespans of the kernels
# as written, every configuration's makespan with quotas set in-process (brute force, FlexSched §5.3), and the
# configuration preemptd's flexsched policy finds (when build/tools/preemptd was carried). Then a mix of 12
# kernels. One JSON line per run in OUT/coexec.jsonl; results are checked by the program (wrong_blocks, over_quota).
set -uo pipefail
out=${1:?usage: coexec_check.sh OUT [PAIRS...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=${PREEMPT_BUILD_DIR:-$root/build}/bench
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(alu:gather alu:wide tile:gather tile:wide)
reps=${COEXEC_REPS:-3}
mkdir -p "$out"
log=$out/coexec.jsonl
: > "$log"
failures=0
run() { # label, command...: appends the program's JSON with the label, counts failures
  local label=$1 line status
  shift
  line=$("$@" 2> "$out/coexec-last.err")
  status=$?
  if [ $status -ne 0 ] || [ -z "$line" ]; then
    echo "FAIL $label: status $status: $(tail -3 "$out/coexec-last.err")" >&2
    failures=$((failures + 1))
    line=${line:-"{}"}
  fi
  echo "{\"label\": \"$label\", \"result\": $line}" >> "$log"
}
for pair in "${pairs[@]}"; do
  a=${pair%%:*} b=${pair##*:}
  space=$("$bench/preempt/coexec_bench" space "$a" "$b") || { echo "FAIL space $pair" >&2; failures=$((failures + 1)); continue; }
  echo "{\"label\": \"space\", \"result\": $space}" >> "$log"
  count=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["configs"]))' "$space")
  run "seq" "$bench/original/coexec_bench" pair "$a" "$b" seq "$reps"
  run "streams" "$bench/original/coexec_bench" pair "$a" "$b" streams "$reps"
  for ((config = 0; config < count; config++)); do
    PREEMPT_DAEMON=off run "fixed" "$bench/preempt/coexec_bench" pair "$a" "$b" fixed "$reps" "$config"
  done
done
run "mix-seq" "$bench/original/coexec_bench" mix 12 seq "$reps"
run "mix-streams" "$bench/original/coexec_bench" mix 12 streams "$reps"
echo "coexec_check: $failures failed"
[ $failures -eq 0 ]
