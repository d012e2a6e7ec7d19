#!/bin/bash
# 33-wq-url.sh: end-to-end tests of URL inputs (doc/work-queue-protocol.md 5.5, 5.6): a master
# built on the public API (work_queue/test/helper_url_master; makeflow has no way to name a URL
# input yet) and a real work_queue_worker fetch files from a local python3 HTTP server. The file
# arrives with its content, two tasks with one URL cause one GET, a 404 (seen by the master's
# HEAD request, in the thread pool) gives INPUT_MISSING with the HTTP status and the URL in the
# master's warning without any GET, and master and worker stay up afterwards.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/http-lib.sh"

test_require_bin work_queue_worker
HELPER=$BUILD/work_queue/test/helper_url_master
[ -x "$HELPER" ] || test_skip_all "$HELPER is not built (make tests)"
command -v python3 >/dev/null || test_skip_all "python3 is not installed"
TEST_TIMEOUT=120

test_expect_success 'URL inputs: content, one GET for two tasks, 404 is INPUT_MISSING' '
	mkdir www
	printf "ACGT from the web\n" >www/data.txt
	serve_http www
	test_daemon_start port "$HELPER" port \
		"http://127.0.0.1:$HTTP_PORT/data.txt" "http://127.0.0.1:$HTTP_PORT/nothing.txt"
	master=$DAEMON_PID
	mlog=daemon.2.log
	"$BIN/work_queue_worker" -d worker -t 60 --cores 2 -s "$PWD/wd" 127.0.0.1 "$DAEMON_PORT" \
		>worker.log 2>&1 &
	worker=$!
	test_track_pid $worker
	rc=0
	wait $master || rc=$?
	cat $mlog
	[ $rc = 0 ]
	grep -q "^task first result SUCCESS status 0" $mlog
	grep -q "^task second result SUCCESS status 0" $mlog
	grep -q "^task missing result INPUT_MISSING" $mlog
	grep -q "^task after result SUCCESS status 0" $mlog
	[ "$(cat first.txt)" = "ACGT from the web" ]
	[ "$(cat second.txt)" = "ACGT from the web" ]
	[ "$(cat after.txt)" = "still up" ]
	cat $HTTP_LOG
	[ "$(grep -c "\"GET /data.txt " $HTTP_LOG)" = 1 ]
	# the 404 is found by the HEAD request: the task fails on the master, nobody GETs it
	grep -q "\"HEAD /nothing.txt " $HTTP_LOG
	not grep -q "\"GET /nothing.txt " $HTTP_LOG
	grep -q "input http://127.0.0.1:$HTTP_PORT/nothing.txt: HTTP 404 for its HEAD request" $mlog
	# the worker was still connected until the master dismissed it
	not grep -q "protocol violation" worker.log
'

test_expect_success 'a URL input that is not cached is fetched for each task and dropped after it' '
	mkdir www
	printf "fresh\n" >www/data.txt
	serve_http www
	test_daemon_start port "$HELPER" nocache port "http://127.0.0.1:$HTTP_PORT/data.txt"
	master=$DAEMON_PID
	mlog=$(ls daemon.*.log | tail -n 1)
	"$BIN/work_queue_worker" -d worker -t 60 --cores 2 -s "$PWD/wd" 127.0.0.1 "$DAEMON_PORT" \
		>worker.log 2>&1 &
	test_track_pid $!
	rc=0
	wait $master || rc=$?
	cat $mlog
	[ $rc = 0 ]
	for t in n1 n2 c1 c2; do
		grep -q "^task $t result SUCCESS status 0" $mlog
		[ "$(cat $t.txt)" = fresh ]
	done
	cat $HTTP_LOG
	# n1 and n2, which may run at once, each fetch it (as CCTools does without
	# WORK_QUEUE_CACHE); c1 fetches it once more under its cached name, c2 finds it cached
	[ "$(grep -c "\"GET /data.txt " $HTTP_LOG)" = 3 ]
	# each per-task object is dropped from the worker once its task is done
	[ "$(grep -c "cache: drop U-" worker.log)" = 2 ]
	not grep -q "protocol violation" worker.log
'

test_expect_success 'a file:// URL is refused at submission with a clear text' '
	printf "secret\n" >secret.txt
	rc=0
	"$HELPER" port "file://$PWD/secret.txt" "ftp://127.0.0.1/x" >out 2>err || rc=$?
	cat out err
	[ $rc = 1 ]
	grep -q "first: URL \"file://$PWD/secret.txt\": only http and https URLs are fetched" err
	[ ! -e first.txt ]
'

test_done
