#!/usr/bin/env python3
"""report_parts.py: the markdown table of bench/preemption/overhead_parts.cu's JSON lines.
Issue 3's overhead: each piece of a converted launch against the original kernel, measured in the same run.

Usage: report_parts.py PARTS.jsonl  (prints the table; exits 1 if a variant's output was wrong or none ran)
"""
import json
import sys


def main():
    rows = []
    for line in open(sys.argv[1]):
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    if not rows:
        print("overhead_parts: no result (it failed; see the log)")
        return 1
    original = {row["kernel"]: row["us_per_launch"] for row in rows if row["variant"] == "original"}
    print("| kernel | variant | check interval | CTAs | us per launch, median (min..max) | x original | output |")
    print("|---|---|---|---|---|---|---|")
    wrong = 0
    for row in rows:
        base = original.get(row["kernel"])
        ratio = f"{row['us_per_launch'] / base:.3f}" if base else "n/a"
        wrong += not row["correct"]
        print(f"| {row['kernel']} | {row['variant']} | {row.get('check_interval', '')} | {row.get('ctas', '')} | "
              f"{row['us_per_launch']:.2f} ({row['min']:.2f}..{row['max']:.2f}) | {ratio} | "
              f"{'correct' if row['correct'] else 'WRONG (max rel. diff %g)' % row['max_rel_diff']} |")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
