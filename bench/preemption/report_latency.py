#!/usr/bin/env python3
# report_latency.py: gpu_check.sh's two tables of what an eviction's latency is made of, as markdown.
# Issue 42 (FLEP §4.1's yield flag; EffiSha §8's preemption latency): latency_floor.cu's round trips, and
# preempt_bench's evictions host-observed against the GPU's clock (PREEMPT_TIME_EVICTIONS=1).
"""Usage: report_latency.py floor FLOOR_JSON | timed BENCH_JSON"""
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


def main():
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
