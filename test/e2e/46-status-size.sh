#!/bin/bash
# 46-status-size.sh: the status documents a scaler reads stay small at cluster scale: a master
# (helper_master_bench status) with 1,000,000 tasks in four categories and 5,000 simulated
# workers over real TCP (helper_sim_workers) answers a `master` document of a few hundred kB,
# whose scaler section has the four categories, at most 1,000 worker rows (idle ones first) and
# a summary that counts all 5,000 workers; and with 2,000 workers and fewer tasks than cores,
# every row it has room for is an idle worker, the scaler's candidates to drain.
. "$(dirname "$0")/../lib/test-lib.sh"

MASTER=$BUILD/work_queue/test/helper_master_bench
SIM=$BUILD/work_queue/test/helper_sim_workers
[ -x "$MASTER" ] && [ -x "$SIM" ] || test_skip_all "helpers not built (make tests)"
TEST_TIMEOUT=300
# a socket per worker on each side
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 12000 ] || test_skip_all "needs 12,000 open files, the limit is $(ulimit -n)"

# status_of WORKERS TASKS: the master's one JSON line once WORKERS workers connected.
status_of() {
	rm -f port
	"$MASTER" status "$PWD/port" "$1" 240 "$2" >status.json 2>master.err &
	local m=$!
	test_track_pid $m
	test_wait_for_file port 60 || return 1
	"$SIM" -n "$1" -a 32 -d fixed:600 -t 280 "127.0.0.1:$(cat port)" >sim.out 2>&1 &
	test_track_pid $!
	wait $m || { tail -5 master.err sim.out; return 1; }
	cat status.json
}

# field NAME: the value of NAME in status.json.
field() {
	python3 -c "import json,sys; print(json.dumps(json.load(open(\"status.json\"))[sys.argv[1]]))" "$1"
}

test_expect_success '5,000 workers and 1,000,000 tasks: the master document stays small' '
	status_of 5000 1000000
	[ "$(field workers)" = 5000 ]
	[ "$(field tasks)" = 1000000 ]
	# everything a scaler needs, in a few hundred kB (it was 234 kB here)
	[ "$(field master_bytes)" -lt 1048576 ]
	[ "$(field categories)" = 4 ]
	[ "$(field categories_bytes)" -lt 65536 ]
	# 1,000 worker rows, marked truncated; the summary counts every worker
	[ "$(field worker_rows)" = 1000 ]
	[ "$(field truncated)" = true ]
	[ "$(field summary_active)" = 5000 ]
	[ "$(field idle_first)" = true ]
'

test_expect_success 'more idle workers than rows: the rows are the idle workers, the ones to drain' '
	# 3,000 one-core tasks on 2,000 workers of 4 cores: some workers stay idle
	status_of 2000 3000
	[ "$(field workers)" = 2000 ]
	idle=$(field summary_idle)
	[ "$idle" -gt 0 ]
	want=$((idle < 1000 ? idle : 1000))
	[ "$(field idle_rows)" = "$want" ]
	[ "$(field idle_first)" = true ]
'

test_done
