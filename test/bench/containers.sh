#!/bin/bash
# containers.sh: what containers cost a workflow, five ways in one run (the seed dissertation's
# figure 4.3 in small). One workflow of N independent rules, each burning about S seconds of CPU
# (the same busybox shell loop on the host and in the image) and reading one shared reference
# file, run:
#   none (local)    makeflow -T local -j CORES
#   wrapper         makeflow -T local --docker IMAGE: each rule wrapped in a container of its own
#   none (wq)       makeflow -T wq, one worker of CORES cores on the host
#   worker in ctr   the same worker running inside a container (host network)
#   per task        makeflow -T wq, CONTAINER=IMAGE: the worker makes a container per task,
#                   while the task waits in its queue (made ahead)
#   per task, at start  the same with --no-containers-ahead: made when the task starts
#   shared          the same with CONTAINER_MODE=shared: one container per image, tasks exec'd
# and prints the makespan of each, its ratio to the run without containers on the same driver,
# and the time added per task (makespan difference x cores / tasks). A private dockerd is
# started and stopped by PID (test/lib/docker-lib.sh); the images are made from busybox and,
# for the worker, by htc_worker_image; nothing is pulled.
# Usage: containers.sh [BUILD]; CONT_TASKS (default 500), CONT_CPU (seconds, default 2).
# CONT_ROUNDS=R: instead of the table, R interleaved rounds of the three -T wq ways (none, per
# task, shared; each round in the reverse order of the one before, so that a drift of the machine
# falls on every way alike), with each way's mean ratio to none and the spread of the ratios.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MF=$BUILD/bin/makeflow
WORKER=$BUILD/bin/work_queue_worker
N=${CONT_TASKS:-500}
S=${CONT_CPU:-2}
CORES=$(nproc)
WORK=$BUILD/bench/containers
IMG=htc-bench-busybox:1
WIMG=htc-bench-worker:1

[ "$(id -u)" = 0 ] || { echo "containers: needs root (dockerd)"; exit 0; }
command -v dockerd >/dev/null && [ -x /bin/busybox ] ||
	{ echo "containers: dockerd or busybox missing (bash test/install-deps.sh test)"; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
. "$SRCDIR/test/lib/docker-lib.sh"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	docker ps -aq 2>/dev/null | xargs -r docker rm -f >/dev/null 2>&1
	docker_stop
}
trap cleanup EXIT
docker_start "$WORK/docker" || { echo "containers: dockerd did not start"; exit 1; }
docker_busybox_image "$WORK/rootfs" $IMG || exit 1

# The worker's image, made by htc_worker_image (the worker, its libraries, busybox).
"$BUILD/bin/htc_worker_image" --name $WIMG --program "$WORKER" -o "$WORK/wimg.tar" >/dev/null &&
	docker load -i "$WORK/wimg.tar" >/dev/null || exit 1

# Calibrate the loop: iterations of the busybox shell loop per CPU second.
loop() { echo "i=0; while [ \$i -lt $1 ]; do i=\$((i+1)); done"; }
t0=$(date +%s.%N)
/bin/busybox sh -c "$(loop 200000)"
t1=$(date +%s.%N)
ITER=$(python3 -c "print(int(200000 * $S / max(0.01, $t1 - $t0)))")

cd "$WORK" || exit 1
head -c $((20 * 1024 * 1024)) /dev/urandom >ref.dat

# workflow FILE HEAD: N rules of one core each after the lines HEAD. (Without CORES a rule
# takes a whole worker on -T wq, so the 2-core worker would run one at a time.)
workflow() {
	{
		printf 'CORES=1\n%b' "$2"
		for i in $(seq 1 "$N"); do
			printf 'out.%d: ref.dat\n\t/bin/busybox cat ref.dat > /dev/null && /bin/busybox sh -c '"'"'%s'"'"' && echo %d > out.%d\n' \
				"$i" "$(loop "$ITER")" "$i" "$i"
		done
	} >"$1"
}

# run NAME DRIVER-ARGS...: the makespan of the workflow NAME.mf in T.
run() {
	local name=$1
	shift
	rm -f out.* ./*.makeflowlog*
	local t0 t1
	t0=$(date +%s.%N)
	"$MF" --progress=quiet "$@" "$name.mf" >"$name.out" 2>&1 || { echo "containers: $name failed (see $WORK/$name.out)"; T=failed; return; }
	t1=$(date +%s.%N)
	T=$(python3 -c "print(round($t1 - $t0, 2))")
}

# wq NAME yes|no [WORKER-ARGS...]: NAME.mf through -T wq and one worker (in a container with
# yes), whose workdir is its own (a worker removes its cache and sandboxes when it leaves).
wq() {
	local name=$1 inctr=$2
	shift 2
	rm -f port out.* ./*.makeflowlog*
	"$MF" --progress=quiet -T wq -p 0 -Z port "$name.mf" >"$name.out" 2>&1 &
	local mf=$! t0 t1
	PIDS+=($mf)
	for _ in $(seq 1 200); do [ -s port ] && break; sleep 0.1; done
	t0=$(date +%s.%N)
	if [ "$inctr" = yes ]; then
		docker run -d --rm --network host -v "$WORK:$WORK" -w "$WORK" $WIMG \
			/usr/bin/work_queue_worker --cores "$CORES" -t 10 -s "$WORK/wd.$name.$inctr" localhost "$(cat port)" >/dev/null
	else
		"$WORKER" --cores "$CORES" -t 10 -s "$WORK/wd.$name.$inctr" "$@" localhost "$(cat port)" >"$name.w.out" 2>&1 &
		PIDS+=($!)
	fi
	if wait $mf; then
		t1=$(date +%s.%N)
		T=$(python3 -c "print(round($t1 - $t0, 2))")
	else
		echo "containers: $name failed (see $WORK/$name.out)"
		T=failed
	fi
}

workflow plain.mf ""
workflow pertask.mf "CONTAINER=$IMG\n"
workflow shared.mf "CONTAINER=$IMG\nCONTAINER_MODE=shared\n"

ROUNDS=${CONT_ROUNDS:-0}
if [ "$ROUNDS" -gt 0 ]; then
	ways=(plain pertask shared)
	: >rounds.txt
	for r in $(seq 1 "$ROUNDS"); do
		order=("${ways[@]}")
		[ $((r % 2)) = 0 ] && order=(shared pertask plain)
		for w in "${order[@]}"; do
			case $w in
			plain) wq plain no ;;
			*) wq "$w" no --containers ;;
			esac
			echo "$r $w $T" >>rounds.txt
		done
	done
	echo "containers: $ROUNDS interleaved rounds of $N rules of about $S s of CPU each, $CORES cores, -T wq"
	python3 - "$N" "$CORES" rounds.txt <<'PY'
import statistics, sys
n, cores = int(sys.argv[1]), int(sys.argv[2])
t = {}
for line in open(sys.argv[3]):
    r, w, v = line.split()
    t.setdefault(int(r), {})[w] = float(v) if v != "failed" else None
for w in ("plain", "pertask", "shared"):
    ms = [t[r][w] for r in sorted(t) if t[r].get(w)]
    ratios = [t[r][w] / t[r]["plain"] for r in sorted(t) if t[r].get(w) and t[r].get("plain")]
    added = [(t[r][w] - t[r]["plain"]) * cores / n * 1000 for r in sorted(t)
             if t[r].get(w) and t[r].get("plain")]
    sd = statistics.stdev(ratios) if len(ratios) > 1 else 0
    print(f"  {w:<8} makespans {' '.join(f'{m:.1f}' for m in ms)} s; ratio to none "
          f"{statistics.mean(ratios):.3f} (sd {sd:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f});"
          f" added {statistics.mean(added):.0f} ms per task")
PY
	exit 0
fi

run plain -T local -j "$CORES"
t_local=$T
run plain -T local -j "$CORES" --docker $IMG
t_wrap=$T
wq plain no
t_wq=$T
wq plain yes
t_inctr=$T
wq pertask no --containers
t_task=$T
wq pertask no --containers --no-containers-ahead
t_task0=$T
wq shared no --containers
t_shared=$T

echo "containers: $N rules of about $S s of CPU each, reading one 20 MB file, $CORES cores"
python3 - "$N" "$CORES" "$t_local" "$t_wrap" "$t_wq" "$t_inctr" "$t_task" "$t_shared" "$t_task0" <<'PY'
import sys
n, cores = int(sys.argv[1]), int(sys.argv[2])
loc, wrap, wq, inctr, task, shared, task0 = sys.argv[3:10]
def row(name, t, base):
    try:
        t, b = float(t), float(base)
        print(f"  {name:<18} {t:8.2f} s  {t / b:5.2f}x  {(t - b) * cores / n * 1000:7.0f} ms per task")
    except ValueError:
        print(f"  {name:<18} {t}")
row("none (-T local)", loc, loc)
row("wrapper per task", wrap, loc)
row("none (-T wq)", wq, wq)
row("worker in ctr", inctr, wq)
row("per task (wq)", task, wq)
row("per task, at start", task0, wq)
row("shared (wq)", shared, wq)
PY

# The same on a node with idle CPU: L rules that sleep 1 s on a 1-core worker, so that what a
# container adds to each task's path shows, not the engine's CPU, which the rules above compete
# with (doc/work-queue-docker.md, "Containers made ahead").
L=${CONT_LATENCY_TASKS:-20}
sleepers() {
	{
		printf 'CORES=1\n%b' "$2"
		for i in $(seq 1 "$L"); do printf 'out.%d:\n\tsleep 1 && echo %d > out.%d\n' "$i" "$i" "$i"; done
	} >"$1"
}
sleepers sleep.mf ""
sleepers sleeptask.mf "CONTAINER=$IMG\n"
CORES=1
wq sleep no
l_none=$T
wq sleeptask no --containers
l_task=$T
wq sleeptask no --containers --no-containers-ahead
l_task0=$T
echo "containers: $L rules of sleep 1 s, one 1-core worker (idle CPU beside it)"
python3 - "$L" "$l_none" "$l_task" "$l_task0" <<'PY'
import sys
n = int(sys.argv[1])
base, task, task0 = sys.argv[2:5]
for name, t in (("none (-T wq)", base), ("per task (wq)", task), ("per task, at start", task0)):
    try:
        t, b = float(t), float(base)
        print(f"  {name:<18} {t:8.2f} s  {t / b:5.2f}x  {(t - b) / n * 1000:7.0f} ms per task")
    except ValueError:
        print(f"  {name:<18} {t}")
PY
