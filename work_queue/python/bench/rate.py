"""rate.py PORTFILE N SECONDS: the `rate` loop of work_queue/test/helper_master_bench.c in
Python over htc.work_queue: keep N*12+1000 null tasks (true; 1 core, 10 MB, 10 MB) queued, wait
for N workers, then count completions for SECONDS; prints the same JSON line."""
import json
import resource
import sys
import time

import htc.work_queue as wq


def null_task():
    t = wq.Task("true")
    t.specify_cores(1)
    t.specify_memory(10)
    t.specify_disk(10)
    return t


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    portfile, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    q = wq.WorkQueue(port=0)
    with open(portfile, "w") as f:
        f.write(f"{q.port}\n")
    for _ in range(n * 4 * 3 + 1000):
        q.submit(null_task())
    end_wait = time.monotonic() + 120
    while q.stats.workers_connected < n and time.monotonic() < end_wait:
        if q.wait(0.05) is not None:
            q.submit(null_task())
    done = 0
    t0 = time.monotonic()
    end, c0 = t0 + seconds, cpu_s()
    while time.monotonic() < end:
        if q.wait(0.05) is not None:
            done += 1
            q.submit(null_task())
    el, cpu = time.monotonic() - t0, cpu_s() - c0
    print(json.dumps({"workers": q.stats.workers_connected, "seconds": round(el, 2),
                      "done": done, "tasks_per_s": round(done / el),
                      "cpu_us_per_task": round(cpu * 1e6 / done, 1) if done else 0.0}))
    sys.stdout.flush()
    q.close()


if __name__ == "__main__":
    main()
