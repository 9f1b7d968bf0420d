#!/usr/bin/env python3
"""bench/corpus/report.py CORPUS.jsonl [--corpus DIR] [--gpu ...] [--commit ...] [--command ...] > corpus.md

Verdicts over runner.py's records (bench/corpus/README.md, "Pass and fail"):
- the original passes when it exits 0 within its timeout and prints the line programs.tsv expects, if any;
  a program whose original fails here is left out of the counts and listed;
- a plugin mode (plugin, stress, stress_intask) passes on the same terms, and, where programs.tsv says
  same_stdout=yes and the original's filtered stdout was the same in all its runs (twice in the correctness
  phase, and the timing rounds), with the same filtered stdout as the original;
- timing: per program the median wall time of each build over the rounds, their ratio, and the spread of
  the per-round ratios; with CUPTI, the GPU time of the kernels both builds ran (names of the plugin's
  variants stripped), median over rounds; the plugin's own kernels are counted apart;
- under stress: the stress run's wall time over the original's, medians over the timing phase's rounds where
  it ran the stress build (one process at a time; its stress runs are judged like a plugin mode); else, and
  always for stress_intask, one run each from the correctness phase (several programs at once), marked so.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
from collections import defaultdict

from runner import start_up_s

PLUGIN_MODES = ["plugin", "stress", "stress_intask"]


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt(x, nd=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{nd}f}"


def merge_timing(first, second):
    """Two timing records of one program (the timing rounds of two calls, `cat`-ed together): every run of both,
    the second's rounds numbered on from the first's, so medians are over all of them."""
    merged = dict(second)
    offset = max([x.get("round", 0) for key in ("original", "plugin", "stress") for x in first.get(key) or []] or [0])
    for key in ("original", "plugin", "stress"):
        if key in first or key in second:
            merged[key] = list(first.get(key) or []) + [dict(x, round=x.get("round", 0) + offset)
                                                        for x in second.get(key) or []]
    merged["rounds"] = first.get("rounds", 0) + second.get("rounds", 0)
    merged["stopped"] = second.get("stopped") or first.get("stopped")
    return merged


def read_tsv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))
    return rows


def last_lines(text, n=4):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return "\n".join(l[:200] for l in lines[-n:])


def census_section(w, census):
    """What the plugin's build asks of CUDA beyond the original (runner.py's census phase: every API call counted
    by kernel_times.c, one run of each build): per call, the extra calls over the programs, in all and up to the
    first launch call; per program, the extra calls per kernel launch."""
    if not census:
        return
    pairs = [c for c in census if not c.get("skipped") and all(
        c.get(b) and c[b]["rc"] == 0 and not c[b]["timed_out"] for b in ("original", "plugin"))]
    w("\n## What each build asks of CUDA (census)\n\n")
    w(f"Every runtime and driver API call counted, one run of each build ({len(pairs)} of {len(census)} programs "
      "ran both to exit 0); plugin minus original. A call listed under the runtime (r:) reaches the driver (d:) as "
      "calls of its own, so the two overlap.\n\n")
    extra = defaultdict(lambda: [0, 0, 0, 0])  # calls more, programs more, calls fewer, programs fewer
    early = defaultdict(lambda: [0, 0])  # up to the first launch: calls more, programs more
    per_launch = []
    for c in pairs:
        o, p = c["original"]["api"], c["plugin"]["api"]
        more = 0
        for api in set(o) | set(p):
            d = p.get(api, [0, 0])[0] - o.get(api, [0, 0])[0]
            de = p.get(api, [0, 0])[1] - o.get(api, [0, 0])[1]
            if d > 0:
                extra[api][0] += d
                extra[api][1] += 1
                more += d
            elif d < 0:
                extra[api][2] -= d
                extra[api][3] += 1
            if de > 0:
                early[api][0] += de
                early[api][1] += 1
        launches = c["original"]["launches"] or c["plugin"]["launches"]
        per_launch.append((more / launches if launches else float(more), more, launches, c["name"]))
    rows = sorted(extra.items(), key=lambda kv: -kv[1][0])
    w("| call | more in the plugin's build: calls (programs) | fewer: calls (programs) |\n|---|---|---|\n")
    for api, (m, pm, f, pf) in rows[:25]:
        w(f"| `{api}` | {m} ({pm}) | {f} ({pf}) |\n")
    if not rows:
        w("| - | 0 | 0 |\n")
    w("\nUp to the first launch call (start-up: issue 39 asks for nothing the original would not ask): "
      + (", ".join(f"`{api}` +{m} in {pm} programs" for api, (m, pm) in sorted(early.items(), key=lambda kv: -kv[1][0]))
         or "nothing more") + ".\n\n")
    per_launch.sort(reverse=True)
    w("Extra calls per kernel launch (all the plugin's extra calls over the original's launches), the most: "
      + (", ".join(f"{n} {x:.1f} ({m} over {l} launches)" for x, m, l, n in per_launch[:12]) or "none") + ".\n")


STRESS_LINE = re.compile(r"preempt: stress: (\d+) evictions")


def evictions_section(w, recs, judged, converted):
    """What the correctness phase's stress runs evicted, from the runtime's exit line ("preempt: stress: N evictions
    ..."), which a process prints once it has started a converted launch: a program that passes under stress without
    that line never ran a converted form at all (every launch as written), which a pass count alone would hide (the
    -fgpu-rdc builds of 2026-11-29, bench/results/2026-11-29-h200-rdc-f66dd57/)."""
    progs = [n for n in judged if converted.get(n, "1") not in ("0", "", None)]
    for m in ("stress", "stress_intask"):
        ran = [n for n in progs if recs[n].get(m) and not recs[n][m].get("skipped")]
        if not ran:
            continue
        counts = {n: [int(x) for x in STRESS_LINE.findall(recs[n][m].get("stderr_tail") or "")] for n in ran}
        evicted = [n for n in ran if sum(counts[n]) > 0]
        silent = sorted(n for n in ran if not counts[n])
        w(f"- evictions in the correctness phase's {m} runs, over {len(ran)} programs"
          f"{' with converted kernels' if converted else ''}: {len(evicted)} evicted "
          f"({sum(sum(counts[n]) for n in evicted)} evictions in all), "
          f"{len(ran) - len(evicted) - len(silent)} evicted nothing, {len(silent)} printed no stress line "
          "(no converted launch ran: every launch as written)"
          + (": " + ", ".join(silent[:12]) + (f" (+{len(silent) - 12} more)" if len(silent) > 12 else "") if silent
             else "") + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("--corpus", default="")
    ap.add_argument("--gpu", default="unknown")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--command", default="")
    ap.add_argument("--elapsed", default="")
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()

    recs = defaultdict(dict)
    with open(a.jsonl) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                before = recs[r["name"]].get(r["mode"])
                if r["mode"] == "timing" and before:
                    r = merge_timing(before, r)
                recs[r["name"]][r["mode"]] = r
    manifest = {r["name"]: r for r in read_tsv(os.path.join(a.corpus, "manifest.tsv"))} if a.corpus else {}
    build = read_tsv(os.path.join(a.corpus, "build.tsv")) if a.corpus else []
    build_info = []
    if a.corpus and os.path.exists(os.path.join(a.corpus, "build-info.tsv")):
        with open(os.path.join(a.corpus, "build-info.tsv")) as f:
            build_info = [l.rstrip("\n").split("\t", 1) for l in f if l.strip()]
    names = sorted(recs)

    def prog(name):
        return manifest.get(name, {})

    # Original stdout stability over every original run that exited 0.
    def orig_shas(name):
        shas = []
        for mode in ("original", "original_again"):
            o = recs[name].get(mode)
            if o and not o.get("skipped") and o.get("rc") == 0 and not o.get("timed_out"):
                shas.append(o["stdout_sha"])
        t = recs[name].get("timing")
        if t:
            shas += [x["stdout_sha"] for x in t["original"] if x["rc"] == 0 and not x["timed_out"]]
        return shas

    def own_spread_ms(name):
        walls = [recs[name][m]["wall_s"] for m in ("original", "original_again")
                 if m in recs[name] and recs[name][m].get("rc") == 0 and not recs[name][m].get("timed_out")
                 and recs[name][m].get("wall_s") is not None]
        return (max(walls) - min(walls)) * 1e3 if len(walls) == 2 else None

    def run_ok(r, expect):
        why = []
        if r.get("missing"):
            return False, ["plugin build failed"]
        if r.get("skipped"):
            return False, ["not run: " + ("killed at the call's deadline, before its own limit" if r.get("cut_by_deadline")
                                          else "time budget spent")]
        if r.get("timed_out"):
            why.append(f"timed out after {r.get('timeout_s')} s")
        elif r.get("rc") != 0:
            why.append(f"exit code {r.get('rc')}")
        if expect and r.get("expect_found") is False:
            why.append(f"no line matching '{expect}'")
        return not why, why

    verdict = {}  # name -> {mode: (ok, why)}
    orig_fail, unstable, compare_off = [], [], []
    compared = {}  # name -> whether its stdout is held to the original's
    for n in names:
        p = prog(n)
        expect = p.get("expect", "-") if p.get("expect", "-") != "-" else ""
        o = recs[n].get("original")
        if not o or o.get("skipped"):
            continue
        ok, why = run_ok(o, expect)
        if not ok:
            orig_fail.append((n, why, o))
            continue
        shas = orig_shas(n)
        stable = len(set(shas)) == 1
        compare = p.get("same_stdout", "yes") in ("yes", "sorted")
        if compare and not stable:
            unstable.append(n)
        if not compare:
            compare_off.append(n)
        v = {}
        for m in PLUGIN_MODES:
            r = recs[n].get(m)
            if not r:
                v[m] = (False, ["not run"])
                continue
            ok, why = run_ok(r, expect)
            if compare and stable and not r.get("missing") and not r.get("skipped") and r.get("stdout_sha") != o["stdout_sha"]:
                d = r.get("first_diff")
                why.append("stdout differs" + (f" at line {d['line']}: original '{d['original']}', this '{d['this']}'"
                                               if d else ""))
                ok = False
            v[m] = (ok, why)
        verdict[n] = v
        compared[n] = compare and stable

    judged = sorted(verdict)
    counts = {m: sum(1 for n in judged if verdict[n][m][0]) for m in PLUGIN_MODES}
    # A run the call's budget never started or killed before its own limit has no verdict: counted apart.
    not_run = {m: sum(1 for n in judged if not recs[n].get(m) or recs[n][m].get("skipped")) for m in PLUGIN_MODES}

    # Timing.
    timing_rows = []
    wall_ratios, gpu_ratios = [], []
    short_programs = []
    long_kernels = []
    for n in names:
        t = recs[n].get("timing")
        if not t or not t["original"] or not t["plugin"]:
            continue
        ro = {x["round"]: x for x in t["original"] if x["rc"] == 0 and not x["timed_out"]}
        rp = {x["round"]: x for x in t["plugin"] if x["rc"] == 0 and not x["timed_out"]}
        rounds = sorted(set(ro) & set(rp))
        failed_rounds = len(t["plugin"]) - len(rp)
        if not rounds:
            timing_rows.append({"name": n, "rounds": 0, "failed_rounds": failed_rounds})
            continue
        wo = statistics.median(ro[r]["wall_s"] for r in rounds)
        wp = statistics.median(rp[r]["wall_s"] for r in rounds)
        per_round = [rp[r]["wall_s"] / ro[r]["wall_s"] for r in rounds if ro[r]["wall_s"] > 0]
        row = {"name": n, "rounds": len(rounds), "failed_rounds": failed_rounds, "wall_o": wo, "wall_p": wp,
               "ratio": wp / wo if wo > 0 else None,
               "spread": (min(per_round), max(per_round)) if per_round else None,
               # What the plugin's build adds to the whole process (start, launches, exit), same round.
               "added_ms": statistics.median((rp[r]["wall_s"] - ro[r]["wall_s"]) * 1e3 for r in rounds),
               # The original's own run-to-run difference (its two correctness runs, same call, no CUPTI): an
               # added time below it is not told apart from noise.
               "own_ms": own_spread_ms(n)}
        # Start-up: spawn to the first launch call's return (the first kernel loaded and enqueued in both builds),
        # plugin minus original in the same round; runs from before kernel_times.c stamped the return, to the call's
        # entry, which the plugin's build reaches only after its runtime has loaded the kernel (lazy loading does it
        # inside the call in the original): an upper bound. Runs from before either stamp have none.
        pairs = [(start_up_s(ro[r]), start_up_s(rp[r])) for r in rounds]
        pairs = [(o[0], p[0], o[1] == p[1] == "return") for o, p in pairs if o[0] is not None and p[0] is not None]
        if pairs:
            row["start_added_ms"] = statistics.median((p - o) * 1e3 for o, p, _ in pairs)
            row["start_o_ms"] = statistics.median(o * 1e3 for o, _, _ in pairs)
            row["start_at_return"] = all(done for _, _, done in pairs)
        # The same start-up split where CUDA starts in the process (kernel_times.c's #cuda_init_ns, inside its first
        # CUDA call): before it the program's own host code, the same in both builds but for the runtime's
        # constructor; after it CUDA's part, to the first launch call's return, where the runtime's work at start
        # shows (module loading, the kernel's lookups, what it asks of CUDA).
        split = [(ro[r]["cuda_init_s"], ro[r]["first_launch_done_s"], rp[r]["cuda_init_s"], rp[r]["first_launch_done_s"])
                 for r in rounds if all(x[r].get(k) is not None for x in (ro, rp)
                                        for k in ("cuda_init_s", "first_launch_done_s"))]
        if split:
            row["host_added_ms"] = statistics.median((ip - io) * 1e3 for io, _, ip, _ in split)
            row["cuda_start_added_ms"] = statistics.median(((dp - ip) - (do - io)) * 1e3 for io, do, ip, dp in split)
        # GPU time of the kernels both builds ran.
        g_ratios, g_o, g_p, g_rt, launches = [], [], [], [], []
        short = 0
        for r in rounds:
            ko, kp = ro[r].get("kernels"), rp[r].get("kernels")
            if ko is None or kp is None:
                continue
            common = set(ko) & set(kp)
            so = sum(ko[k][1] for k in common)
            sp = sum(kp[k][1] for k in common)
            g_o.append(so / 1e6)
            g_p.append(sp / 1e6)
            g_rt.append(sum(kp[k][1] for k in set(kp) - set(ko)) / 1e6)
            launches.append(sum(ko[k][0] for k in ko))
            if so > 0:
                g_ratios.append(sp / so)
            if r == rounds[0]:
                short = sum(1 for k in ko.values() if k[0] and k[1] / k[0] < 20000)
                row["kernels"] = len(ko)
                row["only_original"] = sorted(set(ko) - set(kp))[:3]
                for k, (cnt, tot, mx, blocks) in ko.items():
                    if mx >= 1_000_000:
                        long_kernels.append((n, k, mx / 1e6, blocks, cnt))
        if g_ratios:
            row.update({"gpu_o": statistics.median(g_o), "gpu_p": statistics.median(g_p),
                        "gpu_rt": statistics.median(g_rt), "gpu_ratio": statistics.median(g_ratios),
                        "gpu_spread": (min(g_ratios), max(g_ratios)), "launches": statistics.median(launches),
                        "short": short})
            gpu_ratios.append(row["gpu_ratio"])
            if short:
                short_programs.append(n)
        if row["ratio"]:
            wall_ratios.append(row["ratio"])
        timing_rows.append(row)

    def timing_run_bad(n, x, build):
        """Why one timing-phase run failed, or None."""
        if x["timed_out"]:
            return "timed out"
        if x["rc"] != 0:
            return f"exit code {x['rc']}"
        if build == "stress" and compared.get(n) and x["stdout_sha"] != recs[n]["original"]["stdout_sha"]:
            return "stdout differs"
        return None

    # Stress against the original. The correctness phase runs several programs at once, which made one original
    # take 1.40 s and then 8.45 s in the same phase, so the timing phase's runs, one at a time, come first.
    stress_rows = []
    for n in judged:
        o = recs[n]["original"]
        row = {"name": n}
        for m in ("stress", "stress_intask"):
            r = recs[n].get(m)
            if r and not r.get("missing") and not r.get("skipped") and o["wall_s"] > 0:
                row[m] = r["wall_s"] / o["wall_s"]
                row[m + "_to"] = r.get("timed_out", False)
                row[m + "_src"] = "concurrent"
        t = recs[n].get("timing") or {}
        ts = t.get("stress") or []
        wo = [x["wall_s"] for x in t.get("original", []) if x["rc"] == 0 and not x["timed_out"]]
        # A timed-out run counts (it took at least that long); a crash's time says nothing about speed.
        ws = [x["wall_s"] for x in ts if x["rc"] == 0 or x["timed_out"]]
        if wo and ws and statistics.median(wo) > 0:
            row.update({"stress": statistics.median(ws) / statistics.median(wo),
                        "stress_to": any(x["timed_out"] for x in ts), "stress_src": "timing"})
        if ts:
            row["timed_stress"] = (sum(1 for x in ts if not timing_run_bad(n, x, "stress")), len(ts))
        stress_rows.append(row)
    n_timed = sum(1 for r in stress_rows if r.get("stress_src") == "timing")
    n_concurrent = sum(1 for r in stress_rows if r.get("stress_src") == "concurrent")
    timed_stress = [r for r in stress_rows if "timed_stress" in r]
    timed_stress_ok = sum(1 for r in timed_stress if r["timed_stress"][0] == r["timed_stress"][1])

    w = sys.stdout.write
    w("# Corpus run: real CUDA programs, original against the plugin's build\n\n")
    w(f"- commit here: {a.commit}; built from: " + ", ".join(f"{k} {v}" for k, v in build_info) + "\n")
    w(f"- GPU, driver: {a.gpu}\n")
    w(f"- command: `{a.command}`" + (f" ({a.elapsed} s)" if a.elapsed else "") + "\n")
    n_list = len(build)
    n_both = sum(1 for r in build if r.get("original") == "yes" and r.get("plugin") == "yes")
    if build:
        w(f"- build: {n_list} programs listed, {n_both} built in both configs; "
          f"left out (original build failed): {', '.join(r['name'] for r in build if r.get('original') != 'yes') or 'none'}; "
          f"plugin build failed: {', '.join(r['name'] for r in build if r.get('original') == 'yes' and r.get('plugin') != 'yes') or 'none'}\n")
    t_rounds = [r["rounds"] for r in timing_rows]
    cupti = any(recs[n].get("timing", {}).get("cupti") for n in names)
    stopped = next((recs[n]["timing"].get("stopped") for n in names if recs[n].get("timing", {}).get("stopped")), None)
    w(f"- timing: {len(timing_rows)} programs, rounds per program {min(t_rounds) if t_rounds else 0}-{max(t_rounds) if t_rounds else 0}"
      f"{' (stopped: ' + stopped + ')' if stopped else ''}; CUPTI {'on in both builds' if cupti else 'off'}\n\n")

    gw, gg = geomean(wall_ratios), geomean(gpu_ratios)
    starts = sorted((r["start_added_ms"], r["name"]) for r in timing_rows if r.get("start_added_ms") is not None)
    ran = {m for n in names for m in recs[n]}
    if "original" not in ran and "timing" not in ran:
        # A census-only run: no outcome and no time was judged, and the summary must not read as if 0 passed.
        summary = f"Summary: {len(names)} programs, census only (no correctness or timing phase in this run)\n\n"
    else:
        summary = (f"Summary: {len(names)} programs run, original passes in {len(judged)}; with the plugin "
          + ", ".join(f"{m} {counts[m]}/{len(judged)}" + (f" ({not_run[m]} not run)" if not_run[m] else "")
                      for m in PLUGIN_MODES)
          + f"; never evicted, wall time geomean {fmt(gw)} ({sum(1 for x in wall_ratios if x > 1.10)} of {len(wall_ratios)} above 1.10)"
          + f", GPU time of kernels geomean {fmt(gg)} ({sum(1 for x in gpu_ratios if x > 1.10)} of {len(gpu_ratios)} above 1.10)"
          + f"; under stress {sum(1 for r in stress_rows if 'stress' in r and r['stress'] <= 3 and not r.get('stress_to'))}"
          + f"/{sum(1 for r in stress_rows if 'stress' in r)} within 3x the original's time ({n_timed} timed one at a "
          + f"time, {n_concurrent} from the concurrent correctness phase)"
          + (f"; start-up added median {fmt(statistics.median(a for a, _ in starts))} ms, "
             f"{sum(1 for a, _ in starts if a > 50)} of {len(starts)} above 50 ms" if starts else "") + "\n\n")
    w(summary)

    w("## Correctness\n\n| mode | pass | fail | not run | of |\n|---|---|---|---|---|\n")
    for m in PLUGIN_MODES:
        w(f"| {m} | {counts[m]} | {len(judged) - counts[m] - not_run[m]} | {not_run[m]} | {len(judged)} |\n")
    if timed_stress:
        w(f"| stress, timing phase (every round) | {timed_stress_ok} | {len(timed_stress) - timed_stress_ok} | 0 | "
          f"{len(timed_stress)} |\n")
    w(f"\nStdout compared (filtered of timing lines) in {len(judged) - len(unstable) - len(compare_off)} programs; "
      f"not compared: the list says so ({', '.join(compare_off) or 'none'}), the original's own runs differ "
      f"({', '.join(unstable) or 'none'}).\n\n")
    reruns = [(n, m, verdict[n][m][0]) for n in judged for m in PLUGIN_MODES
              if (recs[n].get(m) or {}).get("rerun_alone")]
    if reruns:
        w("Timed out beside other programs in the correctness phase, then run again alone (the second run counts): "
          + ", ".join(f"{n} {m} ({'passed' if ok else 'failed'} alone)" for n, m, ok in reruns) + ".\n\n")
    if orig_fail:
        w("Programs whose original fails here (left out of the counts):\n\n")
        for n, why, o in orig_fail:
            w(f"- {n}: {'; '.join(why)}\n")
            tl = last_lines(o.get("stderr_tail")) or last_lines(o.get("stdout_tail"))
            if tl:
                w("```\n" + tl + "\n```\n")
        w("\n")
    w("## Failures with the plugin\n\n")
    any_fail = False
    for n in judged:
        bad = [m for m in PLUGIN_MODES if not verdict[n][m][0]]
        if not bad:
            continue
        any_fail = True
        # Modes that failed alike are reported once.
        groups = []
        for m in bad:
            why = "; ".join(verdict[n][m][1])
            for g in groups:
                if g[1] == why:
                    g[0].append(m)
                    break
            else:
                groups.append(([m], why))
        for modes, why in groups:
            r = recs[n].get(modes[0], {})
            secs = f", {fmt(r.get('wall_s'), 2)} s" if r.get("wall_s") is not None else ""
            w(f"- **{n}** ({', '.join(modes)}{secs}): {why}\n")
            tl = last_lines(r.get("stderr_tail")) or last_lines(r.get("stdout_tail"))
            if tl:
                w("```\n" + tl + "\n```\n")
    # Timing runs (no eviction, CUPTI attached to both builds) that failed.
    for n in names:
        t = recs[n].get("timing")
        if not t:
            continue
        for config in ("original", "plugin", "stress"):
            bad = [(x, timing_run_bad(n, x, config)) for x in t.get(config, [])]
            bad = [(x, why) for x, why in bad if why]
            if bad:
                any_fail = True
                x, why = bad[0]
                what = "under PREEMPT_STRESS=1" if config == "stress" else f"of the {config} build"
                w(f"- **{n}** (timing runs {what}{', CUPTI attached' if t.get('cupti') else ''}): "
                  f"{len(bad)} of {len(t[config])} failed, first: {why}\n")
                if x.get("stderr_tail"):
                    w("```\n" + last_lines(x["stderr_tail"]) + "\n```\n")
    if not any_fail:
        w("none\n")
    w("\n")

    w("## Time, never evicted (plugin / original)\n\n")
    w(f"Wall time: geomean {fmt(gw)}, {sum(1 for x in wall_ratios if x > 1.10)} of {len(wall_ratios)} programs above 1.10. ")
    w(f"GPU time of the kernels both builds ran (CUPTI): geomean {fmt(gg)}, {sum(1 for x in gpu_ratios if x > 1.10)} of "
      f"{len(gpu_ratios)} above 1.10. Programs with kernels shorter than 20 µs on average: {len(short_programs)}.\n\n")
    added = sorted((r["added_ms"], r["name"]) for r in timing_rows if r.get("added_ms") is not None)
    if added:
        w(f"Time the plugin's build adds to a whole process (wall, plugin minus original in the same round, median "
          f"over rounds; start-up, launches and exit together, so an upper bound on start-up): median "
          f"{fmt(statistics.median(a for a, _ in added))} ms over {len(added)} programs, largest "
          f"{fmt(added[-1][0])} ms ({added[-1][1]}), {sum(1 for a, _ in added if a > 50)} above 50 ms. ")
        own = {r["name"]: r.get("own_ms") for r in timing_rows}
        above = [(a, n) for a, n in reversed(added) if a > 50]
        if above:
            beyond = [(a, n) for a, n in above if own.get(n) is not None and a > own[n]]
            w(f"Of those, {len(beyond)} add more than the original's own difference between its two runs"
              f"{': ' + ', '.join(f'{n} +{fmt(a, 0)} ms (own {fmt(own[n], 0)})' for a, n in beyond) if beyond else ''}; "
              f"the others: "
              f"{', '.join(f'{n} +{fmt(a, 0)} ms (own ' + (fmt(own[n], 0) if own.get(n) is not None else 'unknown') + ')' for a, n in above if (a, n) not in beyond) or 'none'}. ")
        many = sorted((r["added_ms"] * 1e3 / r["launches"], r["name"]) for r in timing_rows
                      if r.get("added_ms") is not None and r.get("launches", 0) >= 1000)
        if many:
            w(f"Per launch, in the {len(many)} programs with 1,000 launches or more (the same difference over the "
              f"launches, an upper bound): median {fmt(statistics.median(x for x, _ in many))} µs, largest "
              f"{fmt(many[-1][0])} µs ({many[-1][1]}).")
        w("\n\n")
    if starts:
        so = {r["name"]: r["start_o_ms"] for r in timing_rows if r.get("start_added_ms") is not None}
        at_return = sum(1 for r in timing_rows if r.get("start_at_return"))
        w(f"Start-up the plugin's build adds (spawn to the return of the process's first kernel or graph launch call, "
          f"CUPTI's callback, plugin minus original in the same round, median over rounds; in "
          f"{len(starts) - at_return} of the {len(starts)} programs runs without that stamp give the call's entry "
          f"instead, which the plugin's build reaches only after loading the kernel: an upper bound): median "
          f"{fmt(statistics.median(a for a, _ in starts))} ms over {len(starts)} programs (the originals' own: median "
          f"{fmt(statistics.median(so.values()))} ms), largest {fmt(starts[-1][0])} ms ({starts[-1][1]}), "
          f"{sum(1 for a, _ in starts if a > 50)} above 50 ms"
          f"{': ' + ', '.join(f'{n} +{fmt(a, 0)} ms' for a, n in reversed(starts) if a > 50) if starts[-1][0] > 50 else ''}."
          f"\n\n")
    split = sorted((r["cuda_start_added_ms"], r["host_added_ms"], r["name"]) for r in timing_rows
                   if r.get("cuda_start_added_ms") is not None)
    if split:
        w(f"Start-up split where CUDA starts in the process (inside its first CUDA call; runs with that stamp, "
          f"{len(split)} programs), plugin minus original in the same round, median over rounds: CUDA's part (to the "
          f"first launch call's return) median {fmt(statistics.median(c for c, _, _ in split))} ms, largest "
          f"{fmt(split[-1][0])} ms ({split[-1][2]}), {sum(1 for c, _, _ in split if c > 50)} above 50 ms"
          f"{': ' + ', '.join(f'{n} +{fmt(c, 0)} ms' for c, _, n in reversed(split) if c > 50) if split[-1][0] > 50 else ''}; "
          f"the program's own host code before it (the runtime's constructor the only code the plugin adds there) "
          f"median {fmt(statistics.median(h for _, h, _ in split))} ms, "
          f"{sum(1 for _, h, _ in split if abs(h) > 50)} programs more than 50 ms apart either way.\n\n")
    w("stress x: the stress run's wall time over the original's, medians over the timing rounds; (c): from one run "
      "each in the concurrent correctness phase instead, as stress+intask x always is.\n\n")
    w("| program | rounds | wall orig s | wall plugin s | ratio | per-round min-max | GPU orig ms | GPU plugin ms | GPU ratio | min-max | runtime's kernels ms | launches | kernels <20 µs | stress x | stress+intask x (c) |\n")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    srow = {r["name"]: r for r in stress_rows}
    for r in sorted(timing_rows, key=lambda r: -(r.get("ratio") or 0)):
        s = srow.get(r["name"], {})
        sp = r.get("spread")
        gs = r.get("gpu_spread")
        w(f"| {r['name']} | {r['rounds']}{' (' + str(r['failed_rounds']) + ' failed)' if r.get('failed_rounds') else ''} | "
          f"{fmt(r.get('wall_o'))} | {fmt(r.get('wall_p'))} | {fmt(r.get('ratio'))} | "
          f"{fmt(sp[0], 2) + '-' + fmt(sp[1], 2) if sp else '-'} | {fmt(r.get('gpu_o'))} | {fmt(r.get('gpu_p'))} | "
          f"{fmt(r.get('gpu_ratio'))} | {fmt(gs[0], 2) + '-' + fmt(gs[1], 2) if gs else '-'} | {fmt(r.get('gpu_rt'))} | "
          f"{int(r['launches']) if r.get('launches') is not None else '-'} | {r.get('short', '-')} | "
          f"{fmt(s.get('stress'), 2)}{' (c)' if s.get('stress_src') == 'concurrent' else ''}"
          f"{' (timed out)' if s.get('stress_to') else ''} | "
          f"{fmt(s.get('stress_intask'), 2)}{' (timed out)' if s.get('stress_intask_to') else ''} |\n")
    w("\n## Under stress (wall time / the original's)\n\n")
    w("stress: medians over the timing phase's rounds, one process at a time, where it ran the stress build; else "
      "(marked (c)) one run each from the correctness phase, several programs at once, whose times vary with what "
      "else runs. stress_intask: the correctness phase only.\n\n")
    for m in ("stress", "stress_intask"):
        xs = [r for r in stress_rows if m in r]
        over = sorted((r for r in xs if r[m] > 3 or r.get(m + "_to")), key=lambda r: -r[m])
        src = (f" ({n_timed} timed one at a time, {n_concurrent} from the concurrent correctness phase)"
               if m == "stress" else " (concurrent correctness phase)")
        w(f"- {m}: {len(xs) - len(over)}/{len(xs)} within 3x{src}; geomean {fmt(geomean([r[m] for r in xs]), 2)}; "
          "over 3x: "
          + (", ".join(f"{r['name']} {fmt(r[m], 1)}x{' (c)' if m == 'stress' and r.get(m + '_src') == 'concurrent' else ''}"
                       f"{' (timed out)' if r.get(m + '_to') else ''}" for r in over) or "none") + "\n")
        if m == "stress" and timed_stress:
            failed = [r for r in timed_stress if r["timed_stress"][0] < r["timed_stress"][1]]
            w(f"- stress in the timing phase: {timed_stress_ok}/{len(timed_stress)} programs passed in every run "
              "(exit 0 in time, and the original's stdout where it is compared); failed: "
              + (", ".join(f"{r['name']} ({r['timed_stress'][1] - r['timed_stress'][0]} of {r['timed_stress'][1]} runs)"
                           for r in failed) or "none") + "\n")
    evictions_section(w, recs, judged, {r["name"]: r.get("converted") for r in build})
    census_section(w, [recs[n]["census"] for n in names if "census" in recs[n]])
    w("\n## Coverage\n\n")
    tags = defaultdict(list)
    for n in names:
        for t in (prog(n).get("tags", "-") or "-").split(","):
            if t and t != "-":
                tags[t].append(n)
    for t in sorted(tags):
        w(f"- {t} ({len(tags[t])}): {', '.join(tags[t])}\n")
    w(f"- kernels shorter than 20 µs on average (CUPTI, original build) ({len(short_programs)}): {', '.join(short_programs) or '-'}\n")
    w("\nKernels with a launch of 1 ms or more (original build; a launch of at most "
      f"{a.sms} blocks runs in one wave, so each of its blocks runs about that long):\n\n")
    for n, k, ms, blocks, cnt in sorted(long_kernels, key=lambda x: -x[2])[:40]:
        w(f"- {n}: `{k[:90]}` {ms:.2f} ms, {blocks} blocks, {cnt} launches\n")
    if not long_kernels:
        w("- none measured\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
