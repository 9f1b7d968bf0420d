#!/usr/bin/env bash
# setup.sh: installs what preempt builds with (Debian packages of LLVM/Clang 22, HIP headers, CMake, Ninja).
# Used by tools/demo.sh and tools/run-tests.sh; safe to run again (installs only what is missing).
set -euo pipefail
# libclang-rt-22-dev: libFuzzer and the sanitizers for test/fuzz; clang-22 only recommends it.
packages=(clang-22 llvm-22-dev llvm-22-tools lld-22 libclang-22-dev libclang-rt-22-dev libamdhip64-dev cmake ninja-build
          python3 pkg-config libmicrohttpd-dev libslurm-dev patchelf)
# The real servers the integration tests start (test/lit/cluster/): Slurm (munge, slurmctld, slurmd, srun) and
# Prometheus, with curl to ask them.
packages+=(munge slurmctld slurmd slurm-client prometheus curl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda=${PREEMPT_CUDA_PATH:-/usr/local/cuda}
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
  echo "setup.sh: no CUDA toolkit at $cuda (ptxas and headers are needed to build CUDA programs);" \
       "install one there or set PREEMPT_CUDA_PATH" >&2
  exit 1
fi
