#!/usr/bin/env python3
# start.py: on the GPU machine, N processes of one program started together on one GPU, with and without MPS,
# original build against converted builds (alone, and under preemptd): do all start, finish and check? (issue 40)
"""Usage: bench/node/start.py BIN_DIR OUT_JSONL

Each run starts N copies of BIN_DIR/<build>/<program> at once (program: NODE_PROGRAM, default vector_add_2e23,
each writing its own output file), waits for all, and writes one JSON line: how many exited 0 with output equal
to a reference run of the original build, the distinct error lines of the others, the wall time from the first
start to the last exit, and each process's own elapsed time (median, max). Settings are run in rounds that
alternate them, so that drift hits all alike.

Settings (NODE_SETUPS, comma-separated; default original,preempt,preempt_hpf):
  original        the original build;
  preempt         the converted build, no daemon (PREEMPT_DAEMON=off);
  preempt_hpf     the converted build under a preemptd (policy hpf) this script starts on a private socket;
  preempt_hpf_q8  the same with CUDA_DEVICE_MAX_CONNECTIONS=8 set by the caller (under MPS the runtime asks 32
                  for a process that may be evicted: this tells whether that request is what stops processes);
  original_eager, preempt_eager  as original and preempt, with CUDA_MODULE_LOADING=EAGER set by the caller.
NODE_GPUS=G puts copy i on GPU i % G (CUDA_VISIBLE_DEVICES). NODE_HPF_QUEUES=N sets CUDA_DEVICE_MAX_CONNECTIONS=N for preempt_hpf. NODE_KEEP_MPS_LOG=DIR keeps the MPS control daemon's and server's logs.
Modes (NODE_MODES, default "timeslice,mps"): without MPS (the driver time-slices the contexts), and under an MPS
control daemon this script starts with private pipe and log directories. NODE_COUNTS (default 1,8,32,64),
NODE_ROUNDS (1), NODE_TIMEOUT_S (one run's limit, 120), NODE_BUDGET_S (stop starting runs after this, 400).
The last line: "node: N passed, N failed". A converted setup's run passes when as many of its processes passed as
of the original build's run just before it (same mode, N and round; every process where no original ran): MPS
serves at most 48 clients on the H200, so 64 originals cannot all start there either, and that limit is the
platform's, not the build's. The original's own run passes when any of its processes did.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def environment(setup, sock):
    env = dict(os.environ)
    for name in ("PREEMPT_STRESS", "PREEMPT_EVICT_READY", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING"):
        env.pop(name, None)
    if setup in ("original", "preempt", "original_eager", "preempt_eager"):
        env["PREEMPT_DAEMON"] = "off"
        env.pop("PREEMPT_DAEMON_SOCKET", None)
    else:
        env["PREEMPT_DAEMON_SOCKET"] = sock
    if setup == "preempt_hpf_q8":
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "8"
    elif setup == "preempt_hpf" and os.environ.get("NODE_HPF_QUEUES"):
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = os.environ["NODE_HPF_QUEUES"]
    if setup.endswith("_eager"):
        env["CUDA_MODULE_LOADING"] = "EAGER"
    return env


def run_many(binary, count, env, work, reference, timeout_s, gpus):
    """Starts count copies at once (copy i on GPU i % gpus when gpus > 1); returns the JSON fields of the run."""
    procs = []
    began = time.monotonic()
    for i in range(count):
        if gpus > 1:
            env = dict(env, CUDA_VISIBLE_DEVICES=str(i % gpus))
        out = os.path.join(work, "out.%d" % i)
        err = open(os.path.join(work, "err.%d" % i), "wb")
        procs.append((i, out, err, time.monotonic(),
                      subprocess.Popen([binary, out, "1"], env=env, stdout=subprocess.DEVNULL, stderr=err)))
    elapsed, passed, errors, killed = [], 0, {}, 0
    for i, out, err, start, proc in procs:
        left = max(0.1, timeout_s - (time.monotonic() - began))
        try:
            rc = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            killed += 1
        elapsed.append(time.monotonic() - start)
        err.close()
        same = rc == 0 and os.path.exists(out) and open(out, "rb").read() == reference
        if same:
            passed += 1
        else:
            lines = [l for l in open(os.path.join(work, "err.%d" % i), errors="replace").read().splitlines() if l]
            why = lines[-1][:200] if lines else ("exit %d, output differs" % rc if rc == 0 else "exit %d" % rc)
            errors[why] = errors.get(why, 0) + 1
        for path in (out, os.path.join(work, "err.%d" % i)):
            if os.path.exists(path):
                os.unlink(path)
    wall = time.monotonic() - began
    return {"passed": passed, "failed": count - passed, "killed": killed, "wall_s": round(wall, 4),
            "proc_median_s": round(statistics.median(elapsed), 4), "proc_max_s": round(max(elapsed), 4),
            "errors": errors}


def start_daemon(preemptd, sock, work):
    log = open(os.path.join(work, "preemptd.err"), "wb")
    proc = subprocess.Popen([preemptd, "--foreground", "--socket", sock, "--policy", "hpf"], stdout=log, stderr=log)
    for _ in range(250):
        if os.path.exists(sock):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("preemptd did not start: " + open(os.path.join(work, "preemptd.err")).read()[-500:])


def start_mps(work):
    pipe, log = os.path.join(work, "mps-pipe"), os.path.join(work, "mps-log")
    os.makedirs(pipe, exist_ok=True)
    os.makedirs(log, exist_ok=True)
    os.environ["CUDA_MPS_PIPE_DIRECTORY"], os.environ["CUDA_MPS_LOG_DIRECTORY"] = pipe, log
    subprocess.run(["nvidia-cuda-mps-control", "-d"], check=True, timeout=30)


def stop_mps(work):
    subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", timeout=30)
    keep = os.environ.get("NODE_KEEP_MPS_LOG")
    if keep:
        shutil.copytree(os.path.join(work, "mps-log"), keep, dirs_exist_ok=True)
    os.environ.pop("CUDA_MPS_PIPE_DIRECTORY", None)
    os.environ.pop("CUDA_MPS_LOG_DIRECTORY", None)


def summarize(path):
    """Per mode and N: each setup's median wall time over rounds, as a ratio to the original's."""
    walls = {}
    for text in open(path):
        line = json.loads(text)
        if "wall_s" in line:
            walls.setdefault((line["mode"], line["n"]), {}).setdefault(line["setup"], []).append(
                (line["wall_s"], line["passed"], line["n"]))
    for (mode, count), by_setup in sorted(walls.items()):
        base = statistics.median(w for w, _, _ in by_setup.get("original", [(float("nan"), 0, 0)]))
        cells = []
        for setup, runs in sorted(by_setup.items()):
            wall = statistics.median(w for w, _, _ in runs)
            cells.append("%s %.2f s (x%.2f, %d/%d ok)" % (setup, wall, wall / base, min(p for _, p, _ in runs),
                                                         count))
        print("%s n=%d: %s" % (mode, count, "; ".join(cells)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bin_dir, out_path = sys.argv[1], sys.argv[2]
    program = os.environ.get("NODE_PROGRAM", "vector_add_2e23")
    setups = os.environ.get("NODE_SETUPS", "original,preempt,preempt_hpf").split(",")
    modes = os.environ.get("NODE_MODES", "timeslice,mps").split(",")
    counts = [int(c) for c in os.environ.get("NODE_COUNTS", "1,8,32,64").split(",")]
    rounds = int(os.environ.get("NODE_ROUNDS", "1"))
    timeout_s = float(os.environ.get("NODE_TIMEOUT_S", "120"))
    budget_s = float(os.environ.get("NODE_BUDGET_S", "400"))
    gpus = int(os.environ.get("NODE_GPUS", "1"))
    for setup in setups:
        if setup not in ("original", "preempt", "preempt_hpf", "preempt_hpf_q8", "original_eager", "preempt_eager"):
            sys.exit("start.py: unknown setup '%s'" % setup)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.splitlines()[0]
    work = tempfile.mkdtemp(prefix="node.")
    sock = os.path.join(work, "preemptd.sock")
    reference_path = os.path.join(work, "reference")
    subprocess.run([os.path.join(bin_dir, "original", program), reference_path, "1"], check=True,
                   env=environment("original", sock), stdout=subprocess.DEVNULL, timeout=timeout_s)
    reference = open(reference_path, "rb").read()
    passed = failed = 0
    baseline = {}  # (mode, N, round) -> how many original processes passed
    began = time.monotonic()
    with open(out_path, "a") as out:
        for mode in modes:
            daemon = None
            try:
                if mode == "mps":
                    start_mps(work)
                if any(s.startswith("preempt_hpf") for s in setups):
                    daemon = start_daemon(os.path.join(bin_dir, "preemptd"), sock, work)
                for rnd in range(rounds):
                    for count in counts:
                        for setup in setups:
                            if setup == "preempt_hpf_q8" and mode != "mps":
                                continue  # without MPS the runtime leaves CUDA's 8 queues alone already
                            if time.monotonic() - began > budget_s:
                                line = {"mode": mode, "setup": setup, "n": count, "round": rnd,
                                        "skipped": "budget"}
                                failed += 1
                            else:
                                line = {"mode": mode, "setup": setup, "n": count, "round": rnd, "gpu": gpu, "gpus": gpus,
                                        "program": program}
                                line.update(run_many(os.path.join(bin_dir, setup.split("_")[0], program), count,
                                                     environment(setup, sock), work, reference, timeout_s, gpus))
                                if setup.startswith("original"):
                                    baseline[(mode, count, rnd)] = line["passed"]
                                    ok = line["passed"] > 0
                                else:
                                    wanted = baseline.get((mode, count, rnd), count)
                                    line["wanted"] = wanted
                                    ok = line["passed"] >= wanted
                                line["ok"] = ok
                                if ok:
                                    passed += 1
                                else:
                                    failed += 1
                            out.write(json.dumps(line) + "\n")
                            out.flush()
                            print(json.dumps(line), flush=True)
            except (subprocess.SubprocessError, RuntimeError, OSError) as error:
                line = {"mode": mode, "failed_setup": str(error)[:500]}
                out.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)
                failed += 1
            finally:
                if daemon:
                    daemon.terminate()
                    try:
                        daemon.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        daemon.kill()
                    if os.path.exists(sock):
                        os.unlink(sock)
                if mode == "mps":
                    stop_mps(work)
    shutil.rmtree(work, ignore_errors=True)
    summarize(out_path)
    print("node: %d passed, %d failed" % (passed, failed))


if __name__ == "__main__":
    main()
