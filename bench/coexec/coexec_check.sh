#!/usr/bin/env bash
# coexec_check.sh OUT [PAIRS...]: FlexSched's co-execution measured on the GPU (issue 7), from build/bench (built
# by bench/build_suite.sh). Per pair: its co-execution space, sequential and plain-stream makespans of the kernels
# as written, every configuration's makespan with quotas set in-process (brute force, FlexSched §5.3), and the
# configuration preemptd's flexsched policy finds (when build/tools/preemptd was carried). Then a mix of 12
# kernels. One JSON line per run in OUT/coexec.jsonl; results are checked by the program (wrong_blocks, over_quota).
set -uo pipefail
# These programs evict (API, preemptd, stress): every launch converted, and what eviction needs asked of CUDA at
# start (docs/preemption.md, "Launches as written" and "What a process asks of CUDA").
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1
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
preemptd=$bench/preemptd
daemon_pid=""
start_daemon() { # name, preemptd arguments...: a fresh daemon on its own socket, its log in OUT/NAME.log
  local name=$1
  shift
  stop_daemon
  export PREEMPT_DAEMON_SOCKET=$out/$name.sock
  rm -f "$PREEMPT_DAEMON_SOCKET"
  "$preemptd" --foreground --socket "$PREEMPT_DAEMON_SOCKET" --log "$out/$name.log" "$@" 2> "$out/$name.err" &
  daemon_pid=$!
  for _ in $(seq 50); do [ -S "$PREEMPT_DAEMON_SOCKET" ] && return 0; sleep 0.1; done
  echo "FAIL preemptd did not start: $(tail -3 "$out/$name.err")" >&2
  failures=$((failures + 1))
  return 1
}
stop_daemon() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
  unset PREEMPT_DAEMON_SOCKET
}
trap stop_daemon EXIT
have_daemon=0
[ -x "$preemptd" ] && have_daemon=1
period=${COEXEC_PERIOD:-1ms}
# COEXEC_ONLY: a comma list of the parts to run (pairs, mix, latency); all by default.
only=",${COEXEC_ONLY:-pairs,mix,latency},"
wanted() { [[ $only == *",$1,"* ]]; }
scale=${COEXEC_DAEMON_SCALE:-4}
# Each kind alone, converted and persistent, at the daemon runs' length: the rates O_prof is measured against.
if wanted pairs; then
  for kind in $(printf '%s\n' "${pairs[@]}" | tr ':' '\n' | sort -u); do
    PREEMPT_DAEMON=off PREEMPT_FORM=persistent COEXEC_SCALE=$scale run "alone-long" \
      "$bench/preempt/coexec_bench" alone "$kind" seq "$reps"
  done
fi
for pair in "${pairs[@]}"; do
  wanted pairs || break
  a=${pair%%:*} b=${pair##*:}
  space=$("$bench/preempt/coexec_bench" space "$a" "$b") || { echo "FAIL space $pair" >&2; failures=$((failures + 1)); continue; }
  echo "{\"label\": \"space\", \"result\": $space}" >> "$log"
  count=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["configs"]))' "$space")
  run "seq" "$bench/original/coexec_bench" pair "$a" "$b" seq "$reps"
  run "streams" "$bench/original/coexec_bench" pair "$a" "$b" streams "$reps"
  for ((config = 0; config < count; config++)); do
    PREEMPT_DAEMON=off run "fixed" "$bench/preempt/coexec_bench" pair "$a" "$b" fixed "$reps" "$config"
  done
  # Longer kernels for the daemon's search, with their own baselines at the same length.
  COEXEC_SCALE=$scale run "seq-long" "$bench/original/coexec_bench" pair "$a" "$b" seq "$reps"
  COEXEC_SCALE=$scale run "streams-long" "$bench/original/coexec_bench" pair "$a" "$b" streams "$reps"
  if [ $have_daemon -eq 1 ] && start_daemon "flexsched-$a-$b" --policy flexsched --param flexsched_period=$period; then
    COEXEC_SCALE=$scale run "flexsched-long" "$bench/preempt/coexec_bench" pair "$a" "$b" daemon "$reps"
    stop_daemon
  fi
  # Brute force through the same path: the daemon pins configuration N instead of searching.
  for ((config = 0; config < count && have_daemon; config++)); do
    if start_daemon "fixed-$a-$b-$config" --policy flexsched --param flexsched_period=$period \
        --param flexsched_fixed=$config; then
      COEXEC_SCALE=$scale run "daemon-fixed-long-$config" "$bench/preempt/coexec_bench" pair "$a" "$b" daemon "$reps"
      stop_daemon
    fi
  done
done
# Latency-sensitive mode (FlexSched §5.5, Table 4): a batch process and a higher-priority process under MPS (two
# priorities need two processes); the log's latency settle says how many CTAs per SM the batch kernel kept.
if [ $have_daemon -eq 1 ] && wanted latency && command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if timeout -s KILL 30 nvidia-cuda-mps-control -d; then
    for slowdown in 0.5 0.4 0.3 0.2 0.1; do
      if start_daemon "latency-$slowdown" --policy flexsched --param flexsched_period=$period \
          --param flexsched_slowdown=$slowdown; then
        # The batch kernel runs 5 times about 0.9 s; the latency-sensitive process (38 ms kernels) starts 0.4 s in
        # and reaches the GPU about 2 s later (its CUDA start under MPS).
        COEXEC_SCALE=$((scale * 16)) "$bench/preempt/coexec_bench" alone gather daemon 4 > "$out/latency-$slowdown-batch.json" 2>&1 &
        batch=$!
        sleep 0.4
        PREEMPT_PRIORITY=5 COEXEC_SCALE=$scale run "latency-$slowdown" "$bench/preempt/coexec_bench" alone alu daemon 1
        wait $batch || { echo "FAIL latency-$slowdown batch: $(tail -2 "$out/latency-$slowdown-batch.json")" >&2; failures=$((failures + 1)); }
        stop_daemon
      fi
    done
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  else
    echo "coexec_check: MPS did not start: latency mode not measured" >&2
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
if [ $have_daemon -eq 1 ] && wanted mix; then
  COEXEC_SCALE=$scale run "mix-seq-long" "$bench/original/coexec_bench" mix 12 seq "$reps"
  COEXEC_SCALE=$scale run "mix-streams-long" "$bench/original/coexec_bench" mix 12 streams "$reps"
  if start_daemon flexsched-mix --policy flexsched --param flexsched_period=$period; then
    COEXEC_SCALE=$scale run "mix-flexsched-long" "$bench/preempt/coexec_bench" mix 12 daemon "$reps"
    stop_daemon
  fi
fi
if wanted mix; then
  run "mix-seq" "$bench/original/coexec_bench" mix 12 seq "$reps"
  run "mix-streams" "$bench/original/coexec_bench" mix 12 streams "$reps"
fi
# The daemons' logs in one archive (the per-run files are many), their flexsched lines in one file.
(cd "$out" && grep -H "flexsched" ./*.log > flexsched-lines.txt 2>/dev/null; tar czf logs.tgz ./*.log ./*.err ./*-batch.json 2>/dev/null &&
  rm -f ./*.log ./*.err ./*-batch.json ./*.sock; rm -rf mps-pipe mps-log)
echo "coexec_check: $failures failed"
[ $failures -eq 0 ]
