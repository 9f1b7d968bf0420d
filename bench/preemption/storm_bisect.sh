#!/usr/bin/env bash
# storm_bisect.sh: which part of the plugin build, if any, makes launch_storm slower than its original across
# processes (issue 39's suite worst case). Builds launch_storm six ways and times them interleaved, one process each.
# Usage: storm_bisect.sh build DIR   (here: clang-22, build/ built; strips the binaries as build_suite.sh does)
#        storm_bisect.sh run DIR [ROUNDS]   (on the GPU machine: prints "ROUND VARIANT TIME_MS" per run, then each
#          variant's median (min..max) and its ratio to v0's median, and whether its output equals v0's)
# Variants: v0 original; v1 the plugin build; v2 the original with the whole runtime library linked in (its
# constructor, no routing); v3 the plugin without the cudaMalloc/cudaMemcpy routes; v4 the plugin on the device side
# only (the converted module, launches not routed); v5 the plugin on the host side only (launches routed, the module
# as written, so the runtime finds no converted kernel).
set -uo pipefail
variants=(v0_original v1_plugin v2_runtime_linked v3_no_api_routes v4_device_only v5_host_only)
case ${1:-} in
build)
  dir=$2 root=$(cd "$(dirname "$0")/../.." && pwd)
  build=${PREEMPT_BUILD_DIR:-$root/build}
  plugin=$build/passes/libpreempt.so runtime=$build/runtime-host src=$root/bench/suite/launch_storm.cu
  flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path="${PREEMPT_CUDA_PATH:-/usr/local/cuda}" -Wno-unknown-cuda-version
         -O2 -std=c++17)
  libs=(-L"${PREEMPT_CUDA_PATH:-/usr/local/cuda}/lib64" -lcudart_static -ldl -lrt -lpthread)
  mkdir -p "$dir"
  set -e
  clang++-22 "${flags[@]}" "$src" -o "$dir/v0_original" "${libs[@]}"
  clang++-22 "${flags[@]}" -fpass-plugin="$plugin" "$src" -o "$dir/v1_plugin" -L"$runtime" -lpreempt_runtime \
    "${libs[@]}" 2>/dev/null
  clang++-22 "${flags[@]}" "$src" -x none -o "$dir/v2_runtime_linked" -Wl,--whole-archive \
    "$runtime/libpreempt_runtime.a" -Wl,--no-whole-archive "${libs[@]}"
  clang++-22 "${flags[@]}" -fpass-plugin="$plugin" -mllvm -preempt-memory-admission=0 -mllvm -preempt-sync-copies=0 \
    "$src" -o "$dir/v3_no_api_routes" -L"$runtime" -lpreempt_runtime "${libs[@]}" 2>/dev/null
  clang++-22 "${flags[@]}" -Xarch_device -fpass-plugin="$plugin" "$src" -o "$dir/v4_device_only" -L"$runtime" \
    -lpreempt_runtime "${libs[@]}" 2>/dev/null
  clang++-22 "${flags[@]}" -Xarch_host -fpass-plugin="$plugin" "$src" -o "$dir/v5_host_only" -L"$runtime" \
    -lpreempt_runtime "${libs[@]}" 2>/dev/null
  strip "${variants[@]/#/$dir/}"
  ;;
run)
  dir=$2 rounds=${3:-16} work=$(mktemp -d)
  raw=$work/bisect.txt
  for round in $(seq 1 "$rounds"); do
    for i in "${!variants[@]}"; do
      v=${variants[$(( (i + round) % ${#variants[@]} ))]}
      t=$(timeout 30 "$dir/$v" "$work/$v.out" 7 2>"$work/$v.err" | grep -o 'time_ms=[0-9.]*' | cut -d= -f2)
      echo "$round $v ${t:-nan}" | tee -a "$raw"
    done
  done
  python3 - "$raw" "$work" "${variants[@]}" <<'PY'
import filecmp, os, statistics, sys
raw, work, names = sys.argv[1], sys.argv[2], sys.argv[3:]
times = {}
for line in open(raw):
    _, name, t = line.split()
    if t != "nan":
        times.setdefault(name, []).append(float(t))
base = statistics.median(times[names[0]])
for name in names:
    x = times.get(name, [])
    same = filecmp.cmp(os.path.join(work, names[0] + ".out"), os.path.join(work, name + ".out"), shallow=False)
    if x:
        print(f"{name}: {len(x)} runs, median {statistics.median(x):.3f} ms ({min(x):.3f}..{max(x):.3f}), "
              f"x{statistics.median(x) / base:.4f}, output {'same' if same else 'DIFFERENT'}")
    else:
        print(f"{name}: no run finished")
PY
  rm -rf "$work"
  ;;
*) echo "usage: storm_bisect.sh build DIR | run DIR [ROUNDS]" >&2; exit 2 ;;
esac
