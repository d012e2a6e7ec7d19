#!/bin/bash
# k8s.sh: N trivial rules (default 500) through makeflow -T k8s on the real single-node test
# cluster that the script starts (test/lib/k8s-lib.sh) and stops, side by side with CCTools
# 9.9's makeflow -T k8s (which runs kubectl: the cached one is put first on PATH) on the same
# cluster in the same run; then the same rules through makeflow -T wq with worker pods of
# work_queue_factory -T k8s. Prints pods per second, the time the driver adds per pod (from a
# rule handed to the driver, its 'running' record, to the pod's create answered, the driver's
# debug line; and from the end of the rule, the mtime of the output it writes last, to
# makeflow's 'complete' record), and, for Work Queue, tasks per second once the worker pod is up
# (from the first task complete to the last) and in all. Takes /tmp/htc-containerd.lock (the
# cluster shares containerd's paths with the Docker suite). Usage: k8s.sh [N]; BUILD (default
# ./build); BENCH_NO_CCTOOLS=1 skips CCTools; BENCH_CCTOOLS_N (default N) rules for CCTools,
# CCTOOLS_TIMEOUT (default 900) seconds for its run.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${HTC_CONTAINERD_LOCKED:-}" ]; then
	export HTC_CONTAINERD_LOCKED=1
	exec flock /tmp/htc-containerd.lock bash "$0" "$@"
fi
BUILD=${BUILD:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
N=${1:-500}
CN=${BENCH_CCTOOLS_N:-$N}
export OMPI_MCA_ess_singleton_isolated=1
. "$SRCDIR/test/lib/k8s-lib.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-bench-k8s.XXXXXX")
export K8S_HOME=$WORK/k8s
trap 'k8s_stop; rm -rf "$WORK"' EXIT
k8s_build >&2 || exit 1
k8s_start || exit 1
KC=$K8S_HOME/conf/kubeconfig

# workflow DIR COUNT: COUNT rules, each writing its own file.
workflow() {
	mkdir -p "$1"
	for i in $(seq 1 "$2"); do
		printf 'out.%d:\n\techo %d > out.%d\n\n' "$i" "$i" "$i"
	done >"$1/Makeflow"
}

# timed NAME DIR CMD...: runs CMD in DIR; prints rules, outputs, seconds and rules per second.
timed() {
	local name=$1 dir=$2
	shift 2
	local t0 t1 n
	t0=$(date +%s.%N)
	(cd "$dir" && "$@" >"$dir/out.log" 2>&1) || echo "$name: makeflow failed (see the end of its output below)"
	t1=$(date +%s.%N)
	n=$(ls "$dir" | grep -c '^out\.[0-9]')
	python3 -c "
t = $t1 - $t0
print('%s: %d rules, %d outputs in %.1f s: %.2f pods/s' % ('$name', $(grep -c '^out' "$dir/Makeflow"), $n, t, $n / t))"
	if [ "$n" != "$(grep -c '^out' "$dir/Makeflow")" ]; then
		# why: the start and the end of its output, and what its kubectl calls said
		head -15 "$dir/out.log" | sed 's/^/  | /'
		echo "  | ..."
		tail -5 "$dir/out.log" | sed 's/^/  | /'
		for f in "$dir"/kubectl_failed.log "$dir"/*.k8slog "$dir"/k8s.log; do
			[ -s "$f" ] && { echo "  $f:"; head -10 "$f" | sed 's/^/  | /'; }
		done
	fi
}

# driver_overhead DIR: mean and max of ready -> pod created and rule end -> makeflow notices.
driver_overhead() {
	python3 - "$1" <<'PY'
import sys, os, re, datetime
d = sys.argv[1]
running, complete = {}, {}
for line in open(os.path.join(d, 'Makeflow.makeflowlog')):
    f = line.split()
    if f[0] == 'N' and f[3] == '2':
        running[int(f[2])] = int(f[1]) / 1e6
    elif f[0] == 'N' and f[3] == '3':
        complete[int(f[2])] = int(f[1]) / 1e6
created = []
for line in open(os.path.join(d, 'debug.log')):
    m = re.match(r'(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) .* k8s pod \S+ created$', line)
    if m:
        created.append(datetime.datetime.strptime(m.group(1), '%Y/%m/%d %H:%M:%S.%f')
                       .timestamp())
notice = [t - os.stat(os.path.join(d, 'out.%d' % (i + 1))).st_mtime
          for i, t in complete.items()]
# the k-th create answered against the k-th rule handed over (both in time order)
lat = [max(0.0, c - r) for c, r in zip(sorted(created), sorted(running.values()))]
def st(v):
    return 'mean %.3f s, max %.3f s (%d)' % (sum(v) / len(v), max(v), len(v)) if v else 'n/a'
print('  rule ready -> pod created (create answered): ' + st(lat))
print('  rule end (output mtime) -> makeflow notices: ' + st(notice))
PY
}

echo "k8s.sh: $N rules ($CN for CCTools) on the single-node test cluster ($(nproc) CPUs; the machine may be shared)"
workflow "$WORK/ours" "$N"
timed "this project (-T k8s, defaults: submit-rate 20, max-jobs 100)" "$WORK/ours" \
	"$BUILD/bin/makeflow" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local \
	-d batch -o debug.log Makeflow
driver_overhead "$WORK/ours"

# Work Queue: the worker image, one worker pod (the node's size), N tasks
"$BUILD/bin/htc_worker_image" -o "$WORK/worker.tar" --import \
	--address "$K8S_HOME/run/containerd.sock" >/dev/null || exit 1
workflow "$WORK/wq" "$N"
(cd "$WORK/wq" && exec timeout -k 5 600 "$BUILD/bin/makeflow" -T wq -p 0 -Z port \
	--progress=quiet Makeflow >out.log 2>&1) &
mf=$!
for _ in $(seq 1 200); do [ -s "$WORK/wq/port" ] && break; sleep 0.1; done
t0=$(date +%s.%N)
(cd "$WORK/wq" && exec "$BUILD/bin/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" \
	--max-workers 1 --period 0.5 -t 60 localhost "$(cat port)" >factory.log 2>&1) &
fac=$!
wait $mf || echo "makeflow -T wq failed (see $WORK/wq/out.log)"
t1=$(date +%s.%N)
kill -TERM $fac 2>/dev/null
wait $fac
python3 - "$WORK/wq" "$t0" "$t1" <<'PY'
import sys, os
d, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
done = sorted(int(l.split()[1]) / 1e6 for l in open(os.path.join(d, 'Makeflow.makeflowlog'))
              if l.startswith('N ') and l.split()[3] == '3')
n = len(done)
if n > 1:
    print('this project (-T wq, 1 worker pod of work_queue_factory -T k8s): %d tasks; '
          'first done %.1f s after the factory started (the pod start); then %.1f tasks/s '
          '(%d tasks in %.2f s); in all %.2f tasks/s' % (n, done[0] - t0,
          (n - 1) / (done[-1] - done[0]), n - 1, done[-1] - done[0], n / (t1 - t0)))
else:
    print('-T wq: %d tasks completed' % n)
PY

if [ "${BENCH_NO_CCTOOLS:-0}" != 1 ]; then
	if [ ! -x /usr/bin/makeflow ]; then
		echo "CCTools 9.9 (-T k8s): not run: /usr/bin/makeflow is not installed"
	else
		# What CCTools' driver needs: its helper script is bash but run with "sh" (dash on
		# Debian), so "sh" is bash on its PATH here; its pods run /bin/bash, so its image
		# holds bash (made by htc_worker_image, busybox applets beside it)
		mkdir -p "$WORK/shim"
		ln -s /bin/bash "$WORK/shim/sh"
		"$BUILD/bin/htc_worker_image" --program /bin/bash --name cctools-bash:local \
			-o "$WORK/bash.tar" --import --address "$K8S_HOME/run/containerd.sock" >/dev/null || exit 1
		workflow "$WORK/cctools" "$CN"
		timed "CCTools 9.9 (-T k8s, kubectl $("$K8S_BIN/kubectl" version --client 2>/dev/null | head -1 | awk '{print $3}'))" \
			"$WORK/cctools" env PATH="$WORK/shim:$K8S_BIN:$PATH" KUBECONFIG="$KC" \
			timeout -k 5 "${CCTOOLS_TIMEOUT:-900}" /usr/bin/makeflow -T k8s \
			--k8s-image cctools-bash:local Makeflow
		k8s_delete_pods >/dev/null 2>&1 || true
	fi
fi

