#!/usr/bin/env python3
"""report_latency_rounds.py LOG: latency_rounds.sh's table. Per build, kernel and round: the host's latency (median,
p99) in the untimed process and in the timed one, and the GPU's (median, p99, max) in the timed one, all in µs."""
import json
import sys


def cell(stats, key):
    return f"{stats[key]:.1f}" if stats and stats.get("n") else "n/a"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report_latency_rounds.py latency_rounds.jsonl")
    runs = {}
    for text in open(sys.argv[1]):
        line = json.loads(text)
        runs[(line["build"], line["kernel"], line["round"], line["how"])] = line["result"]
    gpu = next((r.get("gpu") for r in runs.values() if r.get("gpu")), "unknown GPU")
    print(f"# In-task eviction latency on {gpu}: the host's view and the GPU's clock\n")
    print("µs. host: request returned -> preempt_query says EVICTED (untimed process; in the timed process after "
          "the slash). GPU: preempt_get_eviction_time, the runtime's event after the eviction's words -> the last "
          "grid's end event (PREEMPT_TIME_EVICTIONS=1).\n")
    print("| build | kernel | round | evicted | host median | host p99 | GPU median | GPU p99 | GPU max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for build, kernel, round_, how in sorted(k for k in runs if k[3] == "timed"):
        host, timed = runs.get((build, kernel, round_, "host"), {}), runs[(build, kernel, round_, "timed")]
        if "failed" in timed or "failed" in host:
            print(f"| {build} | {kernel} | {round_} | failed | | | | | |")
            continue
        print(f"| {build} | {kernel} | {round_} | {host.get('evicted')} / {timed.get('evicted')} | "
              f"{cell(host.get('latency'), 'median')} / {cell(timed.get('latency'), 'median')} | "
              f"{cell(host.get('latency'), 'p99')} / {cell(timed.get('latency'), 'p99')} | "
              f"{cell(timed.get('gpu_latency'), 'median')} | {cell(timed.get('gpu_latency'), 'p99')} | "
              f"{cell(timed.get('gpu_latency'), 'max')} |")


if __name__ == "__main__":
    main()
