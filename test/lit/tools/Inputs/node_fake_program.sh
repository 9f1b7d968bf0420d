#!/bin/sh
# A stand-in for bench/node/start.py's program: writes "ref" to $1 unless it is copy i (out.<i>) with i at or above
# the limit of its build's folder (FAKE_LIMIT_<FOLDER>), like a platform that serves only so many clients.
build=$(basename "$(dirname "$0")")
limit=$(eval echo "\${FAKE_LIMIT_$build:-1000}")
case $1 in
  */out.*) i=${1##*.}; [ "$i" -lt "$limit" ] || { echo "fake: no room for copy $i" >&2; exit 1; } ;;
esac
printf ref > "$1"
