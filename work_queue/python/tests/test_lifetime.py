# test_lifetime.py: tasks inside a deleted queue, and no leak over 10,000 submit/wait.
import gc
import os
import tracemalloc

import pytest

import htc.work_queue as wq


def test_delete_queue_with_tasks_out(workers):
    q = wq.WorkQueue(port=0)
    w = workers(q)
    ts = [wq.Task("sleep 30") for _ in range(3)]
    for t in ts:
        q.submit(t)
    # Run until the worker has one (a task on a worker, not only waiting).
    while q.stats.tasks_running < 1:
        q.wait(0.05)
    del q
    gc.collect()
    for t in ts:
        with pytest.raises(wq.WorkQueueError, match="queue was deleted"):
            t.command
    del ts
    gc.collect()
    assert w.wait(60) == 0  # the worker was dismissed and, single-shot, exited


def test_close_then_use():
    q = wq.WorkQueue(port=0)
    t = wq.Task("true")
    q.submit(t)
    q.close()
    with pytest.raises(wq.WorkQueueError, match="not created"):
        q.submit(wq.Task("true"))
    with pytest.raises(wq.WorkQueueError):
        t.specify_tag("x")


def rss_kb():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cycle(q, n):
    for i in range(n):
        t = wq.Task("true")
        t.specify_tag("leak")
        t.specify_buffer(b"x" * 100, "b")
        # Small, explicit resources: a task given the whole worker's disk can meet the
        # worker's "disk full" on its 100-byte input (its own files count against that disk).
        t.specify_cores(1)
        t.specify_memory(10)
        t.specify_disk(10)
        q.submit(t)
        got = q.wait(30)
        assert got is t, f"task {i}: {got} after 30 s; {q.stats}; {q.status('workers')}"
        assert got.return_status == 0, got.output


def test_no_leak_over_10000_submit_wait(workers):
    q = wq.WorkQueue(port=0)
    workers(q)
    cycle(q, 1000)  # warm up: allocator pools, the worker's cache of b
    gc.collect()
    tracemalloc.start()
    base_py = tracemalloc.get_traced_memory()[0]
    base_rss = rss_kb()
    cycle(q, 10000)
    gc.collect()
    grew_py = tracemalloc.get_traced_memory()[0] - base_py
    tracemalloc.stop()
    grew_rss = rss_kb() - base_rss
    # A task leaked per cycle would be >= 10000 * ~1 KB on the C side.
    assert grew_py < 200 * 1024, grew_py
    assert grew_rss < 4096, f"RSS grew by {grew_rss} KB over 10,000 tasks"
    assert q.stats.tasks_done == 11000


def test_a_signal_ends_a_wait_without_timeout():
    import signal
    import threading

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        q = wq.WorkQueue(port=0)
        q.submit(wq.Task("true"))  # no worker: wait() alone would never return
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        with pytest.raises(Stop):
            q.wait()
        assert not q.empty() and q.wait(0) is None  # the queue is still usable
    finally:
        signal.signal(signal.SIGUSR1, old)


def test_other_thread_is_refused_during_wait():
    import threading

    q = wq.WorkQueue(port=0)
    q.submit(wq.Task("true"))
    th = threading.Thread(target=q.wait, args=(1,))
    th.start()
    refused = None
    while refused is None and th.is_alive():
        try:
            q.hungry()
        except wq.WorkQueueError as e:
            refused = e
    th.join()
    assert refused is not None and "in use by another thread" in str(refused)
    assert q.hungry() >= 0
