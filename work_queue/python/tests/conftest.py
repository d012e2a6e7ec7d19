# conftest.py: real work_queue_worker processes for the tests. HTC_BIN names the directory of
# the build's programs (default: ../../../build/bin from here).
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("HTC_BIN") or os.path.normpath(os.path.join(HERE, "..", "..", "..", "build", "bin"))
WORKER = os.path.join(BIN, "work_queue_worker")


def wait_until(q, cond, what, limit=60.0):
    """Runs the queue (wait(0.05): the master only works inside wait) until cond() holds.
    Tasks returned meanwhile are collected in the returned list. Fails after LIMIT seconds,
    a guard against a hang, not a pace."""
    import time

    got = []
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        t = q.wait(0.05)
        if t is not None:
            got.append(t)
    return got


@pytest.fixture
def workers(tmp_path):
    """start(q, *args): a worker connected to q's port, killed at the end of the test."""
    procs = []

    def start(q, *args, cores=1, memory=1000, disk=1000, name="w"):
        wd = tmp_path / f"{name}{len(procs)}"
        log = open(tmp_path / f"{name}{len(procs)}.log", "w")
        p = subprocess.Popen(
            [WORKER, "-s", str(wd), "-t", "60", "--single-shot", "--cores", str(cores),
             "--memory", str(memory), "--disk", str(disk), *args, "127.0.0.1", str(q.port)],
            stdout=log, stderr=subprocess.STDOUT)
        procs.append((p, log))
        return p

    yield start
    for p, log in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        log.close()
