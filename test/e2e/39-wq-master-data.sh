#!/bin/bash
# 39-wq-master-data.sh: the Work Queue master's data path with real workers. A master (makeflow
# -T wq) killed with kill -9 while it receives a large output leaves a partial file
# (.NAME.wq-HOST-PID-START-XFER.tmp) beside the output; the restarted makeflow removes it by
# itself, and so does makeflow -c. A partial of a master that is still running, and files that
# only look like ours, are never removed. A rule that declares no disk, given a worker's small
# free disk, exceeds it and runs again without that limit instead of failing for good.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=180
SIZE=$((600 * 1048576))

# start_worker DIR [ARGS...]: a worker whose workdir is DIR, with ARGS; sets w.
start_worker() {
	local dir=$1
	shift
	"$WORKER" -t 30 -s "$dir" --cores 1 "$@" localhost "$port" >>workers.out 2>&1 &
	w=$!
	test_track_pid $w
}

# partial_out: true once the master is writing a temporary big.out.
partial_out() {
	local f
	for f in .big.out.wq-*; do
		[ -s "$f" ] && return 0
	done
	return 1
}

# killed_mid_transfer: runs the workflow until the master writes big.out, then kills the master
# and its worker with -9; the partial file stays.
killed_mid_transfer() {
	printf "big.out:\n\thead -c $SIZE /dev/zero > big.out\n" >Makeflow &&
	start_master Makeflow &&
	start_worker w1 &&
	test_wait_until 60 partial_out &&
	kill -9 $mf &&
	kill -9 $w &&
	wait $mf 2>/dev/null
	ls .big.out.wq-*.tmp >/dev/null
}

test_expect_success 'the restarted master removes the partial output of the killed one' '
	killed_mid_transfer &&
	touch .big.out.wq-1234-5.tmp .other.wq-00000000-1-1-1.tmp &&
	start_master Makeflow &&
	start_worker w2 &&
	finish &&
	[ "$(stat -c %s big.out)" = $SIZE ] &&
	grep -q "partial output of a master that is gone" mf.out &&
	[ "$(ls -a | grep -c "\.wq-")" = 2 ] &&
	ls .big.out.wq-1234-5.tmp .other.wq-00000000-1-1-1.tmp
'

test_expect_success 'makeflow -c removes the partial output of a killed master' '
	killed_mid_transfer &&
	"$MF" -c Makeflow >clean.out 2>&1 &&
	not ls .big.out.wq-*-*-*-*.tmp 2>/dev/null
'

test_expect_success 'a rule that declares no disk and exceeds the small disk it got runs again' '
	printf "big.out:\n\thead -c 40000000 /dev/zero > big.out; sleep 2\n" >Makeflow &&
	start_master Makeflow &&
	start_worker w1 --disk 50 &&
	finish &&
	[ "$(stat -c %s big.out)" = 40000000 ] &&
	grep -q "exceeded the disk the master chose: try 2 without that limit" mf.out
'

test_done
