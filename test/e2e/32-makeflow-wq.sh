#!/bin/bash
# 32-makeflow-wq.sh: end-to-end tests of makeflow -T wq with real work_queue_worker processes
# over loopback TCP: a workflow with inputs, intermediates, renamed files and a failing rule;
# many workers; workers killed with kill -9 at random moments (every rule still completes once,
# outputs correct); a worker started through the catalog by project name; password and TLS
# mismatches refused; a rogue peer sending garbage leaves the master running; a worker whose
# cache fills its --disk gets the objects no rule needs dropped.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker
test_require_bin catalog_server

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=180

test_expect_success 'the README tour of Work Queue runs as written (it waits for the port file)' '
	cp -r "$TEST_SRCDIR/doc/examples/hello" hello
	# the commands of the tour: the "$ " lines of the block that starts the master
	awk "/^\\\$ .*makeflow -T wq/ { on = 1 } on && /^\`\`\`/ { exit } on && /^\\\$ / { print }" \
		"$TEST_SRCDIR/README.md" | sed "s/^\\\$ //" >tour.sh
	grep -q "work_queue_worker" tour.sh
	echo wait >>tour.sh
	(cd hello && PATH=$BIN:$PATH timeout 120 bash -e ../tour.sh) >tour.out 2>&1 || {
		cat tour.sh tour.out >&2
		exit 1
	}
	grep -q "^bytes:" hello/total.txt
'

test_expect_success 'a workflow runs on one worker: inputs, intermediates, renaming' '
	printf "ACGT\nTTGA\n" >ref.fa
	wf Makeflow <<-\EOF
	rev.txt: ref.fa
	    tr ACGT TGCA < ref.fa > rev.txt
	count.txt: rev.txt
	    wc -l < rev.txt > count.txt
	renamed.txt: ref.fa->input.fa
	    cat input.fa input.fa > out && mv out renamed.txt
	EOF
	start_master Makeflow
	start_worker --cores 2 localhost $port
	finish
	[ "$(cat rev.txt)" = "$(printf "TGCA\nAACT")" ]
	[ "$(tr -d " " <count.txt)" = 2 ]
	[ "$(wc -l <renamed.txt)" = 4 ]
'

test_expect_success 'a failing rule fails the run, named by file and line; others complete' '
	wf Makeflow <<-\EOF
	good.txt:
	    echo fine > good.txt
	bad.txt:
	    echo checking; echo "no such <input>" >&2; exit 3
	EOF
	start_master Makeflow
	start_worker --cores 1 localhost $port
	test_must_fail finish
	[ "$(cat good.txt)" = fine ]
	grep -q "Makeflow:3: rule 1: exit code 3" mf.out
	# what the failed task wrote (the worker keeps stdout and stderr together) is shown,
	# and kept in INFO.json for the report
	grep -A2 "the last lines it wrote:" mf.out >tail.txt
	grep -qx "  | checking" tail.txt
	grep -qx "  | no such <input>" tail.txt
	grep -q "\"stderr_tail\": \"checking\\\\nno such <input>\"" makeflow.failed.1/INFO.json
'

test_expect_success 'a worker given HOST PORT leaves as soon as its master ends, status 0' '
	wf Makeflow <<-\EOF
	d.txt:
	    echo dismissed > d.txt
	EOF
	start_master Makeflow
	"$WORKER" -t 120 --cores 1 localhost $port >leave.out 2>&1 &
	lw=$!
	test_track_pid $lw
	finish
	[ "$(cat d.txt)" = dismissed ]
	# not after its idle timeout (120 s): the dismissal said the master is ending
	gone() { ! kill -0 $lw 2>/dev/null; }
	test_wait_until 30 gone
	rc=0; wait $lw || rc=$?
	[ $rc = 0 ]
	grep -q "ending: the master ended" leave.out
'

test_expect_success 'many rules on four workers; each rule ran once' '
	for i in $(seq 1 200); do
		printf "o.%d:\n\techo %d >> runs.log; echo %d > o.%d\n" $i $i $i $i
	done >Makeflow
	start_master Makeflow
	for i in 1 2 3 4; do start_worker --cores 1 localhost $port; done
	finish
	for i in $(seq 1 200); do [ "$(cat o.$i)" = $i ] || exit 1; done
'

test_expect_success 'workers killed with -9 at random moments: every rule completes, outputs right' '
	for i in $(seq 1 120); do
		printf "k.%d:\n\tsleep 0.0%d; echo %d > k.%d\n" $i $((i % 10)) $i $i
	done >Makeflow
	start_master Makeflow
	for round in 1 2 3 4 5 6; do
		start_worker --cores 2 localhost $port
		sleep 0.$((RANDOM % 9 + 1))
		kill -9 $w 2>/dev/null || true
	done
	start_worker --cores 2 localhost $port
	finish
	for i in $(seq 1 120); do [ "$(cat k.$i)" = $i ] || exit 1; done
'

test_expect_success 'a worker finds the master through the catalog by project name' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	cat=localhost:$DAEMON_PORT
	wf Makeflow <<-\EOF
	p.txt:
	    echo project > p.txt
	EOF
	start_master -N e2e-proj-$$ -C $cat Makeflow
	start_worker --cores 1 -M e2e-proj-$$ -C $cat
	finish
	[ "$(cat p.txt)" = project ]
'

test_expect_success 'a finished master leaves the catalog; a factory on the catalog starts workers at once' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	cat=localhost:$DAEMON_PORT
	wf Makeflow <<-\EOF
	c.txt:
	    echo catalog > c.txt
	EOF
	start_master -N e2e-gone-$$ -C $cat Makeflow
	"$BIN/catalog_query" -C $cat --project e2e-gone-$$ >listed.txt
	grep -q "e2e-gone-$$" listed.txt
	# the factory sees the waiting rule in the catalog well before the next 60 s update
	"$BIN/work_queue_factory" -T local -M e2e-gone-$$ --catalog $cat --max-workers 1 --period 0.5 \
		-t 5 >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	test_wait_until 40 test -s c.txt
	finish
	kill -TERM $fpid
	wait $fpid || true
	# the master said goodbye: its record is gone long before the catalog lifetime
	gone() { ! "$BIN/catalog_query" -C $cat --project e2e-gone-$$ | grep -q "e2e-gone-$$"; }
	test_wait_until 20 gone
'

test_expect_success 'work_queue_factory -T local starts workers for the master, at most --max-workers' '
	for i in $(seq 1 30); do
		printf "f.%d:\n\tsleep 0.1; echo %d > f.%d\n" $i $i $i
	done >Makeflow
	start_master Makeflow
	"$BIN/work_queue_factory" -T local --max-workers 2 --period 0.5 -t 5 localhost $port >factory.out 2>&1 &
	fpid=$!
	test_track_pid $fpid
	finish
	for i in $(seq 1 30); do [ "$(cat f.$i)" = $i ] || exit 1; done
	kill -TERM $fpid
	wait $fpid
	grep -q "started" factory.out
	# never more than two workers at once
	not grep -E "\(([3-9]|[1-9][0-9]+) running\)" factory.out
'

test_expect_success 'Work Queue setup errors stop makeflow before any rule, naming the cause' '
	wf Makeflow <<-\EOF
	a.txt:
	    echo ran >> ran.log; echo a > a.txt
	EOF
	# the port file cannot be written
	rc=0
	"$MF" -T wq -p 0 -Z nodir/port Makeflow >e1.out 2>&1 || rc=$?
	[ $rc = 1 ]
	grep -q "cannot write the port file nodir/port: No such file or directory" e1.out
	grep -q "nothing was run" e1.out
	# the port is taken (a catalog server holds it)
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	rc=0
	"$MF" -T wq -p $DAEMON_PORT Makeflow >e2.out 2>&1 || rc=$?
	[ $rc = 1 ]
	grep -q "cannot listen on port $DAEMON_PORT: address already in use" e2.out
	# the password file is missing, then empty
	rc=0
	"$MF" -T wq -p 0 --password no.such.pw Makeflow >e3.out 2>&1 || rc=$?
	[ $rc = 1 ]
	grep -q "password file no.such.pw: No such file or directory" e3.out
	: >pw.empty
	chmod 600 pw.empty
	rc=0
	"$MF" -T wq -p 0 --password pw.empty Makeflow >e4.out 2>&1 || rc=$?
	[ $rc = 1 ]
	grep -q "password file pw.empty: empty" e4.out
	# nothing ran, nothing was moved aside
	[ ! -e ran.log ] && [ ! -e a.txt ]
	not ls -d makeflow.failed.* 2>/dev/null
	not grep -q "cannot submit" e1.out e2.out e3.out e4.out
'

test_expect_success 'silent connections flooding the master do not lock a worker out' '
	wf Makeflow <<-EOF
	f.txt:
	    echo flood > f.txt
	g.txt:
	    while [ ! -e $PWD/release ]; do sleep 0.1; done; echo done > g.txt
	EOF
	start_master Makeflow
	python3 "$TEST_SRCDIR/test/lib/flood.py" $port 80 >flood.log 2>&1 &
	test_track_pid $!
	test_wait_until 60 test -s flood.ready
	# a real worker from the same address gets in and runs a task while the flood holds
	start_worker --cores 2 localhost $port
	test_wait_until 60 test -s f.txt
	[ "$(cat f.txt)" = flood ]
	# the connections closed for it are logged, and the lines dropped are summed up
	grep -q "closed a silent connection from 127.0.0.1" mf.out
	test_wait_until 60 grep -q "more suppressed (connections refused or closed" mf.out
	touch release
	finish
	[ "$(cat g.txt)" = done ]
'

test_expect_success 'a worker with the wrong password is refused and exits 2' '
	echo "right horse" >pw.right
	echo "wrong horse" >pw.wrong
	chmod 600 pw.right pw.wrong
	wf Makeflow <<-\EOF
	a.txt:
	    echo a > a.txt
	EOF
	start_master --password pw.right Makeflow
	rc=0
	"$WORKER" -t 10 -P pw.wrong localhost $port >wrong.out 2>&1 || rc=$?
	[ $rc = 2 ]
	grep -q "password" wrong.out
	start_worker -P pw.right --cores 1 localhost $port
	finish
	[ "$(cat a.txt)" = a ]
'

test_expect_success 'a plain worker against a TLS master is refused with a clear message' '
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj /CN=localhost -keyout key.pem -out cert.pem 2>/dev/null
	fp=$(openssl x509 -in cert.pem -noout -fingerprint -sha256 | cut -d= -f2)
	wf Makeflow <<-\EOF
	t.txt:
	    echo tls > t.txt
	EOF
	start_master --ssl-cert cert.pem --ssl-key key.pem Makeflow
	rc=0
	"$WORKER" -t 10 localhost $port >plain.out 2>&1 || rc=$?
	[ $rc = 2 ]
	grep -qi "tls" plain.out
	start_worker --ssl-fingerprint "$fp" --cores 1 localhost $port
	finish
	[ "$(cat t.txt)" = tls ]
'

test_expect_success 'a rogue peer sending garbage does not stop the master' '
	wf Makeflow <<-\EOF
	r.txt:
	    echo still > r.txt
	EOF
	start_master Makeflow
	python3 -c "
import socket
for payload in (b\"GET / HTTP/1.0\r\n\r\n\", b\"\xf5\x71\x01\x00\x00\x00\x00\x00\xff\xff\xff\xff\", bytes(range(256))):
    s = socket.create_connection((\"127.0.0.1\", $port))
    s.sendall(payload)
    s.settimeout(5)
    try:
        s.recv(4096)
    except Exception:
        pass
    s.close()
"
	kill -0 $mf
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat r.txt)" = still ]
'

test_expect_success 'a worker whose cache fills its --disk gets objects no rule needs dropped' '
	# four 30 MB inputs, each its own cached object; the worker may use 100 MB: the fourth
	# does not fit beside the first three until the master has them dropped (and each task
	# may use its allocation beside its own cached inputs)
	for i in 1 2 3 4; do
		yes "input $i" | head -c 31457280 >big.$i
		printf "size.%d: big.%d\n\twc -c < big.%d > size.%d\n" $i $i $i $i
	done >Makeflow
	start_master Makeflow -d wq -o master.log
	start_worker --cores 1 --disk 100 localhost $port
	finish
	for i in 1 2 3 4; do [ "$(tr -d " " <size.$i)" = 31457280 ] || exit 1; done
	grep -q "disk full: dropping" master.log
	# a task to run whose object was refused or late never lets a queued one take its place
	! grep -q "bookkeeping mismatch" master.log
'

test_expect_success 'with no worker the progress line shows the tasks queued, none running' '
	for i in 1 2 3; do printf "o$i:\n\twhile [ ! -e $PWD/go ]; do sleep 0.05; done; echo $i > o$i\n"; done >Makeflow
	start_master --progress=plain Makeflow
	test_wait_until 60 grep -q "0/3 done, 0 running, 3 queued, 0 waiting" mf.out || { cat mf.out; exit 1; }
	# running is what the master says runs: one task on a one-core worker
	start_worker --cores 1 localhost $port
	test_wait_until 60 grep -q "0/3 done, 1 running, 2 queued, 0 waiting" mf.out || { cat mf.out; exit 1; }
	touch go
	finish
	cat mf.out
	grep -Eq "^makeflow: 3/3 done, 0 failed in [0-9.]+ s$" mf.out
'

test_expect_success 'a task larger than every connected worker is warned about once, not waited on in silence' '
	wf Makeflow <<-\EOF
	small:
	    echo s > small
	big:
	@CORES=4
	    echo b > big
	EOF
	start_master --progress=plain --batch-option unfit-warning=1 Makeflow
	start_worker --cores 1 --memory 1000 localhost $port
	test_wait_until 60 grep -q "wq: 1 task needs more than any of the 1 connected worker has and waits for a larger one; e.g. rule 1 (line 3) asks for cores 4; the largest worker has cores 1, memory 1000 MB" mf.out || { cat mf.out; exit 1; }
	test_wait_until 60 test -e small
	kill $mf
	wait $mf || true
	[ "$(grep -c "connected worker" mf.out)" = 1 ]
'

test_done
