#!/usr/bin/env bash
# prompt_ab.sh: prompt yield checks (PREEMPT_PROMPT, control_block.h's PREEMPT_LAUNCH_PROMPT) against reading one
# task ahead, in one call on the GPU machine, the two orders alternating round by round (issue 42: eviction latency
# with 54 us tasks, the urgent launch against stream priorities; and what a never-evicted long-task launch pays).
# Usage: bash bench/preemption/prompt_ab.sh BENCH_DIR OUT_DIR [ROUNDS]   (BENCH_DIR: build/bench from build_suite.sh)
# PROMPT_AB_PARTS=bench,suite (default bench): "suite" times suite programs never evicted, persistent, in a process
# that expects evictions, prompt checks forced on and off: what they cost short tasks, which auto does not give them.
set -uo pipefail
bench=$1 out=$2 rounds=${3:-3}
parts=",${PROMPT_AB_PARTS:-bench},"
# The suite programs' outputs (up to hundreds of MB) stay out of OUT, which comes back from the GPU machine.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
evicting=(PREEMPT_EVICT_READY=1 PREEMPT_LONG_US=0 PREEMPT_TIME_EVICTIONS=1)
for round in $(seq 1 "$rounds"); do
  order="off auto"
  [ $((round % 2)) -eq 0 ] && order="auto off"
  for mode in $order; do
    tag=$mode.$round
    if [[ $parts == *,suite,* ]]; then
      forced=$mode
      [ "$mode" = auto ] && forced=on
      for name in vector_add stencil2d reduction transpose matmul_tiled spmv_csr histogram prefix_scan grid3d; do
        env PREEMPT_EVICT_READY=1 PREEMPT_LONG_US=0 PREEMPT_FORM=persistent PREEMPT_PROMPT=$forced timeout -s KILL 120 \
          "$bench/preempt/$name" "$scratch/$name.out" > "$out/suite.$name.$forced.$round.txt" 2>&1 ||
          echo "$name $forced $round: exit $?"
      done
    fi
    [[ $parts == *,bench,* ]] || continue
    env "${evicting[@]}" PREEMPT_PROMPT=$mode timeout -s KILL 200 "$bench/preempt/preempt_bench" \
      > "$out/bench.$tag.json" 2> "$out/bench.$tag.err" || echo "preempt_bench $tag: exit $?"
    env "${evicting[@]}" PREEMPT_PROMPT=$mode timeout -s KILL 120 "$bench/preempt/priority_probe" \
      > "$out/probe.$tag.json" 2> "$out/probe.$tag.err" || echo "priority_probe $tag: exit $?"
    # Long blocks at the task boundary (no in-task points): eviction latency, and the time of launches never
    # evicted in a process that expects evictions (auto takes prompt checks there).
    for kernel in gemm stencil solver; do
      env "${evicting[@]}" PREEMPT_INTASK=off PREEMPT_PROMPT=$mode timeout -s KILL 120 \
        "$bench/preempt/intask_bench" latency "$kernel" 30 > "$out/latency.$kernel.$tag.json" 2> "$out/latency.$kernel.$tag.err" ||
        echo "intask_bench latency $kernel $tag: exit $?"
      env PREEMPT_EVICT_READY=1 PREEMPT_INTASK=off PREEMPT_PROMPT=$mode timeout -s KILL 120 \
        "$bench/preempt/intask_bench" time "$kernel" > "$out/time.$kernel.$tag.json" 2> "$out/time.$kernel.$tag.err" ||
        echo "intask_bench time $kernel $tag: exit $?"
    done
  done
done
echo "prompt_ab: done"
