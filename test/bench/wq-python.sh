#!/bin/bash
# wq-python.sh: null tasks per second from Python (htc.work_queue, work_queue/python/bench/rate.py)
# against the same loop in C (work_queue/test/helper_master_bench rate), one run each, side by
# side, with the same workers: WQP_WORKERS (default 2) workers of one core each, for WQP_SECONDS
# (default 20) of completions. Target: Python at least 80 % of C.
# Usage: wq-python.sh [BUILD]. The virtual environment is made under BUILD/bench/wq-python.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
NW=${WQP_WORKERS:-2}
SECS=${WQP_SECONDS:-20}
PYTHON=${PYTHON:-/usr/bin/python3}
WORK=$BUILD/bench/wq-python
HELPER=$BUILD/work_queue/test/helper_master_bench
WORKER=$BUILD/bin/work_queue_worker
mkdir -p "$WORK"

make -s -C "$SRCDIR" B="$BUILD" all "$HELPER" >/dev/null || exit 1
VENV=$WORK/venv
if ! "$VENV/bin/python" -c "import htc.work_queue" 2>/dev/null; then
	rm -rf "$VENV" "$WORK/src"
	"$PYTHON" -m venv "$VENV" || exit 1
	cp -r "$SRCDIR/work_queue/python" "$WORK/src"
	rm -rf "$WORK/src/build" "$WORK/src"/src/*.egg-info
	HTC_BUILD=$BUILD HTC_SRC=$SRCDIR "$VENV/bin/python" -m pip install -q "$WORK/src" || exit 1
fi

# run NAME CMD...: CMD writes its port to $WORK/port and its JSON line to stdout.
run() {
	local name=$1
	shift
	rm -f "$WORK/port"
	"$@" "$WORK/port" "$NW" "$SECS" >"$WORK/$name.json" 2>"$WORK/$name.err" &
	local mpid=$!
	while [ ! -s "$WORK/port" ]; do
		kill -0 $mpid 2>/dev/null || { cat "$WORK/$name.err"; return 1; }
		sleep 0.05
	done
	local port pids=() i
	port=$(cat "$WORK/port")
	for i in $(seq "$NW"); do
		rm -rf "$WORK/w$i"
		"$WORKER" -s "$WORK/w$i" --cores 1 --memory 1000 --disk 1000 --single-shot -t 60 \
			127.0.0.1 "$port" >"$WORK/w$i.log" 2>&1 &
		pids+=($!)
	done
	wait $mpid
	for i in "${pids[@]}"; do kill "$i" 2>/dev/null; done
	wait 2>/dev/null
	rate=$(sed -n 's/.*"tasks_per_s": *\([0-9]*\).*/\1/p' "$WORK/$name.json")
	cpu=$(sed -n 's/.*"cpu_us_per_task": *\([0-9.]*\).*/\1/p' "$WORK/$name.json")
	[ -n "$rate" ] || { cat "$WORK/$name.err"; return 1; }
}

echo "null tasks (true), $NW workers of 1 core, ${SECS}s each, loopback; $(nproc) cores"
run c "$HELPER" rate || exit 1
c_rate=$rate c_cpu=$cpu
run python "$VENV/bin/python" "$SRCDIR/work_queue/python/bench/rate.py" || exit 1
py_rate=$rate py_cpu=$cpu
printf "%-8s %10s %16s\n" "master" "tasks/s" "master CPU us/task"
printf "%-8s %10s %16s\n" C "$c_rate" "$c_cpu" Python "$py_rate" "$py_cpu"
pct=$((py_rate * 100 / (c_rate > 0 ? c_rate : 1)))
echo "Python/C: ${pct} % (target >= 80 %)"
[ "$pct" -ge 80 ]
