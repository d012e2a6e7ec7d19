#!/bin/bash
# 49-wq-images.sh: end-to-end tests of image-aware scheduling and of the images a worker holds,
# against a real Docker Engine (the suite's own dockerd, images made with docker import, archives
# with docker save; nothing is pulled): a task naming an image goes to the worker that holds it;
# a burst of tasks of an archive no worker holds sends it to one worker first and to the others
# only once that transfer is done; an archive dropped from a worker's cache takes its image out of
# the engine, but never an image the engine had before the worker; and a dockerd killed while
# tasks run fails them as the worker's failure (retried), withdraws the worker's containers, and
# brings them back when the engine answers again.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin work_queue_worker

WORKER=$BIN/work_queue_worker
HM=$BUILD/work_queue/test/helper_image_master
TEST_TIMEOUT=120
IMG=wqtest-busybox:1

command -v dockerd >/dev/null && command -v docker >/dev/null && [ -x /bin/busybox ] ||
	test_skip_all "dockerd, docker or busybox missing (bash test/install-deps.sh test)"
[ "$(id -u)" = 0 ] || test_skip_all "dockerd needs root"

. "$(dirname "$0")/../lib/docker-lib.sh"
DK=$TEST_ROOT/docker
# engine_leftovers: the processes still running for the suite's engine (a containerd or shim
# of the dockerd case 4 kills), by PID.
engine_leftovers() {
	ps -eo pid=,args= | awk -v d="$DK/" 'index($0, d) && $2 !~ /awk/ { print $1 }'
}
# stop_engine: the engine the suite runs now (case 4 starts another), then what is left of any.
stop_engine() {
	[ ! -s "$DK/dockerd.now" ] || DOCKERD=$(cat "$DK/dockerd.now")
	docker_stop
	engine_leftovers | while read -r p; do kill -KILL "$p" 2>/dev/null || true; done
	awk -v d="$DK/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
trap 'stop_engine; __cleanup_all' EXIT
docker_start "$DK" || test_skip_all "the test's own dockerd did not answer within 30 s"
echo "$DOCKERD" >>"$TEST_ALL_PIDS"
docker_busybox_image "$DK/rootfs" $IMG only-in-the-image || test_skip_all "docker import failed"

# worker NAME ARGS...: a --containers worker in the background (idle timeout 60 s), its output in
# NAME.out and its pid in $NAME (tracked).
worker() {
	local name=$1
	shift
	"$WORKER" -t 60 --containers "$@" localhost "$(cat port)" >"$name.out" 2>&1 &
	printf -v "$name" %s $!
	test_track_pid $!
}

# connected NAME: the worker NAME has connected to the master.
connected() {
	grep -q "connected to" "$1.out"
}

# archive_image DIR NAME MB MARKER: NAME.tar, a docker save archive of an image NAME:1 (busybox
# and MB of random bytes, /etc/wq-marker holding MARKER) that the engine then no longer has.
archive_image() {
	local d=$1 name=$2 mb=$3 marker=$4
	mkdir -p "$d/data"
	[ "$mb" = 0 ] || head -c $((mb << 20)) /dev/urandom >"$d/data/pad"
	docker_busybox_image "$d" "$name:1" "$marker" &&
		docker save -o "$name.tar" "$name:1" && docker rmi "$name:1" >/dev/null
}

# field TAG KEY: the word after KEY on the result line of task TAG in hm.out.
field() {
	awk -v t="$1" -v k="$2" '$1 == "task" && $2 == t { for (i = 3; i < NF; i++) if ($i == k) print $(i + 1) }' hm.out
}

test_expect_success 'a task naming an image goes to the worker that holds it, not the first one' '
	"$HM" port "first,name,$IMG,holder,cat /etc/wq-marker" --wait \
		"second,name,$IMG,-,cat /etc/wq-marker" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	# the other worker connects first: without the image report it would be chosen first
	worker wother --cores 1
	test_wait_until 20 connected wother
	worker wholder --cores 1 --feature holder
	wait $hm || { cat hm.out wother.out wholder.out >&2; exit 1; }
	cat hm.out
	[ "$(field first result)" = SUCCESS ]
	[ "$(field second result)" = SUCCESS ]
	[ -n "$(field first worker)" ]
	[ "$(field second worker)" = "$(field first worker)" ]
'

test_expect_success 'a worker'"'"'s own --docker image counts as held' '
	"$HM" port --workers=2 "own,name,$IMG,-,cat /etc/wq-marker" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	worker wother --cores 1 -d worker
	test_wait_until 20 connected wother
	"$WORKER" -t 60 --docker $IMG --cores 1 -d worker localhost "$(cat port)" >wdocker.out 2>&1 &
	test_track_pid $!
	wait $hm || { cat hm.out wother.out wdocker.out >&2; exit 1; }
	cat hm.out
	[ "$(field own result)" = SUCCESS ]
	grep -x only-in-the-image hm.out
	# the task ran on the --docker worker, which joined second: not on the first one
	grep -q "task 1.1 received" wdocker.out
	test_must_fail grep -q "task 1.1 received" wother.out
'

test_expect_success 'a burst of tasks of an archive held nowhere: one transfer first, the others after it' '
	archive_image big wqtest-big 48 big-image
	args=()
	for i in 1 2 3 4 5 6 7 8; do
		args+=("t$i,archive,$PWD/wqtest-big.tar,-,sleep 1; cat /etc/wq-marker")
	done
	"$HM" port "${args[@]}" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	for n in w1 w2 w3 w4; do worker $n --cores 1; done
	wait $hm || { cat hm.out w1.out >&2; exit 1; }
	cat hm.out
	[ "$(grep -c "^task t[0-9] result SUCCESS status 0 " hm.out)" = 8 ]
	[ "$(grep -cx big-image hm.out)" = 8 ]
	# the first task sent is the one that carried the archive to its worker (its commit ends
	# when the task follows the archive); tasks for the other workers were sent only once
	# that transfer had ended (the task message comes a moment after: half the transfer is
	# the margin; sent at once, they would start with the first)
	awk "\$1 == \"task\" { print \$10, \$11, \$8 }" hm.out | sort -n >sends
	cat sends
	read -r first_start first_end first_worker <sends
	[ "$first_end" -gt "$first_start" ]
	half=$(((first_start + first_end) / 2))
	awk -v w="$first_worker" -v h="$half" "\$3 != w && \$1 < h { print \"sent at\", \$1, \"to\", \$3, \"during the first transfer\"; bad = 1 } END { exit bad }" sends
	# each worker that ran one fetched it once: the bytes sent are at most one archive each
	size=$(stat -c %s wqtest-big.tar)
	sent=$(awk "/^bytes_sent/ { print \$2 }" hm.out)
	workers=$(cut -d" " -f3 sends | sort -u | wc -l)
	echo "archive $size bytes; $sent bytes sent to $workers workers"
	[ "$sent" -le $((workers * size + 1048576)) ]
'

test_expect_success 'an archive dropped from the cache takes its image out of the engine, not one the engine had before' '
	archive_image a wqtest-a 20 image-a
	archive_image b wqtest-b 40 image-b
	# an archive of an image the engine already has (it stays in the engine)
	docker save -o pre.tar $IMG
	"$HM" port "ta,archive,$PWD/wqtest-a.tar,-,cat /etc/wq-marker" \
		"tpre,archive,$PWD/pre.tar,-,cat /etc/wq-marker" --wait \
		"tb,archive,$PWD/wqtest-b.tar,-,cat /etc/wq-marker" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	# 64 MB of disk: the third archive fits only once the first two are dropped
	worker w --cores 1 --disk 64 -d all
	wait $hm || { cat hm.out w.out >&2; exit 1; }
	cat hm.out
	[ "$(field ta result)" = SUCCESS ]
	[ "$(field tpre result)" = SUCCESS ]
	[ "$(field tb result)" = SUCCESS ]
	grep -x image-b hm.out
	# the master dropped the two archives no task needed; the image of the first went with
	# it; the image that was there before the worker stays
	grep "removed image wqtest-a:1" w.out
	test_must_fail docker image inspect wqtest-a:1 >/dev/null
	docker image inspect $IMG >/dev/null
	grep "image $IMG .* was in the engine before the worker: kept" w.out
	# the last archive'"'"'s image stays while its archive is cached, and goes with the
	# worker'"'"'s cache when it exits
	kill -TERM $w 2>/dev/null || true
	wait $w || true
	grep "removed image wqtest-b:1" w.out
	test_must_fail docker image inspect wqtest-b:1 >/dev/null
	docker image inspect $IMG >/dev/null
'

test_expect_success 'an archive dropped while its shared container runs: its image goes when the worker exits' '
	archive_image a wqtest-a 20 image-a
	archive_image b wqtest-b 50 image-b
	"$HM" port "sa,archive-shared,$PWD/wqtest-a.tar,-,cat /etc/wq-marker" --wait \
		"tb,archive,$PWD/wqtest-b.tar,-,cat /etc/wq-marker" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	worker w --cores 1 --disk 64 -d all
	wait $hm || { cat hm.out w.out >&2; exit 1; }
	cat hm.out
	[ "$(field sa result)" = SUCCESS ]
	[ "$(field tb result)" = SUCCESS ]
	# dropped, but the shared container of its image still runs: the image stays for now
	grep "cache: drop" w.out
	grep "image wqtest-a:1 still in use, removed later" w.out
	docker image inspect wqtest-a:1 >/dev/null
	kill -TERM $w 2>/dev/null || true
	wait $w
	grep "removed image wqtest-a:1" w.out
	test_must_fail docker image inspect wqtest-a:1 >/dev/null
	test_wait_until 30 test -z "$(docker ps -aq)"
'

test_expect_success 'a worker going on to another master drops the first one'"'"'s archives and their images, then reports' '
	archive_image a wqtest-a 0 image-a
	mkdir m1 m2
	"$HM" m1/port "ta,archive,$PWD/wqtest-a.tar,-,cat /etc/wq-marker" >m1/hm.out 2>&1 &
	hm1=$!
	test_track_pid $hm1
	"$HM" m2/port "tn,name,$IMG,-,cat /etc/wq-marker" >m2/hm.out 2>&1 &
	hm2=$!
	test_track_pid $hm2
	test_wait_for_file m1/port 20
	test_wait_for_file m2/port 20
	"$WORKER" -t 60 --containers --cores 1 -d all "localhost:$(cat m1/port);localhost:$(cat m2/port)" >w.out 2>&1 &
	w=$!
	test_track_pid $w
	wait $hm1 || { cat m1/hm.out w.out >&2; exit 1; }
	wait $hm2 || { cat m2/hm.out w.out >&2; exit 1; }
	cat m1/hm.out m2/hm.out
	grep -q "^task ta result SUCCESS" m1/hm.out
	grep -q "^task tn result SUCCESS" m2/hm.out
	# the new master_id emptied the cache: the archive'"'"'s image went, before the report
	grep "removed image wqtest-a:1" w.out
	test_must_fail grep -q "violation\|without the capability\|not expected" w.out m2/hm.out
	test_must_fail docker image inspect wqtest-a:1 >/dev/null
	kill -TERM $w 2>/dev/null || true
	wait $w || true
'

# task_containers_running N: N tasks' own containers run in the engine (not shared ones).
task_containers_running() {
	[ "$(docker ps --format "{{.Names}}" 2>/dev/null | grep -cv "^wq-worker-")" -ge "$1" ]
}

test_expect_success 'dockerd killed under a running task: the worker'"'"'s failure, containers withdrawn, back when it answers' '
	"$HM" port "long,name,$IMG,-,sleep 6; cat /etc/wq-marker" \
		"long2,name,$IMG,-,sleep 6; cat /etc/wq-marker" \
		"long3,name,$IMG,-,sleep 6; cat /etc/wq-marker" >hm.out 2>&1 &
	hm=$!
	test_track_pid $hm
	test_wait_for_file port 20
	# three at once: their three failures together must not dismiss the worker
	worker w --cores 3 -d all
	test_wait_until 60 task_containers_running 3
	kill -KILL $DOCKERD
	wait $DOCKERD 2>/dev/null || true
	# the running task fails naming the engine; the worker says its engine is gone and the
	# master withdraws its containers; the task is not returned as failed
	test_wait_until 30 grep -q "task [123].1: the container engine at .* stopped answering" w.out
	test_wait_until 30 grep -q "the container engine at .* does not answer" w.out
	test_wait_until 30 grep -q "task [123]: the worker could not run it (the container engine at .* stopped answering" hm.out
	test_wait_until 30 grep -q "its container engine does not answer" hm.out
	test_must_fail grep -q "^task long" hm.out
	test_must_fail grep -q "three sandbox errors" hm.out
	kill -0 $w
	# the engine comes back: the worker offers containers again and the task runs there
	docker_start "$DK"
	echo "$DOCKERD" >"$DK/dockerd.now"
	wait $hm || { cat hm.out >&2; tail -n 30 w.out >&2; exit 1; }
	cat hm.out
	grep "answers again" w.out
	grep "its container engine answers again" hm.out
	[ "$(field long result)" = SUCCESS ]
	[ "$(field long2 result)" = SUCCESS ]
	[ "$(field long3 result)" = SUCCESS ]
	[ "$(grep -cx only-in-the-image hm.out)" = 3 ]
	test_must_fail grep -q "three sandbox errors" hm.out w.out
	# the worker lived through it and ends cleanly (it may have left with its master)
	kill -TERM $w 2>/dev/null || true
	wait $w
'

test_done
