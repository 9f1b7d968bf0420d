# slurm.sh: a real Slurm on localhost for one test (sourced after daemon.sh): munged, slurmctld and slurmd in the
# foreground as the test's background jobs (daemon.sh's cleanup kills whatever is left), on free ports, configured
# with docs/slurm.md's blocks as written, only the node's name, the device, paths and the socket put in. The GPU's
# stand-in is /dev/null: slurmd only needs a character device to name in gres.conf (CI has no GPU).
# Usage: source slurm.sh DOCS_SLURM_MD SPANK_PLUGIN MEM_LIB
SLURM_DOCS=$1
SLURM_PLUGIN=$2
SLURM_MEM_LIB=$3
SLURM_DIR=$SOCKDIR/slurm
SLURM_NODE=$(hostname -s)
export SLURM_CONF=$SLURM_DIR/slurm.conf
SLURM_PIDS=()

# The block of docs/slurm.md fenced as ```NAME, with the test's names and paths for the documented ones.
slurm_doc_block() {
  "$PYTHON" - "$SLURM_DOCS" "$1" <<'PY' | sed -e "s#\bnode1\b#$SLURM_NODE#g" -e "s#/dev/nvidia0#/dev/null#g" \
      -e "s#/etc/slurm/plugstack.conf#$SLURM_DIR/plugstack.conf#g" \
      -e "s#/usr/local/lib/preempt/preempt_spank.so#$SLURM_PLUGIN#g" \
      -e "s#/usr/local/lib/libpreempt_mem.so#$SLURM_MEM_LIB#g" -e "s#/run/preemptd/preemptd.sock#$SOCK#g"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"^```" + re.escape(sys.argv[2]) + r"\n(.*?)^```$", text, re.S | re.M)
if len(blocks) != 1:
    sys.exit(f"docs/slurm.md has {len(blocks)} blocks fenced as {sys.argv[2]}, expected 1")
sys.stdout.write(blocks[0])
PY
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
}

start_slurm() {
  mkdir -p "$SLURM_DIR"/{state,spool,munge}
  head -c 1024 /dev/urandom > "$SLURM_DIR/munge/munge.key"
  chmod 600 "$SLURM_DIR/munge/munge.key"
  chmod 755 "$SLURM_DIR/munge" # the socket: srun run as other users reaches munge too
  /usr/sbin/munged --force --foreground --socket="$SLURM_DIR/munge/munge.sock" \
    --key-file="$SLURM_DIR/munge/munge.key" --log-file="$SLURM_DIR/munge/munged.log" \
    --pid-file="$SLURM_DIR/munge/munged.pid" --seed-file="$SLURM_DIR/munge/munged.seed" 2>"$SLURM_DIR/munged.err" &
  SLURM_PIDS+=($!)
  local ctld_port slurmd_port
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  {
    # The test's own part: one node on localhost, no accounting, no cgroups (CI runs in a container).
    echo "ClusterName=preemptlit"
    echo "SlurmctldHost=$SLURM_NODE(127.0.0.1)"
    echo "SlurmUser=root"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=$slurmd_port"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$SLURM_DIR/munge/munge.sock"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$SLURM_DIR/state"
    echo "SlurmdSpoolDir=$SLURM_DIR/spool"
    echo "SlurmctldPidFile=$SLURM_DIR/slurmctld.pid"
    echo "SlurmdPidFile=$SLURM_DIR/slurmd.pid"
    echo "SlurmctldLogFile=$SLURM_DIR/slurmctld.log"
    echo "SlurmdLogFile=$SLURM_DIR/slurmd.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    # The documented node may claim more CPUs or memory than this machine has: believe the configuration.
    echo "SlurmdParameters=config_overrides"
    # docs/slurm.md's lines; the node is reached at 127.0.0.1 whatever its name resolves to.
    slurm_doc_block slurm.conf | sed -e "s#^NodeName=$SLURM_NODE #NodeName=$SLURM_NODE NodeAddr=127.0.0.1 #"
  } > "$SLURM_CONF" || exit 1
  slurm_doc_block gres.conf > "$SLURM_DIR/gres.conf" || exit 1
  slurm_doc_block plugstack.conf > "$SLURM_DIR/plugstack.conf" || exit 1
  for _ in $(seq 500); do [ -S "$SLURM_DIR/munge/munge.sock" ] && break; sleep 0.01; done
  # In the foreground they also log to stderr: kept out of the test's output, in their own files.
  /usr/sbin/slurmctld -D -i -f "$SLURM_CONF" 2>"$SLURM_DIR/slurmctld.err" &
  SLURM_PIDS+=($!)
  /usr/sbin/slurmd -D -N "$SLURM_NODE" -f "$SLURM_CONF" 2>"$SLURM_DIR/slurmd.err" &
  SLURM_PIDS+=($!)
  local state=""
  for _ in $(seq 600); do
    state=$(sinfo -h -N -p gpu -o %T 2>/dev/null)
    [ "$state" = idle ] && return 0
    sleep 0.1
  done
  echo "Slurm did not come up within 60 s (node state '$state'); logs:" >&2
  tail -n 20 "$SLURM_DIR/slurmctld.log" "$SLURM_DIR/slurmd.log" "$SLURM_DIR/munge/munged.log" >&2
  exit 1
}

stop_slurm() {
  kill -TERM "${SLURM_PIDS[@]}" 2>/dev/null
  wait "${SLURM_PIDS[@]}" 2>/dev/null
  SLURM_PIDS=()
}
