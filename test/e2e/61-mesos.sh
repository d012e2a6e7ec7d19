#!/bin/bash
# 61-mesos.sh: makeflow -T mesos and work_queue_factory -T mesos against the Mesos master
# simulator (test/mesos/mesos_sim.py; Apache Mesos is in the Attic and cannot run here), which
# validates every call strictly, runs the launched tasks on this machine and logs every call:
# a 20-rule workflow, offers too small declined, a failing rule's exit code, a memory-limit kill
# as exhaustion and the retry at the maximum, a dropped stream (re-subscription, reconcile, no
# task launched twice), heartbeats that stop, an ERROR event, a malformed stream, a refused
# call, an unreachable master, a restart after kill -9 killing the old run's tasks, -c,
# Work Queue workers started by the factory as Mesos tasks, a rule's WALL_TIME as the task's
# max_completion_time, a master that redirects to the leader (and a redirect loop), and
# framework authentication (makeflow and the factory).
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow work_queue_factory work_queue_worker
command -v python3 >/dev/null || test_skip_all "python3 is not installed"

MF=$BIN/makeflow
SIM=$TEST_SRCDIR/test/mesos/mesos_sim.py
TEST_TIMEOUT=180

# sim_start [ARGS...]: starts the simulator (agents, heartbeat...) in the case's directory;
# sets MASTER (127.0.0.1:PORT).
sim_start() {
	test_daemon_start sim.port python3 "$SIM" --port-file sim.port --log calls.log \
		--work "$PWD/sim" "$@" || return 1
	MASTER=127.0.0.1:$DAEMON_PORT
}
# knob NAME [QUERY]: turns a fault injection knob of the simulator.
knob() {
	curl -sf -X POST "http://$MASTER/sim/$1${2:+?$2}" >/dev/null
}
# calls TYPE: how many calls of TYPE the simulator received.
calls() {
	python3 -c '
import json, sys
n = 0
for l in open("calls.log"):
    r = json.loads(l)
    if r["call"] and r["call"]["type"] == sys.argv[1]:
        n += 1
print(n)' "$1"
}
# launched: the task ids of every LAUNCH, one a line, in order.
launched() {
	python3 -c '
import json
for l in open("calls.log"):
    r = json.loads(l)
    c = r["call"]
    if c and c["type"] == "ACCEPT" and r["status"] == 202:
        for op in c["accept"].get("operations", []):
            for t in op["launch"]["task_infos"]:
                print(t["task_id"]["value"])'
}
# refused: calls the simulator did not accept (status >= 400), one a line.
refused() {
	python3 -c '
import json
for l in open("calls.log"):
    r = json.loads(l)
    if r["status"] >= 400:
        print(r["status"], r.get("answer", ""))'
}
# refused_for_credentials: some call was refused for its credentials (401).
refused_for_credentials() {
	refused | grep -q "^401"
}
# running_is N: the simulator has exactly N tasks running.
running_is() {
	[ "$(curl -sf "http://$MASTER/sim/state" | python3 -c '
import json, sys
print(sum(f["running"] for f in json.load(sys.stdin).values()))')" = "$1" ]
}
# at_least N TYPE: the simulator received at least N calls of TYPE.
at_least() {
	[ "$(calls "$2")" -ge "$1" ]
}
run_id() {
	awk '$1 == "S" && NF >= 5 { id = $5 } END { print id }' "$1"
}
# wait_wf: a rule that waits for the file go.
wait_wf() {
	printf "a.txt:\n\techo a > a.txt\nb.txt: a.txt\n\tuntil test -e go; do sleep 0.05; done; echo b > b.txt\n" >wf.mf
}
rule_complete() {
	grep -qs "^N [0-9]* $2 3 " "$1"
}

test_expect_success 'a 20-rule workflow runs as Mesos tasks named after the run; every call is accepted' '
	sim_start --agent a1:cpus=4,mem=4096,disk=4096 --agent a2:cpus=2,mem=2048,disk=1024
	{
		for i in $(seq 1 20); do
			printf "out.%d: \n\techo rule %d > out.%d\n" $i $i $i
		done
		printf "all.txt: %s\n\tcat %s > all.txt\n" "$(echo out.{1..20})" "$(echo out.{1..20})"
	} >wf.mf
	"$MF" -T mesos --mesos-master $MASTER wf.mf
	[ $(wc -l <all.txt) = 20 ]
	grep -qx "rule 7" all.txt
	id=$(run_id wf.mf.makeflowlog)
	[ "$(launched | wc -l)" = 21 ]
	[ "$(launched | grep -c "^htc-$id-[0-9]*$")" = 21 ]
	[ -z "$(refused)" ]
	[ "$(calls SUBSCRIBE)" = 1 ]
	[ "$(calls TEARDOWN)" = 1 ]
	[ "$(calls ACKNOWLEDGE)" -ge 42 ]
	[ ! -e .htc-mesos ]
	# the wrapper removed the TMPDIR it made in each task sandbox
	[ -z "$(find sim/sandboxes -name tmp)" ]
'

test_expect_success 'an offer too small is declined with a filter; the rule runs on an agent it fits' '
	sim_start --agent small:cpus=1,mem=100,disk=100 --agent big:cpus=2,mem=2000,disk=2000
	printf ".MAKEFLOW MEMORY 500\nm.txt:\n\techo \$MEMORY > m.txt\n" >wf.mf
	"$MF" -T mesos --mesos-master $MASTER --batch-option refuse-seconds=30 wf.mf
	[ "$(cat m.txt)" = 500 ]
	python3 -c "
import json
dec = acc = 0
for l in open(\"calls.log\"):
    c = json.loads(l)[\"call\"]
    if c and c[\"type\"] == \"DECLINE\":
        assert c[\"decline\"][\"filters\"][\"refuse_seconds\"] == 30
        dec += 1
    if c and c[\"type\"] == \"ACCEPT\":
        t = c[\"accept\"][\"operations\"][0][\"launch\"][\"task_infos\"][0]
        assert t[\"agent_id\"][\"value\"] == \"agent-big\", t
        assert {r[\"name\"]: r[\"scalar\"][\"value\"] for r in t[\"resources\"]}[\"mem\"] == 500
        acc += 1
assert dec >= 1 and acc == 1, (dec, acc)
"
'

test_expect_success 'an offer rescinded before its ACCEPT arrives: the task is dropped, the rule runs as a new task' '
	sim_start
	knob rescind-before-accept
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	"$MF" -T mesos --mesos-master $MASTER wf.mf 2>err || { cat err; false; }
	[ -s a.txt ]
	[ "$(launched | wc -l)" = 2 ]
	[ -z "$(launched | sort | uniq -d)" ]
	[ -z "$(refused)" ]
'

test_expect_success 'a failing rule reports its exit code; completed rules are kept' '
	sim_start
	printf "ok.txt:\n\techo ok > ok.txt\nbad.txt: ok.txt\n\texit 7\n" >wf.mf
	test_must_fail "$MF" -T mesos --mesos-master $MASTER wf.mf 2>err
	cat err
	grep -q "exit code 7" err
	[ -s ok.txt ]
'

test_expect_success 'a rule over its memory is killed by the agent and reported as exhausted' '
	sim_start --agent a1:cpus=2,mem=4096,disk=1000
	printf ".MAKEFLOW CATEGORY big\n.MAKEFLOW MEMORY 50\nm.txt:\n\thead -c 400M /dev/zero | tail >/dev/null; echo done > m.txt\n" >wf.mf
	test_must_fail "$MF" -T mesos --mesos-master $MASTER wf.mf 2>err
	cat err
	grep -q "REASON_CONTAINER_LIMITATION_MEMORY" err
	grep -q "exceeded its resource allocation (memory 50 MB)" err
'

test_expect_success 'a rule over its WALL_TIME: max_completion_time in its TaskInfo, stopped by the agent, reported as exhausted' '
	sim_start
	printf ".MAKEFLOW CATEGORY slow\n.MAKEFLOW WALL_TIME 2\nt.txt:\n\tsleep 600\n" >wf.mf
	test_must_fail "$MF" -T mesos --mesos-master $MASTER wf.mf 2>err
	cat err
	grep -q "REASON_MAX_COMPLETION_TIME_REACHED" err
	grep -q "exceeded its wall time limit" err
	python3 -c "
import json
for l in open(\"calls.log\"):
    c = json.loads(l)[\"call\"]
    if c and c[\"type\"] == \"ACCEPT\":
        t = c[\"accept\"][\"operations\"][0][\"launch\"][\"task_infos\"][0]
        assert t[\"max_completion_time\"] == {\"nanoseconds\": 2000000000}, t
"
	[ -z "$(refused)" ]
'

test_expect_success 'a rule over its first allocation is retried at the maximum and completes' '
	sim_start --agent a1:cpus=2,mem=4096,disk=1000
	for i in $(seq 1 25); do
		printf "{\"category\": \"big\", \"exit_type\": \"normal\", \"exit_status\": 0, "
		printf "\"memory\": [40, \"MB\"], \"cores\": [1, \"cores\"], \"wall_time\": [1, \"s\"]}\n"
	done >seeds
	printf "CATEGORY=big\nMEMORY=2000\nout:\n\thead -c 400M /dev/zero | tail >/dev/null && echo ok > out\n" >wf.mf
	"$MF" -T mesos --mesos-master $MASTER --allocation waste --allocation-seed seeds wf.mf 2>err || { cat err; false; }
	cat err
	grep -q "running it again with the maximum (cores -1, memory 2000 MB" err
	[ -s out ]
	[ "$(launched | wc -l)" = 2 ]
'

test_expect_success 'the stream dropped mid-run: subscribe again as the framework, reconcile, no task launched twice' '
	sim_start
	wait_wf
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 running_is 1
	# the updates so far are acknowledged (a.txt: 3, b.txt: 2), so no call is in flight
	test_wait_until 60 at_least 5 ACKNOWLEDGE
	knob drop-stream
	test_wait_until 60 at_least 2 SUBSCRIBE
	test_wait_until 60 at_least 1 RECONCILE
	touch go
	wait $mf || { cat mf.out; false; }
	cat mf.out
	[ -s b.txt ]
	grep -q "subscribing again as framework" mf.out
	[ -z "$(launched | sort | uniq -d)" ]
	[ "$(launched | wc -l)" = 2 ]
	python3 -c "
import json
subs = [json.loads(l) for l in open(\"calls.log\")]
subs = [r[\"call\"] for r in subs if r[\"call\"] and r[\"call\"][\"type\"] == \"SUBSCRIBE\"]
fid = subs[1][\"subscribe\"][\"framework_info\"][\"id\"][\"value\"]
assert subs[1][\"framework_id\"][\"value\"] == fid
assert \"id\" not in subs[0][\"subscribe\"][\"framework_info\"]
"
	[ -z "$(refused)" ]
'

test_expect_success 'heartbeats stop: a clear message naming the master; makeflow exits, no hang' '
	sim_start --heartbeat 0.4
	wait_wf
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 running_is 1
	knob stop-heartbeats
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc = 1 ]
	grep -q "mesos master $MASTER: no heartbeat for 2 s" mf.out
	[ -s a.txt ]
'

test_expect_success 'an ERROR event: a clear message with the master'"'"'s text' '
	sim_start
	wait_wf
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 running_is 1
	knob error "message=Framework+has+been+removed"
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc = 1 ]
	grep -q "mesos master $MASTER: ERROR event: Framework has been removed" mf.out
'

test_expect_success 'a malformed RecordIO stream: a clear message naming the master' '
	sim_start
	wait_wf
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 running_is 1
	knob malformed
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc = 1 ]
	grep -q "mesos master $MASTER: the event stream is malformed: a record length that is not a decimal number" mf.out
'

test_expect_success 'a refused ACCEPT: the job fails quoting the master'"'"'s answer' '
	sim_start
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	MASTER_SET=$MASTER
	# refuse the first ACCEPT; turned before makeflow subscribes
	curl -sf -X POST "http://$MASTER/sim/refuse?call=ACCEPT&status=400&body=Invalid+offers" >/dev/null
	test_must_fail "$MF" -T mesos --mesos-master $MASTER wf.mf 2>err
	cat err
	grep -q "mesos master $MASTER refused ACCEPT: 400: Invalid offers" err
'

test_expect_success 'an unreachable master: a clear message naming it' '
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	port=$(python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])")
	rc=0
	"$MF" -T mesos --mesos-master 127.0.0.1:$port wf.mf 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "mesos master 127.0.0.1:$port: cannot connect: " err
	[ ! -e a.txt ]
'

test_expect_success '-T mesos without --mesos-master, and --mesos-master without -T mesos, are refused' '
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	test_must_fail "$MF" -T mesos wf.mf 2>err1
	grep -q "makeflow: error: -T mesos: no master given: --mesos-master HOST:PORT" err1
	test_must_fail "$MF" --mesos-master 127.0.0.1:1 wf.mf 2>err2
	grep -q "mesos-master: this option needs -T mesos" err2
	test_must_fail "$MF" -T mesos --mesos-master h:1 --mesos-preload x wf.mf 2>err3
	grep -q "mesos-preload: not supported here" err3
	[ ! -e a.txt ]
'

# staging_is N: the simulator has exactly N tasks in TASK_STAGING.
staging_is() {
	[ "$(curl -sf "http://$MASTER/sim/state" | python3 -c '
import json, sys
print(sum(f["staging"] for f in json.load(sys.stdin).values()))')" = "$1" ]
}

# kill_held_run: a simulator whose agent holds the one task of a one-rule run in TASK_STAGING,
# and that run killed with -9 (its run id in old).
kill_held_run() {
	sim_start
	printf "s.txt:\n\techo s > s.txt\n" >wf.mf
	knob hold n=1
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 staging_is 1
	old=$(run_id wf.mf.makeflowlog)
	kill -KILL $mf
	wait $mf || true
}

# The task of the killed run is held in TASK_STAGING by its agent (as while an agent fetches),
# so no process of it runs on this machine: only the driver can find it (makeflow also stops
# local processes of a dead run by their HTC_RUN_ID, which remote agents' tasks never are).
test_expect_success 'a restart after kill -9 kills the tasks the killed run left in Mesos' '
	kill_held_run
	staging_is 1
	"$MF" -T mesos --mesos-master $MASTER wf.mf 2>err || { cat err; false; }
	cat err
	grep -q "killing task htc-$old-1 of the earlier run $old (TASK_STAGING)" err
	grep -q "the tasks of the earlier run $old are gone" err
	[ -s s.txt ]
	python3 -c "
import json
kills = [json.loads(l)[\"call\"] for l in open(\"calls.log\")]
kills = [c[\"kill\"][\"task_id\"][\"value\"] for c in kills if c and c[\"type\"] == \"KILL\"]
assert kills == [\"htc-$old-1\"], kills
"
	[ "$(calls TEARDOWN)" = 2 ]
	[ "$(launched | wc -l)" = 2 ]
	running_is 0
	[ -z "$(refused)" ]
'

test_expect_success 'makeflow -c after kill -9 kills the tasks the killed run left in Mesos' '
	kill_held_run
	"$MF" -T mesos --mesos-master $MASTER -c wf.mf 2>err
	cat err
	grep -q "the tasks of the earlier run $old are gone" err
	running_is 0
	[ "$(calls KILL)" = 1 ]
	[ ! -e s.txt ]
'

test_expect_success 'an interrupt kills the run'"'"'s tasks; makeflow exits' '
	sim_start
	printf "a:\n\tsleep 300\nb:\n\tsleep 300\n" >wf.mf
	"$MF" -T mesos --mesos-master $MASTER wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 running_is 2
	kill -INT $mf
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc != 0 ]
	test_wait_until 60 running_is 0
'

test_expect_success 'a master that is not the leader redirects (307 + Location): the framework follows it to the leader' '
	sim_start
	test_daemon_start follower.port python3 "$SIM" --port-file follower.port --log follower.log \
		--work "$PWD/simf" --redirect-to $MASTER
	follower=127.0.0.1:$DAEMON_PORT
	printf "a.txt:\n\techo a > a.txt\nb.txt: a.txt\n\techo b > b.txt\n" >wf.mf
	"$MF" -T mesos --mesos-master $follower wf.mf 2>err || { cat err; false; }
	cat err
	grep -q "mesos master $follower is not the leading master; following it to $MASTER" err
	[ -s b.txt ]
	# the follower answered one SUBSCRIBE with a redirect; everything else went to the leader
	[ "$(grep -c "\"status\": 307" follower.log)" = 1 ]
	[ "$(wc -l <follower.log)" = 1 ]
	[ "$(calls SUBSCRIBE)" = 1 ]
	[ "$(launched | wc -l)" = 2 ]
	[ "$(calls TEARDOWN)" = 1 ]
	[ -z "$(refused)" ]
'

test_expect_success 'a redirect loop is reported, not followed forever' '
	test_daemon_start loop.port python3 "$SIM" --port-file loop.port --log loop.log \
		--work "$PWD/siml" --redirect-to self
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	test_must_fail "$MF" -T mesos --mesos-master 127.0.0.1:$DAEMON_PORT wf.mf 2>err
	cat err
	grep -q "more than 5 redirects in a row" err
	[ "$(wc -l <loop.log)" = 6 ]
	[ ! -e a.txt ]
'

test_expect_success 'framework authentication: HTTP basic with principal and secret; 401 is a clear error' '
	sim_start --credential htc-fw:s3cret
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	# no credentials: refused, named, makeflow ends
	test_must_fail "$MF" -T mesos --mesos-master $MASTER wf.mf 2>err1
	cat err1
	grep -q "mesos master $MASTER refused SUBSCRIBE: 401 Unauthorized: the master requires authentication" err1
	[ ! -e a.txt ]
	# a wrong secret
	rm -f wf.mf.makeflowlog
	test_must_fail "$MF" -T mesos --mesos-master $MASTER --batch-option principal=htc-fw \
		--batch-option secret=wrong wf.mf 2>err2
	grep -q "401 Unauthorized: the principal .htc-fw. and its secret were not accepted" err2
	# the secret from a file: every call authenticated, the framework carries its principal
	rm -f wf.mf.makeflowlog
	printf "s3cret\n" >secret
	"$MF" -T mesos --mesos-master $MASTER --batch-option principal=htc-fw \
		--batch-option secret-file=$PWD/secret wf.mf 2>err3 || { cat err3; false; }
	[ -s a.txt ]
	python3 -c "
import json
ok = 0
for l in open(\"calls.log\"):
    r = json.loads(l)
    c = r[\"call\"]
    if c and c[\"type\"] == \"SUBSCRIBE\" and r[\"status\"] == 200:
        assert c[\"subscribe\"][\"framework_info\"][\"principal\"] == \"htc-fw\", c
        ok += 1
assert ok == 1, ok
"
	# after the two refused SUBSCRIBE, nothing was refused
	[ "$(refused | grep -vc "^401")" = 0 ]
	[ "$(calls TEARDOWN)" = 1 ]
	test_must_fail "$MF" -T mesos --mesos-master $MASTER --batch-option secret-file=/nonexistent wf.mf 2>err4
	grep -q "cannot read the secret file /nonexistent" err4
'

test_expect_success 'work_queue_factory -T mesos runs workers as Mesos tasks; the tasks complete' '
	sim_start
	for i in 1 2 3 4; do printf "w.%d:\n\techo %d > w.%d\n" $i $i $i; done >wf.mf
	"$MF" -T wq -p 0 -Z port wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file port 20
	"$BIN/work_queue_factory" -T mesos --mesos-master $MASTER --max-workers 2 --period 0.5 -t 10 \
		localhost $(cat port) >factory.out 2>&1 &
	f=$!
	test_track_pid $f
	wait $mf || { cat mf.out factory.out; false; }
	[ -s w.1 ] && [ -s w.4 ]
	launched | grep -q "^htc-[0-9a-f]*-1$"
	kill -TERM $f
	wait $f || true
	test_wait_until 60 running_is 0
	[ -z "$(refused)" ]
'

test_expect_success 'work_queue_factory -T mesos authenticates its framework with --batch-option principal and secret' '
	sim_start --credential wqf:pw2
	for i in 1 2; do printf "w.%d:\n\techo %d > w.%d\n" $i $i $i; done >wf.mf
	"$MF" -T wq -p 0 -Z port wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file port 20
	"$BIN/work_queue_factory" -T mesos --mesos-master $MASTER --batch-option principal=wqf \
		--batch-option secret=pw2 --max-workers 1 --period 0.5 -t 10 localhost $(cat port) \
		>factory.out 2>&1 &
	f=$!
	test_track_pid $f
	wait $mf || { cat mf.out factory.out; false; }
	[ -s w.2 ]
	kill -TERM $f
	wait $f || true
	# no call was refused for its credentials (a KILL of the worker stopped with the factory
	# may reach the master after the TEARDOWN and be refused as "not subscribed": harmless)
	not refused_for_credentials
	[ "$(calls SUBSCRIBE)" -ge 1 ]
	[ "$(calls TEARDOWN)" = 1 ]
'

test_done
