#!/usr/bin/env python3
"""report_intask.py OUT/intask.jsonl REMARKS_FILE > report.md: in-task preemption (issue 8) as markdown tables.

Reads the JSON lines bench/intask/intask_check.sh wrote and the plugin build's remarks
(build/bench/remarks/intask_bench.txt). Per kernel: eviction latency at task boundaries (PREEMPT_INTASK=off) and in
tasks (on), the bytes each in-task yield point saves per CTA against every live value, the time of the builds
(ratios against the original build and the -preempt-intask=0 build measured in the same run), correctness. Then the
short kernel's turnaround under time-slicing, MPS, preemptd's hpf and in one process. Medians with (min..max)."""
import json
import re
import sys

KERNELS = ["stencil", "gemm", "persistent", "solver", "atomics"]
CHECK_ONLY_KERNELS = ["retile", "retile128"]  # rounds.sh's check_only_kernels: correctness only
REMARK = re.compile(r"in-task yield point at loop (.*?) of kernel '([^']*)': saves (\d+) B per thread and "
                    r"(\d+) B per CTA and (\d+) B of shared memory(?: \(at (\d+)x(\d+)x(\d+) threads (\d+) B[^)]*\))?"
                    r"(?: \([^)]*\))?; every live value: (\d+) B per thread")


def load(path):
    runs = {}
    with open(path) as lines:
        for text in lines:
            text = text.strip()
            if not text:
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue
            runs[line.get("label", "?")] = line
    return runs


def result(runs, label):
    line = runs.get(label)
    if not line or not isinstance(line.get("result"), dict):
        return None
    r = line["result"]
    return None if "failed" in r or "skipped" in r else r


def spread(stats, digits=1, key="median"):
    if not stats or not stats.get("n"):
        return "n/a"
    f = f"{{:.{digits}f}}"
    return f"{f.format(stats[key])} ({f.format(stats['min'])}..{f.format(stats['max'])})"


def remarks(path):
    points = {}
    seen = set()
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return points
    for match in REMARK.finditer(text):
        if match.group(0) in seen:  # a remark may be printed once per compilation step
            continue
        seen.add(match.group(0))
        loop, kernel, per_thread, per_cta, shared, x, y, z, copied, live = match.groups()
        name = next((k for k in KERNELS if f"intask_{k}" in kernel), kernel)
        # Shared memory copied by a CTA of the launch bounds' shape (passes/SharedLiveness.cpp), when it differs.
        at_shape = f"{copied} at {x}x{y}x{z}" if copied is not None else shared
        points.setdefault(name, []).append((loop, int(per_thread), int(per_cta), f"{shared} ({at_shape})"
                                            if copied is not None else shared, int(live)))
    return points


def ratio(a, b):
    if not a or not b:
        return "n/a"
    return f"{a['time']['median'] / b['time']['median']:.3f}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report_intask.py OUT/intask.jsonl REMARKS_FILE")
    runs = load(sys.argv[1])
    points = remarks(sys.argv[2])
    gpu = next((line["result"].get("gpu") for line in runs.values()
                if isinstance(line.get("result"), dict) and line["result"].get("gpu")), "unknown GPU")
    out = [f"# In-task preemption on {gpu}", ""]
    out.append("Eviction latency: request returned to EVICTED (or DONE when the launch ended first), µs, "
               "median (min..max) and p99 (nearest rank); `off`: yields at task (CUDA block) boundaries only, "
               "`on`: in-task yield points; `GPU on`: the same evictions on the GPU's clock, from the runtime's event "
               "after the eviction's words to the last grid's end (PREEMPT_TIME_EVICTIONS=1). "
               "Time: one launch, ms, median of 7 (min..max).")
    out.append("")
    out.append("| kernel | grid x threads | block ms (original, est.) | latency off | p99 off | latency on | p99 on | "
               "on/off median | evictions off / on (done first) | latency nested | p99 nested | GPU on | GPU p99 on |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in KERNELS:
        t = result(runs, f"time-{k}-original")
        off, on = result(runs, f"latency-{k}-off"), result(runs, f"latency-{k}-on")
        nested = result(runs, f"latency-{k}-nested")
        if not (t or off or on):
            continue
        shape = f"{t['blocks']} x {t['threads']}" if t else "n/a"
        block = f"{t['block_ms_estimate']:.2f} ({t['waves']} waves)" if t else "n/a"
        lat = lambda r: r["latency"] if r else None
        rel = (f"{on['latency']['median'] / off['latency']['median']:.3f}"
               if on and off and off["latency"].get("n") and on["latency"].get("n") else "n/a")
        ev = lambda r: f"{r['evictions']} ({r['done_first']})" if r else "n/a"
        p99_of = lambda stats: f"{stats['p99']:.1f}" if stats and stats.get("n") else "n/a"
        p99 = lambda r: p99_of(r["latency"] if r else None)
        gpu_lat = on.get("gpu_latency") if on else None
        out.append(f"| {k} | {shape} | {block} | {spread(lat(off))} | {p99(off)} | {spread(lat(on))} | {p99(on)} | "
                   f"{rel} | {ev(off)} / {ev(on)} | {spread(lat(nested))} | {p99(nested)} | "
                   f"{spread(gpu_lat)} | {p99_of(gpu_lat)} |")
    # Slow in-task evictions against how long the launch had run since its last resume (or its start): whether
    # the tail follows resumes (relaunched grids restoring contexts, not yet running) or comes at any time.
    slow_lines = []
    for k in [f"{k}-{mode}" for k in KERNELS for mode in ("on", "nested")]:
        on = result(runs, f"latency-{k}")
        if not on or not on["latency"].get("n") or "since_resume_us" not in on:
            continue
        pairs = list(zip(on["latency"]["samples"], on["since_resume_us"]))
        slow = sorted((round(latency), round(since)) for latency, since in pairs if latency > 50)
        if slow:
            slow_lines.append(f"| {k} | {len(slow)} of {len(pairs)} | "
                              + ", ".join(f"{latency} µs after {since} µs" for latency, since in slow) + " |")
    if slow_lines:
        out += ["", "In-task evictions over 50 µs, and how long the launch had run since its last resume (or start) "
                "when the request came (gaps between requests: 200-3000 µs, or from INTASK_GAP_MIN_US):", "",
                "| kernel | evictions over 50 µs | latency after time since resume |", "|---|---|---|"] + slow_lines
    out += ["", "Overhead when never evicted (PREEMPT_INTASK=on, PREEMPT_FORM=persistent, PREEMPT_ONE_WAVE=persistent); "
            "goal: in-task points ≤ 1.02 over the -preempt-intask=0 build.", ""]
    out.append("| kernel | original ms | plugin ms | plugin -preempt-intask=0 ms | in-task points (plugin / intask=0) | "
               "plugin / original | intask=0 / original | nested build ms | nested / intask=0 | "
               "count-down build ms | count-down / intask=0 |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in KERNELS:
        o, p, n, d, c = (result(runs, f"time-{k}-{b}")
                         for b in ("original", "preempt", "nointask", "nested", "countdown"))
        if not (o or p or n):
            continue
        s = lambda r: spread(r["time"], 3) if r else "n/a"
        out.append(f"| {k} | {s(o)} | {s(p)} | {s(n)} | {ratio(p, n)} | {ratio(p, o)} | {ratio(n, o)} | {s(d)} | "
                   f"{ratio(d, n)} | {s(c)} | {ratio(c, n)} |")
    out += ["", "Bytes an eviction saves per CTA at each in-task yield point (remarks of the plugin build): registers "
            "T x threads + U (values uniform across the CTA, once) against every live value (L x threads, what "
            "saving all live registers would take); the shared memory S comes on top of both (in parentheses: what a "
            "CTA of the kernel's launch-bounds shape copies, where the CTA writes the rest whole before reading it).",
            ""]
    out.append("| kernel | loop | per thread T | per CTA U | registers saved per CTA | all live registers per CTA "
               "| saved / all live | shared S |")
    out.append("|---|---|---|---|---|---|---|---|")
    any_point = False
    for k in KERNELS:
        threads = next((r["result"].get("threads") for label, r in runs.items()
                        if label.endswith(k) or f"-{k}-" in label if isinstance(r.get("result"), dict)
                        and r["result"].get("threads")), 256)
        for loop, t, u, s, live in points.get(k, []):
            any_point = True
            saved, all_live = t * threads + u, live * threads
            rel = f"{saved / all_live:.3f}" if all_live else "n/a"
            out.append(f"| {k} | {loop} | {t} | {u} | {saved} | {all_live} | {rel} | {s} |")
    if not any_point:
        out.append("| (no in-task yield point in the remarks: a plugin from before issue 8?) | | | | | | | |")
    out += ["", "Correctness: the plugin build's output after random evictions (0.2-3 ms apart) against the "
            "original build's, bit for bit.", ""]
    out.append("| kernel | PREEMPT_INTASK | launches | evictions (reached EVICTED) | most in one launch | mismatched words | seed |")
    out.append("|---|---|---|---|---|---|---|")
    passed = failed = 0
    for k in KERNELS + CHECK_ONLY_KERNELS:
        for mode in ("on", "off", "nested", "chunks"):
            label = f"check-{k}-{mode}"
            if label not in runs:
                continue
            r = result(runs, label)
            if not r:
                failed += 1
                out.append(f"| {k} | {mode} | failed: {json.dumps(runs[label].get('result'))[:80]} | | | | |")
                continue
            ok = r.get("mismatches") == 0 and r.get("evictions", 0) >= r.get("wanted", 0)
            passed, failed = passed + ok, failed + (not ok)
            out.append(f"| {k} | {mode} | {r['launches']} | {r['evictions']} ({r['evicted']}) | "
                       f"{r['max_evictions_per_launch']} | {r['mismatches']}{'' if ok else ' FAIL'} | {r['seed']} |")
    out += ["", f"Correctness runs: {passed} passed, {failed} failed.", ""]
    out.append("High-priority turnaround: a 32-block kernel arriving at random moments while the persistent kernel "
               "with long blocks (one wave) runs; µs, launch to stream done.")
    out.append("")
    out.append("| setting | mean | median (min..max) | p99 | n | long kernel launch ms, median (min..max) |")
    out.append("|---|---|---|---|---|---|")
    names = [("inproc-original", "one process, stream priority only"),
             ("inproc-preempt-off", "one process, evicted on arrival, PREEMPT_INTASK=off"),
             ("inproc-preempt-on", "one process, evicted on arrival, PREEMPT_INTASK=on"),
             ("turnaround-timeslice", "(a) two processes, time-slicing"),
             ("turnaround-mps", "(b) two processes, MPS, high-priority stream"),
             ("turnaround-mps-hpf-intask-on", "(c) MPS + preemptd hpf, PREEMPT_INTASK=on"),
             ("turnaround-mps-hpf-intask-off", "(c') MPS + preemptd hpf, PREEMPT_INTASK=off")]
    for label, text in names:
        if label not in runs:
            continue
        r = result(runs, label)
        if not r:
            out.append(f"| {text} | {json.dumps(runs[label].get('result'))[:80]} | | | | |")
            continue
        t = r["turnaround"]
        long_line = runs[label].get("long")
        long_ms = spread(long_line["launch"], 2) if isinstance(long_line, dict) and "launch" in long_line else (
            f"{r['blocks']} blocks" if "blocks" in r else "n/a")
        out.append(f"| {text} | {t['mean']:.1f} | {spread(t)} | {t['p99']:.1f} | {t['n']} | {long_ms} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
