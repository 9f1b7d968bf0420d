#!/usr/bin/env python3
"""scenario.py: drives memory admission's lit tests with real processes on a simulated GPU.

Every client is build/test/mem/mem_client, an unmodified program linked with the simulated GPU
(test/fake-gpu/libfakecuda.so: FAKE_GPU_MEMORY bytes shared by all processes naming the same FAKE_GPU_NAME);
admission reaches it only through LD_PRELOAD=libpreempt_mem.so. Each run uses its own ledger and simulated GPU
(names carry the driver's pid), and removes them (/dev/shm/preempt-mem-test-<test>-<pid>-*) when it ends, whatever way it ends.

  scenario.py TOOLS... scenario POLICY   the scripted admission order of one policy (test_mem_ledger.c's)
  scenario.py TOOLS... control           two clients over capacity: without admission one fails, with it none
  scenario.py TOOLS... apis              each allocation API's accounting in the ledger
  scenario.py TOOLS... kill              kill -9 of a holder, of a waiter, of a holder inside the ledger's lock
  scenario.py TOOLS... chaos [options]   hundreds of kills at random points, then the survivors must finish
TOOLS: --client PATH --preload PATH --work DIR [--daemon PATH] [--stalled-waiter PATH] (kill's last
shared-segment case needs the last)
With --daemon, each run starts its own preemptd (its socket in the run's directory, --memory-policy the run's
policy, no NVML: the clients' readings size the GPU) and the clients keep their ledger there; every view of the
ledger must say so (ledger=preemptd). Cases that need the shared segment's lock are replaced by their daemon
counterpart (kill: the daemon itself killed while a client waits).

Output: lines for FileCheck. A check the driver makes itself prints "check <what>: ok" or
"check <what>: FAILED (<why>)"; any failure also makes the exit status 1.
"""
import argparse
import glob
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20
CAPACITY = 100 * MIB
failures = []


def say(text):
    print(text, flush=True)


def check(what, ok, why=""):
    if ok:
        say(f"check {what}: ok")
    else:
        say(f"check {what}: FAILED ({why})")
        failures.append(what)
    return ok


class Fatal(Exception):
    """The run cannot go on (a client never answered): reported, then everything is cleaned up."""


class Client:
    """One mem_client process; a thread reads its output. All clients share the driver's condition."""

    def __init__(self, run, name, arguments, preload=True, extra_env=None, keep_lines=True):
        self.run = run
        self.name = name
        env = dict(run.env)
        if preload:
            env["LD_PRELOAD"] = run.preload
        else:
            env.pop("LD_PRELOAD", None)
        env.update(extra_env or {})
        self.log = open(os.path.join(run.work, f"{name}.stderr"), "w")
        self.proc = subprocess.Popen([run.client] + arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=env, text=True, bufsize=1)
        self.keep_lines = keep_lines
        self.lines = []
        self.last = None
        self.granted_count = 0
        self.granted_ns = None
        self.oom = 0
        self.closed = False
        run.clients.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            with self.run.cond:
                if self.keep_lines:
                    self.lines.append(line)
                self.last = line
                words = line.split()
                if words and words[0] == "granted":
                    self.granted_count += 1
                    self.granted_ns = int(words[-1])
                elif words and words[0] == "oom":
                    self.oom += 1
                self.run.cond.notify_all()
        with self.run.cond:
            self.closed = True
            self.run.cond.notify_all()

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, seconds=10):
        """hold mode: frees (if still holding) and exits."""
        if self.proc.poll() is None:
            try:
                self.send("free")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        return self.wait_exit(seconds)

    def line_starting(self, prefix):
        for line in self.lines:
            if line.startswith(prefix):
                return line
        return None

    def wait_for(self, predicate, seconds, what):
        deadline = time.monotonic() + seconds
        with self.run.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Fatal(f"{self.name}: no {what} within {seconds} s (last line: {self.last!r})")
                self.run.cond.wait(left)

    def wait_exit(self, seconds):
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise Fatal(f"{self.name} did not exit within {seconds} s (last line: {self.last!r})")

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def query(self, seconds=10):
        """The ledger as this client sees it: info --loop's, or hold's after its free."""
        with self.run.cond:
            seen = len(self.lines)
        self.send("info")
        self.wait_for(lambda: len(self.lines) > seen and self.lines[-1].startswith("info"), seconds, "info line")
        line = self.lines[-1]
        if not line.startswith("info capacity="):
            raise Fatal(f"info: {line}")
        return parse_info(self.run, line)


class Info(Client):
    """mem_client info --loop: the ledger as preempt_mem_get_info reports it, on demand."""

    def __init__(self, run, name="info"):
        super().__init__(run, name, ["info", "--loop"])


def parse_info(run, line):
    state = {key: (value if key in ("policy", "ledger") else int(value))
             for key, value in (word.split("=", 1) for word in line.split()[1:])}
    expected = "preemptd" if run.daemon and not run.daemon_killed else "shared"
    if state["ledger"] != expected:
        raise Fatal(f"the ledger is kept by {state['ledger']}, not {expected}: {line}")
    return state


def info_once(run):
    """A fresh process's one-shot view (it attaches, so it counts itself among the clients)."""
    client = Client(run, f"info-once-{len(run.clients)}", ["info"])
    client.wait_exit(20)
    client.reader.join(5)
    line = client.line_starting("info capacity=")
    if not line:
        raise Fatal(f"info: {client.lines}")
    return parse_info(run, line)


def gpu_once(run):
    client = Client(run, f"gpu-{len(run.clients)}", ["gpu"], preload=False)
    client.wait_exit(20)
    client.reader.join(5)
    line = client.line_starting("gpu capacity=")
    if not line:
        raise Fatal(f"gpu: {client.lines}")
    return {key: int(value) for key, value in (word.split("=", 1) for word in line.split()[1:])}


class Run:
    """One test's processes, private ledger and simulated GPU, and their cleanup."""

    def __init__(self, options, tag, policy="fifo", timeout_ms=30000):
        self.client = options.client
        self.preload = options.preload
        self.work = os.path.join(options.work, tag)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.prefix = f"/preempt-mem-test-{tag}-{os.getpid()}"
        self.cond = threading.Condition()
        self.clients = []
        self.env = dict(os.environ)
        for key in list(self.env):
            if key.startswith(("PREEMPT_", "FAKE_GPU_")) or key == "LD_PRELOAD":
                del self.env[key]
        self.env.update({
            "FAKE_GPU_MEMORY": str(CAPACITY),
            "FAKE_GPU_NAME": self.prefix + "-gpu",
            "PREEMPT_MEM_SEGMENT": self.prefix,
            "PREEMPT_MEM_POLICY": policy,
            "PREEMPT_MEM_TIMEOUT_MS": str(timeout_ms),
        })
        # The run's own socket, in a short folder of its own (a Unix socket's path is at most 107 bytes, and lit's
        # work folders in a fresh clone under /tmp come near that); without a daemon of the run's own, a node's
        # real preemptd must not be found either.
        self.socket_dir = tempfile.mkdtemp(prefix="pmt")
        self.env["PREEMPT_DAEMON_SOCKET"] = os.path.join(self.socket_dir, "preemptd.sock")
        self.remove_segments()
        self.daemon = None
        self.daemon_killed = False
        if options.daemon:
            self.start_daemon(options.daemon, policy, options.nvml)

    def start_daemon(self, path, policy, nvml):
        """preemptd in the foreground, on the run's socket; ready once it says it listens. With `nvml`, the daemon
        loads the simulated GPU's NVML from there and must say so in its log."""
        self.daemon_log = open(os.path.join(self.work, "preemptd.stderr"), "w")
        env = dict(self.env)
        if nvml:
            env["LD_LIBRARY_PATH"] = nvml + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        self.daemon = subprocess.Popen([path, "--foreground", "--socket", self.env["PREEMPT_DAEMON_SOCKET"],
                                        "--memory-policy", policy, "--log", os.path.join(self.work, "preemptd.log")],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.daemon_log,
                                       env=env)
        deadline = time.monotonic() + 10
        while True:
            with open(self.daemon_log.name) as log:
                if "listening on" in log.read():
                    with open(os.path.join(self.work, "preemptd.log")) as decisions:
                        loaded = "nvml=libnvidia-ml.so.1" in decisions.read()
                    if loaded != bool(nvml):
                        raise Fatal(f"preemptd {'did not load' if nvml else 'loaded'} NVML")
                    return
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise Fatal(f"preemptd did not start (exit {self.daemon.poll()})")
            time.sleep(0.01)

    def kill_daemon(self):
        self.daemon_killed = True
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait()

    def wait_detached(self, clients, seconds=10):
        """With preemptd: waits until the daemon has detached these exited clients. It learns of an exit from the
        end of the connection, which it may read only after a query that came later on another one; its log names
        each disconnect once the client is out of its ledger."""
        if not self.daemon:
            return
        deadline = time.monotonic() + seconds
        while True:
            with open(os.path.join(self.work, "preemptd.log")) as log:
                seen = {int(pid) for pid in re.findall(r" disconnect client=\d+ pid=(\d+):", log.read())}
            left = sorted(client.proc.pid for client in clients if client.proc.pid not in seen)
            if not left:
                return
            if time.monotonic() > deadline:
                raise Fatal(f"preemptd did not see the exits of pids {left} within {seconds} s")
            time.sleep(0.002)

    def remove_segments(self):
        for path in glob.glob(f"/dev/shm{self.prefix}-*"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def close(self):
        for client in self.clients:
            if client.proc.poll() is None:
                client.kill()
            client.log.close()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        if self.daemon:
            self.daemon_log.close()
            self.daemon = None
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        self.remove_segments()
        self.clients = []

    def dump_logs(self):
        if self.daemon:
            with open(os.path.join(self.work, "preemptd.log")) as log:
                sys.stderr.write(f"--- preemptd log:\n{log.read()[-3000:]}\n")
        for client in self.clients:
            client.log.flush()
            with open(client.log.name) as log:
                text = log.read().strip()
            if text:
                sys.stderr.write(f"--- {client.name} stderr:\n{text[-2000:]}\n")


def priorities():
    """High and low PREEMPT_PRIORITY values this user may ask for: a user other than root gets at most -nice."""
    high = -os.nice(0)
    low = high - 5
    if low < -20:
        raise Fatal(f"nice {os.nice(0)} leaves no room for two priorities")
    return high, low


# ---- scenario: each policy's admission order

SIZES = {"A": 60, "B": 50, "C": 30, "D": 45, "E": 10}


def scenario(options):
    policy = options.policy
    run = Run(options, f"scenario-{policy}", policy=policy)
    high, low = priorities()
    priority = {"A": low, "B": low, "C": low, "D": high, "E": low}
    say(f"scenario policy={policy} capacity=100M A=60M B=50M C=30M D=45M(high) E=10M")
    try:
        info = Info(run)
        info.query()  # the info client attaches first: the ledger exists, with this policy
        started, granted_at, freed = [], {}, set()
        step = [0]

        def settle(event):
            """Waits until every request the ledger no longer lists as waiting was seen granted by its client,
            then names the clients granted since the last event."""
            deadline = time.monotonic() + 10
            while True:
                with run.cond:
                    ungranted = [c for c in started if c.granted_count == 0]
                    ooms = [c.name for c in started if c.oom]
                if ooms:
                    raise Fatal(f"out of memory: {ooms}")
                waiting = info.query()["waiting"]
                if waiting == len(ungranted):
                    break
                if waiting > len(ungranted):
                    raise Fatal(f"ledger lists {waiting} waiting, only {len(ungranted)} clients are")
                if time.monotonic() > deadline:
                    raise Fatal(f"after {event}: {len(ungranted) - waiting} grants never reached their clients")
                time.sleep(0.002)
            step[0] += 1
            new = sorted(c.name for c in started if c.granted_count and c.name not in granted_at)
            for name in new:
                granted_at[name] = step[0]
            say(f"after {event}: granted {' '.join(new) if new else 'none'}")

        for name in "ABCDE":
            client = Client(run, name, ["hold", name, f"{SIZES[name]}M"],
                            extra_env={"PREEMPT_PRIORITY": str(priority[name])})
            started.append(client)
            settle(f"{name} asks")

        def free(client):
            # The client stays attached after its free: the wake-ups must come from the free itself, not from
            # the exit (which wakes every waiter too).
            client.send("free")
            client.wait_for(lambda: client.line_starting("freed"), 10, "freed line")
            # preemptd answers no free (MEM_RELEASE) and may serve the info client's query before it reads the
            # release; the freeing client's own query follows its release on the same connection, so its answer
            # says the ledger has the free (and has granted what the free lets go).
            client.query()
            freed.add(client.name)
            settle(f"{client.name} frees")

        free(started[0])
        # The holder granted earliest frees next; ties: the higher priority, then the earlier arrival.
        order_key = lambda c: (granted_at[c.name], -priority[c.name], "ABCDE".index(c.name))
        while any(c.name not in granted_at for c in started):
            holders = [c for c in started if c.name in granted_at and c.name not in freed]
            if not holders:
                raise Fatal("requests wait while no one holds memory")
            free(min(holders, key=order_key))
        grant_order = sorted((c for c in started[1:]), key=order_key)
        say("order: " + "".join(c.name for c in grant_order))
        for client in sorted((c for c in started if c.name not in freed), key=order_key):
            client.send("free")
        for client in started:
            client.proc.stdin.close()
            if client.wait_exit(10) != 0:
                raise Fatal(f"{client.name} exited with {client.proc.returncode}")
        run.wait_detached(started)
        final = info.query()
        with run.cond:
            ooms = sum(c.oom for c in started)
        say(f"final: reserved={final['reserved']} waiting={final['waiting']} clients={final['clients']} "
            f"external={final['external']} oom={ooms} lost_wakeups={final['lost_wakeups']} policy={final['policy']}")
    except Fatal as problem:
        say(f"FATAL: {problem}")
        run.dump_logs()
        failures.append("fatal")
    finally:
        run.close()


# ---- control: the simulated GPU fails without admission; with it, the same two clients both finish

def control(options):
    say("control capacity=100M: A 60M then B 60M")
    for preload in (False, True):
        run = Run(options, "control-" + ("admitted" if preload else "unadmitted"))
        label = "with admission" if preload else "without admission"
        try:
            info = Info(run) if preload else None
            a = Client(run, "A", ["hold", "A", "60M"], preload=preload)
            a.wait_for(lambda: a.granted_count or a.oom, 10, "answer")
            b = Client(run, "B", ["hold", "B", "60M"], preload=preload)
            if not preload:
                b.wait_for(lambda: b.granted_count or b.oom, 10, "answer")
                say(f"{label}: A {'granted' if a.granted_count else 'oom'}, B {'oom' if b.oom else 'granted'}")
                say(f"{label}: B exited with {b.wait_exit(10)}")
                a.finish()
            else:
                deadline = time.monotonic() + 10
                while info.query()["waiting"] != 1:
                    if b.granted_count or b.oom or time.monotonic() > deadline:
                        raise Fatal(f"B never waited (granted={b.granted_count} oom={b.oom})")
                    time.sleep(0.002)
                say(f"{label}: A {'granted' if a.granted_count else 'oom'}, B waits")
                a.send("free")
                b.wait_for(lambda: b.granted_count or b.oom, 10, "answer")
                a.wait_for(lambda: a.line_starting("freeing A"), 10, "freeing line")
                freeing = int(a.line_starting("freeing A").split()[-1])
                say(f"{label}: after A frees, B {'granted' if b.granted_count else 'oom'}")
                check("B granted after A began to free", b.granted_count and b.granted_ns > freeing)
                a.finish()
                say(f"{label}: B exited with {b.finish()}")
                final = info.query()
                say(f"{label}: final reserved={final['reserved']} waiting={final['waiting']}")
            with run.cond:
                ooms = sum(c.oom for c in run.clients)
            say(f"{label}: oom lines {ooms}")
        except Fatal as problem:
            say(f"FATAL: {problem}")
            run.dump_logs()
            failures.append("fatal")
        finally:
            run.close()


# ---- apis: each allocation API's accounting

def apis(options):
    run = Run(options, "apis", timeout_ms=5000)
    try:
        client = Client(run, "apis", ["apis"], extra_env={"FAKE_GPU_PITCH": "1024", "FAKE_GPU_ALIAS_HANDLES": "1",
                                                          "PREEMPT_QUIET": "1"})
        say(f"apis exited with {client.wait_exit(20)}")
        client.reader.join(5)
        for line in client.lines:
            say(line)
    except Fatal as problem:
        say(f"FATAL: {problem}")
        failures.append("fatal")
    finally:
        run.close()


# ---- kill: dead clients' memory and requests are reclaimed, and waiters woken, within 1 s

SYSCALLS = {"x86_64": {"nanosleep": {35, 230}, "futex": {202}},
            "aarch64": {"nanosleep": {101, 115}, "futex": {98}}}


def blocked_in(pid, call):
    """Whether the process is blocked in that system call now (/proc/PID/syscall names the call it is in);
    None where that cannot be read."""
    numbers = SYSCALLS.get(os.uname().machine, {}).get(call)
    try:
        with open(f"/proc/{pid}/syscall") as status:
            words = status.read().split()
    except OSError:
        return None
    if numbers is None:
        return None
    return bool(words) and words[0].isdigit() and int(words[0]) in numbers


def wait_blocked(pid, call, fallback_seconds):
    """Waits (1.5 s at most) for the process to block in the call; without /proc/PID/syscall, sleeps instead."""
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        blocked = blocked_in(pid, call)
        if blocked is None:
            time.sleep(fallback_seconds)
            return None
        if blocked:
            return True
        time.sleep(0.001)
    return False


def wait_waiting(info, count, seconds=10):
    deadline = time.monotonic() + seconds
    while info.query()["waiting"] != count:
        if time.monotonic() > deadline:
            raise Fatal(f"the ledger never listed {count} waiting")
        time.sleep(0.002)


def report_latency(label, killed_ns, client):
    client.wait_for(lambda: client.granted_count or client.oom or client.closed, 10, "grant")
    if not client.granted_count:
        check(f"{label}: {client.name} granted", False, f"last line {client.last!r}")
        return
    latency_ms = (client.granted_ns - killed_ns) / 1e6
    say(f"{label}: {client.name} granted {latency_ms:.1f} ms after the kill")
    say(f"{label}: granted within 1s: {'yes' if latency_ms < 1000 else 'no'}")


def kill_holder_of_waiter(run, info, label):
    """H holds 80M, W waits for 50M behind it; H is killed and W's grant is timed from the kill. Returns W."""
    holder = Client(run, "H", ["hold", "H", "80M"])
    holder.wait_for(lambda: holder.granted_count, 10, "grant")
    waiter = Client(run, "W", ["hold", "W", "50M"])
    wait_waiting(info, 1)
    killed = time.monotonic_ns()
    holder.kill()
    report_latency(label, killed, waiter)
    return waiter


def kill_holder(options):
    run = Run(options, "kill-holder")
    try:
        info = Info(run)
        waiter = kill_holder_of_waiter(run, info, "holder killed")
        state = info.query()
        say(f"holder killed: reserved={state['reserved'] // MIB}M waiting={state['waiting']} "
            f"clients={state['clients']} dead_clients={state['dead_clients']} "
            f"lock_owner_deaths={state['lock_owner_deaths']} lost_wakeups={state['lost_wakeups']}")
        waiter.finish()
        run.wait_detached([waiter])
        state = info.query()
        say(f"holder killed: at the end reserved={state['reserved']} clients={state['clients']}")
    finally:
        run.close()


def kill_waiter(options):
    """FIFO: the head waiter (50M) blocks a smaller one behind it (10M, which would fit): kill the head."""
    run = Run(options, "kill-waiter", policy="fifo")
    try:
        info = Info(run)
        holder = Client(run, "H", ["hold", "H", "80M"])
        holder.wait_for(lambda: holder.granted_count, 10, "grant")
        head = Client(run, "W1", ["hold", "W1", "50M"])
        wait_waiting(info, 1)
        behind = Client(run, "W2", ["hold", "W2", "10M"])
        wait_waiting(info, 2)
        say(f"waiter killed: before, W2 {'granted' if behind.granted_count else 'waits'} behind W1")
        killed = time.monotonic_ns()
        head.kill()
        report_latency("waiter killed", killed, behind)
        state = info.query()
        say(f"waiter killed: reserved={state['reserved'] // MIB}M waiting={state['waiting']} "
            f"clients={state['clients']} dead_clients={state['dead_clients']} "
            f"lock_owner_deaths={state['lock_owner_deaths']} lost_wakeups={state['lost_wakeups']}")
        for client in (holder, behind):
            client.finish()
        run.wait_detached([holder, behind])
        state = info.query()
        say(f"waiter killed: at the end reserved={state['reserved']} waiting={state['waiting']} "
            f"clients={state['clients']}")
    finally:
        run.close()


def kill_inside_lock(options):
    """The holder frees with PREEMPT_MEM_TEST_HOLD_NS=2 s: it writes its release (which grants the waiter), then
    sleeps inside the ledger's lock before waking anyone, and is killed there while a third process (the info
    client, asking for the ledger) waits for the lock."""
    run = Run(options, "kill-in-lock")
    try:
        info = Info(run)
        holder = Client(run, "H", ["hold", "H", "80M"], extra_env={"PREEMPT_MEM_TEST_HOLD_NS": "2000000000"})
        holder.wait_for(lambda: holder.granted_count, 10, "grant")
        waiter = Client(run, "W", ["hold", "W", "50M"])
        wait_waiting(info, 1)
        holder.send("free")
        holder.wait_for(lambda: holder.line_starting("freeing"), 10, "freeing line")
        inside = wait_blocked(holder.proc.pid, "nanosleep", 0.5)
        with run.cond:
            seen = len(info.lines)
        info.send("")  # its answer waits for the lock
        queued = wait_blocked(info.proc.pid, "futex", 0.05)
        killed = time.monotonic_ns()
        holder.kill()
        say(f"killed inside the lock: H had printed {holder.last!r}; seen sleeping: {inside}; info blocked: {queued}")
        report_latency("killed inside the lock", killed, waiter)
        info.wait_for(lambda: len(info.lines) > seen, 10, "info line")
        state = info.query()
        say(f"killed inside the lock: reserved={state['reserved'] // MIB}M waiting={state['waiting']} "
            f"clients={state['clients']} dead_clients={state['dead_clients']} "
            f"lock_owner_deaths={state['lock_owner_deaths']} reinitializations={state['reinitializations']} "
            f"lost_wakeups={state['lost_wakeups']}")
        waiter.finish()
        state = info.query()
        say(f"killed inside the lock: at the end reserved={state['reserved']} clients={state['clients']}")
    finally:
        run.close()


def kill_slow_driver(options):
    """The simulated GPU frees a dead process's memory only 200 ms after it first sees it dead, as a slow driver
    may: the ledger reclaims the killed holder first, admits the waiter, whose real allocation then fails; the
    wrapper gives the admission back, learns the memory still used outside the ledger, waits, and retries."""
    run = Run(options, "kill-slow-gpu")
    run.env["FAKE_GPU_RELEASE_DELAY_MS"] = "200"
    try:
        info = Info(run)
        waiter = kill_holder_of_waiter(run, info, "slow GPU")
        state = info.query()
        gpu = gpu_once(run)
        say(f"slow GPU: reserved={state['reserved'] // MIB}M waiting={state['waiting']} external={state['external']} "
            f"dead_clients={state['dead_clients']} lost_wakeups={state['lost_wakeups']} oom={waiter.oom}")
        say(f"slow GPU: the GPU refused an admitted allocation: {'yes' if gpu['failures'] else 'no'}; "
            f"used {gpu['used'] // MIB}M")
        waiter.finish()
    finally:
        run.close()


def kill_daemon(options):
    """preemptd is killed (SIGKILL) while H holds 60M and W waits for 60M: W's request ends with the connection, W
    moves to the shared segment, where H's 60M shows as used outside the ledger (the GPU's reading), so W waits
    there; H frees (its own release finds the daemon gone too) and W is granted at its next poll."""
    run = Run(options, "kill-daemon")
    try:
        info = Info(run)
        holder = Client(run, "H", ["hold", "H", "60M"])
        holder.wait_for(lambda: holder.granted_count, 10, "grant")
        waiter = Client(run, "W", ["hold", "W", "60M"])
        wait_waiting(info, 1)
        info.proc.stdin.close()
        info.wait_exit(10)
        run.kill_daemon()
        time.sleep(0.3)
        say(f"daemon killed: W {'granted' if waiter.granted_count else 'waits'} while H holds; oom={waiter.oom}")
        freed = time.monotonic_ns()
        holder.send("free")
        holder.wait_for(lambda: holder.line_starting("freed"), 10, "freed line")
        report_latency("daemon killed, H frees", freed, waiter)
        state = info_once(run)
        say(f"daemon killed: shared ledger reserved={state['reserved'] // MIB}M waiting={state['waiting']} "
            f"oom={waiter.oom}")
        for client in (holder, waiter):
            client.finish()
        with open(waiter.log.name) as log:
            said = "memory admission goes on in the shared ledger" in log.read()
        say(f"daemon killed: W said it moved to the shared ledger: {'yes' if said else 'no'}")
    finally:
        run.close()


def kill_with_stalled_waiter(options):
    """H frees with PREEMPT_MEM_TEST_HOLD_NS=3 s and is killed inside the ledger's lock, as above; but first a stalled
    waiter (test/mem/stalled_waiter.c) queues on the lock, and then the info client. The kernel's one wake-up at H's
    death goes to the first queued, the stalled waiter, which never takes the lock. No other process waits for memory,
    so none locks afresh: only the info client's own bounded lock waits (mem_segment.c) can bring it the lock."""
    run = Run(options, "stalled-waiter")
    stalled = None
    try:
        info = Info(run)
        holder = Client(run, "H", ["hold", "H", "80M"], extra_env={"PREEMPT_MEM_TEST_HOLD_NS": "3000000000"})
        holder.wait_for(lambda: holder.granted_count, 10, "grant")
        info.query()
        ledgers = glob.glob(f"/dev/shm{run.prefix}-{os.geteuid()}-*")
        if len(ledgers) != 1:
            raise Fatal(f"expected one ledger, found {ledgers}")
        holder.send("free")
        holder.wait_for(lambda: holder.line_starting("freeing"), 10, "freeing line")
        inside = wait_blocked(holder.proc.pid, "nanosleep", 0.5)
        log = open(os.path.join(run.work, "stalled.stderr"), "w")
        stalled = subprocess.Popen([options.stalled_waiter, ledgers[0][len("/dev/shm"):]], stdout=subprocess.PIPE,
                                   stderr=log, env=run.env, text=True)
        first = wait_blocked(stalled.pid, "futex", 0.2)
        with run.cond:
            seen = len(info.lines)
        info.send("")  # its answer waits for the lock, behind the stalled waiter
        second = wait_blocked(info.proc.pid, "futex", 0.2)
        say(f"stalled waiter: H seen sleeping inside the lock: {inside}; queued: stalled waiter {first}, "
            f"then info {second}")
        killed = time.monotonic()
        holder.kill()
        woken = ""
        if select.select([stalled.stdout], [], [], 3)[0]:
            woken = stalled.stdout.readline().strip()
        say(f"stalled waiter: {woken or 'no line (' + str(stalled.poll()) + ')'}")
        deadline = killed + 3
        with run.cond:
            while len(info.lines) <= seen and time.monotonic() < deadline:
                run.cond.wait(deadline - time.monotonic())
            answered = len(info.lines) > seen
        latency = time.monotonic() - killed
        say(f"stalled waiter: the info client got the lock within 1 s of the kill: "
            f"{'yes' if answered and latency < 1 else 'no'}")
        if not answered:
            check("the info client got the lock", False, "still blocked 3 s after the kill")
            return
        state = info.query()
        say(f"stalled waiter: reserved={state['reserved']} waiting={state['waiting']} clients={state['clients']} "
            f"dead_clients={state['dead_clients']} lock_owner_deaths={state['lock_owner_deaths']} "
            f"reinitializations={state['reinitializations']}")
    finally:
        if stalled:
            stalled.kill()
            stalled.wait()
            stalled.stdout.close()
        run.close()


def kill(options):
    if options.daemon:
        cases = [kill_holder, kill_waiter, kill_daemon, kill_slow_driver]
    else:
        cases = [kill_holder, kill_waiter, kill_inside_lock, kill_slow_driver]
        if options.stalled_waiter:
            cases.append(kill_with_stalled_waiter)
    for case in cases:
        try:
            case(options)
        except Fatal as problem:
            say(f"FATAL: {problem}")
            failures.append("fatal")


# ---- chaos: kills at random points, hundreds of times; then no deadlock, no leak, no lost wake-up

def chaos(options):
    rng = random.Random(options.seed)
    count, target, iterations = options.clients, options.kills, options.iterations
    say(f"chaos policy={options.policy} seed={options.seed} clients={count} kills={target} "
        f"iterations={iterations} capacity=100M sizes={options.min_mib}M..{options.max_mib}M")
    run = Run(options, "chaos", policy=options.policy, timeout_ms=60000)
    started = time.monotonic()
    spawned = [0]

    def spawn(slot):
        spawned[0] += 1
        name = f"c{slot}.{spawned[0]}"
        hold_ns = rng.randint(1000000, 3000000)
        env = {"PREEMPT_MEM_TEST_HOLD_NS": str(hold_ns), "PREEMPT_QUIET": "1"}
        if options.policy.startswith("priority"):
            env["PREEMPT_PRIORITY"] = str(rng.choice(priorities()))
        return Client(run, name, ["loop", name, str(iterations), f"{options.min_mib}M", f"{options.max_mib}M",
                                  str(options.max_hold_ms), str(rng.getrandbits(62))],
                      extra_env=env, keep_lines=False)

    sampler_stop = threading.Event()
    samples = {"count": 0, "max_external": 0, "max_waiting": 0}

    def sample(info):
        """The ledger as it goes: memory used outside it must read 0 throughout (the simulated GPU holds nothing
        the ledger does not account for), and requests must be seen waiting."""
        while not sampler_stop.wait(0.01):
            try:
                state = info.query()
            except Fatal:
                return
            samples["count"] += 1
            samples["max_external"] = max(samples["max_external"], state["external"])
            samples["max_waiting"] = max(samples["max_waiting"], state["waiting"])

    try:
        info = Info(run)
        info.query()
        sampler = threading.Thread(target=sample, args=(info,), daemon=True)
        sampler.start()
        clients = [spawn(slot) for slot in range(count)]
        kills = attached_kills = completed = 0
        states = {"starting": 0, "asking": 0, "holding": 0, "between": 0}
        bad_exits = []
        while kills < target:
            time.sleep(rng.uniform(0.001, 0.025))
            for slot, client in enumerate(clients):
                if client.proc.poll() is not None:  # finished its iterations: a fresh one takes its place
                    if client.proc.returncode != 0:
                        bad_exits.append(f"{client.name}: {client.proc.returncode}")
                    completed += 1
                    clients[slot] = spawn(slot)
            slot = rng.randrange(count)
            victim = clients[slot]
            with run.cond:
                last = (victim.last or "").split()
                attached = victim.granted_count > 0
            if victim.proc.poll() is not None:
                continue  # exited meanwhile: replaced above next time
            victim.kill()
            kills += 1
            attached_kills += attached
            kind = last[0] if last else ""
            states[{"want": "asking", "granted": "holding", "freed": "between"}.get(kind, "starting")] += 1
            clients[slot] = spawn(slot)
        kill_seconds = time.monotonic() - started
        say(f"kills: {kills} in {kill_seconds:.1f} s: {states['asking']} asking or waiting, {states['holding']} "
            f"holding, {states['between']} between allocations, {states['starting']} starting; "
            f"{completed} clients finished meanwhile")
        sampler_stop.set()
        sampler.join(10)
        say(f"ledger sampled {samples['count']} times during the kills: external at most {samples['max_external']}, "
            f"waiting at most {samples['max_waiting']}")
        check("kills", kills >= target, f"{kills}")
        check("no memory counted as used outside the ledger", samples["max_external"] == 0,
              f"external reached {samples['max_external']} bytes")
        check("requests waited", samples["max_waiting"] > 0, "no sample saw a waiting request")
        check("some kills while asking or waiting", states["asking"] > 0, f"{states}")
        check("some kills while holding", states["holding"] > 0, f"{states}")
        # No deadlock, no lost wake-up: every survivor finishes its iterations before the deadline.
        deadline = time.monotonic() + options.deadline
        late = []
        for client in clients:
            try:
                client.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                late.append(f"{client.name} ({client.last!r})")
        survivors_ok = all(c.proc.returncode == 0 for c in clients if c.proc.poll() is not None)
        for client in clients:
            client.reader.join(5)
        done = sum(1 for c in clients if c.last and c.last.startswith("done"))
        say(f"survivors: {done} of {count} finished {iterations} iterations, "
            f"{time.monotonic() - started - kill_seconds:.1f} s after the last kill")
        check(f"survivors finish within {options.deadline} s", not late and survivors_ok and done == count,
              f"late: {late}; exits: {[c.proc.returncode for c in clients]}")
        check("clients exit 0", not bad_exits, f"{bad_exits}")
        with run.cond:
            ooms = sum(c.oom for c in run.clients)
            grants = sum(c.granted_count for c in run.clients)
        say(f"allocations granted: {grants}; oom lines: {ooms}")
        check("no oom", ooms == 0, f"{ooms}")
        info.proc.stdin.close()  # the sampler leaves: the last view is a fresh process's, the only client left
        info.wait_exit(10)
        run.wait_detached(clients + [info])
        state = info_once(run)
        gpu = gpu_once(run)
        say(f"ledger: reserved={state['reserved']} waiting={state['waiting']} clients={state['clients']} "
            f"external={state['external']} reinitializations={state['reinitializations']}")
        say(f"ledger: dead_clients={state['dead_clients']} (kills {kills}, of clients seen granted "
            f"{attached_kills}) lock_owner_deaths={state['lock_owner_deaths']} lost_wakeups={state['lost_wakeups']}")
        say(f"gpu: used={gpu['used']} allocations={gpu['allocations']} failures={gpu['failures']}")
        check("dead clients all reclaimed", attached_kills <= state["dead_clients"] <= kills,
              f"{attached_kills} <= {state['dead_clients']} <= {kills}")
        if not run.daemon:  # preemptd keeps its ledger in its own memory: no lock for a client to die in
            check("kills inside the ledger's lock", state["lock_owner_deaths"] > 0,
                  f"lock_owner_deaths={state['lock_owner_deaths']}")
        check("no lost wake-up", state["lost_wakeups"] == 0,
              f"{state['lost_wakeups']} grants were found by a waiter's poll, not by a wake-up")
        check("the simulated GPU never refused an admitted allocation", gpu["failures"] == 0 and gpu["used"] == 0,
              f"{gpu}")
        say(f"chaos took {time.monotonic() - started:.1f} s")
    except Fatal as problem:
        say(f"FATAL: {problem}")
        run.dump_logs()
        failures.append("fatal")
    finally:
        run.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", required=True)
    parser.add_argument("--preload", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--daemon", help="preemptd: keep the ledger there instead of the shared segment")
    parser.add_argument("--nvml", help="a folder with libnvidia-ml.so.1 (the simulated GPU's) for the daemon")
    parser.add_argument("--stalled-waiter", help="test/mem/stalled_waiter, for kill's last case")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("scenario")
    command.add_argument("policy", choices=["fifo", "mmu", "priority-fifo", "priority-mmu"])
    commands.add_parser("control")
    commands.add_parser("apis")
    commands.add_parser("kill")
    command = commands.add_parser("chaos")
    command.add_argument("--seed", type=int, default=20240611)
    command.add_argument("--policy", default="fifo", choices=["fifo", "mmu", "priority-fifo", "priority-mmu"])
    command.add_argument("--clients", type=int, default=6)
    command.add_argument("--kills", type=int, default=300)
    command.add_argument("--iterations", type=int, default=20)
    command.add_argument("--min-mib", type=int, default=20)
    command.add_argument("--max-mib", type=int, default=60)
    command.add_argument("--max-hold-ms", type=int, default=10)
    command.add_argument("--deadline", type=float, default=30)
    options = parser.parse_args()
    options.client = os.path.abspath(options.client)
    options.preload = os.path.abspath(options.preload)
    if options.daemon:
        options.daemon = os.path.abspath(options.daemon)
    if options.nvml:
        options.nvml = os.path.abspath(options.nvml)
    if options.stalled_waiter:
        options.stalled_waiter = os.path.abspath(options.stalled_waiter)
    os.makedirs(options.work, exist_ok=True)
    # lit's timeout (or a user's ^C) ends the driver with a signal: run the cleanups of `finally` on the way out.
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda *_: sys.exit(2))
    {"scenario": scenario, "control": control, "apis": apis, "kill": kill, "chaos": chaos}[options.command](options)
    if failures:
        say(f"FAILED: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
