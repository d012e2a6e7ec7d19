#!/bin/bash
# 35-wq-prefetch.sh: end-to-end tests of task prefetch (protocol 5.6, "Queued tasks") with
# makeflow -T wq and real work_queue_worker processes over loopback TCP: short rules are sent
# ahead to a full 1-core worker, which runs them one after the other with no refusal, each
# once; prefetch can be turned off; a queued task is cancelled when makeflow is stopped.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=120

# short_rules N: a first rule (it gives the category its measurement), then N short rules that
# need it, so they are all ready at once. Each logs its start and end (ns) to $PWD/times.log.
short_rules() {
	printf 'first:\n\techo first > first\n'
	for i in $(seq 1 $1); do
		printf 's.%d: first\n\techo S %d `date +%%s%%N` >> %s/times.log; echo %d > s.%d; echo E %d `date +%%s%%N` >> %s/times.log\n' \
			$i $i "$PWD" $i $i $i "$PWD"
	done
}

# one_at_a_time: in times.log, each start follows the end of the previous task (1 core).
one_at_a_time() {
	sort -k3,3n times.log | awk '
		$1 == "S" { if (running) bad = 1; running = 1 }
		$1 == "E" { running = 0 }
		END { exit bad }'
}

test_expect_success 'a full 1-core worker gets short rules queued ahead and runs them in turn, each once' '
	short_rules 12 >Makeflow
	start_master Makeflow
	start_worker --cores 1 -d worker -o worker.log localhost $port
	finish
	for i in $(seq 1 12); do [ "$(cat s.$i)" = $i ] || exit 1; done
	[ "$(grep -c "^S " times.log)" = 12 ]
	[ "$(awk "\$1 == \"S\" {print \$2}" times.log | sort -n | uniq | wc -l)" = 12 ]
	one_at_a_time
	grep -q "committed from the queue" worker.log
	not grep -q "refused" worker.log
'

test_expect_success 'with --batch-option prefetch=0 nothing is queued and the rules still run' '
	short_rules 6 >Makeflow
	start_master --batch-option prefetch=0 Makeflow
	start_worker --cores 1 -d worker -o worker.log localhost $port
	finish
	for i in $(seq 1 6); do [ "$(cat s.$i)" = $i ] || exit 1; done
	not grep -q "committed from the queue" worker.log
	test_must_fail "$MF" -T wq --batch-option prefetch=x Makeflow
'

# three_received: the worker runs one long rule and has received the other two.
three_received() {
	grep -q " started (pid" worker.log 2>/dev/null && [ "$(grep -c " received" worker.log)" -ge 4 ]
}

# cancelled_unstarted: some task was cancelled without ever starting (it was queued).
cancelled_unstarted() {
	local id
	for id in $(sed -n "s/.* task \([0-9]*\.[0-9]*\): cancel$/\1/p" worker.log); do
		grep -q "task $id started" worker.log || return 0
	done
	return 1
}

test_expect_success 'queued tasks are cancelled when makeflow stops: dropped, never started' '
	{
		printf "first:\n\techo first > first\n"
		for i in 1 2 3; do printf "x.%d: first\n\tsleep 60; echo %d > x.%d\n" $i $i $i; done
	} >Makeflow
	start_master Makeflow
	start_worker --cores 1 -d worker -o worker.log localhost $port
	test_wait_until 30 three_received
	[ "$(grep -c " started (pid" worker.log)" = 2 ]
	kill -TERM $mf
	wait $mf || true
	test_wait_until 60 cancelled_unstarted
	[ ! -e x.1 ] && [ ! -e x.2 ] && [ ! -e x.3 ]
	not grep -q "refused" worker.log
'

test_done
