#!/bin/bash
# bench/suite/placement_probe.sh: are launch_storm's and copy_after_launch's two per-process modes the CPU the
# process lands on? Runs each build unpinned and pinned (the GPU's NUMA node, one core of it, another node),
# alternating builds.
#
#   bash bench/suite/placement_probe.sh BENCH_DIR OUT_DIR   (BENCH_DIR: build/bench, from bench/build_suite.sh)
#
# Environment: PROBE_RUNS (per program, build and placement; default 8), PROBE_REPS (repetitions inside one
# process, as gpu_check.sh's PREEMPT_BENCH_REPS; default 7).
# Writes OUT_DIR/placement.tsv (program, build, placement, run, time_ms; for cudaMalloc_4MiB_ms, a process's
# median cudaMalloc in ms) and OUT_DIR/topology.txt.
set -uo pipefail
bench=${1:?usage: placement_probe.sh BENCH_DIR OUT_DIR}
out=${2:?usage: placement_probe.sh BENCH_DIR OUT_DIR}
runs=${PROBE_RUNS:-8}
reps=${PROBE_REPS:-7}
mkdir -p "$out"
{
  nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(CPU\(s\)|NUMA|Model name|Thread|Core|Socket)'
} > "$out/topology.txt"
# The GPU's NUMA node from sysfs: "node" pins to its cores, "core" to its first core alone, "far" to the cores of
# another node (where there is one), "last" to the machine's last core.
placements="unpinned"
if cpus=$(bash "$(dirname "$0")/../gpu_numa_cpus.sh"); then
  placements="$placements node:$cpus core:${cpus%%[-,]*}"
  for list in /sys/devices/system/node/node*/cpulist; do
    [ "$(cat "$list")" = "$cpus" ] || { placements="$placements far:$(cat "$list")"; break; }
  done
fi
placements="$placements last:$(($(nproc --all) - 1))"
echo "placements: $placements" >> "$out/topology.txt"
printf 'program\tbuild\tplacement\trun\ttime_ms\n' > "$out/placement.tsv"
for program in launch_storm copy_after_launch; do
  for run in $(seq 1 "$runs"); do
    for placement in $placements; do
      for build in original preempt; do
        if [ "$placement" = unpinned ]; then
          log=$(timeout 60 "$bench/$build/$program" /dev/null "$reps" 2>/dev/null)
        else
          log=$(timeout 60 taskset -c "${placement#*:}" "$bench/$build/$program" /dev/null "$reps" 2>/dev/null)
        fi
        ms=$(echo "$log" | grep -o 'time_ms=[0-9.]*' | cut -d= -f2)
        printf '%s\t%s\t%s\t%s\t%s\n' "$program" "$build" "$placement" "$run" "${ms:-nan}" >> "$out/placement.tsv"
      done
    done
  done
done
# cudaMalloc + cudaFree of 4 MiB, the original build only (its per-process modes, 33-35 against 43-50 us, show
# in every build's row of gpu_check.sh's memory step): median us per process, by placement.
for run in $(seq 1 "$runs"); do
  for placement in $placements; do
    pin=()
    [ "$placement" = unpinned ] || pin=(taskset -c "${placement#*:}")
    line=$(PREEMPT_MEM=off timeout 60 "${pin[@]}" "$bench/original/mem_pressure" --alloc-overhead 500 4194304 2>/dev/null)
    ms=$(echo "$line" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["malloc_us"]["median"] / 1000)' 2>/dev/null)
    printf '%s\t%s\t%s\t%s\t%s\n' cudaMalloc_4MiB_ms original "$placement" "$run" "${ms:-nan}" >> "$out/placement.tsv"
  done
done
# Median and range per program, build and placement.
awk -F'\t' 'NR > 1 && $5 != "nan" { k = $1 "\t" $2 "\t" $3; v[k, ++n[k]] = $5; keys[k] = 1 }
  END {
    for (k in keys) {
      m = n[k]; for (i = 1; i <= m; i++) x[i] = v[k, i]
      for (i = 2; i <= m; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
      med = m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
      printf "%s\tmedian %.3f\tmin %.3f\tmax %.3f\truns %d\n", k, med, x[1], x[m], m
    }
  }' "$out/placement.tsv" | sort
