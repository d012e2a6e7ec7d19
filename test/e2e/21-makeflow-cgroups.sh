#!/bin/bash
# 21-makeflow-cgroups.sh: end-to-end tests of makeflow -T cgroups on this
# machine: rules run in their own cgroups and see their allocation (CORES),
# a rule that exceeds its MEMORY is reported as exhausted, not as a plain
# failure, and no cgroup of makeflow is left after it is stopped by SIGTERM,
# or killed with -9 and followed by another run.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow

if ! [ -w /sys/fs/cgroup/memory ] && ! grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	test_skip_all "no writable cgroup hierarchy with the memory controller"
fi

MF=$BIN/makeflow
ALLOC=$BUILD/resource_monitor/test/helper_alloc

# eat MB SECONDS: the command line of a job that keeps MB megabytes resident.
eat() {
	echo "$ALLOC $1 $2"
}

# groups_of PID: the cgroups (any hierarchy) created for the monitors of PID.
groups_of() {
	find /sys/fs/cgroup -maxdepth 5 -type d -name "htc.$1.*" 2>/dev/null
}

no_groups_of() {
	[ -z "$(groups_of "$1")" ]
}

# dead_groups: every htc.* cgroup (any hierarchy) whose owner process is gone, sorted.
dead_groups() {
	find /sys/fs/cgroup -type d -name "htc.*" 2>/dev/null | while read -r g; do
		o=${g##*/htc.}
		o=${o%%.*}
		kill -0 "$o" 2>/dev/null || echo "$g"
	done | sort
}

# start_slow: start makeflow -T cgroups in the background on a rule that runs
# for 30 s, and wait until the rule runs in its cgroup. Sets mf to its pid.
start_slow() {
	wf Makeflow <<-\EOF
	slow.txt:
	    echo $$ > job.pid; sleep 30; echo late > slow.txt
	EOF
	"$MF" -T cgroups Makeflow >out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file job.pid 20
	test_wait_until 60 test -n "$(groups_of $mf)"
}

test_expect_success 'a small workflow runs; rules see their allocation in CORES' '
	# the variables are read by a script, so makeflow does not substitute them
	echo "echo \"\$CORES \$OMP_NUM_THREADS\" > \$1" >alloc.sh
	wf Makeflow <<-\EOF
	CORES=1
	a.txt: alloc.sh
	    sh alloc.sh a.txt
	b.txt: a.txt
	    cat a.txt a.txt > b.txt
	EOF
	"$MF" -T cgroups Makeflow
	[ "$(cat a.txt)" = "1 1" ]
	[ "$(cat b.txt)" = "$(printf "1 1\n1 1")" ]
'

test_expect_success 'a rule over its MEMORY fails as memory exhausted, not as a plain failure' '
	wf Makeflow <<-EOF
	MEMORY=100
	big.txt:
	    $(eat 300 0.2) && echo done > big.txt
	small.txt:
	    echo small > small.txt
	EOF
	rc=0; "$MF" -T cgroups --batch-option memory-grow=off Makeflow >out 2>&1 || rc=$?
	cat out
	[ $rc != 0 ]
	test ! -e big.txt
	[ "$(cat small.txt)" = small ]
	grep -Eqi "memory exhausted|exceeded its (resource|memory)" out
	not grep -q "exit code 137" out
'

test_expect_success 'SIGTERM mid-run leaves no cgroup and no job process' '
	start_slow
	kill -TERM $mf
	rc=0; wait $mf || rc=$?
	cat out
	[ $rc != 0 ]
	no_groups_of $mf
	not kill -0 "$(cat job.pid)" 2>/dev/null
	test ! -e slow.txt
'

test_expect_success 'after kill -9 of makeflow, the next run removes the cgroups it left' '
	start_slow
	kill -KILL $mf
	wait $mf || true
	# the job outlives a makeflow killed with -9, in its cgroup
	test -n "$(groups_of $mf)"
	wf Other <<-\EOF
	quick.txt:
	    echo quick > quick.txt
	EOF
	"$MF" -T cgroups Other
	[ "$(cat quick.txt)" = quick ]
	no_groups_of $mf
	test_wait_until 30 not kill -0 "$(cat job.pid)" 2>/dev/null
'

test_expect_success 'after kill -9 of makeflow, a restart of the workflow stops its job first and runs the rule once' '
	cat >job.sh <<-\EOF
	if [ -f job.pid ] && kill -0 "$(cat job.pid)" 2>/dev/null &&
	    [ "$(ps -o stat= -p "$(cat job.pid)" | cut -c1)" != Z ]; then echo overlap >>overlaps; fi
	echo $$ > job.pid.tmp; mv job.pid.tmp job.pid
	[ -e quick ] || sleep 30
	echo late > slow.txt
	EOF
	wf Makeflow <<-\EOF
	slow.txt: job.sh
	    sh job.sh
	EOF
	"$MF" -T cgroups Makeflow >out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file job.pid 20
	test_wait_until 60 test -n "$(groups_of $mf)"
	old=$(cat job.pid)
	kill -KILL $mf
	wait $mf || true
	kill -0 "$old"
	touch quick
	"$MF" -T cgroups Makeflow 2>err
	cat err
	# stopped by its cgroup (the driver) or by its run id (the restart), before it re-ran
	grep -qE "stopped [0-9]* process[a-z]* left running by an earlier run|removed [0-9]* cgroups left by earlier runs" err
	test ! -e overlaps
	[ "$(cat slow.txt)" = late ]
	test_wait_until 60 not kill -0 "$old" 2>/dev/null
	no_groups_of $mf
'

test_expect_success 'undeclared needs converge to sensible allocations; an outlier grows' '
	# 30 rules of about 300 MB and one of 700 MB, nothing declared: the first
	# rules run with the whole machine, the category then allocates one core
	# and 500 MB (the 250 MB bucket above 300), and the outlier, given room
	# to grow up to the machine, has its limit raised instead of being killed.
	{
		echo "CATEGORY=work"
		for i in $(seq 1 30); do
			printf "w.%d:\n\t%s 300 0.05 > w.%d\n" $i "$ALLOC" $i
		done
		printf "big: w.30\n\t%s 700 0.2 > big\n" "$ALLOC"
	} >Makeflow
	"$MF" -T cgroups --allocation waste --summary-json summary.json -d alloc -o mf.dbg \
		Makeflow 2>err
	# a raised limit counts in allocated memory-time as its integral: the time-average held,
	# above the 500 MB it started with
	if grep -q "memory limit raised" err; then
		held=$(sed -n "s/.*rule [0-9]* (work): its memory limit changed while it ran: \([0-9]*\) MB held.*/\1/p" mf.dbg)
		test -n "$held" && test "$held" -gt 500
	fi
	python3 - summary.json <<-\EOF
	import json, sys
	s = json.load(open(sys.argv[1]))
	c = [c for c in s["categories"] if c["name"] == "work"][0]
	assert c["done"] == 31, c
	assert c["failed"] == 0, c
	fa = c["first_allocation"]
	assert fa["memory"] == 500 and fa["cores"] == 1, fa
	assert 300 <= c["max_seen"]["memory"] < 330 or c["max_seen"]["memory"] >= 700, c
	assert c["limit_raises"] >= 1 or c["retries"] == 1, c
	EOF
	[ -f big ]
'

test_expect_success '--monitor inside -T cgroups: nested groups are removed, exhaustion reported' '
	# the monitor wrapping each rule makes a group inside the job group of
	# the driver; killing the job at its limit must still remove both
	{
		echo "MEMORY=200"
		printf "x:\n\t%s 100 0.1 > x\n" "$ALLOC"
		printf "y:\n\t%s 300 0.1 > y\n" "$ALLOC"
	} >Makeflow
	dead_groups >before
	rc=0; "$MF" -T cgroups --monitor mon Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "rule 1 failed: exceeded its resource allocation (memory 200 MB)" err
	[ -f mon/resource-rule-0.summary ] && [ -f x ]
	[ -z "$(find /sys/fs/cgroup -type d -name "htc.*" -path "*htc.$$.*" 2>/dev/null)" ]
	# no group of a process of this run is left (groups left by other, earlier
	# programs killed with -9 do not count)
	dead_groups >after
	[ -z "$(comm -13 before after)" ]
'

test_done
