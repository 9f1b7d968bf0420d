#!/usr/bin/env python3
"""alternate.py: times commands side by side on the GPU machine, one process at a time, the order turning from
round to round, and prints each command's wall time (median, min, max over the rounds) and its ratio to the first
command's median. Part of bench/corpus: a probe for a difference the corpus's timing rounds leave unexplained
(issue 39: hec_wyllie reaches CUDA 0.2-0.7 s later in the plugin's build with the same host instructions at
another address; bench/results/2026-11-29-h200-corpus-16df54d/).

Usage: alternate.py ROUNDS LABEL=COMMAND [LABEL=COMMAND ...]   (COMMAND split by the shell's rules; its stdout and
stderr go to /dev/null; a command that exits non-zero is reported and counted, its time kept apart)
"""
import shlex
import statistics
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or int(argv[1]) < 1 or any("=" not in a for a in argv[2:]):
        sys.exit("Usage: alternate.py ROUNDS LABEL=COMMAND [LABEL=COMMAND ...]")
    rounds = int(argv[1])
    commands = [(a.split("=", 1)[0], shlex.split(a.split("=", 1)[1])) for a in argv[2:]]
    times = {label: [] for label, _ in commands}
    failures = {label: 0 for label, _ in commands}
    for r in range(rounds):
        shift = r % len(commands)
        for label, cmd in commands[shift:] + commands[:shift]:
            t0 = time.monotonic()
            try:
                rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            except OSError as e:
                sys.exit(f"alternate.py: {label}: {e}")
            elapsed = time.monotonic() - t0
            if rc != 0:
                failures[label] += 1
            else:
                times[label].append(elapsed)
    base = statistics.median(times[commands[0][0]]) if times[commands[0][0]] else None
    print(f"{rounds} rounds, order turning; wall s median (min..max), ratio to {commands[0][0]}'s median")
    for label, _ in commands:
        t = times[label]
        if not t:
            print(f"{label}: every run failed ({failures[label]})")
            continue
        ratio = f"{statistics.median(t) / base:.3f}" if base else "-"
        print(f"{label}: {statistics.median(t):.3f} ({min(t):.3f}..{max(t):.3f}) x{ratio}"
              + (f"; {failures[label]} runs failed" if failures[label] else ""))
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
