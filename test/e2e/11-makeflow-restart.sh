#!/bin/bash
# 11-makeflow-restart.sh: end-to-end tests of makeflow's transaction log:
# restarting re-runs exactly what changed, torn and corrupt logs, kill -9
# and SIGTERM mid-run, cleaning (-c, --clean=MODE) and garbage collection.
# Every job appends its name to ./tally, so a case can see what ran.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow

MF=$BIN/makeflow
LOG=Makeflow.makeflowlog



# mkjob: write job.sh: `sh job.sh NAME INPUTS...` appends NAME to ./tally and
# writes file NAME holding NAME and then its inputs' contents.
mkjob() {
	cat >job.sh <<'EOF'
n=$1; shift
echo "$n" >> tally
echo "$n" > "$n.tmp"
for f in "$@"; do cat "$f" >> "$n.tmp"; done
mv "$n.tmp" "$n"
EOF
}

# mkslow: write slow.sh: `sh slow.sh NAME` records its pid in NAME.pid,
# appends NAME to ./tally, sleeps for as many seconds as ./dur says, then
# writes NAME.
mkslow() {
	cat >slow.sh <<'EOF'
echo $$ > "$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"
echo "$1" >> tally
sleep "$(cat dur)"
echo "$1" > "$1"
EOF
}

# ran: what ran since tally was last cleared, sorted, on one line.
ran() {
	if [ -f tally ]; then sort tally | tr "\n" " " | sed "s/ \$//"; fi
}

# expect_ran "A B ...": exactly these ran (sorted) since the tally was cleared.
expect_ran() {
	local got
	got=$(ran)
	if [ "$got" != "$1" ]; then
		echo "expected to run: '$1'; ran: '$got'"
		return 1
	fi
	: >tally
}

# std_wf: in -> a -> b -> c, and an independent other -> x.
std_wf() {
	mkjob
	wf Makeflow <<'EOF'
a: in job.sh
    sh job.sh a in
b: a job.sh
    sh job.sh b a
c: b job.sh
    sh job.sh c b
x: other job.sh
    sh job.sh x other
EOF
	echo in >in
	echo other >other
}

# log_ok FILE: FILE is a well-formed log: the header, then complete lines
# each ending with a valid CRC-32 of the text before its last space.
log_ok() {
	python3 - "$1" <<'EOF'
import sys, zlib
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "log does not end with a newline"
lines = data.split(b"\n")[:-1]
assert lines[0].startswith(b"#htc-makeflow-log 1 "), lines[0]
for i, l in enumerate(lines[1:], 2):
    body, crc = l.rsplit(b" ", 1)
    assert l[:1] in b"SNFE", "line %d: %r" % (i, l)
    assert "%08x" % zlib.crc32(body) == crc.decode(), "line %d: bad crc: %r" % (i, l)
EOF
}

# bump_time FILE N: add 1 to the time field of line N of FILE (so the line's
# CRC no longer matches).
bump_time() {
	python3 - "$1" "$2" <<'EOF'
import sys
p, n = sys.argv[1], int(sys.argv[2])
lines = open(p).read().split("\n")
f = lines[n - 1].split(" ")
f[1] = str(int(f[1]) + 1)
lines[n - 1] = " ".join(f)
open(p, "w").write("\n".join(lines))
EOF
}

# pgid_of PID: the process group of PID.
pgid_of() {
	ps -o pgid= -p "$1" | tr -d " "
}

# gone PID: no process PID exists (or it is a zombie).
gone() {
	! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ]
}

# count_complete: how many "rule complete" records the log holds.
count_complete() {
	grep -c "^N [0-9]* [0-9]* 3 " $LOG || true
}

test_expect_success 'a second run re-runs nothing' '
	std_wf
	"$MF" Makeflow
	expect_ran "a b c x"
	"$MF" Makeflow 2>err
	cat err
	expect_ran ""
	grep -q "4 of 4 rules are already complete" err
	[ "$(cat c)" = "$(printf "c\nb\na\nin")" ]
'

test_expect_success 'touching a source re-runs exactly its downstream rules' '
	std_wf
	"$MF" Makeflow
	: >tally
	touch in
	"$MF" Makeflow
	expect_ran "a b c"
	touch other
	"$MF" Makeflow
	expect_ran "x"
'

test_expect_success 'changing a source re-runs exactly its downstream rules' '
	std_wf
	"$MF" Makeflow
	: >tally
	echo changed >other
	"$MF" Makeflow
	expect_ran "x"
	[ "$(cat x)" = "$(printf "x\nchanged")" ]
	echo changed >in
	"$MF" Makeflow
	expect_ran "a b c"
	[ "$(cat c)" = "$(printf "c\nb\na\nchanged")" ]
'

test_expect_success 'deleting an intermediate re-runs its producer and what depends on it' '
	std_wf
	"$MF" Makeflow
	: >tally
	rm a
	"$MF" Makeflow
	expect_ran "a b c"
	test -s a
'

test_expect_success 'deleting a final output re-runs only its producer' '
	std_wf
	"$MF" Makeflow
	: >tally
	rm c
	"$MF" Makeflow
	expect_ran "c"
	[ "$(cat c)" = "$(printf "c\nb\na\nin")" ]
'

test_expect_success 'a changed output is kept and re-runs what depends on it (as make)' '
	std_wf
	"$MF" Makeflow
	: >tally
	echo tampered >b
	"$MF" Makeflow >out
	expect_ran "c"
	[ "$(cat b)" = tampered ]
	[ "$(cat c)" = "$(printf "c\ntampered")" ]
	grep -qx "deleted c" out
	: >tally
	"$MF" Makeflow
	expect_ran ""
'

test_expect_success 'changing a rule command re-runs it (and its descendants) only' '
	std_wf
	"$MF" Makeflow
	: >tally
	sed -i "s/sh job.sh b a/sh job.sh b a in/" Makeflow
	"$MF" Makeflow
	expect_ran "b c"
	[ "$(cat c)" = "$(printf "c\nb\na\nin\nin")" ]
	"$MF" Makeflow
	expect_ran ""
'

test_expect_success 'a torn last log line is ignored and the run continues' '
	std_wf
	"$MF" Makeflow
	: >tally
	# drop the end record and cut the last record before it in half
	n=$(wc -l <$LOG)
	head -n $((n - 2)) $LOG >torn
	last=$(sed -n "$((n - 1))p" $LOG)
	printf "%s" "${last%??????????????????}" >>torn
	cp torn $LOG
	"$MF" Makeflow 2>err
	cat err
	grep -q "torn" err
	log_ok $LOG
	# at most the rule whose record was torn ran again
	[ "$(wc -l <tally)" -le 1 ]
	: >tally
	"$MF" Makeflow
	expect_ran ""
	log_ok $LOG
'

test_expect_success 'a corrupt record in the middle of the log is refused with LOG:LINE' '
	std_wf
	"$MF" Makeflow
	: >tally
	bump_time $LOG 3
	sed -n 3p $LOG
	cp $LOG saved
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "$LOG:3: corrupt record" err
	expect_ran ""
	cmp $LOG saved
'

test_expect_success 'a log that is not a makeflow log is refused' '
	std_wf
	echo "this is not a log" >$LOG
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "$LOG:.*not a makeflow" err
	expect_ran ""
	[ "$(cat $LOG)" = "this is not a log" ]
'

test_expect_success 'kill -9 of makeflow mid-run, then a restart finishes without re-running completed rules' '
	mkjob
	mkslow
	echo 30 >dur
	wf Makeflow <<-\EOF
	a: job.sh
	    sh job.sh a
	slow: a slow.sh
	    sh slow.sh slow
	c: job.sh
	    sh job.sh c
	d: slow c job.sh
	    sh job.sh d slow c
	EOF
	"$MF" Makeflow 2>err1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file slow.pid
	test_wait_until 20 sh -c "[ \$(grep -c \"^N [0-9]* [0-9]* 3 \" $LOG) -ge 2 ]"
	kill -KILL $mf
	wait $mf || true
	# the job makeflow left behind
	pid=$(cat slow.pid)
	kill -KILL -- -"$(pgid_of "$pid")" 2>/dev/null || true
	test_wait_until 60 gone "$pid"
	expect_ran "a c slow"
	rm slow.pid
	echo 0 >dur
	"$MF" Makeflow 2>err2
	cat err2
	expect_ran "d slow"
	[ "$(cat d)" = "$(printf "d\nslow\nc")" ]
	log_ok $LOG
'

test_expect_success 'SIGTERM stops makeflow, removes running jobs, logs it; a restart completes' '
	mkjob
	mkslow
	echo 30 >dur
	wf Makeflow <<-\EOF
	quick: job.sh
	    sh job.sh quick
	slow: quick slow.sh
	    sh slow.sh slow
	after: slow job.sh
	    sh job.sh after slow
	EOF
	"$MF" Makeflow 2>err1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file slow.pid
	pid=$(cat slow.pid)
	kill -0 "$pid"
	kill -TERM $mf
	rc=0; wait $mf || rc=$?
	cat err1
	[ $rc != 0 ]
	test_wait_until 30 gone "$pid"
	grep -q "SIGTERM\|Terminated" err1
	# the rule was logged as aborted, and the run as ended by a signal
	grep -q "^N [0-9]* 1 5 " $LOG
	grep -q "^E [0-9]* 2 " $LOG
	test ! -e slow
	expect_ran "quick slow"
	echo 0 >dur
	"$MF" Makeflow
	expect_ran "after slow"
	[ "$(cat after)" = "$(printf "after\nslow")" ]
'

test_expect_success 'SIGINT stops makeflow the same way' '
	mkslow
	echo 30 >dur
	wf Makeflow <<-\EOF
	slow: slow.sh
	    sh slow.sh slow
	EOF
	"$MF" Makeflow 2>err1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file slow.pid
	pid=$(cat slow.pid)
	kill -INT $mf
	rc=0; wait $mf || rc=$?
	cat err1
	[ $rc != 0 ]
	test_wait_until 30 gone "$pid"
	grep -q "^E [0-9]* 2 " $LOG
'

test_expect_success 'a restart after a failure runs the failed rule and what waited for it, nothing else' '
	mkjob
	wf Makeflow <<-\EOF
	a: job.sh
	    sh job.sh a
	b: a job.sh
	    test -e fixed && sh job.sh b a
	c: b job.sh
	    sh job.sh c b
	x: job.sh
	    sh job.sh x
	EOF
	rc=0; "$MF" Makeflow || rc=$?
	[ $rc = 1 ]
	expect_ran "a x"
	touch fixed
	"$MF" Makeflow
	expect_ran "b c"
	[ "$(cat c)" = "$(printf "c\nb\na")" ]
'

test_expect_success 'repeated kill -9 at random moments: each restart continues and the log stays valid' '
	for i in $(seq 1 40); do
		printf "o%d:\n\techo o%d >> tally; sleep 0.0%d; echo %d > o%d\n" $i $i $((i % 10)) $i $i
	done >Makeflow
	printf "all: %s\n\tcat %s > all\n" "$(echo o$(seq -s " o" 1 40))" "$(echo o$(seq -s " o" 1 40))" >>Makeflow
	for k in 1 2 3 4; do
		"$MF" -j 4 Makeflow 2>/dev/null &
		mf=$!
		test_track_pid $mf
		sleep 0.$((RANDOM % 3 + 1))
		kill -KILL $mf 2>/dev/null || true
		wait $mf || true
	done
	"$MF" -j 4 Makeflow 2>err
	cat err
	log_ok $LOG
	[ "$(cat all | wc -l)" = 40 ]
	"$MF" Makeflow 2>err
	grep -q "41 of 41 rules are already complete" err
'

test_expect_success '-c removes exactly the files the workflow created' '
	std_wf
	mkdir sub
	echo keep >unrelated.txt
	echo keep >sub/unrelated
	before=$(ls -AR)
	"$MF" Makeflow
	test -s c
	"$MF" -c Makeflow
	rm tally # written by the jobs, not declared
	[ "$(ls -AR)" = "$before" ]
	[ "$(cat in)" = in ]
'

test_expect_success '-c still removes the outputs of a rule whose command changed after the run' '
	std_wf
	before=$(ls -AR)
	"$MF" Makeflow
	sed -i "s/sh job.sh b a/sh job.sh b a in/" Makeflow
	"$MF" -c Makeflow
	rm tally
	[ "$(ls -AR)" = "$before" ]
'

test_expect_success '-c after a failure also removes makeflow.failed.N but not files it never made' '
	mkjob
	wf Makeflow <<-\EOF
	a: job.sh
	    sh job.sh a
	bad: a
	    echo partial > bad; exit 1
	down: bad
	    cat bad > down
	EOF
	echo "made by the user" >down
	before=$(ls -AR)
	rc=0; "$MF" Makeflow || rc=$?
	[ $rc = 1 ]
	test -d makeflow.failed.1
	"$MF" -c Makeflow
	rm tally # written by the jobs, not declared
	[ "$(ls -AR)" = "$before" ]
	[ "$(cat down)" = "made by the user" ]
'

test_expect_success '--clean=outputs removes only final outputs; a rerun makes them again' '
	std_wf
	"$MF" Makeflow
	: >tally
	"$MF" --clean=outputs Makeflow
	test ! -e c
	test ! -e x
	test -s a
	test -s b
	test -s in
	test -s $LOG
	"$MF" Makeflow
	expect_ran "c x"
	test -s c
	test -s x
'

test_expect_success '--clean=intermediates removes only intermediates; a rerun needs nothing' '
	std_wf
	"$MF" Makeflow
	: >tally
	"$MF" --clean=intermediates Makeflow
	test ! -e a
	test ! -e b
	test -s c
	test -s x
	test -s in
	test -s $LOG
	"$MF" Makeflow
	expect_ran ""
'

test_expect_success '-g ref_cnt deletes intermediates as soon as their consumers finish' '
	mkjob
	wf Makeflow <<-\EOF
	a: in job.sh
	    sh job.sh a in
	b side: a job.sh
	    sh job.sh b a; sh job.sh side
	c: b job.sh
	    sh job.sh c b
	check: c
	    test ! -e a && test ! -e b && cat c > check
	EOF
	echo in >in
	"$MF" -g ref_cnt --summary-json summary.json Makeflow
	[ "$(cat check)" = "$(printf "c\nb\na\nin")" ]
	# intermediates gone, sources and final outputs kept
	test ! -e a
	test ! -e b
	test ! -e c
	test -s in
	test -s side
	test -s job.sh
	[ "$(grep -c "^F [0-9]* 3 " $LOG)" = 3 ]
	python3 -c "import json; s = json.load(open(\"summary.json\")); assert s[\"garbage_collection\"][\"files_deleted\"] == 3, s"
	: >tally
	# a restart after garbage collection does not re-run anything
	"$MF" -g ref_cnt Makeflow
	expect_ran ""
	"$MF" Makeflow
	expect_ran ""
	# a rule that must run again gets its collected inputs made again
	rm check
	"$MF" -g ref_cnt Makeflow
	expect_ran "a b c side"
	test -s check
	test ! -e b
'

test_expect_success '-c removes output directories it emptied and files of rules since removed from the workflow' '
	mkdir keep
	printf "d/e/a:\n\techo a > d/e/a\nold:\n\techo o > old\n" >Makeflow
	"$BIN/makeflow" --progress=quiet Makeflow
	test -f d/e/a && test -f old
	printf "d/e/a:\n\techo a > d/e/a\n" >Makeflow
	"$BIN/makeflow" -c Makeflow
	test ! -e d && test ! -e old && test -d keep
	test "$(ls)" = "Makeflow
keep"
'

# The transaction log on a 1 MB tmpfs that a rule fills: the run stops, the log stays whole.
test_expect_success 'a full disk under the log stops the run (non-zero), the log stays valid, and a restart completes' '
	mkdir fs
	mount -t tmpfs -o size=1m tmpfs fs
	cat >case.sh <<-\EOF
	set -e
	MF=$1
	# rule 0 fills the file system of the log; rules 1..60 each add three records
	{
		printf "r0:\n\techo r0 >> tally; dd if=/dev/zero of=fs/fill bs=4k 2>/dev/null || true; echo r0 > r0\n"
		for i in $(seq 1 60); do
			printf "r%d: r0\n\techo r%d >> tally; echo %d > r%d\n" $i $i $i $i
		done
	} >Makeflow
	rc=0; "$MF" -j 1 -l fs/log Makeflow 2>err1 || rc=$?
	cat err1
	[ $rc != 0 ]
	grep -q "cannot write the transaction log fs/log" err1
	grep -q "stopped because the transaction log fs/log could not be written" err1
	python3 - fs/log <<-\PYEOF
	import sys, zlib
	data = open(sys.argv[1], "rb").read()
	assert data.endswith(b"\n"), "log does not end with a newline"
	for i, l in enumerate(data.split(b"\n")[1:-1], 2):
	    body, crc = l.rsplit(b" ", 1)
	    assert "%08x" % zlib.crc32(body) == crc.decode(), "line %d: bad crc: %r" % (i, l)
	PYEOF
	grep "^N [0-9]* [0-9]* 3 " fs/log | cut -d" " -f3 | sed "s/^/r/" | sort >done1
	sort tally >ran1
	[ "$(wc -l <done1)" -lt 61 ]
	# every job that ran is recorded as started, and the jobs not yet started were removed
	grep "^N [0-9]* [0-9]* 2 " fs/log | cut -d" " -f3 | sed "s/^/r/" | sort -u >started1
	[ -z "$(comm -23 ran1 started1)" ]
	[ "$(wc -l <ran1)" -lt 61 ]
	grep -q "not yet started were removed" err1
	rm fs/fill
	: >tally
	"$MF" -j 1 -l fs/log Makeflow 2>err2
	cat err2
	# nothing the first run recorded as complete ran again, and everything is made
	sort tally >ran2
	[ -z "$(comm -12 done1 ran2)" ]
	for i in $(seq 0 60); do [ "$(cat r$i)" = "$i" ] || [ $i = 0 ]; done
	"$MF" -j 1 -l fs/log Makeflow 2>err3
	grep -q "61 of 61 rules are already complete" err3
	EOF
	rc=0; bash case.sh "$MF" || rc=$?
	umount fs
	[ $rc = 0 ]
'

test_expect_success 'kill -9 of makeflow with a long local rule running: the restart stops the old job, re-runs the rule once, completes' '
	mkjob
	cat >long.sh <<-\EOF
	# an earlier instance still running (not a zombie) at this one start is an overlap
	if [ -f long.pid ] && kill -0 "$(cat long.pid)" 2>/dev/null &&
	    [ "$(ps -o stat= -p "$(cat long.pid)" | cut -c1)" != Z ]; then echo overlap >>overlaps; fi
	echo $$ > long.pid.tmp; mv long.pid.tmp long.pid
	echo long >> tally
	if [ -f quick ]; then exit 0; fi
	sleep 300 &
	echo $! > sleep.pid
	wait
	EOF
	wf Makeflow <<-\EOF
	a: job.sh
	    sh job.sh a
	long: a long.sh
	    sh long.sh && echo long > long
	b: long job.sh
	    sh job.sh b long
	EOF
	"$MF" Makeflow 2>err1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file sleep.pid
	old=$(cat long.pid)
	oldsleep=$(cat sleep.pid)
	kill -KILL $mf
	wait $mf || true
	kill -0 "$old"
	grep -q "^S [0-9]* $mf [0-9]* [0-9a-f]\{32\} " $LOG
	# the job has the run id of the run in its environment
	tr "\0" "\n" </proc/$old/environ | grep -q "^HTC_RUN_ID=$(grep "^S " $LOG | tail -1 | cut -d" " -f5)\$"
	expect_ran "a long"
	touch quick
	"$MF" Makeflow 2>err2
	cat err2
	grep -q "stopped [0-9]* process[a-z]* left running by an earlier run" err2
	gone "$old"
	gone "$oldsleep"
	test ! -e overlaps
	expect_ran "b long"
	[ "$(cat b)" = "$(printf "b\nlong")" ]
	log_ok $LOG
'

test_expect_success 'a second makeflow on a running workflow exits at once with status 1, naming the log and the PID' '
	mkslow
	echo 300 >dur
	wf Makeflow <<-\EOF
	slow: slow.sh
	    sh slow.sh slow
	EOF
	"$MF" Makeflow 2>err1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file slow.pid
	rc=0; "$MF" Makeflow 2>err2 || rc=$?
	cat err2
	[ $rc = 1 ]
	grep -q "transaction log Makeflow.makeflowlog is locked by process $mf" err2
	rc=0; "$MF" -c Makeflow 2>err3 || rc=$?
	[ $rc = 1 ]
	grep -q "locked by process $mf" err3
	# one run in the log, one job started
	[ "$(grep -c "^S " $LOG)" = 1 ]
	[ "$(cat tally)" = slow ]
	kill -TERM $mf
	wait $mf || true
	test ! -e $LOG.lock
	echo 0 >dur
	"$MF" Makeflow
	test -e slow
'

test_done
