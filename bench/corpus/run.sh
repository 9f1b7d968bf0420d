#!/bin/bash
# bench/corpus/run.sh [OUT_DIR]: on the GPU machine (no compiler, no network needed), in one call:
# unpacks bench/corpus/out/corpus.tar.xz (made here by bench/corpus/build.sh), runs every program's
# original build, then its plugin build as is, under PREEMPT_STRESS=1 and under PREEMPT_STRESS=1
# PREEMPT_INTASK=on (CORPUS_PAR at once, default 4), then times the original, the plugin build never evicted,
# and the plugin build under PREEMPT_STRESS=1 (CORPUS_TIMING_STRESS=0: not), one process at a time, in
# interleaved rounds (CORPUS_ROUNDS, default 5, as many as the time budget allows), with per-kernel GPU time from
# CUPTI (CORPUS_CUPTI=0: wall time only).
# Writes OUT_DIR/corpus.jsonl (one record per program and mode), OUT_DIR/corpus.md (bench/corpus/report.py)
# and OUT_DIR/run.log. OUT_DIR defaults to $OUT, else bench/corpus/out/run.
#
# CORPUS_STRESS_PERIOD_US: PREEMPT_STRESS_PERIOD_US for the correctness phase's stress runs (default: the
# runtime's, 2000). CORPUS_BUDGET_S (default 470): seconds from the start by which the timing rounds stop starting programs;
# the correctness phase always runs whole. CORPUS_ONLY=REGEX: only the programs whose names match.
# CORPUS_PHASES=timing: the timing rounds only (default correctness,timing); census: each program's two builds once
# with every CUDA API call counted (what the plugin's build asks beyond the original; never timed). CORPUS_TARBALL:
# another tarball.
# CORPUS_DRY=1: a dry run of the logic without a GPU (each program is
# replaced by a shell that prints its name and its expected line).
set -uo pipefail
start=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-$here/out/run}}
tarball=${CORPUS_TARBALL:-$here/out/corpus.tar.xz}
budget=${CORPUS_BUDGET_S:-470}
command_line="bash bench/corpus/run.sh $*"
for v in CORPUS_PAR CORPUS_ROUNDS CORPUS_BUDGET_S CORPUS_CUPTI CORPUS_ONLY CORPUS_DRY CORPUS_PHASES CORPUS_TIMING_STRESS CORPUS_FOCUS CORPUS_TIMED_BEFORE CORPUS_DONE CORPUS_STRESS_PERIOD_US; do
  [ -n "${!v:-}" ] && command_line="$v=${!v} $command_line"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -f "$tarball" ] || { echo "run.sh: no $tarball (build it with bench/corpus/build.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
# tee ignores SIGTERM: a caller's timeout signals the whole group, and a dead tee would take the runner's last words
# (and, through a broken pipe, the runner itself) with it.
exec > >(trap '' TERM; exec tee "$out/run.log") 2>&1

echo "run.sh: unpacking $tarball"
tar -xJf "$tarball" -C "$work" || { echo "run.sh: cannot unpack $tarball" >&2; exit 1; }
corpus=$work/corpus
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$gpu" ] || gpu="no GPU found (nvidia-smi gave nothing)"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)
echo "run.sh: GPU: $gpu; $(grep -c . "$corpus/manifest.tsv") lines in the manifest; $(nproc) CPUs"
rm -f "$out/corpus.jsonl"

# A caller's timeout (SIGTERM to the whole group): the runner writes the timing runs it has; the report follows.
trap 'echo "run.sh: SIGTERM: the report covers what ran" >&2' TERM
python3 "$here/runner.py" --corpus "$corpus" --work "$work" --out "$out/corpus.jsonl" --deadline $((start + budget))
status=$?
python3 "$here/report.py" "$out/corpus.jsonl" --corpus "$corpus" --gpu "$gpu" --commit "${commit:-unknown}" \
  --command "$command_line" --elapsed $(($(date +%s) - start)) > "$out/corpus.md" || status=1
echo "run.sh: $(($(date +%s) - start)) s; $out/corpus.md, $out/corpus.jsonl"
grep -m1 '^Summary:' "$out/corpus.md" || true
exit $status
