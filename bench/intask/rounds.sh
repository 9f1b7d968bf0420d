# rounds.sh: sourced by time_rounds.sh and latency_rounds.sh (issue 8's in-task benchmarks): the builds, kernels and
# rounds they interleave, one process per round, kernel and build; profile_checks.sh takes its paths and environment,
# intask_check.sh its paths and kernel list (the one place that names every kernel of intask_bench.cu).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=${PREEMPT_BUILD_DIR:-$root/build}/bench
IFS=, read -r -a kernel_list <<< "${INTASK_CHECK_ONLY:-stencil,gemm,persistent,solver,atomics}"
# Kernels only checked for correctness (intask_check.sh adds them when INTASK_CHECK_ONLY is unset; not timed): the
# shared-memory liveness at the launch bounds' block size and at another.
check_only_kernels=(retile retile128)
# How every in-task benchmark runs a kernel: its variant (or persistent form) in one process, no daemon.
intask_base_env=(PREEMPT_FORM=persistent PREEMPT_ONE_WAVE=persistent PREEMPT_DAEMON=off PREEMPT_INTASK=on PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1)
intask_env=("${intask_base_env[@]}")

# rounds_builds EXTRA BUILD...: sets `builds` to the BUILDs, then those named in EXTRA (comma-separated names of
# $bench/<name>/intask_bench).
rounds_builds() {
  local extra_list=()
  IFS=, read -r -a extra_list <<< "$1"
  shift
  builds=("$@" ${extra_list[@]+"${extra_list[@]}"})
}

# each_run ROUNDS COMMAND...: runs COMMAND... ROUND KERNEL BUILD BINARY for each round, kernel and build, in that
# nesting; a missing binary is said and skipped. A build named NAME@SHAPE is build NAME run with
# PREEMPT_INTASK_SHAPE=SHAPE (runtime or chunks: one of the two in-task variants, docs/intask.md "Two shapes"),
# which intask_env then holds; NAME alone leaves the shape to the runtime's choice.
each_run() {
  local rounds=$1 round kernel build binary
  shift
  for round in $(seq "$rounds"); do
    for kernel in "${kernel_list[@]}"; do
      for build in "${builds[@]}"; do
        binary=$bench/${build%@*}/intask_bench
        intask_env=("${intask_base_env[@]}")
        [[ $build == *@* ]] && intask_env+=(PREEMPT_INTASK_SHAPE=${build#*@})
        [ -x "$binary" ] || { echo "$(basename "$0"): $binary missing" >&2; continue; }
        "$@" "$round" "$kernel" "$build" "$binary"
      done
    done
  done
}
