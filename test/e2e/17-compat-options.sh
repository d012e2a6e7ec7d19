#!/bin/bash
# 17-compat-options.sh: end-to-end tests of makeflow command lines written for CCTools: the -f
# text summary (compared with CCTools makeflow when it is installed), --summary-json, -T names
# this build does not have, -Z without Work Queue, --local-cores, --wait-for-files-upto,
# --argv, --storage-limit, -X, --send-environment, -P and --work-queue-preferred-connection
# (a worker given -M picks the master of higher priority), --wq-wait-queue-size,
# --debug-rotate-max, the --monitor-* options, commands over 128 KiB (-T local and -T wq),
# work_queue_factory -E/--env/--wrapper/-O, and the options refused with a reason
# (doc/compatibility.md).
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow work_queue_worker catalog_server catalog_query

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
CCTOOLS_MF=${CCTOOLS_MAKEFLOW:-/usr/bin/makeflow}

# A workflow whose rules all succeed: a.txt and b.txt are read by another rule.
good_wf() {
	wf Makeflow <<'EOF'
a.txt:
    echo hi > a.txt
b.txt: a.txt
    head -c 5000 /dev/zero > b.txt
c.txt d.txt: b.txt
    cat b.txt > c.txt; echo x > d.txt
e.txt:
    head -c 1500 /dev/zero > e.txt
EOF
}

# A workflow with a failing rule (exit 3), one that depends on it, and a good chain.
failing_wf() {
	wf Makeflow <<'EOF'
x.txt:
    echo x > x.txt
y.txt: x.txt
    cat x.txt > y.txt
bad.txt:
    exit 3
q.txt: bad.txt
    touch q.txt
EOF
}

# cc_summary DIR: runs CCTools makeflow -f on the workflow in DIR (a copy).
cc_summary() {
	(cd "$1" && OMPI_MCA_ess_singleton_isolated=1 "$CCTOOLS_MF" -f sum.txt Makeflow \
		>cc.out 2>&1 || true)
}

# body FILE: the summary without its first line (the command line), the date and the
# run time, with the output files sorted (CCTools lists them in hash order).
body() {
	sed -n '2,$p' "$1" | sed 's/^Workflow completed:\t .*/Workflow completed:\t DATE/;
		s/^Total runtime:\t\t .*/Total runtime:\t\t TIME/' | awk '
		/^\t.*\t/ { out[n++] = $0; next } { print }
		END { if (n) { cmd = "sort"; for (i = 0; i < n; i++) print out[i] | cmd; close(cmd) } }'
}

test_expect_success '-f writes the CCTools text summary of a successful run' '
	good_wf
	"$MF" --progress=quiet -f sum.txt Makeflow
	cat -A sum.txt
	[ "$(sed -n 1p sum.txt)" = "$MF --progress=quiet -f sum.txt Makeflow " ]
	sed -n 2p sum.txt | grep -Eq "^Workflow completed:	 [A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} [0-9]{4}$"
	sed -n 3p sum.txt | grep -Eq "^Total runtime:		 0:00:0[0-9]$"
	printf "Workflow file:\t\t Makeflow\nNumber of tasks:\t 4\nCompleted tasks:\t 4/4\nOutput files:\n\ta.txt\t3.0\n\tb.txt\t4.9 K\n" >want
	sed -n "4,\$p" sum.txt >got
	diff want got
'

test_expect_success '-f: a failed run lists the failed commands and the rules not run' '
	failing_wf
	rc=0; "$MF" --progress=quiet -f sum.txt Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	cat -A sum.txt
	printf "Workflow file:\t\t Makeflow\nNumber of tasks:\t 4\nCompleted tasks:\t 2/4\nTasks not run:\t\t 1/4\nFailed tasks:\t\t 1/4\n\texit 3\nOutput files:\n\tx.txt\t2.0\n" >want
	sed -n "4,\$p" sum.txt >got
	diff want got
'

test_expect_success '-f: the same lines as CCTools makeflow (when it is installed)' '
	if [ ! -x "$CCTOOLS_MF" ] ||
		! OMPI_MCA_ess_singleton_isolated=1 "$CCTOOLS_MF" --help 2>&1 | grep -q -- "--summary-log"; then
		say "# CCTools makeflow not installed: compared with the recorded form only"
		exit 0
	fi
	for w in good_wf failing_wf; do
		rm -rf ours theirs && mkdir ours theirs
		(cd ours && $w) && cp ours/Makeflow theirs/
		(cd ours && "$MF" --progress=quiet -f sum.txt Makeflow 2>/dev/null || true)
		cc_summary theirs
		body ours/sum.txt >ours.txt
		body theirs/sum.txt >theirs.txt
		cat theirs.txt
		diff theirs.txt ours.txt
	done
'

test_expect_success '--summary-json writes the JSON summary, -f and --summary-json together' '
	failing_wf
	rc=0; "$MF" --progress=quiet -f sum.txt --summary-json sum.json Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	[ "$(jget sum.json status)" = failed ]
	[ "$(jget sum.json rules.failed)" = 1 ]
	grep -q "^Failed tasks:" sum.txt
'

test_expect_success '-T of a CCTools batch system not built here says so, and lists those there are' '
	good_wf
	rc=0; "$MF" -T condor Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "batch system condor is not available in this build (yet); available: local" err
	rc=0; MAKEFLOW_BATCH_QUEUE_TYPE=pbs "$MF" Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "batch system pbs is not available in this build (yet)" err
	rc=0; "$MF" -T nonsense Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "unknown batch system .nonsense.; available: local" err
	test ! -e a.txt
'

test_expect_success '-Z without Work Queue writes port 0, as CCTools does' '
	good_wf
	"$MF" --progress=quiet -Z port.txt Makeflow
	[ "$(cat port.txt)" = 0 ]
	test -e e.txt
'

test_expect_success '--local-cores 1: local jobs run one at a time' '
	cat >stamp.sh <<-\EOF
	s=$(date +%s%N); sleep 0.3; e=$(date +%s%N); echo "$s $e" > "$1"
	EOF
	wf Makeflow <<-\EOF
	one: stamp.sh
	    sh stamp.sh one
	two: stamp.sh
	    sh stamp.sh two
	EOF
	"$MF" --progress=quiet --local-cores 1 Makeflow
	read -r s1 e1 <one
	read -r s2 e2 <two
	[ "$e1" -le "$s2" ] || [ "$e2" -le "$s1" ]
'

test_expect_success '--wait-for-files-upto: outputs that appear after the rule exits are waited for' '
	wf Makeflow <<-\EOF
	out.txt:
	    touch started
	EOF
	rc=0; "$MF" --progress=quiet Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "did not create output" err
	rm -f started Makeflow.makeflowlog
	# a slow shared file system: out.txt appears a while after the rule ended
	(test_wait_until 60 test -e started || exit 1; test_wait_until 60 test -e done-seen; echo hi >out.txt) &
	test_track_pid $!
	# the rule has ended and makeflow is waiting when it logs so
	"$MF" --progress=quiet --wait-for-files-upto 60 -d makeflow -o debug.log Makeflow &
	mf=$!
	test_wait_until 60 grep -q "waiting up to 60 s for its outputs" debug.log
	touch done-seen
	wait $mf
	[ "$(cat out.txt)" = hi ]
'

test_expect_success '-X DIR: the workflow is read here, its rules and log are in DIR' '
	mkdir sub
	wf Makeflow <<-\EOF
	o.txt:
	    pwd > o.txt
	EOF
	"$MF" --progress=quiet -X sub Makeflow
	[ "$(cat sub/o.txt)" = "$PWD/sub" ]
	test -e sub/Makeflow.makeflowlog
	test ! -e o.txt
	rc=0; "$MF" -X nonexistent Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "makeflow: -X nonexistent: No such file or directory" err
'

test_expect_success '--argv FILE: options from a JSON object, MAKEFLOW names the workflow' '
	good_wf
	mv Makeflow work.mf
	echo "{\"summary-log\": \"s.txt\", \"max-local\": 1, \"progress\": \"quiet\", \"MAKEFLOW\": \"work.mf\"}" >args.json
	"$MF" --argv args.json
	grep -q "^Completed tasks:	 4/4" s.txt
	echo "{\"max-local\": [}" >bad.json
	rc=0; "$MF" --argv bad.json 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "argv bad.json:1:" err
'

test_expect_success 'CCTools options not supported here are refused with the reason' '
	good_wf
	for opt in "--singularity img" "--umbrella-spec x" "--sandbox" "--mesos-path x" "--log-verbose"; do
		rc=0; "$MF" $opt Makeflow 2>err || rc=$?
		cat err
		[ $rc = 1 ]
		grep -Eq "not (supported here|available in this build|available here)" err
	done
	test ! -e a.txt
'

test_expect_success 'the Slurm-only options with another batch type: a warning, and the run goes on' '
	good_wf
	"$MF" --progress=quiet --safe-submit-mode --tmp 100 Makeflow 2>err
	cat err
	grep -q "warning: --safe-submit-mode applies to -T slurm only" err
	test -e e.txt
'

test_expect_success '--storage-limit: no rule starts once the files created reach the limit' '
	wf Makeflow <<-\EOF
	a.txt:
	    head -c 5000 /dev/zero > a.txt
	b.txt:
	    head -c 5000 /dev/zero > b.txt
	c.txt:
	    head -c 5000 /dev/zero > c.txt
	d.txt:
	    head -c 5000 /dev/zero > d.txt
	EOF
	rc=0; "$MF" --progress=quiet -j 1 --storage-limit 8000 -f sum.txt Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "storage limit reached: the workflow.s files use" err
	test ! -e d.txt
	grep -q "^Tasks not run:" sum.txt
	# without the limit (or with type 3, off) all run
	rm -f *.txt Makeflow.makeflowlog
	"$MF" --progress=quiet -j 1 --storage-limit 8000 --storage-type 3 Makeflow
	test -e d.txt
'

test_expect_success '--storage-limit: intermediates are deleted once read, so a chain fits' '
	wf Makeflow <<-\EOF
	a.txt:
	    head -c 5000 /dev/zero > a.txt
	b.txt: a.txt
	    head -c 5000 /dev/zero > b.txt
	c.txt: b.txt
	    cat b.txt > c.txt
	EOF
	"$MF" --progress=quiet --storage-limit 12000 Makeflow
	test -e c.txt
	test ! -e a.txt
	test ! -e b.txt
	rc=0; "$MF" --storage-limit 1G --storage-type 1 Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "storage-type 1 (min): not supported here" err
'

test_expect_success '--do-not-save-failed-output: a failed rule.s outputs are deleted, not kept aside' '
	wf Makeflow <<-\EOF
	bad.txt:
	    echo partial > bad.txt; exit 3
	EOF
	rc=0; "$MF" --progress=quiet Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	test -e makeflow.failed.0/bad.txt
	rm -rf makeflow.failed.0 Makeflow.makeflowlog
	rc=0; "$MF" --progress=quiet --do-not-save-failed-output Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	test ! -e makeflow.failed.0
	test ! -e bad.txt
'

test_expect_success '--send-environment: a Work Queue task gets makeflow.s environment' '
	# the variable is read by the script (makeflow substitutes variables in commands)
	echo "echo \"[\$FROM_MAKEFLOW]\" > v.txt" >v.sh
	wf Makeflow <<-\EOF
	v.txt: v.sh
	    sh v.sh
	EOF
	# the worker does not have the variable; only makeflow does
	FROM_MAKEFLOW=yes start_master --send-environment Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat v.txt)" = "[yes]" ]
	rm -f v.txt Makeflow.makeflowlog
	FROM_MAKEFLOW=yes start_master Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat v.txt)" = "[]" ]
'

test_expect_success '-a -N PROJECT: the workflow.s progress is a catalog record of type makeflow' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	C=127.0.0.1:$DAEMON_PORT
	good_wf
	"$MF" --progress=quiet -a -N advproj -C "$C" Makeflow
	# the final record is sent before makeflow exits; the server takes it in a moment (UDP)
	final_seen() {
		"$BIN/catalog_query" -C "$C" --project advproj --json >out.json &&
			[ "$(jget out.json 0.completed 2>/dev/null)" = 4 ]
	}
	test_wait_until 30 final_seen
	cat out.json
	[ "$(jget out.json 0.type)" = makeflow ]
	[ "$(jget out.json 0.total)" = 4 ]
	[ "$(jget out.json 0.completed)" = 4 ]
	[ "$(jget out.json 0.running)" = 0 ]
	[ "$(jget out.json 0.batch_type)" = local ]
'

test_expect_success '--file-status: the HTML status page, rewritten while rules run and at the end' '
	# the rule ends once the page shows it running
	cat >waitpage.sh <<-\EOF
	i=0
	until grep -q "<p>Running: 1 </p>" page.html 2>/dev/null; do
		i=$((i+1)); [ $i -lt 600 ] || exit 1; sleep 0.05
	done
	echo done > w.txt
	EOF
	wf Makeflow <<-\EOF
	w.txt: waitpage.sh
	    sh waitpage.sh
	x.txt: w.txt
	    cat w.txt > x.txt
	EOF
	"$MF" --progress=quiet --file-status page.html --file-status-interval 1 Makeflow
	cat page.html
	grep -q "<p>Total: 2 </p>" page.html
	grep -q "<p>Completed: 2 </p>" page.html
	grep -q "<p>Running: 0 </p>" page.html
	grep -q "<p>Batch type: local </p>" page.html
	grep -q "Completed (C): green, 100.00%; Other (O): red, 0.00%" page.html
'

test_expect_success '--monitor-with-opened-files, --monitor-log-fmt: the monitor.s files' '
	echo hello >in.txt
	wf Makeflow <<-\EOF
	o.txt: in.txt
	    cat in.txt > o.txt
	EOF
	"$MF" --progress=quiet --monitor mon Makeflow
	test ! -e mon/resource-rule-0.files
	rm -rf mon o.txt Makeflow.makeflowlog
	"$MF" --progress=quiet --monitor mon --monitor-with-opened-files Makeflow
	test -e mon/resource-rule-0.files
	test -e mon/resource-rule-0.summary
	# --monitor-log-fmt: %% is the rule.s id, as in CCTools
	rm -rf mon o.txt Makeflow.makeflowlog
	"$MF" --progress=quiet --monitor mon --monitor-log-fmt "r-%%-mon" Makeflow
	test -e mon/r-0-mon.summary
'

test_expect_success '--shared-fs twice with -T wq: absolute paths under either are used in place' '
	mkdir -p sw home
	echo tool-data >sw/tool.txt
	sw=$PWD/sw
	home=$PWD/home
	wf Makeflow <<-EOF
	$home/out.txt: $sw/tool.txt
	    cat $sw/tool.txt > $home/out.txt
	EOF
	start_master --shared-fs "$sw" --shared-fs "$home" Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat home/out.txt)" = tool-data ]
'

test_expect_success '-T wq: an absolute path under no --shared-fs is refused, named' '
	mkdir -p elsewhere
	echo x >elsewhere/in.txt
	wf Makeflow <<-EOF
	out.txt: $PWD/elsewhere/in.txt
	    cat $PWD/elsewhere/in.txt > out.txt
	EOF
	start_master --shared-fs "$PWD/sw" Makeflow
	test_must_fail finish
	grep -q "elsewhere/in.txt: a file named by an absolute path must be under a --shared-fs directory" mf.out
'

test_expect_success '-P: a worker given -M tries the master of higher priority first' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	cat=localhost:$DAEMON_PORT
	proj=e2e-prio-$$
	mkdir lo hi
	printf "lo.txt:\n\techo lo > lo.txt\n" >lo/Makeflow
	printf "hi.txt:\n\techo hi > hi.txt\n" >hi/Makeflow
	(cd lo && "$MF" -T wq -p 0 -Z port -N $proj -C $cat -P 1 Makeflow >mf.out 2>&1) &
	lo=$!
	test_track_pid $lo
	(cd hi && "$MF" -T wq -p 0 -Z port -N $proj -C $cat -P 9 \
		--work-queue-preferred-connection by_apparent_ip Makeflow >mf.out 2>&1) &
	hi=$!
	test_track_pid $hi
	# both records carry their priority before a worker looks
	listed() {
		"$BIN/catalog_query" -C $cat --project $proj >q.json &&
		[ "$(jq "[.[] | select(.priority == 1 or .priority == 9)] | length" q.json)" = 2 ]
	}
	test_wait_until 30 listed
	jq -e ".[] | select(.priority == 9) | .manager_preferred_connection == \"by_apparent_ip\"" q.json
	jq -e ".[] | select(.priority == 1) | .manager_preferred_connection == \"by_ip\"" q.json
	# one worker at a time: the first serves the high-priority master to its end
	"$WORKER" -t 30 --single-shot -M $proj -C $cat >w1.out 2>&1
	wait $hi
	[ "$(cat hi/hi.txt)" = hi ]
	test ! -e lo/lo.txt
	"$WORKER" -t 30 --single-shot -M $proj -C $cat >w2.out 2>&1
	wait $lo
	[ "$(cat lo/lo.txt)" = lo ]
'

test_expect_success '-P and --work-queue-preferred-connection: bad values and other batch types refused' '
	good_wf
	rc=0; "$MF" -P 3 Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "\-P 3: this option is for Work Queue and needs -T wq" err
	rc=0; "$MF" -T wq -P high Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "\-P/--priority high: expected an integer" err
	rc=0; "$MF" -T wq --work-queue-preferred-connection by_mac Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "expected by_ip, by_hostname or by_apparent_ip" err
	test ! -e a.txt
'

test_expect_success '--wq-wait-queue-size N: no rule is dispatched before N workers have connected' '
	wf Makeflow <<-\EOF
	w.txt:
	    echo w > w.txt
	EOF
	start_master --wq-wait-queue-size 2 Makeflow
	start_worker --cores 1 localhost $port
	one() {
		"$BIN/work_queue_status" -l localhost $port >st.json &&
		[ "$(jq ".[0].workers_connected" st.json)" = 1 ]
	}
	test_wait_until 30 one
	# one worker of two: the rule is still waiting when the worker is there
	jq -e ".[0].tasks_waiting == 1 and .[0].tasks_dispatched == 0" st.json
	test ! -e w.txt
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat w.txt)" = w ]
'

test_expect_success '--debug-rotate-max: the -o file becomes FILE.old once it reaches the size' '
	good_wf
	"$MF" --progress=quiet -d all -o dbg --debug-rotate-max 500 Makeflow
	test -s dbg.old
	[ $(stat -c %s dbg.old) -ge 500 ]
	grep -q "makeflow\[" dbg
	"$MF" -c Makeflow >/dev/null
	rm -f dbg dbg.old
	"$MF" --progress=quiet -d all -o dbg Makeflow
	test ! -e dbg.old
	[ $(stat -c %s dbg) -ge 500 ]
'

test_expect_success '--monitor-log-name, --monitor-measure-dir: the monitor files named, the disk measured' '
	wf Makeflow <<-\EOF
	big:
	    head -c 3000000 /dev/zero > big
	EOF
	"$MF" --progress=quiet -d batch -o dbg --monitor mon --monitor-log-name "r-%%" \
		--monitor-measure-dir Makeflow
	test -s mon/r-0.summary
	grep -q -- "--measure-dir \. --sh" dbg
	jq -e ".disk[0] >= 2.8" mon/r-0.summary
'

# A rule whose command is over 300 KiB (one argument of sh -c may hold 128 KiB).
long_wf() {
	python3 -c "
arg = \"A\" * 307200
open(\"Makeflow\", \"w\").write(\"n.txt:\\n\\tprintf %s \" + arg + \" | wc -c > n.txt\\n\")
"
}

test_expect_success 'a 300 KiB command runs with -T local (from a script), which is then removed' '
	long_wf
	[ $(stat -c %s Makeflow) -gt 307200 ]
	"$MF" --progress=quiet Makeflow
	[ $(cat n.txt) = 307200 ]
	test ! -e Makeflow.makeflowlog.cmds
	# and measured by the resource monitor
	"$MF" -c Makeflow >/dev/null
	"$MF" --progress=quiet --monitor mon Makeflow
	[ $(cat n.txt) = 307200 ]
	test -s mon/resource-rule-0.summary
'

test_expect_success 'a 300 KiB command runs with -T wq (the script goes to the worker as an input)' '
	long_wf
	start_master Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ $(cat n.txt) = 307200 ]
	test ! -e Makeflow.makeflowlog.cmds
'

test_expect_success 'work_queue_factory -E, --env, --wrapper: the workers get the options, variables and prefix' '
	wf Makeflow <<-\EOF
	v.txt:
	    printenv FACTORY_VAR WRAPPED_VAR > v.txt
	EOF
	start_master Makeflow
	"$BIN/work_queue_factory" -T local --max-workers 1 --period 0.5 -t 5 \
		--env FACTORY_VAR=from-env --wrapper "env WRAPPED_VAR=inner" \
		--wrapper "env WRAPPED_VAR=outer" -E "-d worker -o worker-debug.log" \
		localhost $port >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	finish
	kill -TERM $fpid
	wait $fpid || true
	cat v.txt
	# the last --wrapper is the outermost: the inner one sets the variable last
	[ "$(echo $(cat v.txt))" = "from-env inner" ]
	test -s worker-debug.log
	grep -q "env WRAPPED_VAR=outer env WRAPPED_VAR=inner .*-d worker -o worker-debug.log" factory.out
'

test_expect_success 'work_queue_factory --wrapper-input that does not exist: refused before any worker' '
	rc=0
	"$BIN/work_queue_factory" -T local --wrapper "sh setup.sh" --wrapper-input setup.sh \
		localhost 1 >factory.out 2>&1 || rc=$?
	[ $rc != 0 ]
	grep -q "wrapper-input setup.sh: No such file or directory" factory.out
'

test_expect_success 'a --monitor-* option without --monitor is an error, as in CCTools' '
	good_wf
	for opt in --monitor-measure-dir --monitor-with-time-series "--monitor-log-name r-%%" \
		"--monitor-interval 2"; do
		rc=0; "$MF" $opt Makeflow 2>err || rc=$?
		cat err
		[ $rc = 1 ]
		grep -q -- "${opt%% *} needs --monitor DIR" err
	done
	test ! -e a.txt
'

test_expect_success 'work_queue_factory -O BYTES: its -o file is rotated to FILE.old' '
	"$BIN/work_queue_factory" -T local --period 0.1 -d all -o f.dbg -O 300 localhost 1 \
		>factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 30 test -s f.dbg.old
	kill -TERM $fpid
	wait $fpid || true
	[ $(stat -c %s f.dbg.old) -ge 300 ]
'

test_done
