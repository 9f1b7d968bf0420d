#!/usr/bin/env python3
# report_latency.py: gpu_check.sh's two tables of what an eviction's latency is made of, as markdown.
# Issue 42 (FLEP §4.1's yield flag; EffiSha §8's preemption latency): latency_floor.cu's round trips, and
# preempt_bench's evictions host-observed against the GPU's clock (PREEMPT_TIME_EVICTIONS=1), and its latency series
# once per forced form (PREEMPT_BENCH_ONLY=latency).
"""Usage: report_latency.py floor FLOOR_JSON | timed BENCH_JSON | forms LABEL=BENCH_JSON... (split at the last "=")

forms prints a table and, last, "forms: N passed, N failed": a form passes when its run printed its series and no
sampled block was wrong."""
import json
import sys

FLOOR_ROWS = (
    ("write_then_event", "stream write + event, host polls the event"),
    ("empty_kernel_then_event", "empty kernel + event, host polls the event"),
    ("write_seen_by_device_answer_seen_by_host", "stream write seen by a spinning kernel, its answer seen by the host"),
    ("host_store_seen_by_device_answer_seen_by_host",
     "host store to mapped host memory seen by a spinning kernel, its answer seen by the host"),
    ("copy_seen_by_device_answer_seen_by_host", "4-byte cudaMemcpyAsync seen by a spinning kernel, its answer seen by the host"),
)


def cell(row):
    return "%.1f (%.1f)" % (row["median_us"], row["p99_us"]) if row else "n/a"


def floor_table(rows):
    lines = ["| round trip | idle GPU | every SM busy |", "|---|---|---|"]
    for name, label in FLOOR_ROWS:
        lines.append("| %s | %s | %s |" % (label, cell(rows.get("idle_" + name)), cell(rows.get("busy_" + name))))
    return lines


def timed_table(bench):
    task_us = bench.get("task_us", 0)
    lines = ["| tasks | host-observed | GPU clock | preempt_evict call | one preempt_query |", "|---|---|---|---|---|"]
    for key, label in (("eviction_latency", "%.1f us, adaptive checks" % task_us),
                       ("eviction_latency_short_tasks", "%.1f us, adaptive checks" % (task_us / 10)),
                       ("eviction_latency_short_tasks_every_task", "%.1f us, a check per task" % (task_us / 10))):
        cells = [cell(bench.get(k)) for k in (key, key + "_gpu", key + "_call", key + "_query")]
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    return lines


SERIES = ("eviction_latency", "eviction_latency_short_tasks", "eviction_latency_short_tasks_every_task")


def forms_table(runs):
    """runs: (label, path) pairs; a run that failed or wrote no JSON is a failed row."""
    lines, passed, failed = [], 0, 0
    task_us = None
    rows = []
    for label, path in runs:
        try:
            with open(path) as f:
                bench = json.load(f)
        except (OSError, ValueError) as error:
            bench = {"failed": str(error)}
        ok = not bench.get("failed") and bench.get("wrong_blocks_sampled") == 0 and all(k in bench for k in SERIES)
        passed, failed = passed + ok, failed + (not ok)
        task_us = task_us or bench.get("task_us")
        cells = [cell(bench.get(k)) for k in SERIES]
        rows.append("| %s | %s | %s |" % (label, " | ".join(cells), "yes" if ok else "FAILED"))
    t = task_us or 0
    lines.append("| form | %.1f us tasks, adaptive | %.1f us, adaptive | %.1f us, a check per task | right |" % (t, t / 10, t / 10))
    lines.append("|---|---|---|---|---|")
    lines += rows
    lines += ["", "forms: %d passed, %d failed" % (passed, failed)]
    return lines


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "forms":
        print("\n".join(forms_table([arg.rsplit("=", 1) for arg in sys.argv[2:]])))
        return
    if len(sys.argv) != 3 or sys.argv[1] not in ("floor", "timed"):
        sys.exit(__doc__)
    try:
        with open(sys.argv[2]) as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        print("(no result: %s)" % error)
        return
    print("\n".join(floor_table(data) if sys.argv[1] == "floor" else timed_table(data)))


if __name__ == "__main__":
    main()
