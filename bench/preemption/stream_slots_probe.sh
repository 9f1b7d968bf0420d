#!/usr/bin/env bash
# stream_slots_probe.sh: runs stream_slots_probe's modes and times process start under the settings a runtime
# that holds streams asks for (CUDA_DEVICE_MAX_CONNECTIONS=32, CUDA_MODULE_LOADING=EAGER). Issue 40.
# Usage: stream_slots_probe.sh BIN_DIR (the probe and, optionally, other programs to start)
set -uo pipefail
bin=$1
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# A mode that hangs the host (the queue trap) is cut off: its last stderr line says where.
probe() { timeout -s KILL "$1" "$bin/stream_slots_probe" "${@:2}" 2> >(tail -2 >&2) || echo "{\"mode\":\"$2\",\"exit\":$?}"; }
modes=${PROBE_MODES:-cost release queues lazy start}
case " $modes " in *" cost "*) probe 60 cost ;; esac
case " $modes " in *" release "*) probe 20 release ;; esac
case " $modes " in *" queues "*)
  probe 30 queues 12
  CUDA_DEVICE_MAX_CONNECTIONS=32 probe 30 queues 24 ;; esac
case " $modes " in *" lazy "*)
  CUDA_MODULE_LOADING=LAZY probe 15 lazy
  CUDA_MODULE_LOADING=EAGER probe 15 lazy ;; esac
case " $modes " in *" start "*) ;; *) exit 0 ;; esac
# Process start: wall time of each program, 5 runs per setting, median and spread (ms).
for program in stream_slots_probe vectorAdd thrust_sort radixSortThrust; do
  [ -x "$bin/$program" ] || continue
  arg=; [ "$program" = stream_slots_probe ] && arg=start
  for setting in default queues32 eager both; do
    env=()
    case $setting in
      queues32) env=(CUDA_DEVICE_MAX_CONNECTIONS=32) ;;
      eager) env=(CUDA_MODULE_LOADING=EAGER) ;;
      both) env=(CUDA_DEVICE_MAX_CONNECTIONS=32 CUDA_MODULE_LOADING=EAGER) ;;
    esac
    times=()
    for run in 1 2 3 4 5; do
      start=$(date +%s%N)
      env "${env[@]}" "$bin/$program" $arg >/dev/null 2>&1 </dev/null
      times+=($(( ($(date +%s%N) - start) / 1000000 )))
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
    echo "{\"mode\":\"start\",\"program\":\"$program\",\"setting\":\"$setting\",\"ms_sorted\":\"$sorted\"}"
  done
done
