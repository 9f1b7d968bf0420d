#!/usr/bin/env bash
# build_suite.sh: builds every bench/suite program twice, with and without libpreempt.so, on this machine.
# The GPU machine has no compiler: bench/gpu_check.sh only runs what this leaves in build/bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PREEMPT_BUILD_DIR:-$root/build}
out=$build/bench
cuda=${PREEMPT_CUDA_PATH:-/usr/local/cuda}
plugin=$build/passes/libpreempt.so
runtime=$build/runtime-host
[ -f "$plugin" ] || { echo "build_suite.sh: $plugin missing: build the project first (cmake --build build)" >&2; exit 1; }
mkdir -p "$out/original" "$out/preempt" "$out/remarks"
flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path="$cuda" -Wno-unknown-cuda-version -O2 -std=c++17)
libs=(-L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread)
build_one() {
  local source=$1 name
  name=$(basename "$source" .cu)
  clang++-22 "${flags[@]}" "$source" -o "$out/original/$name" "${libs[@]}"
  # The remarks say which kernels were converted or refused, and why.
  clang++-22 "${flags[@]}" -fpass-plugin="$plugin" -Rpass=preempt -Rpass-missed=preempt "$source" \
    -o "$out/preempt/$name" -L"$runtime" -lpreempt_runtime "${libs[@]}" 2> "$out/remarks/$name.txt"
}
jobs=()
for source in "$root"/bench/suite/*.cu "$root"/bench/demo/sample.cu; do
  build_one "$source" &
  jobs+=($!)
  if [ ${#jobs[@]} -ge "$(nproc)" ]; then wait "${jobs[0]}"; jobs=("${jobs[@]:1}"); fi
done
status=0
for job in "${jobs[@]}"; do wait "$job" || status=1; done
[ $status -eq 0 ] || { echo "build_suite.sh: a program failed to build" >&2; exit 1; }
# The preemption benchmark: baselines without the plugin, evictions with it.
clang++-22 "${flags[@]}" "$root/bench/preemption/preempt_bench.cu" -o "$out/original/preempt_bench" "${libs[@]}"
clang++-22 "${flags[@]}" -DPREEMPT_API -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/preempt_bench.cu" -o "$out/preempt/preempt_bench" -L"$runtime" -lpreempt_runtime "${libs[@]}"
clang++-22 "${flags[@]}" "$root/bench/preemption/launch_costs.cu" -o "$out/original/launch_costs" "${libs[@]}"
# Where a short kernel's turnaround goes on a high-priority stream: the runtime's launch path or CUDA's own.
clang++-22 "${flags[@]}" -DPREEMPT_API -I"$root/runtime-host/include" -I"$root/bench/preemption" \
  -fpass-plugin="$plugin" "$root/bench/preemption/priority_probe.cu" -o "$out/preempt/priority_probe" \
  -L"$runtime" -lpreempt_runtime "${libs[@]}"
# A one-wave launch with 64 KiB of dynamic shared memory: runs the kernel's copy (issue 3).
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/one_wave_big_shared.cu" -o "$out/preempt/one_wave_big_shared" -L"$runtime" \
  -lpreempt_runtime "${libs[@]}"
# A launch of exactly 48 KiB of dynamic shared memory beside the persistent form's own (issue 39, HeCBench bincount).
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/exact_48k_shared.cu" -o "$out/preempt/exact_48k_shared" -L"$runtime" \
  -lpreempt_runtime "${libs[@]}"
# Converted launches under evictions, cudaDeviceReset, and the same again (issue 39: programs that reset between phases).
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/device_reset.cu" -o "$out/preempt/device_reset" -L"$runtime" \
  -lpreempt_runtime "${libs[@]}"
# A full-mask shuffle in half of a warp (issue 39, HeCBench jacobi): left as written by the pass.
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/half_warp_shuffle.cu" -o "$out/preempt/half_warp_shuffle" -L"$runtime" \
  -lpreempt_runtime "${libs[@]}"
# What the runtime adds to a launch it runs as written, in one process (issue 39, launch_storm's pattern).
clang++-22 "${flags[@]}" -DSTORM_ENTRY=storm_original -c "$root/bench/preemption/as_written_storm.cu" \
  -o "$out/remarks/as_written_storm_original.o"
clang++-22 "${flags[@]}" -DSTORM_ENTRY=storm_routed -fpass-plugin="$plugin" -c "$root/bench/preemption/as_written_storm.cu" \
  -o "$out/remarks/as_written_storm_routed.o"
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" "$root/bench/preemption/as_written_cost.cu" -x none \
  "$out/remarks/as_written_storm_original.o" "$out/remarks/as_written_storm_routed.o" -o "$out/preempt/as_written_cost" \
  -Wl,--wrap=preempt_launch_kernel -L"$runtime" -lpreempt_runtime "${libs[@]}"
# Overhead pieces (issue 3): the same kernels built both ways, launched piece by piece (overhead_parts.cu).
clang++-22 "${flags[@]}" -c "$root/bench/preemption/overhead_kernels.cu" -o "$out/remarks/overhead_original.o"
clang++-22 "${flags[@]}" -DPARTS_CONVERTED -fpass-plugin="$plugin" -c "$root/bench/preemption/overhead_kernels.cu" \
  -o "$out/remarks/overhead_converted.o"
clang++-22 "${flags[@]}" -I"$root/lib/include" "$root/bench/preemption/overhead_parts.cu" \
  -x none "$out/remarks/overhead_original.o" "$out/remarks/overhead_converted.o" -o "$out/preempt/overhead_parts" \
  -L"$runtime" -lpreempt_runtime "${libs[@]}"
clang++-22 "${flags[@]}" "$root/bench/preemption/persistent_shapes.cu" -o "$out/original/persistent_shapes" "${libs[@]}"
clang++-22 "${flags[@]}" "$root/bench/preemption/latency_floor.cu" -o "$out/original/latency_floor" "${libs[@]}"
clang++-22 "${flags[@]}" "$root/bench/preemption/evict_call_probe.cu" -o "$out/original/evict_call_probe" "${libs[@]}"
clang++-22 "${flags[@]}" "$root/bench/preemption/sync_copy_lock_probe.cu" -o "$out/original/sync_copy_lock_probe" \
  "${libs[@]}"
# Issue 40's held-open grid, by hand (bench/preemption/keeper_probe.sh runs it).
clang++-22 "${flags[@]}" "$root/bench/preemption/keeper_probe.cu" -o "$out/original/keeper_probe" "${libs[@]}"
# Drain-form probe (bench/preemption/drain_probe.md): standalone, plain nvcc, no plugin or runtime.
"$cuda/bin/nvcc" -O3 -arch=sm_90 -std=c++17 "$root/bench/preemption/drain_probe.cu" -o "$out/original/drain_probe"
# vector_add at 2^23 and 2^27 elements: the conversion's cost per launch against its cost per task.
for log2 in 23 27; do
  clang++-22 "${flags[@]}" -DVECTOR_ADD_LOG2_N=$log2 "$root/bench/suite/vector_add.cu" \
    -o "$out/original/vector_add_2e$log2" "${libs[@]}"
  clang++-22 "${flags[@]}" -DVECTOR_ADD_LOG2_N=$log2 -fpass-plugin="$plugin" "$root/bench/suite/vector_add.cu" \
    -o "$out/preempt/vector_add_2e$log2" -L"$runtime" -lpreempt_runtime "${libs[@]}"
done
# Co-execution (issue 7): kernels as written, and converted with the quota API (bench/coexec/coexec_check.sh).
clang++-22 "${flags[@]}" -I"$root/lib/include" "$root/bench/coexec/coexec_bench.cu" -o "$out/original/coexec_bench" "${libs[@]}"
clang++-22 "${flags[@]}" -DPREEMPT_API -I"$root/runtime-host/include" -I"$root/lib/include" -fpass-plugin="$plugin" \
  "$root/bench/coexec/coexec_bench.cu" -o "$out/preempt/coexec_bench" -L"$runtime" -lpreempt_runtime "${libs[@]}"
# Cross-process pairs (issue 4): the same program built both ways, and the daemon that schedules them.
clang++-22 "${flags[@]}" "$root/bench/daemon/pair_bench.cu" -o "$out/original/pair_bench" "${libs[@]}"
clang++-22 "${flags[@]}" -fpass-plugin="$plugin" "$root/bench/daemon/pair_bench.cu" -o "$out/preempt/pair_bench" \
  -L"$runtime" -lpreempt_runtime "${libs[@]}"
# Multi-process mixes (issue 4, bench/daemon/mix.sh): EffiSha §8's 11 programs, FLEP §6.3.1's equal-priority pairs.
clang++-22 "${flags[@]}" "$root/bench/daemon/mix_bench.cu" -o "$out/original/mix_bench" "${libs[@]}"
clang++-22 "${flags[@]}" -fpass-plugin="$plugin" "$root/bench/daemon/mix_bench.cu" -o "$out/preempt/mix_bench" \
  -L"$runtime" -lpreempt_runtime "${libs[@]}"
# Memory admission under pressure (bench/memory/pressure.sh, schedGPU §7.2): one job program built three ways.
# original: static CUDA runtime, nothing admitted. preempt: plugin + runtime (+ PREEMPT_API for explicit budgets);
# its cudaMalloc is admitted once the host pass routes it to preempt_cudaMalloc (passes/AllocationRewrite.cpp).
# preload: the shared CUDA runtime, for LD_PRELOAD=libpreempt_mem.so (a preload cannot reach a static runtime's
# cudaMalloc); lib/ carries that runtime and the preload library with build/bench to the GPU machine.
mem_flags=("${flags[@]}" -I"$root/runtime-host/include")
mem_source=$root/bench/memory/mem_pressure.cu
mkdir -p "$out/preload" "$out/lib"
clang++-22 "${mem_flags[@]}" -DMEM_PRESSURE_BUILD='"original"' "$mem_source" -o "$out/original/mem_pressure" "${libs[@]}"
clang++-22 "${mem_flags[@]}" -DPREEMPT_API -DMEM_PRESSURE_BUILD='"preempt"' -fpass-plugin="$plugin" -Rpass=preempt \
  -Rpass-missed=preempt "$mem_source" -o "$out/preempt/mem_pressure" -L"$runtime" -lpreempt_runtime "${libs[@]}" \
  2> "$out/remarks/mem_pressure.txt"
grep -q "cudaMalloc routed to preempt_cudaMalloc" "$out/remarks/mem_pressure.txt" ||
  echo "build_suite.sh: warning: mem_pressure's cudaMalloc was not routed to preempt_cudaMalloc (no host pass?):" \
    "pressure.sh's preempt_<policy> runs will not be admitted" >&2
# shellcheck disable=SC2016 # $ORIGIN is the dynamic linker's, not the shell's
clang++-22 "${mem_flags[@]}" -DMEM_PRESSURE_BUILD='"preload"' "$mem_source" -o "$out/preload/mem_pressure" \
  -L"$cuda/lib64" -lcudart -ldl -lrt -lpthread -Wl,-rpath,'$ORIGIN/../lib'
cudart_soname=$(readelf -d "$cuda/lib64/libcudart.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ -n "$cudart_soname" ] || { echo "build_suite.sh: no soname in $cuda/lib64/libcudart.so" >&2; exit 1; }
cp -L "$cuda/lib64/libcudart.so" "$out/lib/$cudart_soname"
[ -f "$runtime/libpreempt_mem.so" ] || { echo "build_suite.sh: $runtime/libpreempt_mem.so missing: build the project first" >&2; exit 1; }
cp "$runtime/libpreempt_mem.so" "$out/lib/libpreempt_mem.so"
[ -x "$build/tools/preemptd/preemptd" ] || { echo "build_suite.sh: $build/tools/preemptd/preemptd missing: build the project first" >&2; exit 1; }
cp "$build/tools/preemptd/preemptd" "$out/preemptd"
cp "$build/tools/preemptctl" "$out/preemptctl" # mix.sh lists preemptd's clients when a run stalls (MIX_LOG_DIR)
# The GPU machine has no libmicrohttpd (preemptd --metrics) nor its TLS stack: carry every library preemptd needs that
# glibc does not provide, next to it, and point its run path there.
command -v patchelf > /dev/null || { echo "build_suite.sh: patchelf missing (tools/setup.sh installs it)" >&2; exit 1; }
ldd "$out/preemptd" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r so; do
  case "$(basename "$so")" in libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) continue ;; esac
  cp -L "$so" "$out/lib/$(basename "$so")"
done
# shellcheck disable=SC2016 # $ORIGIN is the dynamic linker's
patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$out/preemptd" # DT_RPATH also serves the libraries' own needs
clang++-22 "${flags[@]}" -I"$root/runtime-host/include" -fpass-plugin="$plugin" \
  "$root/bench/preemption/queue_trap.cu" -o "$out/preempt/queue_trap" -L"$runtime" -lpreempt_runtime "${libs[@]}"
# In-task preemption (issue 8, bench/intask/intask_check.sh): long-block kernels built five ways (the fourth with
# points in every nested loop that allows one, -preempt-intask-nested=all); the remarks of the plugin builds name every
# in-task yield point and what it saves.
mkdir -p "$out/preempt_nointask" "$out/preempt_nested"
intask_source=$root/bench/intask/intask_bench.cu
clang++-22 "${flags[@]}" "$intask_source" -o "$out/original/intask_bench" "${libs[@]}"
# Two ways for a CTA to agree at a check, by hand in gemm's K loop (no plugin).
clang++-22 "${flags[@]}" "$root/bench/intask/check_protocol.cu" -o "$out/original/check_protocol" "${libs[@]}"
clang++-22 "${flags[@]}" -DPREEMPT_API -DINTASK_BUILD='"preempt"' -I"$root/runtime-host/include" \
  -fpass-plugin="$plugin" -Rpass=preempt -Rpass-missed=preempt "$intask_source" -o "$out/preempt/intask_bench" \
  -L"$runtime" -lpreempt_runtime "${libs[@]}" 2> "$out/remarks/intask_bench.txt"
clang++-22 "${flags[@]}" -DPREEMPT_API -DINTASK_BUILD='"preempt_nointask"' -I"$root/runtime-host/include" \
  -fpass-plugin="$plugin" -mllvm -preempt-intask=0 -Rpass=preempt -Rpass-missed=preempt "$intask_source" \
  -o "$out/preempt_nointask/intask_bench" -L"$runtime" -lpreempt_runtime "${libs[@]}" \
  2> "$out/remarks/intask_bench_nointask.txt"
clang++-22 "${flags[@]}" -DPREEMPT_API -DINTASK_BUILD='"preempt_nested"' -I"$root/runtime-host/include" \
  -fpass-plugin="$plugin" -mllvm -preempt-intask-nested=all -Rpass=preempt -Rpass-missed=preempt "$intask_source" \
  -o "$out/preempt_nested/intask_bench" -L"$runtime" -lpreempt_runtime "${libs[@]}" \
  2> "$out/remarks/intask_bench_nested.txt"
# redux.sync over the whole warp in partial warps, which the in-task variants' warpUniform relies on.
clang++-22 "${flags[@]}" "$root/bench/intask/partial_warp.cu" -o "$out/original/partial_warp" "${libs[@]}"
# ... and with every point counting down (-preempt-intask-strip-mine=0): what strip-mining gains, in the same run.
mkdir -p "$out/preempt_countdown"
clang++-22 "${flags[@]}" -DPREEMPT_API -DINTASK_BUILD='"preempt_countdown"' -I"$root/runtime-host/include" \
  -fpass-plugin="$plugin" -mllvm -preempt-intask-strip-mine=0 "$intask_source" \
  -o "$out/preempt_countdown/intask_bench" -L"$runtime" -lpreempt_runtime "${libs[@]}"
# (Constant chunks need no build of their own: the default build's kernels carry both in-task shapes, and
# PREEMPT_INTASK_SHAPE picks one: intask_check.sh's "chunks" mode, time_rounds.sh's preempt@chunks.)
# The in-task check's shapes written by hand (no plugin): what each costs the stencil's loop.
clang++-22 "${flags[@]}" -I"$root/lib/include" "$root/bench/intask/chunk_shape.cu" -o "$out/original/chunk_shape" \
  "${libs[@]}"
for source in "$root"/bench/suite/*.cu "$root"/bench/demo/sample.cu; do
  name=$(basename "$source" .cu)
  converted=$(grep -c "converted to persistent-thread form" "$out/remarks/$name.txt" || true)
  refused=$(grep -c "left unchanged" "$out/remarks/$name.txt" || true)
  echo "$name converted=$converted refused=$refused" 
done > "$out/kernels.txt"
# Symbols off: the GPU machine gets build/bench in one carry of at most 64 MiB with the source tree.
for binary in "$out"/original/* "$out"/preempt/* "$out"/preempt_nointask/* "$out"/preempt_nested/*; do
  if file "$binary" | grep -q ELF; then strip "$binary"; fi
done
echo "build_suite.sh: built $(wc -l < "$out/kernels.txt") programs into $out"
