#!/bin/bash
# 37-wq-watch.sh: end-to-end test of watched outputs (doc/work-queue-protocol.md 5.6): a master
# built on the public API (work_queue/test/helper_watch_master; makeflow has no syntax for
# watch) and a real work_queue_worker with a 300 ms watch interval (WQ_WATCH_INTERVAL_MS, a
# testing knob). The output file grows at its final path on the master while the task still
# runs, and its final content is exact.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin work_queue_worker
HELPER=$BUILD/work_queue/test/helper_watch_master
[ -x "$HELPER" ] || test_skip_all "$HELPER is not built (make tests)"
TEST_TIMEOUT=90

test_expect_success 'a watched output grows on the master while the task runs' '
	test_daemon_start port "$HELPER" port "$PWD/watched.log"
	master=$DAEMON_PID
	mlog=daemon.1.log
	WQ_WATCH_INTERVAL_MS=300 "$BIN/work_queue_worker" -d worker -t 60 --cores 1 \
		-s "$PWD/wd" 127.0.0.1 "$DAEMON_PORT" >worker.log 2>&1 &
	worker=$!
	test_track_pid $worker
	rc=0
	wait $master || rc=$?
	cat $mlog
	[ $rc = 0 ]
	grep -q "^result SUCCESS status 0" $mlog
	# at least two partial sizes were seen before work_queue_wait returned the task
	seen=$(sed -n "s/^sizes seen before done //p" $mlog)
	[ "$seen" -ge 2 ]
	first=$(sed -n "s/^size before done //p" $mlog | head -n 1)
	[ "$first" -lt 71 ]
	# the final content is exact: ten lines, 71 bytes
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "line $i"; done >expected
	cmp expected watched.log
	not grep -q "protocol violation" worker.log
'

test_done
