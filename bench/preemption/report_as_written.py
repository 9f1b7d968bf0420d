#!/usr/bin/env python3
"""report_as_written.py: the markdown table of bench/preemption/as_written_cost.cu's runs.
Issue 39's "invisible when nothing is preempted": a launch through the runtime, run as written, against the
program's own call, in one process.

Usage: report_as_written.py LABEL=RESULT.json ...  (prints the table; a run that failed or checked wrong prints a
line starting "FAILED: ", which bench/gpu_check.sh counts)
"""
import json
import sys


def main():
    print("| CUDA module loading | own call, us per launch | through the runtime | routed / own, median of rounds "
          "(min..max) | rounds |")
    print("|---|---|---|---|---|")
    failed = []
    for argument in sys.argv[1:]:
        label, _, path = argument.partition("=")
        try:
            with open(path) as result:
                row = json.loads(result.read().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError) as error:
            failed.append(f"{label}: no result ({error})")
            continue
        if not row.get("correct"):
            failed.append(f"{label}: wrong output or path ({row.get('routed_calls')} routed launches of "
                          f"{row.get('expected_routed')} expected)")
        print(f"| {label} | {row['direct_us_per_launch']:.3f} ({row['direct_min']:.3f}..{row['direct_max']:.3f}) | "
              f"{row['routed_us_per_launch']:.3f} ({row['routed_min']:.3f}..{row['routed_max']:.3f}) | "
              f"{row['ratio']:.4f} ({row['ratio_min']:.4f}..{row['ratio_max']:.4f}) | {row['rounds']} |")
    for line in failed:
        print(f"FAILED: as_written_cost, {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
