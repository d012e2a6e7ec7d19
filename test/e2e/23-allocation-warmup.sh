#!/bin/bash
# 23-allocation-warmup.sh: end-to-end tests of the warm-up allocation mode
# (--allocation warmup): on -T cgroups and on -T wq with a real worker, the
# first rule of each undeclared category runs alone at the maximum, and the
# others wait for its measurement, then run side by side at the estimate (the
# largest value seen plus the margin of doc/allocation.md); a rule that
# exceeds the estimate is run again at the maximum and the estimate learns.
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

# stamped_rules CATEGORY N MB SECONDS: N rules whose output holds the start and
# end instants (ns) of their command, around a task keeping MB resident.
stamped_rules() {
	echo "CATEGORY=$1"
	for i in $(seq 1 "$2"); do
		printf '%s.%d:\n\tdate +%%s%%N > %s.%d && %s %d %s && date +%%s%%N >> %s.%d\n' \
			"$1" "$i" "$1" "$i" "$ALLOC" "$3" "$4" "$1" "$i"
	done
}

# check_alone CATEGORY...: for each category, its first rule to start ended
# before any other of it started, and some two of the others overlapped.
check_alone() {
	python3 - "$@" <<-\EOF
	import glob, sys
	for cat in sys.argv[1:]:
	    iv = sorted(tuple(int(x) for x in open(f).read().split()) for f in glob.glob(cat + ".*"))
	    assert len(iv) >= 3, (cat, iv)
	    first_end = iv[0][1]
	    assert all(s >= first_end for s, _ in iv[1:]), ("%s: measuring rule not alone" % cat, iv)
	    rest = iv[1:]
	    overlap = any(rest[i][1] > rest[j][0] and rest[j][1] > rest[i][0]
	                  for i in range(len(rest)) for j in range(i + 1, len(rest)))
	    assert overlap, ("%s: no two rules ran side by side after the warm-up" % cat, iv)
	EOF
}

# check_one_at_ceiling DEBUGLOG CATEGORY...: makeflow's allocation debug log
# shows, per category, one rule submitted at the maximum (the measuring one)
# and all the others below it.
check_one_at_ceiling() {
	python3 - "$@" <<-\EOF
	import re, sys
	subs = re.findall(r"rule \d+ \((\w+), level (\d)\): cores (-?\d+) memory (-?\d+)",
	                  open(sys.argv[1]).read())
	for cat in sys.argv[2:]:
	    mem = [int(m) for c, lvl, _, m in subs if c == cat]
	    assert len(mem) >= 3, (cat, subs)
	    top = max(mem)
	    assert mem.count(top) == 1 and mem[0] == top, ("%s: not one rule at the maximum" % cat, mem)
	EOF
}

# check_estimate SUMMARY CATEGORY: the first allocation of CATEGORY is the
# largest memory seen plus 5 % (at least 16 MB), and cores 1.
check_estimate() {
	python3 - "$@" <<-\EOF
	import json, math, sys
	s = json.load(open(sys.argv[1]))
	c = [c for c in s["categories"] if c["name"] == sys.argv[2]][0]
	assert c["mode"] == "warmup", c
	assert c["failed"] == 0, c
	seen = c["max_seen"]["memory"]
	want = math.ceil(seen + max(seen * 0.05, 16))
	fa = c["first_allocation"]
	assert abs(fa["memory"] - want) <= 1, (fa, seen)
	assert fa["cores"] <= 1, fa
	EOF
}

test_expect_success 'an unknown mode is refused, naming the modes (warmup among them)' '
	wf Makeflow <<-\EOF
	a:
	    touch a
	EOF
	test_must_fail "$MF" --allocation warm Makeflow 2>err &&
	grep -q "warmup" err
'

if have_cgroups; then
	test_expect_success '-T cgroups: one rule per category measured alone, then packed' '
		{ stamped_rules small 5 60 1; stamped_rules big 4 150 1; } >Makeflow
		"$MF" -T cgroups --allocation warmup --summary-json summary.json -d alloc -o dbg \
			Makeflow 2>err || {
			cat err >&2
			exit 1
		}
		check_alone small big
		check_one_at_ceiling dbg small big
		check_estimate summary.json small
		check_estimate summary.json big
	'

	test_expect_success '-T cgroups: a rule above the estimate runs again at the maximum; the estimate learns' '
		{
			echo "CATEGORY=grow"
			printf "a:\n\t%s 50 0.2 > a\n" "$ALLOC"
			printf "b: a\n\t%s 300 0.2 > b\n" "$ALLOC"
			printf "c: b\n\t%s 100 0.2 > c\n" "$ALLOC"
		} >Makeflow
		"$MF" -T cgroups --allocation warmup --batch-option memory-grow=off \
			--summary-json summary.json Makeflow 2>err || {
			cat err >&2
			exit 1
		}
		grep -q "running it again with the maximum" err
		python3 - summary.json <<-\EOF
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["categories"] if c["name"] == "grow"][0]
		assert c["done"] == 3 and c["failed"] == 0, c
		assert c["exhaustions"] == 1 and c["retries"] == 1, c
		assert c["first_allocation"]["memory"] >= 315, c
		EOF
	'
else
	say "no writable cgroup hierarchy with the memory controller: -T cgroups cases not run"
	[ -z "${CI:-}" ] || test_expect_success 'cgroups are needed in CI' 'false'
fi

test_expect_success '-T wq, one 2-core worker: one rule per category measured alone, then packed' '
	{ stamped_rules small 5 60 1; stamped_rules big 4 150 1; } >Makeflow
	start_master --allocation warmup --summary-json summary.json Makeflow
	start_worker --cores 2 --memory 4000 --disk 4000 localhost $port
	finish
	check_alone small big
	check_estimate summary.json small
	check_estimate summary.json big
'

# The rules of one category are all ready at once; the master sizes each when
# it dispatches it, so a rule queued before a larger measurement still gets the
# estimate that measurement made. Each rule declares one core, the worker has
# one, and no task is sent ahead into a worker's queue (prefetch=0), so they run
# one at a time (memory is left to the master): whichever measures first, at
# most one later rule is above the estimate of its moment. (When makeflow sized
# the rules as it submitted them, every rule above the first measurement was
# stopped and run again: 4 or 5 here.)
test_expect_success '-T wq: rules queued together are sized when dispatched, with the latest estimate' '
	{
		echo "CATEGORY=mix"
		printf "m:\n@CORES=1\n\t%s 40 0.3 > m\n" "$ALLOC"
		printf "r1:\n@CORES=1\n\t%s 200 0.3 > r1\n" "$ALLOC"
		for i in 2 3 4 5; do
			printf "r%d:\n@CORES=1\n\t%s 150 0.3 > r%d\n" $i "$ALLOC" $i
		done
	} >Makeflow
	start_master --allocation warmup --batch-option prefetch=0 \
		--summary-json summary.json Makeflow
	start_worker --cores 1 --memory 4000 --disk 4000 localhost $port
	finish
	python3 - summary.json <<-\EOF
	import json, sys
	c = [c for c in json.load(open(sys.argv[1]))["categories"] if c["name"] == "mix"][0]
	assert c["done"] == 6 and c["failed"] == 0, c
	assert c["exhaustions"] <= 1 and c["retries"] == c["exhaustions"], c
	assert c["first_allocation"]["memory"] >= 210, c
	# the tries after the measuring one ran at a computed allocation, below the worker
	assert 0 < c["allocated_sized"]["memory"] < c["allocated"]["memory"], c
	EOF
'

# The category's ceiling (its MEMORY, 600 MB) bounds the re-runs at the maximum, whatever
# the rule the master's category was set up with declared: here the first rule declares its
# own memory, and its small measurement makes the estimate too small for the others, which
# run again at the ceiling, not at the whole 4000 MB worker.
test_expect_success '-T wq: re-runs at the category'"'"'s ceiling, also when its first rule declared memory' '
	{
		echo "CATEGORY=cap"
		echo "MEMORY=600"
		printf "first:\n@MEMORY=100\n@CORES=1\n\t%s 20 0.2 > first\n" "$ALLOC"
		for i in 1 2 3; do
			printf "b%d: first\n@CORES=1\n\t%s 100 0.3 > b%d\n" $i "$ALLOC" $i
		done
	} >Makeflow
	start_master --allocation warmup --summary-json summary.json Makeflow
	start_worker --cores 2 --memory 4000 --disk 4000 -d worker -o w.debug localhost $port
	finish
	# the tries and their memory, in the order they started
	sed -n "s|.*/tasks/\([0-9]*\.[0-9]*\)/work (\([0-9]*\) cores, \([0-9]*\) MB memory.*|\1 \3|p" \
		w.debug >tries
	cat tries
	grep -qx "1.1 100" tries
	# every re-run (a second try) had the ceiling, and there was at least one
	grep -q "\.2 " tries
	[ -z "$(grep "\.2 " tries | grep -v " 600$")" ]
	# no try of the category had more than its ceiling
	[ -z "$(awk "\$2 > 600" tries)" ]
'

# A LOCAL rule goes to makeflow's local queue, which sizes nothing itself: makeflow sizes it,
# while the master sizes the category's other rules.
test_expect_success '-T wq: a LOCAL rule of a warm-up category runs on the local queue' '
	{
		echo "CATEGORY=mixed"
		printf "a:\n\t%s 30 0.1 > a\n" "$ALLOC"
		printf "b:\n\tLOCAL %s 30 0.1 > b\n" "$ALLOC"
		printf "c: a b\n\t%s 30 0.1 > c\n" "$ALLOC"
	} >Makeflow
	start_master --allocation warmup --summary-json summary.json Makeflow
	start_worker --cores 1 --memory 4000 --disk 4000 localhost $port
	finish
	test -e a && test -e b && test -e c
	python3 - summary.json <<-\EOF
	import json, sys
	c = [c for c in json.load(open(sys.argv[1]))["categories"] if c["name"] == "mixed"][0]
	assert c["done"] == 3 and c["failed"] == 0, c
	EOF
'

test_done
