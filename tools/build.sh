#!/usr/bin/env bash
# build.sh: configures and builds preempt (plugin, device helpers, runtime, tests) into build/.
# Called by tools/demo.sh and tools/run-tests.sh after tools/setup.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PREEMPT_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm -DPREEMPT_CUDA_PATH="${PREEMPT_CUDA_PATH:-/usr/local/cuda}" >/dev/null
cmake --build "$build" --parallel "$(nproc)"
