#!/bin/bash
# 20-resource-monitor.sh: end-to-end tests of the resource_monitor program with real
# processes whose use is known exactly (the helper_* programs of resource_monitor/test):
# summary fields and units, exit statuses, peak memory against the truth and against
# /usr/bin/time, short-lived children, limits and how fast they act, time series, disk,
# the /proc fallback, --pid, signals to the monitor, cleanup of processes and cgroups.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin resource_monitor

RM=$BIN/resource_monitor
HELPERS=$BUILD/resource_monitor/test
for h in alloc spawn burn write tree; do
	[ -x "$HELPERS/helper_$h" ] || test_skip_all "helper $HELPERS/helper_$h is not built (make tests)"
done
[ -x /usr/bin/time ] || test_skip_all "/usr/bin/time is missing (Debian package 'time', test group of install-deps.sh)"

# helpers: copy the helper programs into the case directory, so every process of this case
# is recognisable by its executable path (see alive_here).
helpers() {
	local h
	for h in alloc spawn burn write tree; do
		cp "$HELPERS/helper_$h" "./h_$h"
	done
}

# rm_run ARGS...: run the monitor in the background and wait for it; sets RC (its exit
# status) and MPID (its pid, which names its default output and its cgroups).
rm_run() {
	"$RM" "$@" &
	MPID=$!
	RC=0
	wait "$MPID" || RC=$?
	echo "resource_monitor $* -> exit $RC (pid $MPID)"
}

# expect_rc N: the last rm_run exited with N.
expect_rc() {
	if [ "$RC" != "$1" ]; then
		echo "expected exit status $1, got $RC" >&2
		return 1
	fi
}

# jcheck FILE PYEXPR: PYEXPR is true of the summary in FILE (bound to s; v(key) is the
# number of a field in either form). Prints the summary when it is not.
jcheck() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
def v(k):
    x = s[k]
    return x[0] if isinstance(x, list) else x
ok = eval(sys.argv[2])
if not ok:
    sys.stderr.write("check failed: %s\nsummary:\n%s\n" % (sys.argv[2], json.dumps(s, indent=1)))
    sys.exit(1)
EOF
}

# jval FILE KEY: the number of a field.
jval() {
	python3 -c '
import json, sys
x = json.load(open(sys.argv[1]))[sys.argv[2]]
print(x[0] if isinstance(x, list) else x)' "$1" "$2"
}

# within A B PCT: |A - B| <= PCT % of B.
within() {
	python3 -c '
import sys
a, b, p = map(float, sys.argv[1:4])
err = 100.0 * (a - b) / b
print("measured %.2f, truth %.2f, error %+.2f%% (allowed %.0f%%)" % (a, b, err, p))
sys.exit(0 if abs(err) <= p else 1)' "$1" "$2" "$3"
}

# alive_here: prints the processes still running an executable of this case's directory.
alive_here() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case "$exe" in "$PWD"/*) echo "${p#/proc/} $exe" ;; esac
	done
}

# tree_running N: at least N processes of this case run h_tree.
tree_running() {
	[ "$(alive_here | grep -c /h_tree)" -ge "$1" ]
}

# tree_alloc_running: a process of this case runs h_alloc.
tree_alloc_running() {
	alive_here | grep -q /h_alloc
}

# no_processes_left: nothing of this case runs any more (checked for a short while, since
# the last processes may still be exiting when the monitor returns).
no_processes_left() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -z "$(alive_here)" ] && return 0
		sleep 0.05
	done
	echo "processes left behind:" >&2
	alive_here >&2
	return 1
}

# no_cgroups_left PID: no cgroup of the monitor PID (htc.PID.*) remains in any hierarchy.
no_cgroups_left() {
	local left
	left=$(find /sys/fs/cgroup/ -name "htc.$1.*" -type d 2>/dev/null)
	if [ -n "$left" ]; then
		echo "cgroups left behind: $left" >&2
		return 1
	fi
}

# baseline_mb: peak resident MB of a helper that allocates nothing (the program itself, libc
# and the other shared libraries it maps), as the kernel's getrusage reports it.
baseline_mb() {
	/usr/bin/time -f %M -o base.kb ./h_alloc 0 0.1
	python3 -c 'import sys; print(int(open("base.kb").read().split()[-1]) / 1024.0)'
}

test_expect_success 'summary: valid JSON with every field and its unit' '
	helpers
	rm_run -O out --category cat1 --task-id 7 -- ./h_alloc 20 0.3
	expect_rc 0
	python3 -c "import json; json.load(open(\"out.summary\"))"
	jcheck out.summary "s[\"exit_type\"] == \"normal\" and s[\"exit_status\"] == 0"
	jcheck out.summary "s[\"category\"] == \"cat1\" and str(s[\"task_id\"]) == \"7\""
	jcheck out.summary "\"h_alloc\" in s[\"command\"] and len(s[\"host\"]) > 0"
	jcheck out.summary "all(s[k][1] == \"s\" for k in (\"wall_time\", \"cpu_time\"))"
	jcheck out.summary "all(s[k][1] == \"MB\" for k in (\"memory\", \"virtual_memory\", \"disk\"))"
	jcheck out.summary "all(isinstance(s[k], list) and s[k][0] >= 0 for k in (\"start\", \"end\", \"cores\", \"max_concurrent_processes\", \"total_processes\"))"
	jcheck out.summary "v(\"end\") > v(\"start\") and 0.25 < v(\"wall_time\") < 5"
	jcheck out.summary "v(\"max_concurrent_processes\") >= 1 and v(\"total_processes\") >= 1"
	jcheck out.summary "v(\"virtual_memory\") >= v(\"memory\") >= 20"
'

test_expect_success 'default output is resource-pid-PID.summary in the working directory' '
	helpers
	rm_run -- ./h_alloc 1 0
	expect_rc 0
	test -s resource-pid-$MPID.summary
	jcheck resource-pid-$MPID.summary "s[\"exit_status\"] == 0"
'

test_expect_success '--compact gives bare numbers, --no-pprint one line' '
	helpers
	rm_run -O c --compact --no-pprint -- ./h_alloc 1 0
	expect_rc 0
	test $(wc -l <c.summary) = 1
	jcheck c.summary "isinstance(s[\"memory\"], (int, float)) and isinstance(s[\"wall_time\"], (int, float))"
'

test_expect_success 'exit status 1 for a failing command, its status in the summary' '
	rm_run -O f -- sh -c "exit 3"
	expect_rc 1
	jcheck f.summary "s[\"exit_type\"] == \"normal\" and s[\"exit_status\"] == 3"
'

test_expect_success 'exit status 1 for a command killed by a signal' '
	rm_run -O k -- sh -c "kill -KILL \$\$"
	expect_rc 1
	jcheck k.summary "s[\"exit_type\"] == \"signal\" and s[\"signal\"] == 9"
'

test_expect_success 'a command that cannot be executed ends with status 127' '
	rm_run -O n -- ./does-not-exist
	expect_rc 1
	jcheck n.summary "s[\"exit_status\"] == 127"
'

test_expect_success 'peak memory of helper_alloc 200 within 3 % of 200 MiB + baseline' '
	helpers
	base=$(baseline_mb)
	rm_run -O a -- ./h_alloc 200 0.5
	expect_rc 0
	within "$(jval a.summary memory)" "$(python3 -c "print(200 + $base)")" 3
	no_cgroups_left $MPID
'

test_expect_success 'peak memory of the tree helper_tree 3 60 within 3 % of 180 MiB + 4 baselines' '
	helpers
	base=$(baseline_mb)
	rm_run -O t -- ./h_tree 3 60 1
	expect_rc 0
	within "$(jval t.summary memory)" "$(python3 -c "print(180 + 4 * $base)")" 3
	jcheck t.summary "v(\"max_concurrent_processes\") >= 4 and v(\"total_processes\") >= 4"
'

test_expect_success 'our peak memory within 5 % of /usr/bin/time -v (helper_alloc 200)' '
	helpers
	/usr/bin/time -v ./h_alloc 200 0.3 2>time.txt
	kb=$(sed -n "s/.*Maximum resident set size (kbytes): //p" time.txt)
	rm_run -O a -- ./h_alloc 200 0.3
	expect_rc 0
	within "$(jval a.summary memory)" "$(python3 -c "print($kb / 1024.0)")" 5
'

test_expect_success 'short-lived children are counted (helper_spawn 20 50, -i 1)' '
	helpers
	rm_run -O s -i 1 -- ./h_spawn 20 50
	expect_rc 0
	jcheck s.summary "v(\"total_processes\") >= 21"
	jcheck s.summary "v(\"max_concurrent_processes\") >= 2"
'

test_expect_success 'cpu_time and cores of helper_burn 2 1 cpu' '
	helpers
	# Each of the two processes spins until it has used 1 s of CPU, whatever share of the
	# machine it gets: at least 2 s of CPU is guaranteed, and no more than the two cores
	# of this machine can give over the wall time.
	rm_run -O b -- ./h_burn 2 1 cpu
	expect_rc 0
	jcheck b.summary "1.98 <= v(\"cpu_time\") <= 2.5 and 0 < v(\"cores\") <= 2.2"
'

test_expect_success 'wall-time limit of 1 s: exit 3 when the limit is passed, tree gone' '
	helpers
	# The tree would run for 30 s: the limit, not its end, stopped it. How soon after 1 s
	# depends on the load of the machine; the benchmarks measure that.
	rm_run -O w -L "wall_time: 1" -- ./h_tree 2 1 30
	expect_rc 3
	jcheck w.summary "s[\"exit_type\"] == \"limits\" and \"wall_time\" in s[\"limits_exceeded\"]"
	jcheck w.summary "1 <= v(\"wall_time\") < 20"
	no_processes_left
	no_cgroups_left $MPID
'

test_expect_success 'memory limit 100 MB on helper_alloc 300: exit 2, limits_exceeded.memory, tree gone' '
	helpers
	rm_run -O m -L "memory: 100" -- ./h_alloc 300 5
	expect_rc 2
	jcheck m.summary "s[\"exit_type\"] == \"limits\" and \"memory\" in s[\"limits_exceeded\"]"
	# Acted on before the 5 s hold.
	jcheck m.summary "v(\"wall_time\") < 3"
	no_processes_left
	no_cgroups_left $MPID
'

test_expect_success 'memory limit from a limits file (-l), JSON form' '
	helpers
	echo "{\"memory\": 50}" >limits.json
	rm_run -O m -l limits.json -- ./h_alloc 120 3
	expect_rc 2
	jcheck m.summary "\"memory\" in s[\"limits_exceeded\"]"
	no_processes_left
'

test_expect_success '--measure-only reports but does not enforce' '
	helpers
	rm_run -O m --measure-only -L "memory: 50" -- ./h_alloc 100 0.2
	expect_rc 0
	jcheck m.summary "s[\"exit_type\"] == \"normal\" and v(\"memory\") >= 100"
'

test_expect_success '--sh runs a shell command' '
	rm_run -O sh --sh "echo hello > out.txt; exit 0"
	expect_rc 0
	grep -qx hello out.txt
	jcheck sh.summary "s[\"command\"] == \"echo hello > out.txt; exit 0\""
'

test_expect_success '-V adds fields: JSON values kept, others as strings' '
	rm_run -O x -V "owner: alice" -V "n: 42" -V "obj: {\"a\": [1, 2]}" -- true
	expect_rc 0
	jcheck x.summary "s[\"owner\"] == \"alice\" and s[\"n\"] == 42 and s[\"obj\"] == {\"a\": [1, 2]}"
'

test_expect_success '--with-time-series writes one row per sample' '
	helpers
	rm_run -O ts --with-time-series -i 0.1 -- ./h_alloc 30 1.2
	expect_rc 0
	cat ts.series | head -n 5
	rows=$(grep -cv "^#" ts.series)
	echo "$rows rows"
	test "$rows" -ge 5
'

test_expect_success '--with-inotify lists the files the tree opened' '
	rm_run -O fi --with-inotify -i 0.1 -- sh -c "exec 3>mine.txt; sleep 0.5"
	expect_rc 0
	cat fi.files
	grep -q "mine.txt" fi.files
'

test_expect_success '--measure-dir: disk of helper_write 50 MB is in [50, 52]' '
	helpers
	mkdir d
	rm_run -O dk --measure-dir d -i 0.2 -- ./h_write d/f 50
	expect_rc 0
	jcheck dk.summary "50 <= v(\"disk\") <= 52"
'

test_expect_success '--cgroups=off: the /proc fallback measures and enforces' '
	helpers
	base=$(baseline_mb)
	rm_run -O p --cgroups=off -i 0.1 -- ./h_alloc 100 1
	expect_rc 0
	within "$(jval p.summary memory)" "$(python3 -c "print(100 + $base)")" 5
	rm_run -O q --cgroups=off -i 0.1 -L "memory: 60" -- ./h_alloc 150 5
	expect_rc 2
	jcheck q.summary "\"memory\" in s[\"limits_exceeded\"]"
	no_processes_left
'

test_expect_success '--cgroups=required works here and leaves no cgroup' '
	helpers
	rm_run -O r --cgroups=required -d rmon -o dbg.log -- ./h_alloc 10 0.1
	expect_rc 0
	grep -q "cgroup" dbg.log
	no_cgroups_left $MPID
'

test_expect_success '--pid attaches to a running process and measures it until it exits' '
	helpers
	./h_alloc 80 2 &
	target=$!
	test_track_pid $target
	sleep 0.2
	base=$(baseline_mb)
	rm_run -O at -i 0.1 --pid $target
	expect_rc 0
	within "$(jval at.summary memory)" "$(python3 -c "print(80 + $base)")" 5
	no_processes_left
'

test_expect_success 'kill -TERM of the monitor: tree killed, summary written' '
	helpers
	"$RM" -O sig -- ./h_tree 2 5 30 &
	MPID=$!
	test_wait_until 60 tree_running 3
	kill -TERM $MPID
	RC=0
	wait $MPID || RC=$?
	echo "monitor exit $RC"
	test $RC = 143
	jcheck sig.summary "s[\"exit_type\"] == \"signal\" and s[\"signal\"] == 15"
	no_processes_left
	no_cgroups_left $MPID
'

test_expect_success 'a monitor killed with SIGKILL: the next monitor removes its cgroup and processes' '
	helpers
	"$RM" -O dead -- ./h_alloc 5 60 &
	dead=$!
	test_wait_until 60 sh -c "test -n \"\$(find /sys/fs/cgroup/memory/ -name htc.$dead.* -type d)\""
	test_wait_until 60 tree_alloc_running
	kill -KILL $dead
	wait $dead || true
	test -n "$(alive_here)"
	rm_run -O next -- true
	expect_rc 0
	no_processes_left
	no_cgroups_left $dead
'

test_expect_success '--pid with a memory limit kills the attached tree' '
	helpers
	./h_tree 2 80 30 &
	target=$!
	test_track_pid $target
	test_wait_until 60 tree_running 3
	rm_run -O al -i 0.1 -L "memory: 100" --pid $target
	expect_rc 2
	jcheck al.summary "s[\"exit_type\"] == \"limits\" and \"memory\" in s[\"limits_exceeded\"]"
	no_processes_left
'

# bad_option EXPECTED-TEXT ARGS...: the monitor exits 4 and its message names EXPECTED-TEXT.
bad_option() {
	local want=$1
	shift
	RC=0
	"$RM" "$@" >bad.out 2>bad.err || RC=$?
	cat bad.err
	expect_rc 4
	grep -q -- "$want" bad.err
}

test_expect_success 'bad options exit 4 with a message naming the option' '
	bad_option "memry" -L "memry: 10" -- true
	bad_option "-i" -i abc -- true
	bad_option "--cgroups" --cgroups=maybe -- true
	bad_option "--bogus" --bogus -- true
	bad_option "-l" -l missing.json -- true
	bad_option "-O" -O /nonexistent/dir/x -- true
	bad_option "-V" -V "novalue" -- true
	bad_option "--pid" --pid 0
	bad_option "--measure-dir" --measure-dir nothere -- true
	bad_option "--cpuset" --cpuset abc -- true
	bad_option "command" -O x
	test ! -e x.summary
'

test_expect_success '-h and -v' '
	"$RM" -h | grep -q -- "--limits"
	"$RM" -v | grep -q "^resource_monitor "
'

test_done
