#!/bin/bash
# 60-k8s.sh: the Kubernetes API client against a real single-node cluster that the suite
# starts (test/lib/k8s-lib.sh; the binaries are built once and cached, 10-19 minutes the
# first time): pods run to Succeeded and Failed with their exit codes, out-of-memory pods (a
# Succeeded pod with reason OOMKilled among them), an activeDeadlineSeconds pod, a missing
# image, one watch resumed across an apiserver restart (410 Gone re-listed), token, client
# certificate and service-account credentials, the errors of a wrong token, an unknown
# namespace and an unreachable apiserver, and the host left as it was after the stop.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/k8s-lib.sh"

PROBE=$BUILD/batch_drivers/test/helper_k8s_probe
[ -x "$PROBE" ] || test_skip_all "$PROBE is not built (make tests)"
TEST_TIMEOUT=120

missing=$(k8s_missing)
[ -z "$missing" ] || test_skip_all "missing: $missing (bash test/install-deps.sh test)"

export K8S_HOME=$TEST_ROOT/k8s
k8s_host_state >"$TEST_ROOT/host.before"
k8s_build >&2 || test_skip_all "building the Kubernetes binaries failed"
trap 'k8s_stop; __cleanup_all' EXIT
t0=$SECONDS
if ! k8s_start; then
	k8s_stop
	test_skip_all "the test cluster did not come up"
fi
say "# cluster up in $((SECONDS - t0)) s"
KC=$K8S_HOME/conf/kubeconfig
probe() { "$PROBE" --kubeconfig "$KC" "$@"; }

# no_pods LABEL: no pod of the cluster carries htc-probe=LABEL.
no_pods() {
	"$PROBE" --kubeconfig "$KC" list --selector "htc-probe=$1" | grep -q "^0 pods"
}

test_expect_success 'pods run to Succeeded and Failed; exit codes read; pods deleted' '
	probe run --label exits ok="echo hello" bad="exit 3" >out 2>err
	cat out err
	grep -q "^ok phase=Succeeded exit=0 reason=Completed oom=0" out
	grep -q "^bad phase=Failed exit=3 reason=Error oom=0" out
	grep -q "^watch streams=1 resumed=0" out
	test_wait_until 30 no_pods exits
'

test_expect_success 'a client certificate authenticates; out of memory is read with the exit code' '
	"$PROBE" --kubeconfig "$K8S_HOME/conf/kubeconfig-cert" run --memory 32Mi \
		hog="memhog 200" child="memhog 200 & wait; echo the main process lived" >out 2>err
	cat out err
	grep -q "^hog phase=Failed exit=137 reason=OOMKilled oom=1" out
	# the child was killed for memory, the main process ended well: still out of memory
	grep -q "^child phase=Succeeded exit=0 reason=OOMKilled oom=1" out
'

test_expect_success 'activeDeadlineSeconds: the pod fails with DeadlineExceeded' '
	probe run --deadline 2 late="sleep 60" >out 2>err
	cat out err
	grep -q "^late phase=Failed .*deadline=1" out
'

test_expect_success 'an image that is not there: the pod is reported stuck with the reason' '
	probe run --image htc-no-such-image:1 noimg=true >out 2>err
	cat out err
	grep -q "^noimg phase=Pending exit=-1 reason=ErrImageNeverPull oom=0 deadline=0 stuck=1" out
	grep -q "^noimg message=.*htc-no-such-image:1" out
'

pod_running() {
	"$PROBE" --kubeconfig "$KC" get slow 2>/dev/null | grep -q "phase=Running"
}

test_expect_success 'the watch resumes across an apiserver restart and misses nothing' '
	probe run --label restart slow="sleep 6; exit 4" >out 2>err &
	p=$!
	test_track_pid $p
	test_wait_until 60 pod_running
	k8s_restart_apiserver || exit 1
	wait $p
	cat out err
	grep -q "^slow phase=Failed exit=4 reason=Error" out
	# one stream before the restart, at least one after, resumed from the last version (or
	# listed again when that version was gone from the new apiserver: 410)
	resumed=$(sed -n "s/^watch streams=[0-9]* resumed=\([0-9]*\).*/\1/p" out)
	[ "$resumed" -ge 1 ]
	[ $(grep -c "^slow phase=" out) = 1 ]
'

test_expect_success 'a watch from a version that is gone (410) lists again' '
	# a fresh apiserver keeps no history older than its start: version 1 is gone
	probe watch --selector htc-probe=nothing --from 1 --count 1 >out 2>err
	cat out err
	grep -q "^RELISTED 0" out
	grep -q "relisted=1" out
'

test_expect_success 'service-account credentials (in-cluster form) reach the API' '
	mkdir sa
	k8s_api -X POST -H "Content-Type: application/json" \
		-d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{}}" \
		/api/v1/namespaces/default/serviceaccounts/default/token >tr.json
	python3 -c "import json; print(json.load(open(\"tr.json\"))[\"status\"][\"token\"])" >sa/token
	cp "$K8S_HOME/conf/ca.crt" sa/ca.crt
	echo default >sa/namespace
	KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=6443 \
		"$PROBE" --in-cluster "$PWD/sa" run sa="echo in cluster" >out 2>err
	cat out err
	grep -q "^sa phase=Succeeded exit=0" out
'

test_expect_success 'a wrong token: one message naming the call and quoting the server' '
	k8s_kubeconfig bad.kc "token: not-the-token"
	test_must_fail "$PROBE" --kubeconfig "$PWD/bad.kc" list >out 2>err
	cat err
	[ $(wc -l <err) = 1 ]
	grep -q "^probe: kubernetes GET /api/v1/namespaces/default/pods: 401 Unauthorized: Unauthorized (credentials of $PWD/bad.kc, user \"htc-user\")$" err
'

test_expect_success 'an unknown namespace: the server message, no pod left' '
	test_must_fail probe --namespace htc-nosuch run x=true >out 2>err
	cat err
	[ $(wc -l <err) = 1 ]
	grep -q "^probe: kubernetes POST /api/v1/namespaces/htc-nosuch/pods: 404 NotFound: namespaces \"htc-nosuch\" not found$" err
'

test_expect_success 'a CA that did not sign the server: a TLS error naming the call' '
	openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.crt -days 1 \
		-subj /CN=other 2>/dev/null
	sed "s|certificate-authority: .*|certificate-authority: $PWD/other.crt|" "$KC" >other.kc
	test_must_fail "$PROBE" --kubeconfig other.kc list 2>err
	cat err
	grep -q "^probe: kubernetes GET /api/v1/namespaces/default/pods: TLS with https://127.0.0.1:6443 failed" err
'

test_expect_success 'an unreachable apiserver: a clear message once the retries give up, no hang' '
	# no hang: the time limit of each case fails a call that never returns
	sed "s|https://127.0.0.1:6443|https://127.0.0.1:6999|" "$KC" >far.kc
	test_must_fail "$PROBE" --kubeconfig far.kc --retry-ms 3000 list 2>err
	cat err
	grep -q "^probe: kubernetes GET /api/v1/namespaces/default/pods: cannot reach https://127.0.0.1:6999: .*(gave up after [0-9]* tries" err
	# a watch too gives up, after give-up-ms without an answer
	test_must_fail "$PROBE" --kubeconfig far.kc --give-up-ms 2000 watch --from 5 --count 1 2>err
	cat err
	grep -q "cannot reach https://127.0.0.1:6999.*the watch gave up after" err
'

MF=$BIN/makeflow
export OMPI_MCA_ess_singleton_isolated=1
mfk() { "$MF" -T k8s --batch-option "kubeconfig=$KC" --batch-option pull-policy=Never "$@"; }
# all_pods_gone: no pod at all in the default namespace.
all_pods_gone() {
	"$PROBE" --kubeconfig "$KC" list | grep -q "^0 pods"
}

test_expect_success 'makeflow -T k8s: 50 rules, one pod each, outputs on the shared file system, pods deleted' '
	{
		all=""
		for i in $(seq 1 49); do
			echo "out.$i: "
			echo "	echo rule $i > out.$i"
			all="$all out.$i"
		done
		echo "all.txt:$all"
		echo "	cat$all > all.txt"
	} >Makeflow
	s=$SECONDS
	mfk --k8s-image busybox:local >mf.out 2>&1 || { cat mf.out; exit 1; }
	grep -v ETA mf.out
	echo "50 rules in $((SECONDS - s)) s"
	[ $(wc -l <all.txt) = 49 ]
	grep -q "^rule 49$" all.txt
	test_wait_until 60 all_pods_gone
'

test_expect_success 'makeflow -T k8s: a failing rule reports its exit code and log tail; out of memory is exhaustion' '
	wf Makeflow <<-EOF
	bad.txt:
	    echo reading the input; echo it is not there >&2; exit 7
	.MAKEFLOW CATEGORY hog
	.MAKEFLOW MEMORY 32
	hog.txt:
	    memhog 200 > hog.txt
	EOF
	test_must_fail mfk --k8s-image busybox:local >mf.out 2>&1
	cat mf.out
	grep -q "rule 0: exit code 7" mf.out
	# and the last lines of its log (stdout and stderr), read before the pod is deleted
	grep -q "k8s pod default/htc-[0-9a-f]*-[0-9]* failed" mf.out
	grep -q "the last lines it wrote:" mf.out
	grep -q "  | reading the input" mf.out
	grep -q "  | it is not there" mf.out
	grep -q "rule 1: exceeded its resource allocation (memory 32 MB)" mf.out
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s: an image that is not there fails the rule with the reason' '
	printf "x.txt:\n\techo x > x.txt\n" >Makeflow
	test_must_fail mfk --k8s-image htc-no-such:1 >mf.out 2>&1
	cat mf.out
	grep -q "ErrImageNeverPull: Container image \"htc-no-such:1\" is not present" mf.out
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s: BATCH_OPTIONS image=IMAGE sets the image of a category; other words are refused' '
	wf Makeflow <<-EOF
	good.txt:
	    echo good > good.txt
	.MAKEFLOW CATEGORY other
	BATCH_OPTIONS=image=htc-other:2
	other.txt:
	    echo other > other.txt
	BATCH_OPTIONS=priority=high
	bad.txt:
	    echo bad > bad.txt
	EOF
	test_must_fail mfk --k8s-image busybox:local >mf.out 2>&1
	cat mf.out
	[ "$(cat good.txt)" = good ]
	grep -q "ErrImageNeverPull: Container image \"htc-other:2\" is not present" mf.out
	grep -q "batch options .priority=high.: -T k8s takes image=IMAGE there, not .priority=high." mf.out
	[ ! -e other.txt ] && [ ! -e bad.txt ]
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s: an unknown namespace or no image stops the run before anything runs' '
	printf "x.txt:\n\techo x > x.txt\n" >Makeflow
	test_must_fail mfk --k8s-image busybox:local --k8s-namespace htc-nope >mf.out 2>&1
	cat mf.out
	grep -q "kubernetes GET /api/v1/namespaces/htc-nope: 404 NotFound: namespaces \"htc-nope\" not found" mf.out
	grep -q "nothing was run" mf.out
	test_must_fail mfk >mf.out 2>&1
	cat mf.out
	grep -q "no image" mf.out
	[ ! -e x.txt ]
	# an apiserver nobody answers for: the retries give up, the message names it
	sed "s|https://127.0.0.1:6443|https://127.0.0.1:6999|" "$KC" >far.kc
	test_must_fail "$MF" -T k8s --batch-option "kubeconfig=$PWD/far.kc" --k8s-image busybox:local >mf.out 2>&1
	cat mf.out
	grep -q "k8s: kubernetes GET /api/v1/namespaces/default: cannot reach https://127.0.0.1:6999: .*gave up after" mf.out
	[ ! -e x.txt ]
	test_must_fail "$MF" --k8s-image busybox:local 2>err
	grep -q "^makeflow: error: --k8s-image: this option needs -T k8s (the batch type is local)" err
'

# rule_pod_running: a pod of the run is Running.
rule_pod_running() {
	k8s_api "/api/v1/namespaces/default/pods" | grep -q "\"phase\": \"Running\""
}

test_expect_success 'makeflow -T k8s: an interrupt deletes the pods of the run' '
	printf "slow.txt:\n\tsleep 100; echo late > slow.txt\n" >Makeflow
	"$MF" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local >mf.out 2>&1 &
	m=$!
	test_track_pid $m
	test_wait_until 60 rule_pod_running
	kill -INT $m
	rc=0
	wait $m || rc=$?
	cat mf.out
	[ $rc != 0 ]
	test_wait_until 30 all_pods_gone
	[ ! -e slow.txt ]
'

test_expect_success 'makeflow -T k8s: an apiserver restart in the middle loses nothing and runs nothing twice' '
	{
		for i in 1 2 3 4 5 6; do
			echo "out.$i: "
			echo "	echo $i >> runs.log; sleep 3; echo $i > out.$i"
		done
	} >Makeflow
	"$MF" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local >mf.out 2>&1 &
	m=$!
	test_track_pid $m
	test_wait_until 60 rule_pod_running
	k8s_restart_apiserver || exit 1
	rc=0
	wait $m || rc=$?
	grep -v ETA mf.out
	[ $rc = 0 ]
	for i in 1 2 3 4 5 6; do [ "$(cat out.$i)" = $i ]; done
	[ $(sort runs.log | uniq | wc -l) = 6 ]
	[ $(wc -l <runs.log) = 6 ]
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s: a rule out of memory at its first allocation runs again at the maximum' '
	# sized rules run under resource_monitor: an image that holds it at its path here
	"$BIN/htc_worker_image" --program "$BIN/resource_monitor" --add "$BIN/resource_monitor" \
		--name htc-rm:local -o rm.tar --import --address "$K8S_HOME/run/containerd.sock" >img.out 2>&1 ||
		{ cat img.out; exit 1; }
	# 25 measurements of 40 MB give a first allocation far below the category maximum
	for i in $(seq 1 25); do
		echo "{\"category\": \"big\", \"exit_type\": \"normal\", \"exit_status\": 0, \"memory\": [40, \"MB\"], \"cores\": [1, \"cores\"], \"wall_time\": [1, \"s\"]}"
	done >seeds
	wf Makeflow <<-EOF
	CATEGORY=big
	MEMORY=800
	out:
	    dd if=/dev/zero of=/dev/null bs=400M count=1 && echo done > out
	EOF
	mfk --k8s-image htc-rm:local --allocation waste --allocation-seed seeds \
		--summary-json summary.json >mf.out 2>&1 || { cat mf.out; exit 1; }
	grep -v ETA mf.out
	grep -q "running it again with the maximum" mf.out
	[ "$(cat out)" = done ]
	python3 -c "
import json
c = [c for c in json.load(open(\"summary.json\"))[\"categories\"] if c[\"name\"] == \"big\"][0]
assert c[\"exhaustions\"] == 1 and c[\"retries\"] == 1 and c[\"done\"] == 1, c"
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s: max-jobs bounds the pods of the run not yet finished' '
	{
		all=""
		for i in 1 2 3 4 5 6; do
			echo "out.$i: "
			echo "	mkdir -p running; touch running/$i; ls running | wc -l >> counts; sleep 3; rm running/$i; echo $i > out.$i"
			all="$all out.$i"
		done
	} >Makeflow
	mfk --k8s-image busybox:local --batch-option max-jobs=2 >mf.out 2>&1 || { cat mf.out; exit 1; }
	cat counts
	[ $(wc -l <counts) = 6 ]
	[ "$(sort -n counts | tail -1)" -le 2 ]
	test_wait_until 30 all_pods_gone
'

# parked_pods N: N pods of makeflow runs are Running (they wait for the file "go").
parked_pods() {
	[ "$(k8s_api "/api/v1/namespaces/default/pods?labelSelector=htc-run" |
		grep -c "\"phase\": \"Running\"")" = "$1" ]
}
# parked_workflow: two rules whose pods wait (up to 300 s) until the file go exists.
parked_workflow() {
	rm -f go
	for i in 1 2; do
		echo "p.$i: "
		echo "	while [ ! -e go ]; do sleep 0.2; done; echo $i > p.$i"
	done >Makeflow
}

test_expect_success 'makeflow -T k8s: after kill -9, a restart deletes the pods of the dead run and completes' '
	parked_workflow
	"$MF" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local >mf1.out 2>&1 &
	m=$!
	test_track_pid $m
	test_wait_until 60 parked_pods 2
	old=$(awk "\$1 == \"S\" { id = \$5 } END { print id }" Makeflow.makeflowlog)
	[ ${#old} = 32 ]
	kill -9 $m
	wait $m || true
	# the dead run left its pods
	parked_pods 2
	touch go
	mfk --k8s-image busybox:local -d batch >mf2.out 2>&1 || { cat mf1.out mf2.out; exit 1; }
	cat mf2.out | grep -v ETA | grep -i "k8s\|earlier\|run" | head -20
	grep -q "pods of the earlier run $old deleted" mf2.out
	[ "$(cat p.1)" = 1 ] && [ "$(cat p.2)" = 2 ]
	k8s_api "/api/v1/namespaces/default/pods?labelSelector=htc-run%3D$old" | grep -q "\"items\": \[\]"
	test_wait_until 30 all_pods_gone
'

test_expect_success 'makeflow -T k8s -c deletes the pods that a run killed with -9 left (no image needed)' '
	parked_workflow
	rm -f Makeflow.makeflowlog
	"$MF" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local >mf1.out 2>&1 &
	m=$!
	test_track_pid $m
	test_wait_until 60 parked_pods 2
	kill -9 $m
	wait $m || true
	parked_pods 2
	"$MF" -T k8s --batch-option "kubeconfig=$KC" -c >clean.out 2>&1 || { cat clean.out; exit 1; }
	cat clean.out
	grep -q "2 pods of the earlier run [0-9a-f]* deleted" clean.out
	all_pods_gone
	# the pods are asked for by their run: another kubeconfig that cannot be read fails -c
	parked_workflow
	"$MF" -T k8s --batch-option "kubeconfig=$KC" --k8s-image busybox:local >mf1.out 2>&1 &
	m=$!
	test_track_pid $m
	test_wait_until 60 parked_pods 2
	kill -9 $m
	wait $m || true
	test_must_fail "$MF" -T k8s --batch-option kubeconfig=/nonexistent.kc -c >clean.out 2>&1
	cat clean.out
	grep -q "could not be stopped" clean.out
	# the log that names the run is kept, so a later -c finds the pods
	grep -q "the transaction log is kept" clean.out
	[ -e Makeflow.makeflowlog ]
	"$MF" -T k8s --batch-option "kubeconfig=$KC" -c >clean.out 2>&1 || { cat clean.out; exit 1; }
	cat clean.out
	grep -q "2 pods of the earlier run [0-9a-f]* deleted" clean.out
	all_pods_gone
'

test_expect_success 'stopped: no process, mount, cgroup, bridge or tunable left behind' '
	k8s_stop || true # (called in a list: the library is not written for set -e)
	for d in $K8S_DAEMONS; do
		[ ! -f "$K8S_HOME/pids/$d.pid" ]
	done
	k8s_host_state >host.after
	diff "$TEST_ROOT/host.before" host.after
	not pgrep -f "containerd-shim-runc-v2 .*-address $K8S_HOME/run/containerd.sock"
	[ ! -e /run/htc-k8s-cluster.owner ]
'
say "# suite time $((SECONDS - t0)) s after the build"

test_done
