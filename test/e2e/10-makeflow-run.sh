#!/bin/bash
# 10-makeflow-run.sh: end-to-end tests of running workflows with makeflow:
# dependencies, failures and retries, the summary, environment and resources
# reaching jobs, memory admission, batch types (local, dryrun), nested, JSON
# and JX workflows. Each case writes its own small workflow in its temp dir.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow

MF=$BIN/makeflow


# mkstamp: write stamp.sh: `sh stamp.sh NAME SECONDS` records the job's start
# and end (ns since the epoch) in NAME, sleeping SECONDS in between. Shell
# variables live in the script so makeflow does not substitute them.
mkstamp() {
	cat >stamp.sh <<'EOF'
s=$(date +%s%N); sleep "$2"; e=$(date +%s%N); echo "$s $e" > "$1"
EOF
}

# overlaps A B: the intervals recorded by stamp.sh in A and B overlap.
overlaps() {
	local s1 e1 s2 e2
	read -r s1 e1 <"$1"
	read -r s2 e2 <"$2"
	[ "$s1" -lt "$e2" ] && [ "$s2" -lt "$e1" ]
}


# A workflow with a failing rule (line 3, exit 3) that leaves a partial
# output, a rule depending on it, and an independent branch.
failing_wf() {
	wf Makeflow <<'EOF'
a.txt:
    echo a > a.txt
bad.txt: a.txt
    echo partial > bad.txt; exit 3
down.txt: bad.txt
    touch down-ran; cat bad.txt > down.txt
ok.txt: a.txt
    sleep 0.3; echo ok > ok.txt
EOF
}

# Commands with quotes, an exported variable and a LOCAL rule, for dryrun.
dryrun_wf() {
	wf Makeflow <<'EOF'
export GREETING=hello
a.txt: in.txt
    cat in.txt > a.txt; printenv GREETING >> a.txt
b.txt: a.txt
    LOCAL sed "s/hello/bye/" a.txt > b.txt
q.txt:
    echo "it's" 'a "test"' > q.txt
EOF
	echo in >in.txt
}

test_expect_success 'a simple rule runs and its output appears' '
	wf Makeflow <<-\EOF
	out.txt: in.txt
	    tr a-z A-Z < in.txt > out.txt
	EOF
	echo hello >in.txt
	"$MF" Makeflow
	[ "$(cat out.txt)" = HELLO ]
	test -s Makeflow.makeflowlog
'

test_expect_success 'the default workflow is ./Makeflow' '
	wf Makeflow <<-\EOF
	out.txt:
	    echo default > out.txt
	EOF
	"$MF"
	[ "$(cat out.txt)" = default ]
'

test_expect_success 'a rule with several targets creates all of them and feeds a consumer' '
	wf Makeflow <<-\EOF
	x.txt y.txt z.txt: in.txt
	    cp in.txt x.txt; cp in.txt y.txt; echo z > z.txt
	both.txt: x.txt y.txt
	    cat x.txt y.txt > both.txt
	EOF
	echo in >in.txt
	"$MF" Makeflow
	[ "$(cat z.txt)" = z ]
	[ "$(cat both.txt)" = "$(printf "in\nin")" ]
'

test_expect_success 'fan-out then fan-in' '
	wf Makeflow <<-\EOF
	part.1: in.txt
	    sed -n 1p in.txt > part.1
	part.2: in.txt
	    sed -n 2p in.txt > part.2
	part.3: in.txt
	    sed -n 3p in.txt > part.3
	part.4: in.txt
	    sed -n 4p in.txt > part.4
	merged.txt: part.1 part.2 part.3 part.4
	    cat part.4 part.3 part.2 part.1 > merged.txt
	EOF
	printf "one\ntwo\nthree\nfour\n" >in.txt
	"$MF" Makeflow
	[ "$(cat merged.txt)" = "$(printf "four\nthree\ntwo\none")" ]
'

test_expect_success 'rules listed before the rules that produce their inputs' '
	wf Makeflow <<-\EOF
	final.txt: mid.txt
	    cat mid.txt mid.txt > final.txt
	mid.txt: first.txt
	    cat first.txt > mid.txt; echo mid >> mid.txt
	first.txt:
	    echo first > first.txt
	EOF
	"$MF" Makeflow
	[ "$(cat final.txt)" = "$(printf "first\nmid\nfirst\nmid")" ]
'

test_expect_success 'a failing rule: exit 1, file:line and exit code, outputs moved aside, other branch done' '
	failing_wf
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	# the closing list of failures names the rule by file:line and exit code
	sed -n "/rule failed:/,\$p" err >end
	grep -q "Makeflow:3:.*exit code 3" end
	test ! -e bad.txt
	[ "$(cat makeflow.failed.1/bad.txt)" = partial ]
	# INFO.json beside them says what ran and how it ended
	python3 - <<-\PY
	import json
	i = json.load(open("makeflow.failed.1/INFO.json"))
	assert i["exit_code"] == 3 and i["line"] == 3, i
	assert i["outputs"] == [{"dag_name": "bad.txt", "size": 8}], i
	assert i["category"] == "default" and i["attempts"] == 1, i
	assert "exit 3" in i["command"], i
	PY
	[ "$(cat ok.txt)" = ok ]
	test ! -e down-ran
	test ! -e down.txt
'

test_expect_success 'outputs in subdirectories: directories are made, failed outputs moved aside keep their path; -l' '
	wf Makeflow <<-\EOF
	out/deep/a.txt:
	    echo a > out/deep/a.txt
	res/b.txt: out/deep/a.txt
	    cat out/deep/a.txt > res/b.txt; exit 4
	EOF
	rc=0; "$MF" -l my.log Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	[ "$(cat out/deep/a.txt)" = a ]
	[ "$(cat makeflow.failed.1/res/b.txt)" = a ]
	test ! -e res/b.txt
	head -n 1 my.log | grep -q "^#htc-makeflow-log 1 "
	test ! -e Makeflow.makeflowlog
'

test_expect_success 'a rule that exits 0 without creating its output fails' '
	wf Makeflow <<-\EOF
	made.txt:
	    echo made > made.txt
	never.txt: made.txt
	    echo "forgot to write it"
	after.txt: never.txt
	    touch after-ran; cat never.txt > after.txt
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:3:.*never.txt" err
	test -s made.txt
	test ! -e after-ran
'

test_expect_success '-z: an empty output counts as missing' '
	wf Makeflow <<-\EOF
	empty.txt:
	    touch empty.txt
	EOF
	"$MF" Makeflow
	"$MF" -c Makeflow
	rc=0; "$MF" -z Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:1:.*empty.txt.*empty" err
'

test_expect_success '-r 2: a rule that fails twice succeeds on the third attempt' '
	# count.sh N OUT: counts its attempts in ./count; succeeds from the Nth.
	echo "n=\$(cat count 2>/dev/null || echo 0); n=\$((n+1)); echo \$n > count; [ \$n -ge \$1 ] && echo ok > \$2" >count.sh
	wf Makeflow <<-\EOF
	out.txt: count.sh
	    sh count.sh 3 out.txt
	EOF
	"$MF" -r 2 --summary-json summary.json Makeflow 2>err
	cat err
	[ "$(cat count)" = 3 ]
	[ "$(cat out.txt)" = ok ]
	[ "$(grep -c "retrying" err)" = 2 ]
	[ "$(jget summary.json rules.complete)" = 1 ]
	[ "$(jget summary.json rules.failed)" = 0 ]
'

test_expect_success '-r 1: a rule that needs three attempts fails after two' '
	echo "n=\$(cat count 2>/dev/null || echo 0); n=\$((n+1)); echo \$n > count; [ \$n -ge \$1 ] && echo ok > \$2" >count.sh
	wf Makeflow <<-\EOF
	out.txt: count.sh
	    sh count.sh 3 out.txt
	EOF
	rc=0; "$MF" -r 1 --summary-json summary.json Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	[ "$(cat count)" = 2 ]
	test ! -e out.txt
	grep -q "after 2 attempts" err
	[ "$(jget summary.json failed_rules.0.attempts)" = 2 ]
'

test_expect_success '--summary-json: the JSON summary has the right counts' '
	failing_wf
	rc=0; "$MF" --summary-json summary.json Makeflow 2>err || rc=$?
	[ $rc = 1 ]
	cat summary.json
	[ "$(jget summary.json status)" = failed ]
	[ "$(jget summary.json rules.total)" = 4 ]
	[ "$(jget summary.json rules.complete)" = 2 ]
	[ "$(jget summary.json rules.ran)" = 2 ]
	[ "$(jget summary.json rules.failed)" = 1 ]
	[ "$(jget summary.json rules.not_run)" = 1 ]
	[ "$(jget summary.json rules.recovered)" = 0 ]
	[ "$(jget summary.json failed_rules.0.line)" = 3 ]
	[ "$(jget summary.json failed_rules.0.exit_code)" = 3 ]
	# a successful run, then a run that finds everything done
	wf Good <<-\EOF
	g1:
	    echo 1 > g1
	g2: g1
	    cat g1 > g2
	EOF
	"$MF" --summary-json s1.json Good
	[ "$(jget s1.json status)" = complete ]
	[ "$(jget s1.json rules.ran)" = 2 ]
	[ "$(jget s1.json failed_rules)" = "[]" ]
	"$MF" --summary-json s2.json Good
	[ "$(jget s2.json rules.complete)" = 2 ]
	[ "$(jget s2.json rules.recovered)" = 2 ]
	[ "$(jget s2.json rules.ran)" = 0 ]
'

test_expect_success 'a missing source input: exit 1 before anything runs, naming file and line' '
	wf Makeflow <<-\EOF
	a.txt:
	    touch a-ran; echo a > a.txt
	
	b.txt: a.txt missing.txt
	    cat a.txt missing.txt > b.txt
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:4:.*missing.txt" err
	test ! -e a-ran
	test ! -e a.txt
'

test_expect_success 'exported variables reach the job, with the value seen by each rule' '
	wf Makeflow <<-\EOF
	export FOO=bar
	NOT_EXPORTED=qux
	e1.txt:
	    env > e1.txt
	FOO=baz
	e2.txt:
	    env > e2.txt
	export A1=x
	A2=early
	export A2 A3
	A2=y
	A3=z
	e3.txt:
	    env > e3.txt
	EOF
	"$MF" Makeflow
	grep -qx "FOO=bar" e1.txt
	grep -qx "FOO=baz" e2.txt
	not grep -q "^NOT_EXPORTED=" e1.txt
	grep -qx "A1=x" e3.txt
	grep -qx "A2=y" e3.txt
	grep -qx "A3=z" e3.txt
'

test_expect_success 'CORES, MEMORY and CATEGORY reach the job; OMP_NUM_THREADS defaults to CORES' '
	wf Makeflow <<-\EOF
	CATEGORY=big
	e1.txt:
	@CORES=2
	@MEMORY=100
	    env > e1.txt
	export OMP_NUM_THREADS=7
	e2.txt:
	@CORES=2
	    env > e2.txt
	EOF
	"$MF" --batch-option cores=4 Makeflow
	grep -qx "CORES=2" e1.txt
	grep -qx "MEMORY=100" e1.txt
	grep -qx "CATEGORY=big" e1.txt
	grep -qx "OMP_NUM_THREADS=2" e1.txt
	grep -qx "CATEGORY=big" e2.txt
	grep -qx "OMP_NUM_THREADS=7" e2.txt
'

test_expect_success 'LOCAL rules run' '
	wf Makeflow <<-\EOF
	l.txt:
	    LOCAL echo local > l.txt
	BATCH_LOCAL=true
	m.txt: l.txt
	    cat l.txt l.txt > m.txt
	EOF
	"$MF" Makeflow
	[ "$(cat l.txt)" = local ]
	[ "$(cat m.txt)" = "$(printf "local\nlocal")" ]
'

test_expect_success '-T dryrun writes a script that makes the real outputs, and creates nothing itself' '
	dryrun_wf
	"$MF" -T dryrun --batch-option script=run.sh Makeflow
	[ "$(ls | sort | tr "\n" " ")" = "Makeflow in.txt run.sh " ]
	sh run.sh
	[ "$(cat a.txt)" = "$(printf "in\nhello")" ]
	[ "$(cat b.txt)" = "$(printf "in\nbye")" ]
	# the same outputs as a real run
	mkdir real && cd real && dryrun_wf && "$MF" Makeflow && cd ..
	cmp a.txt real/a.txt
	cmp b.txt real/b.txt
	cmp q.txt real/q.txt
'

test_expect_success '-T dryrun says where its script went; the last line has no rate or ETA' '
	dryrun_wf
	"$MF" -T dryrun Makeflow 2>err
	cat err
	grep -q "^makeflow: dry run: the commands of 3 rules were written to Makeflow.sh" err
	[ -s Makeflow.sh ] && [ ! -e makeflow.dryrun.sh ]
	"$MF" -T dryrun --batch-option script=other.sh Makeflow 2>err
	grep -q "written to other.sh" err
	"$MF" Makeflow 2>err
	cat err
	tail -n 1 err | grep -Eq "^makeflow: 3/3 done, 0 failed in [0-9.]+ s$"
	! grep -q "ETA" err
	# nothing left to do: the line says so, and stdout has the words CCTools prints
	"$MF" Makeflow 2>err >out
	tail -n 1 err | grep -Eq "^makeflow: 3/3 done \(0 ran, 3 done before\), 0 failed in"
	test "$(cat out)" = "nothing left to do."
'

test_expect_success 'the progress line shows queued rules apart from running ones (-j 2)' '
	for i in 1 2 3 4 5 6 7; do
		printf "o$i:\n\twhile [ ! -e go ]; do sleep 0.05; done; touch o$i\n"
	done >Makeflow
	"$MF" -j 2 --progress=plain Makeflow >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 grep -q "0/7 done, 2 running, 5 queued, 0 waiting, 0 failed" mf.out || { cat mf.out; exit 1; }
	touch go
	wait $mf
	cat mf.out
	! grep -Eq " [3-7] running" mf.out
'

test_expect_success 'a rule larger than this machine fails at once, naming only what it asks for' '
	wf Makeflow <<-\EOF
	big.txt:
	@CORES=100000
	    echo big > big.txt
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "rule 0 failed: needs more resources than the local queue can ever give (cores 100000)" err
	! grep -q -- "-1 MB" err
'

test_expect_success 'an unknown -T is a clear error and runs nothing' '
	wf Makeflow <<-\EOF
	a.txt:
	    echo a > a.txt
	EOF
	rc=0; "$MF" -T nosuch Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "unknown batch system .nosuch." err
	grep -q "local" err
	test ! -e a.txt
'

test_expect_success 'remote renaming with -T local is refused before anything runs, naming the line' '
	wf Makeflow <<-\EOF
	first.txt:
	    echo first > first.txt
	out.txt->remote_out.txt: in.txt->remote_in.txt
	    cp remote_in.txt remote_out.txt
	EOF
	echo in >in.txt
	rc=0; "$MF" -T local Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:3:.*remote" err
	test ! -e first.txt
	test ! -e out.txt
'

test_expect_success 'memory admission: two 600 MB rules in 1000 MB never overlap' '
	mkstamp
	wf Makeflow <<-\EOF
	t1: stamp.sh
	@MEMORY=600
	    sh stamp.sh t1 0.4
	t2: stamp.sh
	@MEMORY=600
	    sh stamp.sh t2 0.4
	EOF
	"$MF" -j 4 --batch-option cores=4 --batch-option memory=1000 Makeflow
	cat t1 t2
	not overlaps t1 t2
'

test_expect_success 'memory admission: two 400 MB rules in 1000 MB run together' '
	mkstamp
	wf Makeflow <<-\EOF
	t1: stamp.sh
	@MEMORY=400
	    sh stamp.sh t1 0.8
	t2: stamp.sh
	@MEMORY=400
	    sh stamp.sh t2 0.8
	EOF
	"$MF" -j 4 --batch-option cores=4 --batch-option memory=1000 Makeflow
	cat t1 t2
	overlaps t1 t2
'

test_expect_success 'a rule asking for more memory than the machine has fails clearly' '
	wf Makeflow <<-\EOF
	ok.txt:
	    echo ok > ok.txt
	huge.txt:
	@MEMORY=100T
	    touch huge-ran; echo > huge.txt
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:3:.*more resources" err
	grep -q "memory" err
	test ! -e huge-ran
	test -s ok.txt
'

test_expect_success 'a rule over its WALL_TIME is killed and fails clearly' '
	wf Makeflow <<-\EOF
	slow.txt:
	@WALL_TIME=1
	    sleep 20; echo > slow.txt
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:1:.*wall time" err
	test ! -e slow.txt
'

test_expect_success 'a nested workflow (MAKEFLOW sub.mf) runs as one rule' '
	wf sub.mf <<-\EOF
	s1.txt: in.txt
	    cat in.txt > s1.txt
	s2.txt: s1.txt
	    cat s1.txt s1.txt > s2.txt
	EOF
	wf Makeflow <<-\EOF
	s2.txt: sub.mf in.txt
	    MAKEFLOW sub.mf
	top.txt: s2.txt
	    wc -l < s2.txt > top.txt
	EOF
	echo in >in.txt
	"$MF" Makeflow
	[ "$(cat s2.txt)" = "$(printf "in\nin")" ]
	[ "$(tr -d " " < top.txt)" = 2 ]
'

test_expect_success 'a failing nested workflow fails its rule' '
	wf sub.mf <<-\EOF
	s1.txt:
	    exit 5
	EOF
	wf Makeflow <<-\EOF
	s1.txt: sub.mf
	    MAKEFLOW sub.mf
	EOF
	rc=0; "$MF" Makeflow 2>err || rc=$?
	cat err
	[ $rc = 1 ]
	grep -q "Makeflow:1:" err
'

test_expect_success '--json: a JSON workflow runs' '
	cat >wf.json <<-\EOF
	{"rules": [
	  {"command": "echo hello > h.txt", "outputs": ["h.txt"]},
	  {"command": "cat h.txt h.txt > h2.txt", "inputs": ["h.txt"], "outputs": ["h2.txt"],
	   "local_job": true}
	]}
	EOF
	"$MF" --json wf.json
	[ "$(cat h2.txt)" = "$(printf "hello\nhello")" ]
'

test_expect_success '--jx with --jx-define: a JX workflow runs' '
	cat >wf.jx <<-\EOF
	{ "define": {"N": 3},
	  "rules": [ {"command": format("echo %d > out.%d", i, i), "outputs": ["out." + i]}
	             for i in range(N) ]
	         + [ {"command": "cat " + join(["out." + i for i in range(N)], " ") + " > all",
	              "inputs": ["out." + i for i in range(N)], "outputs": ["all"]} ] }
	EOF
	"$MF" --jx --jx-define N=4 wf.jx
	[ "$(cat all)" = "$(printf "0\n1\n2\n3")" ]
	test ! -e out.4
'

test_expect_success '-j 1 never runs two rules at once' '
	mkstamp
	wf Makeflow <<-\EOF
	t1: stamp.sh
	    sh stamp.sh t1 0.2
	t2: stamp.sh
	    sh stamp.sh t2 0.2
	t3: stamp.sh
	    sh stamp.sh t3 0.2
	EOF
	"$MF" -j 1 --batch-option cores=4 Makeflow
	cat t1 t2 t3
	not overlaps t1 t2
	not overlaps t1 t3
	not overlaps t2 t3
'

test_expect_success '-j above the core count runs that many rules without declared cores at once' '
	cat >together.sh <<EOS
#!/bin/sh
# all four rules must be running at the same time for any of them to finish
touch started.\$1
i=0
while [ "\$(ls started.* | wc -l)" -lt 4 ]; do
	i=\$((i + 1)); [ \$i -lt 200 ] || exit 1
	sleep 0.05
done
touch \$1
EOS
	chmod +x together.sh
	printf "a: together.sh\n\t./together.sh a\nb: together.sh\n\t./together.sh b\nc: together.sh\n\t./together.sh c\nd: together.sh\n\t./together.sh d\n" >Makeflow
	"$BIN/makeflow" -j 4 --batch-option cores=2 --progress=quiet Makeflow
	test -f a && test -f b && test -f c && test -f d
'

test_expect_success '-g on_demand collects only while free disk is below --gc-size' '
	printf "x\n" >in.txt
	printf "mid.txt: in.txt\n\tcat in.txt > mid.txt\nfinal.txt: mid.txt\n\tcat mid.txt > final.txt\n" >Makeflow
	# free disk is far above 1 byte: the intermediate stays (as in CCTools)
	"$MF" -g on_demand --gc-size 1 --progress=quiet Makeflow
	test -f mid.txt && test -f final.txt
	"$MF" -c Makeflow >/dev/null
	# ... and far below 1000 PB: it is collected
	"$MF" -g on_demand --gc-size 1000P --progress=quiet Makeflow
	test ! -e mid.txt && test -f final.txt
'

test_done
