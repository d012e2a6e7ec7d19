# test_tasks.py: tasks with files and buffers, exit codes, timeouts, empty/hungry, stats,
# categories and resources, against a real worker on loopback.
import os

import pytest

import htc.work_queue as wq
from conftest import wait_until


def run_all(q, n):
    """Waits for N tasks (the queue has them all) and returns them by id."""
    done = {}
    while len(done) < n:
        t = q.wait(30)
        assert t is not None, "a task did not come back within 30 s"
        done[t.id] = t
    return done


def test_files_and_buffers(tmp_path, workers):
    src = tmp_path / "in.txt"
    src.write_text("from a file\n")
    out = tmp_path / "out.txt"
    q = wq.WorkQueue(port=0)
    workers(q)
    t = wq.Task("cat in.txt buf.txt > out.txt; echo on-stdout")
    t.specify_input_file(str(src), "in.txt")
    t.specify_buffer(b"from a buffer\n", "buf.txt")
    t.specify_output_file(str(out), "out.txt", cache=False)
    t.specify_tag("files")
    tid = q.submit(t)
    assert tid >= 1 and t.id == tid
    back = q.wait(30)
    assert back is t
    assert t.result == wq.WORK_QUEUE_RESULT_SUCCESS and t.result_str == "SUCCESS"
    assert t.return_status == 0
    assert t.output == "on-stdout\n"
    assert t.tag == "files"
    assert out.read_text() == "from a file\nfrom a buffer\n"
    assert t.host and t.hostname
    assert t.time_when_done >= t.time_when_submitted > 0
    assert q.empty()


def test_failing_command_exit_code(workers):
    q = wq.WorkQueue(port=0)
    workers(q)
    t = wq.Task("echo failing >&2; exit 7")
    q.submit(t)
    t = q.wait(30)
    assert t.result == wq.WORK_QUEUE_RESULT_SUCCESS
    assert t.return_status == 7
    assert t.output == "failing\n"


def test_missing_output_is_a_result(tmp_path, workers):
    q = wq.WorkQueue(port=0)
    workers(q)
    t = wq.Task("true")
    t.specify_output_file(str(tmp_path / "never"), "never")
    q.submit(t)
    t = q.wait(30)
    assert t.result == wq.WORK_QUEUE_RESULT_OUTPUT_MISSING


def test_wait_timeouts_and_empty():
    q = wq.WorkQueue(port=0)
    assert q.empty()
    assert q.wait() is None  # WAITFORTASK on an empty queue returns at once
    assert q.wait(0) is None
    q.submit(wq.Task("true"))
    assert not q.empty()
    # No worker: nothing can finish, both timeouts end with None.
    assert q.wait(0) is None
    assert q.wait(0.2) is None
    assert q.stats.tasks_waiting == 1


def test_hungry_and_stats(workers):
    q = wq.WorkQueue(port=0)
    assert q.hungry() > 0
    before = q.hungry()
    for _ in range(before):
        q.submit(wq.Task("true"))
    assert q.hungry() < before
    s = q.stats
    assert s.tasks_submitted == before and s.tasks_waiting == before and s.tasks_done == 0
    workers(q, cores=2)
    done = run_all(q, before)
    assert all(t.return_status == 0 for t in done.values())
    s = q.stats
    assert s.tasks_done == before and s.tasks_waiting == 0 and s.tasks_dispatched >= before
    assert s.workers_connected == 1 and s.workers_joined == 1 and s.total_cores == 2
    assert q.empty()


def test_categories_and_resources(workers):
    q = wq.WorkQueue(port=0)
    q.specify_category_max_resources("big", {"cores": 2, "memory": 500})
    q.specify_category_mode("big", wq.WORK_QUEUE_ALLOCATION_MODE_MAX)
    q.specify_category_max_concurrent("small", 1)
    a = wq.Task("true")
    a.specify_category("big")
    b = wq.Task("true")
    b.specify_category("small")
    b.specify_cores(1)
    b.specify_memory(100)
    b.specify_disk(50)
    b.specify_memory_max(300)
    with pytest.raises(wq.WorkQueueError):
        b.specify_memory_max(-5)
    q.submit(a)
    q.submit(b)
    cats = {c["name"]: c for c in q.status("categories")}
    assert cats["big"]["mode"] == "max" and cats["big"]["waiting"] == 1
    assert cats["small"]["mode"] == "fixed" and cats["small"]["waiting"] == 1
    workers(q, cores=2, memory=1000, disk=1000)
    done = run_all(q, 2)
    a, b = done[a.id], done[b.id]
    assert a.category == "big" and b.category == "small"
    # MAX mode without measurements: the category's maximum is the allocation.
    assert a.resources_allocated.cores == 2 and a.resources_allocated.memory == 500
    assert b.resources_requested.cores == 1 and b.resources_requested.memory == 100
    assert b.resources_allocated.cores == 1 and b.resources_allocated.disk == 50
    # the workers grow nothing here (no --memory-grow), and keep no shared store
    assert a.memory_grown == -1 and a.memory_grow_steps == 0 and b.memory_grown == -1
    assert a.cores_grown == -1 and b.cores_grown == -1
    assert a.memory_held_avg == -1 and b.memory_held_avg == -1
    assert a.cores_held_avg == -1 and b.cores_held_avg == -1
    # at the category's maximum, and at declared values: neither is a computed allocation
    assert a.allocation_computed is False and b.allocation_computed is False
    assert q.stats.objects_taken == 0


def test_warmup_allocation_computed(workers):
    """WARMUP: the first task is measured at the ceiling; the next ones are sized from it."""
    q = wq.WorkQueue(port=0)
    q.specify_category_mode("w", wq.WORK_QUEUE_ALLOCATION_MODE_WARMUP)
    q.specify_category_max_resources("w", {"memory": 800})
    ids = []
    for _ in range(3):
        t = wq.Task("true")
        t.specify_category("w")
        t.specify_cores(1)
        ids.append(q.submit(t))
    workers(q, cores=1, memory=1000)
    done = run_all(q, 3)
    first, rest = done[ids[0]], [done[i] for i in ids[1:]]
    # measured alone at the category's ceiling, then the estimate (well below it)
    assert first.resources_allocated.memory == 800 and first.allocation_computed is False
    for t in rest:
        assert t.allocation_computed is True, t.resources_allocated
        assert 0 < t.resources_allocated.memory < 800


def test_category_errors_carry_the_message():
    q = wq.WorkQueue(port=0)
    with pytest.raises(wq.WorkQueueError) as e:
        q.specify_category_mode("c", 99)
    assert "specify_category_mode: c: mode 99" in str(e.value) and e.value.code < 0
    with pytest.raises(wq.WorkQueueError, match="unknown resource 'bogus'"):
        q.specify_category_max_resources("c", {"bogus": 1})
    with pytest.raises(wq.WorkQueueError, match="unknown document 'nope'"):
        q.status("nope")


def test_wait_for_tag_and_cancel(workers):
    q = wq.WorkQueue(port=0)
    ts = []
    for tag in ("a", "b", "c"):
        t = wq.Task("true")
        t.specify_tag(tag)
        q.submit(t)
        ts.append(t)
    got = q.cancel_by_taskid(ts[2].id)
    assert got is ts[2]
    assert q.cancel_by_taskid(12345) is None
    workers(q)
    t = q.wait_for_tag("b", 30)
    assert t is ts[1]
    t = q.wait(30)
    assert t is ts[0]
    assert q.empty()


def test_environment_and_clone(workers):
    q = wq.WorkQueue(port=0)
    workers(q)
    t = wq.Task('echo "$GREETING"')
    t.specify_environment_variable("GREETING", "hello there")
    c = t.clone()
    q.submit(t)
    q.submit(c)
    done = run_all(q, 2)
    assert [d.output for d in done.values()] == ["hello there\n"] * 2


def test_name_transactions_log_and_shutdown(tmp_path, workers):
    log = tmp_path / "tx.log"
    q = wq.WorkQueue(port=0, name="pyproject", transactions_log=str(log), shutdown=True)
    assert q.status("master")[0]["project"] == "pyproject"
    w = workers(q)
    q.submit(wq.Task("true"))
    assert q.wait(30).return_status == 0
    q.close()
    assert w.wait(60) == 0  # told to shut down, it exits
    assert log.stat().st_size > 0
    assert "TASK 1" in log.read_text()
