#!/bin/bash
# 16-jx-compat.sh: JX and JSON workflows written for CCTools run unchanged:
# the forms of the CCTools manual (trailing commas, a define section,
# --jx-args files, comprehensions) and errors that name the real line and
# column of the offending value in the file.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow

MF=$BIN/makeflow

test_expect_success 'the manual'"'"'s JX example (trailing comma in a rule) runs' '
	cat >example.jx <<-\EOF
	{
	    "rules": [
	        {
	            "command": "./simulate.py -n "+N+" > output."+N+".txt",
	            "inputs": [ "simulate.py" ], "outputs": [ "output."+N+".txt" ],
	        } for N in range(1,4)
	    ]
	}
	EOF
	printf "#!/bin/sh\necho sim \$2\n" >simulate.py
	chmod +x simulate.py
	"$MF" --jx example.jx
	grep -qx "sim 3" output.3.txt
'

test_expect_success 'a define section and lists with trailing commas run' '
	cat >define-hello.jx <<-\EOF
	{
	    "define": {
	        "message": "hello",
	        "names": ["a", "b",],
	    },
	    "rules": [
	        {
	            "command": "echo " + message + " " + n + " > " + n + ".txt",
	            "outputs": [n + ".txt",],
	        } for n in names
	    ],
	}
	EOF
	"$MF" --jx define-hello.jx
	grep -qx "hello b" b.txt
'

test_expect_success 'a --jx-args file with a trailing comma is read' '
	cat >args.jx <<-\EOF
	{
	    "input": "data.txt",
	    "count": 2,
	}
	EOF
	cat >gather.jx <<-\EOF
	{
	    "rules": [
	        {
	            "command": format("cat %s > part.%d", input, i),
	            "inputs": [input], "outputs": [format("part.%d", i)],
	        } for i in range(count),
	        {
	            "command": "cat " + join([format("part.%d", i) for i in range(count)], " ") + " > all",
	            "inputs": [format("part.%d", i) for i in range(count)],
	            "outputs": ["all"],
	        },
	    ],
	}
	EOF
	echo x >data.txt
	"$MF" --jx --jx-args args.jx gather.jx
	[ "$(wc -l <all)" = 2 ]
'

# refuses FILE REGEX [OPTIONS...]: makeflow refuses FILE with exit 1 and a
# message matching REGEX, before anything runs.
refuses() {
	local f=$1 re=$2 rc=0
	shift 2
	"$MF" "$@" "$f" >out 2>err || rc=$?
	cat err
	[ $rc = 1 ] || { echo "makeflow exited $rc, expected 1"; return 1; }
	grep -Eq "$re" err || { echo "no message matching: $re"; return 1; }
	[ ! -e ran ] || { echo "a rule ran"; return 1; }
}

test_expect_success 'JSON errors name the line and column of the value' '
	cat >w.json <<-\EOF
	{"rules": [
	    {"command": "touch ran", "outputs": ["ran"]},
	    {"command": "x",
	     "outputs": ["b"], "resources": {"cores": "many"}}
	]}
	EOF
	refuses w.json "^makeflow: w.json:4:47: rule 1: bad value .many. for resource .cores." --json
	cat >k.json <<-\EOF
	{"rules": [

	    {"command": "x", "outputs": ["b"], "comand": "y"}
	]}
	EOF
	refuses k.json "^makeflow: k.json:3: rule 0: unknown key .comand." --json
'

test_expect_success '--json refuses JX expressions, naming their place' '
	printf "{\"rules\": [\n  {\"command\": \"a\" + X, \"outputs\": [\"a\"]}]}\n" >e.json
	refuses e.json "^makeflow: e.json:2:.*: .*not plain JSON" --json
'

test_expect_success 'JX errors found after evaluation name the line of the value' '
	cat >w.jx <<-\EOF
	{"rules": [
	    {"command": "touch ran", "outputs": ["ran"]},
	    {"command": "touch " + f, "outputs": [f],
	     "local_job": f} for f in ["a", "b"]
	]}
	EOF
	refuses w.jx "^makeflow: w.jx:4:19: rule 1: .local_job. must be true or false" --jx
'

test_expect_success 'a failed JX rule is reported at its line' '
	cat >w.jx <<-\EOF
	{"rules": [

	    {"command": "exit 3", "outputs": ["a"]}
	]}
	EOF
	rc=0; "$MF" --jx w.jx 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "w.jx:3: rule 0 failed" err
'

test_done
