#!/bin/bash
# 63-factory-scaler.sh: end-to-end tests of work_queue_factory's scalers with a real makeflow
# -T wq master and real local workers: the status document a --scaler-hook reads (per-category
# waiting and running counts, worker rows), the hook's decision carried out, a hook that prints
# garbage, exits non-zero or is too slow logged with what it printed while the pool keeps its
# size, the default hta policy running a two-category workflow and draining the idle workers
# (through the master's drain) once nothing waits, hpa:TARGET as a baseline, and the record of
# factory runs: the workers of a factory killed with -9 are removed by the next one.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow work_queue_worker work_queue_factory

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
FACTORY=$BIN/work_queue_factory
TEST_TIMEOUT=180

# A workflow of N rules of category CAT sleeping S seconds each, into Makeflow.
rules() {
	local n=$1 cat=$2 s=$3 i
	printf "CATEGORY=%s\nCORES=1\n" "$cat"
	for i in $(seq 1 "$n"); do
		printf "%s.%d:\n\tsleep %s; echo %d > %s.%d\n" "$cat" "$i" "$s" "$i" "$cat" "$i"
	done
}

start_factory() {
	"$FACTORY" -T local --period 0.5 -t 60 -d factory -o factory.log \
		--pool-record "$PWD/pool.rec" "$@" localhost $port >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
}

stop_factory() {
	kill -TERM $fpid
	wait $fpid
}

test_expect_success 'a hook reads the status with categories and workers and its decision is carried out' '
	rules 6 align 0.2 >Makeflow
	start_master Makeflow
	cat >hook.sh <<-\EOF
	#!/bin/sh
	cat > "$(dirname "$0")/seen.$$.json"
	echo "{\"workers\": 1, \"next_in\": 0.2}"
	EOF
	chmod +x hook.sh
	start_factory --max-workers 3 --scaler-hook "$PWD/hook.sh"
	finish
	for i in 1 2 3 4 5 6; do [ "$(cat align.$i)" = $i ]; done
	stop_factory
	# some document showed waiting tasks of the category, one its worker row
	python3 - seen.*.json <<-\EOF
	import json, sys
	docs = [json.load(open(f)) for f in sys.argv[1:]]
	waits = [c["waiting"] for d in docs for c in d["categories"] if c["name"] == "align"]
	assert waits and max(waits) > 0, waits
	assert any(w["ours"] for d in docs for w in d["workers"]), "no worker row of ours"
	assert all("factory" in d and "latency" in d["factory"] for d in docs)
	assert max(d["factory"]["pool"] for d in docs) == 1
	EOF
	grep -q "hook: start 1" factory.out
'

test_expect_success 'a hook that prints garbage, fails or is too slow is logged with what it printed; the pool keeps its size' '
	rules 2 g 0.1 >Makeflow
	start_master Makeflow
	start_factory --scaler-hook "echo this is not json"
	test_wait_until 30 grep -q "this is not json" factory.out
	grep -q "the answer is not JSON" factory.out
	grep -q "the pool keeps its size" factory.out
	not grep -q "started 1 worker" factory.out
	# the same failure, cycle after cycle, is said once (then in the debug log)
	three_cycles() { [ "$(grep -c "this is not json" factory.log)" -ge 3 ]; }
	test_wait_until 30 three_cycles
	[ "$(grep -c "this is not json" factory.out)" = 1 ]
	stop_factory
	start_factory --scaler-hook "echo partial; exit 3"
	test_wait_until 30 grep -q "exited with status 3" factory.out
	grep -q "partial" factory.out
	stop_factory
	start_factory --scaler-hook "sleep 30" --scaler-hook-timeout 0.5
	test_wait_until 30 grep -q "the pool keeps its size" factory.out
	not grep -q "started 1 worker" factory.out
	stop_factory
	start_factory --scaler-hook "echo {\\\"workers\\\": \\\"two\\\"}"
	test_wait_until 30 grep -q "must be an integer" factory.out
	stop_factory
	kill $mf
	wait $mf || true
'

test_expect_success 'hta (the default) runs two categories to the end and drains the idle workers when nothing waits' '
	{ rules 4 first 0.3; rules 8 second 0.2; } >Makeflow
	start_master Makeflow
	start_factory --max-workers 4 --cores 2
	finish
	for i in 1 2 3 4; do [ "$(cat first.$i)" = $i ]; done
	for i in $(seq 1 8); do [ "$(cat second.$i)" = $i ]; done
	grep -q "hta:" factory.out
	stop_factory
	# never above --max-workers; the log has the pool line every cycle
	grep -q "pool t=" factory.log
	not grep -E "pool t=[0-9.]+ size=([5-9]|[1-9][0-9])" factory.log
'

test_expect_success 'hta drains idle workers through the master while a busy one finishes its rule' '
	rules 6 wide 2 >Makeflow
	printf "CATEGORY=tail\nhold: wide.1 wide.2 wide.3 wide.4 wide.5 wide.6\n\tsleep 6; touch hold\n" >>Makeflow
	start_master Makeflow
	start_factory --max-workers 3
	# the wide stage needs more than one worker: hta starts them
	test_wait_until 60 grep -q "pool t=[0-9.]* size=[23] " factory.log
	# once only the tail rule runs, nothing waits: the idle workers are drained, the busy one is not
	test_wait_until 90 grep -q "draining [12] " factory.out
	finish
	[ -f hold ]
	for i in $(seq 1 6); do [ "$(cat wide.$i)" = $i ]; done
	stop_factory
	# drained workers leave on their own (exit 0): no worker job ended with a failure
	not grep -q "ended with" factory.out
'

test_expect_success 'with -M the factory asks each master of the project for its workers, and drains through it' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	cat=localhost:$DAEMON_PORT
	rules 6 wide 2 >Makeflow
	printf "CATEGORY=tail\nhold: wide.1 wide.2 wide.3 wide.4 wide.5 wide.6\n\tsleep 6; touch hold\n" >>Makeflow
	start_master -N e2e-scale-$$ -C $cat Makeflow
	"$FACTORY" -T local --period 0.5 -t 60 -d factory -o factory.log \
		-M "e2e-scale-$$" --catalog $cat --max-workers 3 >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 60 grep -q "pool t=[0-9.]* size=[23] " factory.log
	# the idle workers are drained by the master that has them, found through the catalog
	test_wait_until 90 grep -q "draining [12] " factory.out
	test_wait_until 30 grep -q "drain of .*: 1 told" factory.log
	finish
	[ -f hold ]
	stop_factory
	not grep -q "ended with" factory.out
'

test_expect_success 'a batch system that cannot be used stops the factory at once, with the reason' '
	test_must_fail "$FACTORY" -T k8s --batch-option kubeconfig=$PWD/nowhere.kc --period 0.2 \
		localhost 9 >out 2>&1
	cat out
	grep -q "k8s: $PWD/nowhere.kc: No such file or directory" out
	grep -q "the k8s batch system cannot be used" out
	[ "$(grep -c "nowhere.kc" out)" = 1 ]
	not grep -q "cannot start a worker" out
'

test_expect_success 'hpa:50 runs a workflow (the baseline in the same program); bad --scaler values are refused' '
	rules 4 h 0.1 >Makeflow
	start_master Makeflow
	start_factory --max-workers 2 --scaler hpa:50:2
	finish
	stop_factory
	grep -q "hpa: load" factory.log
	test_must_fail "$FACTORY" --scaler hpa:0 localhost 1 2>err.txt
	grep -q "expected hpa:TARGET" err.txt
	test_must_fail "$FACTORY" --scaler fast localhost 1 2>err.txt
	grep -q "expected hta, queue or hpa:TARGET" err.txt
'

for T in local cgroups; do
test_expect_success "-T $T: the workers of a factory killed with -9 are removed by the next factory, and a clean stop leaves none" '
	rules 1 long 60 >Makeflow
	start_master Makeflow
	"$FACTORY" -T $T --period 0.5 -t 60 --pool-record "$PWD/pool.rec" \
		--scaler-hook "echo {\\\"workers\\\": 2}" localhost $port >f1.out 2>&1 &
	f1=$!
	test_track_pid $f1
	count() { pgrep -f "wqf-$1" | wc -l; }
	run=$(test_wait_until 30 grep -q " $T\$" pool.rec && cut -d" " -f1 pool.rec)
	[ -n "$run" ]
	test_wait_until 30 test "$(count $run)" -ge 2
	kill -9 $f1
	wait $f1 || true
	[ "$(count $run)" -ge 2 ]
	start_factory -T $T --pool-record "$PWD/pool.rec" --scaler hpa:50
	# (the cgroups driver itself removes the cgroups of dead runs when it starts, first)
	test_wait_until 30 grep -q -E "removed 2 workers left by stopped factories|cgroups: removed [2-9] cgroups left by earlier runs" factory.out
	test_wait_until 30 test "$(count $run)" = 0
	stop_factory
	# a clean stop removes its own line and workers
	test_wait_until 5 test ! -s pool.rec
	grep -q "the factory record" factory.out && exit 1
	kill $mf
	wait $mf || true
'
done

test_expect_success 'the example hook of doc/examples runs a workflow' '
	rules 8 ex 0.2 >Makeflow
	start_master Makeflow
	start_factory --max-workers 2 --scaler-hook "$TEST_SRCDIR/doc/examples/scaler-hook/hook.py"
	finish
	for i in $(seq 1 8); do [ "$(cat ex.$i)" = $i ]; done
	stop_factory
	grep -q "hook: start 2" factory.out
	not grep -q "warning: --scaler-hook" factory.out
'

test_expect_success 'a malformed line of the factory record is named and dropped' '
	printf "garbage here\n" >pool.rec
	rules 1 x 0.1 >Makeflow
	start_master Makeflow
	start_factory --pool-record "$PWD/pool.rec"
	finish
	stop_factory
	grep -q "the factory record $PWD/pool.rec, line 1: not RUN PID START TYPE" factory.out
	test ! -s pool.rec
'

test_done
