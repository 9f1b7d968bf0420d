#!/usr/bin/env python3
"""bench/corpus/runner.py: runs the corpus (called by run.sh, on the GPU machine; standard library only).

Phase 1, correctness, CORPUS_PAR programs at once: every program's original build, then its plugin build
as is, under PREEMPT_STRESS=1, and under PREEMPT_STRESS=1 PREEMPT_INTASK=on, each in a fresh directory
holding the program's data files, with a timeout (the original: CORPUS_TIMEOUT_ORIG s; the others:
max(10 s, 10x the original's time)).
Phase 2, timing, one process at a time: rounds of (original, plugin, and the plugin under PREEMPT_STRESS=1
unless CORPUS_TIMING_STRESS=0) per program, interleaved, the order rotating from round to round, up to
CORPUS_ROUNDS rounds or until the time budget (CORPUS_BUDGET_S from the start of run.sh) is spent; with
CUPTI (CUDA_INJECTION64_PATH=lib/libkernel_times.so) every run reports each kernel's launches and GPU time.

Writes one JSON record per program and mode (original, plugin, stress, stress_intask, timing) to --out.
The verdicts are the report's (report.py): this records facts (exit code, time, the filtered stdout's
hash, the first line where it differs from the original's, tails of stdout and stderr).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

DEFAULT_FILTER = (r"(?i)(time|elapsed|throughput|bandwidth|gflop|flop/s|[gmkt]i?b/s|\bmsecs?\b|\bms\b|"
                  r"\bsecs?\b|seconds|\busecs?\b|\bus\b|µs|perf|speed|\brate\b|clock|cycles|ticks|tflops|samples/s|millis|"
                  r"0x[0-9a-f]{6,}|\bpid\b)")
KERNEL_PREFIXES = re.compile(r"^__preempt_(original|persistent|drain|intaskform|intaskchunks)_")
TAIL = 1500

MODES = [  # name, build, environment
    ("original", "original", {}),
    ("plugin", "plugin", {}),
    ("stress", "plugin", {"PREEMPT_STRESS": "1"}),
    # Every launch converted (short ones too), in-task variants where kernels have them: every converted form
    # of every kernel is checked against the original under evictions (docs/preemption.md, "Launches as written").
    ("stress_intask", "plugin", {"PREEMPT_STRESS": "1", "PREEMPT_INTASK": "on", "PREEMPT_LONG_US": "0"}),
]


def correctness_modes():
    """MODES after the original, each stress mode with CORPUS_STRESS_PERIOD_US as PREEMPT_STRESS_PERIOD_US where it
    is set: a shorter period catches launches the default 0.2-2 ms misses (at d4c8d3a stress evicted in 20 of 218
    programs with converted kernels; report.py's eviction line)."""
    period = os.environ.get("CORPUS_STRESS_PERIOD_US")
    return [(mode, build, dict(env, PREEMPT_STRESS_PERIOD_US=period) if period and "PREEMPT_STRESS" in env else env)
            for mode, build, env in MODES[1:]]


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


def read_manifest(corpus):
    progs = []
    with open(os.path.join(corpus, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if not line.strip():
                continue
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            for k, v in list(row.items()):
                if v == "-":
                    row[k] = ""
            progs.append(row)
    return progs


def filtered_lines(text, extra_filter, same_stdout="yes"):
    """The lines compared between builds; sorted where the program's output order is not its own (same_stdout
    "sorted": printf from many blocks, whose order CUDA does not define)."""
    pats = [re.compile(DEFAULT_FILTER)]
    if extra_filter:
        pats.append(re.compile(extra_filter))
    out = []
    for line in text.splitlines():
        # Programs print their own path, which names the build's folder under the call's own temporary folder.
        line = re.sub(r"[^\s\[\]'\"(),=]*/corpus/(original|plugin)/", "CORPUS/BUILD/", line.rstrip())
        if not line or any(p.search(line) for p in pats):
            continue
        out.append(line)
    return sorted(out) if same_stdout == "sorted" else out


def earlier_records(path):
    """An earlier call's records (its corpus.jsonl, several `cat`-ed together); none without a path."""
    if not path:
        return
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def timed_before(path):
    """Earlier calls' timing runs (CORPUS_TIMED_BEFORE), by program and build: {} without a file."""
    records = {}
    for r in earlier_records(path):
        if r.get("mode") == "timing":
            runs = records.setdefault(r["name"], {})
            for key in ("original", "plugin", "stress"):
                runs.setdefault(key, []).extend(r.get(key) or [])
    return records


def done_before(path):
    """(program, mode) pairs an earlier call's correctness phase completed (CORPUS_DONE): a later call runs every
    original again (its stdout is what the modes are compared with) but no plugin mode or second original that an
    earlier record holds, run and not skipped for the time budget or a missing build. report.py over the calls
    `cat`-ed in order keeps each pair's last record. Empty without a file."""
    return {(r["name"], r["mode"]) for r in earlier_records(path)
            if r.get("mode") not in ("original", "timing") and not r.get("skipped") and not r.get("missing")}


def earlier_original_times(*paths):
    """Each program's original wall time in earlier calls (their correctness originals and timing rounds, the
    longest), for a timing-only call: without them every program counted as 1 s, and a round of 30 s programs ran
    far past the deadline (a call's timing records, written at the end, were lost with it on 2026-11-30)."""
    times = {}
    for path in paths:
        for r in earlier_records(path):
            runs = [r] if r.get("mode") == "original" else (r.get("original") or []) if r.get("mode") == "timing" else []
            for run in runs:
                if run.get("rc") == 0 and not run.get("timed_out") and run.get("wall_s"):
                    times[r["name"]] = max(times.get(r["name"], 0.0), run["wall_s"])
    return times


class Terminated(Exception):
    """SIGTERM (a caller's timeout): the phase under way writes what it has before the process ends."""


def least_timed_first(programs, before):
    """A second call's rounds start with the programs an earlier call timed least (none first), so that two calls
    cover the list instead of timing its head twice; the list's order otherwise."""
    return sorted(programs, key=lambda p: len(before.get(p["name"], {}).get("original", [])))


def undecided(before, now):
    """Whether a program's timing runs so far (an earlier call's and this call's) leave its answer open: its
    kernels' GPU time or its wall time more than 5% (10% for wall) from the original's, its start-up (spawn to the
    first launch call) more than 50 ms later (issue 39's bound: a long program's wall time hides it), or its stress
    run more than twice the original's, by the medians of the runs that passed. A program with no passing pair is left
    alone (its failure is what the report says)."""
    def runs(key):
        return [x for x in (before.get(key) or []) + (now.get(key) or []) if x["rc"] == 0 and not x["timed_out"]]

    original, plugin, stress = runs("original"), runs("plugin"), runs("stress")
    if not original or not plugin:
        return False
    # The kernels both builds ran: the plugin's runtime has kernels of its own, which the report counts apart.
    names = set.intersection(*[set(x.get("kernels") or {}) for x in original + plugin])

    def gpu_ns(run):
        return sum(run["kernels"][name][1] for name in names)

    median = statistics.median
    wall = median([x["wall_s"] for x in plugin]) / max(median([x["wall_s"] for x in original]), 1e-9)
    if not 1 / 1.1 <= wall <= 1.1:
        return True
    gpu_o, gpu_p = median([gpu_ns(x) for x in original]), median([gpu_ns(x) for x in plugin])
    if gpu_o > 0 and gpu_p > 0 and not 1 / 1.05 <= gpu_p / gpu_o <= 1.05:
        return True
    def starts(runs_of_build):
        return [t for t, _ in map(start_up_s, runs_of_build) if t is not None]

    starts_o, starts_p = starts(original), starts(plugin)
    if starts_o and starts_p and median(starts_p) - median(starts_o) > 0.05:
        return True
    return bool(stress) and median([x["wall_s"] for x in stress]) > 2 * median([x["wall_s"] for x in original])


def round_programs(timed, before, now, round_number, focus=True):
    """The programs a timing round runs: every one in the first round of a first call, or without focus; otherwise
    those never timed (no run in an earlier call or this one) and those whose runs so far leave the answer open
    (undecided). A later call thus starts with what earlier calls left open instead of timing the whole list again
    (a round of all 195 programs takes more than one device call)."""
    if not focus or (round_number == 1 and not before):
        return list(timed)

    def never_timed(name):
        return not before.get(name, {}).get("original") and not now[name].get("original")

    return [p for p in timed if never_timed(p["name"]) or undecided(before.get(p["name"], {}), now[p["name"]])]


def tail(text, n=TAIL):
    return text if len(text) <= n else "..." + text[-n:]


def read_ktable(path):
    """A run's kernel table (kernel_times.c), read once: (kernel name, prefixes of the plugin's variants stripped ->
    [launches, total_ns, max_ns, blocks]; the earliest #first_launch_ns, CLOCK_MONOTONIC of a process's first launch
    call, the first process's in a program of several, or None; the earliest #first_launch_done_ns, when such a call
    first returned, or None; the earliest #cuda_init_ns, when CUDA started in a process of the program, or None).
    (None, None, None, None) without a table."""
    if not path or not os.path.exists(path):
        return None, None, None, None
    kernels, stamps = {}, {"#first_launch_ns": None, "#first_launch_done_ns": None, "#cuda_init_ns": None}
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] in stamps and len(parts) > 1 and parts[1].isdigit():
                seen = stamps[parts[0]]
                stamps[parts[0]] = int(parts[1]) if seen is None else min(seen, int(parts[1]))
            if len(parts) < 4 or parts[0].startswith("#"):
                continue
            name = KERNEL_PREFIXES.sub("", parts[0])
            count, total, mx = int(parts[1]), int(parts[2]), int(parts[3])
            blocks = int(parts[4]) if len(parts) > 4 else 0
            k = kernels.setdefault(name, [0, 0, 0, 0])
            k[0] += count
            k[1] += total
            if mx >= k[2]:
                k[2], k[3] = mx, blocks
    return kernels, stamps["#first_launch_ns"], stamps["#first_launch_done_ns"], stamps["#cuda_init_ns"]


def read_api_census(path):
    """A census run's API calls (kernel_times.c with CORPUS_API_CENSUS=1): {"r:NAME" or "d:NAME": [calls, calls up to
    the first launch call]}, summed over the program's processes; {} without a table or census lines."""
    calls = {}
    if not path or not os.path.exists(path):
        return calls
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "#api" and len(parts) >= 4 and parts[2].isdigit() and parts[3].isdigit():
                c = calls.setdefault(parts[1], [0, 0])
                c[0] += int(parts[2])
                c[1] += int(parts[3])
    return calls


def since_spawn_s(res, stamp_ns):
    """A run's spawn to one of kernel_times.c's stamps (its first launch call's entry or return, CUDA's start), in
    seconds, or None (no stamp, or one from before the spawn)."""
    return round((stamp_ns - res["spawn_ns"]) / 1e9, 6) if stamp_ns is not None and stamp_ns >= res["spawn_ns"] else None


def start_up_s(run):
    """A timing run's start-up in seconds and what it runs to: the first launch call's return ("return"), or in runs
    without that stamp its entry ("entry": an upper bound for the plugin's build, whose runtime loads the kernel
    before the call while the original loads it inside); (None, None) without either."""
    if run.get("first_launch_done_s") is not None:
        return run["first_launch_done_s"], "return"
    return (run["first_launch_s"], "entry") if run.get("first_launch_s") is not None else (None, None)


class Runner:
    def __init__(self, args):
        self.args = args
        self.corpus = os.path.abspath(args.corpus)
        self.work = os.path.abspath(args.work)
        self.dry = os.environ.get("CORPUS_DRY", "0") == "1"
        self.lock = threading.Lock()
        self.out = open(args.out, "a")
        self.cupti = os.path.join(self.corpus, "lib", "libkernel_times.so")
        self.use_cupti = os.environ.get("CORPUS_CUPTI", "1") == "1" and (os.path.exists(self.cupti) or self.dry)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PREEMPT_") and k != "CUDA_INJECTION64_PATH"}
        self.base_env = base

    def emit(self, rec):
        with self.lock:
            self.out.write(json.dumps(rec, sort_keys=True) + "\n")
            self.out.flush()

    def rundir(self, prog, tag):
        d = os.path.join(self.work, "run", prog["name"], tag)
        if os.path.exists(d):
            shutil.rmtree(d, ignore_errors=True)
        data = os.path.join(self.corpus, "data", prog["name"])
        if os.path.isdir(data):
            shutil.copytree(data, d, symlinks=True)
        else:
            os.makedirs(d)
        return d

    def command(self, prog, build):
        args = shlex.split(prog.get("args") or "")
        binary = os.path.join(self.corpus, build, prog["name"])
        if self.dry:
            # Stands in for the binary: prints its name and arguments, and what the list expects.
            expect = prog.get("expect") or ""
            # With CUPTI on, it also writes a kernel table as libkernel_times.so would (the plugin's with a
            # variant's prefix and one kernel of the runtime's own).
            script = ('echo "dry run of ${0##*/} $*"; [ -n "$EXPECT" ] && echo "$EXPECT"; sleep 0.02; '
                      'if [ -n "$CORPUS_KTIME_FILE" ]; then '
                      'printf "${KPREFIX}_Z6kernelPf\\t100\\t%d\\t2000000\\t64\\n#first_launch_ns\\t%d\\t0\\t0\\t0\\n'
                      '#first_launch_done_ns\\t%d\\t0\\t0\\t0\\n#cuda_init_ns\\t%d\\t0\\t0\\t0\\n#end\\t0\\t0\\t0\\t0\\n" '
                      '$((1500000 + $$ % 1000 * 100)) $((CORPUS_SPAWN_NS + 30000000 + ${KPREFIX:+1}000000)) '
                      '$((CORPUS_SPAWN_NS + 35000000)) $((CORPUS_SPAWN_NS + 20000000)) '
                      '>> "$CORPUS_KTIME_FILE"; '
                      '[ -n "$KPREFIX" ] && printf "preempt_runtime_kernel\\t1\\t3000\\t3000\\t1\\n" >> "$CORPUS_KTIME_FILE"; '
                      # A census (CORPUS_API_CENSUS=1): the same calls in both builds, and one more kind in the
                      # plugin's, 100 of them after the first launch.
                      'if [ "$CORPUS_API_CENSUS" = 1 ]; then printf "#api\\tr:cudaMalloc\\t2\\t2\\t0\\n" >> "$CORPUS_KTIME_FILE"; '
                      '[ -n "$KPREFIX" ] && printf "#api\\tr:cudaStreamIsCapturing\\t100\\t0\\t0\\n" >> "$CORPUS_KTIME_FILE"; '
                      'fi; fi; true')
            return ["sh", "-c", script, binary] + args, {
                "EXPECT": expect.replace("\\", ""), "KPREFIX": "__preempt_original_" if build == "plugin" else ""}
        return [binary] + args, {}

    def execute(self, prog, build, env_extra, timeout, cwd, ktime_file=None):
        cmd, dry_env = self.command(prog, build)
        env = dict(self.base_env)
        env.update(env_extra)
        env.update(dry_env)
        if ktime_file:
            env["CUDA_INJECTION64_PATH"] = self.cupti
            env["CORPUS_KTIME_FILE"] = ktime_file
            if os.path.exists(ktime_file):
                os.unlink(ktime_file)
        so_path = cwd + ".stdout"
        se_path = cwd + ".stderr"
        t0 = time.monotonic()
        spawn_ns = time.monotonic_ns()  # the clock kernel_times.c stamps the first launch with
        if self.dry:
            env["CORPUS_SPAWN_NS"] = str(spawn_ns)
        timed_out = False
        with open(so_path, "wb") as so, open(se_path, "wb") as se:
            try:
                p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
            except OSError as e:
                se.write(str(e).encode())
                return {"rc": 127, "wall_s": 0.0, "timed_out": False, "stdout": "", "stderr": str(e)}
            # A blocking wait with a timer, not wait(timeout=...): Popen polls that with sleeps of up to 50 ms,
            # which quantized every wall time to 50 ms (a 0.315 s program read 0.365 s; corpus run of 2026-11-28).
            expired = threading.Event()

            def kill_on_timeout():
                expired.set()
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass

            timer = threading.Timer(timeout, kill_on_timeout)
            timer.start()
            try:
                rc = p.wait()
            except Terminated:
                # The program runs in its own session: it and its timer go now, not at their own limit.
                timer.cancel()
                kill_on_timeout()
                p.wait()
                raise
            timer.cancel()
            timed_out = expired.is_set()
        wall = time.monotonic() - t0
        # A program's children (none expected) go with it.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        with open(so_path, "rb") as f:
            stdout = f.read(64 << 20).decode("utf-8", "replace")
        with open(se_path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            stderr = f.read().decode("utf-8", "replace")
        return {"rc": rc, "wall_s": round(wall, 4), "timed_out": timed_out, "stdout": stdout, "stderr": stderr,
                "spawn_ns": spawn_ns}

    def facts(self, prog, res, ref_lines=None):
        """The record's verdict-free facts about one run."""
        lines = filtered_lines(res["stdout"], prog.get("filter"), prog.get("same_stdout", "yes"))
        rec = {
            "rc": res["rc"],
            "wall_s": res["wall_s"],
            "timed_out": res["timed_out"],
            "stdout_sha": hashlib.sha1("\n".join(lines).encode()).hexdigest()[:16],
            "stdout_lines": len(lines),
            "stdout_tail": tail(res["stdout"]),
            "stderr_tail": tail(res["stderr"]),
        }
        expect = prog.get("expect")
        if expect:
            rec["expect_found"] = re.search(expect, res["stdout"], re.M) is not None
        if ref_lines is not None and lines != ref_lines:
            for i in range(max(len(lines), len(ref_lines))):
                a = ref_lines[i] if i < len(ref_lines) else "<none>"
                b = lines[i] if i < len(lines) else "<none>"
                if a != b:
                    rec["first_diff"] = {"line": i + 1, "original": a[:200], "this": b[:200]}
                    break
        return rec, lines

    # Phase 1 -------------------------------------------------------------------------------------------
    def correctness(self, progs, deadline):
        """Every original, then every program's plugin runs, mode by mode; nothing starts after the
        deadline (those runs are recorded as skipped), and no run's timeout goes past it."""
        orig_lines, orig_time = {}, {}
        par = int(os.environ.get("CORPUS_PAR", "4"))
        t_orig = float(os.environ.get("CORPUS_TIMEOUT_ORIG", "60"))

        def one(prog, mode, build, env_extra, timeout, note=None):
            left = deadline - time.time()
            if left < 2:
                rec = {"name": prog["name"], "mode": mode, "build": build, "env": env_extra, "skipped": True}
                rec.update(note or {})
                self.emit(rec)
                return rec, None
            cut = left < timeout
            timeout = min(timeout, left)
            cwd = self.rundir(prog, mode)
            res = self.execute(prog, build, env_extra, timeout, cwd)
            rec, lines = self.facts(prog, res, orig_lines.get(prog["name"]) if mode != "original" else None)
            rec.update({"name": prog["name"], "mode": mode, "build": build, "timeout_s": round(timeout, 1),
                        "env": env_extra})
            rec.update(note or {})
            if cut and rec["timed_out"]:
                # Killed by the call's deadline before its own limit: not run to an answer (a later call given
                # this one's records, CORPUS_DONE, runs it again), not a failure.
                rec.update({"skipped": True, "cut_by_deadline": True})
            self.emit(rec)
            shutil.rmtree(cwd, ignore_errors=True)
            return rec, lines

        with concurrent.futures.ThreadPoolExecutor(par) as pool:
            futs = {pool.submit(one, p, "original", "original", {}, t_orig): p for p in progs}
            for fut in concurrent.futures.as_completed(futs):
                p = futs[fut]
                rec, lines = fut.result()
                if rec.get("skipped"):
                    continue
                if rec["rc"] != 0 or rec["timed_out"]:
                    # Left out of the counts (report.py), so no plugin mode is run: a timed-out original would give
                    # each of them 10x its 60 s, most of a call.
                    log(f"original {p['name']}: rc {rec['rc']}{' (timed out)' if rec['timed_out'] else ''}; "
                        f"its plugin modes are not run")
                    continue
                orig_lines[p["name"]] = lines
                orig_time[p["name"]] = rec["wall_s"]
            log(f"phase 1: {len(orig_time)} of {len(progs)} originals passed (exit 0 in time)")
            jobs = []
            again = {}  # plugin-mode runs, to run again alone if they time out
            done = done_before(os.environ.get("CORPUS_DONE"))
            if done:
                log(f"phase 1: {len(done)} runs of an earlier call (CORPUS_DONE) not repeated")
            # Each original once more, beside the plugin runs: a program whose own output changes from run to run
            # (timings, block order) is then left uncompared by report.py whether or not the timing phase reaches it.
            for p in progs:
                if p["name"] in orig_time and (p["name"], "original_again") not in done:
                    jobs.append(pool.submit(one, p, "original_again", "original", {}, t_orig))
            for mode, build, env in correctness_modes():
                for p in progs:
                    if p["name"] not in orig_time or (p["name"], mode) in done:
                        continue
                    if not os.path.exists(os.path.join(self.corpus, "plugin", p["name"])):
                        self.emit({"name": p["name"], "mode": mode, "build": build, "missing": True, "env": env})
                        continue
                    timeout = max(10.0, 10.0 * orig_time[p["name"]])
                    fut = pool.submit(one, p, mode, build, env, timeout)
                    again[fut] = (len(jobs), p, mode, build, env, timeout)
                    jobs.append(fut)
            failed = skipped = 0
            timed_out = []
            for fut in concurrent.futures.as_completed(jobs):
                rec, _ = fut.result()
                if rec.get("skipped"):
                    skipped += 1
                elif rec["rc"] != 0 or rec["timed_out"]:
                    failed += 1
                    if rec["timed_out"] and fut in again:
                        timed_out.append(again[fut])
            log(f"phase 1: {len(jobs)} runs (originals again, then plugin modes), {failed} with a nonzero exit or a "
                f"timeout, {skipped} skipped (time budget)")
        # A plugin mode that timed out beside CORPUS_PAR - 1 other programs runs once more alone before it counts:
        # under PREEMPT_LONG_US=0 every launch's evictions are round trips that 8 programs at once slowed 8-40x
        # (2026-11-29: polybench_jacobi1d 0.28 s -> 11.3 s, simpleAttributes killed at 82 s, 11-12 s alone before).
        # Its record follows the first one's, and report.py keeps the last.
        for _, p, mode, build, env, timeout in sorted(timed_out, key=lambda job: job[0]):
            if deadline - time.time() < timeout:
                log(f"phase 1: {p['name']} {mode} timed out beside others; no time left to run it alone: it counts")
                continue
            rec, _ = one(p, mode, build, env, timeout, {"rerun_alone": True, "timed_out_beside_others": True})
            log(f"phase 1: {p['name']} {mode} timed out beside others; alone: rc {rec['rc']}"
                f"{' (timed out)' if rec['timed_out'] else ''}, {rec['wall_s']:.2f} s")
        return orig_time, orig_lines

    # Phase 2 -------------------------------------------------------------------------------------------
    def timing(self, progs, orig_time, orig_lines, deadline):
        rounds = int(os.environ.get("CORPUS_ROUNDS", "5"))
        builds = [("original", "original", {}), ("plugin", "plugin", {})]
        # The stress run is timed here, alone on the GPU and the CPU, because the correctness phase's 4 programs at
        # once made its time noise (an original 1.40 s in one run, 8.45 s in the next, same phase).
        stress = os.environ.get("CORPUS_TIMING_STRESS", "1") != "0"
        if stress:
            builds.append(("stress", "plugin", {"PREEMPT_STRESS": "1"}))
        data = {p["name"]: {key: [] for key, _, _ in builds} for p in progs}
        dirs = {}
        # After a correctness phase in this call, only the programs whose original passed it.
        timed = [p for p in progs if os.path.exists(os.path.join(self.corpus, "plugin", p["name"]))
                 and (not orig_time or p["name"] in orig_time)]
        before = timed_before(os.environ.get("CORPUS_TIMED_BEFORE"))
        timed = least_timed_first(timed, before)
        if not orig_time:
            orig_time = earlier_original_times(os.environ.get("CORPUS_DONE"), os.environ.get("CORPUS_TIMED_BEFORE"))
        focus = os.environ.get("CORPUS_FOCUS", "1") != "0"

        def terminated(signum, frame):
            raise Terminated()

        # Only here: one program runs at a time, in the main thread (the correctness phase's pool keeps the
        # default, dying at once).
        default = signal.signal(signal.SIGTERM, terminated)
        try:
            stopped = self.timing_rounds(timed, before, data, dirs, builds, stress, rounds, focus, orig_time, deadline)
        except Terminated:
            stopped = "a round, by SIGTERM (a caller's timeout); the runs so far are kept"
        finally:
            signal.signal(signal.SIGTERM, default)
        if stopped:
            log(f"phase 2: stopped in {stopped}")
        for p in timed:
            d = data[p["name"]]
            rec = {"name": p["name"], "mode": "timing", "cupti": self.use_cupti,
                   "rounds": min(len(d["original"]), len(d["plugin"])),
                   "original": d["original"], "plugin": d["plugin"], "stopped": stopped}
            if stress:
                rec["stress"] = d["stress"]
            self.emit(rec)

    def timing_rounds(self, timed, before, data, dirs, builds, stress, rounds, focus, orig_time, deadline):
        """The timing phase's rounds, into data; returns why they ended early (None: they did not)."""
        stopped = None
        for r in range(1, rounds + 1):
            # After the first round, the rounds go to the programs whose runs so far leave the answer open
            # (undecided below): one round cannot tell a machine's swing from the plugin, and a round of the
            # whole list costs as much as many rounds of the few in doubt.
            this_round = round_programs(timed, before, data, r, focus)
            if not this_round:
                log(f"phase 2: every program decided after round {r - 1}")
                break
            for p in this_round:
                name = p["name"]
                t = orig_time.get(name, 1.0)
                # Original and plugin about 1.25x the original's time each, the stress run up to the 3x it is held
                # to, and half a second per process.
                est = 2.5 * t + (3.0 * t if stress else 0.0) + 0.5 * len(builds)
                if time.time() + est > deadline:
                    stopped = f"round {r}, before {name}: the time budget was spent"
                    break
                # Rotate the order from round to round, so that no build always runs first (colder caches, clocks).
                shift = (r - 1) % len(builds)
                for key, build, env_extra in builds[shift:] + builds[:shift]:
                    if (name, key) not in dirs:
                        dirs[(name, key)] = self.rundir(p, "timing-" + key)
                    cwd = dirs[(name, key)]
                    kfile = os.path.join(self.work, "ktime", f"{name}.{key}.{r}.tsv") if self.use_cupti else None
                    if kfile:
                        os.makedirs(os.path.dirname(kfile), exist_ok=True)
                    timeout = max(10.0, 10.0 * orig_time.get(name, 6.0))
                    res = self.execute(p, build, env_extra, timeout, cwd, kfile)
                    kernels, first_ns, first_done_ns, cuda_init_ns = read_ktable(kfile)
                    lines = filtered_lines(res["stdout"], p.get("filter"), p.get("same_stdout", "yes"))
                    data[name][key].append({
                        "round": r, "rc": res["rc"], "wall_s": res["wall_s"], "timed_out": res["timed_out"],
                        "stdout_sha": hashlib.sha1("\n".join(lines).encode()).hexdigest()[:16],
                        "stderr_tail": tail(res["stderr"], 400) if res["rc"] != 0 else "",
                        "kernels": kernels,
                        # Start-up: spawn to the first launch call (issue 39's "process start"), where CUPTI saw one.
                        "first_launch_s": since_spawn_s(res, first_ns),
                        # ... to that call's return: the first kernel loaded and enqueued in both builds.
                        "first_launch_done_s": since_spawn_s(res, first_done_ns),
                        # ... and to CUDA's start in the process (inside its first CUDA call): what comes before is
                        # the program's own host code (and the runtime's constructor), what comes after CUDA's part.
                        "cuda_init_s": since_spawn_s(res, cuda_init_ns),
                    })
            if stopped:
                break
            log(f"phase 2: round {r} done")
        return stopped

    # Phase 3 (CORPUS_PHASES=census) ------------------------------------------------------------------------
    def census(self, progs, deadline):
        """Each program's original and plugin build once, CORPUS_PAR at once, with every CUDA API call counted
        (kernel_times.c, CORPUS_API_CENSUS=1): what the plugin's build asks of CUDA that the original does not, per
        program, in all and up to the first launch. Not timed: the callbacks cost each call time."""
        if not self.use_cupti:
            log("phase 3: no census without CUPTI (CORPUS_CUPTI=0 or no libkernel_times.so)")
            return
        par = int(os.environ.get("CORPUS_PAR", "4"))
        progs = [p for p in progs if os.path.exists(os.path.join(self.corpus, "plugin", p["name"]))]

        def one(prog):
            rec = {"name": prog["name"], "mode": "census"}
            for build in ("original", "plugin"):
                left = deadline - time.time()
                if left < 2:
                    rec["skipped"] = True
                    return rec
                cwd = self.rundir(prog, "census-" + build)
                kfile = os.path.join(self.work, "ktime", f"{prog['name']}.census-{build}.tsv")
                os.makedirs(os.path.dirname(kfile), exist_ok=True)
                res = self.execute(prog, build, {"CORPUS_API_CENSUS": "1"}, min(120.0, left), cwd, kfile)
                kernels = read_ktable(kfile)[0] or {}
                rec[build] = {"rc": res["rc"], "timed_out": res["timed_out"], "api": read_api_census(kfile),
                              "launches": sum(k[0] for k in kernels.values())}
                shutil.rmtree(cwd, ignore_errors=True)
            return rec

        done = 0
        with concurrent.futures.ThreadPoolExecutor(par) as pool:
            for fut in concurrent.futures.as_completed([pool.submit(one, p) for p in progs]):
                self.emit(fut.result())
                done += 1
        log(f"phase 3: census of {done} programs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds by which both phases end")
    args = ap.parse_args()
    r = Runner(args)
    progs = read_manifest(r.corpus)
    only = os.environ.get("CORPUS_ONLY")
    if only:
        progs = [p for p in progs if re.search(only, p["name"])]
    log(f"{len(progs)} programs, {'dry run, ' if r.dry else ''}CUPTI {'on' if r.use_cupti else 'off'}")
    # CORPUS_PHASES=timing: the timing rounds alone (a second call's worth of rounds, once the correctness phase
    # of the same build has run in another call).
    phases = os.environ.get("CORPUS_PHASES", "correctness,timing").split(",")
    if not set(phases) <= {"correctness", "timing", "census"}:
        sys.exit(f"runner.py: CORPUS_PHASES={','.join(phases)}: expected correctness, timing, census or a list of them")
    orig_time, orig_lines = r.correctness(progs, args.deadline) if "correctness" in phases else ({}, {})
    if "timing" in phases:
        r.timing(progs, orig_time, orig_lines, args.deadline)
    if "census" in phases:
        r.census(progs, args.deadline)
    log("done")


if __name__ == "__main__":
    sys.exit(main())
