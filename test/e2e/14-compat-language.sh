#!/bin/bash
# 14-compat-language.sh: Makeflow files written for CCTools run here unchanged:
# rule-local variables with and without '@', $(CATEGORY), every
# MAKEFLOW_INPUTS/OUTPUTS form, remote renaming with spaces, lines of tens of
# MB, '\$' for the shell, and what a restart says and re-runs after files of a
# completed run were deleted or touched (doc/compatibility.md, "The Makeflow
# language").
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow makeflow_analyze makeflow_viz

MF=$BIN/makeflow
ANALYZE=$BIN/makeflow_analyze
VIZ=$BIN/makeflow_viz

# chain_wf: file.0 -> file.1 -> ... -> file.9, nine cp rules; each rule also
# appends its number to ./ran (not a declared file: the tally of what ran).
chain_wf() {
	echo data >file.0
	local i
	for i in 1 2 3 4 5 6 7 8 9; do
		printf 'file.%d: file.%d\n\tcp file.%d file.%d && echo %d >>ran\n' \
			$i $((i - 1)) $((i - 1)) $i $i
	done >Makeflow
}

# ran: the rules that ran since ./ran was emptied, sorted, on one line.
ran() {
	if [ -f ran ]; then sort -n ran | tr "\n" " " | sed "s/ \$//"; fi
}

expect_ran() {
	local got
	got=$(ran)
	[ "$got" = "$1" ] || { echo "expected to run: '$1'; ran: '$got'"; return 1; }
}

deleted_lines() {
	local i
	for i in "$@"; do echo "deleted file.$i"; done
}

test_expect_success 'restart after deleting file.5: a deleted line per stale file, 5 rules run' '
	chain_wf
	"$MF" Makeflow >out
	expect_ran "1 2 3 4 5 6 7 8 9"
	: >ran
	rm file.5
	"$MF" Makeflow >out 2>err
	cat out err
	expect_ran "5 6 7 8 9"
	{ echo "warning: file.5 was previously created by makeflow, but someone else deleted it!"
	  deleted_lines 6 7 8 9; echo "nothing left to do."; } >want
	diff want out
	grep -q "4 of 9 rules are already complete" err
	[ "$(cat file.9)" = data ]
	: >ran
	"$MF" Makeflow >out
	expect_ran ""
	test "$(cat out)" = "nothing left to do." # only the words CCTools prints too
'

test_expect_success 'restart after touching file.2: kept, the 7 rules that follow run (as make)' '
	chain_wf
	"$MF" Makeflow >out
	: >ran
	touch -d "+1 hour" file.2
	"$MF" Makeflow >out 2>err
	cat out err
	expect_ran "3 4 5 6 7 8 9"
	{ echo "warning: file.2 was previously created by makeflow, but someone else modified it!"
	  deleted_lines 3 4 5 6 7 8 9; echo "nothing left to do."; } >want
	diff want out
	# the touched file is kept and recorded: the next run does nothing
	: >ran
	"$MF" Makeflow >out
	expect_ran ""
	test "$(cat out)" = "nothing left to do." # only the words CCTools prints too
'

test_expect_success 'restart with --skip-file-check trusts the log: nothing is checked, deleted or run' '
	chain_wf
	"$MF" Makeflow
	: >ran
	rm file.5
	touch -d "+1 hour" file.2
	"$MF" --skip-file-check Makeflow >out
	expect_ran ""
	test "$(cat out)" = "nothing left to do." # only the words CCTools prints too
	[ ! -e file.5 ] && [ -e file.9 ]
	"$MF" Makeflow >out
	expect_ran "3 4 5 6 7 8 9"
'

test_expect_success 'restart after changing file.4 by hand: the change flows downstream' '
	chain_wf
	"$MF" Makeflow
	: >ran
	echo edited >file.4
	touch -d "+1 hour" file.4
	"$MF" Makeflow >out
	expect_ran "5 6 7 8 9"
	[ "$(cat file.4)" = edited ]
	[ "$(cat file.9)" = edited ]
'

local_wf() {
	wf Makeflow <<-"EOF"
	V=orig
	CATEGORY=top
	a.txt:
	V=local
	CATEGORY=loc
	CORES=1
	    echo $(V) ${CATEGORY} $CATEGORY > a.txt; env | grep -E "^(CATEGORY|CORES)=" | sort >> a.txt
	b.txt:
	@V=at
	    echo $(V) ${CATEGORY} $(CATEGORY) > b.txt
	c.txt:
	    echo $(V) ${CATEGORY} > c.txt
	EOF
}

test_expect_success 'NAME=value between a rule and its command is rule-local (with or without @)' '
	local_wf
	"$MF" Makeflow
	printf "local loc loc\nCATEGORY=loc\nCORES=1\n" >want
	diff want a.txt
	[ "$(cat b.txt)" = "at top top" ]
	[ "$(cat c.txt)" = "orig top" ]
'

test_expect_success 'MAKEFLOW_INPUTS and MAKEFLOW_OUTPUTS: empty quoted, quoted and plain lists' '
	echo x >in.txt
	for form in "MAKEFLOW_INPUTS=\"\"" "MAKEFLOW_INPUTS=" "MAKEFLOW_OUTPUTS=\"\"" \
		"MAKEFLOW_INPUTS=\"in.txt\"" "MAKEFLOW_OUTPUTS=\"out.txt\" mid.txt" \
		"MAKEFLOW_OUTPUTS='"'"'out.txt'"'"'"; do
		rm -f mid.txt out.txt Makeflow.makeflowlog
		printf "%s\nmid.txt: in.txt\n\tcp in.txt mid.txt\nout.txt: mid.txt\n\tcp mid.txt out.txt\n" \
			"$form" >Makeflow
		"$MF" Makeflow
		[ "$(cat out.txt)" = x ]
	done
	"$ANALYZE" -O Makeflow >outs
	grep -qx out.txt outs
'

test_expect_success 'a file named only in MAKEFLOW_INPUTS that does not exist: a warning, the run goes on' '
	printf "MAKEFLOW_INPUTS=nothere\na.txt:\n\techo ok > a.txt\n" >Makeflow
	"$MF" Makeflow 2>err
	cat err
	grep -q "Makeflow: warning: .nothere. in MAKEFLOW_INPUTS does not exist" err
	[ "$(cat a.txt)" = ok ]
'

test_expect_success 'remote renaming written with spaces around ->' '
	printf "out.1 -> out.txt o2 ->r2: input.txt -> input.1 p-> q\n\tcat input.1 > out.txt\n" >Makeflow
	"$ANALYZE" -k Makeflow
	"$VIZ" -D json Makeflow >dag.json
	[ "$(jget dag.json rules.0.outputs.0.dag_name)" = out.1 ]
	[ "$(jget dag.json rules.0.outputs.0.task_name)" = out.txt ]
	[ "$(jget dag.json rules.0.outputs.1.task_name)" = r2 ]
	[ "$(jget dag.json rules.0.inputs.0.dag_name)" = input.txt ]
	[ "$(jget dag.json rules.0.inputs.0.task_name)" = input.1 ]
	[ "$(jget dag.json rules.0.inputs.1.dag_name)" = p ]
	[ "$(jget dag.json rules.0.inputs.1.task_name)" = q ]
'

# long_wf MB: a workflow whose first line assigns MB megabytes, and whose rule
# header names 5,000 targets of 247 bytes each (1.2 MB), made by one command.
long_wf() {
	python3 - "$1" <<-"EOF"
	import sys
	mb = int(sys.argv[1])
	names = ["t%06d" % i + "x" * 240 for i in range(5000)]
	with open("Makeflow", "w") as f:
	    f.write("BIG=" + "x" * (mb << 20) + "\n")
	    f.write("all.txt " + " ".join(names) + ": mk.py\n")
	    f.write("\tpython3 mk.py && echo ok > all.txt\n")
	with open("mk.py", "w") as f:
	    f.write("for i in range(5000): open('t%06d' % i + 'x' * 240, 'w').close()\n")
	EOF
}

test_expect_success 'lines of tens of MB are read; past the budget the error names file:line' '
	long_wf 24
	"$ANALYZE" -k Makeflow
	"$MF" Makeflow
	[ "$(cat all.txt)" = ok ] && [ -e t004999$(printf "%0240d" 0 | tr 0 x) ]
	rc=0; "$MF" --parse-memory 16M Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "^makeflow: Makeflow:1: parsing needs more than the memory budget of 16 MiB" err
'

test_expect_success '\$ in a command is the shell s $ (expanded where the job runs)' '
	wf Makeflow <<-"EOF"
	out.txt:
	    X=shell; echo \$X "\$X" '"'"'$X'"'"' > out.txt
	EOF
	"$MF" Makeflow
	[ "$(cat out.txt)" = "shell shell \$X" ]
'

test_expect_success 'the manual s constructs: comments, continuation, export, LOCAL, .SIZE, .MAKEFLOW, nested syntax' '
	wf Makeflow <<-"EOF"
	# a comment
	IN=in.txt # a comment after a value
	export PATH=/opt/tools/bin:${PATH}
	export USER
	FOO=bar
	export FOO
	.SIZE in.txt 10K
	out.txt: $(IN) \
	      sub.mf
	    LOCAL env | grep -E "^(PATH|USER|FOO)=" | sed "s/:.*//" | sort > out.txt
	.MAKEFLOW CATEGORY nested
	.MAKEFLOW CORES 1
	sub.out: sub.mf in.txt
	    MAKEFLOW sub.mf
	EOF
	echo x >in.txt
	printf "sub.out:\n\techo sub > sub.out\n" >sub.mf
	USER=tester "$MF" Makeflow
	printf "FOO=bar\nPATH=/opt/tools/bin\nUSER=tester\n" >want
	diff want out.txt
	[ "$(cat sub.out)" = sub ]
'

test_expect_success 'stdout has the lines CCTools scripts read: nothing left to do. after a run, deleted FILE on -c' '
	chain_wf
	"$MF" Makeflow >out 2>err
	test "$(cat out)" = "nothing left to do."
	"$MF" -c Makeflow >out 2>err
	cat out
	for i in 1 2 3 4 5 6 7 8 9; do grep -qx "deleted file.$i" out; done
	[ "$(wc -l <out)" = 9 ]
	# a run that fails does not say it
	wf Makeflow <<-\EOF
	x:
	    exit 1
	EOF
	"$MF" Makeflow >out 2>err || true
	test ! -s out
'

test_done
