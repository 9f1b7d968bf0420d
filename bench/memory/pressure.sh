#!/usr/bin/env bash
# pressure.sh: on the GPU machine, memory admission under pressure (schedGPU §7.2, Fig. 10): N jobs (mem_pressure
# processes) each demanding a share of the GPU's memory, 2x the GPU in all by default, run
#   original_serial      one at a time, original build (static CUDA runtime, no admission): the baseline
#   original_concurrent  all at once, original build: some fail with out of memory (counted, expected)
#   original_packed      waves of as many as fit, original build (schedGPU's hand-packed scenario; once)
#   preempt_<policy>     all at once, build with the plugin and runtime (implicit admission: one cudaMalloc per job)
#                        per policy in PRESSURE_POLICIES (fifo every rep, the others once)
#   preload_fifo         all at once, shared-runtime build with LD_PRELOAD=libpreempt_mem.so
#   preempt_budget       all at once, runtime build, whole demand declared first (preempt_mem_budget: explicit
#                        mode), then allocated in 4 pieces
#   daemon_fifo          all at once, runtime build, the ledger kept by preemptd (schedGPU §3.1's client-server
#                        mode: BIN_DIR/preemptd --memory-policy fifo on a socket of its own, NVML for the GPU's size)
# and the cost of one admitted allocation: N cudaMalloc+cudaFree pairs timed one by one, with admission and with
# PREEMPT_MEM=off, in the runtime build and in the preload build (and the original build as reference), and in the
# runtime build with preemptd's ledger (a socket round trip per allocation and a message per free).
# The concurrent modes are repeated PRESSURE_REPS times while PRESSURE_BUDGET_S allows; serial runs once.
# Every line of OUT_JSONL has a "kind": config, overhead, job (one per process), run (one per mode and rep), note.
# bench/memory/report_memory.py turns it into the report.
# Usage: bench/memory/pressure.sh BIN_DIR OUT_JSONL   (BIN_DIR = build/bench from bench/build_suite.sh)
# Environment (defaults): PRESSURE_JOBS (8), PRESSURE_SHARE_PCT (25: each job's demand, % of memory.total),
#   PRESSURE_T_MS (300: compute per job, alone; turned into passes by one extra original-build job before the
#   serial run, or 20 passes when original_serial is not run), PRESSURE_PASSES (no calibration),
#   PRESSURE_HOST_MS (0: a host phase holding the memory), PRESSURE_REPS (3), PRESSURE_BUDGET_S (85: no run starts
#   that would likely end later), PRESSURE_POLICIES ("fifo mmu"), PRESSURE_ONLY (regex on mode names),
#   PRESSURE_PROC_TIMEOUT (seconds per process; default from the serial run, 20..60), PRESSURE_OVERHEAD_CALLS
#   (2000), PRESSURE_OVERHEAD_SIZE (bytes, 4194304), PRESSURE_PACKED (processes per wave of original_packed).
# Each run has its own ledger (PREEMPT_MEM_SEGMENT=/preempt-mem-bench-<run>); /dev/shm/preempt-mem-bench-* is
# removed before and after. A process killed by its timeout is a hang, recorded as a failure.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: pressure.sh BIN_DIR OUT_JSONL" >&2; exit 2; }
bin=$1 out=$2
lib=$bin/lib
jobs=${PRESSURE_JOBS:-8} share=${PRESSURE_SHARE_PCT:-25} t_ms=${PRESSURE_T_MS:-300} host_ms=${PRESSURE_HOST_MS:-0}
reps=${PRESSURE_REPS:-3} budget_s=${PRESSURE_BUDGET_S:-85} policies=${PRESSURE_POLICIES:-fifo mmu}
only=${PRESSURE_ONLY:-.} overhead_calls=${PRESSURE_OVERHEAD_CALLS:-2000} overhead_size=${PRESSURE_OVERHEAD_SIZE:-4194304}
for number in "$jobs" "$share" "$reps" "$budget_s" "$overhead_calls" "$overhead_size"; do
  [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "pressure.sh: '$number' is not a positive whole number" >&2; exit 2; }
done
work=$(mktemp -d)
running=() # the timeout processes now running
daemon_pid=""
cleanup() {
  for pid in "${running[@]}"; do kill "$pid" 2>/dev/null; done
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  rm -f /dev/shm/preempt-mem-bench-*
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "pressure.sh: stopped by a signal" >&2; exit 143' TERM INT
: > "$out" || { echo "pressure.sh: cannot write $out" >&2; exit 2; }
emit() { echo "$1" >> "$out"; }
now_s() { if [ -n "${EPOCHREALTIME:-}" ]; then echo "${EPOCHREALTIME/,/.}"; else date +%s.%N; fi; }
rm -f /dev/shm/preempt-mem-bench-*

# What every process gets: no admission settings from outside; 8 hardware queues and eager module loading in
# every build (the runtime would ask for 32 queues, which costs its processes ~0.6 s each to start on the H100,
# docs/daemon.md; nothing here evicts, so 8 are safe), so that the builds differ in their allocation path only.
unset PREEMPT_MEM PREEMPT_MEM_BUDGET PREEMPT_MEM_POLICY PREEMPT_MEM_SEGMENT PREEMPT_MEM_TIMEOUT_MS LD_PRELOAD \
  PREEMPT_MEM_LEDGER PREEMPT_DAEMON_SOCKET
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-8} CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}
export PREEMPT_DAEMON=off LC_NUMERIC=C

command -v nvidia-smi > /dev/null || { emit '{"kind": "note", "failed": "nvidia-smi not found"}'; exit 1; }
query() { nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits 2>/dev/null | head -1; }
gpu=$(query name) total_mib=$(query memory.total | tr -dc 0-9) used_mib=$(query memory.used | tr -dc 0-9)
if [ -z "$total_mib" ] || [ "$total_mib" -eq 0 ]; then
  emit '{"kind": "note", "failed": "nvidia-smi gave no memory.total"}'
  exit 1
fi
# Each job's demand: share% of memory.total, a whole number of 2 MiB pages.
demand=$(( total_mib * share / 100 / 2 * 2 * 1048576 ))
packed=${PRESSURE_PACKED:-$(( (100 - 5) / share ))} # what fits beside the contexts (~0.5 GiB each on the H100)
[ "$packed" -ge 1 ] || packed=1
program() { echo "$bin/$1/mem_pressure"; }
missing=()
for build in original preempt preload; do [ -x "$(program $build)" ] || missing+=("$(program $build)"); done
[ -f "$lib/libpreempt_mem.so" ] || missing+=("$lib/libpreempt_mem.so")
if [ ${#missing[@]} -gt 0 ]; then
  emit "{\"kind\": \"note\", \"failed\": \"missing: ${missing[*]} (run bench/build_suite.sh)\"}"
  echo "pressure.sh: missing ${missing[*]}: run bench/build_suite.sh" >&2
  exit 1
fi
emit "{\"kind\": \"config\", \"gpu\": \"$gpu\", \"total_mib\": $total_mib, \"used_mib_before\": ${used_mib:-null}, \
\"jobs\": $jobs, \"share_pct\": $share, \"demand_bytes\": $demand, \"t_ms\": $t_ms, \"host_ms\": $host_ms, \
\"reps\": $reps, \"budget_s\": $budget_s, \"packed\": $packed, \"policies\": \"$policies\", \
\"overhead_calls\": $overhead_calls, \"overhead_size\": $overhead_size, \
\"cuda_device_max_connections\": \"$CUDA_DEVICE_MAX_CONNECTIONS\"}"

# Turns a run's files into JSON lines: assemble.py KIND TAG_JSON DIR COUNT BEGAN_S ENDED_S PROC_TIMEOUT
# KIND job: one "job" line per process and one "run" line; KIND overhead: one "overhead" line.
cat > "$work/assemble.py" <<'EOF'
import json, os, statistics, sys
kind, tag, run_dir, count = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
began, ended, proc_timeout = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
def tail(text):
    return " | ".join(text.strip().splitlines()[-3:])[-400:]
rows = []
for k in range(count):
    rc_text = read(os.path.join(run_dir, f"{k}.rc")).strip()
    rc = int(rc_text) if rc_text.lstrip("-").isdigit() else None
    result = None
    for line in reversed(read(os.path.join(run_dir, f"{k}.out")).splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except ValueError:
                pass
    row = dict(tag)
    row["kind"] = kind
    row["index"] = k
    row["rc"] = rc
    if result is not None:
        row.update(result)
    stderr = tail(read(os.path.join(run_dir, f"{k}.err")))
    if stderr:
        row["stderr"] = stderr
    if rc in (124, 137):
        row["outcome"] = "hang"
        row["failed"] = f"killed after {proc_timeout} s (hang)"
    elif result is None:
        row["outcome"] = "error"
        row["failed"] = f"exit {rc}, no JSON line"
    elif kind == "overhead":
        row["outcome"] = "ok" if rc == 0 else "error"
    elif result.get("oom"):
        row["outcome"] = "oom"
    elif rc == 0 and result.get("verified") is True:
        row["outcome"] = "ok"
    elif (result.get("wrong_words") or 0) > 0 or (result.get("sampled_wrong") or 0) > 0:
        row["outcome"] = "wrong"
    else:
        row["outcome"] = "error"
    rows.append(row)
for row in rows:
    print(json.dumps(row))
if kind == "job":
    run = dict(tag)
    run["kind"] = "run"
    run["began_s"], run["ended_s"] = began, ended
    run["makespan_s"] = round(ended - began, 4)
    run["jobs"] = count
    for outcome in ("ok", "oom", "wrong", "hang", "error"):
        run[outcome] = sum(1 for r in rows if r["outcome"] == outcome)
    starts = [r["start_s"] for r in rows if isinstance(r.get("start_s"), (int, float))]
    ends = [r["end_s"] for r in rows if isinstance(r.get("end_s"), (int, float))]
    run["jobs_span_s"] = round(max(ends) - min(starts), 4) if starts and ends else None
    admitted = [r.get("admitted") for r in rows if r["outcome"] != "hang"]
    run["admitted"] = sum(1 for a in admitted if a is True)
    waits = [r["alloc_us"] / 1e6 for r in rows if r["outcome"] == "ok" and isinstance(r.get("alloc_us"), (int, float))]
    run["alloc_s_median"] = round(statistics.median(waits), 4) if waits else None
    run["alloc_s_max"] = round(max(waits), 4) if waits else None
    print(json.dumps(run))
EOF

# launch DIR INDEX BUILD ENV_ASSIGNMENTS... -- ARGS...: one mem_pressure in the background under its timeout.
launch() {
  local dir=$1 index=$2 build=$3 envs=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout -s KILL "$proc_timeout" "$(program "$build")" "$@" > "$dir/$index.out" 2> "$dir/$index.err" &
  running+=($!)
}
# wait_all DIR FIRST_INDEX: waits for every launched process, writes INDEX.rc from FIRST_INDEX on.
wait_all() {
  local dir=$1 index=$2 pid
  for pid in "${running[@]}"; do
    wait "$pid" 2>/dev/null
    echo $? > "$dir/$index.rc"
    index=$((index + 1))
  done
  running=()
}

# The environment of a mode: admission settings and, for the preload build, the preloaded library.
mode_env() { # mode_env RUN BUILD POLICY(off|fifo|mmu|...|daemon) PRELOAD(0|1): prints one assignment per line
  local run=$1 build=$2 policy=$3 preload=$4
  if [ "$policy" = daemon ]; then
    echo "PREEMPT_MEM=on"
    echo "PREEMPT_DAEMON_SOCKET=$work/preemptd.sock"
    echo "PREEMPT_MEM_TIMEOUT_MS=$(( (proc_timeout > 10 ? proc_timeout - 5 : proc_timeout) * 1000 ))"
    return
  fi
  echo "PREEMPT_MEM_LEDGER=shared"
  if [ "$build" = preload ]; then
    echo "LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ "$preload" = 1 ] && echo "LD_PRELOAD=$lib/libpreempt_mem.so"
  fi
  if [ "$policy" = off ]; then
    echo "PREEMPT_MEM=off"
  else
    echo "PREEMPT_MEM=on"
    echo "PREEMPT_MEM_POLICY=$policy"
    echo "PREEMPT_MEM_SEGMENT=/preempt-mem-bench-$run"
    # Admission gives up (out of memory, said) before the process's own timeout kills it.
    echo "PREEMPT_MEM_TIMEOUT_MS=$(( (proc_timeout > 10 ? proc_timeout - 5 : proc_timeout) * 1000 ))"
  fi
}

last_run_s=0
# run_jobs RUN MODE REP BUILD POLICY PRELOAD BATCH EXTRA_ARGS...: the N jobs, BATCH at a time (waves), one
# "job" line each and a "run" line with the makespan (first launch to last exit).
run_jobs() {
  local run=$1 mode=$2 rep=$3 build=$4 policy=$5 preload=$6 batch=$7
  shift 7
  [[ "$mode" =~ $only ]] || return 0
  local dir=$work/$run k first=0 envs began ended started=$SECONDS
  mkdir -p "$dir"
  mapfile -t envs < <(mode_env "$run" "$build" "$policy" "$preload")
  began=$(now_s)
  for k in $(seq 0 $((jobs - 1))); do
    local args=("$k" "$demand" "$t_ms" --host-ms "$host_ms" "$@")
    [ -n "$passes" ] && args+=(--passes "$passes")
    launch "$dir" "$k" "$build" "${envs[@]}" -- "${args[@]}"
    if [ ${#running[@]} -ge "$batch" ]; then wait_all "$dir" "$first"; first=$((k + 1)); fi
  done
  wait_all "$dir" "$first"
  ended=$(now_s)
  rm -f "/dev/shm/preempt-mem-bench-$run"-*
  local tag="{\"run\": \"$run\", \"mode\": \"$mode\", \"rep\": $rep, \"build\": \"$build\", \"policy\": \"$policy\", \
\"preload\": $preload, \"batch\": $batch, \"args\": \"$*\", \"passes_given\": ${passes:-null}, \"proc_timeout_s\": $proc_timeout}"
  python3 "$work/assemble.py" job "$tag" "$dir" "$jobs" "$began" "$ended" "$proc_timeout" >> "$out" ||
    emit "{\"kind\": \"run\", \"run\": \"$run\", \"mode\": \"$mode\", \"rep\": $rep, \"failed\": \"could not assemble\"}"
  last_run_s=$((SECONDS - started))
  echo "pressure.sh: $run: $(tail -n 1 "$out" | grep -o '"makespan_s": [0-9.]*' | cut -d' ' -f2) s," \
    "$(tail -n 1 "$out" | grep -o '"ok": [0-9]*, "oom": [0-9]*, "wrong": [0-9]*, "hang": [0-9]*, "error": [0-9]*')" >&2
}

# overhead MODE BUILD POLICY PRELOAD: one --alloc-overhead process.
overhead() {
  local mode=$1 build=$2 policy=$3 preload=$4
  [[ "$mode" =~ $only ]] || return 0
  local dir=$work/$mode envs began
  mkdir -p "$dir"
  mapfile -t envs < <(mode_env "$mode" "$build" "$policy" "$preload")
  began=$(now_s)
  launch "$dir" 0 "$build" "${envs[@]}" -- --alloc-overhead "$overhead_calls" "$overhead_size"
  wait_all "$dir" 0
  rm -f "/dev/shm/preempt-mem-bench-$mode"-*
  python3 "$work/assemble.py" overhead "{\"mode\": \"$mode\", \"build\": \"$build\", \"admission\": \
\"$(case $policy in off) echo off ;; daemon) echo preemptd ;; *) echo on ;; esac)\", \"preload\": $preload}" "$dir" 1 "$began" "$(now_s)" \
    "$proc_timeout" >> "$out"
}

# preemptd for the daemon modes, on a socket of its own; the memory policy named. 0 once it listens.
start_daemon() {
  stop_daemon
  "$bin/preemptd" --foreground --socket "$work/preemptd.sock" --memory-policy "$1" --log "$work/preemptd.log" \
    2> "$work/preemptd.stderr" &
  daemon_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$work/preemptd.stderr" 2>/dev/null && return 0
    sleep 0.05
  done
  emit "{\"kind\": \"note\", \"failed\": \"preemptd did not start: $(tr -d '\"\\' < "$work/preemptd.stderr" | head -c 300)\"}"
  return 1
}
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  # How the daemon saw its GPU (NVML or readings), for the report.
  local nvml
  nvml=$(grep -o 'memory policy=[a-z-]* nvml=[^ ]*' "$work/preemptd.log" 2>/dev/null | head -1)
  [ -n "$nvml" ] && emit "{\"kind\": \"note\", \"daemon\": \"$nvml\"}"
  kill "$daemon_pid" 2>/dev/null
  wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}

# fits SECONDS_NEEDED: whether a run of about that long still ends within the budget.
fits() { [ $((SECONDS + $1)) -le "$budget_s" ]; }
skip() { emit "{\"kind\": \"note\", \"skipped\": \"$1\", \"why\": \"PRESSURE_BUDGET_S=$budget_s: $2\"}"
  echo "pressure.sh: skipped $1 ($2)" >&2; }

# 1. What one admitted allocation costs (about 1 s each).
proc_timeout=${PRESSURE_PROC_TIMEOUT:-30}
passes=""
overhead overhead_original_off original off 0
overhead overhead_preempt_on preempt fifo 0
overhead overhead_preempt_off preempt off 0
overhead overhead_preload_on preload fifo 1
overhead overhead_preload_off preload off 1
if [[ overhead_daemon_on =~ $only ]] && start_daemon fifo; then
  overhead overhead_daemon_on preempt daemon 0
  stop_daemon
fi

# 2. The baseline, one job at a time; its first job calibrates the passes every later job runs.
passes=${PRESSURE_PASSES:-}
if [ -z "$passes" ] && [[ original_serial =~ $only ]]; then
  # Calibration alone: job 0 of the serial run picks the passes (its line says how many).
  passes=""
  dir=$work/calibrate
  mkdir -p "$dir"
  began=$(now_s)
  launch "$dir" 0 original PREEMPT_MEM=off -- 0 "$demand" "$t_ms" --host-ms "$host_ms"
  wait_all "$dir" 0
  python3 "$work/assemble.py" job "{\"run\": \"calibrate\", \"mode\": \"calibrate\", \"rep\": 0, \"build\": \
\"original\", \"policy\": \"off\", \"preload\": 0, \"batch\": 1}" "$dir" 1 "$began" "$(now_s)" "$proc_timeout" \
    >> "$out"
  passes=$(grep '"mode": "calibrate"' "$out" | head -1 | grep -o '"passes": [0-9]*' | grep -o '[0-9]*$')
  if [ -z "$passes" ] || [ "$passes" -eq 0 ]; then
    passes=20
    emit '{"kind": "note", "note": "calibration failed: 20 passes"}'
  fi
fi
[ -n "$passes" ] || passes=20
serial_began=$SECONDS
run_jobs serial original_serial 1 original off 0 1
serial_s=$((SECONDS - serial_began))
# Every later process's limit: twice the serial makespan (an admitted run is at worst serial) + 10 s, 20..60 s.
if [ -z "${PRESSURE_PROC_TIMEOUT:-}" ]; then
  proc_timeout=$(( serial_s * 2 + 10 ))
  [ $proc_timeout -lt 20 ] && proc_timeout=20
  [ $proc_timeout -gt 60 ] && proc_timeout=60
fi
estimate=$(( serial_s > 0 ? serial_s : 10 )) # a concurrent run's length until one was measured

# 3. All at once, each mode; the first repetition also runs the once-only modes.
concurrent() { # concurrent REP MODE...: each mode once, if it fits the budget
  local rep=$1 mode policy
  shift
  for mode in "$@"; do
    [[ "$mode" =~ $only ]] || continue
    if ! fits "$estimate"; then skip "${mode}_$rep" "~$estimate s left to run, $((budget_s - SECONDS)) s left"; continue; fi
    case $mode in
      original_concurrent) run_jobs "${mode}_$rep" "$mode" "$rep" original off 0 "$jobs" ;;
      original_packed) run_jobs "${mode}_$rep" "$mode" "$rep" original off 0 "$packed" ;;
      preempt_budget) run_jobs "${mode}_$rep" "$mode" "$rep" preempt fifo 0 "$jobs" --budget --pieces 4 ;;
      daemon_*) if start_daemon "${mode#daemon_}"; then
          run_jobs "${mode}_$rep" "$mode" "$rep" preempt daemon 0 "$jobs"
          stop_daemon
        fi ;;
      preload_*) run_jobs "${mode}_$rep" "$mode" "$rep" preload "${mode#preload_}" 1 "$jobs" ;;
      preempt_*) run_jobs "${mode}_$rep" "$mode" "$rep" preempt "${mode#preempt_}" 0 "$jobs" ;;
    esac
    [ "$last_run_s" -gt "$estimate" ] && estimate=$last_run_s
  done
}
first_policy=${policies%% *}
other_policies=()
for policy in $policies; do [ "$policy" = "$first_policy" ] || other_policies+=("preempt_$policy"); done
# The admitted modes first: when time runs short, what is skipped is a repetition of the baseline.
repeated=("preempt_$first_policy" "preload_$first_policy" "daemon_$first_policy" preempt_budget original_concurrent)
concurrent 1 "${repeated[@]}"
concurrent 1 "${other_policies[@]}" original_packed
for rep in $(seq 2 "$reps"); do concurrent "$rep" "${repeated[@]}"; done
emit "{\"kind\": \"note\", \"note\": \"pressure.sh took $SECONDS s\"}"
echo "pressure.sh: all runs took $SECONDS s" >&2
