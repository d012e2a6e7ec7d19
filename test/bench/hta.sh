#!/bin/bash
# hta.sh: the autoscaling benchmark. Two workflows modelled on the HTA evaluation (Chen's
# dissertation, figure 7.11), scaled to this machine, each run with work_queue_factory -T local
# under every policy (queue, hpa:20, hpa:50, hta) in one run: a BLAST-like three-stage workflow
# whose stages have different widths and task sizes, and an I/O-bound one (many tasks, little
# CPU). Workers advertise 4 nominal cores (and the local driver is told the machine has 80, so
# that it runs 20 worker jobs at once); the tasks sleep, and the CPU load they model is fed
# to hpa with --modelled-load (the same file for every policy). Worker start latency: the local
# driver's own (a few ms), and a modelled cloud node start of HTA_DELAY seconds (default 4:
# the 157 s measured on GKE scaled by 1/40, like the task times) through --wrapper "sleep D;".
# For each run: makespan, accumulated waste (core-s offered by the factory's workers from the
# moment each is requested, minus core-s allocated to tasks) and accumulated shortage (core-s
# of tasks waiting to be dispatched), from the factory's pool log and the master's transactions
# log; one SVG per run of pool size, waiting and running tasks over time.
# HTA_DRIVER=k8s: instead, both workflows under every policy with the start latency of real
# Kubernetes worker pods: work_queue_factory -T k8s on the single-node test cluster
# (test/lib/k8s-lib.sh, started and stopped here), the worker image made by htc_worker_image,
# the same 4-core workers with request-fraction=0.02 (each pod requests 80m of its 4 cores and
# 80Mi of its 4000 MB, so that all 20 fit on the 2-core node at once), no modelled delay.
# Usage: hta.sh [BUILD]; HTA_DELAY, HTA_SCALE (task counts, default 1), HTA_POLICIES,
# HTA_DRIVER (local or k8s).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
DRIVER=${HTA_DRIVER:-local}
if [ "$DRIVER" = k8s ] && [ -z "${HTC_CONTAINERD_LOCKED:-}" ]; then
	# the cluster shares containerd's paths with the Docker suites and benchmarks
	export HTC_CONTAINERD_LOCKED=1
	exec flock /tmp/htc-containerd.lock bash "$0" "$@"
fi
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
BIN=$BUILD/bin
DELAY=${HTA_DELAY:-4}
SCALE=${HTA_SCALE:-1}
POLICIES=${HTA_POLICIES:-queue hpa:20:8 hpa:50:8 hta}
WORK=$BUILD/bench/hta
DRIVER_OPTS=(-T local --batch-option cores=80 --batch-option max-jobs=20)
case "$DRIVER" in
local) ;;
k8s)
	WORK=$BUILD/bench/hta-k8s
	. "$SRCDIR/test/lib/k8s-lib.sh"
	K8S_TMP=$(mktemp -d "${TMPDIR:-/tmp}/htc-bench-hta-k8s.XXXXXX")
	export K8S_HOME=$K8S_TMP/k8s
	trap 'k8s_stop; rm -rf "$K8S_TMP"' EXIT
	k8s_build >&2 || exit 1
	k8s_start || exit 1
	"$BIN/htc_worker_image" -o "$K8S_TMP/worker.tar" --import \
		--address "$K8S_HOME/run/containerd.sock" >/dev/null || exit 1
	DRIVER_OPTS=(-T k8s --batch-option "kubeconfig=$K8S_HOME/conf/kubeconfig"
		--batch-option request-fraction=0.02)
	;;
*)
	echo "hta.sh: HTA_DRIVER=$DRIVER: local or k8s" >&2
	exit 2
	;;
esac
rm -rf "$WORK"
mkdir -p "$WORK"

n() { python3 -c "print(max(1, int(round($1 * $SCALE))))"; }

# A stage of COUNT rules of category CAT (CORES cores, SECS seconds each) after DEP (a file or
# ""), then a one-rule reduce into OUT.
stage() {
	local cat=$1 count=$2 cores=$3 secs=$4 dep=$5 out=$6 i outs=""
	printf "CATEGORY=%s\nCORES=%s\nMEMORY=500\n" "$cat" "$cores"
	for i in $(seq 1 "$count"); do
		printf "%s.%d: %s\n\tsleep %s; echo %d > %s.%d\n" "$cat" "$i" "$dep" "$secs" "$i" "$cat" "$i"
		outs="$outs $cat.$i"
	done
	printf "CATEGORY=reduce\nCORES=1\nMEMORY=500\n"
	printf "%s:%s\n\tcat%s > %s\n" "$out" "$outs" "$outs" "$out"
}

# BLAST-like: 200, 34 and 164 tasks in the dissertation; here 1/4 of each (scaled), with task
# times of about 1/40 of its.
blast() {
	stage split_align "$(n 50)" 1 8 "" s1.out
	stage align_big "$(n 9)" 2 12 s1.out s2.out
	stage align_small "$(n 41)" 1 6 s2.out s3.out
}

# I/O-bound: 200 dd tasks in the dissertation; here 60 (scaled) tasks of 5 s, 5 % CPU.
iobound() {
	local i
	printf "CATEGORY=io\nCORES=1\nMEMORY=500\n"
	for i in $(seq 1 "$(n 60)"); do
		printf "io.%d:\n\tsleep 5; echo %d > io.%d\n" "$i" "$i" "$i"
	done
}

cat >"$WORK/load.model" <<-EOF
	# the CPU fraction of a task's cores, as the dissertation's traces had them
	split_align 0.9
	align_big 0.9
	align_small 0.9
	reduce 0.5
	io 0.05
EOF

# run TRACE POLICY DELAY: one workflow under one policy; leaves DIR with mf.out, txlog,
# factory.log.
run() {
	local trace=$1 policy=$2 delay=$3
	local dir=$WORK/$trace-${policy//:/_}-d$delay
	mkdir -p "$dir"
	(
		cd "$dir" || exit 1
		"$trace" >Makeflow
		"$BIN/makeflow" -T wq -p 0 -Z port -L txlog --progress=quiet Makeflow >mf.out 2>&1 &
		local mf=$!
		for _ in $(seq 1 200); do [ -s port ] && break; sleep 0.1; done
		local wrap=()
		case "$delay" in 0 | pod) ;; *) wrap=(--wrapper "sleep $delay;") ;; esac
		"$BIN/work_queue_factory" "${DRIVER_OPTS[@]}" --cores 4 --memory 4000 --max-workers 20 \
			--workers-per-cycle 20 --period 1 -t 10 --scaler "$policy" \
			--modelled-load "$WORK/load.model" --pool-record "$dir/pool.rec" "${wrap[@]}" \
			-d factory -o factory.log localhost "$(cat port)" >factory.out 2>&1 &
		local fac=$!
		wait $mf
		echo $? >mf.rc
		kill -TERM $fac
		wait $fac
	)
	python3 "$SRCDIR/test/bench/hta_report.py" "$dir" "$trace" "$policy" "$delay" 4
}

echo "Autoscaling (test/bench/hta.sh, $DRIVER driver): workers of 4 nominal cores, at most 20," \
	"period 1 s;"
echo "  $(nproc) real cores; load average at the start: $(cut -d" " -f1-3 /proc/loadavg)"
echo "  start delay: pod = Kubernetes worker pods, 0 = local processes, N = local processes" \
	"behind 'sleep N'; latency = mean request -> connected the factory measured"
printf "%-8s %-10s %6s %9s %11s %13s %8s %s\n" trace policy delay makespan "waste c*s" \
	"shortage c*s" latency "max pool"
if [ "$DRIVER" = k8s ]; then
	for trace in blast iobound; do
		for policy in $POLICIES; do
			run $trace "$policy" pod
		done
	done
else
	for trace in blast iobound; do
		for policy in $POLICIES; do
			run $trace "$policy" "$DELAY"
		done
	done
	for policy in $POLICIES; do
		run blast "$policy" 0
	done
fi
echo "SVG plots: $WORK/*/plot.svg"
