#!/bin/bash
# 18-makeflow-wrap-archive.sh: end-to-end tests of makeflow's --wrapper, --wrapper-input,
# --wrapper-output, --archive (read, write, both) and --mounts with --cache-dir
# (doc/makeflow-archive.md): wrapped commands run whole and nested, wrapper files join every
# rule, archived rules are restored instead of run and keyed by input content, and mount
# sources (local files and URLs from a loopback python3 HTTP server) reach the rules, also with
# -T wq and a real worker (the wrapper input is sent, an archived run needs no worker), with
# each kind of bad input refused by a message naming the file and line.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/http-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow work_queue_worker
MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=180

# A two-rule workflow whose commands hold quotes and several commands; every rule run adds
# a line to runs.log (outside the workflow's files, to count runs).
two_rules() {
	wf Makeflow <<-\EOF
	mid.txt: in.txt
	    echo "it's" > mid.txt; cat in.txt >> mid.txt; echo mid >> runs.log
	out.txt: mid.txt
	    tr a-z A-Z < mid.txt > out.txt; echo out >> runs.log
	EOF
	echo data >in.txt
}

# w.sh NAME: a wrapper that logs its name and arguments, then runs them.
mkwrap() {
	cat >w.sh <<-\EOF
	n=$1; shift; echo "$n: $*" >> wrap.log; exec "$@"
	EOF
}

test_expect_success '--wrapper: commands run whole inside the wrapper, once per rule' '
	two_rules
	mkwrap
	"$MF" --wrapper "sh w.sh W" --wrapper-input w.sh Makeflow
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
	[ "$(grep -c "^W: /bin/sh -c " wrap.log)" = 2 ]
	grep -q "^W: /bin/sh -c echo \"it'"'"'s\" > mid.txt; cat in.txt >> mid.txt" wrap.log
'

test_expect_success '--wrapper twice: the first given runs inside the second' '
	two_rules
	mkwrap
	"$MF" --wrapper "sh w.sh INNER" --wrapper "sh w.sh OUTER" --wrapper-input w.sh Makeflow
	[ "$(sed -n 1p wrap.log | cut -d: -f1)" = OUTER ]
	[ "$(sed -n 2p wrap.log | cut -d: -f1)" = INNER ]
	[ "$(wc -l <wrap.log)" = 4 ]
	[ "$(cat runs.log)" = "$(printf "mid\nout")" ]
'

test_expect_success '--wrapper with {} and %%, --wrapper-output with %%: one trace per rule' '
	two_rules
	"$MF" --wrapper "echo rule %% > trace.%%; {}" --wrapper-output "trace.%%" Makeflow
	[ "$(cat trace.0)" = "rule 0" ]
	[ "$(cat trace.1)" = "rule 1" ]
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
'

test_expect_success '--wrapper-input that does not exist: the run stops naming it' '
	two_rules
	test_must_fail "$MF" --wrapper "sh setup.sh" --wrapper-input setup.sh Makeflow 2>err
	cat err
	grep -q "input file .setup.sh. does not exist" err
	test ! -e runs.log
'

test_expect_success '--wrapper-output without %% in a workflow of two rules is refused' '
	two_rules
	test_must_fail "$MF" --wrapper-output trace Makeflow 2>err
	cat err
	grep -q "wrapper-output trace: .*produced by rules at lines 1 and 3 (use %% in the name" err
	test ! -e runs.log
'

test_expect_success '--archive: a second run restores every rule without running it' '
	two_rules
	"$MF" --archive="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 2 ]
	rm -f mid.txt out.txt Makeflow.makeflowlog
	"$MF" --archive="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 2 ]
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
	# two entries, each with its record and outputs; nothing left half built
	[ "$(ls arch/jobs/*/*/job.json | wc -l)" = 2 ]
	[ -z "$(ls -A arch/tmp)" ]
'

test_expect_success '--archive: changed input content runs the rules that read it again' '
	two_rules
	"$MF" --archive="$PWD/arch" Makeflow
	rm -f mid.txt out.txt Makeflow.makeflowlog
	echo other >in.txt
	"$MF" --archive="$PWD/arch" Makeflow
	[ "$(cat runs.log)" = "$(printf "mid\nout\nmid\nout")" ]
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nOTHER")" ]
	# the same content again: restored, whatever the file times
	rm -f mid.txt out.txt Makeflow.makeflowlog
	echo data >in.txt
	"$MF" --archive="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 4 ]
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
'

test_expect_success '--archive-write runs every rule; --archive-read never stores' '
	two_rules
	"$MF" --archive-write --archive-dir="$PWD/arch" Makeflow
	rm -f mid.txt out.txt Makeflow.makeflowlog
	"$MF" --archive-write="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 4 ]
	rm -f mid.txt out.txt Makeflow.makeflowlog
	"$MF" --archive-read="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 4 ]
	"$MF" --archive-read="$PWD/empty" Makeflow -c
	rm -f mid.txt out.txt Makeflow.makeflowlog
	"$MF" --archive-read="$PWD/empty" Makeflow
	[ "$(wc -l <runs.log)" = 6 ]
	[ -z "$(ls -A empty/jobs)" ]
'

test_expect_success '--archive: an entry left half built by a crash is never used' '
	two_rules
	"$MF" --archive="$PWD/arch" Makeflow
	rm -f mid.txt out.txt Makeflow.makeflowlog
	# a crash while storing leaves only a directory under tmp/; an entry without its
	# record is not trusted
	mkdir -p arch/tmp/deadbeef.1.0/outputs
	for j in arch/jobs/*/*/job.json; do rm "$j"; done
	"$MF" --archive="$PWD/arch" Makeflow
	[ "$(wc -l <runs.log)" = 4 ]
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
	# and the run put whole entries in their place
	[ "$(ls arch/jobs/*/*/job.json | wc -l)" = 2 ]
'

test_expect_success '--archive: makeflow killed (-9) while storing leaves no partial entry' '
	# an output of 500 files: storing it (copied, then flushed to disk) takes a moment
	cat >gen.sh <<-\EOF
	mkdir -p tree; i=0; while [ $i -lt 500 ]; do echo $i > tree/f$i; i=$((i+1)); done
	EOF
	wf Makeflow <<-\EOF
	tree: gen.sh
	    sh gen.sh
	EOF
	"$MF" --archive="$PWD/arch" Makeflow >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	# wait until the store is under way (or, on a fast disk, the run is over)
	test_wait_until 60 sh -c "ls -A arch/tmp 2>/dev/null | grep -q . || ! kill -0 $mf 2>/dev/null"
	kill -9 $mf 2>/dev/null || true
	wait $mf 2>/dev/null || true
	ls -A arch/tmp arch/jobs
	for e in arch/jobs/*/*; do
		[ -e "$e" ] || continue
		test -f "$e/job.json"
		[ "$(ls "$e/outputs/0" | wc -l)" = 500 ]
	done
	# the next run removes what the killed one left in tmp/ and stores; the one after that
	# restores
	rm -rf tree Makeflow.makeflowlog
	"$MF" --archive="$PWD/arch" Makeflow
	[ -z "$(ls -A arch/tmp)" ]
	rm -rf tree Makeflow.makeflowlog
	"$MF" --archive="$PWD/arch" Makeflow 2>err
	grep -q "1 rule restored" err
	[ "$(ls tree | wc -l)" = 500 ]
'

test_expect_success '--archive: an archive directory that cannot be made is an error' '
	two_rules
	echo x >notadir
	test_must_fail "$MF" --archive="$PWD/notadir/arch" Makeflow 2>err
	cat err
	grep -q "archive $PWD/notadir/arch: Not a directory" err
	test ! -e runs.log
'

test_expect_success '-T wq: the wrapper input travels to the worker; a second run needs no worker' '
	two_rules
	cat >wq.sh <<-\EOF
	n=$1; shift; echo "rule $n" > "trace.$n"; exec "$@"
	EOF
	start_master --wrapper "sh wq.sh %%" --wrapper-input wq.sh --wrapper-output "trace.%%" \
		--archive="$PWD/arch" Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
	[ "$(cat trace.0)" = "rule 0" ]
	[ "$(cat trace.1)" = "rule 1" ]
	rm -f mid.txt out.txt trace.0 trace.1 Makeflow.makeflowlog
	start_master --wrapper "sh wq.sh %%" --wrapper-input wq.sh --wrapper-output "trace.%%" \
		--archive="$PWD/arch" Makeflow
	finish
	grep -q "2 rules restored, 0 stored" mf.out
	[ "$(cat out.txt)" = "$(printf "IT'"'"'S\nDATA")" ]
	[ "$(cat trace.1)" = "rule 1" ]
'

mount_wf() {
	wf Makeflow <<-\EOF
	out.txt: ref/local.txt ref/web.txt
	    cat ref/local.txt ref/web.txt > out.txt
	EOF
	echo "from disk" >src.txt
}

test_expect_success '--mounts: a local file and a URL reach the rule; the URL is fetched once' '
	command -v python3 >/dev/null || { echo "python3 is needed" >&2; false; }
	mount_wf
	mkdir www
	echo "from the web" >www/web.txt
	serve_http www
	printf "# reference data\nref/local.txt src.txt\nref/web.txt http://127.0.0.1:%s/web.txt\n" \
		"$HTTP_PORT" >mounts
	"$MF" --mounts mounts Makeflow
	[ "$(cat out.txt)" = "$(printf "from disk\nfrom the web")" ]
	test -L ref/web.txt
	ls -d makeflow.cache.* >/dev/null
	rm -f out.txt Makeflow.makeflowlog
	"$MF" --mounts mounts Makeflow
	[ "$(cat out.txt)" = "$(printf "from disk\nfrom the web")" ]
	cat "$HTTP_LOG"
	[ "$(grep -c "\"GET /web.txt " "$HTTP_LOG")" = 1 ]
'

test_expect_success '--cache-dir: the copies go there' '
	mount_wf
	echo "also local" >web.txt
	printf "ref/local.txt src.txt\nref/web.txt %s/web.txt\n" "$PWD" >mounts
	"$MF" --mounts=mounts --cache-dir=my/cache Makeflow
	[ "$(cat out.txt)" = "$(printf "from disk\nalso local")" ]
	[ "$(ls my/cache | wc -l)" = 2 ]
	test ! -e makeflow.cache.*
'

test_expect_success '-c and --clean=cache with --mounts remove the links and the cache' '
	mount_wf
	echo "also local" >web.txt
	printf "ref/local.txt src.txt\nref/web.txt web.txt\n" >mounts
	"$MF" --mounts=mounts --cache-dir=cache Makeflow
	test -e out.txt
	"$MF" --mounts=mounts --cache-dir=cache --clean=cache Makeflow
	test ! -e ref/local.txt
	test ! -e cache
	test -e out.txt
	test -e Makeflow.makeflowlog
	"$MF" --mounts=mounts --cache-dir=cache Makeflow
	test -L ref/web.txt
	"$MF" --mounts=mounts --cache-dir=cache -c Makeflow
	test ! -e ref/web.txt
	test ! -e cache
	test ! -e out.txt
	test -e src.txt
	test_must_fail "$MF" --clean=cache Makeflow 2>err
	grep -q "clean=cache removes what --mounts made: give the same --mounts FILE" err
'

test_expect_success '--mounts: a URL that answers 404, an unreachable URL, bad lines' '
	command -v python3 >/dev/null || { echo "python3 is needed" >&2; false; }
	mount_wf
	mkdir www
	serve_http www
	printf "ref/local.txt src.txt\n\nref/web.txt http://127.0.0.1:%s/none.txt\n" \
		"$HTTP_PORT" >mounts
	test_must_fail "$MF" --mounts mounts Makeflow 2>err
	cat err
	grep -q "mounts:3: cannot download http://127.0.0.1:$HTTP_PORT/none.txt: HTTP 404" err
	test ! -e out.txt
	# a port where nothing listens: the server is stopped (by its PID) first
	kill "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null || true
	printf "ref/web.txt http://127.0.0.1:%s/web.txt\n" "$HTTP_PORT" >mounts
	test_must_fail "$MF" --mounts mounts Makeflow 2>err
	cat err
	grep -q "mounts:1: cannot download http://127.0.0.1:$HTTP_PORT/web.txt: " err
	printf "ref/web.txt\n" >mounts
	test_must_fail "$MF" --mounts mounts Makeflow 2>err
	grep -q "mounts:1: expected .TARGET SOURCE. (two words), got 1 word" err
	printf "../web.txt src.txt\n" >mounts
	test_must_fail "$MF" --mounts mounts Makeflow 2>err
	grep -q "mounts:1: target .../web.txt. contains" err
	test_must_fail "$MF" --mounts nothere Makeflow 2>err
	grep -q "mounts nothere: No such file or directory" err
	test ! -e out.txt
'

test_done
