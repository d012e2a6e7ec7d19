#!/bin/bash
# 36-wq-docker.sh: end-to-end tests of tasks in Docker containers against a real Docker Engine:
# the suite starts its own dockerd (own socket, data-root, exec-root, pidfile), makes a busybox
# image with docker import, then runs the container runner directly (marker file, sandbox
# files, exit status, stderr, SIGTERM), and makeflow -T wq with workers in --docker and
# --docker-preserve modes (shared container seen by two tasks, gone at exit), containers made
# ahead of their tasks, and a missing image refused with status 1.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=60
IMG=wqtest-busybox:1

command -v dockerd >/dev/null && command -v docker >/dev/null && [ -x /bin/busybox ] ||
	test_skip_all "dockerd, docker or busybox missing (bash test/install-deps.sh test)"
[ "$(id -u)" = 0 ] || test_skip_all "dockerd needs root"

. "$(dirname "$0")/../lib/docker-lib.sh"
DK=$TEST_ROOT/docker
trap 'docker_stop; __cleanup_all' EXIT
docker_start "$DK" || test_skip_all "the test's own dockerd did not answer within 30 s"
echo "$DOCKERD" >>"$TEST_ALL_PIDS"
docker_busybox_image "$DK/rootfs" $IMG only-in-the-image || test_skip_all "docker import failed"
[ ! -e /etc/wq-marker ] || test_skip_all "/etc/wq-marker exists on the host"

# no_containers: no container at all, running or not (a function, so that test_wait_until
# runs docker each time instead of testing one expansion made before it starts).
no_containers() {
	[ -z "$(docker ps -aq)" ]
}

# mirrored_groups: task groups at our memory group's path in the other cgroup v1 hierarchies
# (and the unified one), where ours are elsewhere. Docker's cgroupfs driver makes them for a
# container nested in a task's memory group; the runner removes them when it is done.
mirrored_groups() {
	local mem h name own
	mem=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
	[ -n "$mem" ] && [ "$mem" != / ] || return 0
	for h in /sys/fs/cgroup/*/; do
		h=${h%/}
		name=${h##*/}
		[ "$name" = memory ] && continue
		if [ "$name" = unified ]; then
			own=$(sed -n 's/^0:://p' /proc/self/cgroup)
		else
			own=$(awk -F: -v n="$name" '{split($2, c, ","); for (i in c) if (c[i] == n || $2 == "name=" n) print $3}' /proc/self/cgroup)
		fi
		[ "$own" = "$mem" ] && continue
		[ -d "$h$mem/htc" ] && find "$h$mem/htc" -mindepth 1 -maxdepth 1 -type d -name "htc.*"
	done
	return 0
}

# run_runner DIR ARGS...: the runner on a sandbox DIR/{work,tmp} (cwd = work).
run_runner() {
	local d=$1
	shift
	mkdir -p "$d/work" "$d/tmp"
	(cd "$d/work" && "$WORKER" --container-run --image $IMG --workdir "$d/work" --bind "$d" \
		-- /bin/sh -c "$@")
}

test_expect_success 'the runner: in the container, sandbox files both ways, stdout, status' '
	echo hello >in.txt
	mkdir -p sb/work && cp in.txt sb/work/
	rc=0
	run_runner "$PWD/sb" "cat /etc/wq-marker; cat in.txt >out.txt; echo to-stderr >&2; exit 7" \
		>out 2>err || rc=$?
	[ $rc = 7 ]
	grep -qx only-in-the-image out
	grep -qx to-stderr err
	[ "$(cat sb/work/out.txt)" = hello ]
	[ -z "$(docker ps -aq)" ]
'

test_expect_success 'the runner: SIGTERM kills the container, status 143, nothing left' '
	mkdir -p sb/work sb/tmp
	# exec: $! must be the runner itself, not a shell around it
	(cd sb/work && exec "$WORKER" --container-run --image $IMG --workdir "$PWD" \
		--bind "${PWD%/work}" -- /bin/sh -c "echo started; sleep 30") >out 2>&1 &
	r=$!
	test_wait_until 60 grep -q started out
	[ -n "$(docker ps -q)" ]
	kill -TERM $r
	rc=0
	wait $r || rc=$?
	[ $rc = 143 ]
	test_wait_until 30 no_containers
'

# shared_run CMD...: the runner in shared mode (the container of the image for owner 4242,
# state in ./st) on the sandbox sb/work; its words after -- are CMD...
shared_run() {
	mkdir -p sb/work sb/tmp st
	(cd sb/work && exec "$WORKER" --container-run --image $IMG --shared-image \
		--state "${PWD%/sb/work}/st" --owner 4242 --workdir "$PWD" --bind "${PWD%/sb/work}" \
		-- "$@")
}

# no_task_sleep: the shared task below and its sleep are gone.
no_task_sleep() {
	! pgrep -f "started; sleep 31" >/dev/null && ! pgrep -fx "sleep 31" >/dev/null
}

test_expect_success 'the runner, shared mode: the container'"'"'s agent runs the tasks; SIGTERM kills the task, not the container' '
	rc=0
	shared_run /bin/sh -c "tr \"\\0\" \" \" </proc/1/cmdline; echo; echo x >/tmp/mark; pwd" \
		>out 2>err || rc=$?
	cat out err
	[ $rc = 0 ]
	# PID 1 of the shared container is the agent, listening in the state directory
	grep -q "^/.htc-container-agent $PWD/st wq-worker-4242-[0-9a-f]*.sock" out
	grep -qx "$PWD/sb/work" out
	[ "$(docker ps -q | wc -l)" = 1 ]
	# the next task runs in the same container, with its own status and stderr
	rc=0
	shared_run /bin/sh -c "cat /tmp/mark; echo e >&2; exit 7" >out 2>err || rc=$?
	[ $rc = 7 ]
	grep -qx x out
	grep -qx e err
	rc=0
	shared_run /bin/sh -c "kill -9 \$\$" || rc=$?
	[ $rc = 137 ]
	# a program the image does not have: 125 and the reason
	rc=0
	shared_run /no/such/program 2>err || rc=$?
	[ $rc = 125 ]
	grep -q "cannot execute /no/such/program in the container: No such file or directory" err
	# a container whose agent no longer answers (its socket is gone) is replaced, once
	old=$(docker ps -q)
	rm st/*.sock
	rc=0
	shared_run /bin/sh -c "cat /tmp/mark 2>/dev/null; echo fresh" >out 2>err || rc=$?
	[ $rc = 0 ]
	grep -q "its agent does not answer; replacing it" err
	[ "$(cat out)" = fresh ]
	[ "$(docker ps -q | wc -l)" = 1 ]
	[ "$(docker ps -q)" != "$old" ]
	[ -S st/*.sock ]
	# SIGTERM: the task and its children are killed, the container stays for the next task
	# exec: $! must be the runner itself, not a shell around it
	(cd sb/work && exec "$WORKER" --container-run --image $IMG --shared-image \
		--state "${PWD%/sb/work}/st" --owner 4242 --workdir "$PWD" --bind "${PWD%/sb/work}" \
		-- /bin/sh -c "echo started; sleep 31; echo not-killed") >out 2>&1 &
	r=$!
	test_wait_until 60 grep -q started out
	kill -TERM $r
	rc=0
	wait $r || rc=$?
	[ $rc = 143 ]
	test_wait_until 30 no_task_sleep
	test_must_fail grep -q not-killed out
	[ "$(docker ps -q | wc -l)" = 1 ]
	shared_run /bin/sh -c "echo still-up" >out
	grep -qx still-up out
	docker ps -aq | xargs -r docker rm -f >/dev/null
	test_wait_until 30 no_containers
'

# agent_up: the agent started below listens.
agent_up() {
	[ -S ag/a.sock ]
}

test_expect_success 'the agent: a malformed request is answered E EPROTO, and the agent serves the next' '
	mkdir -p ag sb/work
	"$BIN/htc_container_agent" "$PWD/ag" a.sock 2>agent.err &
	a=$!
	test_track_pid $a
	test_wait_until 20 agent_up
	python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b\"not a request\")
s.shutdown(socket.SHUT_WR)
print(s.recv(64).decode().strip())
" "$PWD/ag/a.sock" >reply
	[ "$(cat reply)" = "E 71" ]
	rc=0
	(cd sb/work && "$BIN/htc_container_agent" --run "${PWD%/sb/work}/ag" a.sock img "$PWD" \
		-- /bin/false --container-run -- /bin/sh -c "echo served; exit 4") >out || rc=$?
	[ $rc = 4 ]
	grep -qx served out
	grep -q "\"mode\":\"shared\"" sb/container.json
	kill -TERM $a
	wait $a
'

test_expect_success 'the runner: a missing image gives 125 and Docker'"'"'s message' '
	mkdir -p sb/work
	rc=0
	(cd sb/work && "$WORKER" --container-run --image nosuch:1 --workdir "$PWD" -- /bin/sh -c true) \
		2>err || rc=$?
	[ $rc = 125 ]
	grep -q "No such image: nosuch:1" err
'

test_expect_success 'a worker with a missing image exits 1 naming it' '
	rc=0
	"$WORKER" --docker nosuch:1 localhost 1 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "nosuch:1" err
	grep -q "not on this machine" err
'

test_expect_success 'a worker whose Docker socket does not answer exits 1 naming it' '
	rc=0
	DOCKER_HOST=unix://$PWD/none.sock "$WORKER" --docker $IMG localhost 1 2>err || rc=$?
	[ $rc = 1 ]
	grep -q "$PWD/none.sock" err
'

test_expect_success 'makeflow -T wq with --docker: rules run in containers' '
	echo data >in.txt
	wf Makeflow <<-\EOF
	marker.txt: in.txt
	    cat /etc/wq-marker in.txt > marker.txt
	pid1.txt:
	    cat /proc/1/cmdline | tr "\0" " " > pid1.txt
	EOF
	start_master Makeflow
	"$WORKER" -t 30 --exit-after-tasks 1 --docker $IMG localhost $port >w.out 2>&1 &
	test_track_pid $!
	"$WORKER" -t 30 --docker $IMG localhost $port >>w.out 2>&1 &
	test_track_pid $!
	wait $mf || { cat mf.out w.out >&2; exit 1; }
	[ "$(cat marker.txt)" = "$(printf "only-in-the-image\ndata")" ]
	grep -q "/bin/sh -c" pid1.txt
	# the second worker still runs: no copy of its tasks'"'"' groups is left behind
	mirrored_groups >mirrored
	[ ! -s mirrored ] || { cat mirrored >&2; exit 1; }
'

test_expect_success 'makeflow -T wq with --docker: a failing rule gives its status' '
	wf Makeflow <<-\EOF
	never.txt:
	    exit 3
	EOF
	start_master Makeflow
	"$WORKER" -t 30 --docker $IMG localhost $port >w.out 2>&1 &
	test_track_pid $!
	rc=0
	wait $mf || rc=$?
	[ $rc != 0 ]
	grep -q "3" mf.out
	[ ! -e never.txt ]
'

# exhausted_in_container DOCKER-OPTION...: rules of MEMORY=40 through a worker with the options
# given (its pid in $w, left running): big.txt, over its memory, is memory exhausted and not
# done; small.txt and cg.txt (the task's /proc/self/cgroup) are done.
exhausted_in_container() {
	wf Makeflow <<-\EOF
	MEMORY=40
	cg.txt:
	    cat /proc/self/cgroup > cg.txt
	big.txt:
	    /bin/busybox awk "BEGIN { s = \"x\"; while (length(s) < 120000000) s = s s; print length(s) }" && echo done > big.txt
	small.txt:
	    echo small > small.txt
	EOF
	start_master Makeflow
	"$WORKER" -t 30 "$@" localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	rc=0
	wait $mf || rc=$?
	cat mf.out cg.txt
	[ $rc != 0 ] && test ! -e big.txt && [ "$(cat small.txt)" = small ] &&
		grep -Eqi "memory exhausted|exceeded its (resource|memory)|exhaust" mf.out
}

test_expect_success 'makeflow -T wq with --docker: a rule over its MEMORY is memory exhausted' '
	exhausted_in_container --docker $IMG &&
	# the monitor killed the runner with the task; the worker removes the container the
	# runner left, in its thread pool beside the result: none is left while the worker still
	# runs, and none is found when it ends
	test_wait_until 40 no_containers &&
	{ kill -TERM $w 2>/dev/null || true; } && # it may have left with the master already
	{ wait $w || true; } &&
	cat w.out &&
	not grep -q "removed container .* left by pid" w.out
'

# serve WORKER-OPTION...: a worker with the options given serves the master started last until
# makeflow ends (both outputs shown when makeflow fails), then is stopped; its output is in w.out.
serve() {
	"$WORKER" -t 30 "$@" localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $mf || { cat mf.out w.out >&2; return 1; }
	kill -TERM $w 2>/dev/null || true # it may have left with the master already
	wait $w || true
}

# grows_in_container DOCKER-OPTION...: a warm-up category whose first rule (a) is measured at a
# few tens of MB and whose second (b) needs several times that, on a --memory-grow worker with
# the options given: b is grown, not killed and run again.
grows_in_container() {
	wf Makeflow <<-\EOF
	CATEGORY=grow
	a.txt:
	    /bin/busybox awk "BEGIN { s = \"x\"; while (length(s) < 8000000) s = s s; print length(s) }" > a.txt
	b.txt: a.txt
	    /bin/busybox awk "BEGIN { s = \"x\"; while (length(s) < 64000000) s = s s; print length(s) }" > b.txt
	EOF
	start_master --allocation warmup -d alloc -o mf.dbg Makeflow
	serve --cores 2 --memory 4000 --disk 4000 --memory-grow on "$@" || return 1
	cat w.out
	[ "$(cat b.txt)" -ge 64000000 ] &&
		grep -q "memory limit grown from" w.out &&
		not grep -qi "exhausted" mf.out w.out &&
		# one try each: the grown rule was not run again
		[ "$(grep -c "rule [0-9]* (grow, level" mf.dbg)" = 2 ] &&
		test_wait_until 60 no_containers
}

test_expect_success 'makeflow -T wq with --docker and --memory-grow: a rule over its estimate grows in its container' '
	# its container, nested in the task'"'"'s cgroup, may grow as far as the worker lets the
	# cgroup grow
	grows_in_container --docker $IMG
'

test_expect_success 'makeflow -T wq with --docker, --memory-grow and --container-cgroups engine: a rule over its estimate grows through the engine' '
	# its container is in the engine'"'"'s own cgroup: the worker reads its memory there and
	# raises its limit with the engine'"'"'s update call
	grows_in_container --docker $IMG --container-cgroups engine &&
	grep -q "updated to [0-9]* MB through the engine" w.out
'

test_expect_success 'makeflow -T wq with --docker and --container-cgroups engine: a rule past its maximum is given up there, not left waiting, and run again without it' '
	wf Makeflow <<-\EOF
	CATEGORY=grow
	a.txt:
	    echo a > a.txt
	b.txt: a.txt
	    /bin/busybox awk "BEGIN { s = \"x\"; while (length(s) < 300000000) s = s s; print length(s) }" > b.txt
	EOF
	start_master --allocation warmup Makeflow
	serve --cores 1 --memory 300 --disk 4000 --memory-grow on --docker $IMG \
		--container-cgroups engine
	cat mf.out w.out
	# its container waited at 300 MB (its OOM killer off) until the worker gave it up
	[ "$(cat b.txt)" -ge 300000000 ] &&
		grep -q "task 2.1 reached its memory limit of 300 MB .*memory exhausted" w.out &&
		grep -q "task 2 exceeded the memory the master chose" mf.out &&
		# the given-up container was removed then, not found stopped when the worker ended
		not grep -q "removed container .* left by pid" w.out &&
		test_wait_until 60 no_containers
'

# lent_in_container DOCKER-OPTION...: a one-core rule whose container keeps two cores busy on
# a two-core --cpu-grow worker with the options given: the worker lends it the idle core (the
# task's view says two cores), and the container's own CPU quota (read inside it) is then two
# cores, changed through the engine, nested in the task's cgroup or not.
lent_in_container() {
	test -w /sys/fs/cgroup/cpu || {
		say "no cpu controller"
		return 1
	}
	cat >burn.sh <<-\EOF
	q=/sys/fs/cgroup/cpu/cpu.cfs_quota_us
	burn() { while :; do :; done; }
	burn &
	a=$!
	burn &
	b=$!
	echo "start $(cat $q)" > q.txt
	# the task's view (the worker's file in its sandbox, bound into the container)
	v=$HTC_ALLOCATION_FILE
	i=0
	while ! grep -q "^CORES=2$" "$v" && [ $i -lt 400 ]; do sleep 0.1; i=$((i + 1)); done
	echo "then $(cat $q) $(grep CORES= "$v")" >> q.txt
	kill $a $b
	EOF
	wf Makeflow <<-\EOF
	CATEGORY=burn
	CORES=1
	MEMORY=200
	DISK=100
	q.txt: burn.sh
	    /bin/sh burn.sh
	EOF
	start_master Makeflow
	serve --cores 2 --memory 2000 --disk 4000 --cpu-grow on "$@" || return 1
	cat q.txt w.out
	grep -q "CPU quota raised to 2 cores" w.out &&
		grep -q "^then 200000 CORES=2$" q.txt &&
		test_wait_until 60 no_containers
}

test_expect_success 'makeflow -T wq with --docker and --cpu-grow: a busy rule in its container is lent the idle core' '
	# nested under the task'"'"'s memory group (the worker'"'"'s CPU group is at another path on
	# this machine: the container'"'"'s CPU group is a copy there, outside the task'"'"'s), the
	# container starts at its one core; its quota is raised through the engine with the task'"'"'s
	# quota
	lent_in_container --docker $IMG &&
	grep -q "^start 100000$" q.txt
'

test_expect_success 'makeflow -T wq with --docker, --cpu-grow and --container-cgroups engine: the idle core is lent through the engine' '
	# in the engine'"'"'s own cgroup, the container starts at its one core; the worker counts its
	# CPU time there and raises its quota with the engine'"'"'s update call
	lent_in_container --docker $IMG --container-cgroups engine &&
	grep -q "^start 100000$" q.txt
'

# ahead_rules N SECONDS: N rules of one core each, in a container of their own (CONTAINER=),
# each writing what it sees (PID 1 of its container, its hostname, the image's marker, its
# cgroups) to cN.txt; all but the first two then sleep SECONDS (the first two end at once, so
# that the category is measured and the master queues the others on the worker).
ahead_rules() {
	{
		printf 'CORES=1\nCONTAINER=%s\n' $IMG
		for i in $(seq 1 "$1"); do
			printf 'c%d.txt:\n\t(tr "\\0" " " < /proc/1/cmdline; echo; hostname; cat /etc/wq-marker /proc/self/cgroup) > c%d.tmp && sleep %s && mv c%d.tmp c%d.txt\n' \
				"$i" "$i" "$([ "$i" -le 2 ] && echo 0 || echo "$2")" "$i" "$i"
		done
	} >Makeflow
}

# ahead_containers: how many containers made ahead (running `htc_container_agent --once`)
# exist.
ahead_containers() {
	docker ps -a --no-trunc --format "{{.Command}}" | grep -c -- "--once" || true
}
no_ahead_containers() {
	[ "$(ahead_containers)" = 0 ]
}
some_ahead_container() {
	[ "$(ahead_containers)" -gt 0 ]
}

test_expect_success 'makeflow -T wq, tasks in containers of their own: containers made ahead while the tasks wait, one per task' '
	ahead_rules 10 1
	start_master Makeflow
	"$WORKER" -t 30 --cores 2 --containers -d all -o w.debug localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $mf || { cat mf.out w.out >&2; exit 1; }
	kill -TERM $w 2>/dev/null || true
	wait $w || true
	# the tasks queued on the worker had their containers made while they waited ...
	grep -q "making a container ahead in .*/containers/ahead\." w.debug
	# ... and ran in them: PID 1 of the container was the one-task agent, and the task joined
	# the cgroups the worker made for it (memory), not the container'"'"'s
	ahead=0
	for i in $(seq 1 10); do
		[ "$(sed -n 3p c$i.txt)" = only-in-the-image ]
		if grep -q "^/.htc-container-agent --once .*/containers/ahead\.[0-9]* agent.sock" c$i.txt; then
			grep -Eq "^[0-9]+:([a-z_]+,)*memory(,[a-z_]+)*:/.*/htc\.[^/]*$" c$i.txt
			ahead=$((ahead + 1))
		fi
	done
	echo "$ahead of 10 tasks ran in containers made ahead"
	[ $ahead -ge 1 ]
	# every task had a container of its own (ten host names)
	[ "$(for i in $(seq 1 10); do sed -n 2p c$i.txt; done | sort -u | wc -l)" = 10 ]
	# each made-ahead container went with its task; the worker left none behind
	test_wait_until 60 no_containers
'

test_expect_success 'makeflow -T wq, containers made ahead: --no-containers-ahead makes them at the start' '
	ahead_rules 4 0
	start_master Makeflow
	"$WORKER" -t 30 --cores 2 --containers --no-containers-ahead -d all -o w.debug \
		localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $mf || { cat mf.out w.out >&2; exit 1; }
	kill -TERM $w 2>/dev/null || true
	wait $w || true
	not grep -q "making a container ahead" w.debug
	not grep -q -- "--once" c1.txt c2.txt c3.txt c4.txt
	test_wait_until 60 no_containers
'

test_expect_success 'makeflow -T wq, containers made ahead: a worker killed with -9 leaves none behind' '
	ahead_rules 8 20
	start_master Makeflow
	"$WORKER" -t 30 --cores 2 --containers localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	test_wait_until 40 some_ahead_container
	kill -KILL $w $mf
	wait $w $mf 2>/dev/null || true
	# each runner making one had the worker as its parent-death signal: it removed its
	# container (a task that had started in it is killed with it)
	test_wait_until 40 no_ahead_containers
	docker ps -aq | xargs -r docker rm -f >/dev/null
'

test_expect_success 'makeflow -T wq with --docker-preserve: one shared container, gone at exit' '
	wf Makeflow <<-\EOF
	a.txt:
	    echo $$ > /tmp/shared-mark && cat /tmp/shared-mark > a.txt
	b.txt: a.txt
	    cat /tmp/shared-mark /etc/wq-marker > b.txt
	pid1.txt:
	    tr "\0" " " < /proc/1/cmdline > pid1.txt
	EOF
	start_master Makeflow
	"$WORKER" -t 5 --docker-preserve $IMG -d all -o w.debug localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	# (not waiting to see the container up: it may come and go with the three rules between
	# two looks; pid1.txt shows where the rules ran)
	wait $mf || { cat mf.out w.out >&2; exit 1; }
	[ -s a.txt ]
	[ "$(cat a.txt)" = "$(head -n 1 b.txt)" ]
	[ "$(tail -n 1 b.txt)" = only-in-the-image ]
	# the tasks were handed to the agent the container runs, not Engine execs
	grep -q "^/.htc-container-agent .*/containers wq-worker-$w.sock" pid1.txt
	# by the agent'"'"'s client, which the worker starts instead of the runner
	grep -q "started pid [0-9]* (.*/htc_container_agent --run .*/containers wq-worker-$w.sock $IMG " w.debug
	kill -TERM $w 2>/dev/null || true # it may have left with its master already
	wait $w || true
	[ -z "$(docker ps -aq --filter name=wq-worker-$w)" ]
'

test_expect_success 'makeflow -T wq with --docker-preserve: a task of the shared container is in its own task cgroup, held to its MEMORY' '
	exhausted_in_container --docker-preserve $IMG
	# the task, forked by the agent in the container, was moved into the cgroup the worker
	# made for it (not the container'"'"'s), in the memory hierarchy at least
	grep -Eq "^[0-9]+:([a-z_]+,)*memory(,[a-z_]+)*:/.*/htc\.[^/]*$" cg.txt
	# the devices hierarchy stays the container'"'"'s
	not grep -Eq "^[0-9]+:devices:/.*/htc\." cg.txt
	# the shared container survived the task'"'"'s kill
	[ -n "$(docker ps -q --filter name=wq-worker-$w)" ]
	kill -TERM $w 2>/dev/null || true # it may have left with the master already
	wait $w || true
	test_wait_until 60 no_containers
'

test_expect_success 'makeflow -T wq with --docker-preserve and --memory-grow: a rule over its estimate grows in the shared container' '
	# the task cgroup that the agent'"'"'s task joined is grown instead of the rule being killed
	grows_in_container --docker-preserve $IMG
'

# make_img2: img2.tar, a docker save archive of a second image (wqtest-two:1, whose
# /etc/wq-marker says image-two) that the engine does not have.
make_img2() {
	docker_busybox_image two wqtest-two:1 image-two &&
		docker save -o img2.tar wqtest-two:1 && docker rmi wqtest-two:1 >/dev/null
}

# task_block TAG: the output of task TAG in hm.out (helper_container_master), without its
# result line.
task_block() {
	awk -v t="$1" '/^task / { on = ($2 == t); next } on' hm.out
}

test_expect_success 'tasks name their containers: images by name and as cached archives, per task and shared' '
	make_img2
	printf "not an image archive\n" >bad.tar
	"$BUILD/work_queue/test/helper_container_master" port \
		"byname,name,$IMG,task,cat /etc/wq-marker" \
		"tar1,archive,$PWD/img2.tar,task,cat /etc/wq-marker" \
		"tar2,archive,$PWD/img2.tar,shared,cat /etc/wq-marker" \
		"shared1,name,$IMG,shared,echo one > /tmp/mark; cat /etc/wq-marker" \
		"shared2,name,$IMG,shared,sleep 1; cat /tmp/mark" \
		"missing,name,nosuch:1,task,true" \
		"corrupt,archive,$PWD/bad.tar,task,true" \
		"badname,name,-x y,task,true" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_until 30 test -s port
	DOCKER_API_DEBUG=all "$WORKER" -t 30 --containers localhost $(cat port) >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $hm || { cat hm.out w.out >&2; exit 1; }
	cat hm.out
	grep -q "^task byname result SUCCESS status 0" hm.out
	task_block byname | grep -qx only-in-the-image
	grep -q "^task tar1 result SUCCESS status 0" hm.out
	task_block tar1 | grep -qx image-two
	grep -q "^task tar2 result SUCCESS status 0" hm.out
	task_block tar2 | grep -qx image-two
	grep -q "^task shared1 result SUCCESS status 0" hm.out
	task_block shared1 | grep -qx only-in-the-image
	# the second task ran in the same container as the first, which left /tmp/mark there
	grep -q "^task shared2 result SUCCESS status 0" hm.out
	task_block shared2 | grep -qx one
	# the archive was loaded once for the two tasks that needed it (by a task'"'"'s runner, on
	# its stderr, or by the runner that made a container ahead, on the worker'"'"'s)
	[ "$(cat hm.out w.out | grep -c "loaded image wqtest-two:1 from")" = 1 ]
	# what each container cost comes back with the task: a task of its own was created and
	# run (and deleted, unless its container was made ahead: then after its result); a
	# shared one was run (and one of the two started the container)
	task_block byname | grep -Eq "^container costs: load -1.000 create [0-9.]+ run [0-9.]+ delete (-1.000|[0-9.]+)$"
	task_block shared2 | grep -Eq "^container costs: load -1.000 create [-0-9.]+ run [0-9.]+ delete -1.000$"
	[ "$( (task_block shared1; task_block shared2) | grep -Ec "^container costs: load -1.000 create [0-9]")" = 1 ]
	[ "$( (task_block tar1; task_block tar2) | grep -Ec "^container costs: load [0-9]")" = 1 ]
	grep -q "^task missing result SUCCESS status 125" hm.out
	grep -q "No such image: nosuch:1" hm.out
	grep -q "^task corrupt result SUCCESS status 125" hm.out
	grep -q "bad.tar.*cannot be loaded" hm.out
	grep -q "^task badname refused: container image \"-x y\": expected an image name" hm.out
	# the worker stays up through the failures; at its exit the shared containers go with it
	kill -0 $w
	kill -TERM $w
	wait $w || true
	test_wait_until 30 no_containers
'

test_expect_success 'makeflow -T local: --docker, CONTAINER_IMAGE_TAR and CONTAINER_MODE=none' '
	make_img2
	wf Makeflow <<-\EOF
	CONTAINER_MODE=task
	a.txt:
	    cat /etc/wq-marker > a.txt
	b.txt:
	@CONTAINER_IMAGE_TAR=img2.tar
	    cat /etc/wq-marker > b.txt
	c.txt:
	@CONTAINER_IMAGE_TAR=img2.tar
	    cat /etc/wq-marker > c.txt
	host.txt:
	@CONTAINER_MODE=none
	    test ! -e /etc/wq-marker && echo host > host.txt
	EOF
	"$MF" --docker $IMG Makeflow >mf.out 2>&1 || { cat mf.out >&2; exit 1; }
	[ "$(cat a.txt)" = only-in-the-image ]
	[ "$(cat b.txt)" = image-two ]
	[ "$(cat c.txt)" = image-two ]
	[ "$(cat host.txt)" = host ]
	# the archive was loaded once, and recorded beside the log
	[ "$(cat Makeflow.makeflowlog.containers/*.image)" = wqtest-two:1 ]
	test_wait_until 30 no_containers
'

test_expect_success 'makeflow -T wq: rules and categories name their containers' '
	make_img2
	wf Makeflow <<-EOF
	CATEGORY=inimg
	CONTAINER=$IMG
	a.txt:
	    cat /etc/wq-marker > a.txt
	CATEGORY=fromtar
	CONTAINER=
	CONTAINER_IMAGE_TAR=img2.tar
	CONTAINER_MODE=shared
	b.txt:
	    echo one > /tmp/mark; cat /etc/wq-marker > b.txt
	c.txt: b.txt
	    cat /tmp/mark /etc/wq-marker > c.txt
	EOF
	start_master Makeflow
	"$WORKER" -t 30 --containers localhost $port >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $mf || { cat mf.out w.out >&2; exit 1; }
	[ "$(cat a.txt)" = only-in-the-image ]
	[ "$(cat b.txt)" = image-two ]
	# c ran in the container b ran in (its /tmp/mark), which the worker kept
	[ "$(cat c.txt)" = "$(printf "one\nimage-two")" ]
	kill -TERM $w 2>/dev/null || true
	wait $w || true
	test_wait_until 30 no_containers
'

test_done
