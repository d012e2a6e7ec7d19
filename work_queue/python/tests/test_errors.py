# test_errors.py: bad input raises WorkQueueError with the C library's message and code.
import errno
import socket

import pytest

import htc.work_queue as wq

HTC_ERANGE = -10002
HTC_EPARSE = -10001


def test_negative_core_count():
    t = wq.Task("true")
    with pytest.raises(wq.WorkQueueError) as e:
        t.specify_cores(-1)
    assert str(e.value) == "specify_cores: cores must be a number >= 0 (got -1)"
    assert e.value.code == HTC_ERANGE


def test_bad_remote_name_and_flags():
    t = wq.Task("true")
    with pytest.raises(wq.WorkQueueError) as e:
        t.specify_input_file("/etc/hostname", "../escape")
    assert e.value.code == HTC_EPARSE and "../escape" in str(e.value)
    with pytest.raises(wq.WorkQueueError) as e:
        t.specify_output_file("x", "x", cache=True)
    assert e.value.code == -errno.EINVAL and str(e.value).startswith("specify_output_file: ")
    with pytest.raises(wq.WorkQueueError):
        t.specify_input_file("a", "a", flags=wq.WORK_QUEUE_WATCH)
    with pytest.raises(TypeError):
        t.specify_cores("two")


def test_missing_input_file(tmp_path):
    q = wq.WorkQueue(port=0)
    t = wq.Task("cat nothere")
    t.specify_input_file(str(tmp_path / "nothere"), "nothere")
    with pytest.raises(wq.WorkQueueError) as e:
        q.submit(t)
    assert e.value.code == -errno.ENOENT
    # The library's own line, naming the file.
    assert str(e.value).startswith(f"submit: task 'cat nothere': wq: input {tmp_path / 'nothere'}: ")
    assert "No such file or directory" in str(e.value)
    # Refused, so still the caller's: it can be fixed and submitted.
    (tmp_path / "nothere").write_text("now here\n")
    assert q.submit(t) >= 1


def test_task_without_command():
    q = wq.WorkQueue(port=0)
    with pytest.raises(wq.WorkQueueError) as e:
        q.submit(wq.Task())
    assert e.value.code == -errno.EINVAL


def test_port_in_use():
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        with pytest.raises(wq.WorkQueueError) as e:
            wq.WorkQueue(port=port)
        assert e.value.code == -errno.EADDRINUSE
        assert str(e.value).startswith(f"WorkQueue: wq: cannot listen on port {port}: address already in use")
    finally:
        s.close()


def test_missing_password_and_certificate(tmp_path):
    with pytest.raises(wq.WorkQueueError) as e:
        wq.WorkQueue(port=0, password_file=str(tmp_path / "nopw"))
    assert e.value.code == -errno.ENOENT
    assert str(e.value).startswith(f"WorkQueue: wq: password file {tmp_path / 'nopw'}: No such file")
    with pytest.raises(wq.WorkQueueError) as e:
        wq.WorkQueue(port=0, ssl=(str(tmp_path / "k.pem"), str(tmp_path / "c.pem")))
    assert e.value.code < 0
    with pytest.raises(TypeError):
        wq.WorkQueue(port=0, ssl=True)
    with pytest.raises(TypeError):
        wq.WorkQueue(port=0, stats_log="x")  # not bound: refused, not ignored


def test_submitted_task_belongs_to_the_queue():
    q = wq.WorkQueue(port=0)
    t = wq.Task("true")
    q.submit(t)
    with pytest.raises(wq.WorkQueueError, match="belongs to the queue"):
        t.specify_cores(1)
    with pytest.raises(wq.WorkQueueError, match="belongs to the queue"):
        q.submit(t)
    assert t.command == "true"  # reading is fine


def test_subclass_without_init():
    class Half(wq.Task):
        def __init__(self):
            pass

    with pytest.raises(wq.WorkQueueError, match="__init__ was not called"):
        Half().specify_cores(1)
    with pytest.raises(wq.WorkQueueError, match="__init__ was not called"):
        wq.WorkQueue(port=0).submit(Half())
