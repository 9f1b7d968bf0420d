#!/usr/bin/env python3
"""report_coexec.py: the markdown summary of bench/coexec/coexec_check.sh's runs (issue 7, FlexSched §5.3-5.5).

Usage: report_coexec.py COEXEC_JSONL FLEXSCHED_LINES [LATENCY_LINES [ALONE_JSONL]] > report.md
ALONE_JSONL: `coexec_bench alone KIND seq 3` of the preempt build at COEXEC_SCALE=4, PREEMPT_FORM=persistent, one
line per kind, for FlexSched §5.4.2's profiling overhead.
Ratios are of medians measured in the same run; each line's spread is its min..max over the repetitions."""
import json
import re
import sys
from collections import defaultdict

SETTLED = re.compile(r"^\./(?P<log>[^:]+)\.log:(?P<t>[\d.]+) flexsched settled .*ctas=\((?P<a>\d+),(?P<b>\d+)\) "
                     r"mode=(?P<mode>\w+) configs=(?P<configs>\d+) measured=(?P<measured>\d+)")
MEASURED = re.compile(r"^\./(?P<log>[^:]+)\.log:(?P<t>[\d.]+) flexsched gpu=\d+ a=(?P<ka>\d+) b=(?P<kb>\d+) config=\d+ "
                      r"ctas=\((?P<a>\d+),(?P<b>\d+)\) rate_a=(?P<ra>[\d.]+) rate_b=(?P<rb>[\d.]+)")
ALONE = re.compile(r"^\./(?P<log>[^:]+)\.log:(?P<t>[\d.]+) flexsched alone gpu=\d+ a=(?P<ka>\d+) ctas=\d+ "
                   r"rate_a=(?P<rate>[\d.]+) min_rate_a=(?P<min>[\d.]+)")


def ms(result):
    span = result["makespan"]
    return span["median_us"] / 1000, span["min_us"] / 1000, span["max_us"] / 1000


def fmt(result):
    median, low, high = ms(result)
    return f"{median:.1f} ({low:.1f}..{high:.1f})"


KIND_OF_LOG = re.compile(r"^flexsched-(?P<a>\w+)-(?P<b>\w+)$")


def profiling_overheads(lines, alone_rates, window_ms=1.0):
    """O_prof of each pair search: the kernels' kinds come from the log's name (flexsched-A-B); a kernel of the
    pair is A when its id is the pair's a=, which the first kernel launched (kind A) is in these runs."""
    searches = defaultdict(list)
    settled = set()
    for line in lines:
        m = MEASURED.match(line)
        if m and KIND_OF_LOG.match(m["log"]):
            searches[(m["log"], m["ka"], m["kb"])].append((float(m["ra"]), float(m["rb"])))
        s = SETTLED.match(line)
        if s and KIND_OF_LOG.match(s["log"]) and s["mode"] == "throughput":
            settled.add((s["log"],) + tuple(re.findall(r"a=(\d+) b=(\d+)", line)[0]))
    overheads = []
    for key, rates in searches.items():
        if key not in settled:
            continue
        kinds = KIND_OF_LOG.match(key[0])
        first, second = kinds["a"], kinds["b"]
        # The kernel launched first gets the lower id in a run of this pair.
        kind_a, kind_b = (first, second) if int(key[1]) < int(key[2]) else (second, first)
        if kind_a not in alone_rates or kind_b not in alone_rates:
            continue
        span_us = 2 * window_ms * 1000
        tasks_a = sum(rate_a for rate_a, _ in rates) * span_us
        tasks_b = sum(rate_b for _, rate_b in rates) * span_us
        alone_us = tasks_a / alone_rates[kind_a] + tasks_b / alone_rates[kind_b]
        overheads.append(len(rates) * span_us / alone_us)
    return overheads


TASKS = {"alu": 132 * 8 * 800, "tile": 132 * 12 * 250, "gather": 132 * 8 * 45, "wide": 132 * 8 * 45 // 2}


def read_alone(path, scale=4):
    """Tasks per microsecond of each kind alone, from coexec_bench's `alone` runs at COEXEC_SCALE=scale."""
    rates = {}
    for line in open(path):
        if line.strip().startswith("{"):
            result = json.loads(line)
            if "result" in result:  # coexec_check.sh's own lines: only its alone-long runs
                if result.get("label") != "alone-long":
                    continue
                result = result["result"]
            kind = result["kernels"]
            rates[kind] = TASKS[kind] * scale / result["makespan"]["median_us"]
    return rates


def main():
    alone_rates = read_alone(sys.argv[4]) if len(sys.argv) > 4 else {}
    runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    lines = open(sys.argv[2]).read().splitlines()
    by_pair = defaultdict(list)
    spaces = {}
    for run in runs:
        result = run["result"]
        if run["label"] == "space":
            spaces[f"{result['a']}+{result['b']}"] = result
            continue
        by_pair[result.get("kernels", "?")].append((run["label"], result))
    failed = [r for r in runs if r["label"] != "space" and (r["result"].get("wrong_blocks") or r["result"].get("over_quota"))]
    print("# Co-execution (issue 7, FlexSched) on the H100\n")
    print("`bench/coexec/coexec_check.sh` (kernels in `bench/coexec/coexec_bench.cu`: alu = compute-bound LCG chains, "
          "tile = compute-bound shared-memory walks, gather = DRAM-bound gathers of 256 threads, wide = the same with "
          "512). Makespan of both kernels launched together, median (min..max) of 3 repetitions after a warm-up, ms. "
          f"Every run checked its results on sampled blocks: {len(failed)} failed.\n")
    print("## Pairs\n")
    print("| pair | space | seq | streams | best quota, in-process | x seq | seq (4x work) | streams (4x) | flexsched (4x) "
          "| x seq | x streams | best pinned by preemptd (4x) | flexsched / best | settled on |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    speedups = []
    gaps = []
    for pair, entries in by_pair.items():
        if "+" not in pair or pair.count("+") != 1:
            continue
        get = {label: result for label, result in entries}
        fixed = [r for label, r in entries if label == "fixed"]
        pinned = [(label, r) for label, r in entries if label.startswith("daemon-fixed-long-")]
        if "seq" not in get or "flexsched-long" not in get:
            continue
        best_fixed = min(fixed, key=lambda r: ms(r)[0]) if fixed else None
        best_pinned = min(pinned, key=lambda p: ms(p[1])[0]) if pinned else None
        space = spaces.get(pair, {}).get("configs", [])
        a, b = pair.split("+")
        settled = [m for m in map(SETTLED.match, lines) if m and m["log"] == f"flexsched-{a}-{b}"]
        settled_text = ", ".join(f"({m['a']},{m['b']})" for m in settled)
        seq_long, flex = ms(get["seq-long"])[0], ms(get["flexsched-long"])[0]
        speedups.append(seq_long / flex)
        gap = flex / ms(best_pinned[1])[0] if best_pinned else float("nan")
        gaps.append(gap)
        pinned_index = int(best_pinned[0].rsplit("-", 1)[1]) if best_pinned else -1
        pinned_text = (f"{tuple(space[pinned_index])} {fmt(best_pinned[1])}" if best_pinned and pinned_index < len(space)
                       else "-")
        print(f"| {pair} | {len(space)} configs | {fmt(get['seq'])} | {fmt(get['streams'])} | "
              f"{tuple(best_fixed['ctas']) if best_fixed else '-'} {fmt(best_fixed) if best_fixed else ''} | "
              f"{ms(get['seq'])[0] / ms(best_fixed)[0]:.2f} | {fmt(get['seq-long'])} | {fmt(get['streams-long'])} | "
              f"{fmt(get['flexsched-long'])} | {seq_long / flex:.2f} | {ms(get['streams-long'])[0] / flex:.2f} | "
              f"{pinned_text} | {gap:.3f} | {settled_text} |")
    if speedups:
        mean = sum(speedups) / len(speedups)
        print(f"\nflexsched over sequential, mean of the pairs: {mean:.2f}x; flexsched / best pinned configuration, "
              f"mean {sum(gaps) / len(gaps):.3f} (FlexSched: 1.40x over sequential, under 1% from the best).\n")
    mix = {label: r for label, r in by_pair.get("+".join(["alu", "tile", "gather", "wide"] * 3), [])}
    if "mix-flexsched-long" in mix:
        print("## Mix of 12 kernels (each kind 3 times, one stream each)\n")
        print("| sequential | plain streams | flexsched | streams / flexsched |")
        print("|---|---|---|---|")
        print(f"| {fmt(mix['mix-seq-long'])} | {fmt(mix['mix-streams-long'])} | {fmt(mix['mix-flexsched-long'])} | "
              f"{ms(mix['mix-streams-long'])[0] / ms(mix['mix-flexsched-long'])[0]:.2f} |\n")
        print("FlexSched: 1.22x total time against HyperQ (plain streams).\n")
    # Profiling: from a pair's first measurement to its settle, in the pairs' searches (not pinned, not latency).
    print("## Profiling\n")
    first = {}
    durations = []
    for line in lines:
        m = MEASURED.match(line)
        if m and m["log"].startswith("flexsched-"):
            first.setdefault((m["log"], m["ka"], m["kb"]), float(m["t"]))
        s = SETTLED.match(line)
        if s and s["log"].startswith("flexsched-") and s["mode"] == "throughput":
            key = next((k for k in first if k[0] == s["log"] and (k[1], k[2]) == tuple(re.findall(r"a=(\d+) b=(\d+)", line)[0])), None)
            if key:
                # One settle window (one period) passes before the first measurement is logged.
                durations.append((float(s["t"]) - first.pop(key)) * 1000 + 1.0)
    if durations:
        durations.sort()
        print(f"{len(durations)} searches (pairs and mix): from pairing to settle, median {durations[len(durations) // 2]:.1f} ms "
              f"({durations[0]:.1f}..{durations[-1]:.1f}), with 1 ms windows; the configurations measured meanwhile "
              "run the kernels' own tasks (productive profiling).\n")
    if alone_rates:
        overheads = profiling_overheads(lines, alone_rates)
        if overheads:
            overheads.sort()
            print(f"FlexSched §5.4.2's O_prof = T_prof / (tasks_a / R_a + tasks_b / R_b), over the {len(overheads)} pair "
                  f"searches (not the mix): median {overheads[len(overheads) // 2]:.3f} ({overheads[0]:.3f}..{overheads[-1]:.3f}); "
                  "FlexSched: 0.913 mean, 0.926 median. T_prof = 2 windows per configuration measured (settle + measure); "
                  "tasks = each configuration's measured rate x 2 windows (the settle window's rate taken as the measured "
                  "one's); R = the kernel's rate alone, converted, at full occupancy (" +
                  ", ".join(f"{kind} {rate:.1f}" for kind, rate in sorted(alone_rates.items())) + " tasks/us).\n")
    if len(sys.argv) > 3:
        latency = open(sys.argv[3]).read().splitlines()
        print("## Latency-sensitive mode (FlexSched §5.5, Table 4)\n")
        print("alu (priority 5, latency-sensitive) arriving while gather (priority 0) runs, two processes under MPS. "
              "Share = the batch kernel's CTAs per SM / all CTAs per SM in the settled configuration.\n")
        print("| slowdown | settled (alu, gather) | batch share of CTAs | alu's rate there / alone |")
        print("|---|---|---|---|")
        for slowdown in ["0.5", "0.4", "0.3", "0.2", "0.1"]:
            log = f"latency-{slowdown}"
            alone = [m for m in map(ALONE.match, latency) if m and m["log"] == log]
            settled = [m for m in map(SETTLED.match, latency) if m and m["log"] == log]
            rates = {}
            for m in map(MEASURED.match, latency):
                if m and m["log"] == log:
                    rates[(m["ka"], m["a"], m["b"])] = float(m["ra"])
            cells = []
            for s, a in zip(settled, alone):
                share = int(s["b"]) / (int(s["a"]) + int(s["b"]))
                rate = rates.get((a["ka"], s["a"], s["b"]))
                ratio = f"{rate / float(a['rate']):.2f}" if rate else "-"
                cells.append((f"({s['a']},{s['b']})", f"{share:.0%}", ratio))
            if cells:
                print(f"| {slowdown} | {'; '.join(c[0] for c in cells)} | {'; '.join(c[1] for c in cells)} | "
                      f"{'; '.join(c[2] for c in cells)} |")
        print("\nFlexSched Table 4 (CEDD with six kernels, Titan X): 31, 23, 16, 9, 1 % at 0.5 ... 0.1.")


if __name__ == "__main__":
    main()
