#!/bin/bash
# 31-worker.sh: end-to-end tests of work_queue_worker (doc/work-queue-protocol.md) against a
# scripted fake master (work_queue/test/helper_fake_master, built on the real connection,
# handshake and transfer code): a task with a cached and a per-task input, a bad name, a
# cancel (also one while its output is being sent), a drain, a dismiss and reconnection, a
# shutdown, a memory overrun, garbage after the handshake, a wrong password, no master (said
# at once, exit 4 when never connected), a peer that is no master, a missing port, -M
# through a real catalog, idle timeout, --exit-after-tasks, --single-shot.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin work_queue_worker catalog_server catalog_update
FAKE=$BUILD/work_queue/test/helper_fake_master
[ -x "$FAKE" ] || test_skip_all "$FAKE is not built (make tests)"

# fake SCRIPT [PASSWORD_FILE]: start the fake master; sets FAKE_PID and FAKE_PORT.
fake() {
	test_daemon_start port "$FAKE" "$1" port ${2:+"$2"}
	FAKE_PID=$DAEMON_PID
	FAKE_PORT=$DAEMON_PORT
}

# worker ARGS...: run the worker (bounded) against the fake; its status is in WRC, its
# output in worker.log.
worker() {
	WRC=0
	timeout 40 "$BIN/work_queue_worker" -s "$PWD/wd" "$@" >worker.log 2>&1 || WRC=$?
	cat worker.log
}

# fake_ok: the fake master ended with every check passed.
fake_ok() {
	local rc=0
	wait "$FAKE_PID" || rc=$?
	cat daemon.1.log
	[ "$rc" = 0 ] && not grep -q "^not ok" daemon.1.log
}

for script in task badname cancel cancelsend drain shutdown exhaust; do
	test_expect_success "script $script: the worker passes every check and exits 0" "
		fake $script
		worker 127.0.0.1 \$FAKE_PORT
		fake_ok
		[ \$WRC = 0 ]
	"
done

test_expect_success 'task: cached and per-task inputs, output and stdout come back' '
	fake task
	worker 127.0.0.1 $FAKE_PORT
	fake_ok
	grep -q "output out.txt is TGCA" daemon.1.log
	grep -q "stdout is" daemon.1.log
	[ ! -d wd/cache ] && [ ! -d wd/tasks ]
'

test_expect_success '"HOST:PORT;HOST:PORT" (CCTools form): the masters are tried in turn' '
	fake task
	# nothing listens on port 1: the worker goes on to the fake master
	worker -d worker -o wlist.log "127.0.0.1:1;127.0.0.1:$FAKE_PORT"
	fake_ok
	[ $WRC = 0 ]
	grep -q "connecting to 127.0.0.1:1\$" wlist.log
	grep -q "connecting to 127.0.0.1:$FAKE_PORT\$" wlist.log
'

test_expect_success 'a full disk (--disk 10) refuses a big object and a big task, not small work' '
	fake diskfull
	worker --disk 10 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "refused disk_full" daemon.1.log
'

test_expect_success 'dismiss: bye, then the worker comes back after retry_after' '
	fake dismiss
	worker 127.0.0.1 $FAKE_PORT
	fake_ok
	grep -q "bye received: dismissed" daemon.1.log
	grep -q "cache_have last after capacity (connection 2)" daemon.1.log
	[ $WRC = 0 ]
'

test_expect_success 'garbage after the handshake: error proto, then the worker reconnects' '
	fake garbage
	worker 127.0.0.1 $FAKE_PORT
	fake_ok
	grep -q "protocol violation: malformed message" worker.log
	grep -q "connection 2" daemon.1.log
	[ $WRC = 0 ]
'

test_expect_success 'wrong password: exit 2 with the master text' '
	printf "right\n" >pw.master && printf "wrong\n" >pw.worker
	chmod 600 pw.master pw.worker
	fake refuse pw.master
	worker -P pw.worker 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 2 ]
	grep -q "refused the connection: authentication failed: the worker.s password does not match the master.s" worker.log
'

test_expect_success 'no master: exit 3 after --connect-timeout 2' '
	start=$SECONDS
	worker --connect-timeout 2 127.0.0.1 1
	[ $WRC = 3 ]
	[ $((SECONDS - start)) -ge 2 ]
	grep -q "no master reachable within 2 s" worker.log
'

test_expect_success 'a refused connect is said at once and once; never connected: exit 4' '
	worker --idle-timeout 3 127.0.0.1 1
	[ $WRC = 4 ]
	[ "$(grep -c "master 127.0.0.1:1: connection refused" worker.log)" = 1 ]
	grep -q "idle timeout, without ever connecting to a master" worker.log
'

test_expect_success '--ssl-no-verify warns once, without a doubled "warning:" prefix' '
	worker --ssl --ssl-no-verify --idle-timeout 1 127.0.0.1 1
	[ $WRC = 4 ]
	[ "$(grep -c "TLS certificate is not verified" worker.log)" = 1 ]
	not grep -q "warning: warning:" worker.log
'

test_expect_success 'a peer that is not a master (an HTTP server) is named as such' '
	# the server answers what it cannot read after 1 s, well before the worker ends (5 s)
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport --idle-timeout 1
	worker --idle-timeout 5 127.0.0.1 $DAEMON_PORT
	[ $WRC = 4 ]
	[ "$(grep -c "not a Work Queue master of this project: it answered in text" worker.log)" = 1 ]
	# said once, not a violation line at every attempt
	not grep -q "protocol violation" worker.log
'

test_expect_success 'no port, an empty or a bad port: exit 1 naming it, never a default port' '
	worker 127.0.0.1
	[ $WRC = 1 ]
	grep -q "no port given after \"127.0.0.1\"" worker.log
	worker 127.0.0.1 ""
	[ $WRC = 1 ]
	grep -q "port \"\": must be 1..65535" worker.log
'

test_expect_success '-M PROJECT finds the master through a real catalog' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	CAT=127.0.0.1:$DAEMON_PORT
	test_daemon_start port "$FAKE" task port
	FAKE_PID=$DAEMON_PID
	printf "{\"type\":\"wq_master\",\"project\":\"demo\",\"name\":\"localhost\",\"port\":%s}" \
		"$DAEMON_PORT" | "$BIN/catalog_update" --http -C "$CAT" -
	worker -M demo -C "$CAT"
	rc=0; wait "$FAKE_PID" || rc=$?
	cat daemon.2.log
	[ $rc = 0 ] && not grep -q "^not ok" daemon.2.log
	[ $WRC = 0 ]
'

test_expect_success '-M is a regular expression over the whole project name (as in CCTools)' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	CAT=127.0.0.1:$DAEMON_PORT
	test_daemon_start port "$FAKE" task port
	FAKE_PID=$DAEMON_PID
	# a decoy whose name contains the pattern but is not matched whole, at a dead port
	printf "{\"type\":\"wq_master\",\"project\":\"demonic\",\"name\":\"localhost\",\"port\":1}" |
		"$BIN/catalog_update" --http -C "$CAT" -
	printf "{\"type\":\"wq_master\",\"project\":\"demo\",\"name\":\"localhost\",\"port\":%s}" \
		"$DAEMON_PORT" | "$BIN/catalog_update" --http -C "$CAT" -
	worker -d worker -o wdebug.log -M "d[aeiou]mo|nothing" -C "$CAT"
	rc=0; wait "$FAKE_PID" || rc=$?
	[ $rc = 0 ] && [ $WRC = 0 ]
	not grep -q "connecting to localhost:1\$" wdebug.log
	# a pattern that is not a regular expression: exit 1 naming it
	worker -M "demo(" -C "$CAT"
	[ $WRC = 1 ]
	grep -q "project name pattern \"demo(\"" worker.log
'

test_expect_success 'idle timeout: bye and exit 0 after -t 2' '
	fake idle
	start=$SECONDS
	worker --idle-timeout 2 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "bye received: idle timeout" daemon.1.log
	# not before the idle time has passed (an upper bound would be a bet on the load of the machine)
	[ $((SECONDS - start)) -ge 2 ]
'

test_expect_success '--wall-time 2: bye and exit 0' '
	fake idle
	worker --wall-time 2 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "bye received: wall time reached" daemon.1.log
'

test_expect_success '--exit-after-tasks 1: one task, draining, bye, exit 0' '
	fake aftertasks
	worker --exit-after-tasks 1 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "identity max_tasks is 1" daemon.1.log
	grep -q "draining after the single task" daemon.1.log
	grep -q "bye received: drained" daemon.1.log
'

test_expect_success '--single-shot (CCTools meaning): the master disconnects, the worker exits 0' '
	fake disconnect
	worker --single-shot --connect-timeout 20 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 0 ]
	grep -q "disconnected from the master (--single-shot)" worker.log
'

test_expect_success 'without --single-shot the worker tries again after the master disconnects' '
	fake disconnect
	worker --connect-timeout 2 127.0.0.1 $FAKE_PORT
	fake_ok
	[ $WRC = 3 ]
'

test_expect_success '-s DIR (CCTools): each worker works in DIR/worker-UID-PID, removed at its exit' '
	mkdir -p shared
	u=$(id -u)
	"$BIN/work_queue_worker" -s "$PWD/shared" --connect-timeout 60 127.0.0.1 1 >w1.log 2>&1 &
	a=$!
	test_track_pid $a
	"$BIN/work_queue_worker" -s "$PWD/shared" --connect-timeout 60 127.0.0.1 1 >w2.log 2>&1 &
	b=$!
	test_track_pid $b
	test_wait_until 30 test -d shared/worker-$u-$a
	test_wait_until 30 test -d shared/worker-$u-$b
	kill -TERM $a
	wait $a || true
	test ! -e shared/worker-$u-$a
	test -d shared/worker-$u-$b
	kill -TERM $b
	wait $b || true
	[ -z "$(ls -A shared)" ]
'

test_expect_success '--keep-cache with -s DIR: DIR itself, kept, and one such worker at a time' '
	"$BIN/work_queue_worker" -s "$PWD/kc" --keep-cache --connect-timeout 60 127.0.0.1 1 >k1.log 2>&1 &
	k=$!
	test_track_pid $k
	test_wait_until 30 test -e kc/.worker.lock
	rc=0
	"$BIN/work_queue_worker" -s "$PWD/kc" --keep-cache --connect-timeout 2 127.0.0.1 1 >k2.log 2>&1 || rc=$?
	cat k2.log
	[ $rc != 0 ]
	grep -q "another worker with --keep-cache uses it" k2.log
	kill -TERM $k
	wait $k || true
	test -d kc
	test ! -e kc/worker-$(id -u)-$k
'

test_expect_success 'SIGTERM drains: the running task is reported, then bye and exit 0' '
	fake signal
	"$BIN/work_queue_worker" -s "$PWD/wd" 127.0.0.1 $FAKE_PORT >worker.log 2>&1 &
	WPID=$!
	test_track_pid $WPID
	test_wait_until 60 grep -q task_running daemon.1.log
	kill -TERM $WPID
	WRC=0; wait $WPID || WRC=$?
	cat worker.log
	fake_ok
	[ $WRC = 0 ]
	grep -q "bye received: drained" daemon.1.log
'

test_expect_success '-t sets the connect timeout too (CCTools): no master, exit 3 after -t 2' '
	worker -t 2 127.0.0.1 1
	[ $WRC = 3 ]
	grep -q "no master reachable within 2 s" worker.log
'

test_expect_success '--parent-death: the worker ends when its parent does' '
	mkfifo hold
	sh -c "\"$BIN/work_queue_worker\" --parent-death -s \"$PWD/wd\" 127.0.0.1 1 >w.out 2>&1 & echo \$! >wpid; read x <hold" &
	test_track_pid $!
	test_wait_for_file wpid 20
	kill -0 $(cat wpid)
	echo go >hold
	gone() { ! kill -0 $(cat wpid) 2>/dev/null; }
	test_wait_until 30 gone
	cat w.out
'

test_expect_success 'a CCTools option this worker lacks is refused by name' '
	worker --foreman-name f 127.0.0.1 9
	[ $WRC = 1 ]
	grep -q -- "--foreman-name: a CCTools work_queue_worker option that is not supported here" worker.log
'

test_expect_success 'a bad option exits 1 with a clear message' '
	worker --memory lots 127.0.0.1 9
	[ $WRC = 1 ]
	grep -q -- "--memory" worker.log
'

test_expect_success '--docker without a reachable Docker Engine: exit 1 naming the socket' '
	DOCKER_HOST=unix://$PWD/no-such.sock worker --docker busybox:1 127.0.0.1 9
	[ $WRC = 1 ]
	grep -q -- "--docker busybox:1: the Docker Engine does not answer at $PWD/no-such.sock" worker.log
	DOCKER_HOST=unix://$PWD/no-such.sock worker --docker-preserve img 127.0.0.1 9
	[ $WRC = 1 ]
	grep -q -- "--docker-preserve img: the Docker Engine does not answer" worker.log
'

test_done
