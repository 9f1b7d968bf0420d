#!/usr/bin/env bash
# dry_run.sh: checks bench/memory/pressure.sh and report_memory.py end to end on a machine WITHOUT a GPU (the build
# machine): mem_pressure.cu built against the simulated GPU (test/fake-gpu/fake_cuda.c as libcudart.so.13: its
# kernels run on the host, 1 GiB of device memory shared by the processes, 8 MiB of context each) and a fake
# nvidia-smi that reads the same simulated GPU through its NVML. The preload build gets the real libpreempt_mem.so
# and the "preempt" build the runtime's real admission code (its memory objects), with cudaMalloc/cudaFree renamed
# to preempt_cudaMalloc/preempt_cudaFree by the preprocessor, standing in for the host pass. Never a measurement.
# Scenarios: 1. everything, expecting every check to pass and out of memory without admission; 2. a wrong value
# and a hang injected, expecting failed checks; 3. the plugin build without the rewrite, expecting "not admitted".
# Usage: bench/memory/dry_run.sh [KEEP_DIR]   (needs clang++-22, CUDA headers, python3 and a build of the project:
#        build/runtime-host/libpreempt_mem.so and build/lib/libpreempt_core.a)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PREEMPT_BUILD_DIR:-$root/build}
cuda=${PREEMPT_CUDA_PATH:-/usr/local/cuda}
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
bin=$dir/bench
mkdir -p "$bin/lib" "$bin/original" "$bin/preempt" "$bin/preempt-no-rewrite" "$bin/preload" "$dir/fakebin" "$dir/obj"
core=$build/lib/libpreempt_core.a # lib/: the ledger, byte counts, the priority rule, futexes
for needed in "$build/runtime-host/libpreempt_mem.so" "$core"; do
  [ -f "$needed" ] || { echo "dry_run.sh: $needed is missing: build the project first" >&2; exit 1; }
done

# The simulated GPU, under the real runtime's name and symbol version; its NVML is the same library.
echo 'libcudart.so.13 { global: *; };' > "$dir/obj/cudart.map"
cc -O2 -std=gnu11 -shared -fPIC -fvisibility=hidden -Wall -Wextra -I"$cuda/include" -I"$root/bench/memory" \
  -I"$root/lib/include" "$root/test/fake-gpu/fake_cuda.c" "$core" -o "$bin/lib/libcudart.so.13" \
  -Wl,-soname,libcudart.so.13 -Wl,--version-script="$dir/obj/cudart.map" -lpthread -lrt
ln -sf libcudart.so.13 "$bin/lib/libcudart.so"
cp "$build/runtime-host/libpreempt_mem.so" "$bin/lib/"
cp "$build/tools/preemptd/preemptd" "$bin/preemptd"
# The runtime's memory admission, as libpreempt_runtime.a has it (preempt_cudaMalloc, ...), without the launch
# parts; lib/ comes from the build's own archive, so that this list cannot fall behind what admission needs.
# The launch runtime's two calls from admission, preempt_settle_device (a free first waits for converted launches
# held on the device) and preempt_shutdown (cudaDeviceReset), stand in here as nothing to wait for or stop: these
# programs launch no converted kernel.
printf '%s\n' 'int preempt_settle_device(void);' 'int preempt_settle_device(void) { return 0; }' \
  'int preempt_shutdown(void);' 'int preempt_shutdown(void) { return 0; }' > "$dir/obj/settle.c"
objects=()
for source in runtime-host/mem_intercept_cuda.c runtime-host/mem_admission.c runtime-host/mem_segment.c \
              runtime-host/mem_daemon.c runtime-host/daemon_link.c runtime-host/daemon_socket.c \
              runtime-host/settings.c "$dir/obj/settle.c"; do
  object=$dir/obj/$(basename "$source" .c).o
  case $source in /*) ;; *) source=$root/$source ;; esac
  cc -O2 -std=gnu11 -Wall -Wextra -I"$root/runtime-host/include" -I"$root/runtime-host" -I"$root/lib/include" \
    -I"$cuda/include" -c "$source" -o "$object"
  objects+=("$object")
done
ar rcs "$dir/obj/libmem_admission.a" "${objects[@]}"
flags=(-x cuda --cuda-gpu-arch=sm_90 --cuda-path="$cuda" -Wno-unknown-cuda-version -O2 -std=c++17
       -I"$root/runtime-host/include" -I"$root/bench/memory")
link=(-L"$bin/lib" -lcudart -ldl -lrt -lpthread "-Wl,-rpath,$bin/lib")
source=$root/bench/memory/mem_pressure.cu
pids=()
clang++-22 "${flags[@]}" -DMEM_PRESSURE_BUILD='"original"' "$source" -o "$bin/original/mem_pressure" "${link[@]}" &
pids+=($!)
clang++-22 "${flags[@]}" -DMEM_PRESSURE_BUILD='"preload"' "$source" -o "$bin/preload/mem_pressure" "${link[@]}" &
pids+=($!)
clang++-22 "${flags[@]}" -DPREEMPT_API -DMEM_PRESSURE_BUILD='"preempt"' -DcudaMalloc=preempt_cudaMalloc \
  -DcudaFree=preempt_cudaFree "$source" -o "$bin/preempt/mem_pressure" -x none "$dir/obj/libmem_admission.a" "$core" \
  "${link[@]}" &
pids+=($!)
clang++-22 "${flags[@]}" -DPREEMPT_API -DMEM_PRESSURE_BUILD='"preempt"' "$source" \
  -o "$bin/preempt-no-rewrite/mem_pressure" -x none "$dir/obj/libmem_admission.a" "$core" "${link[@]}" &
pids+=($!)
built=0
for pid in "${pids[@]}"; do wait "$pid" || built=1; done
[ $built = 0 ] || { echo "dry_run.sh: building mem_pressure failed" >&2; exit 1; }

# The simulated GPU every process of this run shares (test/fake-gpu/fake_cuda.c says what each variable does).
export FAKE_GPU_NAME=/fake-gpu-dry-run-$$ FAKE_GPU_MEMORY=1G FAKE_GPU_CONTEXT_MEMORY=8M
export FAKE_GPU_UUID=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff FAKE_GPU_PASS_MS=30
trap 'rm -f "/dev/shm$FAKE_GPU_NAME"' EXIT
rm -f "/dev/shm$FAKE_GPU_NAME"
# A fake nvidia-smi: --query-gpu=name|memory.total|memory.used only, in MiB, read through the simulated GPU's NVML
# (as the real one reads the driver's), which counts what every live process holds, contexts included.
cat > "$dir/fakebin/nvidia-smi" <<END_OF_SCRIPT
#!/usr/bin/env python3
import ctypes, sys
query = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--query-gpu=")), "")
if query == "name":
    print("Fake GPU (dry run)")
    sys.exit(0)
if query not in ("memory.total", "memory.used"):
    sys.exit(f"fake nvidia-smi: unsupported query '{query}'")
class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
nvml = ctypes.CDLL("$bin/lib/libcudart.so.13")
uuid = "$FAKE_GPU_UUID"
text = "GPU-" + "-".join(uuid[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
device, memory = ctypes.c_void_p(), Memory()
for status in (nvml.nvmlInit_v2(), nvml.nvmlDeviceGetHandleByUUID(text.encode(), ctypes.byref(device)),
               nvml.nvmlDeviceGetMemoryInfo(device, ctypes.byref(memory))):
    if status != 0:
        sys.exit(f"fake nvidia-smi: NVML error {status}")
print((memory.total if query == "memory.total" else memory.used) // 1048576)
END_OF_SCRIPT
chmod +x "$dir/fakebin/nvidia-smi"
export PATH=$dir/fakebin:$PATH
export PRESSURE_T_MS=${PRESSURE_T_MS:-100} PRESSURE_BUDGET_S=${PRESSURE_BUDGET_S:-150} PRESSURE_OVERHEAD_CALLS=500
status=0
expect() { # expect WHAT COMMAND...: runs the check, says ok or FAILED
  if "${@:2}"; then echo "dry_run.sh: ok: $1"; else echo "dry_run.sh: FAILED: $1" >&2; status=1; fi
}

echo "dry_run.sh: 1. every mode (DRY RUN: fake GPU, numbers mean nothing)"
bash "$root/bench/memory/pressure.sh" "$bin" "$dir/all.jsonl"
python3 "$root/bench/memory/report_memory.py" "$dir/all.jsonl" > "$dir/all.md" || true
cat "$dir/all.md"
expect "every check passes" grep -q "^memory: [0-9]* passed, 0 failed$" "$dir/all.md"
expect "out of memory without admission" grep -q '"mode": "original_concurrent".*"outcome": "oom"' "$dir/all.jsonl"
expect "no out of memory with admission" \
  bash -c "! grep '\"mode\": \"pre[el][mo][pa][td]_' '$dir/all.jsonl' | grep -q '\"outcome\": \"oom\"'"
expect "every admitted job admitted" \
  bash -c "! grep '\"kind\": \"job\", .*\"mode\": \"pre[el][mo][pa][td]_' '$dir/all.jsonl' | grep -q '\"admitted\": false'"
expect "overhead measured with admission on" grep -q '"mode": "overhead_preload_on".*"admitted": true' "$dir/all.jsonl"
expect "no ledger left in /dev/shm" bash -c "! ls /dev/shm/preempt-mem-bench-* 2>/dev/null"

echo "dry_run.sh: 2. a wrong value (job 3) and a hang (job 5) injected"
FAKE_GPU_CORRUPT_JOB=3 FAKE_GPU_HANG_JOB=5 PRESSURE_ONLY='original_serial|preempt_fifo' PRESSURE_REPS=1 \
  PRESSURE_PROC_TIMEOUT=5 PRESSURE_PASSES=2 bash "$root/bench/memory/pressure.sh" "$bin" "$dir/faults.jsonl"
if python3 "$root/bench/memory/report_memory.py" "$dir/faults.jsonl" > "$dir/faults.md"; then rc=0; else rc=$?; fi
cat "$dir/faults.md"
expect "the report fails (exit 1)" test "$rc" = 1
expect "the wrong value is reported" grep -q "wrong values" "$dir/faults.md"
expect "the hang is reported" grep -q "hang" "$dir/faults.md"

echo "dry_run.sh: 3. the plugin build without the allocation rewrite"
mv "$bin/preempt" "$bin/preempt-rewrite" && mv "$bin/preempt-no-rewrite" "$bin/preempt"
PRESSURE_ONLY='original_serial|preempt_fifo|overhead_preempt' PRESSURE_REPS=1 PRESSURE_PASSES=2 \
  bash "$root/bench/memory/pressure.sh" "$bin" "$dir/norewrite.jsonl"
mv "$bin/preempt" "$bin/preempt-no-rewrite" && mv "$bin/preempt-rewrite" "$bin/preempt"
python3 "$root/bench/memory/report_memory.py" "$dir/norewrite.jsonl" > "$dir/norewrite.md" || true
cat "$dir/norewrite.md"
expect "'admitted none' said" grep -q "admitted none of its allocations" "$dir/norewrite.md"
expect "overhead flagged as not a measurement" grep -q "admission was not active" "$dir/norewrite.md"
[ $# -ge 1 ] || rm -rf "$dir"
[ $status = 0 ] && echo "dry_run.sh: all expectations met (DRY RUN)" || echo "dry_run.sh: some expectations FAILED" >&2
exit $status
