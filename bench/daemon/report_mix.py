#!/usr/bin/env python3
"""report_mix.py: the markdown section and JSON entry for bench/daemon/mix.sh's multi-process mixes.
EffiSha §8: 11 programs starting 3 ms apart, three priority assignments: NTT per program, ANTT, STP, makespan and
scheduling overhead. FLEP §6.3.1: equal-priority pairs (a 2 ms kernel arriving 3 ms into a 20 ms one): ANTT, STP.
Usage: report_mix.py MIX_JSONL RESULTS_JSON RESULTS_MD  (adds "daemon_mix" to the JSON, a section to the md)
MIX_JSONL may hold runs of both sharings (mix.sh's MIX_SHARING: mps or timeslice, each line's "sharing"; lines
without one ran under MPS): each gets its own section and its own entry under "daemon_mix".

NTT = turnaround / standalone time of the original build (EffiSha §8.5, FLEP §6.3.1), turnaround = the process's
own launch-to-synchronize time; ANTT = mean NTT; STP = sum of 1/NTT; makespan = first start to last end over the
processes of one run (EffiSha §8.3's T); overhead = makespan / makespan of the original builds without a daemon
(EffiSha's T'/T) and / makespan of the converted builds without a daemon (what the daemon itself adds)."""
import json
import statistics
import sys

SETTINGS = {
    "original": "original builds, no daemon",
    "preempt": "converted builds, no daemon",
    "hpf": "converted, preemptd hpf",
    "piv": "converted, preemptd piv",
    "dprr": "converted, preemptd dprr",
}
SHORT = {"original": "original", "preempt": "converted", "hpf": "hpf", "piv": "piv", "dprr": "dprr"}
SCHEMES = {"random": "random", "group": "group", "sjf": "shortest first"}
SHARINGS = {
    "timeslice": ("without MPS",
                  "Without MPS the driver time-slices the GPU between the processes' contexts (EffiSha §8's setting, "
                  "on its K40m): kernels of different processes never overlap, with or without a daemon."),
    "mps": ("under MPS",
            "Under MPS the processes' kernels can run side by side; without a daemon they do."),
}


def load_rows(path, name_key="run", script="mix.sh"):
    """One dict per JSON line; a line that does not parse, or a missing file, becomes a failure row whose
    `name_key` says so (report_pairs.py reads pairs.sh's lines with this too)."""
    rows = []
    try:
        lines = open(path)
    except OSError as error:
        return [{name_key: script.split(".")[0], "failed": f"no output from {script} ({error})"}]
    with lines:
        for line in lines:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    rows.append({name_key: "unparsed", "failed": line[:200]})
    return rows


def standalone_times(rows):
    """{run name: {program: median us}} from the standalone runs (only programs whose run succeeded)."""
    alone = {}
    for row in rows:
        if row.get("scenario") != "standalone":
            continue
        times = alone.setdefault(row.get("run"), {})
        for program in row.get("programs", []):
            result = program.get("result")
            if program.get("rc") == 0 and result and not result.get("wrong_blocks_sampled") and result.get("median_us"):
                times[program["name"]] = result["median_us"]
    return alone


def run_metrics(row, alone_original, alone_preempt):
    """One run's NTTs and aggregates, or None (with why) when it failed or a standalone time is missing."""
    if row.get("failed"):
        return None, row["failed"]
    programs = []
    for program in row.get("programs", []):
        result, name = program.get("result") or {}, program.get("name")
        if name not in alone_original:
            return None, f"no standalone time (original build) for {name}"
        turnaround = result["end_us"] - result["start_us"]
        programs.append({
            "name": name, "priority": program["priority"], "run_us": program["run_us"],
            "turnaround_us": turnaround, "ntt": turnaround / alone_original[name],
            "ntt_vs_converted": turnaround / alone_preempt[name] if name in alone_preempt else None,
            "late_us": result.get("late_us"),
        })
    if not programs:
        return None, "no programs"
    starts = [p["result"]["start_us"] for p in row["programs"]]
    ends = [p["result"]["end_us"] for p in row["programs"]]
    ntts = [p["ntt"] for p in programs]
    classes = {}
    for p in programs:
        classes.setdefault(p["priority"], []).append(p["ntt"])
    converted = [p["ntt_vs_converted"] for p in programs if p["ntt_vs_converted"] is not None]
    return {
        "programs": programs,
        "antt": statistics.fmean(ntts),  # per run: the mean over its programs (ANTT's definition)
        "stp": sum(1 / n for n in ntts),
        "antt_vs_converted": statistics.fmean(converted) if len(converted) == len(programs) else None,
        "class_ntt": {str(k): statistics.fmean(v) for k, v in sorted(classes.items())},
        "makespan_us": max(ends) - min(starts),
        "max_late_us": max((p["late_us"] or 0) for p in programs),
    }, None


def compact(row):
    """A run as stored in the results JSON: each program's start and end (ms from the run's first start), its
    lateness and result check; standalone runs: each program's first and median times."""
    source = row.get("programs") if isinstance(row.get("programs"), list) else []
    row = {k: v for k, v in row.items() if k != "programs"}
    programs = []
    results = [p.get("result") for p in source if isinstance(p.get("result"), dict)]
    origin = min((r["start_us"] for r in results if "start_us" in r), default=0)
    for program in source:
        result = program.get("result") if isinstance(program.get("result"), dict) else {}
        entry = {"name": program.get("name"), "priority": program.get("priority"), "rc": program.get("rc")}
        if "start_us" in result and "end_us" in result:
            entry.update(start_ms=round((result["start_us"] - origin) / 1000, 3),
                         end_ms=round((result["end_us"] - origin) / 1000, 3), late_us=result.get("late_us"))
        for key in ("first_us", "median_us", "wrong_blocks_sampled"):
            if key in result:
                entry[key] = result[key]
        if program.get("error"):
            entry["error"] = program["error"]
        programs.append(entry)
    row["programs"] = programs
    return row


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=2, scale=1.0):
    return "n/a" if value is None else f"{value * scale:.{digits}f}"


def summarize(rows):
    alone = standalone_times(rows)
    original, converted = alone.get("alone_original", {}), alone.get("alone_preempt", {})
    failures = []
    effisha, pairs = {}, {}
    for row in rows:
        scenario = row.get("scenario")
        if scenario not in ("effisha", "pair"):
            if row.get("failed") and scenario != "standalone":
                failures.append((row.get("run", "?"), row["failed"]))
            continue
        try:
            metrics, why = run_metrics(row, original, converted)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
            metrics, why = None, f"malformed result ({type(error).__name__}: {error})"
        if metrics is None:
            failures.append((row.get("run", "?"), why))
            continue
        metrics["rep"], metrics["wall_ms"] = row.get("rep"), row.get("wall_ms")
        if scenario == "effisha":
            effisha.setdefault(row["scheme"], {}).setdefault(row["setting"], []).append(metrics)
        else:
            pairs.setdefault(row["setting"], []).append(metrics)
    for row in rows:
        if row.get("scenario") == "standalone" and row.get("failed"):
            failures.append((row.get("run", "?"), row["failed"]))

    summary = {"standalone_us": alone, "effisha": {}, "pair": {}, "failures": [list(f) for f in failures]}
    for scheme, settings in effisha.items():
        out = summary["effisha"][scheme] = {}
        for setting, runs in settings.items():
            names = [p["name"] for p in runs[0]["programs"]]
            out[setting] = {
                "runs": len(runs),
                "antt": median(r["antt"] for r in runs),
                "antt_range": [min(r["antt"] for r in runs), max(r["antt"] for r in runs)],
                "antt_vs_converted": median(r["antt_vs_converted"] for r in runs),
                "stp": median(r["stp"] for r in runs),
                "makespan_us": median(r["makespan_us"] for r in runs),
                "makespan_range_us": [min(r["makespan_us"] for r in runs), max(r["makespan_us"] for r in runs)],
                "class_ntt": {k: median(r["class_ntt"].get(k) for r in runs) for k in runs[0]["class_ntt"]},
                "program_ntt": {n: median(p["ntt"] for r in runs for p in r["programs"] if p["name"] == n)
                                for n in names},
                "program_priority": {p["name"]: p["priority"] for p in runs[0]["programs"]},
                "program_run_us": {p["name"]: p["run_us"] for p in runs[0]["programs"]},
                "max_late_us": max(r["max_late_us"] for r in runs),
            }
        base = out.get("original", {}).get("makespan_us")
        converted_base = out.get("preempt", {}).get("makespan_us")
        for entry in out.values():
            entry["overhead_vs_original"] = entry["makespan_us"] / base if base else None
            entry["overhead_vs_converted"] = entry["makespan_us"] / converted_base if converted_base else None
    for setting, runs in pairs.items():
        by_name = lambda run, name: next(p for p in run["programs"] if p["name"] == name)
        summary["pair"][setting] = {
            "runs": len(runs),
            "ntt_long": median(by_name(r, "long")["ntt"] for r in runs),
            "ntt_short": median(by_name(r, "short")["ntt"] for r in runs),
            "antt": median(r["antt"] for r in runs),
            "antt_range": [min(r["antt"] for r in runs), max(r["antt"] for r in runs)],
            "stp": median(r["stp"] for r in runs),
            "stp_range": [min(r["stp"] for r in runs), max(r["stp"] for r in runs)],
            "makespan_us": median(r["makespan_us"] for r in runs),
        }
    return summary


def markdown(summary, rows, gpu, sharing):
    dry = any(row.get("dry_run") for row in rows)
    where, how = SHARINGS[sharing]
    out = ["", "## Across processes, " + where + ": EffiSha §8's 11 programs, FLEP §6.3.1's equal-priority pairs "
           "(bench/daemon/mix.sh)", ""]
    if dry:
        out += ["**DRY RUN: fake programs, no GPU. These numbers are made up and measure nothing.**", ""]
    out.append(
        f"On {gpu}, {where}. Each program is one process running one compute-bound kernel (long_kernel, ~54 us "
        "tasks) sized to EffiSha Table 3's standalone time for the original build. Every process warms up "
        "(registering with preemptd when one runs), then starts at an agreed CLOCK_MONOTONIC moment plus its "
        "delay. NTT = the process's launch-to-synchronize time / its standalone time (original build, alone, "
        "median of 5); ANTT = mean NTT; STP = sum of 1/NTT; makespan = first start to last end. Overhead = "
        "makespan / makespan of the original builds without a daemon (EffiSha §8.3's T'/T), and / makespan of "
        "the converted builds without a daemon (the daemon's own cost). " + how + " PREEMPT_PRIORITY only matters "
        "to preemptd.")
    alone = summary["standalone_us"]
    names = []
    for row in rows:
        if row.get("scenario") == "standalone":
            names = [(p["name"], p["run_us"]) for p in row.get("programs", [])]
            break
    if names:
        out += ["", "### Standalone times (each build alone, median of 5 launches)", "",
                "| program | asked ms | original ms | converted ms | converted + preemptd (hpf) ms |",
                "|---|---|---|---|---|"]
        for name, run_us in names:
            cells = [fmt(alone.get(run, {}).get(name), 3, 1e-3)
                     for run in ("alone_original", "alone_preempt", "alone_preempt_hpf")]
            out.append(f"| {name} | {run_us / 1000:.2f} | " + " | ".join(cells) + " |")
    if summary["effisha"]:
        runs = max(e["runs"] for s in summary["effisha"].values() for e in s.values())
        out += ["", f"### EffiSha §8: 11 programs starting 3 ms apart (median of {runs} run{'s' * (runs > 1)})", "",
                "Priorities (higher runs first): random = Table 3's, x2/3 rounded down to fit 0..20 (order and ties "
                "kept); group and shortest first = Table 3's. Priority classes: each distinct priority, low to high.",
                "", "| priorities | setting | ANTT (range) | ANTT vs converted alone | STP | mean NTT per priority "
                "class, low → high | makespan ms (range) | ÷ original | ÷ converted, no daemon |",
                "|---|---|---|---|---|---|---|---|---|"]
        for scheme, label in SCHEMES.items():
            settings = summary["effisha"].get(scheme, {})
            for setting, setting_label in SETTINGS.items():
                entry = settings.get(setting)
                if not entry:
                    continue
                low, high = entry["antt_range"]
                spread = f" ({low:.2f}..{high:.2f})" if entry["runs"] > 1 else ""
                shortest, longest = entry["makespan_range_us"]
                makespan_spread = f" ({shortest / 1000:.1f}..{longest / 1000:.1f})" if entry["runs"] > 1 else ""
                classes = ", ".join(f"{k}: {v:.2f}" for k, v in entry["class_ntt"].items())
                out.append(f"| {label} | {setting_label} | {entry['antt']:.2f}{spread} | "
                           f"{fmt(entry['antt_vs_converted'])} | {entry['stp']:.2f} | {classes} | "
                           f"{entry['makespan_us'] / 1000:.1f}{makespan_spread} | {fmt(entry['overhead_vs_original'], 3)} | "
                           f"{fmt(entry['overhead_vs_converted'], 3)} |")
        late = max(e["max_late_us"] for s in summary["effisha"].values() for e in s.values())
        out += ["", f"Latest start of a process behind its agreed moment: {late:.0f} us"
                    f"{' (more than 10% of the 3 ms stagger: arrivals were not where they were meant to be)' if late > 300 else ''}."]
        for scheme, label in SCHEMES.items():
            settings = summary["effisha"].get(scheme)
            if not settings:
                continue
            first = next(iter(settings.values()))
            present = [s for s in SETTINGS if s in settings]
            out += ["", f"NTT per program, priorities {label} (ordered by priority, as EffiSha's Fig. 14):", "",
                    "| program | ms | priority | " + " | ".join(SHORT[s] for s in present) + " |",
                    "|---|---|---|" + "---|" * len(present)]
            order = sorted(first["program_priority"], key=lambda n: (first["program_priority"][n],
                                                                     list(first["program_priority"]).index(n)))
            for name in order:
                cells = [fmt(settings[s]["program_ntt"].get(name)) for s in present]
                out.append(f"| {name} | {first['program_run_us'][name] / 1000:.2f} | "
                           f"{first['program_priority'][name]} | " + " | ".join(cells) + " |")
    if summary["pair"]:
        runs = max(e["runs"] for e in summary["pair"].values())
        out += ["", f"### FLEP §6.3.1, equal priority: a 2 ms kernel arrives 3 ms into a 20 ms one (median of {runs})",
                "", "Both processes PREEMPT_PRIORITY=0; under hpf the shorter remaining time preempts.", "",
                "| setting | NTT long | NTT short | ANTT (range) | STP (range) | makespan ms | runs |",
                "|---|---|---|---|---|---|---|"]
        for setting, label in SETTINGS.items():
            entry = summary["pair"].get(setting)
            if not entry:
                continue
            out.append(f"| {label} | {entry['ntt_long']:.2f} | {entry['ntt_short']:.2f} | {entry['antt']:.2f} "
                       f"({entry['antt_range'][0]:.2f}..{entry['antt_range'][1]:.2f}) | {entry['stp']:.2f} "
                       f"({entry['stp_range'][0]:.2f}..{entry['stp_range'][1]:.2f}) | "
                       f"{entry['makespan_us'] / 1000:.1f} | {entry['runs']} |")
        base, hpf = summary["pair"].get("original"), summary["pair"].get("hpf")
        if base and hpf:
            out += ["", f"preemptd (hpf) against original builds without it: ANTT {base['antt']:.2f} -> "
                        f"{hpf['antt']:.2f} ({base['antt'] / hpf['antt']:.2f}x), STP {base['stp']:.2f} -> "
                        f"{hpf['stp']:.2f}."]
    if summary["failures"]:
        out += ["", "Failed or incomplete runs (left out of the tables above):", ""]
        out += [f"- {run}: {why}" for run, why in summary["failures"]]
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: report_mix.py MIX_JSONL RESULTS_JSON RESULTS_MD")
    rows = load_rows(sys.argv[1])
    with open(sys.argv[2]) as handle:
        results = json.load(handle)
    if any(row.get("dry_run") for row in rows):
        print("report_mix.py: DRY RUN input: made-up numbers", file=sys.stderr)
    by_sharing = {}
    for row in rows:
        sharing = row.get("sharing", "mps")
        by_sharing.setdefault(sharing if sharing in SHARINGS else "mps", []).append(row)
    results["daemon_mix"] = {}
    lines = []
    for sharing in (s for s in SHARINGS if s in by_sharing):
        these = by_sharing[sharing]
        summary = summarize(these)
        if any(row.get("dry_run") for row in these):
            summary["dry_run"] = True
        results["daemon_mix"][sharing] = {"summary": summary, "runs": [compact(row) for row in these]}
        lines += markdown(summary, these, results.get("gpu", "this file's GPU"), sharing)
        for run, why in summary["failures"]:
            print(f"report_mix.py: {sharing}: {run}: {why}", file=sys.stderr)
    with open(sys.argv[2], "w") as handle:
        json.dump(results, handle, indent=1)
    with open(sys.argv[3], "a") as handle:
        handle.write("\n".join(lines) + "\n")
    # Wrong results (a lost or repeated task) fail the check; a run that failed otherwise is reported, not fatal.
    wrong = [row.get("run") for row in rows for p in row.get("programs", [])
             if ((p.get("result") or {}).get("wrong_blocks_sampled") or 0) > 0]
    if wrong:
        print(f"report_mix.py: wrong results in {', '.join(sorted(set(map(str, wrong))))}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
