#!/bin/bash
# report.sh: benchmark of the run report (makeflow_report) on a synthetic run: a generator
# writes a workflow of REPORT_BENCH_RULES rules (default 100,000; ten categories, chains of
# rules), its transaction log (every rule started, 2% failing once and retried, 64 running at
# a time) and monitor summaries for one rule in ten. Measured: the report's generation time and
# peak memory, the file's size (must stay under 20 MB), and the page's load time in headless
# Chromium (--dump-dom, against an empty page loaded the same way). Run as
#   bash test/bench/report.sh [BUILD]        (or as bench "report" of test/bench/run.sh)
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
REP=$BUILD/bin/makeflow_report
RULES=${REPORT_BENCH_RULES:-100000}
WORK=$BUILD/bench/report
MAX_BYTES=$((20 * 1024 * 1024))

if [ ! -x "$REP" ]; then
	echo "report bench: $REP is not built (make)" >&2
	exit 1
fi
rm -rf "$WORK"
mkdir -p "$WORK/mon"
cd "$WORK" || exit 1

# ---- the generator --------------------------------------------------------------------------
python3 - "$RULES" <<'EOF'
import random, sys, zlib, json
n = int(sys.argv[1])
rng = random.Random(42)
cats = ["cat%d" % k for k in range(10)]
chains = max(1, n // 100)  # rule i reads the output of rule i - chains
with open("bench.mf", "w") as wf:
    for i in range(n):
        cat = cats[i % len(cats)]
        wf.write("CATEGORY=%s\nMEMORY=%d\n" % (cat, 100 * (1 + i % len(cats))))
        ins = " out.%d" % (i - chains) if i >= chains else ""
        wf.write("out.%d:%s\n\tsim %d\n" % (i, ins, i))

def rec(f, body):
    f.write("%s %08x\n" % (body, zlib.crc32(body.encode()) & 0xffffffff))

t0 = 1795000000000000
slots = [t0] * 64
with open("bench.mf.makeflowlog", "w") as f:
    f.write("#htc-makeflow-log 1 bench.mf\n")
    rec(f, "S %d 4242 %d" % (t0, n))
    events = []
    for i in range(n):
        k = min(range(64), key=lambda s: slots[s]) if i < 64 else i % 64
        start = slots[k]
        tries = 2 if rng.random() < 0.02 else 1
        for t in range(tries):
            dur = rng.randint(1000000, 10000000)
            events.append((start, "N %d %d 2 %016x" % (start, i, i)))
            end = start + dur
            if t + 1 == tries:
                fail = rng.random() < 0.005
                if fail:
                    events.append((end, "N %d %d 4 %016x exit:1" % (end, i, i)))
                else:
                    events.append((end, "N %d %d 3 %016x" % (end, i, i)))
            start = end + 1000
        slots[k] = start
        if rng.random() < 0.1:
            mem = rng.uniform(10, 90 * (1 + i % 10))
            json.dump({"command": "sim %d" % i, "category": cats[i % 10], "task_id": str(i),
                       "host": "node%02d" % (k % 16), "exit_type": "normal", "exit_status": 0,
                       "wall_time": [dur / 1e6, "s"], "memory": [round(mem, 3), "MB"],
                       "cores": [round(rng.uniform(0.1, 1), 3), "cores"],
                       "disk": [1.5, "MB"]}, open("mon/resource-rule-%d.summary" % i, "w"))
    events.sort(key=lambda e: e[0])
    for _, body in events:
        rec(f, body)
    end = max(slots)
    rec(f, "E %d 1 failed" % end)
EOF
lines=$(wc -l <bench.mf.makeflowlog)
echo "report bench: $RULES rules, $lines log lines, $(ls mon | wc -l) summaries ($(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC'))"

# ---- generation ------------------------------------------------------------------------------
/usr/bin/time -f "%e %M" -o time.txt "$REP" -O report.html bench.mf.makeflowlog mon >rep.out 2>&1
rc=$?
read -r secs kb <time.txt
if [ $rc != 0 ]; then
	echo "report bench: makeflow_report failed:" >&2
	cat rep.out >&2
	exit 1
fi
bytes=$(stat -c %s report.html)
echo "generation: ${secs} s, peak memory $((kb / 1024)) MB"
echo "report size: $bytes bytes ($(python3 -c "print(round($bytes / 1048576, 2))") MB; limit 20 MB)"
grep -q 'id="aggregated"' report.html && echo "timelines aggregated (more than 20,000 SVG elements)"
status=0
if [ "$bytes" -ge "$MAX_BYTES" ]; then
	echo "report bench: FAIL: the report is $bytes bytes, over 20 MB" >&2
	status=1
fi

# ---- page load in headless Chromium -----------------------------------------------------------
if command -v chromium >/dev/null; then
	echo "<!DOCTYPE html><html><body><p>x</p></body></html>" >empty.html
	load() {
		/usr/bin/time -f "%e" -o t.txt timeout 300 chromium --headless --no-sandbox \
			--disable-gpu --no-first-run --user-data-dir="$WORK/profile" \
			--dump-dom "file://$WORK/$1" >"$1.dom" 2>/dev/null
		cat t.txt
	}
	load empty.html >/dev/null # first start warms the profile
	e1=$(load empty.html)
	r1=$(load report.html)
	r2=$(load report.html)
	echo "page load (chromium --headless --dump-dom, start to exit): report ${r1} s and ${r2} s, empty page ${e1} s"
	grep -q 'id="dag"' report.html.dom || { echo "report bench: the page did not load whole" >&2; status=1; }
else
	echo "page load: chromium is not installed (test/install-deps.sh bench)"
fi
exit $status
