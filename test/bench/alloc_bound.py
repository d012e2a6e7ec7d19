#!/usr/bin/env python3
# alloc_bound.py: how much of its allocated core-time a rule of alloc.sh's workflow could use
# under an allocation that follows its CPU use, from the time series resource_monitor wrote
# (--with-time-series, a short interval) for rules run one at a time. For a window P it prints,
# per category and over all rules, the CPU time used over the core-time allocated by:
#   follow   each window allocated what the rule used in the window before (at least FLOOR
#            cores; the first window what it uses), every use above that lent at once and
#            counted as allocated: the quickest an allocation can follow use without knowing
#            the future, with lending that costs nothing;
#   fixed    one allocation for the rule's whole life, the category's mean use, with the
#            same free lending above it.
# Usage: alloc_bound.py FLOOR WINDOW_S... -- SERIES... (category: the file name's first letter,
# c, m or w, as alloc.sh names the rules)
import os
import sys

args = sys.argv[1:]
cut = args.index("--")
floor = float(args[0])
windows = [float(w) for w in args[1:cut]]
files = args[cut + 1:]
names = {"c": "cpu", "m": "mem", "w": "io"}


def series(path):
    """(seconds since the first sample, CPU seconds) rows; the rule starts at (0, 0)."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            p = line.split()
            try:
                rows.append((int(p[0]) / 1e6, float(p[1])))
            except (IndexError, ValueError):
                sys.exit("alloc_bound: %s: not a resource_monitor time series: %r" % (path, line))
    if len(rows) < 2:
        return []
    step = rows[1][0] - rows[0][0]
    t0 = rows[0][0] - step
    return [(0.0, 0.0)] + [(t - t0, c) for t, c in rows]


def cpu_at(rows, t):
    """CPU seconds at time t, linear between samples."""
    for (ta, ca), (tb, cb) in zip(rows, rows[1:]):
        if tb >= t:
            return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb
    return rows[-1][1]


def uses(rows, p):
    """Per window of P seconds: (cores used, window length)."""
    end = rows[-1][0]
    out, t = [], 0.0
    while t < end - 1e-9:
        w = min(p, end - t)
        out.append(((cpu_at(rows, t + w) - cpu_at(rows, t)) / w, w))
        t += w
    return out


def follow(u):
    alloc = 0.0
    for k, (x, w) in enumerate(u):
        a = x if k == 0 else max(floor, u[k - 1][0])
        alloc += max(a, x) * w
    return alloc


def fixed(u, a):
    return sum(max(a, x) * w for x, w in u)


by = {}
for f in files:
    rows = series(f)
    if rows:
        by.setdefault(names.get(os.path.basename(f)[0], "?"), []).append(rows)
if not by:
    sys.exit("alloc_bound: no time series with two samples or more among the %d files" % len(files))
for p in windows:
    tot_used = tot_follow = tot_fixed = 0.0
    parts = []
    for cat in sorted(by):
        us = [uses(r, p) for r in by[cat]]
        used = sum(r[-1][1] for r in by[cat])
        mean = used / sum(r[-1][0] for r in by[cat])
        fo = sum(follow(u) for u in us)
        fx = sum(fixed(u, max(floor, mean)) for u in us)
        tot_used, tot_follow, tot_fixed = tot_used + used, tot_follow + fo, tot_fixed + fx
        parts.append("%s %.3f / %.3f (%d rules, %.2f core-s each)" %
                     (cat, used / fo, used / fx, len(us), used / len(us)))
    print("  window %3.0f ms: all %.3f / %.3f;  %s" % (p * 1000, tot_used / tot_follow,
                                                      tot_used / tot_fixed, ";  ".join(parts)))
