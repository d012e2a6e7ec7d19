#!/bin/bash
# 62-k8s-factory.sh: work_queue_factory -T k8s on the real single-node cluster
# (test/lib/k8s-lib.sh): the worker image is made by htc_worker_image and loaded into the
# cluster's containerd; the factory's worker pods (host network, one large worker sized from
# the node) run 30 tasks of makeflow -T wq and go away when the factory stops; a factory
# restarted after kill -9 deletes the pods of its earlier run; with request-fraction, worker pods
# whose limits add up to more than the node has all run.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/k8s-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_factory
test_require_bin work_queue_worker
test_require_bin htc_worker_image
PROBE=$BUILD/batch_drivers/test/helper_k8s_probe
[ -x "$PROBE" ] || test_skip_all "$PROBE is not built (make tests)"
TEST_TIMEOUT=180

missing=$(k8s_missing)
[ -z "$missing" ] || test_skip_all "missing: $missing (bash test/install-deps.sh test)"

export K8S_HOME=$TEST_ROOT/k8s
k8s_build >&2 || test_skip_all "building the Kubernetes binaries failed"
trap 'k8s_stop; __cleanup_all' EXIT
t0=$SECONDS
if ! k8s_start; then
	k8s_stop
	test_skip_all "the test cluster did not come up"
fi
say "# cluster up in $((SECONDS - t0)) s"
KC=$K8S_HOME/conf/kubeconfig
MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
export OMPI_MCA_ess_singleton_isolated=1

all_pods_gone() { "$PROBE" --kubeconfig "$KC" list | grep -q "^0 pods"; }
# pods_json: the factory pods (label htc-owner) as the API server lists them.
pods_json() { k8s_api "/api/v1/namespaces/default/pods?labelSelector=htc-owner"; }
worker_running() { pods_json | grep -q "\"phase\": \"Running\""; }
pod_gone() { ! "$PROBE" --kubeconfig "$KC" get "$1" >/dev/null 2>&1; }
pod_there() { "$PROBE" --kubeconfig "$KC" get "$1" >/dev/null 2>&1; }

test_expect_success 'htc_worker_image makes the worker image and loads it into the cluster' '
	"$BIN/htc_worker_image" -o worker.tar --import \
		--address "$K8S_HOME/run/containerd.sock" >img.out 2>&1 || { cat img.out; exit 1; }
	cat img.out
	grep -q "htc-worker:local: loaded into containerd" img.out
	ctr --address "$K8S_HOME/run/containerd.sock" -n k8s.io images ls -q | grep -qx "docker.io/library/htc-worker:local"
	# the worker and the libraries ldd finds for it
	tar xOf worker.tar $(tar tf worker.tar | grep layer.tar) | tar t >files
	grep -qx "usr/bin/work_queue_worker" files
	grep -q "libjansson.so" files
	grep -qx "bin/sh" files
	# a library that cannot be found is named
	test_must_fail "$BIN/htc_worker_image" --program /nonexistent/prog -o x.tar 2>err
	cat err
	grep -q "not an executable" err
'

test_expect_success 'work_queue_factory -T k8s: worker pods run 30 tasks of makeflow -T wq and go away at the end' '
	# each rule keeps the worker busy for a while, so that its pod is still there to be
	# inspected (a worker given whole cores finishes 30 empty rules in about a second, and the
	# factory then deletes its pod)
	for i in $(seq 1 30); do
		printf "f.%d:\n\tsleep 3; echo %d > f.%d\n" $i $i $i
	done >Makeflow
	start_master Makeflow
	"$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" --max-workers 1 \
		--period 0.5 -t 60 -d batch -o factory.debug localhost $port >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 90 worker_running || { echo "no worker pod running"; cat mf.out factory.out; tail -30 factory.debug; exit 1; }
	pods_json >pods.json
	# host network; one large worker: the node allocatable cores, given to the worker
	grep -q "\"hostNetwork\": true" pods.json || { echo "no hostNetwork"; head -c 3000 pods.json; exit 1; }
	cores=$(k8s_api /api/v1/nodes | python3 -c "import json,sys; print(json.load(sys.stdin)[\"items\"][0][\"status\"][\"allocatable\"][\"cpu\"])")
	python3 -c "import json,sys; c = json.load(open(\"pods.json\"))[\"items\"][0][\"spec\"][\"containers\"][0]; assert c[\"resources\"][\"limits\"][\"cpu\"] == \"$cores\", c; assert \"--cores \\\"\$CORES\\\"\" in c[\"command\"][2], c; print(c[\"command\"][2])"
	finish
	for i in $(seq 1 30); do [ "$(cat f.$i)" = $i ] || { echo "f.$i wrong"; cat mf.out; exit 1; }; done
	kill -TERM $fpid
	wait $fpid || { cat factory.out; exit 1; }
	cat factory.out
	test_wait_until 30 all_pods_gone
	# the removed pod times are in the debug output
	grep "k8s pod default/htc-.* removed: created 20.*, scheduled 20.*, running 20" factory.debug ||
		{ echo "no pod times"; grep -a "k8s pod" factory.debug | tail -5; tail -20 factory.debug; exit 1; }
'

test_expect_success 'work_queue_factory -T k8s scales down by draining the worker, then its pod goes; pod latency measured' '
	# six rules through the worker pod, then a LOCAL rule that holds the master up with
	# nothing for workers to do: the idle worker is drained through the master, leaves, and
	# its pod is deleted while the run goes on
	for i in $(seq 1 6); do
		printf "w.%d:\n\tsleep 1; echo %d > w.%d\n" $i $i $i
	done >Makeflow
	printf "hold: w.1 w.2 w.3 w.4 w.5 w.6\n\tLOCAL while [ ! -e $PWD/go ]; do sleep 0.1; done; touch hold\n" >>Makeflow
	start_master Makeflow
	"$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" --max-workers 1 \
		--period 0.5 -t 600 -d batch,factory -o factory.debug localhost $port >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 120 test -s w.6 || { cat mf.out factory.out; exit 1; }
	test_wait_until 90 grep -q "draining 1 " factory.out || { cat factory.out; tail -30 factory.debug; exit 1; }
	test_wait_until 60 all_pods_gone || { pods_json | head -c 2000; exit 1; }
	# the run is still going (held by its LOCAL rule): the pod went because it was drained
	kill -0 $mf
	[ ! -e hold ]
	# its worker left on its own, told by the master (-t 600 would have kept it)
	grep -q "drain of .*: 1 told" factory.debug
	not grep -q "ended with" factory.out
	# the pod preparing latency, request to worker connected, measured for the pod
	grep -E "connected as .* after [0-9.]+ s \(estimate [0-9.]+ s\)" factory.debug
	touch go
	finish
	[ -e hold ]
	kill -TERM $fpid
	wait $fpid || { cat factory.out; exit 1; }
'

test_expect_success 'work_queue_factory -T k8s restarted after kill -9 deletes the pods of its earlier run' '
	# no master: the minimum is kept, the worker waits for one
	"$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" --min-workers 1 \
		--max-workers 1 --period 0.5 -t 600 localhost 1 >f1.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 90 worker_running
	old=$(pods_json | python3 -c "import json,sys; print(json.load(sys.stdin)[\"items\"][0][\"metadata\"][\"name\"])")
	kill -9 $fpid
	wait $fpid || true
	pod_there "$old"
	"$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" --min-workers 1 \
		--max-workers 1 --period 0.5 -t 600 localhost 1 >f2.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	# the restart deletes it and waits until it is gone, then says so
	test_wait_until 60 grep -q "1 pod of an earlier run of wqf-[0-9a-f]* deleted" f2.out
	cat f2.out
	pod_gone "$old"
	kill -TERM $fpid
	wait $fpid || { cat f2.out; exit 1; }
	test_wait_until 30 all_pods_gone
'

test_expect_success 'work_queue_factory -T k8s with request-fraction: three 2-core worker pods run at once on the 2-core node' '
	# each pod is limited to 2 cores and 1000 MiB but requests a quarter of that (Burstable);
	# with full requests the scheduler would place one of them and leave two Pending
	"$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" \
		--batch-option request-fraction=0.25 --cores 2 --memory 1000 --min-workers 3 \
		--max-workers 3 --period 0.5 -t 600 localhost 1 >f3.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	three_running() { [ "$(pods_json | grep -c "\"phase\": \"Running\"")" = 3 ]; }
	test_wait_until 120 three_running || { pods_json | grep -E "phase|message" | head; cat f3.out; exit 1; }
	pods_json >pods3.json
	python3 -c "
import json
for p in json.load(open(\"pods3.json\"))[\"items\"]:
    r = p[\"spec\"][\"containers\"][0][\"resources\"]
    assert r[\"limits\"] == {\"cpu\": \"2\", \"memory\": \"1000Mi\"}, r
    assert r[\"requests\"] == {\"cpu\": \"500m\", \"memory\": \"250Mi\"}, r
    assert p[\"status\"][\"qosClass\"] == \"Burstable\", p[\"status\"]
print(\"3 pods: limits 2 cores 1000Mi, requests 500m 250Mi, Burstable\")
"
	# a fraction outside (0, 1] is refused with the key named
	test_must_fail "$BIN/work_queue_factory" -T k8s --batch-option "kubeconfig=$KC" \
		--batch-option request-fraction=1.5 --max-workers 1 localhost 1 >bad.out 2>&1
	cat bad.out
	grep -q "request-fraction" bad.out
	kill -TERM $fpid
	wait $fpid || { cat f3.out; exit 1; }
	test_wait_until 60 all_pods_gone
'

test_expect_success 'stopped: the cluster is down' '
	k8s_stop || true
	[ ! -e /run/htc-k8s-cluster.owner ]
'
say "# suite time $((SECONDS - t0)) s after the build"

test_done
