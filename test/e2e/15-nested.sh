#!/bin/bash
# 15-nested.sh: nested workflows: Make-like "MAKEFLOW FILE [DIR]" rules and
# JX rules with "workflow" and "args" (also generated in a comprehension);
# args reach the child as data, never through a shell; a workflow that calls
# itself or nests too deep is refused with the file and line of the rule; and
# every nested makeflow and its jobs stop with the parent.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow

MF=$BIN/makeflow

test_expect_success 'JX rules with "workflow" and "args" made in a for run the child as JX' '
	cat >child.jx <<-\EOF
	{"rules": [{"command": "echo " + name + " > out." + name, "outputs": ["out." + name]}]}
	EOF
	cat >parent.jx <<-\EOF
	{"rules": [
	    {"workflow": "child.jx", "args": {"name": n}, "inputs": ["child.jx"],
	     "outputs": ["out." + n]} for n in ["a", "b", "c"]
	]}
	EOF
	"$MF" --jx parent.jx
	for n in a b c; do grep -qx $n out.$n; done
'

test_expect_success 'args are data: shell text in them is never run' '
	cat >parent.jx <<-\EOF
	{"rules": [{"workflow": "child.jx", "args": {"a": "$(touch PWNED); `touch PWNED2` '"'"'x"},
	            "outputs": ["got"]}]}
	EOF
	cat >child.jx <<-\EOF
	{"rules": [{"command": "cat child.jx.0.args.jx > got", "outputs": ["got"]}]}
	EOF
	"$MF" --jx parent.jx
	test ! -e PWNED
	test ! -e PWNED2
	grep -qF "\$(touch PWNED); \`touch PWNED2\` '"'"'x" got
'

test_expect_success 'a JX child reads its args as symbols' '
	cat >child.jx <<-\EOF
	{"rules": [{"command": format("echo %d > n.txt", count * 2), "outputs": ["n.txt"]}]}
	EOF
	cat >parent.json <<-\EOF
	{"rules": [{"workflow": "child.jx", "args": {"count": 21}, "outputs": ["n.txt"]}]}
	EOF
	"$MF" --json parent.json
	grep -qx 42 n.txt
'

test_expect_success 'MAKEFLOW FILE DIR runs the child in DIR' '
	mkdir sub
	wf child.mf <<-\EOF
	here.txt:
	    pwd > here.txt
	EOF
	wf Makeflow <<-\EOF
	sub/here.txt: child.mf
	    MAKEFLOW child.mf sub
	EOF
	"$MF" Makeflow
	[ "$(cat sub/here.txt)" = "$PWD/sub" ]
'

test_expect_success '-c cleans what nested workflows made (Make and JX), as the parent' '
	wf child.mf <<-\EOF
	mid.txt:
	    echo m > mid.txt
	fin.txt: mid.txt
	    cat mid.txt > fin.txt
	EOF
	wf Makeflow <<-\EOF
	fin.txt: child.mf
	    MAKEFLOW child.mf
	EOF
	cat >child.jx <<-\EOF
	{"rules": [{"command": "echo " + name + " > j.mid", "outputs": ["j.mid"]},
	           {"command": "cat j.mid > j.out", "inputs": ["j.mid"], "outputs": ["j.out"]}]}
	EOF
	cat >parent.jx <<-\EOF
	{"rules": [{"workflow": "child.jx", "args": {"name": "x"}, "outputs": ["j.out"]}]}
	EOF
	"$MF" Makeflow
	"$MF" --jx parent.jx
	test -f mid.txt && test -f fin.txt && test -f child.mf.0.makeflowlog
	test -f j.mid && test -f child.jx.0.args.jx
	"$MF" -c Makeflow >out 2>&1
	cat out
	grep -q "cleaned the nested workflow child.mf" out
	test ! -e mid.txt && test ! -e fin.txt && test ! -e child.mf.0.makeflowlog
	"$MF" -c --jx parent.jx
	test ! -e j.mid && test ! -e j.out && test ! -e child.jx.0.makeflowlog
	test ! -e child.jx.0.args.jx
	# the workflow files themselves stay
	test -f child.mf && test -f child.jx
'

test_expect_success 'a Make-like workflow that calls itself is refused with its line' '
	wf Makeflow <<-\EOF
	a.txt:
	    touch a.txt

	b.txt: Makeflow
	    MAKEFLOW Makeflow
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:4: nested workflow .Makeflow. calls a workflow already running" err
	test ! -e a.txt
'

test_expect_success 'a JX workflow naming itself is refused with its line' '
	cat >self.jx <<-\EOF
	{"rules": [
	    {"command": "touch a.txt", "outputs": ["a.txt"]},
	    {"workflow": "self.jx",
	     "outputs": ["b.txt"]}
	]}
	EOF
	rc=0; "$MF" --jx self.jx 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "self.jx:[0-9]*: nested workflow .self.jx. calls a workflow already running" err
	test ! -e a.txt
'

test_expect_success 'mutual recursion through a generated file is stopped in the child' '
	wf b.mf <<-\EOF
	out2.txt:
	    MAKEFLOW a.mf
	EOF
	wf a.mf <<-\EOF
	gen.mf:
	    cp b.mf gen.mf
	out.txt: gen.mf
	    MAKEFLOW gen.mf
	EOF
	rc=0; "$MF" a.mf 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "gen.mf:1: nested workflow .a.mf. calls a workflow already running (.*/a.mf -> .*/gen.mf -> .*/a.mf)" err
	grep -q "a.mf:3: rule 1 failed" err
'

test_expect_success 'nesting deeper than MAKEFLOW_MAX_NESTING is refused' '
	wf l2.mf <<-\EOF
	x2:
	    touch x2
	EOF
	wf l1.mf <<-\EOF
	x2: l2.mf
	    MAKEFLOW l2.mf
	EOF
	wf Makeflow <<-\EOF
	x2: l1.mf l2.mf
	    MAKEFLOW l1.mf
	EOF
	rc=0; MAKEFLOW_MAX_NESTING=1 "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "l1.mf:1: nested workflow .l2.mf. would be 2 levels deep, more than 1" err
	test ! -e x2
	"$MF" Makeflow
	test -e x2
'

# pid_gone PIDFILE...: every process named in the files has ended.
pids_gone() {
	local f
	for f in "$@"; do
		if kill -0 "$(cat "$f")" 2>/dev/null; then return 1; fi
	done
	return 0
}

nested_sleepers() {
	wf inner.mf <<-\EOF
	s1:
	    echo $$ > inner.pid; exec sleep 300
	EOF
	wf mid.mf <<-\EOF
	s1: inner.mf
	    MAKEFLOW inner.mf
	s2:
	    echo $$ > mid.pid; exec sleep 300
	EOF
	wf Makeflow <<-\EOF
	s1 s2: mid.mf inner.mf
	    MAKEFLOW mid.mf
	EOF
}

test_expect_success 'SIGTERM to the parent stops every nested makeflow and its jobs' '
	nested_sleepers
	"$MF" Makeflow 2>err &
	parent=$!
	test_wait_for_file inner.pid 60
	test_wait_for_file mid.pid 60
	kill -TERM $parent
	rc=0; wait $parent || rc=$?
	[ $rc != 0 ]
	test_wait_until 60 pids_gone inner.pid mid.pid
	test_wait_until 60 not pgrep -f "inner.mf.0.makeflowlog"
	test_wait_until 60 not pgrep -f "mid.mf.0.makeflowlog"
'

test_expect_success 'SIGKILL to the parent stops every nested makeflow and its jobs' '
	nested_sleepers
	"$MF" Makeflow 2>err &
	parent=$!
	test_wait_for_file inner.pid 60
	test_wait_for_file mid.pid 60
	kill -KILL $parent
	wait $parent || true
	test_wait_until 60 pids_gone inner.pid mid.pid
	test_wait_until 60 not pgrep -f "inner.mf.0.makeflowlog"
	test_wait_until 60 not pgrep -f "mid.mf.0.makeflowlog"
'

test_done
