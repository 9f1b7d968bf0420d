#!/usr/bin/env bash
# report.sh: compiles every kernel in bench/ctxback/kernels/ with the CTXBack pass of our plugin (OSRB on,
# routine checker with 4 trials), assemble-checks the emitted routines, and writes the context report
# (CTXBack §V-A, Fig. 7) to bench/ctxback/report.md (table) and bench/ctxback/report.json.
# The kernels are analysed as written, as the paper did: clang-22 -O3 to IR without the plugin (which would
# also convert them to persistent threads), then llc-22 -O3 with the plugin's CTXBack pass.
#   bash bench/ctxback/report.sh          # PREEMPT_BUILD=dir picks the build directory (default: build)
# Exit status: 0; 1 on an error (no report written); 2 when preempt-report says a routine check failed
# (the report is written all the same).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD=${PREEMPT_BUILD:-build}
PLUGIN=$BUILD/passes/libpreempt.so
REPORT=$BUILD/tools/preempt-report
KERNELS=bench/ctxback/kernels
DEST=bench/ctxback
CLANG=clang-22
LLVM_MC=llvm-mc-22
LLC=llc-22
CLFLAGS=(-x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O3 -S -emit-llvm)
PASSFLAGS=(-O3 -mcpu=gfx906 -filetype=obj -preempt-ctxback -preempt-ctxback-osrb -preempt-ctxback-check=4)

die() {
  echo "report.sh: error: $*" >&2
  exit 1
}

[ -f "$PLUGIN" ] || die "plugin $PLUGIN not found (in $ROOT): build first: bash tools/build.sh" \
  "(or set PREEMPT_BUILD to the build directory)"
[ -x "$REPORT" ] || die "report tool $REPORT not found (in $ROOT): build first: bash tools/build.sh" \
  "(or set PREEMPT_BUILD to the build directory)"
command -v "$CLANG" >/dev/null || die "$CLANG not found: install LLVM 22 first: bash tools/setup.sh"
command -v "$LLVM_MC" >/dev/null || die "$LLVM_MC not found: install LLVM 22 first: bash tools/setup.sh"
command -v "$LLC" >/dev/null || die "$LLC not found: install LLVM 22 first: bash tools/setup.sh"

shopt -s nullglob
SOURCES=("$KERNELS"/*.cl)
shopt -u nullglob
[ ${#SOURCES[@]} -gt 0 ] || die "no kernels in $ROOT/$KERNELS"

OUT=$(mktemp -d "${TMPDIR:-/tmp}/ctxback-report.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

failed=()
for src in "${SOURCES[@]}"; do
  k=$(basename "$src" .cl)
  echo "== $k" >&2
  if ! "$CLANG" "${CLFLAGS[@]}" -o "$OUT/$k.ll" "$src" 2>"$OUT/$k.clang.log"; then
    cat "$OUT/$k.clang.log" >&2
    echo "report.sh: $k: compiling $src to IR failed" >&2
    failed+=("$k")
    continue
  fi
  if ! "$LLC" -load "$PLUGIN" "${PASSFLAGS[@]}" -preempt-ctxback-output="$OUT/$k" -o "$OUT/$k.o" "$OUT/$k.ll"; then
    echo "report.sh: $k: the CTXBack pass failed on $src" >&2
    failed+=("$k")
    continue
  fi
  missing=0
  for f in "$OUT/$k.ctxback.tsv" "$OUT/$k.ctxback.s"; do
    if [ ! -s "$f" ]; then
      echo "report.sh: $k: the plugin did not write $(basename "$f")" \
        "(does $PLUGIN have the preempt-ctxback pass?)" >&2
      missing=1
    fi
  done
  if [ "$missing" -ne 0 ]; then
    failed+=("$k")
    continue
  fi
  if ! "$LLVM_MC" -triple=amdgcn-amd-amdhsa -mcpu=gfx906 -filetype=obj -o /dev/null "$OUT/$k.ctxback.s"; then
    echo "report.sh: $k: the emitted routines ($k.ctxback.s) do not assemble" >&2
    failed+=("$k")
  fi
done
[ ${#failed[@]} -eq 0 ] || die "${#failed[@]} of ${#SOURCES[@]} kernels failed: ${failed[*]}; report not written"

TSVS=("$OUT"/*.ctxback.tsv)
status=0
"$REPORT" "${TSVS[@]}" >"$OUT/table.txt" || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 2 ] || die "$REPORT failed (exit status $status); report not written"
cat "$OUT/table.txt"
jstatus=0
"$REPORT" --json "${TSVS[@]}" >"$OUT/report.json" || jstatus=$?
[ "$jstatus" -eq 0 ] || [ "$jstatus" -eq 2 ] || die "$REPORT --json failed (exit status $jstatus); report not written"

{
  echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') by \`bash bench/ctxback/report.sh\`" \
    "(PREEMPT_BUILD=$BUILD): each kernel \`$CLANG ${CLFLAGS[*]} -o K.ll K.cl\`, then" \
    "\`$LLC -load $PLUGIN ${PASSFLAGS[*]} -preempt-ctxback-output=OUT/K K.ll\`; then \`$REPORT OUT/*.ctxback.tsv\`."
  echo
  echo '```'
  cat "$OUT/table.txt"
  echo '```'
} >"$OUT/report.md"
cp "$OUT/report.md" "$DEST/report.md"
cp "$OUT/report.json" "$DEST/report.json"
echo "wrote $DEST/report.md and $DEST/report.json" >&2

if [ "$status" -eq 2 ] || [ "$jstatus" -eq 2 ]; then
  echo "report.sh: a routine check failed: see the report" >&2
  exit 2
fi
