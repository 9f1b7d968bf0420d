#!/usr/bin/env python3
"""report_forms.py: form_check.sh's lines as a markdown table: each program under random evictions in the drain
form (and in auto), checked against the original build; its time in each form, median over rounds (min..max), as a
ratio of the original build's median in the same call. Issue 3, docs/preemption.md ("Drain form").
Usage: report_forms.py FORMS.jsonl > FORMS.md; the last line says "forms: N passed, N failed"."""
import json
import math
import statistics
import sys

FORMS = ["auto", "drain", "persistent"]


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    programs = list(dict.fromkeys(row["program"] for row in rows))
    passed = failed = 0
    print("| program | drain form, random evictions | auto, random evictions | original ms (min..max) | "
          + " | ".join(f"{form} / original (min..max)" for form in FORMS) + " |")
    print("|---|---|---|---|" + "---|" * len(FORMS))
    ratios = {form: [] for form in FORMS}
    for program in programs:
        mine = [row for row in rows if row["program"] == program]
        cells = []
        for label in ["stress_drain", "stress_auto"]:
            stress = [row for row in mine if row["run"] == label]
            ok = bool(stress) and all(row["status"] == "ok" and row.get("match") for row in stress)
            passed, failed = passed + ok, failed + (not ok)
            if not stress:
                cells.append("FAILED: not run")
            elif ok:
                row = stress[0]
                cells.append(f"match ({row['detail']}), {row['evictions']} evictions, "
                             f"{row['drained_evictions']} of drained launches")
            else:
                row = stress[0]
                cells.append(f"FAILED: {row['status']} {row.get('detail', '')} {row.get('stderr', '')[-160:]}"
                             .replace("\n", " ").replace("|", "/"))
        times = {}
        for label in ["original"] + FORMS:
            runs = [row for row in mine if row["run"] == label]
            for row in runs:
                if label != "original":
                    ok = row["status"] == "ok" and row.get("match")
                    passed, failed = passed + ok, failed + (not ok)
            times[label] = [row["time_ms"] for row in runs if row["status"] == "ok" and not math.isnan(row["time_ms"])]
        base = statistics.median(times["original"]) if times["original"] else float("nan")
        line = f"| {program} | {cells[0]} | {cells[1]} | "
        line += (f"{base:.3f} ({min(times['original']):.3f}..{max(times['original']):.3f})"
                 if times["original"] else "n/a")
        for form in FORMS:
            if times[form] and times["original"]:
                ratio = statistics.median(times[form]) / base
                ratios[form].append(ratio)
                line += f" | {ratio:.3f} ({min(times[form]) / base:.3f}..{max(times[form]) / base:.3f})"
            else:
                line += " | n/a"
        print(line + " |")
    print()
    for form in FORMS:
        if ratios[form]:
            geomean = math.exp(sum(math.log(r) for r in ratios[form]) / len(ratios[form]))
            print(f"- {form}: geomean {geomean:.3f}, worst {max(ratios[form]):.3f}, over {len(ratios[form])} programs")
    print()
    print(f"forms: {passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
