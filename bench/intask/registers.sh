#!/usr/bin/env bash
# registers.sh: registers per thread (ptxas -v, sm_90) of every kernel's persistent form and in-task variant, for
# the in-task overhead (issue 8, docs/intask.md): a variant over its kernel's count can hold fewer CTAs per SM.
# Needs no GPU. Usage: bench/intask/registers.sh [PLUGIN] [SOURCE.cu...] > table.md
# (default: build/passes/libpreempt.so over bench/intask/intask_bench.cu and bench/suite/*.cu).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${PREEMPT_CUDA_PATH:-/usr/local/cuda}
plugin=${1:-$root/build/passes/libpreempt.so}
[ $# -gt 0 ] && shift
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=("$root/bench/intask/intask_bench.cu" "$root"/bench/suite/*.cu)
[ -f "$plugin" ] || { echo "registers.sh: $plugin missing: build the project first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| source | kernel | persistent form | in-task variant | difference |"
echo "|---|---|---|---|---|"
for source in "${sources[@]}"; do
  name=$(basename "$source" .cu)
  if ! clang++-22 -x cuda --cuda-gpu-arch=sm_90 --cuda-path="$cuda" -Wno-unknown-cuda-version -O2 -std=c++17 \
      -DPREEMPT_API -I"$root/runtime-host/include" -I"$root/lib/include" -fpass-plugin="$plugin" \
      --cuda-device-only -S "$source" -o "$work/$name.ptx" 2> "$work/$name.err"; then
    echo "registers.sh: $source does not compile: $(tail -1 "$work/$name.err")" >&2
    exit 1
  fi
  "$cuda/bin/ptxas" -arch=sm_90 -O3 -v "$work/$name.ptx" -o "$work/$name.cubin" 2> "$work/$name.ptxas"
  # "Compiling entry function 'X'" then "... Used N registers": one "N X" line per kernel.
  awk '/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); kernel = substr($0, RSTART + 1, RLENGTH - 2) }
       /Used [0-9]+ registers/ { match($0, /Used [0-9]+/); print substr($0, RSTART + 5, RLENGTH - 5), kernel }' \
    "$work/$name.ptxas" > "$work/$name.regs"
  while read -r variant_regs variant; do
    kernel=${variant#__preempt_intaskform_}
    persistent_regs=$(awk -v k="$kernel" '$2 == k { print $1 }' "$work/$name.regs")
    echo "| $name | \`$kernel\` | $persistent_regs | $variant_regs | $((variant_regs - persistent_regs)) |"
  done < <(grep ' __preempt_intaskform_' "$work/$name.regs")
done
