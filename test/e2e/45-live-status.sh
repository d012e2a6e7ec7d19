#!/bin/bash
# 45-live-status.sh: end-to-end tests of work_queue_status --live against a real master
# (makeflow -T wq) and worker: repeated plain blocks when the output is not a terminal, redrawn
# in place on a terminal (a pty from script(1)), and a clean end on q, on SIGINT and when the
# master goes away, each with its message; and the catalog server's HTML page for a browser
# (curl with Accept: text/html, /index.html, and headless Chromium when installed), while the
# CCTools queries keep their answers.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow work_queue_worker work_queue_status catalog_server

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
ST=$BIN/work_queue_status
. "$TEST_SRCDIR/test/lib/wq-lib.sh"

# a workflow whose rules wait for $PWD/go (an absolute path: they run in worker sandboxes), so
# the master stays up until the case lets it end
slow_workflow() {
	wf Makeflow <<EOF2
CATEGORY=sim
a:
    while [ ! -e $PWD/go ]; do sleep 0.05; done; echo a > a
b:
    while [ ! -e $PWD/go ]; do sleep 0.05; done; echo b > b
CATEGORY=post
c: a b
    cat a b > c
EOF2
}

# blocks FILE: the number of complete frames ("--" lines) in FILE
blocks() {
	grep -c "^--\$" "$1" 2>/dev/null || true
}

test_expect_success '--live: plain blocks with workers, tasks by state and category, rates; q quits' '
	slow_workflow
	start_master Makeflow
	start_worker 127.0.0.1 $port
	mkfifo keys
	"$ST" --live --live-interval 0.2 127.0.0.1 $port <keys >live.out 2>live.err &
	st=$!
	test_track_pid $st
	exec 3>keys
	running() { grep -q "^sim  *[0-9]*  *[1-9]" live.out; }
	test_wait_until 60 running || { cat live.out live.err; false; }
	test_wait_until 30 eval "[ \$(blocks live.out) -ge 3 ]"
	echo q >&3
	wait $st
	exec 3>&-
	cat live.err
	grep -q "^work_queue_status: 127.0.0.1:$port: quit\$" live.err
	grep -q "^master 127.0.0.1:$port  project -  htc " live.out
	grep -q "^workers: 1 connected" live.out
	grep -q "^tasks by state: WAITING [0-9]* RUNNING [1-9]" live.out
	grep -q "^rates: [0-9.]* tasks done/s since the last refresh" live.out
	grep -q "^CATEGORY  *WAITING  *RUNNING  *DONE  *FAILED  *EXHAUSTIONS\$" live.out
	grep -q "^[^ ][^ ]*  *127.0.0.1:[0-9]*  *ACTIVE  *[0-9]" live.out
	# not a terminal: no escape sequences
	not grep -q "$(printf "\\033")" live.out
	touch go
	finish
'

test_expect_success '--live: SIGINT ends it cleanly, the end of the master with a message' '
	slow_workflow
	start_master Makeflow
	"$ST" --live --live-interval 0.2 127.0.0.1 $port </dev/null >live.out 2>live.err &
	st=$!
	test_track_pid $st
	test_wait_until 30 eval "[ \$(blocks live.out) -ge 2 ]"
	kill -INT $st
	rc=0; wait $st || rc=$?
	test $rc = 0
	grep -q "^work_queue_status: 127.0.0.1:$port: interrupted\$" live.err
	# again, until the master goes away
	"$ST" --live --live-interval 0.2 127.0.0.1 $port </dev/null >live2.out 2>live2.err &
	st=$!
	test_track_pid $st
	test_wait_until 30 eval "[ \$(blocks live2.out) -ge 1 ]"
	kill -TERM $mf
	rc=0; wait $st || rc=$?
	cat live2.err
	test $rc = 1
	grep -q "^work_queue_status: 127.0.0.1:$port: the master went away (" live2.err
'

test_expect_success '--live on a terminal redraws in place' '
	command -v script >/dev/null || { echo "script(1) missing (util-linux)"; false; }
	slow_workflow
	start_master Makeflow
	# script gives the view a pty; its input stays open until q is written
	mkfifo keys
	TERM=xterm script -qfec "\"$ST\" --live --live-interval 0.2 127.0.0.1 $port" tty.out <keys >/dev/null 2>&1 &
	sc=$!
	test_track_pid $sc
	exec 3>keys
	redrawn() { [ "$(grep -o "master 127.0.0.1:$port" tty.out 2>/dev/null | wc -l)" -ge 2 ]; }
	test_wait_until 30 redrawn || { cat -v tty.out; false; }
	printf q >&3
	wait $sc
	exec 3>&-
	grep -q "$(printf "\\033\\[H\\033\\[2J")" tty.out
	grep -q "(q: quit)" tty.out
	grep -q "quit" tty.out
	touch go
	kill -TERM $mf 2>/dev/null || true
'

test_expect_success '--live refuses what it cannot show' '
	test_must_fail "$ST" --live 2>err
	grep -q "live needs a master: HOST PORT" err
	test_must_fail "$ST" --live 127.0.0.1 1 </dev/null 2>err
	grep -q "^work_queue_status: 127.0.0.1:1: cannot connect: connection refused" err
'

test_expect_success 'the catalog server answers a browser with an HTML page of its projects' '
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport
	CAT=127.0.0.1:$DAEMON_PORT
	slow_workflow
	start_master -N live-$$ -C $CAT Makeflow
	listed() { curl -s http://$CAT/query.json | grep -q "live-$$"; }
	test_wait_until 30 listed
	curl -s -H "Accept: text/html,application/xhtml+xml" -D h.txt http://$CAT/ >page.html
	grep -qi "^Content-Type: text/html" h.txt
	grep -q "<table id=\"masters\">" page.html
	grep -q "<td>live-$$</td>" page.html
	curl -s http://$CAT/index.html >index.html
	grep -q "<td>live-$$</td>" index.html
	# without Accept text/html: the text listing and the JSON, as before
	curl -s http://$CAT/ >plain.txt
	grep -q "^catalog_server .* records" plain.txt
	not grep -q "<html" plain.txt
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" <(curl -s http://$CAT/query.json)
	if command -v chromium >/dev/null; then
		timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
			--user-data-dir="$PWD/prof" --enable-logging=stderr --v=0 \
			--dump-dom "http://$CAT/" >dom.html 2>chrome.err
		grep -q "<td>live-$$</td>" dom.html
		not grep -q ":CONSOLE" chrome.err
	fi
	kill -TERM $mf
'

test_done
