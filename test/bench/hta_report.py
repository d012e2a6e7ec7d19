#!/usr/bin/env python3
# hta_report.py: the figures of one run of test/bench/hta.sh. From the factory's debug log (one
# "pool t=..." line per cycle, wall-clock stamped) and the master's transactions log (TASK ID
# WAITING / RUNNING {resources} / DONE, microseconds since the epoch) it computes the makespan,
# the accumulated waste (core-s the factory's workers offered from their request, minus core-s
# allocated to tasks) and shortage (core-s of tasks waiting to be dispatched), the mean preparing
# latency the factory measured (request -> worker connected), prints one line,
# and writes plot.svg: pool size (workers), waiting and running tasks over time.
# Usage: hta_report.py DIR TRACE POLICY DELAY WORKER_CORES
import datetime
import json
import os
import re
import sys

d, trace, policy, delay, wcores = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])

# the master's record: per task, submission, dispatches and the end, with allocated cores
tasks = {}
first = last = None
with open(os.path.join(d, "txlog")) as f:
    for line in f:
        if line.startswith("#"):
            continue
        w = line.split()
        if len(w) < 5 or w[2] != "TASK":
            continue
        t = int(w[0]) / 1e6
        tid, state = w[3], w[4]
        rec = tasks.setdefault(tid, {"waiting": [], "running": [], "done": None, "cores": 1.0})
        if state == "WAITING":
            rec["waiting"].append(t)
        elif state == "RUNNING":
            rec["running"].append(t)
            m = re.search(r"\{.*\}", line)
            if m:
                rec["cores"] = float(json.loads(m.group(0)).get("cores", 1))
        elif state == "DONE":
            rec["done"] = t
        first = t if first is None else min(first, t)
        last = t if last is None else max(last, t)

# the factory's record: pool size per cycle, wall clock from the log line's stamp
pool = []
stamp = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) .* pool t=\S+ size=(\d+) "
                   r"pending=(\d+) draining=(\d+) connected=(\d+) waiting=(\d+) running=(\d+)")
with open(os.path.join(d, "factory.log")) as f:
    for line in f:
        m = stamp.match(line)
        if not m:
            continue
        ts = datetime.datetime.strptime(m.group(1), "%Y/%m/%d %H:%M:%S.%f")
        t = ts.replace(tzinfo=datetime.timezone.utc).timestamp()
        pool.append((t, int(m.group(2)), int(m.group(6)), int(m.group(7))))

# the preparing latency the factory measured for each worker: request -> connected
lat = []
conn = re.compile(r" connected as \S+ after ([0-9.]+) s \(estimate")
with open(os.path.join(d, "factory.log")) as f:
    for line in f:
        m = conn.search(line)
        if m:
            lat.append(float(m.group(1)))
latency = f"{sum(lat) / len(lat):7.1f}s" if lat else "     n/a"

if first is None or not pool:
    print(f"{trace:8} {policy:10} {delay:>6} no record (see {d})")
    sys.exit(0)
# the local time zone of the log's stamps: align on the txlog (both are wall clocks)
off = 0.0
lt = datetime.datetime.now().astimezone().utcoffset()
if lt:
    off = -lt.total_seconds()
pool = [(t + off, s, wt, r) for (t, s, wt, r) in pool]
end = last
makespan = end - first

offered = 0.0
for i, (t, size, _, _) in enumerate(pool):
    t1 = pool[i + 1][0] if i + 1 < len(pool) else end
    a, b = max(t, first), min(t1, end)
    if b > a:
        offered += size * wcores * (b - a)
allocated = 0.0
shortage = 0.0
for rec in tasks.values():
    runs = rec["running"]
    waits = rec["waiting"]
    ends = runs[1:] + [rec["done"] or end]
    for s, e in zip(runs, ends):
        allocated += rec["cores"] * (e - s)
    for k, wt in enumerate(waits):
        disp = runs[k] if k < len(runs) else end
        shortage += rec["cores"] * max(0.0, disp - wt)
waste = offered - allocated
maxpool = max(s for (_, s, _, _) in pool)
print(f"{trace:8} {policy:10} {delay:>6} {makespan:8.1f}s {waste:11.0f} {shortage:13.0f} {latency} {maxpool:4d}")

# plot.svg: three lines over time
W, H, L, B = 640, 300, 50, 30
tmax = max(makespan, 1.0)
ymax = max([1] + [max(s, wt, r) for (_, s, wt, r) in pool])


def xy(t, v):
    return L + (t - first) / tmax * (W - L - 10), H - B - v / ymax * (H - B - 20)


def line(idx, color):
    pts = []
    for (t, *vals) in pool:
        if first <= t <= end:
            x, y = xy(t, vals[idx])
            pts.append(f"{x:.1f},{y:.1f}")
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(pts)}"/>'


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{L}" y="14">{trace}, {policy}, start delay {delay} s: makespan {makespan:.0f} s, waste {waste:.0f} core-s, shortage {shortage:.0f} core-s</text>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - 10}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{L}" y="{H - 8}">0 s</text><text x="{W - 60}" y="{H - 8}">{tmax:.0f} s</text>',
       f'<text x="4" y="24">{ymax}</text><text x="4" y="{H - B}">0</text>',
       line(0, "#1f77b4"), line(1, "#d62728"), line(2, "#2ca02c"),
       f'<text x="{W - 200}" y="34" fill="#1f77b4">pool (workers)</text>',
       f'<text x="{W - 200}" y="48" fill="#d62728">tasks waiting</text>',
       f'<text x="{W - 200}" y="62" fill="#2ca02c">tasks running</text>',
       '</svg>']
with open(os.path.join(d, "plot.svg"), "w") as f:
    f.write("\n".join(svg) + "\n")
