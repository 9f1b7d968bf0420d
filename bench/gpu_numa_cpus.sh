#!/bin/bash
# bench/gpu_numa_cpus.sh [GPU_INDEX]: prints the CPU list (taskset -c form) of the NUMA node the GPU is attached to,
# from nvidia-smi's PCI bus id and sysfs; prints nothing (exit 1) where the machine does not say.
# Used by bench/suite/placement_probe.sh to pin processes next to the GPU (on the H200 machine: one node, 0-15).
bus=$(nvidia-smi -i "${1:-0}" --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1 |
  tr 'A-F' 'a-f' | sed 's/^0000\(0000\)*/0000/')
[ -n "$bus" ] || exit 1
node=$(cat "/sys/bus/pci/devices/$bus/numa_node" 2>/dev/null) || exit 1
[ "$node" -ge 0 ] 2>/dev/null || exit 1
cat "/sys/devices/system/node/node$node/cpulist" 2>/dev/null || exit 1
