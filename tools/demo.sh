#!/usr/bin/env bash
# demo.sh: the README's main job: set up, build preempt, compile a sample CUDA program with the plugin,
# show what the passes did (FLEP §4.1 conversion, launch routing), report preemption contexts (CTXBack §V-A);
# with a GPU, run both builds and compare, and run the converted one again while the runtime preempts its
# kernels at random (FLEP §4.1, EffiSha §6).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PREEMPT_BUILD_DIR:-$root/build}
cuda=${PREEMPT_CUDA_PATH:-/usr/local/cuda}
bash "$root/tools/setup.sh"
bash "$root/tools/build.sh" >/dev/null
out=$build/demo
mkdir -p "$out"
sample=$root/bench/demo/sample.cu
flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path="$cuda" -Wno-unknown-cuda-version -O2)
libs=(-L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread)

echo "== Compiling $sample with libpreempt.so (remarks: -Rpass=preempt -Rpass-missed=preempt)"
clang++-22 "${flags[@]}" -fpass-plugin="$build/passes/libpreempt.so" -Rpass=preempt -Rpass-missed=preempt \
  "$sample" -o "$out/sample.preempt" -L"$build/runtime-host" -lpreempt_runtime "${libs[@]}" 2>&1 |
  grep 'remark:' | sed -e "s|$root/||" -e 's| \[-Rpass.*||'
clang++-22 "${flags[@]}" "$sample" -o "$out/sample.original" "${libs[@]}"

echo
echo "== The converted saxpy kernel, in PTX: a loop over tasks taken from the control block"
clang++-22 "${flags[@]}" --cuda-device-only -S -fpass-plugin="$build/passes/libpreempt.so" "$sample" \
  -o "$out/sample.ptx"
awk '/^.visible .entry _Z5saxpyfPKfPfi/,/^}/' "$out/sample.ptx" |
  grep -E '\.entry|\.param|atom\.|bar\.sync|ret;|^\$L__BB' | head -20
echo "   (full PTX: $out/sample.ptx; kernel markers the runtime looks for:)"
grep -o '__preempt_kernel_[A-Za-z0-9_]*' "$out/sample.ptx" | sort -u | sed 's/^/   /'

echo
echo "== Preemption context per kernel (CTXBack, IPDPS'21): the sample's converted kernels (NVPTX, virtual"
echo "   registers) and an OpenCL kernel file for gfx906 (the paper's GPU); every plan checked 4 times"
"$build/tools/preempt-report" --osrb --check=4 "$sample" "$root/bench/ctxback/kernels/vector_add.cl"
echo "   (12 OpenCL kernels after the paper's Table I: bash bench/ctxback/report.sh, bench/ctxback/report.md)"

echo
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== Running on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  original=$("$out/sample.original")
  converted=$("$out/sample.preempt")
  # The runtime evicts (all SMs or a random half) and resumes the running
  # kernels every 0.2-2 ms, and says how often at exit.
  preempted=$(PREEMPT_STRESS=1 "$out/sample.preempt" 2> "$out/stress.log")
  echo "original           : $original"
  echo "converted          : $converted"
  echo "converted, evicted : $preempted ($(grep -o '[0-9]* evictions ([0-9]* spatial), [0-9]* resumptions' "$out/stress.log"))"
  [ "$original" = "$converted" ] && [ "$original" = "$preempted" ] &&
    echo "== Same output with and without the plugin, and while being preempted" ||
    { echo "== OUTPUTS DIFFER" >&2; exit 1; }
else
  echo "== No GPU on this machine: built $out/sample.original and $out/sample.preempt without running them."
  echo "   On a GPU machine, bench/gpu_check.sh runs the correctness suite (see README)."
fi
