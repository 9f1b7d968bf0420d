#!/usr/bin/env bash
# intask_check.sh OUT: in-task preemption (issue 8) measured on the GPU machine from build/bench (bench/build_suite.sh
# builds it; no compiler is needed here). Per kernel of bench/intask/intask_bench.cu: correctness under >= 50 random
# evictions against the original build's output, with PREEMPT_INTASK=on (the in-task shape the runtime chooses) and
# off, on in the build with points in every nested loop that allows one (nested, -preempt-intask-nested=all), and on
# with the variant in constant chunks (chunks, PREEMPT_INTASK_SHAPE=chunks); eviction latency with PREEMPT_INTASK=off (task boundaries), on and nested; time of the original build, the plugin build (in-task points, never
# evicted; in-task latency runs also on the GPU's clock, PREEMPT_TIME_EVICTIONS=1), the plugin build with -preempt-intask=0, and with -preempt-intask-strip-mine=0 (every point counts down). Then a short kernel's turnaround while a kernel with ~19 ms
# blocks runs: (a) time-slicing, (b) MPS with the short kernel on a high-priority stream, (c) MPS with preemptd's hpf
# policy and PREEMPT_INTASK=on (and off), (d) both in one process, the long launch evicted by the harness on arrival.
# One JSON line per run in OUT/intask.jsonl, the runs' stderr and the daemon's logs in OUT/intask-logs.tgz.
# Last line: "intask: N passed, N failed" (passed: correctness runs with 0 mismatches and enough evictions; failed:
# the other correctness runs and every run that failed to produce its JSON).
# Environment: INTASK_CHECK_ONLY=stencil,gemm,... (kernels; all by default, and the retile kernels, checked only:
# rounds.sh's check_only_kernels), INTASK_PARTS=check,latency,time,turnaround
# (all by default), INTASK_EVICTIONS (50), INTASK_LATENCY_M (30), INTASK_TRIALS (20 arrivals per turnaround run),
# INTASK_LOOP_EXTRA (27: iterations the correctness runs add to the loops, intask_bench.cu says which).
set -uo pipefail
out=${1:?usage: intask_check.sh OUT}
source "$(dirname "$0")/rounds.sh" # root, bench, kernel_list (INTASK_CHECK_ONLY or every kernel)
parts=",${INTASK_PARTS:-check,latency,time,turnaround},"
evictions=${INTASK_EVICTIONS:-50}
latency_m=${INTASK_LATENCY_M:-30}
trials=${INTASK_TRIALS:-20}
loop_extra=${INTASK_LOOP_EXTRA:-27}
budget=${INTASK_BUDGET_S:-225}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/intask.jsonl
: > "$log"
work=$(mktemp -d)
mkdir -p "$work/logs"
passed=0 failed=0
daemon_pid="" mps_dir=""
stop_daemon() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}
cleanup() {
  stop_daemon
  [ -n "$mps_dir" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe timeout 20 nvidia-cuda-mps-control >/dev/null 2>&1
  mps_dir=""
  rm -rf "$work"
}
trap cleanup EXIT
wanted() { [[ $parts == *",$1,"* ]]; }
# The plugin builds' runs: the persistent form (in-task points live there), one-wave launches kept persistent and
# evictable (the persistent kernel's grid is one wave), no daemon unless a run starts one.
plugin_env=(PREEMPT_FORM=persistent PREEMPT_ONE_WAVE=persistent PREEMPT_DAEMON=off PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1)
seq_no=0
# run LABEL TIMEOUT_S ENV... -- COMMAND...: appends {"label", "result"} to the log; counts a missing JSON as failed.
# Sets $line to the program's JSON (or {}), $status to its exit status.
run() {
  local label=$1 limit=$2 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  seq_no=$((seq_no + 1))
  # The whole script must end within INTASK_BUDGET_S (default 225 s): a run that would start past it is skipped.
  local left=$((budget - SECONDS))
  if [ "$left" -lt 5 ]; then
    echo "SKIP $label: out of time" >&2
    echo "{\"label\": \"$label\", \"result\": {\"skipped\": \"out of time\"}}" >> "$log"
    line='{"skipped": "out of time"}' status=124
    return
  fi
  [ "$limit" -le "$left" ] || limit=$left
  local err
  err=$work/logs/$(printf '%03d' $seq_no)-$label.err
  (cd "$work" && env ${envs[@]+"${envs[@]}"} timeout -s KILL "$limit" "$@" > "$work/last.out" 2> "$err")
  status=$?
  line=$(tail -1 "$work/last.out")
  if [ -z "$line" ] || [ "${line:0:1}" != "{" ]; then
    echo "FAIL $label: no JSON (status $status): $(tail -2 "$err" | tr '\n' ' ')" >&2
    failed=$((failed + 1))
    line="{\"failed\": \"status $status\"}"
  fi
  echo "{\"label\": \"$label\", \"env\": \"${envs[*]}\", \"status\": $status, \"result\": $line}" >> "$log"
}
# mode_build MODE: sets $binary, $intask (PREEMPT_INTASK) and $shape (PREEMPT_INTASK_SHAPE) for on (the shape
# the runtime chooses), off, nested (the build with points in every nested loop that allows one,
# -preempt-intask-nested=all, in-task checks on) or chunks (the default build's variant in constant chunks, checks
# on); 1 when that build is missing (said).
mode_build() {
  binary=$bench/preempt/intask_bench intask=$1 shape=auto
  [ "$1" = nested ] && binary=$bench/preempt_nested/intask_bench intask=on
  [ "$1" = chunks ] && intask=on shape=chunks
  [ -x "$binary" ] && return 0
  echo "intask_check.sh: $binary missing (bench/build_suite.sh builds it): no $1 runs" >&2
  return 1
}
# The variants' warpUniform takes redux.sync over the whole warp, partial warps included: checked once.
if wanted check && [ -x "$bench/original/partial_warp" ]; then
  run "partial-warp" 30 -- "$bench/original/partial_warp"
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
  elif [[ $line != '{"failed"'* ]]; then # (a missing JSON is counted by run)
    echo "FAIL partial-warp: $(echo "$line" | cut -c1-300)" >&2
    failed=$((failed + 1))
  fi
fi
checked_kernels=("${kernel_list[@]}")
[ -z "${INTASK_CHECK_ONLY:-}" ] && checked_kernels+=("${check_only_kernels[@]}")
for kernel in "${checked_kernels[@]}"; do
  timed_kernel=1
  [[ " ${check_only_kernels[*]} " == *" $kernel "* ]] && timed_kernel=0
  if wanted check; then
    # Loop counts that are not a multiple of a constant chunk (up to 8 iterations, the persistent kernel's after
    # LLVM unrolled its hash loop by 8): the loops' tail copies run too (docs/intask.md, "Constant chunks").
    run "reference-$kernel" 60 INTASK_LOOP_EXTRA=$loop_extra -- "$bench/original/intask_bench" check "$kernel" 0 \
      "$work/$kernel.ref"
    for mode in on off nested chunks; do
      mode_build "$mode" || continue
      run "check-$kernel-$mode" 100 "${plugin_env[@]}" PREEMPT_INTASK=$intask PREEMPT_INTASK_SHAPE=$shape \
        INTASK_LOOP_EXTRA=$loop_extra -- \
        "$binary" check "$kernel" "$evictions" "$work/$kernel.ref"
      # 0: 0 mismatches and enough evictions; 1: not, or not run (out of time: nothing was checked); 2: no JSON
      # (run counted it already).
      python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(2 if "failed" in r else 1 if "skipped" in r else 0 if r.get("mismatches") == 0 and r.get("evictions", 0) >= int(sys.argv[2]) else 1)' "$line" "$evictions"
      case $? in
      0) passed=$((passed + 1)) ;;
      1) echo "FAIL check-$kernel-$mode: $(echo "$line" | cut -c1-400)" >&2; failed=$((failed + 1)) ;;
      esac
    done
  fi
  if wanted latency && [ "$timed_kernel" = 1 ]; then
    for mode in off on nested; do
      mode_build "$mode" || continue
      # In-task runs also time each eviction on the GPU's clock (gpu_latency; the host's view is unchanged by it,
      # bench/results/2026-11-24-gpu-latency-h100.md).
      timed=1
      [ "$mode" = off ] && timed=0
      run "latency-$kernel-$mode" 100 "${plugin_env[@]}" PREEMPT_INTASK=$intask PREEMPT_TIME_EVICTIONS=$timed -- \
        "$binary" latency "$kernel" "$latency_m"
    done
  fi
  if wanted time && [ "$timed_kernel" = 1 ]; then
    run "time-$kernel-original" 60 -- "$bench/original/intask_bench" time "$kernel"
    run "time-$kernel-preempt" 60 "${plugin_env[@]}" PREEMPT_INTASK=on -- "$bench/preempt/intask_bench" time "$kernel"
    run "time-$kernel-nointask" 60 "${plugin_env[@]}" PREEMPT_INTASK=on -- \
      "$bench/preempt_nointask/intask_bench" time "$kernel"
    [ -x "$bench/preempt_nested/intask_bench" ] &&
      run "time-$kernel-nested" 60 "${plugin_env[@]}" PREEMPT_INTASK=on -- "$bench/preempt_nested/intask_bench" time "$kernel"
    [ -x "$bench/preempt_countdown/intask_bench" ] &&
      run "time-$kernel-countdown" 60 "${plugin_env[@]}" PREEMPT_INTASK=on -- \
        "$bench/preempt_countdown/intask_bench" time "$kernel"
  fi
done

# pair NAME BUILD [ENV...]: the long process (persistent kernel, ~19 ms blocks, back to back) and the short one
# (TRIALS arrivals on a high-priority stream); one log line with both sides' JSON.
pair() {
  local name=$1 build=$2
  shift 2
  local ready=$work/$name.ready stop=$work/$name.stop long_json short_json
  if [ $((budget - SECONDS)) -lt 20 ]; then
    echo "SKIP turnaround-$name: out of time" >&2
    echo "{\"label\": \"turnaround-$name\", \"result\": {\"skipped\": \"out of time\"}}" >> "$log"
    return
  fi
  env "$@" PREEMPT_PRIORITY=-10 timeout -s KILL 90 "$bench/$build/intask_bench" long 60 "$ready" "$stop" \
    > "$work/$name.long" 2> "$work/logs/$name.long.err" &
  local long_pid=$!
  short_json=$(env "$@" PREEMPT_PRIORITY=10 timeout -s KILL 60 "$bench/$build/intask_bench" short "$trials" "$ready" \
    2> "$work/logs/$name.short.err" | tail -1)
  touch "$stop"
  wait "$long_pid"
  long_json=$(tail -1 "$work/$name.long")
  [ "${short_json:0:1}" = "{" ] || { echo "FAIL $name short side: $(tail -2 "$work/logs/$name.short.err" | tr '\n' ' ')" >&2; failed=$((failed + 1)); short_json=null; }
  [ "${long_json:0:1}" = "{" ] || { echo "FAIL $name long side: $(tail -2 "$work/logs/$name.long.err" | tr '\n' ' ')" >&2; failed=$((failed + 1)); long_json=null; }
  echo "{\"label\": \"turnaround-$name\", \"env\": \"$*\", \"result\": $short_json, \"long\": $long_json}" >> "$log"
}
start_daemon() { # NAME ARGS...: preemptd on its own socket (exported), its decision log kept
  local name=$1
  shift
  stop_daemon
  export PREEMPT_DAEMON_SOCKET=$work/$name.sock
  "$bench/preemptd" --foreground --socket "$PREEMPT_DAEMON_SOCKET" --log "$work/logs/$name.daemon.log" "$@" \
    2> "$work/logs/$name.daemon.err" &
  daemon_pid=$!
  for _ in $(seq 100); do [ -S "$PREEMPT_DAEMON_SOCKET" ] && return 0; sleep 0.05; done
  echo "FAIL preemptd did not start: $(tail -2 "$work/logs/$name.daemon.err")" >&2
  failed=$((failed + 1))
  return 1
}
if wanted turnaround; then
  # (d) in one process: stream priorities alone (original build), then eviction on arrival (plugin build).
  run "inproc-original" 60 -- "$bench/original/intask_bench" inproc "$trials"
  for mode in off on; do
    run "inproc-preempt-$mode" 60 "${plugin_env[@]}" PREEMPT_INTASK=$mode -- "$bench/preempt/intask_bench" inproc "$trials"
  done
  # (a) two processes, time-slicing.
  pair timeslice original
  # (b), (c) under MPS.
  if command -v nvidia-cuda-mps-control >/dev/null; then
    mps_dir=$work/mps
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    if timeout -s KILL 30 nvidia-cuda-mps-control -d; then
      pair mps original
      if [ -x "$bench/preemptd" ]; then
        for mode in on off; do
          if start_daemon "hpf-$mode" --policy hpf; then
            pair "mps-hpf-intask-$mode" preempt PREEMPT_FORM=persistent PREEMPT_INTASK=$mode
            stop_daemon
            unset PREEMPT_DAEMON_SOCKET
          fi
        done
      else
        echo "intask_check: no $bench/preemptd: (c) not measured" >&2
      fi
      echo quit | timeout 20 nvidia-cuda-mps-control >/dev/null 2>&1
      cp -r "$mps_dir/log" "$work/logs/mps-log" 2>/dev/null
    else
      echo "{\"label\": \"turnaround-mps\", \"result\": {\"failed\": \"nvidia-cuda-mps-control -d failed\"}}" >> "$log"
      failed=$((failed + 1))
    fi
    mps_dir=""
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  else
    echo "{\"label\": \"turnaround-mps\", \"result\": {\"failed\": \"nvidia-cuda-mps-control not found\"}}" >> "$log"
  fi
fi
(cd "$work" && tar czf "$out/intask-logs.tgz" logs)
echo "intask: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
