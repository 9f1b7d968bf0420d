#!/usr/bin/env bash
# pairs.sh: on the GPU machine, FLEP §6.3.1's pairs across two processes: a low-priority process runs long kernels,
# a high-priority one times short kernels arriving at random moments; without and with preemptd (HPF), and under MPS.
# Usage: bench/daemon/pairs.sh BIN_DIR OUT_JSON [TRIALS [LOG_DIR]]   (BIN_DIR = build/bench from bench/build_suite.sh;
#        LOG_DIR keeps preemptd's decision logs; PAIRS_ONLY=REGEX runs only the modes it matches; PAIRS_LONG_GPU and
#        PAIRS_SHORT_GPU set each side's CUDA_VISIBLE_DEVICES in pairs, e.g. 0 and 1 on a two-GPU machine)
set -uo pipefail
# Every launch converted (docs/preemption.md, "Launches as written"); what eviction needs is asked of CUDA as a user's
# process would: eager loading under preemptd, nothing without it (PREEMPT_EVICT_READY=auto, whatever the caller
# set: 1 asked for 32 hardware queues, and under MPS only 3 processes could start; "What a process asks of CUDA").
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=auto
bin=$1 out=$2 trials=${3:-40} logs=${4:-}
work=$(mktemp -d)
daemon_pid=""
mps_dir=""
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  [ -n "$mps_dir" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe nvidia-cuda-mps-control >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
export PREEMPT_DAEMON_SOCKET=$work/preemptd.sock

# start_daemon POLICY NAME [ARGS...]: the decision log only when LOG_DIR asks for it (each line costs a write).
start_daemon() {
  local policy=$1 name=$2
  shift 2
  local log=()
  [ -n "$logs" ] && log=(--log "$work/daemon_$name.log")
  "$bin/preemptd" --foreground --socket "$PREEMPT_DAEMON_SOCKET" --policy "$policy" "${log[@]}" "$@" \
    2> "$work/daemon_$name.err" &
  daemon_pid=$!
  for _ in $(seq 1 100); do [ -S "$PREEMPT_DAEMON_SOCKET" ] && return 0; sleep 0.02; done
  echo "pairs.sh: preemptd did not start:" >&2; cat "$work/daemon_$name.err" >&2; return 1
}
stop_daemon() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}

# measure NAME BUILD DAEMON(none|hpf|hpf-temporal) PAIR(0|1): one JSON line {"mode": ..., "short": {...}, "long": {...}}
measure() {
  local name=$1 build=$2 daemon=$3 pair=$4 long_json='null' short_json
  local ready=$work/$name.ready stop=$work/$name.stop
  [[ "$name" =~ ${PAIRS_ONLY:-.} ]] || return 0
  case $daemon in
  none) ;;
  hpf-temporal) start_daemon hpf "$name" --param hpf_spatial=0 || { echo "{\"mode\": \"$name\", \"failed\": \"daemon\"}"; return; } ;;
  hpf-noleases) start_daemon hpf "$name" --no-leases || { echo "{\"mode\": \"$name\", \"failed\": \"daemon\"}"; return; } ;;
  *) start_daemon "$daemon" "$name" || { echo "{\"mode\": \"$name\", \"failed\": \"daemon\"}"; return; } ;;
  esac
  if [ "$pair" = 1 ]; then
    PREEMPT_PRIORITY=-10 env ${PAIRS_LONG_GPU:+CUDA_VISIBLE_DEVICES=$PAIRS_LONG_GPU} timeout -s KILL 120 \
      "$bin/$build/pair_bench" long 60 "$ready" "$stop" \
      > "$work/$name.long" 2> "$work/$name.long.err" &
    local long_pid=$!
    short_json=$(PREEMPT_PRIORITY=10 env ${PAIRS_SHORT_GPU:+CUDA_VISIBLE_DEVICES=$PAIRS_SHORT_GPU} timeout -s KILL 90 \
      "$bin/$build/pair_bench" short "$trials" "$ready" 2> "$work/$name.short.err")
    touch "$stop"
    # The long side ends its current launch (at most ~40 ms) and exits: one still running 15 s later is hung, a
    # failure the report counts, with the daemon's view of its clients taken before the kill.
    local waited=0 hung=""
    while kill -0 "$long_pid" 2>/dev/null && [ "$waited" -lt 150 ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$long_pid" 2>/dev/null; then
      hung="the long side did not exit 15 s after the stop file (killed)"
      # Its JSON (flushed after its loop) says whether it hung in its loop or on its way out.
      [ -s "$work/$name.long" ] && hung="$hung, after its last launch and its check"
      { echo "pairs.sh: $name: the long side had not exited 15 s after the stop file"
        for task in /proc/$(pgrep -P "$long_pid" | head -1)/task/*; do
          echo "thread ${task##*/}: $(cat "$task/wchan" 2>/dev/null) $(head -c 200 "$task/stack" 2>/dev/null | tr '\n' ' ')"
        done
        [ "$daemon" != none ] && "$bin/preemptctl" --socket "$PREEMPT_DAEMON_SOCKET" list 2>&1
        [ -n "$mps_dir" ] && echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe nvidia-cuda-mps-control 2>&1
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1; } >> "$work/$name.long.err"
      pkill -KILL -P "$long_pid" 2>/dev/null; kill -KILL "$long_pid" 2>/dev/null
    fi
    wait "$long_pid" 2>/dev/null
    if [ -n "$hung" ]; then long_json="{\"failed\": \"$hung\"}"
    elif [ -s "$work/$name.long" ]; then long_json=$(cat "$work/$name.long")
    else long_json='{"failed": "the long side exited without its line"}'; fi
  else
    short_json=$(PREEMPT_PRIORITY=10 timeout -s KILL 90 "$bin/$build/pair_bench" short "$trials" 2> "$work/$name.short.err")
  fi
  stop_daemon
  [ -n "$logs" ] && [ "$daemon" != none ] && cp "$work/daemon_$name.log" "$logs/"
  for side in short long; do
    [ -s "$work/$name.$side.err" ] && { echo "pairs.sh: $name, $side side said:" >&2; head -40 "$work/$name.$side.err" >&2; }
  done
  echo "{\"mode\": \"$name\", \"short\": ${short_json:-null}, \"long\": ${long_json:-null}}"
}

json_or_null() { if [ -s "$1" ]; then cat "$1"; else echo null; fi; }

# shares NAME BUILD DAEMON(none|ffs): two long-kernel processes for SHARE_SECONDS, weights 2 and 1 under the
# daemon (FLEP §6.3.3): one JSON line {"mode": ..., "heavy": {...}, "light": {...}}; launches count the work each did.
shares() {
  local name=$1 build=$2 daemon=$3 seconds=${SHARE_SECONDS:-4}
  [[ "$name" =~ ${PAIRS_ONLY:-.} ]] || return 0
  if [ "$daemon" != none ]; then start_daemon "$daemon" "$name" || { echo "{\"mode\": \"$name\", \"failed\": \"daemon\"}"; return; }; fi
  PREEMPT_WEIGHT=2 timeout -s KILL 120 "$bin/$build/pair_bench" long 60 "$work/$name.ready_heavy" "$work/$name.stop" \
    > "$work/$name.heavy" 2> "$work/$name.heavy.err" &
  local heavy=$!
  PREEMPT_WEIGHT=1 timeout -s KILL 120 "$bin/$build/pair_bench" long 60 "$work/$name.ready_light" "$work/$name.stop" \
    > "$work/$name.light" 2> "$work/$name.light.err" &
  local light=$!
  for _ in $(seq 1 3000); do [ -e "$work/$name.ready_heavy" ] && [ -e "$work/$name.ready_light" ] && break; sleep 0.01; done
  sleep "$seconds"
  touch "$work/$name.stop"
  wait "$heavy" "$light"
  stop_daemon
  [ -n "$logs" ] && [ "$daemon" != none ] && cp "$work/daemon_$name.log" "$logs/"
  for side in heavy light; do
    [ -s "$work/$name.$side.err" ] && { echo "pairs.sh: $name, $side side said:" >&2; head -40 "$work/$name.$side.err" >&2; }
  done
  echo "{\"mode\": \"$name\", \"seconds\": $seconds, \"heavy\": $(json_or_null "$work/$name.heavy"), \"light\": $(json_or_null "$work/$name.light")}"
}

{
  measure alone_original original none 0
  measure alone_preempt preempt none 0
  measure alone_preempt_daemon preempt hpf 0
  measure alone_preempt_daemon_noleases preempt hpf-noleases 0
  measure pair_original original none 1
  measure pair_preempt preempt none 1
  measure pair_preempt_daemon preempt hpf 1
  measure pair_preempt_daemon_temporal preempt hpf-temporal 1
  measure pair_preempt_daemon_noleases preempt hpf-noleases 1
  if command -v nvidia-cuda-mps-control >/dev/null; then
    mps_dir=$work/mps
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    if nvidia-cuda-mps-control -d; then
      measure mps_alone_original original none 0
      measure mps_pair_original original none 1
      measure mps_alone_preempt_daemon preempt hpf 0
      measure mps_pair_preempt_daemon preempt hpf 1
      shares mps_shares_original original none
      shares mps_shares_ffs preempt ffs
    else
      echo '{"mode": "mps", "failed": "nvidia-cuda-mps-control -d failed"}'
    fi
  else
    echo '{"mode": "mps", "failed": "nvidia-cuda-mps-control not found"}'
  fi
} > "$out"
cat "$out"
