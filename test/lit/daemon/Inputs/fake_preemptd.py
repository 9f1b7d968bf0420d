# fake_preemptd.py: a stand-in preemptd for preemptctl's tests: answers one request in a chosen way (a LISTING, a
# STATUS, silence, garbage...) and prints what it received and what preemptctl printed and returned.
# Layouts are lib/include/preempt/daemon_protocol.h's, little-endian, packed by hand here to test the C side independently.
#
# Usage: fake_preemptd.py MODE [--check-json] -- PREEMPTCTL ARGS...   ("{socket}" in ARGS becomes the socket's path)
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAGIC, VERSION = 0x544D5250, 6
LIST, SET_POLICY, STATUS, LISTING = 10, 11, 22, 23
TYPE_NAMES = {1: "REGISTER", 2: "SET_PRIORITY", 10: "LIST", 11: "SET_POLICY"}


def header(kind, length, request_id, magic=MAGIC, version=VERSION):
    return struct.pack("<IHHII", magic, version, kind, length, request_id)


def status(code, message, request_id):
    body = struct.pack("<iI160s", code, 0, message.encode())
    return header(STATUS, 16 + len(body), request_id) + body


def kernel(client_id, stub, gpu, state, priority, evictions, weight, waited_us, ran_us, predicted_us, name, quota=0):
    # Version 4's entry: weight (granted, 1..64) and the CTA quota (0..64, version 2's reserved word) between evictions
    # and the times; 104 bytes.
    return struct.pack("<IIIIiIIIddd48s", client_id, stub, gpu, state, priority, evictions, weight, quota, waited_us,
                       ran_us, predicted_us, name)


def listing(request_id, bad_weight=None, sharing=1):
    gpus = [
        struct.pack("<16sIIQQ16s", bytes(range(16)), 132, 2, 1234, 7, b"hpf"),
        struct.pack("<16sIIQQ16s", bytes([0xAB] * 16), 108, 1, 0, 0, b"ffs"),
    ]
    clients = [
        # Version 5: the lease word (bit i: the client's GPU i) in version 4's reserved word.
        # Version 6: the Slurm job and step (0xfffffffb: Slurm's batch step) after the program.
        struct.pack("<IIIiiIQQ32sII", 1, 4242, 1000, -3, 0, 1, 17, 2, b"train\n\x1b[31mred\"q\\", 42, 0xFFFFFFFB),
        struct.pack("<IIIiiIQQ32sII", 2, 4343, 0, 20, 20, 0, 5, 0, "caf\u00e9".encode() + b"\xff", 0, 0),
    ]
    kernels = [
        kernel(1, 0, 0, 4, -3, 2, 1, 1500.0, 20000.25, 30000.0, b"_Z6matmulPKfS0_Pfi", quota=3),
        kernel(1, 1, 0, 2, -3, 0, 1, 250.5, 0.0, 1e6, b"reduce"),
        # The last kernel's weight is the one a bad-weight mode breaks: the listing is otherwise valid.
        kernel(2, 0, 1, 5, 20, 1, 64 if bad_weight is None else bad_weight, 0.0, 3.5, 4.0, b"tab\there"),
    ]
    parts = b"".join(gpus + clients + kernels)
    # Version 5: how the GPUs are shared (1 time-slicing, 2 MPS) in version 4's reserved word.
    fixed = struct.pack("<IIIIQ", len(gpus), len(clients), len(kernels), sharing, 5_250_000)
    return header(LISTING, 40 + len(parts), request_id) + fixed + parts


def describe(request):
    if len(request) < 16:
        return f"request of {len(request)} bytes"
    magic, version, kind, length, request_id = struct.unpack_from("<IHHII", request)
    text = (f"request {TYPE_NAMES.get(kind, kind)} magic={'ok' if magic == MAGIC else hex(magic)} version={version} "
            f"length={length}/{len(request)} id={request_id}")
    if kind == SET_POLICY and len(request) == 48:
        uuid, policy = struct.unpack_from("<16s16s", request, 16)
        name = policy.split(b"\0")[0]
        zero_padded = policy[len(name):] == bytes(16 - len(name))
        text += f" uuid={uuid.hex()} policy={name.decode()} zero-padded={zero_padded}"
    return text


def reply_for(mode, request):
    request_id = struct.unpack_from("<I", request, 12)[0] if len(request) >= 16 else 0
    if mode == "listing":
        return listing(request_id)
    if mode == "mps-listing":
        return listing(request_id, sharing=2)
    if mode == "bad-sharing":  # 0: what a version 4 daemon sent
        return listing(request_id, sharing=0)
    if mode.startswith("bad-weight-"):  # bad-weight-0, bad-weight-65: a weight no daemon grants
        return listing(request_id, bad_weight=int(mode[len("bad-weight-"):]))
    if mode == "empty-listing":
        return header(LISTING, 40, request_id) + struct.pack("<IIIIQ", 0, 0, 0, 1, 0)
    if mode == "ok":
        return status(0, "policy hpf on 2 GPUs", request_id)
    if mode == "refused":
        return status(3, "switching policies needs root or preemptd's user", request_id)
    if mode == "refused-silently":
        return status(4, "", request_id)
    if mode == "garbage":
        return b"\x00" * 16
    if mode == "bad-version":
        return header(STATUS, 184, request_id, version=VERSION + 1) + bytes(168)
    if mode == "wrong-id":
        return status(0, "ok", request_id + 1)
    if mode == "huge":
        return b"\x00" * 70000
    return None  # "silent", "close"


def serve(server, mode, received):
    connection, _ = server.accept()
    with connection:
        received.append(connection.recv(1 << 17))
        reply = reply_for(mode, received[0])
        if reply is not None:
            connection.send(reply)
        elif mode == "silent":
            time.sleep(4)  # longer than preemptctl's 2 s timeout


def main():
    mode, rest = sys.argv[1], sys.argv[2:]
    check_json = "--check-json" in rest[: rest.index("--")]
    command = rest[rest.index("--") + 1:]
    # Under /tmp, not the test's own directory: a Unix socket path must fit 108 bytes.
    directory = tempfile.mkdtemp(prefix="preemptd-fake.", dir="/tmp")
    path = os.path.join(directory, "s")
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server.bind(path)
        server.listen(1)
        server.settimeout(20)
        received = []
        thread = threading.Thread(target=serve, args=(server, mode, received), daemon=True)
        thread.start()
        start = time.monotonic()
        result = subprocess.run([arg.replace("{socket}", path) for arg in command], capture_output=True, timeout=20)
        elapsed = time.monotonic() - start
        thread.join(10)
        for request in received:
            print(describe(request))
        print("--- stdout")
        sys.stdout.write(result.stdout.decode("utf-8", "backslashreplace").replace(path, "SOCKET"))
        print("--- stderr")
        sys.stdout.write(result.stderr.decode("utf-8", "backslashreplace").replace(path, "SOCKET"))
        print(f"--- exit {result.returncode}")
        print("--- answered in time" if elapsed < 5 else f"--- took {elapsed:.1f} s")
        if check_json:
            value = json.loads(result.stdout)  # raises, and the test fails, on invalid JSON
            print("--- json " + json.dumps(value, sort_keys=True, ensure_ascii=True))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
