#!/usr/bin/env python3
# rogue-peer.py: a hostile Work Queue peer for test/e2e/40-hostile.sh. As a rogue worker it
# connects to a master and sends garbage, a wrong hello, an oversized frame, half a frame or
# nonsense after a correct hello; as a rogue master it listens, lets one worker connect and
# sends garbage, an oversized frame, or tasks whose names try to leave the sandbox.
# It prints what the peer answered (one line per frame) and exits 0 when the peer behaved as
# the protocol says (closed the connection, or refused the task), 1 otherwise.
import json
import os
import random
import socket
import struct
import sys

MAGIC = b"\xf5\x71"
WAIT = 60  # seconds any single read may take; the suite's case timeout is the real bound


def frame(obj):
    payload = json.dumps(obj, separators=(",", ":")).encode()
    return MAGIC + bytes([1, 0]) + struct.pack(">II", 0, len(payload)) + payload


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    """Returns (type, xfer, payload), or None at end of stream."""
    h = read_exact(s, 12)
    if h is None:
        return None
    if h[:2] != MAGIC:
        raise ValueError("bad magic %r" % h[:4])
    ftype, _flags = h[2], h[3]
    xfer, length = struct.unpack(">II", h[4:12])
    if length > 8 * 1048576:
        raise ValueError("oversized frame from the peer: %d" % length)
    p = read_exact(s, length)
    if p is None:
        return None
    return ftype, xfer, p


def read_msg(s):
    """The next MSG frame as a dict (DATA frames are skipped), or None at end of stream."""
    while True:
        f = read_frame(s)
        if f is None:
            return None
        if f[0] == 1:
            m = json.loads(f[2])
            print("recv", json.dumps(m)[:300], flush=True)
            return m


def show(data):
    """Prints the frames in DATA (what the peer said before closing), or their size."""
    while len(data) >= 12 and data[:2] == MAGIC:
        length = struct.unpack(">I", data[8:12])[0]
        if data[2] == 1 and len(data) >= 12 + length:
            print("recv", data[12:12 + length].decode(errors="replace")[:300], flush=True)
        data = data[12 + length:]
    if data:
        print("recv %d more bytes" % len(data), flush=True)


def drain_until_closed(s):
    """Reads until the peer closes; True if it did within WAIT seconds."""
    got = b""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                show(got)
                return True
            got += data
    except socket.timeout:
        show(got)
        print("the peer did not close the connection", flush=True)
        return False
    except ConnectionResetError:
        show(got)
        return True


WORKER_HELLO = {
    "m": "hello", "proto": [1, 0], "role": "worker", "software": "rogue 0",
    "worker_id": "0123456789abcdef0123456789abcdef", "host": "rogue", "caps": [], "auth": [],
}
MASTER_HELLO = {
    "m": "hello", "proto": [1, 0], "role": "master", "software": "rogue 0",
    "master_id": "fedcba9876543210fedcba9876543210", "project": None, "caps": [],
    "auth": "none", "keepalive": {"interval": 30, "timeout": 120},
}


def rogue_worker(port, mode):
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    if mode == "garbage":
        rnd = random.Random(16)
        s.sendall(bytes(rnd.randrange(256) for _ in range(4096)))
    elif mode == "badhello":
        bad = dict(WORKER_HELLO, role="master", worker_id="not hex")
        s.sendall(frame(bad))
    elif mode == "oldproto":
        s.sendall(frame(dict(WORKER_HELLO, proto=[7, 3])))
    elif mode == "oversize":
        s.sendall(MAGIC + bytes([1, 0]) + struct.pack(">II", 0, 0xFFFFFFF0))
    elif mode == "half":
        s.sendall(MAGIC + bytes([1, 0]) + struct.pack(">II", 0, 200) + b'{"m":"hel')
        s.close()
        return 0
    elif mode == "nonsense":
        s.sendall(frame(WORKER_HELLO))
        m = read_msg(s)
        if not m or m.get("m") != "hello":
            print("expected the master's hello", flush=True)
            return 1
        s.sendall(frame({"m": "frobnicate", "x": [1, 2, 3]}))
    else:
        raise SystemExit("unknown mode " + mode)
    return 0 if drain_until_closed(s) else 1


def task(tid, command, inputs=(), outputs=()):
    return {
        "m": "task", "id": tid, "try": 1, "command": command, "category": "rogue",
        "resources": {"cores": 1, "memory": 16, "disk": 1, "gpus": 0},
        "inputs": list(inputs), "outputs": list(outputs),
    }


def escape_tasks(s):
    """Sends tasks whose names leave the sandbox; every one must be refused or its link
    reported missing. Returns 0 when all were."""
    bad_inputs = ["../x", "/etc/passwd", "a/../../x", "./../x"]
    tid = 0
    expect = {}
    for name in bad_inputs:
        tid += 1
        s.sendall(frame(task(tid, "cat x", inputs=[{"name": name, "from": "task", "dir": False}])))
        expect[tid] = "bad_name"
    tid += 1
    s.sendall(frame(task(tid, "true", outputs=[{"name": "../../escaped", "when": "always"}])))
    expect[tid] = "bad_name"
    tid += 1
    # A task that links its output to a file outside: the worker must never read the target.
    s.sendall(frame(task(tid, "ln -s /etc/hostname out",
                         outputs=[{"name": "out", "when": "always", "dir": False}])))
    expect[tid] = "link"
    tid += 1
    # ... and one that reaches outside through a linked directory on the output's path.
    s.sendall(frame(task(tid, "ln -s /etc d",
                         outputs=[{"name": "d/hostname", "when": "always", "dir": False}])))
    expect[tid] = "missing"
    ok = True
    while expect:
        m = read_msg(s)
        if m is None:
            print("the worker closed the connection with tasks unanswered", flush=True)
            return 1
        kind = m.get("m")
        if kind == "xfer_begin":
            print("the worker sent a file back:", json.dumps(m), flush=True)
            ok = False
        elif kind == "task_refused":
            want = expect.pop(m["id"], None)
            if want != "bad_name" or m.get("code") != "bad_name":
                ok = False
        elif kind == "task_done":
            want = expect.pop(m["id"], None)
            outs = m.get("outputs", [])
            missing = outs[0].get("missing", "") if outs else ""
            if want == "link" and "symbolic link" not in missing:
                ok = False
            if want not in ("link", "missing") or not missing:
                ok = False
    return 0 if ok else 1


def rogue_master(portfile, mode):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    ls.settimeout(WAIT)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, portfile)
    s, _ = ls.accept()
    s.settimeout(WAIT)
    hello = read_msg(s)
    if not hello or hello.get("m") != "hello":
        print("expected the worker's hello", flush=True)
        return 1
    if mode == "garbage":
        rnd = random.Random(61)
        s.sendall(bytes(rnd.randrange(256) for _ in range(4096)))
    elif mode == "oversize":
        s.sendall(MAGIC + bytes([1, 0]) + struct.pack(">II", 0, 0xFFFFFFF0))
    elif mode == "nonsense":
        s.sendall(frame(MASTER_HELLO))
        s.sendall(frame({"m": "frobnicate"}))
    elif mode == "escape":
        s.sendall(frame(MASTER_HELLO))
        while True:  # identity, capacity, then cache_have batches up to last
            m = read_msg(s)
            if m is None:
                return 1
            if m.get("m") == "cache_have" and m.get("last"):
                break
        rc = escape_tasks(s)
        s.sendall(frame({"m": "shutdown"}))
        drain_until_closed(s)
        return rc
    else:
        raise SystemExit("unknown mode " + mode)
    return 0 if drain_until_closed(s) else 1


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("worker", "master"):
        raise SystemExit("usage: rogue-peer.py worker PORT MODE | master PORTFILE MODE")
    if sys.argv[1] == "worker":
        return rogue_worker(int(sys.argv[2]), sys.argv[3])
    return rogue_master(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    sys.exit(main())
