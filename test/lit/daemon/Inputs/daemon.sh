# daemon.sh: sourced by the daemon lit tests (bash scripts run by their own RUN line): arguments, a private socket,
# start/stop of preemptd in the background, and cleanup of every process the test started, whatever way it exits.
# Usage: source daemon.sh PREEMPTD FAKE_CLIENT WORKDIR FILECHECK [PREEMPTCTL [PYTHON]]
set -u
PREEMPTD=$1
FAKE=$2
WORK=$3
FILECHECK=$4
PREEMPTCTL=${5:-}
PYTHON=${6:-python3}
rm -rf "$WORK"
mkdir -p "$WORK"
# A client's default priority is -nice (EffiSha §6.4): tests expect nice 0, so a test run under `nice` (as lit may be
# on a busy machine) starts its processes at 0 again where it may (root); elsewhere they keep the caller's nice.
[ "$(id -u)" = 0 ] && renice -n 0 -p $$ >/dev/null 2>&1
# A Unix socket path holds at most 107 bytes and build trees can be deep: the socket lives in a short directory,
# searchable by other users (the tests run clients as nobody when they run as root).
SOCKDIR=$(mktemp -d /tmp/preemptd-lit.XXXXXX)
chmod 755 "$SOCKDIR"
SOCK=$SOCKDIR/preemptd.sock
# Clients run as nobody must be able to execute the programs, and a build tree (a fresh clone under a mktemp -d
# directory, mode 0700) need not be reachable by other users: run copies from the searchable directory.
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$SOCKDIR/bin"
  cp "$FAKE" "$SOCKDIR/bin/fake_client"
  FAKE=$SOCKDIR/bin/fake_client
  if [ -n "$PREEMPTCTL" ]; then
    cp "$PREEMPTCTL" "$SOCKDIR/bin/preemptctl"
    PREEMPTCTL=$SOCKDIR/bin/preemptctl
  fi
  chmod -R a+rX "$SOCKDIR/bin"
fi
LOG=$WORK/daemon.log
DAEMON_PID=

cleanup() {
  local pids
  pids=$(jobs -p)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  rm -rf "$SOCKDIR"
}
trap cleanup EXIT

# Starts preemptd --foreground with extra options; returns once it accepts connections (its "listening" line).
# The tests model a node under MPS (kernels of two clients side by side, spatial eviction) unless they pass --sharing
# themselves: CI has no MPS, and detection would make every daemon there a time-slicing one.
start_daemon() {
  local err=$WORK/daemon.err.$RANDOM sharing=(--sharing mps) arg
  for arg in "$@"; do case $arg in --sharing | --sharing=*) sharing=() ;; esac; done
  # Created here: the background job opens it in its own time, and a grep that came first would print "No such
  # file" into the output a test checks line by line (options.test failed so, once in a few runs under load).
  : > "$err"
  "$PREEMPTD" --foreground --socket "$SOCK" --log "$LOG" "${sharing[@]}" "$@" 2>>"$err" &
  DAEMON_PID=$!
  for _ in $(seq 500); do
    grep -q "listening on" "$err" && return 0
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
      echo "preemptd did not start:" >&2
      cat "$err" >&2
      exit 1
    fi
    sleep 0.01
  done
  echo "preemptd did not start within 5 s" >&2
  exit 1
}

# SIGTERM, then waits: prints the exit status so tests can check a clean stop.
stop_daemon() {
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID"
  echo "preemptd exited with $?"
  DAEMON_PID=
}

# Runs a command as an unprivileged user: nobody when the test runs as root, the user itself otherwise.
as_user() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else
    "$@"
  fi
}

# Runs a command as a given uid (and gid): the hostile-user tests (REQUIRES: root) need two users besides root.
as_uid() {
  local uid=$1
  shift
  setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
}

# Waits up to 5 s for a file a client touches: orders clients (and so their client ids) without fixed sleeps.
wait_for_file() {
  for _ in $(seq 1000); do
    [ -e "$1" ] && return 0
    sleep 0.005
  done
  echo "timed out waiting for $1" >&2
  exit 1
}

# Waits up to 5 s for a line of the decision log (a fixed string): orders the test after what the daemon has seen,
# also for clients run as nobody, which cannot touch files in the work directory.
wait_for_log() {
  for _ in $(seq 1000); do
    grep -q -F -- "$1" "$LOG" && return 0
    sleep 0.005
  done
  echo "timed out waiting for \"$1\" in the decision log" >&2
  exit 1
}

# A TCP port on 127.0.0.1 free now, for a server the test starts (metrics, Slurm, Prometheus).
free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
