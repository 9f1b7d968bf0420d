#!/usr/bin/env bash
# demo.sh: the README's main job: set up, build preempt, compile a sample CUDA program with the plugin,
# show what the passes did (FLEP §4.1 conversion, launch routing), report preemption contexts (CTXBack §V-A);
# with a GPU, run both builds and compare, and run the converted one again while the runtime preempts its
# kernels at random (FLEP §4.1, EffiSha §6), and once more scheduled by a preemptd started for the demo (FLEP §3).
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
echo "== preemptd, the per-node scheduler (FLEP §5, EffiSha §7), on a private socket for the demo"
daemon_dir=$(mktemp -d)
export PREEMPT_DAEMON_SOCKET=$daemon_dir/preemptd.sock
"$build/tools/preemptd/preemptd" --foreground --policy hpf --log "$daemon_dir/decisions.log" 2> "$daemon_dir/err" &
daemon_pid=$!
trap 'kill "$daemon_pid" 2>/dev/null; rm -rf "$daemon_dir"' EXIT
for _ in $(seq 100); do [ -S "$PREEMPT_DAEMON_SOCKET" ] && break; sleep 0.02; done
"$build/tools/preemptctl" list | sed 's/^/   /'

echo
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== Running on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  original=$("$out/sample.original")
  converted=$(PREEMPT_DAEMON=off "$out/sample.preempt")
  # The runtime evicts (all SMs or a random half) and resumes the running
  # kernels every 0.2-2 ms, and says how often at exit. The sample's launches
  # are short, so by default they run as written (PREEMPT_LONG_US): here every
  # launch is converted, to show it preempted.
  preempted=$(PREEMPT_DAEMON=off PREEMPT_LONG_US=0 PREEMPT_STRESS=1 "$out/sample.preempt" 2> "$out/stress.log")
  # The same program, its launches scheduled by the demo's preemptd (which logs every decision).
  scheduled=$(PREEMPT_PRIORITY=-5 "$out/sample.preempt")
  echo "original           : $original"
  echo "converted          : $converted"
  echo "converted, evicted : $preempted ($(grep -o '[0-9]* evictions ([0-9]* spatial[^)]*), [0-9]* resumptions' "$out/stress.log"))"
  echo "under preemptd     : $scheduled ($(grep -c ' command ' "$daemon_dir/decisions.log") commands; first ones:)"
  grep ' command ' "$daemon_dir/decisions.log" | head -3 | sed 's/^/   /'
  [ "$original" = "$converted" ] && [ "$original" = "$preempted" ] && [ "$original" = "$scheduled" ] &&
    echo "== Same output with and without the plugin, while being preempted, and under preemptd" ||
    { echo "== OUTPUTS DIFFER" >&2; exit 1; }
else
  echo "== No GPU on this machine: built $out/sample.original and $out/sample.preempt without running them."
  echo "   On a GPU machine, bench/gpu_check.sh runs the correctness suite (see README)."
fi
