#!/usr/bin/env bash
# form_check.sh: on the GPU machine, every suite program in the drain form under random evictions, checked
# against the original build, and each program's time as written, in auto, drain and persistent forms, interleaved.
# Issue 3 (docs/preemption.md, "Drain form"); builds nothing: bench/build_suite.sh here first, carry build/bench.
# Usage: bench/preemption/form_check.sh OUT.jsonl   (one JSON line per run; report_forms.py turns it into a table)
set -uo pipefail
# These programs evict (API, preemptd, stress): every launch converted, and what eviction needs asked of CUDA at
# start (docs/preemption.md, "Launches as written" and "What a process asks of CUDA").
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREEMPT_BUILD_DIR:-$root/build}/bench
out=${1:?usage: form_check.sh OUT.jsonl}
reps=${PREEMPT_BENCH_REPS:-7}
rounds=${FORM_CHECK_ROUNDS:-3}
work=$(mktemp -d)
: > "$out"
# run NAME LABEL ENV...: one run of the program (original build for LABEL=original), one JSON line.
run() {
  local name=$1 label=$2 build=preempt log status
  shift 2
  [ "$label" = original ] && build=original
  local output=$work/$name.$label.out
  if log=$(env "$@" "$bin/$build/$name" "$output" "$reps" 2>"$work/$name.$label.err"); then status=ok; else status="exit$?"; fi
  local timing evictions drained
  timing=$(echo "$log" | grep -o 'time_ms=[0-9.]*' | cut -d= -f2)
  evictions=$(grep -o 'stress: [0-9]* evictions' "$work/$name.$label.err" | grep -o '[0-9]*' || true)
  drained=$(grep -o '[0-9]* of drained launches' "$work/$name.$label.err" | grep -o '^[0-9]*' || true)
  python3 - "$name" "$label" "$status" "${timing:-nan}" "${evictions:-0}" "${drained:-0}" "$output" \
    "$work/$name.original.out" "$work/$name.$label.err" >> "$out" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["FORM_CHECK_ROOT"], "bench"))
from report_suite import compare
name, label, status, timing, evictions, drained, output, reference, errors = sys.argv[1:]
row = {"program": name, "run": label, "status": status, "time_ms": float(timing), "evictions": int(evictions),
       "drained_evictions": int(drained)}
tolerance = float(os.environ.get("FORM_CHECK_TOLERANCE", "0"))
if label != "original" and status == "ok":
    try:
        same, why = compare(reference, output, tolerance)
        row["match"], row["detail"] = same, why
    except Exception as error:  # a missing or short file
        row["match"], row["detail"] = False, str(error)
if status != "ok":
    row["stderr"] = open(errors, errors="replace").read()[-400:]
print(json.dumps(row))
PY
}
export FORM_CHECK_ROOT=$root
while read -r name converted refused; do
  [ "$name" = sample ] && continue
  tolerance=$("$bin/original/$name" "$work/$name.original.out" "$reps" 2>/dev/null | grep -o 'tolerance=[0-9.e-]*' | cut -d= -f2)
  export FORM_CHECK_TOLERANCE=${tolerance:-0}
  run "$name" stress_drain PREEMPT_FORM=drain PREEMPT_STRESS=1
  run "$name" stress_auto PREEMPT_STRESS=1
  for round in $(seq 1 "$rounds"); do
    run "$name" original X=1
    run "$name" auto X=1
    run "$name" drain PREEMPT_FORM=drain
    run "$name" persistent PREEMPT_FORM=persistent
  done
done < "$bin/kernels.txt"
rm -rf "$work"
