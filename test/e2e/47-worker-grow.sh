#!/bin/bash
# 47-worker-grow.sh: vertical elasticity on the real worker (doc/elasticity.md). With
# makeflow -T wq in warm-up mode, a rule that needs 1.5 times the estimate of its category is
# grown by a worker started with --memory-grow on and completes in one try (its growth reported
# and counted in the category), and is killed and run again at the maximum by a worker without
# it. With --memory-throttle on, a runaway allocator beside a neighbour is throttled and the
# neighbour is never killed. With --cpu-grow on, a busy one-core task is lent the idle core,
# keeps it while its neighbour idles and gives it back when a third task is placed.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
ALLOC=$BUILD/resource_monitor/test/helper_alloc
TEST_TIMEOUT=240

have_cgroups() {
	[ -w /sys/fs/cgroup/memory ] || grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null
}

if ! have_cgroups; then
	say "no writable cgroup hierarchy with the memory controller: cases not run"
	[ -z "${CI:-}" ] || test_expect_success 'cgroups are needed in CI' 'false'
	test_done
	exit 0
fi

# A chain in one category: a measures 200 MB (the estimate becomes about 218 MB), b needs
# 330 MB (1.5 times), c is small again.
grow_workflow() {
	echo "CATEGORY=grow"
	printf "a:\n\t%s 200 0.2 > a\n" "$ALLOC"
	printf "b: a\n\t%s 330 0.5 > b\n" "$ALLOC"
	printf "c: b\n\t%s 50 0.2 > c\n" "$ALLOC"
}

# category_is SUMMARY DONE EXHAUSTIONS RETRIES MIN_RAISES
category_is() {
	python3 - "$@" <<-\EOF
	import json, sys
	path, done, exh, retries, raises = sys.argv[1], *map(int, sys.argv[2:])
	c = [c for c in json.load(open(path))["categories"] if c["name"] == "grow"][0]
	assert c["done"] == done and c["failed"] == 0, c
	assert c["exhaustions"] == exh and c["retries"] == retries, c
	assert c.get("limit_raises", 0) >= raises, c
	if raises == 0:
	    assert c.get("limit_raises", 0) == 0, c
	EOF
}

test_expect_success 'with --memory-grow on: the rule over its estimate is grown and runs once' '
	grow_workflow >Makeflow &&
	start_master --allocation warmup --summary-json summary.json -d alloc,wq -o mf.dbg \
		Makeflow &&
	start_worker --cores 2 --memory 4000 --disk 4000 --memory-grow on -d worker -o w.dbg \
		localhost $port &&
	finish &&
	category_is summary.json 3 0 0 1 &&
	grown=$(sed -n "s/.*memory limit grown from [0-9]* to \([0-9]*\) MB.*/\1/p" workers.out) &&
	test -n "$grown" &&
	# the master counts the grown size against the worker
	grep -q "task 2 now holds $grown MB of memory" mf.dbg &&
	# its allocated memory-time is the integral of its limit: the time-average it held lies
	# between its allocation and the grown limit
	held=$(sed -n "s/.*rule [0-9]* (grow): its memory limit changed while it ran: \([0-9]*\) MB held on average.*/\1/p" mf.dbg) &&
	from=$(sed -n "s/.*memory limit grown from \([0-9]*\) to.*/\1/p" workers.out | head -1) &&
	test -n "$held" && test "$held" -ge "$from" && test "$held" -lt "$grown" &&
	test "$(grep -c "rule [0-9]* (grow, level" mf.dbg)" = 3
'

test_expect_success 'on a worker that grows: warm-up starts a rule below the estimate' '
	# two rules of 100 MB, one of 300 MB (grown), then three of 100 MB: the estimate is
	# about 320 MB, but starting near 120 MB and growing the odd large one holds less
	{
		echo "CATEGORY=start"
		printf "r1:\n\t%s 100 0.2 > r1\n" "$ALLOC"
		printf "r2: r1\n\t%s 100 0.2 > r2\n" "$ALLOC"
		printf "r3: r2\n\t%s 300 0.2 > r3\n" "$ALLOC"
		for i in 4 5 6; do printf "r$i: r3\n\t%s 100 0.2 > r$i\n" "$ALLOC"; done
	} >Makeflow &&
	start_master --allocation warmup --summary-json summary.json -d alloc,wq -o mf.dbg \
		Makeflow &&
	start_worker --cores 2 --memory 4000 --disk 4000 --memory-grow on localhost $port &&
	finish &&
	grep -q "category start: tasks start with 1[0-4][0-9] MB of memory (estimate 3[0-4][0-9] MB) on workers that grow in steps of 256 MB" mf.dbg &&
	python3 - summary.json <<-\EOF
	import json, sys
	c = [c for c in json.load(open(sys.argv[1]))["categories"] if c["name"] == "start"][0]
	assert c["done"] == 6 and c["failed"] == 0 and c["retries"] == 0, c
	EOF
'

test_expect_success 'on a worker that lends cores: warm-up allocates the average use' '
	# rules that mostly sleep: the first is measured alone, the others get a twentieth of a
	# core each (their average use), not the quarter core their peak rounds to
	{
		echo "CATEGORY=nap"
		for i in 1 2 3 4; do printf "n$i:\n\tsleep 0.3; echo > n$i\n"; done
	} >Makeflow &&
	start_master --allocation warmup -d wq -o mf.dbg Makeflow &&
	start_worker --cores 2 --memory 4000 --disk 4000 --cpu-grow on localhost $port &&
	finish &&
	test -f n4 &&
	grep -q "category nap: tasks get 0.05 cores (estimate 0.25) on workers that lend idle cores" mf.dbg
'

test_expect_success 'without growth: the same rule is killed and run again at the maximum' '
	grow_workflow >Makeflow &&
	start_master --allocation warmup --summary-json summary.json -d alloc,wq -o mf.dbg \
		Makeflow &&
	start_worker --cores 2 --memory 4000 --disk 4000 localhost $port &&
	finish &&
	category_is summary.json 3 1 1 0 &&
	! grep -q "memory limit grown" workers.out &&
	# the master sizes the rules (doc/allocation.md) and runs b again at the maximum itself:
	# makeflow submits each rule once
	grep -q "exhausted its allocation at level 0: next level 1" mf.dbg &&
	test "$(grep -c "rule [0-9]* (grow, level" mf.dbg)" = 3
'

test_expect_success 'a grown task whose use falls is shrunk back to its allocation, in steps' '
	# b grows past its estimate, frees it all and waits until the worker has shrunk it
	# (the worker notice), then ends; a waits like that too long only when shrinking fails
	# it prints its allocation file (the adaptive view) at its start, once grown, and at the end
	cat >shrink.py <<-EOF &&
	import os, sys, time
	def view():
	    return open(os.environ["HTC_ALLOCATION_FILE"]).read().replace("\\n", " ")
	print("start", view())
	big = bytearray(330 << 20)
	for i in range(0, len(big), 4096):
	    big[i] = 1
	print("grown", view())
	del big
	end = time.time() + 120
	while time.time() < end:
	    if open("$PWD/workers.out").read().count("memory limit shrunk") >= 2:
	        print("end", view())
	        sys.exit(0)
	    time.sleep(0.1)
	sys.exit(1)
	EOF
	{
		echo "CATEGORY=grow"
		printf "a:\n\t%s 200 0.2 > a\n" "$ALLOC"
		printf "b: a shrink.py\n\tpython3 shrink.py > b\n"
	} >Makeflow &&
	start_master --allocation warmup Makeflow &&
	start_worker --cores 2 --memory 4000 --disk 4000 --memory-grow on --shrink-cooldown 0 \
		localhost $port &&
	finish &&
	grep -q "memory limit grown from" workers.out &&
	test "$(grep -c "memory limit shrunk" workers.out)" -ge 2 &&
	! grep -q "memory exhausted" workers.out &&
	cat b &&
	# the view: the allocation at the start, the grown limit, then smaller again
	python3 - b <<-\PY
	import re, sys
	mem = {}
	for line in open(sys.argv[1]):
	    m = re.match(r"(start|grown|end) CORES=\S+ MEMORY=(\d+) DISK=\d+ GPUS=\d+", line)
	    if m:
	        mem[m.group(1)] = int(m.group(2))
	assert set(mem) == {"start", "grown", "end"}, mem
	assert mem["grown"] > mem["start"] and mem["grown"] >= 330, mem
	assert mem["start"] <= mem["end"] < mem["grown"], mem
	PY
'

# runaway_workflow: a neighbour holding 1000 MB for 8 s beside a runaway that grows by 100 MB
# every 0.15 s to 1800 MB; both declare their memory and fit a 3000 MB worker together (the
# worker is short of memory once the runaway passes 1250 MB).
runaway_workflow() {
	cat >runaway.py <<-\EOF
	import time
	chunks = []
	for i in range(18):
	    chunks.append(bytearray(100 << 20))
	    time.sleep(0.15)
	EOF
	printf "CATEGORY=neighbour\nCORES=1\nMEMORY=1100\nDISK=100\n"
	printf "n:\n\t%s 1000 8 > n\n" "$ALLOC"
	printf "CATEGORY=runaway\nCORES=1\nMEMORY=1900\nDISK=100\n"
	printf "r: runaway.py\n\tpython3 runaway.py > r\n"
}

test_expect_success 'with --memory-throttle on: the runaway is throttled, its neighbour runs on' '
	runaway_workflow >Makeflow &&
	start_master --summary-json summary.json Makeflow &&
	start_worker --cores 2 --memory 3000 --disk 4000 --memory-throttle on \
		--memory-throttle-rate 100 localhost $port &&
	finish &&
	test -f n && test -f r &&
	grep -q "task [0-9.]*: memory grows at .* throttled at" workers.out &&
	grep -q "throttle released" workers.out &&
	! grep -q "memory exhausted" workers.out &&
	! grep -qi "exhausted\|again" mf.out
'

# cpu_workflow: a (one core) burns two cores' worth until its view says it was lent the idle
# core, checks the loan outlasts two more measurements while its neighbour c idles, then lets c
# end; c's end releases b, whose core is lent to a, and a waits until it is taken back.
cpu_workflow() {
	cat >burn.py <<-EOF
	import os, re, subprocess, sys, time
	def cores():
	    text = open(os.environ["HTC_ALLOCATION_FILE"]).read()
	    return float(re.search(r"CORES=(\S+)", text).group(1))
	def measured():
	    return len(re.findall(r"used [0-9.]+ of 2 cores", open("$PWD/workers.out").read()))
	def wait(cond, what):
	    end = time.time() + 150
	    while not cond():
	        if time.time() > end:
	            print("timed out waiting for", what)
	            sys.exit(1)
	        time.sleep(0.05)
	spin = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
	print("start", cores())
	wait(lambda: cores() == 2, "the loan")
	print("grown", cores())
	seen = measured()
	wait(lambda: measured() >= seen + 2 or cores() != 2, "two more measurements")
	print("kept", cores())
	open("$PWD/grown", "w").close()
	wait(lambda: cores() == 1, "the loan taken back")
	print("back", cores())
	open("$PWD/back", "w").close()
	for p in spin:
	    p.kill()
	EOF
	printf "CATEGORY=burn\nCORES=1\nMEMORY=200\nDISK=100\n"
	printf "a: burn.py\n\tpython3 burn.py > a\n"
	printf "c:\n\twhile [ ! -e %s/grown ]; do sleep 0.1; done; echo > c\n" "$PWD"
	printf "b: c\n\twhile [ ! -e %s/back ]; do :; done; echo > b\n" "$PWD"
}

test_expect_success 'with --cpu-grow on: a busy task is lent the idle core, keeps it, gives it back' '
	test -w /sys/fs/cgroup/cpu || grep -qw cpu /sys/fs/cgroup/cgroup.controllers || {
		say "no cpu controller"
		false
	} &&
	cpu_workflow >Makeflow &&
	start_master -d wq,alloc -o mf.dbg Makeflow &&
	start_worker --cores 2 --memory 2000 --disk 4000 --cpu-grow on -d worker localhost $port &&
	finish &&
	cat a &&
	printf "start 1.0\ngrown 2.0\nkept 2.0\nback 1.0\n" >expect &&
	diff -u expect a &&
	grep -q "CPU quota raised to 2 cores" workers.out &&
	grep -q "claims the cores it was lent: CPU quota back to 1 cores" workers.out &&
	# while its neighbour idled, a was never put back by its own use of the loan
	! grep -q "the worker.s cores are busy" workers.out &&
	grep -q "task [0-9]* was lent idle cores: its CPU quota reached 2 cores" mf.dbg &&
	# held on average: more than its one core (lent for a while), less than two (not from
	# its start, and taken back before its end)
	avg=$(sed -n "s/.*its CPU quota reached 2 cores, \([0-9.]*\) on average.*/\1/p" mf.dbg) &&
	echo "quota held on average: $avg cores" &&
	awk -v a="$avg" "BEGIN { exit !(a > 1 && a < 2) }" &&
	# and makeflow counts that average as the allocated cores of the rule
	grep -q "(burn): it was lent cores while it ran: $avg cores held on average (1 allocated" \
		mf.dbg
'

test_done
