#!/bin/bash
# 42-wq-dirs.sh: directories through makeflow -T wq with a real work_queue_worker over loopback
# TCP: a directory input (with a subdirectory) is sent whole, cached or not; a rule whose output
# turns out to be a directory brings it back whole, and a later run replaces it; a rule reading a
# directory another rule made. Every result is compared byte for byte with a -T local run.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=120

# dirs_workflow: a workflow with a directory input, a directory output and a rule reading it.
dirs_workflow() {
	mkdir -p data/sub/deeper
	printf "alpha\n" >data/a.txt
	printf "beta\n" >data/sub/b.txt
	printf "gamma\n" >data/sub/deeper/c.txt
	chmod +x data/sub/b.txt
	printf "some input\n" >in.txt
	wf Makeflow <<-\EOF
	listing.txt: data
	    find data | sort > listing.txt; cat data/a.txt data/sub/b.txt data/sub/deeper/c.txt >> listing.txt; test -x data/sub/b.txt && echo exec >> listing.txt
	results: in.txt
	    mkdir -p results/deep && cp in.txt results/copy.txt && wc -c < in.txt > results/deep/size
	summary.txt: results listing.txt
	    (cd results && find . | sort) > summary.txt; cat results/deep/size >> summary.txt
	EOF
}

# same_as_local DIR: the workflow's results here equal those of a -T local run in DIR.
same_as_local() {
	local f
	for f in listing.txt summary.txt; do
		cmp "$1/$f" "$f" || return 1
	done
	[ -d results ] && [ -d results/deep ]
	diff -r "$1/results" results
}

run_local() {
	mkdir -p local
	(cd local && dirs_workflow && "$MF" -T local Makeflow >mf.out 2>&1) || {
		cat local/mf.out >&2
		return 1
	}
}

test_expect_success 'a directory input and a directory output, as under -T local' '
	run_local
	dirs_workflow
	start_master Makeflow
	start_worker --cores 1 localhost $port
	finish
	same_as_local local
	[ -f results/copy.txt ] && [ -f results/deep/size ]
	# no temporary or set-aside copies are left beside the output
	[ -z "$(ls -a | grep -E "wq-old|\.tmp$")" ]
'

test_expect_success 'with --disable-cache too' '
	run_local
	dirs_workflow
	start_master --disable-cache Makeflow
	start_worker --cores 1 localhost $port
	finish
	same_as_local local
'

test_expect_success 'a directory output replaces an old file at its path, and a file an old directory' '
	printf "x\n" >in.txt
	wf Makeflow <<-\EOF
	out: in.txt
	    mkdir out && cp in.txt out/inside
	flat: in.txt
	    cp in.txt flat
	EOF
	# what an earlier run left: a file where the directory comes, a directory where the file
	echo old >out
	mkdir -p flat/stale
	echo old >flat/stale/f
	touch -d "2000-01-01" out flat flat/stale/f
	start_master Makeflow
	start_worker --cores 1 localhost $port
	finish
	[ -d out ] && [ "$(cat out/inside)" = x ]
	[ -f flat ] && [ "$(cat flat)" = x ]
	[ -z "$(ls -a | grep -E "wq-old|\.tmp$")" ]
'

test_expect_success 'several directory inputs and outputs in flight at once' '
	# A directory queued while another one was being sent used to wait, ahead of the files
	# of the first one, for the only directory slot of the connection: the run hung.
	for d in d1 d2 d3; do
		mkdir -p $d/sub && printf "%s\n" $d >$d/f && printf "%s sub\n" $d >$d/sub/g
	done
	wf Makeflow <<-\EOF
	both: d1 d2
	    cat d1/f d1/sub/g d2/f d2/sub/g > both
	all: d1 d2 d3
	    cat d1/f d2/sub/g d3/f d3/sub/g > all
	o1 o2: d3
	    mkdir o1 o2 && cp -r d3 o1/x && cp -r d3 o2/y
	EOF
	start_master Makeflow
	start_worker --cores 2 localhost $port
	finish
	[ "$(cat both)" = "$(printf "d1\nd1 sub\nd2\nd2 sub\n")" ]
	[ "$(cat all)" = "$(printf "d1\nd2 sub\nd3\nd3 sub\n")" ]
	[ "$(cat o1/x/sub/g)" = "d3 sub" ] && [ "$(cat o2/y/f)" = d3 ]
'

# ref_workflow: three rules reading the directory ref; the second adds a file to its copy.
ref_workflow() {
	mkdir -p ref/sub && printf "r1\n" >ref/a && printf "r2\n" >ref/sub/b
	wf Makeflow <<-\EOF
	l1: ref
	    find ref -type f | sort > l1 && cat ref/sub/b >> l1
	l2: ref
	    find ref -type f | sort > l2 && cat ref/a >> l2 && touch ref/mine
	l3: ref l2
	    find ref -type f | sort > l3
	EOF
}

test_expect_success 'a directory input several rules read is cached: one object on the worker, a tree in each sandbox' '
	ref_workflow
	start_master Makeflow
	start_worker --cores 1 --keep-cache -s wd localhost $port
	finish
	kill -TERM $w 2>/dev/null || true # it may have left with the master already
	wait $w || true
	[ "$(cat l1)" = "$(printf "ref/a\nref/sub/b\nr2\n")" ] &&
		[ "$(cat l2)" = "$(printf "ref/a\nref/sub/b\nr1\n")" ] &&
		# what a task added to its tree stays in its sandbox
		[ "$(cat l3)" = "$(printf "ref/a\nref/sub/b\n")" ] &&
		[ "$(ls wd/cache | grep -c "^D-")" = 1 ]
'

test_expect_success 'with --disable-cache a directory input is sent to each rule and never cached' '
	ref_workflow
	start_master --disable-cache Makeflow
	start_worker --cores 1 --keep-cache -s wd localhost $port
	finish
	kill -TERM $w 2>/dev/null || true # it may have left with the master already
	wait $w || true
	[ "$(cat l3)" = "$(printf "ref/a\nref/sub/b\n")" ] &&
		[ -d wd/cache ] && [ "$(ls wd/cache | grep -c "^D-")" = 0 ]
'

test_done
