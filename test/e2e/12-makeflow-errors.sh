#!/bin/bash
# 12-makeflow-errors.sh: end-to-end tests of how makeflow refuses bad input:
# each bad workflow exits 1 with a FILE:LINE: message before anything runs,
# bad command-line options are clear errors; and the makeflow_analyze and
# makeflow_viz outputs on a small workflow.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow makeflow_analyze makeflow_viz

MF=$BIN/makeflow
ANALYZE=$BIN/makeflow_analyze
VIZ=$BIN/makeflow_viz


# refused LINE REGEX: makeflow and makeflow_analyze -k both refuse ./Makeflow
# with exit 1 and a "Makeflow:LINE:" message matching REGEX; nothing ran and
# no transaction log was written.
refused() {
	local rc=0
	"$MF" Makeflow >out 2>err || rc=$?
	cat err
	[ $rc = 1 ] || { echo "makeflow exited $rc, expected 1"; return 1; }
	grep -Eq "^makeflow: Makeflow:$1: .*$2" err || { echo "no 'Makeflow:$1: $2' message"; return 1; }
	[ ! -e marker ] || { echo "a rule ran"; return 1; }
	[ ! -e Makeflow.makeflowlog ] || { echo "a log was written"; return 1; }
	rc=0
	"$ANALYZE" -k Makeflow >out 2>err || rc=$?
	[ $rc = 1 ] || { echo "makeflow_analyze -k exited $rc, expected 1"; return 1; }
	grep -Eq "Makeflow:$1: .*$2" err || { echo "makeflow_analyze: no 'Makeflow:$1:' message"; return 1; }
}

# tabs: wf to standard output.
tabs() {
	sed 's/^    /\t/'
}

marker_rule() {
	printf 'marker:\n\ttouch marker\n'
}

test_expect_success 'an undefined variable' '
	{ marker_rule; tabs <<-\EOF
	out.txt:
	    echo $(NOT_DEFINED) > out.txt
	EOF
	} >Makeflow
	refused 4 "NOT_DEFINED"
'

test_expect_success 'a file produced by two rules' '
	{ marker_rule; tabs <<-\EOF
	out.txt:
	    echo 1 > out.txt
	other.txt out.txt:
	    echo 2 > out.txt; echo > other.txt
	EOF
	} >Makeflow
	refused 5 "out.txt"
'

test_expect_success 'a cycle, naming its files' '
	{ marker_rule; tabs <<-\EOF
	a.txt: c.txt
	    cat c.txt > a.txt
	b.txt: a.txt
	    cat a.txt > b.txt
	c.txt: b.txt
	    cat b.txt > c.txt
	EOF
	} >Makeflow
	refused "[0-9]+" "cycle"
	grep -q "a.txt" err
	grep -q "b.txt" err
	grep -q "c.txt" err
'

test_expect_success 'a rule without a command' '
	{ marker_rule; tabs <<-\EOF
	out.txt: marker
	other.txt:
	    echo > other.txt
	EOF
	} >Makeflow
	refused 3 "command"
'

test_expect_success 'a rule with an empty command' '
	{ marker_rule; printf "out.txt:\n\t\n"; } >Makeflow
	refused "[34]" "command"
'

test_expect_success 'an unterminated quote' '
	{ marker_rule; tabs <<-\EOF
	out.txt:
	    echo "never closed > out.txt
	EOF
	} >Makeflow
	refused 4 "quote"
'

test_expect_success 'bad MEMORY values' '
	for v in lots -5 12Q 1.5.5; do
		{ marker_rule; printf "out.txt:\n@MEMORY=%s\n\techo > out.txt\n" "$v"; } >Makeflow
		refused 4 "MEMORY"
		{ marker_rule; printf "MEMORY=%s\nout.txt:\n\techo > out.txt\n" "$v"; } >Makeflow
		refused 3 "MEMORY"
	done
'

test_expect_success 'unknown directives' '
	{ marker_rule; echo ".MAKEFLOW NO_SUCH_THING 1"; } >Makeflow
	refused 3 "NO_SUCH_THING"
	{ marker_rule; echo ".BOGUS x"; } >Makeflow
	refused 3 "BOGUS"
'

test_expect_success 'garbage binary input is refused with FILE:LINE and no crash' '
	for i in 1 2 3 4 5 6 7 8 9 10; do
		head -c 2000 /dev/urandom >Makeflow
		[ $i -gt 5 ] && tr -d "\\000" <Makeflow >nonul && mv nonul Makeflow
		rc=0
		"$MF" Makeflow >out 2>err || rc=$?
		if [ $rc != 1 ] || ! grep -Eq "^makeflow: Makeflow:[0-9]+: " err; then
			echo "attempt $i: exit $rc; the input was:"
			od -A d -t x1 Makeflow | head -n 20
			cat err
			exit 1
		fi
		[ "$(ls)" = "$(printf "Makeflow\nerr\nout")" ]
		rc=0
		"$ANALYZE" -k Makeflow >out 2>err || rc=$?
		[ $rc = 1 ]
	done
'

test_expect_success 'an empty workflow is fine: 0 rules, exit 0' '
	: >Makeflow
	"$MF" Makeflow
	"$ANALYZE" -k Makeflow
	"$ANALYZE" -i Makeflow >info
	cat info
	grep -Eq "^rules: +0" info
	printf "# only a comment\n\n   \n\t\n" >Makeflow
	"$MF" Makeflow
'

test_expect_success 'JSON: unknown keys, fractions of cores and empty outputs are refused as in the text form' '
	jrefused() {
		local rc=0
		"$MF" --json w.json >out 2>err || rc=$?
		cat err
		[ $rc = 1 ] || { echo "makeflow exited $rc, expected 1"; return 1; }
		grep -Eq "^makeflow: w.json:$1" err || { echo "no w.json:$1 message"; return 1; }
		[ ! -e marker ] || { echo "a rule ran"; return 1; }
	}
	cat >w.json <<-\EOF
	{"rules": [
	  {"command": "touch marker", "outputs": ["marker"]},
	  {"comand": "echo hi > out", "outputs": ["out"]}
	]}
	EOF
	jrefused "3: rule 1: unknown key .comand. in a rule \(did you mean .command.\?\)"
	cat >w.json <<-\EOF
	{"rules": [
	  {"command": "touch marker", "outputs": ["marker"], "resources": {"cores": 1.5}}
	]}
	EOF
	jrefused "2:[0-9]+: rule 0: bad value .1.5. for resource .cores."
	echo "{\"rules\": [{\"command\": \"touch marker\", \"outputs\": []}]}" >w.json
	jrefused "1:[0-9]+: rule 0: has no outputs"
	echo "{\"rules\": [{\"makeflow\": {\"path\": \"s.json\"}, \"outputs\": [\"o\"]}]}" >w.json
	jrefused "1: rule 0: key .makeflow. in a rule is not supported"
'

test_expect_success 'a line past the parse memory budget is refused; a long one is fine' '
	{ marker_rule; printf "out.txt:\n\techo "; head -c 2000000 /dev/zero | tr "\\000" x; printf " > out.txt\n"; } >Makeflow
	MAKEFLOW_PARSE_MEMORY=1M refused 4 "memory budget of 1 MiB"
	# no line limit but the budget
	"$ANALYZE" -k Makeflow
	# 100 kB fits in one argument of sh -c
	{ printf "out.txt:\n\techo "; head -c 100000 /dev/zero | tr "\\000" y; printf " > out.txt\n"; } >Makeflow
	"$MF" Makeflow
	[ "$(wc -c <out.txt)" = 100001 ]
'

# the report: a 1 MB workflow whose 300 rules name a 1 MB variable 8 times
amplifier() {
	{ printf "BIG="; head -c 1048576 /dev/zero | tr "\\000" x; printf "\n"; marker_rule
	  for i in $(seq 300); do printf "o$i:\n\techo \$(BIG)\$(BIG)\$(BIG)\$(BIG)\$(BIG)\$(BIG)\$(BIG)\$(BIG) > o$i\n"; done
	} >Makeflow
}

test_expect_success 'an amplifying workflow stops at the parse memory budget with FILE:LINE, not an abort' '
	amplifier
	MAKEFLOW_PARSE_MEMORY=64M refused "[0-9]+" "parsing needs more than the memory budget of 64 MiB"
	# --parse-memory wins over the environment
	rc=0; MAKEFLOW_PARSE_MEMORY=8G "$MF" --parse-memory 32M Makeflow 2>err || rc=$?
	[ $rc = 1 ] && grep -q "memory budget of 32 MiB" err
	# under an address-space limit the default budget is half of it: a clear error, no abort
	rc=0; (ulimit -v 800000; exec "$ANALYZE" -k Makeflow) 2>err || rc=$?
	cat err
	[ $rc = 1 ] && grep -Eq "^makeflow_analyze: Makeflow:[0-9]+: parsing needs more than the memory budget of 390" err
	rc=0; "$MF" --parse-memory lots Makeflow 2>err || rc=$?
	[ $rc = 1 ] && grep -q "parse-memory lots: expected a size" err
	[ ! -e marker ]
'

test_expect_success 'bad command-line options are clear errors and run nothing' '
	marker_rule >Makeflow
	check() {
		local want=$1 rc=0
		shift
		"$MF" "$@" >out 2>err || rc=$?
		if [ $rc != 1 ] || ! grep -q -- "$want" err || [ -e marker ]; then
			echo "makeflow $*: exit $rc, expected 1 and a message with $want:"
			cat err
			return 1
		fi
	}
	check "-j" -j 0 Makeflow
	check "-j" -j abc Makeflow
	check "-J" -J -3 Makeflow
	check "-r" -r -1 Makeflow
	check "bogus" --bogus Makeflow
	check "-g" -g sometimes Makeflow
	check "clean" --clean=some Makeflow
	check "progress" --progress=loud Makeflow
	check "nosuch" -d nosuch Makeflow
	check "KEY=VALUE" --batch-option noequals Makeflow
	check "frobnicate" --batch-option frobnicate=1 Makeflow
	check "sync-outputs" -T wq --batch-option sync-outputs=maybe Makeflow
	check "gc-size" --gc-size lots Makeflow
	check "one workflow" Makeflow Makeflow
	check "missing.mf" missing.mf
	check "T" Makeflow -T
	# and the tools
	rc=0; "$ANALYZE" --bogus Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	grep -q bogus err
	rc=0; "$VIZ" -D gif Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q -- "-D" err
	rc=0; "$ANALYZE" -k missing.mf 2>err || rc=$?
	[ $rc = 1 ]
	grep -q missing.mf err
'

# in -> a -> {b, c} -> d, with a LOCAL rule.
small_wf() {
	wf Makeflow <<'EOF'
a: in
    cat in > a
b: a
    cat a > b
c: a
    LOCAL cat a > c
d: b c
    cat b c > d
EOF
	echo in >in
}

test_expect_success 'makeflow_analyze -k, -i, -I, -O on a small workflow' '
	small_wf
	"$ANALYZE" -k Makeflow >k
	cat k
	grep -q "ok" k
	grep -q "4 rules" k
	"$ANALYZE" -i Makeflow >i
	cat i
	grep -Eq "^rules: +4 \\(1 local\\)" i
	grep -Eq "^files: +5 \\(1 sources, 3 intermediates, 1 final outputs\\)" i
	grep -Eq "^depth: +3" i
	grep -Eq "^max width: +2" i
	[ "$("$ANALYZE" -I Makeflow)" = in ]
	[ "$("$ANALYZE" -O Makeflow)" = d ]
	# analyze runs nothing
	test ! -e a
	test ! -e Makeflow.makeflowlog
'

test_expect_success 'makeflow_viz -D dot is valid Graphviz' '
	small_wf
	"$VIZ" -D dot Makeflow >wf.dot
	cat wf.dot
	grep -q "cat b c > d" wf.dot
	if command -v dot >/dev/null; then
		dot -Tcanon wf.dot >canon
		grep -q "label=in" canon
	elif [ -n "${CI:-}" ]; then
		echo "graphviz (dot) is not installed"; exit 1
	else
		echo "graphviz (dot) is not installed: not parsing the output"
	fi
'

test_expect_success 'makeflow_viz -D json is valid JSON describing the workflow' '
	small_wf
	"$VIZ" -D json Makeflow >wf.json
	python3 - wf.json <<-\EOF
	import json, sys
	w = json.load(open(sys.argv[1]))
	rules = {r["id"]: r for r in w["rules"]}
	assert len(rules) == 4, rules
	assert rules[3]["inputs"] == ["b", "c"], rules[3]
	assert sorted(rules[3]["parents"]) == [1, 2], rules[3]
	assert rules[2]["local_job"] is True, rules[2]
	roles = {f["name"]: f["role"] for f in w["files"]}
	assert roles == {"in": "source", "a": "intermediate", "b": "intermediate",
	                 "c": "intermediate", "d": "output"}, roles
	EOF
'

test_expect_success 'control characters in a bad workflow are escaped in the error message' '
	printf "A\033[31m=1\nout:\n\techo hi > out\n" >Makeflow
	"$BIN/makeflow" Makeflow 2>err && exit 1
	cat err
	grep -q "Makeflow:1: bad variable name .A.x1b\[31m." err
	! grep -q "$(printf "\033")" err
'

test_done
