#!/usr/bin/env bash
# keeper_probe.sh: runs keeper_probe's modes (an evicted grid held open by one working CTA instead of a cross-stream
# wait; issue 40 "no held streams") with CUDA's default queues and with one queue, and under lazy module loading.
# Usage: keeper_probe.sh BIN (the probe, built by bench/build_suite.sh) > OUT.jsonl; a mode cut off by its time limit
# prints {"mode": ..., "exit": 137}.
set -uo pipefail
probe=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/# /'
run() { # LIMIT_S MODE [ENV...]
  local limit=$1 mode=$2
  shift 2
  env "$@" timeout -s KILL "$limit" "$probe" "$mode" || echo "{\"mode\": \"$mode\", \"env\": \"$*\", \"exit\": $?}"
}
run 60 cost
run 40 synced
run 40 chain
run 40 synced CUDA_DEVICE_MAX_CONNECTIONS=1
run 40 chain CUDA_DEVICE_MAX_CONNECTIONS=1
run 30 lazy CUDA_MODULE_LOADING=LAZY
run 30 lazy CUDA_MODULE_LOADING=LAZY CUDA_DEVICE_MAX_CONNECTIONS=1
