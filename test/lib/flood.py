# flood.py PORT N: holds N silent TCP connections to 127.0.0.1:PORT (connects and never sends a
# byte), opening a new one whenever the peer closes one, until killed. Writes "flood.ready"
# once the first N are open. Used by the Work Queue flood tests (test/e2e/32-makeflow-wq.sh).
import select
import socket
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])


def connect():
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s


socks = [s for s in (connect() for _ in range(n)) if s]
open("flood.ready", "w").write("%d\n" % len(socks))
while True:
    ready, _, _ = select.select(socks, [], [], 0.2) if socks else ([], [], [])
    for s in ready:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            socks.remove(s)
            s.close()
    time.sleep(0.2)
    while len(socks) < n:
        s = connect()
        if not s:
            break
        socks.append(s)
