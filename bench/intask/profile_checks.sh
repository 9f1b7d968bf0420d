#!/usr/bin/env bash
# profile_checks.sh OUT [KERNELS]: Nsight Compute's counters for the in-task variants (issue 8's overhead) against the
# -preempt-intask=0 build's persistent form, one launch each (the fourth of `intask_bench time`), never evicted:
# warp stall reasons, instructions, scheduler, occupancy and speed-of-light (the kernel's duration) sections, as CSV
# in OUT/ncu-KERNEL-BUILD.csv. Run on the GPU machine (ncu is there) from build/bench (bench/build_suite.sh); KERNELS
# default stencil,solver,gemm; builds PROFILE_BUILDS (comma-separated names of build/bench/<name>/intask_bench;
# default preempt,preempt_nointask).
set -uo pipefail
# These programs evict (API, preemptd, stress): every launch converted, and what eviction needs asked of CUDA at
# start (docs/preemption.md, "Launches as written" and "What a process asks of CUDA").
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1
out=${1:?usage: profile_checks.sh OUT [KERNELS]}
source "$(dirname "$0")/rounds.sh"
mkdir -p "$out"
export "${intask_env[@]}"
IFS=, read -r -a kernels <<< "${2:-stencil,solver,gemm}"
IFS=, read -r -a builds <<< "${PROFILE_BUILDS:-preempt,preempt_nointask}"
for kernel in "${kernels[@]}"; do
  for build in "${builds[@]}"; do
    timeout -s KILL 150 ncu --section WarpStateStats --section InstructionStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --section SpeedOfLight -k "regex:intask_$kernel" --launch-skip 3 \
      --launch-count 1 --csv --page details "$bench/$build/intask_bench" time "$kernel" > "$out/ncu-$kernel-$build.csv" 2> "$out/ncu-$kernel-$build.err"
    echo "profile_checks.sh: $kernel $build: status $?, $(wc -l < "$out/ncu-$kernel-$build.csv") lines"
  done
done
