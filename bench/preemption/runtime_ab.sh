#!/usr/bin/env bash
# runtime_ab.sh: a host-runtime change against its base, on the urgent path and the eviction latency (issue 42;
# FLEP §5's priority preemption, EffiSha §8's latency): preempt_bench and priority_probe linked with each runtime.
# Usage, here:  bash bench/preemption/runtime_ab.sh build BASE_RUNTIME_DIR   (a build folder's runtime-host of the base
#                 commit: builds build/bench/preempt_base/ with the same plugin, after bench/build_suite.sh)
#        there: bash bench/preemption/runtime_ab.sh run BENCH_DIR OUT_DIR [ROUNDS]   (the two builds alternating
#                 first, round by round, after the original build's preempt_bench; every converted process
#                 PREEMPT_EVICT_READY=1 PREEMPT_LONG_US=0 PREEMPT_TIME_EVICTIONS=1. OUT_DIR gets 3 files per program
#                 and round: archive it, a device call returns few files)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
case ${1:-} in
  build)
    base=${2:?usage: runtime_ab.sh build BASE_RUNTIME_DIR}
    [ -f "$base/libpreempt_runtime.a" ] || { echo "runtime_ab.sh: $base/libpreempt_runtime.a missing" >&2; exit 2; }
    out=$root/build/bench/preempt_base
    mkdir -p "$out"
    flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path=/usr/local/cuda -Wno-unknown-cuda-version -O2 -std=c++17
      -DPREEMPT_API -I"$root/runtime-host/include" -I"$root/bench/preemption" -fpass-plugin="$root/build/passes/libpreempt.so")
    for name in preempt_bench priority_probe; do
      clang++-22 "${flags[@]}" "$root/bench/preemption/$name.cu" -o "$out/$name" -L"$base" -lpreempt_runtime \
        -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread || exit 1
    done
    echo "runtime_ab.sh: built $out against $base" ;;
  run)
    bench=${2:?usage: runtime_ab.sh run BENCH_DIR OUT_DIR [ROUNDS]} out=${3:?OUT_DIR} rounds=${4:-3}
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
    for round in $(seq 1 "$rounds"); do
      order="preempt_base preempt"
      [ $((round % 2)) -eq 0 ] && order="preempt preempt_base"
      # The original build's preempt_bench too: CUDA's own stream priorities, row (b)'s baseline in the same call.
      timeout -s KILL 200 "$bench/original/preempt_bench" > "$out/preempt_bench.original.$round.json" \
        2> "$out/preempt_bench.original.$round.err" || echo "original preempt_bench $round: exit $?"
      for build in $order; do
        tag=$build.$round
        for name in priority_probe preempt_bench; do
          env PREEMPT_EVICT_READY=1 PREEMPT_LONG_US=0 PREEMPT_TIME_EVICTIONS=1 timeout -s KILL 200 \
            "$bench/$build/$name" > "$out/$name.$tag.json" 2> "$out/$name.$tag.err" || echo "$name $tag: exit $?"
        done
      done
    done
    echo "runtime_ab: done" ;;
  *) echo "usage: runtime_ab.sh build BASE_RUNTIME_DIR | run BENCH_DIR OUT_DIR [ROUNDS]" >&2; exit 2 ;;
esac
