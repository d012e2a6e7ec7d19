#!/bin/bash
# 38-seccomp.sh: end-to-end tests of the seccomp profiles (doc/seccomp.md): a task that tries
# each refused call gets EPERM and the summary names every call, under resource_monitor
# --seccomp, makeflow -T local/cgroups --seccomp, and through a real work_queue_worker (against
# the scripted fake master, and under makeflow -T wq); ordinary
# work (a compiler, Python, a shell pipeline) runs unaffected; the nonet profile refuses an
# AF_INET socket and allows an AF_UNIX one; without a profile nothing is refused or listed.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin work_queue_worker resource_monitor makeflow
MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
FAKE=$BUILD/work_queue/test/helper_fake_master
HELPER=$BUILD/resource_monitor/test/helper_seccomp
[ -x "$FAKE" ] && [ -x "$HELPER" ] || test_skip_all "helpers are not built (make tests)"
export HTC_SECCOMP_HELPER=$HELPER
DENIED="mount umount2 init_module delete_module kexec_load setns unshare bpf perf_event_open
keyctl add_key reboot swapon settimeofday clock_settime acct syslog userfaultfd ptrace
open_by_handle_at clone"

command -v python3 >/dev/null || test_skip_all "python3 is needed (the ordinary work and JSON)"

# denied FILE: the summary's seccomp_denied list, one line of names ("" when absent).
denied() {
	python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1])).get("seccomp_denied", [])))' "$1"
}

# fake SCRIPT: start the fake master; sets FAKE_PID and FAKE_PORT.
fake() {
	test_daemon_start port "$FAKE" "$1" port
	FAKE_PID=$DAEMON_PID
	FAKE_PORT=$DAEMON_PORT
}

# worker ARGS...: run the worker (bounded) against the fake; its status is in WRC.
worker() {
	WRC=0
	timeout 60 "$BIN/work_queue_worker" -s "$PWD/wd" "$@" >worker.log 2>&1 || WRC=$?
	cat worker.log
}

# fake_ok: the fake master ended with every check passed.
fake_ok() {
	local rc=0
	wait "$FAKE_PID" || rc=$?
	cat daemon.1.log
	[ "$rc" = 0 ] && not grep -q "^not ok" daemon.1.log
}

test_expect_success 'resource_monitor --seccomp default: each refused call gets EPERM and is listed' '
	"$BIN/resource_monitor" --seccomp default -O out -- "$HELPER" denied >task.log
	cat task.log
	not grep -q allowed task.log
	for c in $DENIED; do
		grep -qx "$c: EPERM" task.log
	done
	[ "$(denied out.summary)" = "$(echo $DENIED)" ]
'

test_expect_success 'resource_monitor without --seccomp: nothing is listed' '
	"$BIN/resource_monitor" -O out -- "$HELPER" denied >task.log || true
	cat task.log
	grep -q allowed task.log
	[ -z "$(denied out.summary)" ]
'

test_expect_success 'ordinary work runs unaffected under every profile' '
	printf "int f(void) { return 1; }\n" >a.c
	for p in default strict nonet; do
		rm -f a.o
		"$BIN/resource_monitor" --seccomp $p -O out.$p --sh \
			"cc -c a.c && python3 -c \"import json; print(json.dumps([1]))\" && seq 1 1000 | sort -rn | head -1" >task.$p.log
		cat task.$p.log
		[ -s a.o ] && grep -qx "\[1\]" task.$p.log && grep -qx 1000 task.$p.log
		grep -q "\"exit_status\": 0" out.$p.summary
		[ -z "$(denied out.$p.summary)" ]
	done
'

test_expect_success 'nonet refuses an AF_INET socket and allows AF_UNIX' '
	"$BIN/resource_monitor" --seccomp nonet -O out -- "$HELPER" net >task.log
	cat task.log
	grep -qx "socket(AF_INET): EPERM" task.log
	grep -qx "socket(AF_UNIX): ok" task.log
	[ "$(denied out.summary)" = socket ]
	"$BIN/resource_monitor" --seccomp default -O out2 -- "$HELPER" net >task2.log || true
	grep -q "socket(AF_INET): allowed" task2.log
'

test_expect_success 'strict refuses ptrace and chroot as well' '
	"$BIN/resource_monitor" --seccomp strict -O out --sh "chroot / true; true" >task.log 2>&1
	cat task.log
	[ "$(denied out.summary)" = chroot ]
'

test_expect_success 'resource_monitor --seccomp with an unknown profile: a clear error' '
	rc=0; "$BIN/resource_monitor" --seccomp lax -- true 2>err.log || rc=$?
	cat err.log
	[ $rc != 0 ]
	grep -q -- "--seccomp .lax.: expected default, strict, nonet or off" err.log
'

test_expect_success 'worker (default profile): the task gets EPERM and task_done names each call; ordinary work runs' '
	fake seccomp
	worker 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "ok.*seccomp_denied names open_by_handle_at" daemon.1.log
	grep -q "ok.*ordinary work exits 0 with nothing refused" daemon.1.log
'

test_expect_success 'worker --seccomp nonet: the task is refused AF_INET, allowed AF_UNIX' '
	fake seccompnet
	worker --seccomp nonet 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "ok.*seccomp_denied is" daemon.1.log
'

test_expect_success 'worker --seccomp with an unknown profile exits 1 naming it' '
	worker --seccomp lax 127.0.0.1 9
	[ $WRC = 1 ]
	grep -q -- "--seccomp: \"lax\" is not a profile" worker.log
'

# mf: a workflow of a rule that tries the refused calls and an ordinary one.
mf() {
	printf 'out.txt:\n\t%s denied > out.txt\n\nok.txt:\n\techo hi | tr a-z A-Z > ok.txt\n' \
		"$HELPER" >wf
}

test_expect_success 'makeflow -T local --seccomp default: refused calls get EPERM and are named' '
	mf
	"$BIN/makeflow" -T local --seccomp default wf >mf.log 2>&1
	cat mf.log
	not grep -q allowed out.txt
	grep -qx HI ok.txt
	grep -q "wf:1: rule 0: system calls refused by seccomp: $(echo $DENIED | sed "s/ /, /g")\$" mf.log
	[ "$(grep -c "refused by seccomp" mf.log)" = 1 ]
'

test_expect_success 'makeflow -T local without --seccomp runs jobs unfiltered' '
	mf
	"$BIN/makeflow" -T local wf >mf.log 2>&1 || true
	cat mf.log
	cat out.txt makeflow.failed.*/out.txt 2>/dev/null | grep -q allowed
	not grep -q "refused by seccomp" mf.log
'

if [ -w /sys/fs/cgroup/memory ] || grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	test_expect_success 'makeflow -T cgroups --seccomp nonet: refused calls are named' '
		printf "o.txt:\n\t%s net > o.txt\n" "$HELPER" >wf
		"$BIN/makeflow" -T cgroups --seccomp nonet wf >mf.log 2>&1
		cat mf.log o.txt
		grep -qx "socket(AF_INET): EPERM" o.txt
		grep -q "rule 0: system calls refused by seccomp: socket\$" mf.log
	'
fi

test_expect_success 'makeflow -T wq with a real worker: the rule names the calls its worker refused' '
	mf
	start_master wf
	start_worker -s "$PWD/wd" --cores 1 localhost $port
	finish
	not grep -q allowed out.txt
	grep -qx HI ok.txt
	grep -q "wf:1: rule 0: system calls refused by seccomp: $(echo $DENIED | sed "s/ /, /g")\$" mf.out
	[ "$(grep -c "refused by seccomp" mf.out)" = 1 ]
'

test_expect_success 'makeflow --seccomp: an unknown profile, or -T wq, is refused before anything runs' '
	mf
	rc=0; "$BIN/makeflow" --seccomp lax wf >mf.log 2>&1 || rc=$?
	cat mf.log
	[ $rc = 1 ] && [ ! -e out.txt ]
	grep -q -- "--seccomp .lax.: expected default, strict, nonet or off" mf.log
	rc=0; "$BIN/makeflow" -T wq --seccomp default wf >mf.log 2>&1 || rc=$?
	cat mf.log
	[ $rc != 0 ] && [ ! -e out.txt ]
	grep -q "seccomp=default: the wq batch type has no option seccomp" mf.log
'

# seccomp_mode PID: the Seccomp line of the process's status (0 none, 2 filtered).
seccomp_mode() {
	awk '$1 == "Seccomp:" { print $2 }' /proc/$1/status
}

test_expect_success 'catalog_server locks itself down once listening (not with --no-seccomp)' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	[ "$(seccomp_mode $DAEMON_PID)" = 2 ]
	"$BIN/catalog_update" --http -C 127.0.0.1:$DAEMON_PORT - <<<"{\"type\":\"t\",\"name\":\"n\",\"port\":1}"
	test_daemon_start cport2 "$BIN/catalog_server" -p 0 -Z cport2 --no-seccomp
	[ "$(seccomp_mode $DAEMON_PID)" = 0 ]
'

test_expect_success 'the worker locks itself down after its setup (not with --seccomp off)' '
	"$BIN/work_queue_worker" -s "$PWD/wd" --connect-timeout 60 127.0.0.1 1 >w.log 2>&1 &
	W=$!
	test_track_pid $W
	test_wait_until 20 grep -q "Seccomp:[[:space:]]*2" /proc/$W/status
	# every thread, also those started before the filter (libuv thread pool)
	[ "$(ls /proc/$W/task | wc -l)" -gt 1 ]
	for t in /proc/$W/task/*; do grep -q "Seccomp:[[:space:]]*2" $t/status; done
	kill $W; wait $W || true
	"$BIN/work_queue_worker" -s "$PWD/wd2" --seccomp off --connect-timeout 60 127.0.0.1 1 >w2.log 2>&1 &
	W=$!
	test_track_pid $W
	test_wait_until 20 test -d wd2
	[ "$(seccomp_mode $W)" = 0 ]
	kill $W; wait $W || true
'

test_done
