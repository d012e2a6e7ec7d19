#!/bin/bash
# 48-shared-cache.sh: end-to-end tests of workers that share a store (work_queue_worker
# --shared-cache DIR, doc/work-queue-shared-cache.md) with makeflow -T wq and separate worker
# processes on one directory: an input both workers need crosses the network once (a file or a
# directory), and a URL
# input both need is fetched from its server once (work_queue/test/helper_url_master); a worker
# killed with kill -9 in the middle of receiving a large object leaves nothing in the store and
# the other worker gets the whole object; a dead writer's temporary and lock stall nobody.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"
. "$(dirname "$0")/../lib/http-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
URL_MASTER=$BUILD/work_queue/test/helper_url_master
[ -x "$URL_MASTER" ] || test_skip_all "$URL_MASTER is not built (make tests)"
TEST_TIMEOUT=180

# object_of FILE: the cache name of FILE.
object_of() {
	echo "F-$(sha256sum "$1" | cut -d" " -f1)"
}

# transfers_of NAME: the TRANSFER INPUT lines of the master's transactions log for NAME.
transfers_of() {
	grep -c " TRANSFER INPUT [0-9]* $1 " tx.log || true
}

# two_rules: two rules that need `big`, each writing its sha256 as seen in its sandbox. Each
# waits until both have started (files in $PWD/started), so that two workers run them.
two_rules() {
	mkdir -p started
	for r in a b; do
		printf '%s.out: big\n\ttouch %s/started/%s; until [ `ls %s/started | wc -l` -ge 2 ]; do sleep 0.05; done; sha256sum big > %s.out\n' \
			$r "$PWD" $r "$PWD" $r
	done
}

test_expect_success 'an input two workers of one store need is sent once; both tasks read it whole' '
	head -c 20000000 /dev/urandom >big
	two_rules >Makeflow
	start_master -L tx.log --batch-option prefetch=0 Makeflow
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	finish
	obj=$(object_of big)
	want=$(sha256sum big | cut -d" " -f1)
	[ "$(cut -d" " -f1 a.out)" = "$want" ]
	[ "$(cut -d" " -f1 b.out)" = "$want" ]
	[ "$(transfers_of $obj)" = 1 ]
	grep " TRANSFER INPUT [0-9]* $obj 20000000 " tx.log
	[ "$(cat w1.log w2.log | grep -c "shared cache: $obj published")" = 1 ]
	[ "$(cat w1.log w2.log | grep -c "shared cache: take $obj: done")" = 1 ]
	# the store holds it, and its content is its name
	[ "$(sha256sum store/objects/$obj | cut -d" " -f1)" = "$want" ]
	[ "$(cat store/store-id | wc -c)" = 33 ]
'

test_expect_success 'a cached directory two workers of one store need is sent once; both read it whole' '
	mkdir -p refdir/sub/empty started
	head -c 3000000 /dev/urandom >refdir/a
	head -c 2000000 /dev/urandom >refdir/sub/b
	echo small >refdir/sub/c
	test_daemon_start port "$URL_MASTER" together-dir port "$PWD/refdir" "$PWD/started" 2
	master=$DAEMON_PID
	mlog=$(ls daemon.*.log | tail -n 1)
	port=$DAEMON_PORT
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	rc=0
	wait $master || rc=$?
	cat $mlog
	[ $rc = 0 ]
	grep -q "^task t1 result SUCCESS status 0" $mlog
	grep -q "^task t2 result SUCCESS status 0" $mlog
	want=$(cat refdir/a refdir/sub/b refdir/sub/c | sha256sum | cut -d" " -f1)
	[ "$(cut -d" " -f1 t1.txt)" = "$want" ]
	[ "$(cut -d" " -f1 t2.txt)" = "$want" ]
	# published by the worker it was sent to, taken by the other
	obj=$(ls store/objects | grep "^D-")
	[ "$(cat w1.log w2.log | grep -c "shared cache: $obj published")" = 1 ]
	[ "$(cat w1.log w2.log | grep -c "shared cache: take $obj: done")" = 1 ]
	# the tree in the store, read-only (the workers, gone now, linked its files)
	cmp store/objects/$obj/a refdir/a
	cmp store/objects/$obj/sub/b refdir/sub/b
	[ -d store/objects/$obj/sub/empty ]
	[ "$(stat -c %a store/objects/$obj)" = 555 ]
	[ "$(stat -c %a store/objects/$obj/sub/b)" = 444 ]
	[ "$(ls -A store/.partial | wc -l)" = 0 ]
'

test_expect_success 'a store on another file system (tmpfs) than the workers: checked copies' '
	st=$(stat -c %d /dev/shm 2>/dev/null) || { say "no /dev/shm"; exit 1; }
	[ "$st" != "$(stat -c %d .)" ] || { say "/dev/shm is this file system"; exit 1; }
	store=$(mktemp -d /dev/shm/htc-48.XXXXXX)
	head -c 8000000 /dev/urandom >big
	two_rules >Makeflow
	start_master -L tx.log --batch-option prefetch=0 Makeflow
	start_worker --cores 1 --shared-cache "$store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	start_worker --cores 1 --shared-cache "$store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	rc=0
	finish || rc=$?
	want=$(sha256sum big | cut -d" " -f1)
	got=$(sha256sum "$store/objects/F-$want" | cut -d" " -f1)
	links=$(stat -c %h "$store/objects/F-$want")
	left=$(ls -A "$store/.partial" | wc -l)
	rm -rf "$store"
	[ $rc = 0 ]
	[ "$(cut -d" " -f1 a.out)" = "$want" ]
	[ "$(cut -d" " -f1 b.out)" = "$want" ]
	[ "$(transfers_of F-$want)" = 1 ]
	[ "$got" = "$want" ]
	[ "$links" = 1 ]
	[ "$left" = 0 ]
	[ "$(cat w1.log w2.log | grep -c "shared cache: take F-$want: done")" = 1 ]
'

test_expect_success 'a later run takes what the store already holds, with no transfer' '
	head -c 3000000 /dev/urandom >big
	obj=$(object_of big)
	printf "a.out: big\n\tsha256sum big > a.out\n" >Makeflow
	start_master -L tx.log Makeflow
	start_worker --single-shot --shared-cache "$PWD/store" -s "$PWD/w1" localhost $port
	finish
	[ "$(transfers_of $obj)" = 1 ]
	printf "b.out: big\n\tsha256sum big > b.out\n" >Makeflow2
	mv tx.log tx1.log
	start_master -L tx.log Makeflow2
	start_worker --single-shot --shared-cache "$PWD/store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	finish
	[ "$(cut -d" " -f1 b.out)" = "$(sha256sum big | cut -d" " -f1)" ]
	[ "$(transfers_of $obj)" = 0 ]
	grep -q "shared cache: 1 objects of the store announced" w2.log
	grep -q "shared cache: take $obj: done" w2.log
'

test_expect_success 'without --shared-cache each worker receives the input' '
	head -c 1000000 /dev/urandom >big
	two_rules >Makeflow
	start_master -L tx.log --batch-option prefetch=0 Makeflow
	start_worker --cores 1 -s "$PWD/w1" localhost $port
	start_worker --cores 1 -s "$PWD/w2" localhost $port
	finish
	[ "$(transfers_of $(object_of big))" = 2 ]
'

test_expect_success 'a URL input two workers of one store need is fetched once; the other takes it' '
	mkdir www started
	head -c 3000000 /dev/urandom >www/data.bin
	serve_http www
	test_daemon_start port "$URL_MASTER" together port "http://127.0.0.1:$HTTP_PORT/data.bin" \
		"$PWD/started" 2
	master=$DAEMON_PID
	mlog=$(ls daemon.*.log | tail -n 1)
	port=$DAEMON_PORT
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	rc=0
	wait $master || rc=$?
	cat $mlog
	[ $rc = 0 ]
	grep -q "^task t1 result SUCCESS status 0" $mlog
	grep -q "^task t2 result SUCCESS status 0" $mlog
	[ "$(cat t1.txt)" = 3000000 ]
	[ "$(cat t2.txt)" = 3000000 ]
	# one GET: one worker fetched it into the store, the other took it from there
	[ "$(grep -c "\"GET /data.bin " $HTTP_LOG)" = 1 ]
	[ "$(cat w1.log w2.log | grep -c "data.bin: taken from the shared cache as U-")" = 1 ]
	[ "$(cat w1.log w2.log | grep -c "data.bin: stored as U-")" = 1 ]
	obj=$(ls store/objects | grep "^U-")
	cmp store/objects/$obj www/data.bin
'

test_expect_success 'an object that cannot enter the store is sent to the worker waiting for it' '
	head -c 5000000 /dev/urandom >big
	two_rules >Makeflow
	mkdir -p store/objects
	chattr +i store/objects || { say "chattr +i is needed (root, ext4)"; exit 1; }
	start_master -L tx.log --batch-option prefetch=0 Makeflow
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	start_worker --cores 1 --shared-cache "$PWD/store" -s "$PWD/w2" -d worker -o w2.log localhost $port
	rc=0
	finish || rc=$?
	chattr -i store/objects
	[ $rc = 0 ]
	want=$(sha256sum big | cut -d" " -f1)
	[ "$(cut -d" " -f1 a.out)" = "$want" ]
	[ "$(cut -d" " -f1 b.out)" = "$want" ]
	[ "$(transfers_of F-$want)" = 2 ]
	grep -q "F-$want not published" w1.log w2.log workers.out
	grep -q "could not put F-$want into its shared store" mf.out
'

# receiving_worker: prints the workdir (w1 or w2) whose cache is receiving an object (a worker
# given -s DIR works in DIR/worker-UID-PID).
receiving_worker() {
	local d
	for d in w1 w2; do
		ls $d/*/cache/.partial/* >/dev/null 2>&1 && { echo $d; return 0; }
	done
	return 1
}

# kill_mid_receive [WORKER-OPTION...]: two workers of one store, one killed with -9 while it
# receives a 300 MB input; the other gets the whole object and publishes it.
kill_mid_receive() {
	head -c 300000000 /dev/urandom >big
	printf "a.out: big\n\tsha256sum big > a.out\nb.out: big\n\tsha256sum big > b.out\n" >Makeflow
	start_master -L tx.log --batch-option prefetch=0 Makeflow
	start_worker --cores 1 --shared-cache "$PWD/store" "$@" -s "$PWD/w1" -d worker -o w1.log localhost $port
	p1=$w
	start_worker --cores 1 --shared-cache "$PWD/store" "$@" -s "$PWD/w2" -d worker -o w2.log localhost $port
	p2=$w
	test_wait_until 60 receiving_worker
	victim=$(receiving_worker)
	if [ $victim = w1 ]; then vp=$p1; other=w2; else vp=$p2; other=w1; fi
	kill -STOP $vp
	part=$(ls $victim/*/cache/.partial/* | head -1)
	size=$(stat -c %s "$part")
	say "stopped $victim with $size of 300000000 bytes received"
	[ "$size" -lt 300000000 ]
	kill -9 $vp
	finish
	want=$(sha256sum big | cut -d" " -f1)
	obj=F-$want
	[ "$(cut -d" " -f1 a.out)" = "$want" ]
	[ "$(cut -d" " -f1 b.out)" = "$want" ]
	# the store has the whole object, put there by the survivor, and nothing else
	[ "$(sha256sum store/objects/$obj | cut -d" " -f1)" = "$want" ]
	[ "$(ls store/objects | wc -l)" = 1 ]
	[ "$(ls -A store/.partial | wc -l)" = 0 ]
	grep -q "shared cache: $obj published" $other.log
	# the victim received part of it privately, never into the store
	not grep -q "published" $victim.log
}

test_expect_success 'kill -9 of a worker in the middle of receiving: the other gets the whole object' '
	kill_mid_receive
	# the kernel dropped the dead receiver'"'"'s lock at once: the survivor took the object
	# under it
	not grep -q "lock held elsewhere" $other.log
'

test_expect_success 'with lease locks (as on NFS): kill -9 of a receiver, the other gets the whole object' '
	kill_mid_receive --shared-cache-leases 2
	grep -q "store .*, lease locks" $other.log workers.out
'

test_expect_success 'with lease locks: a dead holder'"'"'s lease is broken; the next worker is not stalled' '
	head -c 2000000 /dev/urandom >big
	obj=$(object_of big)
	printf "a.out: big\n\tsha256sum big > a.out\n" >Makeflow
	# the lease of a worker gone long ago (never renewed since 2001)
	mkdir -p store/leases
	echo "elsewhere 99999" >store/leases/$obj
	touch -d 2001-01-01 store/leases/$obj
	start_master -L tx.log Makeflow
	start_worker --shared-cache "$PWD/store" --shared-cache-leases 5 -s "$PWD/w1" -d worker -o w1.log localhost $port
	finish
	[ "$(cut -d" " -f1 a.out)" = "$(sha256sum big | cut -d" " -f1)" ]
	grep -q "the lease $obj of a dead holder broken" w1.log workers.out
	not grep -q "lock held elsewhere" w1.log
	grep -q "shared cache: $obj published" w1.log
	# its own lease was dropped with the object in the store
	[ ! -e store/leases/$obj ]
'

# A process that writes a temporary into the store holding its OFD lock (as a worker copying
# across file systems does), and the lock of an object, then waits to be killed.
stale_writer() {
	python3 - "$1" "$2" >stale.out 2>&1 <<-"EOF" &
	import fcntl, os, struct, sys, time
	store, name = sys.argv[1], sys.argv[2]
	def ofd_lock(path):
	    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
	    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
	    return fd
	t = ofd_lock(os.path.join(store, ".partial", name + ".99999.0"))
	os.write(t, b"half of it")
	ofd_lock(os.path.join(store, "locks", name))
	open(os.path.join(store, "ready"), "w").write("1")
	while True:
	    time.sleep(60)
	EOF
	echo $!
}

test_expect_success 'a dead writer leaves a temporary and a lock: the next worker is not stalled' '
	head -c 2000000 /dev/urandom >big
	obj=$(object_of big)
	printf "a.out: big\n\tsha256sum big > a.out\n" >Makeflow
	mkdir -p store/.partial store/locks
	sp=$(stale_writer "$PWD/store" $obj)
	test_track_pid $sp
	test_wait_for_file store/ready 20
	kill -9 $sp
	wait $sp 2>/dev/null || true
	[ "$(ls store/.partial | wc -l)" = 1 ]
	start_master -L tx.log Makeflow
	start_worker --shared-cache "$PWD/store" -s "$PWD/w1" -d worker -o w1.log localhost $port
	finish
	[ "$(cut -d" " -f1 a.out)" = "$(sha256sum big | cut -d" " -f1)" ]
	[ "$(ls -A store/.partial | wc -l)" = 0 ]
	grep -q "1 temporaries of dead workers deleted" w1.log workers.out
	not grep -q "lock held elsewhere" w1.log
	grep -q "shared cache: $obj published" w1.log
'

test_expect_success 'bad --shared-cache arguments are refused with the reason' '
	ts=$(mktemp -d)
	echo "not an id" >"$ts/store-id"
	test_must_fail "$WORKER" --shared-cache "$ts" localhost 9 2>err
	grep -q "store-id: not a store identity" err
	test_must_fail "$WORKER" --shared-cache-size 10 localhost 9 2>err
	grep -q "shared-cache-size needs --shared-cache" err
	test_must_fail "$WORKER" --shared-cache "$ts" --shared-cache-size x localhost 9 2>err
	grep -q "is not a size" err
	rm -rf "$ts"
'

test_done
