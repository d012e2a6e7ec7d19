#!/bin/bash
# 40-hostile.sh: the hostile probes as a regression suite. Each probe is one row of a table:
# a severity (critical, major, minor), what is done to which program, and the expected outcome
# (no crash, no hang, a clear error naming the file and line or the peer, no sandbox escape, no
# completed rule re-run after kill -9). doc/hostile-probes.md is the same table in prose.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow work_queue_worker work_queue_status work_queue_factory \
	catalog_server catalog_query catalog_update resource_monitor

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
ROGUE=$TEST_SRCDIR/test/lib/rogue-peer.py
TEST_TIMEOUT=${HOSTILE_TIMEOUT:-90}

# probe SEVERITY NAME EXPECTED BODY: one row of the table. The case's title carries the
# severity, so a failing row says at once how bad the regression is.
probe() {
	case "$1" in critical | major | minor) ;; *) echo "bad severity $1" >&2 && exit 2 ;; esac
	test_expect_success "[$1] $2: $3" "$4"
}

# ---- helpers used by the rows --------------------------------------------------------------

# clear_error REGEX CMD...: CMD ends within 30 s with a plain error exit (1..4: not killed by a
# signal, not timed out) and its stderr matches REGEX (extended).
clear_error() {
	local re=$1 rc=0
	shift
	timeout -s KILL 30 "$@" >out 2>err </dev/null || rc=$?
	cat err
	[ $rc -ge 1 ] && [ $rc -le 4 ] || { echo "exit status $rc (expected 1..4): $*"; return 1; }
	grep -Eq "$re" err || { echo "no message matching: $re"; return 1; }
}

# mf_refuses FILE LINE_RE [makeflow options...]: makeflow refuses FILE before anything runs, with
# a message naming FILE (and LINE_RE after it, e.g. ":3:"); no rule ran.
mf_refuses() {
	local file=$1 where=$2
	shift 2
	clear_error "^makeflow: (error: )?$file$where" "$MF" "$@" "$file" &&
		[ ! -e marker ] || { echo "a rule ran"; return 1; }
}

# seeded_bytes SEED N: N pseudo-random bytes, the same for a given seed.
seeded_bytes() {
	python3 -c 'import random,sys; r=random.Random(int(sys.argv[1])); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(int(sys.argv[2]))))' "$1" "$2"
}

# log_complete: how many rule completions the transaction log holds.
log_complete() {
	[ -f Makeflow.makeflowlog ] || { echo 0 && return 0; }
	awk '$1 == "N" && $4 == 3' Makeflow.makeflowlog | wc -l
}

complete_at_least() {
	[ "$(log_complete)" -ge "$1" ]
}

# rogue_vs_master MODE LOG_RE: a makeflow -T wq master; the rogue worker MODE connects, and the
# master must drop it (the rogue sees the connection closed) and log LOG_RE naming the peer
# (when LOG_RE is not empty); then a real worker runs the workflow to the end.
rogue_vs_master() {
	printf "a:\n\techo done > a\n" >Makeflow &&
		start_master Makeflow &&
		timeout -s KILL 70 python3 "$ROGUE" worker "$port" "$1" &&
		kill -0 "$mf" &&
		{ [ -z "$2" ] || test_wait_until 20 grep -Eq "$2" mf.out; } &&
		start_worker localhost "$port" &&
		finish &&
		[ "$(cat a)" = done ]
}

# rogue_vs_worker MODE LOG_RE: a rogue master MODE; a worker connects to it. The rogue must see
# what the protocol says (closed connection, refused tasks), the worker must stay up and log
# LOG_RE (when not empty).
rogue_vs_worker() {
	timeout -s KILL 70 python3 "$ROGUE" master pf "$1" >rogue.out 2>&1 &
	local r=$!
	test_track_pid $r
	test_wait_for_file pf 20 || { cat rogue.out; return 1; }
	"$WORKER" -t 60 -s wd localhost "$(cat pf)" >worker.out 2>&1 &
	local w=$!
	test_track_pid $w
	local rc=0
	wait $r || rc=$?
	cat rogue.out worker.out
	[ $rc = 0 ] || { echo "the rogue master saw a wrong answer (exit $rc)"; return 1; }
	{ [ -z "$2" ] || test_wait_until 20 grep -Eq "$2" worker.out; } || return 1
	# after a protocol violation the worker goes on trying to connect; after shutdown it exits 0
	if kill -0 $w 2>/dev/null; then return 0; fi
	rc=0
	wait $w || rc=$?
	[ $rc = 0 ] || { echo "the worker exited $rc"; return 1; }
}

# ---- malformed workflows -------------------------------------------------------------------

probe major 'makeflow: binary garbage' 'refused with FILE:LINE, no crash' '
	seeded_bytes 7 4096 >garbage.mf &&
	mf_refuses garbage.mf ":[0-9]+:"
'

probe major 'makeflow: NUL byte in a command' 'refused with FILE:LINE naming the NUL' '
	printf "marker:\n\ttouch marker\na:\n\techo hi\0 > a\n" >nul.mf &&
	mf_refuses nul.mf ":4: NUL"
'

probe major 'makeflow: unterminated double quote' 'refused with FILE:LINE' '
	printf "marker:\n\ttouch marker\na:\n\techo \"open > a\n" >q.mf &&
	mf_refuses q.mf ":4: unterminated double quote"
'

probe major 'makeflow: unterminated single quote in a variable' 'refused with FILE:LINE' '
	printf "X='\''open\nmarker:\n\ttouch marker\n" >q1.mf &&
	mf_refuses q1.mf ":1: unterminated single quote"
'

probe major 'makeflow: 300,000 lines' 'parsed and run within the case timeout' '
	python3 -c "
for i in range(300000): print(\"# line\", i)
print(\"a:\"); print(\"\\techo big > a\")" >huge.mf &&
	"$MF" --progress=quiet huge.mf &&
	[ "$(cat a)" = big ]
'

probe major 'makeflow: doubling variables 200 deep' 'refused at the parse memory budget with FILE:LINE, bounded memory' '
	python3 -c "
print(\"V0=x\")
for i in range(1, 200): print(\"V%d=\$(V%d)\$(V%d)\" % (i, i - 1, i - 1))
print(\"marker:\"); print(\"\\ttouch marker\")" >deep.mf &&
	mf_refuses deep.mf ":[0-9]+: parsing needs more than the memory budget" --parse-memory=64M
'

probe major 'makeflow: variables that refer to each other' 'refused with FILE:LINE' '
	printf "A=\$(B)\nB=\$(A)\nmarker:\n\ttouch marker\n" >rec.mf &&
	mf_refuses rec.mf ":1: undefined variable"
'

probe major 'makeflow: a rule depending on itself' 'refused as a cycle with FILE:LINE' '
	printf "marker:\n\ttouch marker\na: a\n\ttouch a\n" >self.mf &&
	mf_refuses self.mf ":3: cycle: a -> a"
'

probe major 'makeflow: a three-rule cycle' 'refused as a cycle with FILE:LINE naming it' '
	printf "marker:\n\ttouch marker\na: b\n\ttouch a\nb: c\n\ttouch b\nc: a\n\ttouch c\n" >cyc.mf &&
	mf_refuses cyc.mf ":[0-9]+: cycle: .* -> .* -> .* -> "
'

probe major 'makeflow --json: truncated document' 'refused with FILE:LINE' '
	echo "{\"rules\": [ {\"command\": \"touch marker\", \"outputs\": [" >bad.json &&
	mf_refuses bad.json ":[0-9]+:" --json
'

probe major 'makeflow --json: binary garbage' 'refused with FILE:LINE' '
	seeded_bytes 11 2048 >g.json &&
	mf_refuses g.json ":[0-9]+:" --json
'

probe major 'makeflow --json: not an object' 'refused naming the file' '
	echo "[1, 2, 3]" >arr.json &&
	mf_refuses arr.json ":1:1: a workflow must be a JSON object" --json
'

probe major 'makeflow --json: a command of the wrong type' 'refused naming the file and rule' '
	echo "{\"rules\": [{\"command\": 5, \"outputs\": [\"marker\"]}]}" >t.json &&
	mf_refuses t.json ":1:24: rule 0: .command. must be a string" --json
'

probe major 'makeflow --json: a rule depending on itself' 'refused as a cycle naming the rule' '
	echo "{\"rules\": [{\"command\": \"touch a\", \"outputs\": [\"a\"], \"inputs\": [\"a\"]}]}" >s.json &&
	mf_refuses s.json ":1: cycle: a -> a" --json
'

probe major 'makeflow --jx: a syntax error' 'refused with FILE:LINE:COLUMN' '
	echo "{\"rules\": [{\"command\": x + , \"outputs\": [\"a\"]}]}" >e.jx &&
	mf_refuses e.jx ":1:[0-9]+: unexpected" --jx
'

probe major 'makeflow --jx: an undefined symbol' 'refused with FILE:LINE:COLUMN naming it' '
	echo "{\"define\": {\"a\": a}, \"rules\": [{\"command\": \"touch \" + a, \"outputs\": [\"a\"]}]}" >u.jx &&
	mf_refuses u.jx ":1:[0-9]+: undefined symbol .a." --jx
'

# ---- bad command lines, every program ------------------------------------------------------

probe minor 'catalog_server: bad port' 'exit 1 naming the option and the range' '
	clear_error "^catalog_server: error: -p 99999: expected an integer between 0 and 65535" \
		"$BIN/catalog_server" -p 99999
'

probe minor 'catalog_server: unknown option' 'exit 1 naming it' '
	clear_error "^catalog_server: error: unknown option --frobnicate" "$BIN/catalog_server" --frobnicate
'

probe minor 'catalog_query: bad catalog port' 'exit 1 naming it' '
	clear_error "^catalog_query: error: catalog host .nohost:notaport.: bad port" \
		"$BIN/catalog_query" -C nohost:notaport
'

probe minor 'catalog_query: bad --where' 'exit 1 with the expected form' '
	clear_error "^catalog_query: error: --where .*: expression: unexpected end at byte 3" "$BIN/catalog_query" --where "((("
'

probe minor 'catalog_query: no catalog listening' 'exit 2 at once, naming the server and the reason' '
	clear_error "^catalog_query: no catalog server answered \(127.0.0.1:1: connect: connection refused\)" \
		"$BIN/catalog_query" -C 127.0.0.1:1
'

probe minor 'catalog_update: missing file' 'exit 1 naming the file' '
	clear_error "^catalog_update: error: /nonexistent/rec.json: No such file" \
		"$BIN/catalog_update" -C 127.0.0.1:1 /nonexistent/rec.json
'

probe minor 'work_queue_worker: no master' 'exit 1 saying what is needed' '
	clear_error "^work_queue_worker: no master given" "$WORKER"
'

probe minor 'work_queue_worker: bad port and bad cores' 'exit 1 naming the value' '
	clear_error "^work_queue_worker: port .notaport.: must be 1..65535" "$WORKER" localhost notaport &&
	clear_error "^work_queue_worker: --cores: .-3. is not a number of cores" "$WORKER" --cores -3 localhost 9123
'

probe minor 'work_queue_worker: unusable workdir and password file' 'exit 1 naming the path' '
	clear_error "^work_queue_worker: workdir /proc/nonexistent/wd: No such file" \
		"$WORKER" -s /proc/nonexistent/wd localhost 9123 &&
	clear_error "^work_queue_worker: password file /nonexistent/pw: No such file" \
		"$WORKER" --password /nonexistent/pw localhost 9123
'

probe minor 'work_queue_status: bad port, nobody listening' 'exit 1 naming the value or the peer' '
	clear_error "^work_queue_status: error: port .notaport.: expected 1..65535" \
		"$BIN/work_queue_status" -W 127.0.0.1 notaport &&
	clear_error "^work_queue_status: 127.0.0.1:1: cannot connect: connection refused" \
		"$BIN/work_queue_status" -W 127.0.0.1 1
'

probe minor 'makeflow: bad -j, -r, -T and a missing workflow' 'exit 1 naming the option or file' '
	printf "marker:\n\ttouch marker\n" >Makeflow &&
	clear_error "^makeflow: error: option -j: .0. is not an integer >= 1" "$MF" -j 0 Makeflow &&
	clear_error "^makeflow: error: option -r: .-1. is not an integer >= 0" "$MF" -r -1 Makeflow &&
	clear_error "^makeflow: error: -T nosuch: unknown batch system .nosuch.; available: local" "$MF" -T nosuch Makeflow &&
	clear_error "^makeflow: error: -T condor: batch system condor is not available in this build .yet." "$MF" -T condor Makeflow &&
	clear_error "^makeflow: error: cannot read workflow /nonexistent/Makeflow" "$MF" /nonexistent/Makeflow &&
	clear_error "unrecognized option .--frobnicate." "$MF" --frobnicate Makeflow &&
	[ ! -e marker ]
'

probe minor 'resource_monitor: no command, bad limits, bad interval' 'exit 4 naming the value' '
	clear_error "^resource_monitor: no command given" "$BIN/resource_monitor" &&
	clear_error "^resource_monitor: -L: invalid limits: memory: bad value .lots." \
		"$BIN/resource_monitor" -L "memory: lots" -- true &&
	clear_error "^resource_monitor: -i abc: expected a number of seconds" "$BIN/resource_monitor" -i abc -- true
'

probe minor 'resource_monitor: a command that does not exist' 'non-zero exit naming the command' '
	clear_error "cannot execute ./nonexistent/prog.: No such file" "$BIN/resource_monitor" -- /nonexistent/prog
'

probe minor 'work_queue_factory: no master, bad type, bad counts' 'exit 1 naming the option' '
	clear_error "^work_queue_factory: error: expected HOST PORT or -M PROJECT" "$BIN/work_queue_factory" &&
	clear_error "^work_queue_factory: error: -T nosuch: unknown batch system .nosuch." \
		"$BIN/work_queue_factory" -T nosuch localhost 9123 &&
	clear_error "^work_queue_factory: error: --max-workers -1: expected an integer" \
		"$BIN/work_queue_factory" --max-workers -1 localhost 9123 &&
	clear_error "^work_queue_factory: error: --min-workers 5 is above --max-workers 2" \
		"$BIN/work_queue_factory" --min-workers 5 --max-workers 2 localhost 9123
'

# ---- kill -9 of makeflow at several moments --------------------------------------------------

# A 30-rule workflow, run with -j 2, is killed with SIGKILL at four moments (as soon as it has
# started, then after 8, 16 and 24 logged completions), restarted each time, and finished. Each
# rule appends its name to a tally when it runs; the tally is checked against the log.
probe critical 'makeflow: kill -9 at four moments of a 30-rule -j 2 run' 'every restart resumes; the run completes; no rule whose completion was logged ran again' '
	python3 -c "
for i in range(30):
    print(\"out.%d:\" % i)
    print(\"\\techo r%d >> tally; sleep 0.1; echo %d > out.%d\" % (i, i, i))" >Makeflow
	for k in 0 8 16 24; do
		"$MF" -j 2 --progress=quiet Makeflow >run.$k.log 2>&1 &
		pid=$!
		test_track_pid $pid
		test_wait_until 60 complete_at_least $k || exit 1
		[ $k != 0 ] || test_wait_for_file tally 60 || exit 1
		if kill -KILL $pid 2>/dev/null; then wait $pid || true; else wait $pid || exit 1; fi
		echo "killed after $(log_complete) completions"
	done
	"$MF" -j 2 --progress=quiet Makeflow
	for i in $(seq 0 29); do [ "$(cat out.$i)" = $i ] || exit 1; done
	python3 - <<-\EOF
	import collections, sys
	runs = collections.Counter(l.strip() for l in open("tally"))
	started, done, again = collections.Counter(), set(), []
	for line in open("Makeflow.makeflowlog"):
	    f = line.split()
	    if not f or f[0] != "N":
	        continue
	    node, state = int(f[2]), int(f[3])
	    if state == 2:
	        if node in done:
	            again.append(node)
	        started[node] += 1
	    elif state == 3:
	        done.add(node)
	print("executions:", sum(runs.values()), "rules:", len(runs))
	if len(done) != 30:
	    sys.exit("only %d rules logged complete" % len(done))
	if again:
	    sys.exit("rules started again after a logged completion: %s" % again)
	over = [r for r, n in runs.items() if n > started[int(r[1:])]]
	if over:
	    sys.exit("rules ran more often than the log started them: %s" % over)
	EOF
'

# ---- rogue workers against a makeflow -T wq master ---------------------------------------------

probe critical 'master: a rogue worker sends 4 KB of garbage' 'dropped and logged with its address; the run goes on with a real worker' '
	rogue_vs_master garbage "wq: 127.0.0.1:[0-9]+: protocol violation: not the work queue protocol"
'

probe major 'master: a rogue worker sends a wrong hello' 'dropped and logged with its address' '
	rogue_vs_master badhello "wq: 127.0.0.1:[0-9]+: protocol violation: message .hello."
'

probe major 'master: a worker of another protocol version' 'refused with both versions named' '
	rogue_vs_master oldproto "wq: 127.0.0.1:[0-9]+: refused: worker speaks protocol 7.3, this master speaks 1.x"
'

probe critical 'master: a rogue worker announces a 4 GiB frame' 'dropped before anything is allocated, logged' '
	rogue_vs_master oversize "wq: 127.0.0.1:[0-9]+: protocol violation: frame of 4294967280 bytes exceeds the limit"
'

probe major 'master: a rogue worker writes half a frame and closes' 'the connection is forgotten; the run goes on' '
	rogue_vs_master half ""
'

probe major 'master: a correct hello, then an unknown message' 'dropped and logged as a violation' '
	rogue_vs_master nonsense "wq: 127.0.0.1:[0-9]+: protocol violation: unknown message .frobnicate."
'

# ---- a rogue master against work_queue_worker ------------------------------------------------

probe critical 'worker: a rogue master answers with garbage' 'the worker logs the violation naming the master and stays up' '
	rogue_vs_worker garbage "master localhost:[0-9]+: .*bad magic"
'

probe critical 'worker: a rogue master announces a 4 GiB frame' 'refused before anything is allocated; the worker stays up' '
	rogue_vs_worker oversize "master localhost:[0-9]+: .*frame of 4294967280 bytes exceeds the limit"
'

probe major 'worker: a rogue master sends an unknown message' 'the worker logs the violation and stays up' '
	rogue_vs_worker nonsense "master localhost:[0-9]+: protocol violation: unknown message .frobnicate."
'

probe critical 'worker: tasks whose names leave the sandbox' '../x, /etc/passwd, a/../../x, ./../x and ../../escaped refused (bad_name); outputs that are links, or behind a linked directory, reported missing and never read' '
	rogue_vs_worker escape "" &&
	for i in 1 2 3 4 5; do
		grep -Fq "\"m\": \"task_refused\", \"id\": $i, \"try\": 1, \"code\": \"bad_name\"" rogue.out || exit 1
	done &&
	grep -q "absolute names are not allowed" rogue.out &&
	grep -q "is a symbolic link: out" rogue.out &&
	grep -q "is a symbolic link: d/hostname" rogue.out &&
	[ ! -e ../escaped ] && [ ! -e wd/escaped ]
'

# ---- a full disk under a worker ----------------------------------------------------------------

# The worker keeps a reserve of max(100 MB, 1 %) of its file system free, so a tmpfs smaller than
# that reads as full and gets no task at all; 110 MB leaves 10 MB the master can use. A task
# that writes 200 MB hits ENOSPC: the rule fails with its exit code, the space is given back, the
# other rule runs on the same worker, and the worker stays up.
probe major 'worker: a task writes more than its disk holds' 'the rule fails cleanly naming FILE:LINE, the other rule completes on the same worker, which frees the space and leaves with status 0 when its master ends' '
	if [ "$(id -u)" != 0 ]; then echo "not root: no tmpfs can be mounted; not run" && exit 0; fi
	w= &&
	mkdir wd &&
	mount -t tmpfs -o size=110m htc-hostile wd &&
	printf "big.out:\n\thead -c 200M /dev/zero > big.out\nsmall.out:\n\techo small > small.out\n" >Makeflow &&
	rc=0 &&
	{ start_master Makeflow &&
		start_worker -s wd localhost "$port" &&
		test_must_fail finish &&
		grep -q "Makeflow:1: rule 0 failed" mf.out &&
		[ "$(cat small.out)" = small ] &&
		wait $w && w= &&
		grep -q "the master ended" workers.out &&
		test_wait_until 30 sh -c "[ \$(df --output=used -k wd | tail -1) -lt 1024 ]" || rc=1; } &&
	{ [ -z "$w" ] || kill $w 2>/dev/null || true; } &&
	{ [ -z "$w" ] || wait $w || true; } &&
	{ umount wd || umount -l wd; } &&
	[ $rc = 0 ]
'

# ---- a flood of silent connections -------------------------------------------------------------

flood_ready() { [ -e flood.ready ]; }

worker_in() { grep -q "connected to master" workers.out 2>/dev/null; }

# The master limits only connections still in the handshake, and a newcomer
# takes the place of the oldest silent one, so a real worker gets in and the run completes
# while 100 silent connections are held open (doc/work-queue-protocol.md, section 1).
probe major 'master: 100 silent connections while a real worker connects' 'the worker gets in and the run completes while the flood holds; no crash, no hang' '
	printf "a:\n\techo done > a\n" >Makeflow &&
	start_master Makeflow
	python3 -c "
import os, socket, sys, time
ss = [socket.create_connection((\"127.0.0.1\", int(sys.argv[1]))) for _ in range(100)]
open(\"flood.ready\", \"w\").close()
end = time.time() + 120
while not os.path.exists(\"release\") and time.time() < end:
    time.sleep(0.05)
" "$port" &
	fl=$! &&
	test_track_pid $fl &&
	test_wait_until 30 flood_ready &&
	start_worker -d all -o worker.log localhost "$port" &&
	test_wait_until 60 worker_in &&
	finish &&
	[ "$(cat a)" = done ] &&
	touch release && wait $fl
'

test_done
