#!/bin/sh
# fake-compiler.sh: stands in for clang and llc in compile.test. Prints its command line, copies $FAKE_STATS (when
# set) to where the CTXBack pass would write its statistics, and exits with $FAKE_EXIT (default 0).
echo "fake-compiler: $*" >&2
echo "fake-compiler stdout"
output=
for argument in "$@"; do
  case $argument in
    -preempt-ctxback-output=*) output=${argument#-preempt-ctxback-output=} ;;
  esac
done
if [ -n "${FAKE_STATS:-}" ] && [ -n "$output" ]; then
  cp "$FAKE_STATS" "$output.ctxback.tsv" || exit 1
  echo "fake-compiler: wrote $output.ctxback.tsv" >&2
fi
exit "${FAKE_EXIT:-0}"
