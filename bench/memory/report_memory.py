#!/usr/bin/env python3
"""report_memory.py: the markdown section and JSON entry for bench/memory/pressure.sh (schedGPU §7.2, Fig. 10).

Usage: report_memory.py PRESSURE_JSONL [RESULTS_JSON RESULTS_MD]
  Prints the section; with RESULTS_JSON and RESULTS_MD also adds "memory_pressure" (summary, checks, the run lines)
  to the JSON and appends the section to the markdown. The last line printed is "memory: N passed, N failed";
  exits 1 when a check failed.

Checks (each one pass or fail):
  - original_serial: every job verified (the baseline itself must work).
  - every admitted mode (preempt_*, preload_*): in every repetition every job verified, none out of memory, none
    hung, and every job's allocation admitted (its process's ledger held the demand).
  - original_concurrent and original_packed: no wrong values and no hang; out of memory there is the expected
    outcome without admission (counted, not a failure).
  - at least one admitted mode ran at all.
The allocation overhead (admission on minus PREEMPT_MEM=off) is reported against the goal (<= 20 us median per
cudaMalloc), not checked."""
import json
import statistics
import sys

OVERHEAD_GOAL_US = 20.0

LABELS = {
    "original_serial": "one at a time, original build (baseline)",
    "original_concurrent": "all at once, original build, no admission",
    "original_packed": "waves of as many as fit, original build (hand-packed)",
    "preempt_fifo": "all at once, plugin + runtime build, implicit admission, fifo",
    "preempt_mmu": "all at once, plugin + runtime build, implicit admission, mmu",
    "preempt_priority-fifo": "all at once, plugin + runtime build, implicit admission, priority-fifo",
    "preempt_priority-mmu": "all at once, plugin + runtime build, implicit admission, priority-mmu",
    "preload_fifo": "all at once, shared-runtime build + LD_PRELOAD, fifo",
    "preload_mmu": "all at once, shared-runtime build + LD_PRELOAD, mmu",
    "preempt_budget": "all at once, runtime build, explicit budget (preempt_mem_budget), 4 cudaMalloc each, fifo",
    "daemon_fifo": "all at once, plugin + runtime build, ledger kept by preemptd, fifo",
    "daemon_mmu": "all at once, plugin + runtime build, ledger kept by preemptd, mmu",
}
BASELINES = ("original_concurrent", "original_packed")


def load(path):
    rows = []
    try:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    rows.append({"kind": "note", "failed": f"line {number} is not JSON: {line[:200]}"})
    except OSError as error:
        rows.append({"kind": "note", "failed": f"no output from pressure.sh ({error})"})
    return rows


def admitted_mode(mode):
    return mode.startswith(("preempt_", "preload_", "daemon_"))


def spread(values, fmt="{:.2f}"):
    if not values:
        return "n/a"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def job_problem(job, mode):
    """Why this job fails its mode's check, or None."""
    outcome = job.get("outcome")
    where = f"job {job.get('job', job.get('index'))}"
    if outcome == "hang":
        return f"{where}: {job.get('failed', 'hung')}"
    if outcome == "wrong":
        return f"{where}: wrong values ({job.get('wrong_words')} words, {job.get('sampled_wrong')} sampled)"
    if mode in BASELINES:
        return None  # out of memory or another error: expected without admission
    if outcome == "oom":
        return f"{where}: out of memory ({job.get('phase')}: {job.get('error', '')[:160]})"
    if outcome != "ok":
        return f"{where}: {job.get('failed') or job.get('error') or 'failed'} {job.get('stderr', '')[:160]}".strip()
    if admitted_mode(mode) and job.get("admitted") is not True:
        return f"{where}: verified, but its allocation was not admitted (admitted={json.dumps(job.get('admitted'))})"
    return None


def summarize(rows):
    config = next((r for r in rows if r.get("kind") == "config"), {})
    runs = [r for r in rows if r.get("kind") == "run" and r.get("mode") != "calibrate"]
    jobs = [r for r in rows if r.get("kind") == "job" and r.get("mode") != "calibrate"]
    notes = [r for r in rows if r.get("kind") == "note"]
    overhead = {r.get("mode"): r for r in rows if r.get("kind") == "overhead"}
    serial = next((r for r in runs if r.get("mode") == "original_serial"), None)
    serial_s = serial.get("makespan_s") if serial else None
    modes = {}
    for run in runs:
        mode = run.get("mode", "?")
        entry = modes.setdefault(mode, {"runs": [], "problems": []})
        entry["runs"].append(run)
        if run.get("failed"):
            entry["problems"].append(f"{run.get('run')}: {run['failed']}")
    for job in jobs:
        mode = job.get("mode", "?")
        entry = modes.setdefault(mode, {"runs": [], "problems": []})
        problem = job_problem(job, mode)
        if problem:
            entry["problems"].append(f"{job.get('run')}, {problem}")
    summary = {}
    for mode, entry in modes.items():
        mode_jobs = [j for j in jobs if j.get("mode") == mode]
        makespans = [r["makespan_s"] for r in entry["runs"] if isinstance(r.get("makespan_s"), (int, float))]
        waits = [j["alloc_us"] / 1e6 for j in mode_jobs
                 if j.get("outcome") == "ok" and isinstance(j.get("alloc_us"), (int, float))]
        counts = {o: sum(1 for j in mode_jobs if j.get("outcome") == o) for o in ("ok", "oom", "wrong", "hang", "error")}
        per_run_oom = [r.get("oom", 0) for r in entry["runs"]]
        admitted = sum(1 for j in mode_jobs if j.get("admitted") is True)
        summary[mode] = {
            "reps": len(entry["runs"]), "jobs": len(mode_jobs), **counts, "oom_per_run": per_run_oom,
            "admitted": admitted,
            "makespan_s_median": statistics.median(makespans) if makespans else None,
            "makespan_s_range": [min(makespans), max(makespans)] if makespans else None,
            "makespans_s": makespans,
            "ratio_to_serial": (statistics.median(makespans) / serial_s) if makespans and serial_s else None,
            "alloc_s_median": statistics.median(waits) if waits else None,
            "alloc_s_max": max(waits) if waits else None,
            "problems": entry["problems"],
        }
    checks = []
    for mode in sorted(summary, key=lambda m: list(LABELS).index(m) if m in LABELS else len(LABELS)):
        entry = summary[mode]
        if mode != "original_serial" and mode not in BASELINES and not admitted_mode(mode):
            continue
        problems = list(entry["problems"])
        if entry["jobs"] == 0:
            problems.append("no job ran")
        checks.append({"check": mode, "passed": not problems, "problems": problems[:12],
                       "more_problems": max(0, len(problems) - 12)})
    if summary and not any(admitted_mode(mode) for mode in summary):
        checks.append({"check": "admission exercised", "passed": False,
                       "problems": ["no admitted mode ran (skipped for time, or excluded by PRESSURE_ONLY)"]})
    failed_notes = [n["failed"] for n in notes if n.get("failed")]
    if failed_notes or not summary:
        checks.append({"check": "pressure.sh ran", "passed": False,
                       "problems": failed_notes or ["no run in the output"]})
    costs = {}
    # preemptd's ledger is compared with the same build's PREEMPT_MEM=off.
    for build, on_mode, off_mode in (("preempt", "overhead_preempt_on", "overhead_preempt_off"),
                                     ("preload", "overhead_preload_on", "overhead_preload_off"),
                                     ("preemptd", "overhead_daemon_on", "overhead_preempt_off")):
        on, off = overhead.get(on_mode), overhead.get(off_mode)
        if not on and not off:
            continue
        cost = {"on": on, "off": off}
        usable = all(r and r.get("outcome") == "ok" and r.get("malloc_us") for r in (on, off))
        if usable:
            for call in ("malloc_us", "free_us"):
                cost[call] = {stat: on[call][stat] - off[call][stat] for stat in ("median", "p99", "mean")}
            cost["admitted"] = on.get("admitted")
            cost["goal_met"] = cost["malloc_us"]["median"] <= OVERHEAD_GOAL_US and on.get("admitted") is True
        costs[build] = cost
    return {"config": config, "serial_s": serial_s, "modes": summary, "checks": checks, "overhead": overhead,
            "overhead_cost": costs, "notes": notes}


def gib(value):
    return f"{value / 2**30:.1f} GiB"


def markdown(summary):
    config = summary["config"]
    out = ["", "## Memory admission under pressure (bench/memory/pressure.sh; schedGPU §7.2, Fig. 10)", ""]
    if config:
        total = config.get("total_mib", 0) * 2**20
        demand = config.get("demand_bytes", 0)
        out.append(f"{config.get('jobs')} processes (bench/memory/mem_pressure.cu), each demanding "
                   f"{gib(demand)} ({config.get('share_pct')}% of the GPU's {gib(total)}; "
                   f"{config.get('jobs', 0) * demand / total if total else 0:.1f}x the GPU in all): allocate, write a "
                   f"pattern, compute passes over all of it (about {config.get('t_ms')} ms alone"
                   + (f", then {config.get('host_ms')} ms on the host" if config.get("host_ms") else "")
                   + "), check every word, free. Makespan = first process launched to last exited (process start "
                   f"included); ratio = makespan / the serial run's, same call. Repetitions: up to "
                   f"{config.get('reps')}; median (min..max). CUDA_DEVICE_MAX_CONNECTIONS="
                   f"{config.get('cuda_device_max_connections')} for every build. GPU memory in use before: "
                   f"{config.get('used_mib_before')} MiB.")
        out.append("")
    out += ["| mode | runs | jobs ok / oom / other | admitted | makespan s | ratio to serial | time in allocation s, "
            "median (max) |", "|---|---|---|---|---|---|---|"]
    order = sorted(summary["modes"], key=lambda m: list(LABELS).index(m) if m in LABELS else len(LABELS))
    for mode in order:
        entry = summary["modes"][mode]
        other = entry["wrong"] + entry["hang"] + entry["error"]
        makespan = spread(entry["makespans_s"])
        ratio = f"{entry['ratio_to_serial']:.2f}" if entry["ratio_to_serial"] else "n/a"
        if mode == "original_concurrent" and entry["oom"]:
            ratio += " (not comparable: jobs failed)"
        wait = (f"{entry['alloc_s_median']:.3f} ({entry['alloc_s_max']:.3f})"
                if entry["alloc_s_median"] is not None else "n/a")
        admitted = f"{entry['admitted']}/{entry['jobs']}" if admitted_mode(mode) else "-"
        out.append(f"| {LABELS.get(mode, mode)} | {entry['reps']} | {entry['ok']} / {entry['oom']} / {other} | "
                   f"{admitted} | {makespan} | {ratio} | {wait} |")
    out.append("")
    base = summary["modes"].get("original_concurrent")
    if base:
        out.append(f"Without admission, all at once: {base['oom']} of {base['jobs']} jobs failed with out of memory "
                   f"(per run: {', '.join(map(str, base['oom_per_run']))}); with admission none may.")
    zero = [f"{m}: {'zero OOM' if summary['modes'][m]['oom'] == 0 else str(summary['modes'][m]['oom']) + ' OOM'}"
            for m in order if admitted_mode(m)]
    if zero:
        out.append("Admitted modes: " + "; ".join(zero) + ".")
    implicit = summary["modes"].get("preempt_fifo")
    if implicit and implicit["jobs"] and implicit["admitted"] == 0:
        out.append("**The plugin build admitted none of its allocations**: its cudaMalloc was not routed to "
                   "preempt_cudaMalloc (the host pass of feature/alloc-rewrite missing from this build?).")
    costs = summary["overhead_cost"]
    rows = summary["overhead"]
    if rows:
        out += ["", f"### Cost of one allocation (cudaMalloc + cudaFree of "
                    f"{config.get('overhead_size', 0) / 2**20:.0f} MiB, {config.get('overhead_calls')} pairs, "
                    f"one by one, after a warm-up)", "",
                "| build | admission | admitted | cudaMalloc us median (p99) | cudaFree us median (p99) |",
                "|---|---|---|---|---|"]
        for mode in ("overhead_original_off", "overhead_preempt_on", "overhead_preempt_off", "overhead_preload_on",
                     "overhead_preload_off", "overhead_daemon_on"):
            row = rows.get(mode)
            if not row:
                continue
            if row.get("outcome") != "ok" or not row.get("malloc_us"):
                out.append(f"| {row.get('build')} | {row.get('admission')} | | failed: "
                           f"{(row.get('failed') or row.get('error') or '')[:160]} | |")
                continue
            out.append(f"| {row.get('build')}{' (LD_PRELOAD)' if row.get('preload') else ''} | {row.get('admission')} "
                       f"| {json.dumps(row.get('admitted'))} | {row['malloc_us']['median']:.1f} "
                       f"({row['malloc_us']['p99']:.1f}) | {row['free_us']['median']:.1f} ({row['free_us']['p99']:.1f}) |")
        if costs:
            out += ["", "What admission adds per call (admission on minus PREEMPT_MEM=off, same build), us:", "",
                    "| build | cudaMalloc median: on / off / added | cudaMalloc p99: on / off / added | "
                    "cudaFree median: on / off / added | cudaFree p99: on / off / added | goal: added median "
                    f"<= {OVERHEAD_GOAL_US:.0f} us per cudaMalloc |", "|---|---|---|---|---|---|"]
        for build, cost in costs.items():
            if "malloc_us" not in cost:
                out.append(f"| {build} | no figure: a run failed | | | | |")
                continue
            verdict = ("met" if cost["goal_met"] else
                       "n/a: admission was not active (not a measurement of it)" if cost.get("admitted") is not True
                       else "NOT met")
            cells = []
            for call in ("malloc_us", "free_us"):
                for stat in ("median", "p99"):
                    cells.append(f"{cost['on'][call][stat]:.1f} / {cost['off'][call][stat]:.1f} / "
                                 f"{cost[call][stat]:+.1f}")
            out.append(f"| {build}{' (LD_PRELOAD)' if build == 'preload' else ''} | " + " | ".join(cells) +
                       f" | {verdict} |")
    skipped = [n for n in summary["notes"] if n.get("skipped")]
    if skipped:
        out += ["", "Skipped for time: " + ", ".join(n["skipped"] for n in skipped) + "."]
    failed = [c for c in summary["checks"] if not c["passed"]]
    if failed:
        out += ["", "Failed checks:", ""]
        for check in failed:
            more = f" (+{check['more_problems']} more)" if check.get("more_problems") else ""
            out.append(f"- {check['check']}: " + "; ".join(check["problems"]) + more)
    passed = sum(1 for c in summary["checks"] if c["passed"])
    out += ["", f"Memory checks: {passed} passed, {len(summary['checks']) - passed} failed "
                f"({', '.join(c['check'] + (' ok' if c['passed'] else ' FAILED') for c in summary['checks'])})."]
    return out


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit("usage: report_memory.py PRESSURE_JSONL [RESULTS_JSON RESULTS_MD]")
    rows = load(sys.argv[1])
    summary = summarize(rows)
    lines = markdown(summary)
    text = "\n".join(lines) + "\n"
    if len(sys.argv) == 4:
        try:
            with open(sys.argv[2]) as handle:
                results = json.load(handle)
        except (OSError, ValueError):
            results = {}
        results["memory_pressure"] = {
            "config": summary["config"], "serial_s": summary["serial_s"], "modes": summary["modes"],
            "checks": summary["checks"], "overhead": summary["overhead"], "overhead_cost": summary["overhead_cost"],
            "runs": [r for r in rows if r.get("kind") in ("run", "note")],
        }
        with open(sys.argv[2], "w") as handle:
            json.dump(results, handle, indent=1)
        with open(sys.argv[3], "a") as handle:
            handle.write(text)
    print(text, end="")
    failed = sum(1 for c in summary["checks"] if not c["passed"])
    print(f"memory: {len(summary['checks']) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
