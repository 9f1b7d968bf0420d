#!/usr/bin/env python3
"""report_pairs.py: the markdown section and JSON entry for bench/daemon/pairs.sh's cross-process pairs.
FLEP §6.3.1: a short high-priority kernel's turnaround against running alone, with and without the scheduler.
Usage: report_pairs.py PAIRS_JSONL RESULTS_JSON RESULTS_MD  (adds "daemon_pairs" to the JSON, a section to the md)"""
import json
import sys

from report_mix import load_rows

LABELS = {
    "alone_original": "short alone, original build",
    "alone_preempt": "short alone, converted build, no daemon",
    "alone_preempt_daemon": "short alone, converted build, preemptd (hpf)",
    "alone_preempt_daemon_noleases": "short alone, converted build, preemptd (hpf, --no-leases)",
    "pair_original": "pair, original builds (default time-slicing)",
    "pair_preempt": "pair, converted builds, no daemon",
    "pair_preempt_daemon": "pair, converted builds, preemptd (hpf)",
    "pair_preempt_daemon_temporal": "pair, converted builds, preemptd (hpf, temporal eviction only)",
    "pair_preempt_daemon_noleases": "pair, converted builds, preemptd (hpf, --no-leases)",
    "mps_alone_original": "MPS: short alone, original build",
    "mps_pair_original": "MPS: pair, original builds",
    "mps_alone_preempt_daemon": "MPS: short alone, converted build, preemptd (hpf)",
    "mps_pair_preempt_daemon": "MPS: pair, converted builds, preemptd (hpf)",
}


def median(row):
    try:
        return row["short"]["turnaround"]["median_us"]
    except (KeyError, TypeError):
        return None


def main():
    rows = load_rows(sys.argv[1], "mode", "pairs.sh")
    by_mode = {row.get("mode"): row for row in rows}
    with open(sys.argv[2]) as handle:
        results = json.load(handle)
    results["daemon_pairs"] = rows
    with open(sys.argv[2], "w") as handle:
        json.dump(results, handle, indent=1)

    out = ["", "## Across processes: a short high-priority kernel against a long low-priority one (bench/daemon)", ""]
    out.append("Two processes on one GPU; the low-priority one (PREEMPT_PRIORITY=-10) runs 20-30 ms kernels of "
               "~54 us tasks back to back, the high-priority one (PREEMPT_PRIORITY=10) launches a short kernel "
               "(32 blocks) every 2-12 ms and times launch to stream synchronize. Each side checks its results.")
    out.append("")
    out.append("| setting | short turnaround median (p99) us | x its alone | results | long side: launches, median ms |")
    out.append("|---|---|---|---|---|")
    failed = []
    for mode, label in LABELS.items():
        row = by_mode.get(mode)
        if row is None:
            continue
        if row.get("failed") or not row.get("short"):
            out.append(f"| {label} | failed: {row.get('failed', 'no output')} | | | |")
            failed.append(mode)
            continue
        turnaround = row["short"]["turnaround"]
        alone_mode = ("mps_" if mode.startswith("mps_") else "") + (
            "alone_preempt_daemon_noleases" if mode.endswith("noleases") else
            "alone_preempt_daemon" if mode.endswith("daemon") or mode.endswith("temporal") else
            "alone_preempt" if mode.endswith("_preempt") else "alone_original")
        alone = median(by_mode.get(alone_mode, {}))
        ratio = f"{turnaround['median_us'] / alone:.1f}" if alone else "n/a"
        wrong = row["short"].get("wrong_elements", "?")
        long_row = row.get("long")
        long_text = ""
        # A pair's long side must end when told and check its blocks; a hung or wrong side fails the mode.
        is_pair = "pair" in mode
        if row["short"].get("wrong_elements") != 0 or (is_pair and (
                not long_row or long_row.get("failed") or long_row.get("wrong_blocks_sampled") != 0)):
            failed.append(mode)
        if long_row and long_row.get("failed"):
            long_text = "FAILED: " + long_row["failed"]
        elif long_row:
            wrong = f"{wrong} / {long_row.get('wrong_blocks_sampled', '?')}"
            long_text = f"{long_row['launches']}, {long_row['long_launch']['median_us'] / 1000:.2f}"
        out.append(f"| {label} | {turnaround['median_us']:.0f} ({turnaround['p99_us']:.0f}) | {ratio} | "
                   f"wrong {wrong} | {long_text} |")
    shares = [row for row in rows if "heavy" in row]
    for row in rows:
        if row.get("mode") not in LABELS and "heavy" not in row:
            out.append(f"| {row.get('mode')} | failed: {row.get('failed', 'unknown mode')} | | | |")
    out.append("")
    for prefix, name in (("", "time-slicing"), ("mps_", "MPS")):
        without, with_daemon = median(by_mode.get(prefix + "pair_original", {})), median(
            by_mode.get(prefix + "pair_preempt_daemon", {}))
        if without and with_daemon:
            change = (f"{without / with_daemon:.2f}x shorter" if with_daemon <= without else
                      f"{with_daemon / without:.2f}x longer")
            out.append(f"{name}: preemptd (hpf) makes the short kernel's median turnaround {change} than without it "
                       f"({without:.0f} us -> {with_daemon:.0f} us).")
    if shares:
        out += ["", "### GPU shares: two long-kernel processes, weights 2 and 1 (FLEP §6.3.3), under MPS", "",
                "Both run the same kernel back to back for the same wall time; a process's share is its completed "
                "launches over both processes'. Goal under FFS: within 5 points of 2/3 and 1/3.", "",
                "| setting | heavy (weight 2) launches | light (weight 1) launches | heavy share | total launches |",
                "|---|---|---|---|---|"]
        for row in shares:
            heavy, light = row.get("heavy") or {}, row.get("light") or {}
            if not heavy.get("launches") or not light.get("launches"):
                out.append(f"| {row.get('mode')} | failed: {row.get('failed', 'no output')} | | | |")
                continue
            total = heavy["launches"] + light["launches"]
            wrong = heavy.get("wrong_blocks_sampled", 0) + light.get("wrong_blocks_sampled", 0)
            label = {"mps_shares_original": "original builds, no daemon",
                     "mps_shares_ffs": "converted builds, preemptd (ffs)"}.get(row["mode"], row["mode"])
            out.append(f"| {label} | {heavy['launches']} | {light['launches']} | {heavy['launches'] / total:.3f} | "
                       f"{total}{'' if not wrong else f' (wrong blocks {wrong})'} |")
        by_share = {row["mode"]: row for row in shares}
        base, ffs = by_share.get("mps_shares_original"), by_share.get("mps_shares_ffs")
        try:
            kept = (ffs["heavy"]["launches"] + ffs["light"]["launches"]) / (
                base["heavy"]["launches"] + base["light"]["launches"])
            out += ["", f"Work done under FFS against the co-run without the daemon: {kept:.3f} (max_overhead 0.10)."]
        except (TypeError, KeyError, ZeroDivisionError):
            pass
    ran = [mode for mode in LABELS if mode in by_mode]
    out += ["", f"pairs: {len(ran) - len(failed)} passed, {len(failed)} failed"
            + (f" ({', '.join(failed)})" if failed else "")]
    with open(sys.argv[3], "a") as handle:
        handle.write("\n".join(out) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
