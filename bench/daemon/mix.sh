#!/usr/bin/env bash
# mix.sh: on the GPU machine, under MPS or time-slicing (MIX_SHARING), many processes sharing the GPU (issue 4), each one program of mix_bench:
#  a. EffiSha §8: 11 programs (Table 3's standalone times and order) start 3 ms apart; priorities "random" (the
#     paper's, x2/3 rounded down to fit 0..20, order and ties kept), "group" and "sjf" (the paper's columns); each
#     with original builds (no daemon), converted builds without a daemon, and converted builds under preemptd
#     --policy hpf, piv and dprr. Every program's standalone time, each build alone.
#  b. FLEP §6.3.1, equal priority: a 20 ms kernel runs, a 2 ms one arrives 3 ms later, same priority; original
#     builds, converted builds without a daemon, converted builds under preemptd --policy hpf; MIX_PAIR_REPS times.
# One JSON line per run (raw start/end times; bench/daemon/report_mix.py computes NTT, ANTT, STP, makespans).
# Usage: bench/daemon/mix.sh BIN_DIR OUT_JSONL   (BIN_DIR = build/bench from bench/build_suite.sh)
#        bench/daemon/mix.sh --dry-run [BIN_DIR] OUT_JSONL  (fake programs, no MPS, no GPU: checks this script and
#          the report end to end; never a measurement; every line of its output says "dry_run": true. BIN_DIR's real
#          preemptd is started and stopped for each run when given, else a fake that only listens)
# Environment: MIX_REPS (EffiSha rounds, default 2), MIX_PAIR_REPS (default 10), MIX_ONLY=REGEX (runs whose name
# matches, names as in the JSON's "run"), MIX_LOG_DIR (keeps preemptd's decision logs, each process's stderr,
# preemptctl's list of a run not ready after 10 s, and under MPS the MPS server's logs in mps-log/),
# MIX_PROC_TIMEOUT (seconds one process may take, default 90), MIX_SHARING (mps, the default: the runs under an
# MPS server this script starts; timeslice: without MPS, the driver's time-slicing between processes, EffiSha §8's
# setting on its K40m).
set -uo pipefail
# Every launch converted (docs/preemption.md, "Launches as written"); what eviction needs is asked of CUDA as a user's
# process would: eager loading under preemptd, nothing without it (PREEMPT_EVICT_READY=auto, whatever the caller
# set: 1 asked for 32 hardware queues, and under MPS only 3 processes could start; "What a process asks of CUDA").
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=auto
dry_run=0
if [ "${1:-}" = --dry-run ]; then dry_run=1; shift; [ $# -eq 1 ] && set -- none "$1"; fi
[ $# -eq 2 ] || { echo "usage: mix.sh BIN_DIR OUT_JSONL | mix.sh --dry-run [BIN_DIR] OUT_JSONL" >&2; exit 2; }
bin=$1 out=$2
sharing=${MIX_SHARING:-mps}
case $sharing in mps|timeslice) ;; *) echo "mix.sh: MIX_SHARING must be mps or timeslice, not '$sharing'" >&2; exit 2 ;; esac
reps=${MIX_REPS:-2} pair_reps=${MIX_PAIR_REPS:-10} logs=${MIX_LOG_DIR:-} proc_timeout=${MIX_PROC_TIMEOUT:-90}
[ -z "$logs" ] || mkdir -p "$logs" || { echo "mix.sh: cannot make MIX_LOG_DIR $logs" >&2; exit 2; }
work=$(mktemp -d)
daemon_pid=""
mps_dir=""
running=() # the timeout processes of the programs now running: each passes SIGTERM on to its program
cleanup() {
  for pid in "${running[@]}"; do kill "$pid" 2>/dev/null; done
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  [ -n "$mps_dir" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe nvidia-cuda-mps-control >/dev/null 2>&1
  # The MPS control daemon's and server's logs (why a client was refused), with preemptd's.
  [ -n "$mps_dir" ] && [ -n "$logs" ] && cp -r "$mps_dir/log" "$logs/mps-log" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "mix.sh: stopped by a signal" >&2; exit 143' TERM INT
export PREEMPT_DAEMON_SOCKET=$work/preemptd.sock
: > "$out" || { echo "mix.sh: cannot write $out" >&2; exit 2; }
# emit JSON: appends one line to OUT_JSONL; a dry run's lines say so, each one, even if the run is cut short.
# Every line says which sharing it ran under.
emit() {
  local line="{\"sharing\": \"$sharing\", ${1#\{}"
  if [ $dry_run = 1 ]; then echo "{\"dry_run\": true, ${line#\{}" >> "$out"; else echo "$line" >> "$out"; fi
}

# EffiSha Table 3, in its order; run times in us (the original build's standalone time, mix_bench's scale).
names=(NeuralNet Sort Reduction MD5Hash MD Scan Triad Stencil2D FFT Spmv BFS)
run_times=(14250 5460 2060 3290 13800 1410 1220 28400 1170 4570 5990)
# shellcheck disable=SC2034 # read through specs()'s nameref
prio_random=(1 11 11 14 14 4 2 13 16 4 0) # Table 3's 2 17 17 22 22 7 3 20 24 7 1, x2/3 floored
# shellcheck disable=SC2034
prio_group=(2 2 2 5 5 5 8 8 11 11 11)
# shellcheck disable=SC2034
prio_sjf=(1 4 7 6 2 8 9 0 10 5 3)
stagger_us=3000
pair_long_us=20000 pair_short_us=2000 pair_delay_us=3000 pair_priority=0

if [ $dry_run = 1 ]; then
  bin=$work/fake
  mkdir -p "$bin/original" "$bin/preempt"
  # A fake mix_bench: the real one's files and JSON, times made up (no daemon: everything 2-3x slower; under a
  # daemon: the lower the priority, the slower). MIX_FAKE_FAIL=RUN_US exits 1, MIX_FAKE_HANG=RUN_US hangs.
  cat > "$bin/fake_mix_bench.py" <<'EOF'
import json, os, random, sys, time
def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1000
args = sys.argv[1:]
opts = dict(zip(args[3::2], args[4::2]))
build = os.environ["MIX_FAKE_BUILD"]
daemon = build == "preempt" and os.environ.get("PREEMPT_DAEMON") != "off"
def out(path, text):
    if path == "-":
        print(text)
    else:
        with open(path, "w") as f:
            f.write(text + "\n")
if args[0] == "alone":
    sizes = []
    for run in map(float, args[1].split(",")):
        t = run * (0.7 if build == "preempt" else 1.0) + (130 if daemon else 0)
        times = [t * (1 + 0.01 * k) for k in range(int(opts.get("--repeat", 3)))]
        sizes.append({"run_us_asked": run, "blocks": int(run * 13.2), "first_us": times[0],
                      "median_us": sorted(times)[len(times) // 2], "min_us": min(times),
                      "wrong_blocks_sampled": 0, "times_us": times})
    out(args[2], json.dumps({"iterations": 20000, "repeat": len(times), "sizes": sizes}))
    sys.exit(0)
run, start_file, path = float(args[0]), args[1], args[2]
if os.environ.get("MIX_FAKE_FAIL") == args[0]:
    print("fake mix_bench: asked to fail", file=sys.stderr); sys.exit(1)
if os.environ.get("MIX_FAKE_HANG") == args[0]:
    time.sleep(3600)
if "--ready" in opts:
    open(opts["--ready"], "w").close()
while not os.path.exists(start_file):
    time.sleep(0.001)
seen = now()
with open(start_file) as f:
    base = float(f.read().strip() or seen)
delay = float(opts.get("--delay-us", 0))
start = base + delay + 5
prio = int(os.environ.get("PREEMPT_PRIORITY", "0"))
rng = random.Random(int(run) * 31 + int(delay))
slow = (1 + max(0, 16 - prio) / 4 if daemon else 2.5) * (0.7 if build == "preempt" else 1.0) * rng.uniform(0.95, 1.05)
end = start + run * slow
out(path, json.dumps({"run_us_asked": run, "blocks": int(run * 13.2), "iterations": 20000, "delay_us": delay,
                      "start_agreed": True, "scheduled_us": base + delay, "start_us": start, "end_us": end,
                      "turnaround_us": end - start, "late_us": 5.0, "t0_margin_us": base - seen,
                      "priority_env": os.environ.get("PREEMPT_PRIORITY"), "pid": os.getpid(),
                      "sampled_blocks": 32, "wrong_blocks_sampled": 0}))
EOF
  for build in original preempt; do
    printf '#!/bin/sh\nMIX_FAKE_BUILD=%s exec python3 "%s" "$@"\n' $build "$bin/fake_mix_bench.py" > "$bin/$build/mix_bench"
    chmod +x "$bin/$build/mix_bench"
  done
  # A fake preemptd: listens on --socket until SIGTERM.
  cat > "$bin/preemptd" <<'EOF'
#!/usr/bin/env python3
import signal, socket, sys, time
path = sys.argv[sys.argv.index("--socket") + 1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen()
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    time.sleep(1)
EOF
  chmod +x "$bin/preemptd"
  [ "$1" != none ] && [ -x "$1/preemptd" ] && cp "$1/preemptd" "$bin/preemptd"
fi
for program in "$bin/original/mix_bench" "$bin/preempt/mix_bench" "$bin/preemptd"; do
  [ -x "$program" ] || { echo "mix.sh: $program missing: run bench/build_suite.sh" >&2
    emit "{\"run\": \"mix\", \"failed\": \"$program missing\"}"; exit 1; }
done

# Turns one run's files into its JSON line: assemble.py KIND RUN_DIR TAG_JSON FAILED SPEC...
cat > "$work/assemble.py" <<'EOF'
import json, os, sys
kind, run_dir, tag, failed = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
line = dict(tag)
def tail(path):
    try:
        with open(path, errors="replace") as f:
            text = f.read().strip().splitlines()
        return " | ".join(text[-3:])[-400:] or None
    except OSError:
        return None
def load(path):
    try:
        with open(path) as f:
            return json.loads(f.read()), None
    except FileNotFoundError:
        return None, "no result file"
    except (OSError, ValueError) as error:
        return None, f"{type(error).__name__}: {error}"[:200]
problems = [failed] if failed else []
programs = []
for index, spec in enumerate(sys.argv[5:]):
    name, run_us, delay_us, priority = spec.split(":")
    entry = {"name": name, "run_us": float(run_us), "delay_us": float(delay_us), "priority": int(priority)}
    try:
        with open(os.path.join(run_dir, f"{index}.rc")) as f:
            entry["rc"] = int(f.read().strip())
    except (OSError, ValueError):
        entry["rc"] = None
    result, error = load(os.path.join(run_dir, f"{index}.json"))
    entry["result"] = result
    if kind == "alone" and isinstance(result, dict):
        entry["result"] = None
        for size in result.get("sizes", []):
            if abs(size.get("run_us_asked", -1) - float(run_us)) < 0.5:
                entry["result"] = size
    stderr = tail(os.path.join(run_dir, f"{index}.err"))
    if stderr:
        entry["stderr"] = stderr
    if entry["rc"] != 0 or entry["result"] is None:
        why = ("timed out (killed)" if entry["rc"] in (124, 137) else f"exit {entry['rc']}") if entry["rc"] else ""
        if entry["result"] is None:
            why = (why + ", " if why else "") + (error or "its size missing from the result")
        entry["error"] = why
        problems.append(f"{name}: {why}")
    elif (entry["result"].get("wrong_blocks_sampled") or 0) > 0:
        problems.append(f"{name}: {entry['result']['wrong_blocks_sampled']} wrong blocks")
    programs.append(entry)
line["programs"] = programs
line["failed"] = "; ".join(problems)[:1000] if problems else None
print(json.dumps(line))
EOF

now_us() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'; }

# start_daemon POLICY DIR: preemptd on this script's socket; its decision log only when MIX_LOG_DIR asks for it.
start_daemon() {
  local policy=$1 dir=$2
  local log=()
  [ -n "$logs" ] && log=(--log "$dir/daemon.log")
  rm -f "$PREEMPT_DAEMON_SOCKET"
  "$bin/preemptd" --foreground --socket "$PREEMPT_DAEMON_SOCKET" --policy "$policy" "${log[@]}" \
    2> "$dir/daemon.err" &
  daemon_pid=$!
  for _ in $(seq 1 250); do [ -S "$PREEMPT_DAEMON_SOCKET" ] && return 0; sleep 0.02; done
  echo "mix.sh: preemptd --policy $policy did not start:" >&2; head -5 "$dir/daemon.err" >&2
  stop_daemon
  return 1
}
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  kill "$daemon_pid" 2>/dev/null
  for _ in $(seq 1 250); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.02; done
  kill -0 "$daemon_pid" 2>/dev/null && { echo "mix.sh: preemptd ignored SIGTERM for 5 s: killed" >&2; kill -KILL "$daemon_pid"; }
  wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# stop_run RUN DIR: stops the run's daemon and keeps its decision log (LOG_DIR).
stop_run() {
  stop_daemon
  [ -n "$logs" ] && [ -f "$2/daemon.log" ] && cp "$2/daemon.log" "$logs/mix_$1.log"
  [ -n "$logs" ] && for f in "$2"/*.err; do [ -s "$f" ] && cp "$f" "$logs/mix_$1.$(basename "$f")"; done
  return 0
}
# report_run RUN KIND DIR TAG_JSON FAILED BEGAN SPEC...: assembles the run's JSON line (assemble.py KIND), emits it.
report_run() {
  local run=$1 kind=$2 dir=$3 tag=$4 failed=$5 began=$6 line
  shift 6
  line=$(python3 "$work/assemble.py" "$kind" "$dir" "${tag%\}}, \"wall_ms\": $(ms_since "$began")}" "$failed" "$@") ||
    line="{\"run\": \"$run\", \"failed\": \"mix.sh could not assemble the results\"}"
  emit "$line"
  echo "mix.sh: $run: $(ms_since "$began") ms${failed:+, failed: $failed}" >&2
}

# run_group RUN TAG_JSON BUILD POLICY(none|hpf|piv|dprr) SPEC...: SPEC = NAME:RUN_US:DELAY_US:PRIORITY. Starts one
# mix_bench per SPEC, waits until every one has warmed up, writes the start file (T0 = now + 200 ms), waits for all,
# and appends one JSON line to OUT_JSONL: TAG_JSON's fields plus "programs" (each with its own JSON) and "failed".
run_group() {
  local run=$1 tag=$2 build=$3 policy=$4
  shift 4
  [[ "$run" =~ ${MIX_ONLY:-.} ]] || return 0
  local dir=$work/$run failed="" pids=() index=0 spec run_us delay priority specs_run=("$@")
  mkdir -p "$dir"
  local began; began=$(date +%s%N)
  if [ "$policy" != none ] && ! start_daemon "$policy" "$dir"; then
    failed="preemptd --policy $policy did not start: $(head -c 300 "$dir/daemon.err" | tr -d '"\\\n')"
  fi
  if [ -z "$failed" ]; then
    for spec in "$@"; do
      IFS=: read -r _ run_us delay priority <<< "$spec"
      local daemon_env=PREEMPT_DAEMON=on
      [ "$policy" = none ] && daemon_env=PREEMPT_DAEMON=off
      env PREEMPT_PRIORITY="$priority" "$daemon_env" timeout -s KILL "$proc_timeout" "$bin/$build/mix_bench" \
        "$run_us" "$dir/start" "$dir/$index.json" --delay-us "$delay" --ready "$dir/$index.ready" \
        > "$dir/$index.out" 2> "$dir/$index.err" &
      pids+=($!)
      running+=($!)
      index=$((index + 1))
    done
    # Every process warmed up (its ready file), or one ended without: then start the rest anyway and say so.
    local waited=0 ready k
    while :; do
      ready=0
      for k in "${!pids[@]}"; do
        if [ -e "$dir/$k.ready" ]; then ready=$((ready + 1))
        elif ! kill -0 "${pids[$k]}" 2>/dev/null; then failed="${specs_run[$k]%%:*} ended before it was ready"; break 2; fi
      done
      [ $ready -eq ${#pids[@]} ] && break
      # Not all ready after 10 s: what preemptd holds then, for the logs (a stalled run is otherwise killed silent).
      if [ $waited -eq 500 ] && [ -n "$logs" ] && [ "$policy" != none ] && [ -x "$bin/preemptctl" ]; then
        "$bin/preemptctl" --socket "$PREEMPT_DAEMON_SOCKET" list > "$logs/mix_$run.stalled.txt" 2>&1
      fi
      if [ $waited -ge $((proc_timeout * 50)) ]; then failed="not every program was ready after ${proc_timeout} s"; break; fi
      sleep 0.02; waited=$((waited + 1))
    done
    # The start: 200 ms from now, written whole (rename) so that no process reads half of it.
    echo $(( $(now_us) + 200000 )) > "$dir/start.tmp" && mv "$dir/start.tmp" "$dir/start"
    for k in "${!pids[@]}"; do
      wait "${pids[$k]}" 2>/dev/null
      echo $? > "$dir/$k.rc"
    done
    running=()
  fi
  stop_run "$run" "$dir"
  grep -v "^preemptd: listening on" "$dir/daemon.err" 2>/dev/null | head -5 | sed "s/^/mix.sh: $run: /" >&2
  for k in $(seq 0 $((index - 1))); do
    [ -s "$dir/$k.err" ] && { echo "mix.sh: $run, ${specs_run[$k]%%:*} said:" >&2; head -3 "$dir/$k.err" >&2; }
  done
  report_run "$run" mix "$dir" "${tag%\}}, \"run\": \"$run\", \"build\": \"$build\", \"policy\": \"$policy\"}" "$failed" "$began" "$@"
}

# run_alone RUN BUILD POLICY SPEC...: one process runs every SPEC's kernel alone, 5 times each, back to back.
run_alone() {
  local run=$1 build=$2 policy=$3
  shift 3
  [[ "$run" =~ ${MIX_ONLY:-.} ]] || return 0
  local dir=$work/$run failed="" sizes="" spec run_us k=0
  mkdir -p "$dir"
  local began; began=$(date +%s%N)
  for spec in "$@"; do IFS=: read -r _ run_us _ <<< "$spec"; sizes+="${sizes:+,}$run_us"; done
  if [ "$policy" != none ] && ! start_daemon "$policy" "$dir"; then
    failed="preemptd --policy $policy did not start"
  else
    local daemon_env=PREEMPT_DAEMON=on
    [ "$policy" = none ] && daemon_env=PREEMPT_DAEMON=off
    env "$daemon_env" timeout -s KILL "$proc_timeout" "$bin/$build/mix_bench" alone "$sizes" "$dir/all.json" \
      --repeat 5 > "$dir/all.out" 2> "$dir/all.err" &
    running=($!)
    wait $! 2>/dev/null
    local rc=$?
    running=()
    # assemble.py reads one file per program: every program's entry is its size in the one result.
    for spec in "$@"; do
      cp "$dir/all.json" "$dir/$k.json" 2>/dev/null; echo $rc > "$dir/$k.rc"; cp "$dir/all.err" "$dir/$k.err"; k=$((k + 1))
    done
  fi
  stop_run "$run" "$dir"
  [ -s "$dir/all.err" ] && { echo "mix.sh: $run said:" >&2; head -3 "$dir/all.err" >&2; }
  report_run "$run" alone "$dir" "{\"scenario\": \"standalone\", \"run\": \"$run\", \"build\": \"$build\", \"policy\": \"$policy\"}" "$failed" "$began" "$@"
}

# specs SCHEME: the 11 programs' SPECs with that priority column.
specs() {
  local -n prio=prio_$1
  local i
  for i in "${!names[@]}"; do echo "${names[$i]}:${run_times[$i]}:$((i * stagger_us)):${prio[$i]}"; done
}

if [ $dry_run = 1 ]; then
  echo "mix.sh: DRY RUN: fake programs, no GPU, no MPS; the numbers mean nothing" >&2
  sharing_ok=1
elif [ "$sharing" = timeslice ]; then
  echo "mix.sh: no MPS: the processes share the GPU by the driver's time-slicing" >&2
  sharing_ok=1
elif ! command -v nvidia-cuda-mps-control >/dev/null; then
  emit '{"run": "mps", "failed": "nvidia-cuda-mps-control not found"}'
  sharing_ok=0
else
  mps_dir=$work/mps
  mkdir -p "$mps_dir/pipe" "$mps_dir/log"
  export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
  if timeout -s KILL 30 nvidia-cuda-mps-control -d; then
    sharing_ok=1
  else
    emit '{"run": "mps", "failed": "nvidia-cuda-mps-control -d failed"}'
    sharing_ok=0
  fi
fi

if [ $sharing_ok = 1 ]; then
  began=$SECONDS
  pair=("long:$pair_long_us:0:$pair_priority" "short:$pair_short_us:$pair_delay_us:$pair_priority")
  mapfile -t all < <(specs group)
  # Standalone: every kernel alone, each build (the converted one also under preemptd, its per-launch cost).
  run_alone alone_original original none "${all[@]}" "${pair[@]}"
  run_alone alone_preempt preempt none "${all[@]}" "${pair[@]}"
  run_alone alone_preempt_hpf preempt hpf "${all[@]}" "${pair[@]}"
  # a. EffiSha §8: rounds alternate the settings so that drift hits them alike.
  for rep in $(seq 1 "$reps"); do
    for scheme in random group sjf; do
      mapfile -t programs < <(specs $scheme)
      for setting in original preempt hpf piv dprr; do
        build=preempt policy=$setting
        case $setting in original) build=original policy=none ;; preempt) policy=none ;; esac
        run_group "effisha_${scheme}_${setting}_$rep" \
          "{\"scenario\": \"effisha\", \"scheme\": \"$scheme\", \"setting\": \"$setting\", \"rep\": $rep}" \
          "$build" "$policy" "${programs[@]}"
      done
    done
  done
  # b. FLEP §6.3.1, equal priority.
  for rep in $(seq 1 "$pair_reps"); do
    for setting in original preempt hpf; do
      build=preempt policy=$setting
      case $setting in original) build=original policy=none ;; preempt) policy=none ;; esac
      run_group "pair_${setting}_$rep" "{\"scenario\": \"pair\", \"setting\": \"$setting\", \"rep\": $rep}" \
        "$build" "$policy" "${pair[@]}"
    done
  done
  echo "mix.sh: all runs took $((SECONDS - began)) s" >&2
fi
[ $sharing_ok = 1 ]
