# test_auth.py: password and TLS options against real workers.
import shutil
import subprocess

import pytest

import htc.work_queue as wq


def test_right_password(tmp_path, workers):
    pw = tmp_path / "pw"
    pw.write_text("sesame\n")
    q = wq.WorkQueue(port=0, password_file=str(pw))
    workers(q, "-P", str(pw))
    q.submit(wq.Task("echo in"))
    t = q.wait(30)
    assert t is not None and t.output == "in\n"


def test_wrong_password(tmp_path, workers):
    pw = tmp_path / "pw"
    pw.write_text("sesame\n")
    bad = tmp_path / "bad"
    bad.write_text("open\n")
    q = wq.WorkQueue(port=0)
    q.specify_password_file(str(pw))
    w = workers(q, "-P", str(bad))
    q.submit(wq.Task("echo in"))
    while w.poll() is None:  # the master answers only inside wait()
        assert q.wait(0.05) is None
    assert w.returncode != 0
    s = q.stats
    assert s.workers_connected == 0 and s.tasks_done == 0 and s.tasks_waiting == 1
    w2 = workers(q)  # no password at all: refused too
    while w2.poll() is None:
        assert q.wait(0.05) is None
    assert w2.returncode != 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls(tmp_path, workers):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    q = wq.WorkQueue(port=0, ssl=(str(key), str(cert)))
    workers(q, "--ssl-ca", str(cert))
    q.submit(wq.Task("echo secure"))
    t = q.wait(30)
    assert t is not None and t.output == "secure\n"
    plain = workers(q)  # a plain worker cannot talk to a TLS master
    while plain.poll() is None:
        q.wait(0.05)
    assert plain.returncode != 0
    assert q.stats.workers_connected == 1
