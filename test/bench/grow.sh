#!/bin/bash
# grow.sh: vertical elasticity on the worker (doc/elasticity.md), through makeflow -T wq
# and one 2-core worker. (1) A rule that works for a while and then needs 1.5 times its
# category's warm-up estimate: with --memory-grow on it is grown and runs once; without, it
# is killed at its limit and run again at the maximum. (2) A neighbour (CPU-bound, 1000 MB)
# alone, then beside a runaway allocator with --memory-throttle on: the neighbour's own run
# time (stamped inside its command) should stay within 10 %, and it must never be killed.
# Prints the median of GROW_REPEAT runs (default 3) of each.
# Usage: grow.sh [BUILD]
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MF=$BUILD/bin/makeflow
WORKER=$BUILD/bin/work_queue_worker
H=$BUILD/resource_monitor/test
R=${GROW_REPEAT:-3}
WORK=$BUILD/bench/grow
rm -rf "$WORK"
mkdir -p "$WORK"

# run NAME MAKEFLOW_FILE WORKER_ARGS...: makeflow -T wq (with MF_ARGS) and one 2-core,
# 3000 MB worker in $WORK/NAME; sets T (seconds, or "failed").
run() {
	local name=$1 file=$2
	shift 2
	local d=$WORK/$name
	rm -rf "$d"
	mkdir -p "$d/worker"
	cp "$file" "$d/Makeflow"
	cp "$WORK/runaway.py" "$WORK/neighbour.py" "$d/"
	local s e rc=0
	s=$(date +%s.%N)
	# shellcheck disable=SC2086 # MF_ARGS holds several words
	(cd "$d" && exec "$MF" -T wq -p 0 -Z port --progress=quiet $MF_ARGS \
		--summary-json summary.json Makeflow >out 2>&1) &
	local mfpid=$! i=0
	while [ ! -s "$d/port" ] && [ $i -lt 600 ] && kill -0 $mfpid 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	local wpid=
	if [ -s "$d/port" ]; then
		(cd "$d/worker" && exec "$WORKER" -t 60 --cores 2 --memory 3000 --disk 20000 "$@" \
			localhost "$(cat "$d/port")" >"$d/worker.out" 2>&1) &
		wpid=$!
	fi
	wait $mfpid || rc=$?
	[ -n "$wpid" ] && { kill $wpid 2>/dev/null; wait $wpid 2>/dev/null; }
	e=$(date +%s.%N)
	T=$(python3 -c "print('%.2f' % ($e - $s))")
	[ $rc = 0 ] || {
		echo "grow: $name failed (status $rc); see $d/out" >&2
		T=failed
	}
}

median() {
	python3 -c "
import sys
v = sorted(float(x) for x in sys.argv[1:] if x != 'failed')
print('%.2f' % v[len(v) // 2] if v else 'failed')" "$@"
}

# stamp NAME: seconds between the two instants written into $WORK/NAME/n.
stamp() {
	python3 -c "
import sys
try:
    a, b = (int(x) for x in open('$WORK/$1/n').read().split())
    print('%.2f' % ((b - a) / 1e9))
except (OSError, ValueError):
    print('failed')"
}

# summary_field NAME FIELD: the grow category's FIELD in NAME's summary.
summary_field() {
	python3 -c "
import json
try:
    c = [c for c in json.load(open('$WORK/$1/summary.json'))['categories'] if c['name'] == 'grow'][0]
    print(c.get('$2', 0))
except (OSError, ValueError, IndexError):
    print('-')"
}

cat >"$WORK/neighbour.py" <<'PY'
import time
held = bytearray(1000 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
end = time.time() + 6
while time.time() < end:
    pass
PY
cat >"$WORK/runaway.py" <<'PY'
import time
chunks = []
for i in range(18):
    chunks.append(bytearray(100 << 20))
    time.sleep(0.15)
PY

# (1) a measures 200 MB; b works 3 s, then needs 330 MB; c is small.
{
	echo "CATEGORY=grow"
	printf "a:\n\t%s/helper_alloc 200 0.2 > a\n" "$H"
	printf "b: a\n\t%s/helper_burn 1 3 && %s/helper_alloc 330 1 > b\n" "$H" "$H"
	printf "c: b\n\t%s/helper_alloc 50 0.2 > c\n" "$H"
} >"$WORK/grow.mf"

# (2) the neighbour holds 1000 MB and burns a core for 6 s, its run time stamped; the runaway
# grows by 100 MB every 0.15 s to 1800 MB (the worker is short once it passes 1250 MB).
neighbour() {
	printf "CATEGORY=neighbour\nCORES=1\nMEMORY=1100\nDISK=100\n"
	printf "n: neighbour.py\n\tdate +%%s%%N > n && python3 neighbour.py && date +%%s%%N >> n\n"
}
neighbour >"$WORK/alone.mf"
{
	neighbour
	printf "CATEGORY=runaway\nCORES=1\nMEMORY=1900\nDISK=100\n"
	printf "r: runaway.py\n\tpython3 runaway.py > r\n"
} >"$WORK/beside.mf"

echo "growth on the worker: makeflow -T wq --allocation warmup, one 2-core 3000 MB worker," \
	"median of $R runs (the machine may be shared)"
MF_ARGS="--allocation warmup"
g=() ng=()
for i in $(seq 1 "$R"); do
	run grow-on "$WORK/grow.mf" --memory-grow on
	g+=("$T")
	run grow-off "$WORK/grow.mf"
	ng+=("$T")
done
printf "  %-58s %8s s  (exhaustions %s, re-runs %s, limit raises %s)\n" \
	"rule needing 1.5x its estimate, --memory-grow on" "$(median "${g[@]}")" \
	"$(summary_field grow-on exhaustions)" "$(summary_field grow-on retries)" \
	"$(summary_field grow-on limit_raises)"
printf "  %-58s %8s s  (exhaustions %s, re-runs %s, limit raises %s)\n" \
	"the same without growth (killed, run again at the maximum)" "$(median "${ng[@]}")" \
	"$(summary_field grow-off exhaustions)" "$(summary_field grow-off retries)" \
	"$(summary_field grow-off limit_raises)"

MF_ARGS=""
a=() b=() u=() killed=0 throttled=0
for i in $(seq 1 "$R"); do
	run unthrottled "$WORK/beside.mf"
	u+=("$(stamp unthrottled)")
	run alone "$WORK/alone.mf" --memory-throttle on --memory-throttle-rate 100
	a+=("$(stamp alone)")
	run beside "$WORK/beside.mf" --memory-throttle on --memory-throttle-rate 100
	b+=("$(stamp beside)")
	grep -q "throttled at" "$WORK/beside/worker.out" && throttled=$((throttled + 1))
	grep -qi "exhausted\|again" "$WORK/beside/out" && killed=$((killed + 1))
done
ma=$(median "${a[@]}")
mb=$(median "${b[@]}")
printf "  %-58s %8s s\n" "neighbour alone (its own run time)" "$ma"
printf "  %-58s %8s s\n" "neighbour beside a runaway, no throttle" "$(median "${u[@]}")"
printf "  %-58s %8s s  (%s)\n" "neighbour beside a runaway, --memory-throttle on" "$mb" \
	"$(python3 -c "
try: print('%+.1f %%' % (100 * (float('$mb') / float('$ma') - 1)))
except ValueError: print('n/a')")"
echo "  runaway throttled in $throttled of $R runs; a rule killed or re-run in $killed of $R runs"
