#!/bin/bash
# 34-wq-vanish.sh: a worker killed with kill -9 in the middle of a transfer, both ways: while
# it receives a large input (into its cache) and while the master receives a large output.
# Another worker then completes the rule; the output is whole, no temporary file is left
# behind, and makeflow exits 0.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=180
SIZE=$((600 * 1048576))

# start_worker DIR: a worker whose workdir is DIR; sets w.
start_worker() {
	"$WORKER" -t 30 -s "$1" --cores 1 localhost "$port" >>workers.out 2>&1 &
	w=$!
	test_track_pid $w
}

# partial_in DIR: true once an object is being received into DIR's cache.
partial_in() {
	local f
	for f in "$1"/worker-*/cache/.partial/*; do
		[ -s "$f" ] && return 0
	done
	return 1
}

# partial_out: true once the master is writing a temporary big.out.
partial_out() {
	local f
	for f in .big.out.wq-*; do
		[ -s "$f" ] && return 0
	done
	return 1
}

test_expect_success 'a worker killed while it receives an input: another one completes the rule' '
	truncate -s $SIZE big.in &&
	printf "size.txt: big.in\n\twc -c < big.in > size.txt\n" >Makeflow &&
	start_master Makeflow &&
	start_worker w1 &&
	test_wait_until 60 partial_in w1 &&
	kill -9 $w &&
	start_worker w2 &&
	wait $mf &&
	[ "$(cat size.txt)" = $SIZE ]
'

test_expect_success 'a worker killed while the master receives an output: no partial file stays' '
	printf "big.out:\n\thead -c $SIZE /dev/zero > big.out\n" >Makeflow &&
	start_master Makeflow &&
	start_worker w3 &&
	test_wait_until 60 partial_out &&
	kill -9 $w &&
	start_worker w4 &&
	wait $mf &&
	[ "$(stat -c %s big.out)" = $SIZE ] &&
	not ls .big.out.wq-* 2>/dev/null &&
	[ -z "$(tr -d "\\0" <big.out | head -c 1)" ]
'

test_done
