#!/bin/bash
# 19-makeflow-monitor.sh: end-to-end tests of makeflow_monitor on the transaction logs of real
# makeflow runs: the view after the fact (done, failed, restarted), a running workflow followed
# until it ends (-H), several logs sorted by progress (-S), and the logs it refuses (a CCTools
# log, a corrupt record, a missing log with --once), each in one line naming the file.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow makeflow_monitor

MF=$BIN/makeflow
MON=$BIN/makeflow_monitor
LOG=Makeflow.makeflowlog

# three rules; b fails with exit code 3 unless ./fixed exists
three_rules() {
	wf Makeflow <<'EOF2'
a:
    echo a > a
b: a
    test -e fixed || exit 3; cat a > b
c:
    echo c > c
EOF2
}

test_expect_success 'after the fact: a run with a failed rule' '
	three_rules
	test_must_fail "$MF" Makeflow 2>mf.err
	"$MON" --once $LOG >out
	cat out
	grep -q "^    Makeflow: $LOG\$" out
	grep -q "^      Status: finished: failed\$" out
	grep -q "^        Time: start: .*, elapsed: [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\$" out
	grep -q "^Tasks/Minute: average: [0-9.]*\$" out
	grep -q "^       Tasks: waiting: 0, running: 0, complete: 2, failed: 1, aborted: 0, total: 3\$" out
	grep -q "^      Failed: rule 1 (exit code 3)\$" out
'

test_expect_success 'after the fact: the run that finished it after a restart' '
	three_rules
	test_must_fail "$MF" Makeflow 2>mf.err
	touch fixed
	"$MF" Makeflow
	"$MON" --once $LOG >out
	cat out
	grep -q "^      Status: finished: completed\$" out
	grep -q "complete: 3, failed: 0, aborted: 0, total: 3\$" out
	not grep -q Failed: out
'

test_expect_success 'a rule killed by a signal is named with its signal' '
	printf "k:\n\tkill -9 \$\$\n" >Makeflow
	test_must_fail "$MF" Makeflow 2>mf.err
	"$MON" --once $LOG >out
	cat out
	grep -q "^      Failed: rule 0 (signal 9)\$" out
'

test_expect_success '-H on a workflow that ended shows nothing and exits' '
	three_rules
	touch fixed
	"$MF" Makeflow
	"$MON" -H -t 0.1 $LOG >out
	test ! -s out
'

test_expect_success 'follows a running workflow and exits when it ends (-H)' '
	wf Makeflow <<'"'EOF2'"'
first:
    echo 1 > first
wait: first
    while [ ! -e go ]; do sleep 0.05; done; echo w > wait
EOF2
	# the monitor starts before the log exists and waits for it
	"$MON" -H -t 0.1 $LOG >mon.out 2>mon.err &
	mon=$!
	test_track_pid $mon
	"$MF" Makeflow >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 grep -q "running: 1, complete: 1, failed: 0, aborted: 0, total: 2" mon.out
	grep -q "^      Status: \[=*> *\] 50.00 %\$" mon.out
	grep -q "^        Time: start: .*, left: " mon.out
	touch go
	wait $mf
	wait $mon
	cat mon.out
	test ! -s mon.err
	not grep -q "finished" mon.out
'

test_expect_success 'several logs, sorted by progress (-S)' '
	mkdir one two
	printf "x:\n\techo x > x\n" >one/Makeflow
	printf "y:\n\texit 1\nz:\n\techo z > z\n" >two/Makeflow
	(cd one && "$MF" Makeflow)
	(cd two && test_must_fail "$MF" Makeflow 2>/dev/null)
	"$MON" --once -S one/$LOG two/$LOG >out
	cat out
	grep "Makeflow:" out | tr -s " " >order
	printf " Makeflow: two/$LOG\n Makeflow: one/$LOG\n" >want
	diff want order
'

test_expect_success 'a CCTools log is refused in one line' '
	printf "# STARTED 1795736423863465\n1795736423864647 0 1 25764 1 1 0 0 0 2\n" >cc.makeflowlog
	test_must_fail "$MON" --once cc.makeflowlog >out 2>err
	cat err
	test "$(wc -l <err)" -eq 1
	grep -q "^makeflow_monitor: cc.makeflowlog:1: this is a CCTools makeflow log" err
	test_must_fail "$MON" -H cc.makeflowlog 2>err
	grep -q "CCTools makeflow log" err
'

test_expect_success 'a corrupt record is named by file and line' '
	three_rules
	touch fixed
	"$MF" Makeflow
	sed -i "3s/^\(.\) /\1 1/" $LOG
	test_must_fail "$MON" --once $LOG 2>err
	cat err
	grep -q "^makeflow_monitor: $LOG:3: corrupt record\$" err
'

test_expect_success 'a missing log is an error with --once, and no log at all a usage error' '
	test_must_fail "$MON" --once nothere.makeflowlog 2>err
	grep -q "^makeflow_monitor: nothere.makeflowlog: No such file or directory\$" err
	test_must_fail "$MON" 2>err
	grep -q "^Usage: " err
	test_must_fail "$MON" -t 0 x 2>err
	grep -q "^makeflow_monitor: -t 0: the interval is a number of seconds" err
'

test_expect_success 'SIGINT ends a monitor that follows forever' '
	three_rules
	touch fixed
	"$MF" Makeflow
	"$MON" -t 0.1 $LOG >out &
	mon=$!
	test_track_pid $mon
	test_wait_until 30 grep -q "finished: completed" out
	kill -INT $mon
	wait $mon
'

test_done
