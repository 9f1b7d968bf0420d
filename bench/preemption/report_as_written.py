#!/usr/bin/env python3
"""report_as_written.py: the markdown table of bench/preemption/as_written_cost.cu's runs.
Issue 39's "invisible when nothing is preempted": a launch through the runtime, run as written, against the
program's own launch, in one process, and what single runtime calls add to that launch.

Usage: report_as_written.py RESULT.jsonl ...  (prints the table; a run that failed or checked wrong prints a line
starting "FAILED: ", which bench/gpu_check.sh counts; exits 1 then)
"""
import json
import sys


def main():
    print("| CUDA module loading | launch | us per launch, median (min..max) | x the original loop, median of rounds "
          "(min..max) | ns added per launch (min..max) |")
    print("|---|---|---|---|---|")
    failed = []
    for path in sys.argv[1:]:
        try:
            with open(path) as result:
                rows = [json.loads(line) for line in result if line.startswith("{")]
        except (OSError, ValueError) as error:
            rows, reason = [], str(error)
        else:
            reason = "no result (it failed: see the log)"
        if not rows:
            failed.append(f"{path}: {reason}")
            continue
        for row in rows:
            print(f"| {row['module_loading']} | {row['variant']} | {row['us_per_launch']:.3f} "
                  f"({row['min']:.3f}..{row['max']:.3f}) | {row['x_original']:.4f} ({row['x_min']:.4f}.."
                  f"{row['x_max']:.4f}) | {row['added_ns']:.0f} ({row['added_ns_min']:.0f}..{row['added_ns_max']:.0f}) |")
        if not all(row["correct"] for row in rows):
            failed.append(f"{rows[0]['module_loading']}: wrong sums or paths ({rows[0]['routed_calls']} routed "
                          f"launches, {rows[0]['expected_routed']} expected)")
    for line in failed:
        print(f"FAILED: as_written_cost, {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
