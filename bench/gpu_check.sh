#!/usr/bin/env bash
# gpu_check.sh: on the GPU machine, runs the correctness suite (original vs converted build) and times both.
# One call checks and times everything (issue: Foundation; FLEP §6 / EffiSha §8 style overhead table).
# Builds nothing: run bench/build_suite.sh on a machine with clang-22 first and carry build/.
# Usage: bench/gpu_check.sh [RESULTS_DIR]   (default bench/results; writes <date>-<gpu>.json and .md)
#        GPU_CHECK_ONLY=memory bench/gpu_check.sh [RESULTS_DIR]   (only the memory-admission step, ~100 s: writes
#          <date>-<gpu>-memory.json, .md and .jsonl; for debugging it in one short device call)
#        GPU_CHECK_PART=1|2 bench/gpu_check.sh [RESULTS_DIR]   (half of it, for a device call of at most 10 minutes,
#          which the whole no longer fits: 1 the suite, its stress runs, preempt_bench, the eviction pieces and the
#          launch shapes; 2 the pairs, memory admission, in-task checks and the mixes, into <date>-<gpu>-part2.md and
#          .json. Each ends with its own "N passed, N failed".)
#        GPU_CHECK_PART=3 bench/gpu_check.sh [RESULTS_DIR]   (the node benchmark alone, about 3 minutes: 1, 8, 32 and
#          64 processes started together without and with MPS, original builds against converted ones without and
#          under preemptd (bench/node/start.py), into <date>-<gpu>-part3.md, .json and .node.jsonl; unset runs parts
#          1 and 2 only)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PREEMPT_BUILD_DIR:-$root/build}/bench
results=${1:-$root/bench/results}
reps=${PREEMPT_BENCH_REPS:-7}
rounds=${PREEMPT_BENCH_ROUNDS:-3}
max_rounds=${PREEMPT_BENCH_MAX_ROUNDS:-9}
[ -f "$bin/kernels.txt" ] || { echo "gpu_check.sh: $bin/kernels.txt missing: run bench/build_suite.sh first" >&2; exit 1; }
command -v nvidia-smi >/dev/null || { echo "gpu_check.sh: no NVIDIA GPU here (nvidia-smi missing)" >&2; exit 1; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
work=$(mktemp -d)
mkdir -p "$results"
# budget_left CAP RESERVE: seconds a step may take: CAP, or less when the script's GPU_CHECK_BUDGET_S (default
# 560 s) minus what has run minus RESERVE (kept for the steps after it) is less; may be 0 or negative.
budget_left() { local left=$(( ${GPU_CHECK_BUDGET_S:-560} - SECONDS - $2 )); [ $left -lt $1 ] && echo $left || echo $1; }
# Each step's count, as its tool prints it last. count_line LABEL FILE: FILE's last line "LABEL: P passed, F failed"
# ("P passed, F failed" for an empty LABEL), or nothing. count_of LINE: "P F" of such a line; "0 1" for none (a
# step that printed no count failed).
count_line() { grep -E "^${1:+$1: }[0-9]+ passed, [0-9]+ failed\$" "$2" 2>/dev/null | tail -1; }
count_of() { local line=${1#*: }; [ -n "$1" ] || line="0 passed, 1 failed"; set -- $line; echo "$1 $3"; }
# Memory admission under pressure (schedGPU §7.2, Fig. 10; bench/memory/pressure.sh): 8 processes demanding 2x the
# GPU's memory, one at a time, all at once without admission (OOMs expected, counted), all at once admitted (plugin
# build, LD_PRELOAD, explicit budget); and what one admitted cudaMalloc costs. ~80 s on the H100; at most
# GPU_CHECK_MEMORY_S (100) and what budget_left allows, RESERVE kept. Its checks (report_memory.py: every job of
# every admitted mode verified, none out of memory, none hung) count into the script's last "N passed, N failed".
# memory_step MD JSON RAW RESERVE: appends the section to MD, "memory_pressure" to JSON, pressure.sh's lines to RAW.
memory_passed=0 memory_failed=0
memory_step() {
  local md=$1 json=$2 raw=$3 limit summary
  limit=$(budget_left "${GPU_CHECK_MEMORY_S:-100}" "$4")
  if [ "$limit" -lt 30 ]; then
    echo "gpu_check.sh: no time left for the memory step ($limit s)" >&2
    printf '\n## Memory admission under pressure\n\nFAILED: not run, %s s left of the budget\n' "$limit" >> "$md"
    memory_failed=1
    return
  fi
  PRESSURE_BUDGET_S=$((limit - 15)) timeout -k 10 "$limit" bash "$root/bench/memory/pressure.sh" "$bin" \
    "$work/memory.jsonl" ||
    echo "gpu_check.sh: pressure.sh failed or ran out of time; the report shows what it measured" >&2
  cp "$work/memory.jsonl" "$raw" 2>/dev/null
  python3 "$root/bench/memory/report_memory.py" "$work/memory.jsonl" "$json" "$md" > "$work/memory_report.txt"
  summary=$(count_line memory "$work/memory_report.txt")
  read -r memory_passed memory_failed <<< "$(count_of "$summary")"
  [ -n "$summary" ] || { echo "gpu_check.sh: report_memory.py failed:" >&2; tail -5 "$work/memory_report.txt" >&2; }
}
# own_report SUFFIX TITLE KEY JSON_VALUE: a run of part of the script starts its own report, <date>-<gpu>-SUFFIX.md
# headed "TITLE, <gpu>, <date>", and its .json ({"date", "gpu", KEY: JSON_VALUE}); sets md and json_out.
own_report() {
  local stamp
  stamp=$(date +%F)
  md=$results/$stamp-${gpu//[ \/]/-}-$1.md
  json_out=${md%.md}.json
  echo "# $2, $gpu, $stamp" > "$md"
  python3 -c 'import json, sys
json.dump({"date": sys.argv[1], "gpu": sys.argv[2], sys.argv[4]: json.loads(sys.argv[5])}, open(sys.argv[3], "w"))' \
    "$stamp" "$gpu" "$json_out" "$3" "$4"
}
case ${GPU_CHECK_ONLY:-} in
  "") ;;
  memory)
    own_report memory "Memory admission only (GPU_CHECK_ONLY=memory)" only '"memory"'
    memory_step "$md" "$json_out" "${md%.md}.jsonl" 0
    cat "$md"
    rm -rf "$work"
    echo "$memory_passed passed, $memory_failed failed"
    [ "$memory_failed" -eq 0 ]
    exit ;;
  *) echo "gpu_check.sh: GPU_CHECK_ONLY='$GPU_CHECK_ONLY': only 'memory' is known" >&2; rm -rf "$work"; exit 2 ;;
esac
part=${GPU_CHECK_PART:-all}
case $part in
  all | 1 | 2 | 3) ;;
  *) echo "gpu_check.sh: GPU_CHECK_PART='$part': 1, 2, 3 or unset (1 and 2)" >&2; rm -rf "$work"; exit 2 ;;
esac
# Part 3, a shared node (issue 40): does every converted process start, finish and check, as many as the originals
# (MPS serves at most 48 clients), and how long do they take to start? Its "node: N passed, N failed" is the count.
if [ "$part" = 3 ]; then
  own_report part3 "gpu_check.sh, part 3: a shared node (GPU_CHECK_PART=3)" part 3
  node_limit=$(budget_left "${GPU_CHECK_NODE_S:-420}" 0)
  NODE_BUDGET_S=$((node_limit - 60)) timeout -k 10 "$node_limit" python3 "$root/bench/node/start.py" "$bin" \
    "${md%.md}.node.jsonl" > "$work/node.txt" 2>&1 ||
    echo "gpu_check.sh: start.py failed or ran out of time; the report shows what it measured" >&2
  node_count=$(count_line node "$work/node.txt")
  {
    echo
    echo "## Processes started together (bench/node/start.py; wall time from the first start to the last exit)"
    echo
    echo '```'
    grep -E '^(timeslice|mps) n=' "$work/node.txt"
    echo '```'
    echo
    echo "Errors of processes that did not pass, by run:"
    echo
    python3 -c '
import json, sys
for text in open(sys.argv[1]):
    line = json.loads(text)
    if line.get("errors") or "skipped" in line or "failed_setup" in line:
        print("- %s %s n=%s: %s" % (line.get("mode"), line.get("setup", ""), line.get("n", ""),
                                    line.get("errors") or line.get("skipped") or line.get("failed_setup")))
' "${md%.md}.node.jsonl" 2>/dev/null
    echo
    echo "${node_count:-FAILED: start.py printed no count: $(tail -2 "$work/node.txt" | tr '\n' ' ')}"
  } >> "$md"
  cat "$md"
  rm -rf "$work"
  read -r node_passed node_failed <<< "$(count_of "$node_count")"
  echo "$node_passed passed, $node_failed failed"
  [ "$node_failed" = 0 ]
  exit
fi
status=0
suite_count="" suite_passed=0 suite_failed=0 shared_passed=0 shared_failed=0 forms_passed=0 forms_failed=0
pairs_passed=0 pairs_failed=0 intask_passed=0 intask_failed=0
if [ "$part" != 2 ]; then # part 1: the suite through the launch shapes (to the matching "fi # part 1")
raw=$work/raw.txt
: > "$raw"
# undecided NAME: true while NAME's timed rounds so far leave its ratio open: both builds' medians more than 3% apart,
# or either build's slowest round more than 5% above its fastest. Failed rounds and the README sample never are.
undecided() {
  awk -v name="$1" '
    $1 == name && $4 == "ok" && $5 != "nan" { t[$2, ++n[$2]] = $5 }
    function median(b,   i, j, k, x, m) {
      m = n[b]; for (i = 1; i <= m; i++) x[i] = t[b, i]
      for (i = 2; i <= m; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { k = x[j]; x[j] = x[j - 1]; x[j - 1] = k }
      lo[b] = x[1]; hi[b] = x[m]
      return m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
    }
    END {
      if (!n["original"] || !n["preempt"]) exit 1
      a = median("original"); b = median("preempt")
      if (a <= 0 || b <= 0) exit 1
      exit !(b / a > 1.03 || a / b > 1.03 || hi["original"] > 1.05 * lo["original"] || hi["preempt"] > 1.05 * lo["preempt"])
    }' "$raw"
}
while read -r name converted refused; do
  converted=${converted#converted=}; refused=${refused#refused=}
  # Rounds run both builds, each first in every other round, so that drift hits both alike. A program still undecided after
  # the first rounds (medians more than 3% apart, or either build spread over 5%: copy_after_launch and launch_storm
  # have per-process modes 10-30% apart in both builds) gets more, up to PREEMPT_BENCH_MAX_ROUNDS, while the budget
  # keeps GPU_CHECK_EXTRA_RESERVE_S (400) for the steps after the suite (at 300 and a 515 s budget the
  # memory and in-task steps found no time left, 60329b1).
  round=0
  while :; do
    round=$((round + 1))
    if [ "$round" -gt "$rounds" ]; then
      [ "$round" -le "$max_rounds" ] && [ "$(budget_left 1 "${GPU_CHECK_EXTRA_RESERVE_S:-400}")" -ge 1 ] &&
        undecided "$name" || break
    fi
    # The order turns from round to round: neither build always follows the other's process.
    builds="original preempt"
    [ $((round % 2)) -eq 0 ] && builds="preempt original"
    for build in $builds; do
      output=$work/$name.$build.out
      if [ "$name" = sample ]; then
        # The README demo prints its checksums instead of writing a file.
        if "$bin/$build/$name" > "$output" 2>"$work/$name.$build.err"; then status=ok; else status="exit$?"; fi
        log=""
      elif log=$("$bin/$build/$name" "$output" "$reps" 2>"$work/$name.$build.err"); then status=ok; else status="exit$?"; fi
      timing=$(echo "$log" | grep -o 'time_ms=[0-9.]*' | cut -d= -f2)
      tolerance=$(echo "$log" | grep -o 'tolerance=[0-9.e-]*' | cut -d= -f2)
      echo "$name $build $round $status ${timing:-nan} ${tolerance:-0} $converted $refused $output $work/$name.$build.err" >> "$raw"
    done
  done
  # Stress: the converted build again, evicted (temporal or a random half of
  # the SMs) and resumed every 0.2-2 ms by the runtime itself (PREEMPT_STRESS).
  # PREEMPT_LONG_US=0 converts every launch, short ones too, so that every
  # converted form is checked against the original (by default short launches
  # run as written; the timed rounds above run the default).
  output=$work/$name.stress.out
  if [ "$name" = sample ]; then
    if PREEMPT_LONG_US=0 PREEMPT_STRESS=1 timeout -s KILL 120 "$bin/preempt/$name" > "$output" 2>"$work/$name.stress.err"; then status=ok; else status="exit$?"; fi
  elif PREEMPT_LONG_US=0 PREEMPT_STRESS=1 timeout -s KILL 120 "$bin/preempt/$name" "$output" "$reps" > /dev/null 2>"$work/$name.stress.err"; then status=ok; else status="exit$?"; fi
  evictions=$(grep -o 'stress: [0-9]* evictions' "$work/$name.stress.err" | grep -o '[0-9]*' || echo 0)
  echo "$name stress 1 $status nan ${tolerance:-0} $converted $refused $output $work/$name.stress.err ${evictions:-0}" >> "$raw"
  # Again with every converted launch in the drain form (PREEMPT_FORM=drain, docs/preemption.md): its gate,
  # the stream hold and the relaunch over the bitmap of undone blocks, whatever form the runtime would choose;
  # and with prompt yield checks in every persistent grid (PREEMPT_PROMPT=on: kernels without a drain form, and
  # every relaunch), which auto takes only for long tasks.
  output=$work/$name.stress_drain.out
  if [ "$name" = sample ]; then
    if PREEMPT_FORM=drain PREEMPT_PROMPT=on PREEMPT_LONG_US=0 PREEMPT_STRESS=1 timeout -s KILL 120 "$bin/preempt/$name" > "$output" 2>"$work/$name.stress_drain.err"; then
      status=ok; else status="exit$?"; fi
  elif PREEMPT_FORM=drain PREEMPT_PROMPT=on PREEMPT_LONG_US=0 PREEMPT_STRESS=1 timeout -s KILL 120 "$bin/preempt/$name" "$output" "$reps" > /dev/null \
    2>"$work/$name.stress_drain.err"; then status=ok; else status="exit$?"; fi
  evictions=$(grep -o 'stress: [0-9]* evictions' "$work/$name.stress_drain.err" | grep -o '[0-9]*' || echo 0)
  echo "$name stress_drain 1 $status nan ${tolerance:-0} $converted $refused $output $work/$name.stress_drain.err ${evictions:-0}" >> "$raw"
  # Kernels with in-task yield points (the remarks say so): again with every launch in the in-task variant
  # (PREEMPT_INTASK=on; auto runs it only for launches preemptd schedules), so that full evictions stop CTAs inside
  # their tasks, save their contexts and resume them mid-task.
  if grep -q "in-task yield point at" "$bin/remarks/$name.txt" 2>/dev/null; then
    output=$work/$name.stress_intask.out
    if PREEMPT_INTASK=on PREEMPT_LONG_US=0 PREEMPT_STRESS=1 timeout -s KILL 120 "$bin/preempt/$name" "$output" "$reps" > /dev/null \
      2>"$work/$name.stress_intask.err"; then status=ok; else status="exit$?"; fi
    evictions=$(grep -o 'stress: [0-9]* evictions' "$work/$name.stress_intask.err" | grep -o '[0-9]*' || echo 0)
    echo "$name stress_intask 1 $status nan ${tolerance:-0} $converted $refused $output $work/$name.stress_intask.err ${evictions:-0}" >> "$raw"
  fi
  # launch_storm's grids fit in one wave of persistent CTAs, so by default its launches run the kernel's
  # unconverted copy. Once more in the persistent form (PREEMPT_ONE_WAVE=persistent), where its 6,000 launches
  # per repetition wrap the control-block pool: checked against the original build, and timed.
  if [ "$name" = launch_storm ]; then
    output=$work/$name.persistent.out
    if log=$(PREEMPT_LONG_US=0 PREEMPT_ONE_WAVE=persistent "$bin/preempt/$name" "$output" "$reps" 2>"$work/$name.persistent.err"); then
      status=ok; else status="exit$?"; fi
    timing=$(echo "$log" | grep -o 'time_ms=[0-9.]*' | cut -d= -f2)
    echo "$name persistent 1 $status ${timing:-nan} ${tolerance:-0} $converted $refused $output $work/$name.persistent.err" >> "$raw"
  fi
done < "$bin/kernels.txt"
# From here on programs evict their own launches (the API, preemptd): every launch converted, short ones too.
# They evict through the API, so they ask CUDA for what eviction needs at start (PREEMPT_EVICT_READY).
export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1
# Preemption benchmark: baselines (no plugin) and evictions (plugin + API).
for build in original preempt; do
  if ! timeout -s KILL 300 "$bin/$build/preempt_bench" > "$work/bench_$build.json" 2> "$work/bench_$build.err"; then
    echo "gpu_check.sh: preempt_bench ($build) failed:" >&2
    cat "$work/bench_$build.err" >&2
    echo '{"failed": true}' > "$work/bench_$build.json"
  fi
done
# The hardware-queue trap: 4, 16 and 40 application streams held at once,
# with the runtime's 32 hardware queues; and 40 with one queue, where the
# runtime refuses eviction.
traps=()
for setting in 32:4 32:16 32:40 1:40; do
  connections=${setting%:*} streams=${setting#*:}
  trap=$work/trap_${connections}_$streams
  CUDA_DEVICE_MAX_CONNECTIONS=$connections timeout -s KILL 40 "$bin/preempt/queue_trap" "$streams" \
    > "$trap.json" 2> "$trap.err" ||
    { echo "gpu_check.sh: queue_trap, $streams streams, $connections connections, failed or hung; its log:" >&2
      cat "$trap.err" >&2
      [ -s "$trap.json" ] || echo "{\"failed\": true, \"connections\": \"$connections\", \"app_streams\": $streams}" > "$trap.json"; }
  traps+=("$trap.json")
done
# What the runtime's stream operations cost per launch, on the GPU's timeline.
timeout -s KILL 60 "$bin/original/launch_costs" > "$work/launch_costs.json" 2> "$work/launch_costs.err" ||
  { echo "gpu_check.sh: launch_costs failed:" >&2; cat "$work/launch_costs.err" >&2; }
PREEMPT_LAUNCH_COSTS=$work/launch_costs.json \
python3 "$root/bench/report_suite.py" "$raw" "$results" "$gpu" "$work/bench_original.json" "$work/bench_preempt.json" \
  "${traps[@]}" | tee "$work/suite_report.txt"
status=${PIPESTATUS[0]}
suite_count=$(count_line "" "$work/suite_report.txt")
read -r suite_passed suite_failed <<< "$(count_of "$suite_count")"
# Where the conversion's cost goes (issue 3): fixed per launch or per task
# (vector_add at three sizes), and what persistent loop shapes cost alone.
md=$(ls -t "$results"/*.md | head -1)
{
  echo
  echo "## Conversion cost per launch and per task (vector_add, 96 launches, $reps runs each)"
  echo
  echo "| elements | original ms | preempt ms | extra us per launch |"
  echo "|---|---|---|---|"
  for log2 in 23 25 27; do
    name=vector_add_2e$log2; [ $log2 = 25 ] && name=vector_add
    original=$("$bin/original/$name" "$work/size.out" "$reps" | sed -n 's/^time_ms=\([0-9.]*\).*/\1/p')
    converted=$("$bin/preempt/$name" "$work/size.out" "$reps" | sed -n 's/^time_ms=\([0-9.]*\).*/\1/p')
    echo "| 2^$log2 + 333 | $original | $converted | $(python3 -c "print(f'{($converted - $original) * 1000 / 96:.1f}')") |"
  done
  echo
  echo "## Persistent loop shapes alone (bench/preemption/persistent_shapes.cu)"
  echo
  echo '```'
  timeout -s KILL 60 "$bin/original/persistent_shapes" 2>&1
  echo '```'
  echo
  echo "## Waiting calls that block other threads' CUDA calls (bench/preemption/sync_copy_lock_probe.cu)"
  echo
  echo "A resume is another thread's CUDA call; runtime-host/sync_copies_cuda.c waits before the calls marked BLOCKED."
  echo
  echo '```'
  timeout -s KILL 60 "$bin/original/sync_copy_lock_probe" 2>&1
  echo '```'
  echo
  echo "## What an eviction's latency is made of (bench/preemption/latency_floor.cu)"
  echo
  echo "Host-timed round trips, 80 each, on an idle GPU and with every SM busy; medians (p99) in us."
  echo
  timeout -s KILL 60 "$bin/original/latency_floor" > "$work/floor.json" 2> "$work/floor.err" ||
    { echo "latency_floor failed:"; sed 's/^/    /' "$work/floor.err"; }
  python3 "$root/bench/preemption/report_latency.py" floor "$work/floor.json"
  echo
  echo "The converted preempt_bench again with PREEMPT_TIME_EVICTIONS=1: each eviction host-observed and on the GPU's"
  echo "clock (the runtime's event after the request's words -> the end of the launch's last grid), median (p99) us."
  echo
  timeout -s KILL 300 env PREEMPT_TIME_EVICTIONS=1 "$bin/preempt/preempt_bench" > "$work/bench_preempt_timed.json" \
    2> "$work/bench_preempt_timed.err" || { echo "preempt_bench (timed) failed:"; sed 's/^/    /' "$work/bench_preempt_timed.err"; }
  python3 "$root/bench/preemption/report_latency.py" timed "$work/bench_preempt_timed.json"
  echo
  # The runtime's own lines at exit: where each preempt_evict call's host time went (eviction_time.c), over the
  # three latency series together, and each launch's that evicted for its stream's priority (row b).
  grep -h '^preempt: eviction requests:\|^preempt: urgent launches:' "$work/bench_preempt_timed.err" ||
    echo "(no eviction-request steps said)"
  echo
  echo "## Eviction latency in each form (preempt_bench's latency series alone, PREEMPT_BENCH_ONLY=latency)"
  echo
  echo "Host-observed, request to every CTA gone, median (p99) us: the runtime's choice (auto), then each form forced"
  echo "(issue 42 asks the bound of every one). 'right': every sampled block's value checked after the evictions."
  echo
  forms=()
  for form in auto persistent drain intask; do
    case $form in
      auto) settings=() ;;
      persistent) settings=(PREEMPT_FORM=persistent) ;;
      drain) settings=(PREEMPT_FORM=drain) ;;
      intask) settings=(PREEMPT_INTASK=on) ;; # the persistent form with in-task yield points (long_kernel has one)
    esac
    env "${settings[@]}" PREEMPT_BENCH_ONLY=latency timeout -s KILL 120 "$bin/preempt/preempt_bench" \
      > "$work/latency_$form.json" 2> "$work/latency_$form.err" ||
      { echo "preempt_bench (PREEMPT_BENCH_ONLY=latency, $form) failed:"; tail -5 "$work/latency_$form.err" | sed 's/^/    /'; }
    forms+=("$form${settings[*]:+ (${settings[*]})}=$work/latency_$form.json")
  done
  python3 "$root/bench/preemption/report_latency.py" forms "${forms[@]}" | tee "$work/forms.txt"
  echo
  echo "## Pieces of a converted launch (bench/preemption/overhead_parts.cu)"
  echo
  echo "96 launches per round in the legacy default stream, median of 11 rounds per variant; 'bare' launches the"
  echo "converted kernel directly (no runtime) at the check interval and CTA count shown; '+ reset' memsets the"
  echo "control block's counters first (generation 0: the first fetch's fast path; new generation: its slow path);"
  echo "'events' = the runtime's 3 event records (2 timed), 'untimed' = that many untimed ones, 'wait' = the stream"
  echo "wait on done_generation; 'runtime' = through preempt_launch_kernel."
  echo
  timeout -s KILL 120 "$bin/preempt/overhead_parts" > "$work/parts.jsonl" 2> "$work/parts.err" ||
    { echo "overhead_parts failed:"; sed 's/^/    /' "$work/parts.err"; }
  python3 "$root/bench/preemption/report_parts.py" "$work/parts.jsonl" || echo "(a variant's output was wrong)"
  echo
  echo "## The runtime's cost on a launch it runs as written, in one process (bench/preemption/as_written_cost.cu)"
  echo
  echo "launch_storm's launch loop (6,000 one-wave launches on 4 streams, then synchronised), built without and with the"
  echo "plugin into one program, host-timed, 21 rounds rotating the variants; no PREEMPT_* setting, as the suite's timed"
  echo "rounds run. CUDA's default loading is lazy; eager is how a process that expects evictions runs."
  echo
  for loading in LAZY EAGER; do
    env -u PREEMPT_LONG_US -u PREEMPT_EVICT_READY CUDA_MODULE_LOADING=$loading timeout -s KILL 90 \
      "$bin/preempt/as_written_cost" > "$work/as_written_$loading.jsonl" 2> "$work/as_written_$loading.err" ||
      sed 's/^/    /' "$work/as_written_$loading.err"
  done
  python3 "$root/bench/preemption/report_as_written.py" "$work/as_written_LAZY.jsonl" "$work/as_written_EAGER.jsonl"
  # launch_shape_check NAME [VAR=VALUE...]: bench/preemption/NAME.cu's own line, or FAILED with what it said (a
  # nonzero exit, or a persistent grid the driver refused).
  launch_shape_check() {
    local name=$1
    shift
    if env "$@" timeout -s KILL 60 "$bin/preempt/$name" > "$work/$name.out" 2> "$work/$name.err" &&
        ! grep -q 'launching the persistent grid failed' "$work/$name.err"; then
      cat "$work/$name.out"
    else
      echo "FAILED: $(cat "$work/$name.out" "$work/$name.err" | tail -c 300)"
    fi
  }
  echo
  echo "## A one-wave launch with 64 KiB of dynamic shared memory (bench/preemption/one_wave_big_shared.cu)"
  echo
  # The limit the application sets reaches the converted kernel only: the copy must take it over.
  launch_shape_check one_wave_big_shared
  echo
  echo "## A launch of exactly 48 KiB of dynamic shared memory under evictions (bench/preemption/exact_48k_shared.cu)"
  echo
  # The kernel as written takes it with no attribute; the persistent form's task context made it too big there.
  launch_shape_check exact_48k_shared PREEMPT_STRESS=1 PREEMPT_LONG_US=0
  echo
  echo "## A full-mask shuffle in half of a warp, every launch asking for a preemptible form (bench/preemption/half_warp_shuffle.cu)"
  echo
  # HeCBench jacobi's reduction: its converted form hung (the pass now leaves such kernels as written).
  launch_shape_check half_warp_shuffle PREEMPT_STRESS=1 PREEMPT_LONG_US=0
  echo
  echo "## Converted launches under evictions, cudaDeviceReset, and again (bench/preemption/device_reset.cu)"
  echo
  # preempt_cudaDeviceReset gives the memory back and shuts the launch runtime down before the reset.
  launch_shape_check device_reset PREEMPT_STRESS=1 PREEMPT_LONG_US=0
} >> "$md"
grep -q "^FAILED: " "$md" && status=1
# The four launch-shape checks above count into the last "N passed, N failed".
shared_passed=$(grep -cE '^(one_wave_big_shared|exact_48k_shared|half_warp_shuffle|device_reset): .*output correct$' "$md")
shared_failed=$((4 - shared_passed))
read -r forms_passed forms_failed <<< "$(count_of "$(count_line forms "$work/forms.txt")")"
[ "$forms_failed" -eq 0 ] || status=1
cp "$work/parts.jsonl" "${md%.md}.parts.jsonl" 2>/dev/null || true
cp "$work"/latency_*.json "$work/bench_preempt_timed.err" "$(dirname "$md")/" 2>/dev/null || true
cat "$work"/as_written_*.jsonl > "${md%.md}.as_written.jsonl" 2>/dev/null || true
grep -q '"correct": false' "${md%.md}.parts.jsonl" 2>/dev/null && status=1
fi # part 1
# The totals of what ran: report_suite.py's checks (suite, preemption, queue traps, launch costs), the launch shapes,
# the forms' latency runs, the pairs, the memory step and the in-task checks.
say_totals() {
  echo "suite and preemption: ${suite_count:-not run or no count}; launch shapes: $shared_passed passed," \
    "$shared_failed failed; forms: $forms_passed passed, $forms_failed failed; pairs: $pairs_passed passed," \
    "$pairs_failed failed; memory: $memory_passed passed, $memory_failed failed; in-task: $intask_passed passed," \
    "$intask_failed failed"
  echo "$((suite_passed + shared_passed + forms_passed + pairs_passed + memory_passed + intask_passed)) passed," \
    "$((suite_failed + shared_failed + forms_failed + pairs_failed + memory_failed + intask_failed)) failed"
}
if [ "$part" = 1 ]; then
  rm -rf "$work"
  say_totals
  exit $status
fi
if [ "$part" = 2 ]; then
  export PREEMPT_LONG_US=0 PREEMPT_EVICT_READY=1 # as part 1 leaves them for what follows
  own_report part2 "gpu_check.sh, part 2 (GPU_CHECK_PART=2)" part 2
fi
# Across processes (issue 4): pairs without and with preemptd, and under MPS.
bash "$root/bench/daemon/pairs.sh" "$bin" "$work/pairs.jsonl" > /dev/null
json_out=${md%.md}.json
python3 "$root/bench/daemon/report_pairs.py" "$work/pairs.jsonl" "$json_out" "$md" || status=1
# Each pair mode that ran (both sides finished, results right) counts into the last "N passed, N failed".
read -r pairs_passed pairs_failed <<< "$(count_of "$(count_line pairs "$md")")"
# Memory admission under pressure, before the mixes: at most 100 s, 180 s kept for the two mixes below.
memory_step "$md" "$json_out" "${md%.md}.memory.jsonl" 180
[ "$memory_failed" -eq 0 ] || status=1
# In-task preemption (issue 8): each long-block kernel of bench/intask evicted 50 times at random moments with
# in-task checks and 50 times without, its output against the original build's (intask_check.sh's check part; about
# 25 s on the H100). At most 60 s, 120 s kept for the mixes. Counts into the last "N passed, N failed".
intask_passed=0 intask_failed=0
intask_limit=$(budget_left 60 120)
{
  echo
  echo "## In-task preemption: outputs under random evictions (bench/intask/intask_check.sh, check part)"
  echo
  if [ "$intask_limit" -lt 20 ]; then
    echo "FAILED: not run, $intask_limit s left of the budget"
    intask_failed=1
  else
    INTASK_PARTS=check INTASK_BUDGET_S=$((intask_limit - 5)) timeout -k 10 "$intask_limit" \
      bash "$root/bench/intask/intask_check.sh" "$work/intask" > "$work/intask.txt" 2>&1
    intask_count=$(count_line intask "$work/intask.txt")
    read -r intask_passed intask_failed <<< "$(count_of "$intask_count")"
    echo "| label | evictions | launches | mismatched words |"
    echo "|---|---|---|---|"
    python3 -c '
import json, sys
for text in open(sys.argv[1]):
    line = json.loads(text)
    r = line.get("result", {})
    if line["label"].startswith("check-"):
        print("| %s | %s | %s | %s |" % (line["label"], r.get("evictions", "-"), r.get("launches", "-"),
                                         r.get("mismatches", r.get("failed", r.get("skipped", "?")))))
' "$work/intask/intask.jsonl" 2>/dev/null || echo "(no results: $(tail -2 "$work/intask.txt" | tr '\n' ' '))"
    echo
    echo "${intask_count:-FAILED: intask_check.sh printed no count: $(tail -2 "$work/intask.txt" | tr '\n' ' ')}"
  fi
} >> "$md"
cp "$work/intask/intask.jsonl" "${md%.md}.intask.jsonl" 2>/dev/null
[ "$intask_failed" -eq 0 ] || status=1
# Many processes at once (issue 4), two sharings, one round each and short per-process limits so that the whole
# script stays within one 10-minute device call:
# - without MPS (time-slicing, EffiSha's setting): EffiSha §8's 11 programs 3 ms apart, original builds and
#   converted ones without and with preemptd (hpf, piv, dprr). About 4 minutes on the H100: 11 converted processes
#   starting at once take ~19 s to start (the runtime's 32 hardware queues each; 3.5 s with 8), 2.6 s original.
# - under MPS: FLEP §6.3.1's equal-priority pairs, and one EffiSha run as a canary: 11 converted processes cannot
#   start under MPS (docs/daemon.md). About 1 minute.
# TERM after the limit (mix.sh then stops MPS itself); each limit also keeps to what is left of the script's
# GPU_CHECK_BUDGET_S (default 560 s), since everything before varies too.
# The time-sliced mix's cap went from 330 s to 230 s when the memory step (at most 100 s) came before it, so that
# the script keeps to its 560 s: the mix (about 4 minutes) may now be cut short; the report shows what it measured.
timeslice_limit=$(budget_left 230 60) # 60 s kept for the MPS runs
[ "$timeslice_limit" -gt 0 ] || timeslice_limit=1
MIX_SHARING=timeslice MIX_ONLY='alone|effisha' MIX_REPS=${MIX_REPS:-1} MIX_PROC_TIMEOUT=${MIX_PROC_TIMEOUT:-45} \
  timeout -k 20 "$timeslice_limit" bash "$root/bench/daemon/mix.sh" "$bin" "$work/mix_timeslice.jsonl" ||
  echo "gpu_check.sh: mix.sh (time-slicing) failed or ran out of time; the report shows what it measured" >&2
mps_limit=$(budget_left 150 10)
[ "$mps_limit" -gt 0 ] || mps_limit=1
MIX_SHARING=mps MIX_ONLY='alone|pair|effisha_random_hpf' MIX_REPS=1 MIX_PAIR_REPS=${MIX_PAIR_REPS:-5} \
  MIX_PROC_TIMEOUT=${MIX_PROC_TIMEOUT:-30} timeout -k 20 "$mps_limit" bash "$root/bench/daemon/mix.sh" "$bin" "$work/mix_mps.jsonl" ||
  echo "gpu_check.sh: mix.sh (MPS) failed or ran out of time; the report shows what it measured" >&2
cat "$work/mix_timeslice.jsonl" "$work/mix_mps.jsonl" > "$work/mix.jsonl" 2>/dev/null
python3 "$root/bench/daemon/report_mix.py" "$work/mix.jsonl" "$json_out" "$md" || status=1
tail -n 30 "$md"
rm -rf "$work"
say_totals
exit $status
