#!/usr/bin/env python3
# report_suite.py: compares the outputs of the original and converted builds and writes the results table.
# Called by bench/gpu_check.sh; medians and spreads over alternating rounds, ratio against the same run's baseline.
import datetime
import json
import os
import re
import statistics
import struct
import sys


MIN_STRESS_EVICTIONS = 20


def compare(original, converted, tolerance):
    """Bit-exact, or within a relative tolerance for programs that declare one (float atomics)."""
    with open(original, "rb") as a, open(converted, "rb") as b:
        left, right = a.read(), b.read()
    if len(left) != len(right) or len(left) == 0:
        return False, f"sizes differ ({len(left)} vs {len(right)} bytes)"
    if left == right:
        return True, "bit-exact"
    if tolerance == 0:
        first = next(i for i in range(len(left)) if left[i] != right[i])
        return False, f"differs from byte {first}"
    count = len(left) // 4
    worst = 0.0
    for x, y in zip(struct.unpack(f"{count}f", left[: 4 * count]), struct.unpack(f"{count}f", right[: 4 * count])):
        scale = max(abs(x), abs(y), 1e-30)
        worst = max(worst, abs(x - y) / scale)
    return worst <= tolerance, f"max relative difference {worst:.3g} (tolerance {tolerance:g})"


def preemption_table(bench):
    """The preemption benchmark's scenarios, host-observed, in microseconds."""
    if not bench:
        return []
    original, converted = bench.get("original", {}), bench.get("preempt", {})
    lines = ["", "## Preemption (bench/preemption/preempt_bench.cu)", ""]
    if original.get("failed") or converted.get("failed"):
        return lines + ["preempt_bench failed: see the log."]
    lines += [f"Long kernel: {original.get('long_kernel_us', 0) / 1000:.1f} ms original, "
              f"{converted.get('long_kernel_us', 0) / 1000:.1f} ms converted; task length "
              f"{converted.get('task_us', 0):.1f} us (converted), {converted.get('ctas_per_sm')} CTAs/SM x "
              f"{converted.get('sms')} SMs.", "",
              "| short kernel's turnaround | original build: median (p99) us | x alone | converted build: median (p99) us | x alone |",
              "|---|---|---|---|---|"]
    def cell(result, key, alone_key="short_alone"):
        value, alone = result.get(key), result.get(alone_key)
        if not value:
            return "n/a | n/a"
        return f"{value['median_us']:.0f} ({value['p99_us']:.0f}) | {value['median_us'] / alone['median_us']:.1f}"
    for label, key in (("alone", "short_alone"), ("(a) same-priority streams", "short_same_priority"),
                       ("(b) CUDA stream priorities", "short_stream_priority"),
                       ("(c) temporal eviction", "short_temporal_eviction"),
                       ("(d) spatial eviction, just enough SMs (blocks packed at occupancy)", "short_spatial_eviction"),
                       ("(e) spatial eviction, one SM per block", "short_spatial_spread"),
                       ("(f) as (e), short kernel on the higher-priority stream: (b)'s eviction asked by the program",
                        "short_spatial_spread_urgent_stream")):
        lines.append(f"| {label} | {cell(original, key)} | {cell(converted, key)} |")
    temporal, spatial = converted.get("pair_temporal"), converted.get("pair_spatial")
    if temporal and spatial:
        lines += ["", f"Pair total (long + short), converted: temporal {temporal['median_us']:.0f} us, spatial "
                      f"{spatial['median_us']:.0f} us (spatial / temporal = {spatial['median_us'] / temporal['median_us']:.3f}); "
                      f"same-priority co-run {converted['pair_same_priority']['median_us']:.0f} us."]
        spread = converted.get("pair_spatial_spread")
        if spread:
            lines[-1] += (f" One SM per block: {spread['median_us']:.0f} us (/ temporal = "
                          f"{spread['median_us'] / temporal['median_us']:.3f}).")
    for key, task, checks in (("eviction_latency", converted.get("task_us", 0), "adaptive check interval"),
                              ("eviction_latency_short_tasks", converted.get("task_us", 0) / 10,
                               "adaptive check interval"),
                              ("eviction_latency_short_tasks_every_task", converted.get("task_us", 0) / 10,
                               "a check before every task")):
        latency = converted.get(key)
        if latency:
            lines += ["", f"Eviction latency (request to every CTA gone, host-observed), {latency['n']} evictions, "
                          f"tasks of about {task:.1f} us (by their iteration count), {checks}: median "
                          f"{latency['median_us']:.0f} us, p99 {latency['p99_us']:.0f} us, max {latency['max_us']:.0f} us."]
    for trap in bench.get("queue_trap", []):
        if trap.get("failed"):
            lines += ["", f"Hardware-queue trap, CUDA_DEVICE_MAX_CONNECTIONS={trap.get('connections', '?')}, "
                          f"{trap.get('app_streams', '?')} application streams: FAILED or HUNG (deadlock)."]
            continue
        lines += ["", f"Hardware-queue trap, CUDA_DEVICE_MAX_CONNECTIONS={trap['connections']}: "
                      f"{trap['evicted']} of {trap['app_streams']} application streams evicted "
                      f"({trap['evict_refused']} refused); unrelated streams that ran while they were held: "
                      f"{trap['unrelated_streams_ran_while_held']}/{trap['app_streams']}; after resuming, "
                      f"{trap['app_streams_finished']}/{trap['app_streams']} finished in {trap['resume_to_done_ms']:.0f} ms, "
                      f"stream-order errors {trap['order_errors']}."]
    return lines


def stress_outcome(original, stress):
    """A run under PREEMPT_STRESS against the original build: its result, said, and its evictions."""
    if not stress:
        return "not run", 0
    evictions = stress["evictions"]
    if stress["statuses"][0] != "ok":
        return "FAILED: " + stress["errors"][0][-200:], evictions
    same, why = compare(original["outputs"][-1], stress["outputs"][0], original["tolerance"])
    # Fewer evictions than the threshold is not a failure of the converted
    # code, but the run proved less: said as such. The runtime's stress line
    # counts the launches that ran the unconverted copy: one wave, no task
    # boundary to evict at.
    one_wave = re.search(r"(\d+) one-wave launches run as written", stress["errors"][0])
    one_wave = int(one_wave.group(1)) if one_wave else 0
    return (f"MISMATCH ({why})" if not same else
            "match" if evictions >= MIN_STRESS_EVICTIONS else
            f"match, but under {MIN_STRESS_EVICTIONS} evictions: its {one_wave} one-wave launches "
            "ran unconverted (no task boundary to evict at)" if one_wave else
            f"match, but under {MIN_STRESS_EVICTIONS} evictions: kernels too short to be caught"), evictions


def main():
    raw_path, results_dir, gpu = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = {}
    for line in open(raw_path):
        fields = line.split()
        name, build, _round, status, timing, tolerance, converted, refused, output, errors = fields[:10]
        evictions = int(fields[10]) if len(fields) > 10 else 0
        entry = runs.setdefault(name, {"converted": int(converted), "refused": int(refused), "builds": {}})
        build_runs = entry["builds"].setdefault(build, {"times": [], "statuses": [], "outputs": [], "errors": []})
        build_runs["times"].append(float(timing))
        build_runs["statuses"].append(status)
        build_runs["tolerance"] = float(tolerance)
        build_runs["outputs"].append(output)
        build_runs["errors"].append(open(errors).read().strip()[-400:] if os.path.exists(errors) else "")
        build_runs["evictions"] = evictions
    rows, failures = [], 0
    for name, entry in sorted(runs.items()):
        original, converted = entry["builds"]["original"], entry["builds"]["preempt"]
        ok = all(s == "ok" for s in original["statuses"] + converted["statuses"])
        detail = ""
        if ok:
            ok, detail = compare(original["outputs"][-1], converted["outputs"][-1], original["tolerance"])
        else:
            detail = "; ".join(e for e in original["errors"] + converted["errors"] if e)[:400] or "a run failed"
        # Under stress the converted build must still match, and must really
        # have been evicted: at least 20 times. Twice: as the runtime chooses
        # each kernel's form, and with every launch in the drain form.
        stress_result, stress_evictions = stress_outcome(original, entry["builds"].get("stress"))
        drain_result, drain_evictions = stress_outcome(original, entry["builds"].get("stress_drain"))
        # Kernels with in-task points: a third time with every launch in the in-task variant.
        intask_result, intask_evictions = stress_outcome(original, entry["builds"].get("stress_intask"))
        ok = (ok and stress_result.startswith("match") and drain_result.startswith(("match", "not run")) and
              intask_result.startswith(("match", "not run")))
        # Run again with PREEMPT_ONE_WAVE=persistent (launch_storm, whose one-wave launches run the kernel as
        # written by default): the persistent form's output must match too.
        persistent = entry["builds"].get("persistent")
        persistent_result, persistent_ms = None, float("nan")
        if persistent:
            if persistent["statuses"][0] != "ok":
                persistent_result = "FAILED: " + persistent["errors"][0][-200:]
            else:
                same, why = compare(original["outputs"][-1], persistent["outputs"][0], original["tolerance"])
                persistent_result = "match" if same else f"MISMATCH ({why})"
                persistent_ms = persistent["times"][0]
            ok = ok and persistent_result == "match"
        failures += not ok
        base = statistics.median(original["times"]) if ok else float("nan")
        conv = statistics.median(converted["times"]) if ok else float("nan")
        rows.append({
            "program": name, "kernels_converted": entry["converted"], "kernels_refused": entry["refused"],
            "result": "match" if ok else "MISMATCH", "detail": detail,
            "original_ms_median": base, "original_ms_spread": [min(original["times"]), max(original["times"])],
            "preempt_ms_median": conv, "preempt_ms_spread": [min(converted["times"]), max(converted["times"])],
            "ratio": conv / base if ok and base > 0 else float("nan"),
            "rounds": min(len(original["times"]), len(converted["times"])),
            "stress_result": stress_result, "stress_evictions": stress_evictions,
            "drain_stress_result": drain_result, "drain_stress_evictions": drain_evictions,
            "intask_stress_result": intask_result, "intask_stress_evictions": intask_evictions,
        })
        if persistent_result is not None:
            rows[-1]["one_wave_persistent_result"] = persistent_result
            rows[-1]["one_wave_persistent_ms"] = persistent_ms
            rows[-1]["one_wave_persistent_ratio"] = persistent_ms / statistics.median(original["times"])
    ratios = [r["ratio"] for r in rows if r["result"] == "match" and r["ratio"] == r["ratio"]]
    geomean = statistics.geometric_mean(ratios) if ratios else float("nan")
    stamp = datetime.date.today().isoformat()
    slug = gpu.replace(" ", "-").replace("/", "-")
    os.makedirs(results_dir, exist_ok=True)
    bench = {}
    if len(sys.argv) > 5:
        for build, path in (("original", sys.argv[4]), ("preempt", sys.argv[5])):
            try:
                bench[build] = json.load(open(path))
            except (OSError, ValueError):
                bench[build] = {"failed": True}
        failures += sum(1 for b in bench.values() if b.get("failed") or b.get("wrong_blocks_sampled", 0))
    traps = []
    for path in sys.argv[6:]:
        try:
            traps.append(json.load(open(path)))
        except (OSError, ValueError):
            traps.append({"failed": True})
    for trap in traps:
        stuck = trap.get("failed") or trap.get("app_streams_finished") != trap.get("app_streams") or trap.get("order_errors")
        failures += bool(stuck)
    bench["queue_trap"] = traps
    # What the runtime's stream operations cost per launch (launch.c records
    # 3 events and waits on done_generation around every launch).
    launch_costs_path = os.environ.get("PREEMPT_LAUNCH_COSTS")
    if launch_costs_path:
        try:
            bench["launch_costs"] = json.load(open(launch_costs_path))
        except (OSError, ValueError):
            bench["launch_costs"] = {"failed": True}
            failures += 1
    summary = {"date": stamp, "gpu": gpu, "programs": rows, "geomean_ratio": geomean, "failures": failures,
               "preemption": bench,
               "method": "median of per-run medians over rounds, each build first in every other round (3, up to 9 while a program's medians are more than "
                         "3% apart or a build spreads over 5%); spread = min..max of those medians"}
    with open(os.path.join(results_dir, f"{stamp}-{slug}.json"), "w") as out:
        json.dump(summary, out, indent=2)
    lines = [f"# Correctness suite, {gpu}, {stamp}", "",
             "| program | kernels converted / refused | result | original ms (min..max) | preempt ms (min..max) | ratio (rounds) | under random evictions | drain form under random evictions | in-task variant under random evictions |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['program']} | {r['kernels_converted']} / {r['kernels_refused']} | {r['result']} ({r['detail']}) | "
                     f"{r['original_ms_median']:.3f} ({r['original_ms_spread'][0]:.3f}..{r['original_ms_spread'][1]:.3f}) | "
                     f"{r['preempt_ms_median']:.3f} ({r['preempt_ms_spread'][0]:.3f}..{r['preempt_ms_spread'][1]:.3f}) | "
                     f"{r['ratio']:.3f} ({r['rounds']}) | {r['stress_result']}, {r['stress_evictions']} evictions | "
                     f"{r['drain_stress_result']}, {r['drain_stress_evictions']} evictions | "
                     f"{r['intask_stress_result']}" +
                     (f", {r['intask_stress_evictions']} evictions |" if r['intask_stress_result'] != "not run" else " |"))
    for r in rows:
        if "one_wave_persistent_result" in r:
            lines += ["", f"{r['program']} with PREEMPT_ONE_WAVE=persistent (its one-wave launches in the persistent "
                          f"form instead of as written): {r['one_wave_persistent_result']}, "
                          f"{r['one_wave_persistent_ms']:.3f} ms, {r['one_wave_persistent_ratio']:.3f}x the original "
                          f"build's median (one run, not in the geomean)."]
    lines += ["", f"Geomean ratio (preempt / original): {geomean:.3f}; failures: {failures}"]
    lines += preemption_table(bench)
    costs = bench.get("launch_costs")
    if costs and not costs.get("failed"):
        plain = costs["plain"]["median_us"]
        lines += ["", "## Launch path (bench/preemption/launch_costs.cu)", "",
                  f"{costs['launches']} back-to-back launches of a one-CTA kernel in one non-blocking stream, "
                  f"median of {costs['rounds'] - 1} rounds (min..max), per launch:", "",
                  "| stream operations per launch | us per launch | x plain |", "|---|---|---|"]
        for key, label in (("plain", "the kernel alone"), ("events", "+ 3 event records"),
                           ("wait", "+ cuStreamWaitValue32 on the value the kernel wrote"),
                           ("events_and_wait", "+ both (the runtime's shape)")):
            entry = costs[key]
            lines.append(f"| {label} | {entry['median_us']:.2f} ({entry['min_us']:.2f}..{entry['max_us']:.2f}) | "
                         f"{entry['median_us'] / plain:.2f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(results_dir, f"{stamp}-{slug}.md"), "w") as out:
        out.write(text)
    print(text)
    checks = len(rows) + (2 if len(sys.argv) > 5 else 0) + len(sys.argv[6:]) + ("launch_costs" in bench)
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
