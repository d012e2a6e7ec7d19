#!/bin/bash
# 60-slurm.sh: makeflow -T slurm and work_queue_factory -T slurm on a real single-node Slurm
# cluster that the suite starts itself (test/slurm/slurm-lib.sh: munged, slurmctld, slurmd,
# memory enforced by task/cgroup) and stops by PID: a 20-rule workflow, a failing rule's exit
# code, a rule over its memory and one over its time limit reported as exhausted, a rule
# over its first allocation retried at the maximum (--allocation), -B text
# reaching sbatch, the Slurm-only options, interrupt and restart after kill -9 removing the
# run's jobs, an unreachable controller, a node failure that requeues a running job, and workers
# of the factory run as Slurm jobs. The cluster keeps accounting (slurmdbd on its own MariaDB):
# measured memory and wall time come from sacct, and so does the end of a job the controller
# forgot; the last cases run it again without accounting. Under CI
# a cluster that cannot start fails the suite.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../slurm/slurm-lib.sh"

test_require_bin makeflow work_queue_factory work_queue_worker

MF=$BIN/makeflow
TEST_TIMEOUT=240

SLD=$TEST_ROOT/slurm
mkdir -p "$SLD"
trap 'slurm_stop; __cleanup_all' EXIT
SLURM_ACCOUNTING=1
t0=$SECONDS
if ! slurm_start "$SLD" 2>"$TEST_ROOT/slurm-start.err"; then
	cat "$TEST_ROOT/slurm-start.err" >&2
	slurm_stop
	test_skip_all "a Slurm cluster could not be started here ($(tail -n 1 "$TEST_ROOT/slurm-start.err"))"
fi
echo "# Slurm with accounting started in $((SECONDS - t0)) s" >&2

# jobs_of RUNID STATES: the ids of the Slurm jobs of run RUNID in one of STATES (squeue -t).
jobs_of() {
	squeue -h -n "htc-$1" -t "$2" -o '%i'
}
# run_id LOG: the run id of the last run recorded in a makeflow log.
run_id() {
	awk '$1 == "S" && NF >= 5 { id = $5 } END { print id }' "$1"
}
# no_live_jobs: no job of this user is pending, running or completing.
no_live_jobs() {
	[ -z "$(squeue -h -t PD,R,CG,S,CF -o '%i')" ]
}
# running_is N: exactly N jobs of this user are running (a command, for test_wait_until).
running_is() {
	[ "$(squeue -h -t R -o %i | wc -l)" = "$1" ]
}
# has_jobs RUNID STATES / no_jobs RUNID STATES: run RUNID has (no) jobs in one of STATES.
has_jobs() {
	[ -n "$(jobs_of "$1" "$2")" ]
}
no_jobs() {
	[ -z "$(jobs_of "$1" "$2")" ]
}
# rule_complete LOG ID: makeflow has logged rule ID complete.
rule_complete() {
	grep -qs "^N [0-9]* $2 3 " "$1"
}
# node_up: the node takes jobs again.
node_up() {
	sinfo -h -n "$SLURM_NODE" -o %t | grep -Eq "^(idle|mix|alloc)"
}
# clean_slate: no job of an earlier case is left (a case that failed may leave some).
clean_slate() {
	scancel -u "$(id -un)" 2>/dev/null || true
	test_wait_until 120 no_live_jobs
	node_up || scontrol update nodename="$SLURM_NODE" state=resume 2>/dev/null || true
	test_wait_until 60 node_up
}

# start_held OUT: makeflow -T slurm in the background (pid in mf) on one rule making OUT whose
# first run touches first-run and sleeps 600 s, and whose next run writes "again" at once;
# returns once the first run has begun.
start_held() {
	printf "%s:\n\ttest -e $PWD/first-run || { touch $PWD/first-run; sleep 600; }; echo again > %s\n" \
		"$1" "$1" >wf.mf
	"$MF" -T slurm wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 120 test -e first-run
}

test_expect_success 'a 20-rule workflow runs as Slurm jobs named after the run, one per rule' '
	clean_slate
	{
		for i in $(seq 1 20); do
			printf "out.%d: \n\techo rule %d > out.%d\n" $i $i $i
		done
		printf "all.txt: %s\n\tcat %s > all.txt\n" "$(echo out.{1..20})" "$(echo out.{1..20})"
	} >wf.mf
	"$MF" -T slurm wf.mf
	[ $(wc -l <all.txt) = 20 ]
	grep -qx "rule 7" all.txt
	id=$(run_id wf.mf.makeflowlog)
	[ ${#id} = 32 ]
	[ $(squeue -h -t all -n htc-$id -o %i | wc -l) = 21 ]
	[ -z "$(squeue -h -t all -n htc-$id -o %T | grep -v COMPLETED)" ]
	[ ! -e .htc-slurm ]
'

# acct_state JOB: the state accounting has for JOB ("" when none yet).
acct_state() {
	sacct -n -P -X -j "$1" -o State 2>/dev/null | cut -d" " -f1
}
# acct_final JOB STATE: accounting has JOB over in STATE.
acct_final() {
	[ "$(acct_state "$1")" = "$2" ]
}
# json_num FILE EXPR: a value from a JSON file (python3 is a test dependency); in EXPR, d is
# the document and cat(d, NAME) the category NAME of a --summary-json.
json_num() {
	python3 -c "import json, sys
def cat(d, name):
    return [c for c in d[\"categories\"] if c[\"name\"] == name][0]
d = json.load(open(sys.argv[1]))
print($2)" "$1"
}

test_expect_success 'with accounting, a rule'"'"'s measured memory and wall time come from sacct' '
	clean_slate
	# 100 MB written (so resident) and held for 4 s: sampled by jobacct_gather every second
	printf ".MAKEFLOW CATEGORY hold
.MAKEFLOW MEMORY 500
h.txt:
	python3 -c \"import time; b = b\x27x\x27 * (100 << 20); time.sleep(4)\"; echo ok > h.txt
" >wf.mf
	cat wf.mf
	"$MF" -T slurm -d batch -o dbg.log --summary-json sum.json wf.mf 2>err || { cat err; false; }
	[ -s h.txt ]
	job=$(squeue -h -t all -n htc-$(run_id wf.mf.makeflowlog) -o %i)
	grep "sacct: COMPLETED" dbg.log
	# MaxRSS of the batch step, in the category summary: about 100 MB
	mem=$(json_num sum.json "int(cat(d, \"hold\")[\"max_seen\"][\"memory\"])")
	echo "max seen memory $mem MB; sacct: $(sacct -n -P -j $job -o JobID,MaxRSS,Elapsed | tr "\n" " ")"
	[ "$mem" -ge 95 ] && [ "$mem" -le 300 ]
	# wall time: allocated memory x wall time is 500 MB x Elapsed, to the second
	el=$(sacct -n -P -X -j $job -o ElapsedRaw)
	[ "$el" -ge 4 ]
	[ "$(json_num sum.json "cat(d, \"hold\")[\"allocated\"][\"memory\"]")" = "$((500 * el)).0" ]
'

test_expect_success 'a failing rule reports its exit code; completed rules are kept' '
	clean_slate
	printf "ok.txt:\n\techo ok > ok.txt\nbad.txt: ok.txt\n\techo why: no input >&2; exit 7\n" >wf.mf
	test_must_fail "$MF" -T slurm wf.mf 2>err
	grep -q "exit code 7" err
	# the last lines of its output file, under the failure and in INFO.json
	grep -qx "  | why: no input" err
	grep -q "\"stderr_tail\": \"why: no input\"" makeflow.failed.1/INFO.json
	[ -s ok.txt ]
	grep -q "COMPLETED" <<<"$(squeue -h -t all -n htc-$(run_id wf.mf.makeflowlog) -o %T)"
'

test_expect_success 'a rule over its memory is killed by Slurm and reported as exhausted' '
	clean_slate
	printf ".MAKEFLOW CATEGORY big\n.MAKEFLOW MEMORY 50\nm.txt:\n\thead -c 400M /dev/zero | tail >/dev/null; echo done > m.txt\n" >wf.mf
	test_must_fail "$MF" -T slurm wf.mf 2>err
	grep -q "OUT_OF_MEMORY" err
	grep -q "exceeded its resource allocation (memory 50 MB)" err
'

test_expect_success 'a rule over its first allocation is retried by Slurm at the maximum and completes' '
	clean_slate
	for i in $(seq 1 25); do
		printf "{\"category\": \"big\", \"exit_type\": \"normal\", \"exit_status\": 0, "
		printf "\"memory\": [40, \"MB\"], \"cores\": [1, \"cores\"], \"wall_time\": [1, \"s\"]}\n"
	done >seeds
	printf "CATEGORY=big\nMEMORY=2000\nout:\n\thead -c 400M /dev/zero | tail >/dev/null && echo ok > out\n" >wf.mf
	"$MF" -T slurm --allocation waste --allocation-seed seeds wf.mf 2>err || { cat err; false; }
	cat err
	# the first job (--mem=250M) is stopped by the monitor makeflow runs it under, or by
	# Slurm (OUT_OF_MEMORY), whichever sees it first; the second has the maximum
	grep -q "exceeded its allocation (cores 1, memory 250 MB" err
	grep -q "running it again with the maximum (cores -1, memory 2000 MB" err
	[ -s out ]
	id=$(run_id wf.mf.makeflowlog)
	[ "$(squeue -h -t all -n htc-$id -o %T | wc -l)" = 2 ]
	[ "$(squeue -h -t all -n htc-$id -o "%i %T" | sort -n | tail -n 1 | cut -d" " -f2)" = COMPLETED ]
	grep -q "MinMemoryNode=2000M" <<<"$(scontrol show job "$(squeue -h -t all -n htc-$id -o %i | sort -n | tail -n 1)")"
'

test_expect_success '-B text reaches sbatch verbatim; --tmp too; the job runs with it' '
	clean_slate
	printf "s.txt:\n\tuntil test -e go; do sleep 0.1; done; echo s > s.txt\n" >wf.mf
	"$MF" -T slurm -B "--comment='"'"'hello slurm'"'"' --nice=5" --tmp 10M wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 not running_is 0
	squeue -h -o "%k|%y" | grep -qx "hello slurm|5"
	scontrol show job "$(squeue -h -t R -o %i)" | grep -q "MinTmpDiskNode=10M"
	touch go
	wait $mf
	[ -s s.txt ]
'

test_expect_success '--safe-submit-mode and --ignore-memory-spec leave resources out of sbatch' '
	clean_slate
	printf ".MAKEFLOW MEMORY 60000\n.MAKEFLOW CORES 1\nm.txt:\n\techo m > m.txt\n" >wf.mf
	# 60000 MB is more than the node has: only a submission without --mem can run
	test_must_fail "$MF" -T slurm wf.mf 2>err1
	grep -q "sbatch refused the job" err1
	"$MF" -T slurm --ignore-memory-spec wf.mf
	rm -f m.txt wf.mf.makeflowlog
	"$MF" -T slurm --safe-submit-mode wf.mf
	[ -s m.txt ]
'

test_expect_success 'an interrupt cancels the run'"'"'s jobs in Slurm; makeflow exits' '
	clean_slate
	printf "a:\n\tsleep 300\nb:\n\tsleep 300\n" >wf.mf
	"$MF" -T slurm wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 test -s wf.mf.makeflowlog
	test_wait_until 60 running_is 2
	id=$(run_id wf.mf.makeflowlog)
	kill -INT $mf
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc != 0 ]
	test_wait_until 60 no_jobs $id PD,R,CG
	squeue -h -t all -n htc-$id -o "%i %T %r"
	[ "$(squeue -h -t all -n htc-$id -o %T | sort -u)" = CANCELLED ]
'

test_expect_success 'a restart after kill -9 removes the jobs the killed run left in Slurm' '
	clean_slate
	# the job waits in Slurm (--begin), so only the driver can find it: no process of it runs
	printf "s.txt:\n\techo s > s.txt\n" >wf.mf
	"$MF" -T slurm -B "--begin=now+3600" wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 test -s wf.mf.makeflowlog
	old=$(run_id wf.mf.makeflowlog)
	test_wait_until 60 has_jobs $old PD
	kill -KILL $mf
	wait $mf || true
	[ -n "$(jobs_of $old PD)" ]
	"$MF" -T slurm wf.mf 2>err
	grep -q "jobs of the earlier run $old are gone" err
	[ -z "$(jobs_of $old PD,R,CG)" ]
	[ "$(squeue -h -t all -n htc-$old -o %T)" = CANCELLED ]
	[ -s s.txt ]
'

test_expect_success 'a restart after kill -9 cancels a running job through Slurm first: it is recorded CANCELLED' '
	clean_slate
	start_held r.txt
	old=$(run_id wf.mf.makeflowlog)
	test_wait_until 60 has_jobs $old R
	kill -KILL $mf
	wait $mf || true
	"$MF" -T slurm wf.mf 2>err
	cat err
	# its processes run on this machine, but Slurm cancelled it before makeflow looked here
	[ "$(squeue -h -t all -n htc-$old -o %T)" = CANCELLED ]
	[ "$(cat r.txt)" = again ]
'

test_expect_success 'makeflow -c after kill -9 cancels the jobs the killed run left in Slurm' '
	clean_slate
	printf "s.txt:\n\techo s > s.txt\n" >wf.mf
	"$MF" -T slurm -B "--begin=now+3600" wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 test -s wf.mf.makeflowlog
	old=$(run_id wf.mf.makeflowlog)
	test_wait_until 60 has_jobs $old PD
	kill -KILL $mf
	wait $mf || true
	"$MF" -T slurm -c wf.mf 2>err
	cat err
	grep -q "jobs of the earlier run $old are gone" err
	[ "$(squeue -h -t all -n htc-$old -o %T)" = CANCELLED ]
	[ ! -e s.txt ]
'

test_expect_success 'an unreachable controller: a clear message naming Slurm; no completed rule is lost' '
	clean_slate
	printf "a.txt:\n\techo a > a.txt\nb.txt: a.txt\n\ttest -e go || sleep 300; echo b > b.txt\n" >wf.mf
	"$MF" -T slurm --batch-option status-timeout=3 --batch-option poll-interval=0.5 \
		wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 rule_complete wf.mf.makeflowlog 0
	test_wait_until 60 not running_is 0
	slurm_stop_ctld
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc = 1 ]
	grep -q "slurm: squeue failed: " mf.out
	grep -q "Slurm did not answer squeue for 3 s" mf.out
	# the controller comes back: the completed rule is not run again
	slurmctld -f "$SLURM_CONF" -L "$SLURM_DIR/slurmctld.log"
	test_wait_until 60 squeue -h
	scancel -u root
	test_wait_until 60 no_live_jobs
	touch go
	"$MF" -T slurm wf.mf 2>err2 || { cat err2; false; }
	grep -q "1 of 2 rules are already complete" err2
	[ -s b.txt ]
'

test_expect_success 'makeflow -T slurm names Slurm when the controller cannot be reached at start' '
	clean_slate
	slurm_stop_ctld
	printf "a.txt:\n\techo a > a.txt\n" >wf.mf
	rc=0
	"$MF" -T slurm wf.mf 2>err || rc=$?
	slurmctld -f "$SLURM_CONF" -L "$SLURM_DIR/slurmctld.log"
	test_wait_until 60 squeue -h
	cat err
	[ $rc = 1 ]
	grep -q "slurm: the Slurm controller does not answer: squeue said: " err
	[ ! -e a.txt ]
'

test_expect_success 'a rule over its time limit is killed by Slurm and reported as exhausted' '
	clean_slate
	printf ".MAKEFLOW CATEGORY slow\n.MAKEFLOW WALL_TIME 5\nt.txt:\n\tsleep 600\n" >wf.mf
	test_must_fail "$MF" -T slurm wf.mf 2>err
	cat err
	grep -q "ended TIMEOUT" err
	grep -q "exceeded its wall time limit" err
'

# requeued_once JOB: Slurm shows JOB pending again after a restart (Restarts=1).
requeued_once() {
	scontrol show job "$1" 2>/dev/null | grep -q "Restarts=1" &&
		[ "$(squeue -h -j "$1" -o %T)" = PENDING ]
}

test_expect_success 'a node failure: Slurm requeues the running job, the rule runs again and completes once' '
	clean_slate
	start_held n.txt
	test_wait_until 120 running_is 1
	job=$(squeue -h -t R -o %i)
	# the node fails under the running job; Slurm kills the job and requeues it
	scontrol update nodename="$SLURM_NODE" state=down reason=e2e-node-failure
	test_wait_until 120 requeued_once "$job"
	# the killed instance must be gone from the node before the job may start there again
	# (else slurmd sees a duplicate job id and drains the node)
	test_wait_until 120 not pgrep -f "slurmstepd: \[$job\."
	# back in service (ReturnToService=2 may have done it already, when resume is refused)
	scontrol update nodename="$SLURM_NODE" state=resume 2>/dev/null || true
	test_wait_until 60 node_up
	# a requeued job waits out a begin time first; the test does not wait that long
	scontrol update jobid="$job" starttime=now
	wait $mf
	cat mf.out
	[ "$(cat n.txt)" = again ]
	# one rule, one completion; the same Slurm job ran it twice
	[ "$(grep -c "^N [0-9]* 0 3 " wf.mf.makeflowlog)" = 1 ]
	scontrol show job "$job" | grep -q "Restarts=1"
'

test_expect_success 'a job the controller forgot gets its end from sacct (here: over its memory)' '
	clean_slate
	printf ".MAKEFLOW CATEGORY big
.MAKEFLOW MEMORY 50
m.txt:
	touch started; until test -e go; do sleep 0.1; done; python3 -c \"b = b\x27x\x27 * (400 << 20)\"; echo done > m.txt
" >wf.mf
	"$MF" -T slurm wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_until 60 test -e started
	test_wait_until 60 not running_is 0
	job=$(squeue -h -t R -o %i)
	# makeflow does not look while the job ends and the controller forgets it
	kill -STOP $mf
	touch go
	test_wait_until 120 acct_final $job OUT_OF_MEMORY
	slurm_stop_ctld
	slurmctld -c -f "$SLURM_CONF" -L "$SLURM_DIR/slurmctld.log"
	test_wait_until 60 squeue -h
	[ -z "$(squeue -h -t all -o %i | grep -x "$job")" ]
	kill -CONT $mf
	rc=0
	wait $mf || rc=$?
	cat mf.out
	[ $rc != 0 ]
	grep -q "job $job ended OUT_OF_MEMORY (sacct)" mf.out
	grep -q "exceeded its resource allocation (memory 50 MB)" mf.out
	test_wait_until 60 node_up
'

test_expect_success 'work_queue_factory -T slurm runs workers as Slurm jobs; the tasks complete' '
	clean_slate
	for i in 1 2 3 4; do printf "w.%d:\n\techo %d > w.%d\n" $i $i $i; done >wf.mf
	"$MF" -T wq -p 0 -Z port wf.mf >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file port 20
	"$BIN/work_queue_factory" -T slurm --max-workers 2 --period 0.5 -t 10 localhost $(cat port) \
		>factory.out 2>&1 &
	f=$!
	test_track_pid $f
	wait $mf
	[ -s w.1 ] && [ -s w.4 ]
	squeue -h -t all -o "%j %T" | grep -q "^htc-[0-9a-f]* RUNNING\|^htc-[0-9a-f]* COMPLETED\|^htc-[0-9a-f]* COMPLETING"
	kill -TERM $f
	wait $f || true
	test_wait_until 60 no_live_jobs
'

test_expect_success 'without accounting: exit codes from squeue and the status files, nothing measured' '
	clean_slate
	slurm_accounting_off
	test_must_fail sacct -n -j 1
	printf ".MAKEFLOW CATEGORY c
ok.txt:
	echo ok > ok.txt
bad.txt: ok.txt
	exit 7
" >wf.mf
	test_must_fail "$MF" -T slurm -d batch -o dbg.log --summary-json sum.json wf.mf 2>err
	grep -q "exit code 7" err
	[ -s ok.txt ]
	test_must_fail grep -q "sacct" dbg.log
	# the driver measures nothing: no category report
	[ "$(json_num sum.json "\"categories\" in d")" = False ]
	# accounting=yes on a cluster without it stops makeflow before anything runs
	rm -f ok.txt wf.mf.makeflowlog
	test_must_fail "$MF" -T slurm --batch-option accounting=yes wf.mf 2>err2
	cat err2
	grep -q "slurm: accounting=yes, but sacct does not answer: Slurm accounting storage is disabled" err2
	[ ! -e ok.txt ]
'

test_done
