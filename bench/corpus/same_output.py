#!/usr/bin/env python3
"""bench/corpus/same_output.py: whether a program's original build prints the same filtered stdout every time it
runs, N copies at once on one GPU (on the GPU machine, after run.sh has unpacked the corpus; standard library only).
Issue 39: a plugin run whose stdout differs from the original's in the last digits of a sum of floating-point atomics
(HeCBench jacobi under the correctness phase's 8 programs at once) is a miscompile only if the original never prints
it; blocks that finish in another order add in another order. Prints one JSON object: the distinct filtered outputs
and, for each, how many runs printed it and its first line that differs from the most common one.

Usage: same_output.py CORPUS_DIR NAME [COPIES [BATCHES]]   (default 8 copies, 2 batches)
"""
import collections
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import filtered_lines, read_manifest  # noqa: E402


def main():
    corpus, name = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    batches = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    programs = {p["name"]: p for p in read_manifest(corpus)}
    if name not in programs:
        sys.exit(f"same_output.py: no program {name!r} in {corpus}/manifest.tsv")
    program = programs[name]
    binary = os.path.join(corpus, "original", name)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(corpus, "lib"))
    outputs, failures = collections.Counter(), 0
    work = tempfile.mkdtemp(prefix="same_output.")
    try:
        for batch in range(batches):
            runs = []
            for copy in range(copies):
                cwd = os.path.join(work, f"{batch}.{copy}")
                data = os.path.join(corpus, "data", name)
                shutil.copytree(data, cwd, symlinks=True) if os.path.isdir(data) else os.makedirs(cwd)
                runs.append(subprocess.Popen([binary] + shlex.split(program.get("args") or ""), cwd=cwd, env=env,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
            for run in runs:
                stdout, _ = run.communicate(timeout=600)
                if run.returncode != 0:
                    failures += 1
                    continue
                lines = filtered_lines(stdout, program.get("filter"), program.get("same_stdout", "yes"))
                outputs["\n".join(lines)] += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    common = outputs.most_common(1)[0][0].split("\n") if outputs else []
    distinct = []
    for text, count in outputs.most_common():
        lines = text.split("\n")
        first = next((f"line {i + 1}: {a!r} vs {b!r}" for i, (a, b) in enumerate(zip(lines, common)) if a != b),
                     None if len(lines) == len(common) else "a different number of lines")
        distinct.append({"runs": count, "first_difference_from_most_common": first})
    print(json.dumps({"program": name, "runs": copies * batches, "failed": failures,
                      "distinct_outputs": len(outputs), "outputs": distinct}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
