#!/bin/bash
# wq.sh: the Work Queue benchmarks, ours side by side with CCTools 9.9 (makeflow -T wq and its
# work_queue_worker) in one run:
#   1. N null rules (touch an empty output) through makeflow -T wq with one 2-core worker, and
#      with two 1-core workers: tasks per second end to end;
#   2. the rate at 10 % and at 90 % of a run with WQ_QUEUED (default 100,000) tasks queued
#      (ours, from the master's transactions log);
#   3. one large file (WQ_BIG_MB, default 2048) and 2,000 files of 10 KB through a worker,
#      against a raw loopback TCP copy of the same bytes to disk;
#   4. 200 idle workers connected to one master: the master's CPU and memory;
#   5. a ladder of 1-core workers (WQ_LADDER, default "2 4 10 20 50", more workers than cores,
#      as pools run): WQ_LADDER_TASKS (default 3000) null rules through makeflow -T wq at each
#      step, ours and CCTools, and ours at the last step against ours at the first;
#   6. the ladder of many real workers (WQ_MANY, default "100 200 500"), WQ_MANY_TASKS (default
#      5000) null rules, each step capped at WQ_MANY_CAP seconds (default 180): the rules done
#      and the rate over the step, ours and CCTools (not in the default parts: it needs about
#      20 minutes and several GB of memory for 1,600 worker processes).
# Usage: wq.sh [BUILD]; WQ_TASKS (default 5000) scales part 1, WQ_PARTS picks parts ("1 2 3 4 5";
# 6 is asked for by name),
# WQ_TMPFS=0 leaves out the tmpfs line of part 1, WQ_SECCOMP=0 its seccomp line, WQ_CCTOOLS=0
# leaves out CCTools (ab.sh).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MF=$BUILD/bin/makeflow
WORKER=$BUILD/bin/work_queue_worker
CCT_MF=/usr/bin/makeflow
CCT_WORKER=/usr/bin/work_queue_worker
N=${WQ_TASKS:-5000}
QUEUED=${WQ_QUEUED:-100000}
BIG_MB=${WQ_BIG_MB:-2048}
LIMIT=${CCTOOLS_TIMEOUT:-600}
WORK=$BUILD/bench/wq
mkdir -p "$WORK"
# Every run gets a directory of its own, with the workers' workdirs inside it, and all are
# removed when the bench ends, not before the next run. This machine's ext4 has no journal, and
# there every file created scans past the free inodes of its block group that were deleted in
# the last minutes (recently_deleted): a run whose directory shares a group with files deleted
# just before (by an earlier run, an earlier bench, a test) pays for them, not for its own work.
# The runs' parent is therefore marked as a top of directory hierarchies (chattr +T, a hint to
# ext4 only; other file systems refuse it, harmlessly), so that each run directory is placed in
# a group of its own, as a directory at the root of the file system would be, and each run
# directory has a name not used before (see run_wq). Within a run, each system still pays for
# the files it deletes itself (doc/benchmarks.md).
RUNS=$WORK/runs.$$
mkdir -p "$RUNS"
chattr +T "$RUNS" 2>/dev/null
RUN_SEQ=0
KEEP_RUNS=
trap '[ -n "$KEEP_RUNS" ] || rm -rf "$RUNS"' EXIT
export OMPI_MCA_ess_singleton_isolated=1
have_cct=1
[ -x "$CCT_MF" ] && [ -x "$CCT_WORKER" ] && [ "${WQ_CCTOOLS:-1}" != 0 ] || have_cct=0
for f in "$MF" "$WORKER"; do
	[ -x "$f" ] || {
		echo "wq bench: $f is not built (make)" >&2
		exit 1
	}
done

calc() { python3 -c "print($1)"; }

# run_wq NAME MAKEFLOW WORKER WORKER_ARGS... -- MAKEFLOW_ARGS...: runs makeflow -T wq on port 0
# in $WORK/NAME (a copy of $WORK/NAME.mf as Makeflow) and starts the workers given as
# "-w CORES" words once the port file appears; sets T (seconds) or T=failed/timeout.
run_wq() {
	local name=$1 mf=$2 worker=$3
	shift 3
	local cores=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		cores+=("$1")
		shift
	done
	shift
	RUN_SEQ=$((RUN_SEQ + 1))
	# a name of its own: ext4 starts its search for a top directory's block group at a hash of
	# the name, so the same names every time would land where the last bench's runs were
	# just deleted
	local d=${RUN_BASE:-$RUNS}/$name.$RUN_SEQ.$$.$RANDOM
	mkdir -p "$d"
	cp "$WORK/$name.mf" "$d/Makeflow"
	cd "$d" || return
	local s e rc
	s=$(date +%s.%N)
	timeout -k 5 "${RUN_LIMIT:-$LIMIT}" "$mf" -T wq -p 0 -Z port "$@" Makeflow >out 2>&1 &
	local mpid=$!
	local i=0
	while [ ! -s port ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	local wpids=() wdir=() n=0
	for c in "${cores[@]}"; do
		n=$((n + 1))
		wdir=(-s "$d/worker.$n")
		mkdir -p "$d/worker.$n"
		# shellcheck disable=SC2086
		"$worker" --cores "$c" -t 60 ${WORKER_EXTRA:-} "${wdir[@]}" localhost "$(cat port)" \
			>>workers.out 2>&1 &
		wpids+=($!)
	done
	wait $mpid
	rc=$?
	e=$(date +%s.%N)
	for p in "${wpids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	# the rules done: their outputs are back in the run directory (both systems)
	DONE=$(find . -maxdepth 1 -name 'o.*' | wc -l)
	ELAPSED=$(calc "'%.2f' % ($e - $s)")
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		T=timeout
	elif [ $rc != 0 ]; then
		echo "wq bench: $name failed (status $rc); see $d/out (kept)" >&2
		KEEP_RUNS=1
		T="failed($rc)"
	else
		T=$(calc "'%.2f' % ($e - $s)")
	fi
	cd "$SRCDIR" || return
}

rate() { python3 -c "
try: print('%.0f' % (float('$1') / float('$2')))
except (ValueError, ZeroDivisionError): print('n/a')"; }

# null_workflow FILE N: N rules each touching its own empty output, each declaring one core
# (a task that declares nothing gets a whole worker, in both systems, so it would run one at a
# time per worker).
null_workflow() {
	python3 - "$1" "$2" <<'EOF'
import sys
with open(sys.argv[1], 'w') as f:
    f.write('CORES=1\n')
    for i in range(int(sys.argv[2])):
        f.write('o.%d:\n\ttouch o.%d\n' % (i, i))
EOF
}

part1() {
	echo ""
	echo "1. $N null rules through makeflow -T wq (tasks per second, end to end)"
	for setup in "one 2-core worker:2" "two 1-core workers:1 1"; do
		local label=${setup%%:*} cores=${setup#*:}
		null_workflow "$WORK/ours.mf" "$N"
		cp "$WORK/ours.mf" "$WORK/cct.mf"
		# shellcheck disable=SC2086
		run_wq ours "$MF" "$WORKER" $cores -- --progress=quiet
		local t_ours=$T t_cct=-
		if [ $have_cct = 1 ]; then
			# shellcheck disable=SC2086
			run_wq cct "$CCT_MF" "$CCT_WORKER" $cores --
			t_cct=$T
		fi
		printf '   %-22s ours %8s s %7s tasks/s   CCTools %8s s %7s tasks/s   ours/CCTools %s\n' \
			"$label" "$t_ours" "$(rate "$N" "$t_ours")" "$t_cct" "$(rate "$N" "$t_cct")" \
			"$(python3 -c "
try: print('%.1fx' % (float('$t_cct') / float('$t_ours')))
except ValueError: print('n/a')")"
	done
	[ "${WQ_SECCOMP:-1}" = 1 ] && part1_seccomp
	[ "${WQ_TMPFS:-1}" = 1 ] && part1_tmpfs
}

# The cost of the tasks' seccomp filter (doc/seccomp.md): our worker with its default profile
# and with --seccomp off, one 2-core worker, the two runs one after the other twice (ABAB); the
# best of each pair is compared.
part1_seccomp() {
	null_workflow "$WORK/ours.mf" "$N"
	local on=() off=()
	for _ in 1 2; do
		run_wq ours "$MF" "$WORKER" 2 -- --progress=quiet
		on+=("$T")
		WORKER_EXTRA="--seccomp off" run_wq ours "$MF" "$WORKER" 2 -- --progress=quiet
		off+=("$T")
	done
	python3 - "$N" "${on[@]}" "${off[@]}" <<'EOF'
import sys
n = int(sys.argv[1])
try:
    on = min(float(x) for x in sys.argv[2:4])
    off = min(float(x) for x in sys.argv[4:6])
    print('   seccomp, 2-core worker  default %6.0f tasks/s   off %6.0f tasks/s   '
          'the filter costs %.1f %% of the rate' % (n / on, n / off, 100.0 * (1 - off / on)))
except ValueError:
    print('   seccomp: n/a (a run failed)')
EOF
}

# The same null workflow with the makeflow directory and the workers' workdirs on a tmpfs
# (/dev/shm), for both systems: on this machine's ext4 (no journal), every file created scans
# the inodes deleted in the last minutes, a cost of the file system rather than of either
# system (doc/benchmarks.md).
part1_tmpfs() {
	local shm=/dev/shm/htc-bench-wq.$$
	mkdir -p "$shm" || return
	echo "   the same on tmpfs ($shm), one 2-core worker:"
	null_workflow "$WORK/ours.mf" "$N"
	cp "$WORK/ours.mf" "$WORK/cct.mf"
	RUN_BASE=$shm run_wq ours "$MF" "$WORKER" 2 -- --progress=quiet
	local t_ours=$T t_cct=-
	if [ $have_cct = 1 ]; then
		RUN_BASE=$shm run_wq cct "$CCT_MF" "$CCT_WORKER" 2 --
		t_cct=$T
	fi
	rm -rf "$shm"
	printf '   %-22s ours %8s s %7s tasks/s   CCTools %8s s %7s tasks/s   ours/CCTools %s\n' \
		"tmpfs, 2-core worker" "$t_ours" "$(rate "$N" "$t_ours")" "$t_cct" "$(rate "$N" "$t_cct")" \
		"$(python3 -c "
try: print('%.1fx' % (float('$t_cct') / float('$t_ours')))
except ValueError: print('n/a')")"
}

part2() {
	echo ""
	echo "2. $QUEUED null rules queued at once, one 2-core worker (ours): rate at 10 % and 90 %"
	null_workflow "$WORK/queued.mf" "$QUEUED"
	run_wq queued "$MF" "$WORKER" 2 -- --progress=quiet --batch-option txlog="$WORK/queued.txlog"
	echo "   whole run: $T s, $(rate "$QUEUED" "$T") tasks/s"
	python3 - "$WORK/queued.txlog" <<'EOF'
import sys
done = sorted(int(l.split()[0]) for l in open(sys.argv[1])
              if not l.startswith('#') and ' TASK ' in l and ' DONE ' in l)
n = len(done)
if n < 100:
    print('   too few DONE lines in the transactions log (%d)' % n); sys.exit(0)
def rate_at(frac, width=0.02):
    a, b = int(n * (frac - width)), int(n * (frac + width))
    return (b - a) / ((done[b] - done[a]) / 1e6)
r10, r90 = rate_at(0.10), rate_at(0.90)
print('   rate at 10 %%: %.0f tasks/s, at 90 %%: %.0f tasks/s, 90 %%/10 %% = %.2f (target >= 0.80)'
      % (r10, r90, r90 / r10))
EOF
}

# raw_copy FILE... : seconds to send the files' bytes over loopback TCP into files on disk.
raw_copy() {
	python3 - "$WORK/raw" "$@" <<'EOF'
import os, socket, sys, threading, time
out, files = sys.argv[1], sys.argv[2:]
os.makedirs(out, exist_ok=True)
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)
port = srv.getsockname()[1]
def receive():
    c, _ = srv.accept()
    for i, f in enumerate(files):
        size = os.path.getsize(f)
        with open(os.path.join(out, 'f%d' % i), 'wb') as g:
            while size > 0:
                b = c.recv(min(1 << 20, size))
                if not b: raise SystemExit('short')
                g.write(b); size -= len(b)
    c.close()
t0 = time.time()
th = threading.Thread(target=receive); th.start()
s = socket.create_connection(('127.0.0.1', port))
for f in files:
    with open(f, 'rb') as h:
        s.sendfile(h)
s.close(); th.join()
print('%.2f' % (time.time() - t0))
EOF
	rm -rf "$WORK/raw"
}

# xfer_span TXLOG: seconds from the start of the first input transfer to the end of the last.
xfer_span() {
	awk '/ TRANSFER INPUT / { e = $1 / 1e6; s = e - $8; if (!n++ || s < a) a = s; if (e > b) b = e }
		END { if (n) printf "%.3f", b - a; else printf "?" }' "$1"
}

part3() {
	echo ""
	echo "3. files through one worker, against a raw loopback copy to disk"
	local big=$WORK/big.dat
	[ "$(stat -c %s "$big" 2>/dev/null)" = $((BIG_MB * 1048576)) ] ||
		head -c $((BIG_MB * 1048576)) /dev/urandom >"$big"
	printf 'size.txt: %s\n\twc -c < big.dat > size.txt\n' "$big->big.dat" >"$WORK/bigfile.mf"
	local raw
	raw=$(raw_copy "$big")
	rm -f "$WORK/bigfile.txlog" "$WORK/small.txlog"
	run_wq bigfile "$MF" "$WORKER" 2 -- --progress=quiet --batch-option txlog="$WORK/bigfile.txlog"
	local xfer
	xfer=$(xfer_span "$WORK/bigfile.txlog")
	echo "   $BIG_MB MB: raw copy $raw s ($(calc "'%.0f' % ($BIG_MB / $raw)") MB/s);" \
		"ours: transfer ${xfer:-?} s, whole rule $T s;" \
		"transfer vs raw: $(python3 -c "
try: print('%.0f %%' % (100 * $raw / float('${xfer:-x}')))
except ValueError: print('n/a')") (target >= 70 %)"
	mkdir -p "$WORK/smallsrc"
	python3 - "$WORK/smallsrc" "$WORK/small.mf" <<'EOF'
import os, sys
d, mf = sys.argv[1], sys.argv[2]
with open(mf, 'w') as f:
    for t in range(2):
        names = []
        for i in range(1000):
            p = os.path.join(d, 's.%d.%d' % (t, i))
            if not os.path.exists(p):
                with open(p, 'wb') as g: g.write(os.urandom(10240))
            names.append(p)
        f.write('count.%d: %s\n\tcat s.%d.* | wc -c > count.%d\n'
                % (t, ' '.join('%s->%s' % (n, os.path.basename(n)) for n in names), t, t))
EOF
	raw=$(raw_copy "$WORK"/smallsrc/s.*)
	run_wq small "$MF" "$WORKER" 2 -- --progress=quiet --batch-option txlog="$WORK/small.txlog"
	local inputs
	inputs=$(xfer_span "$WORK/small.txlog")
	echo "   2,000 x 10 KB: raw copy $raw s; ours: transfers $inputs s (first start to last end), whole run $T s"
}

# idle_master LABEL MAKEFLOW WORKER: 200 idle workers on one master running one long rule;
# prints the master's CPU share over 20 s and its resident memory.
idle_master() {
	local label=$1 mf=$2 worker=$3
	local d=$WORK/idle-$label
	rm -rf "$d"
	mkdir -p "$d"
	printf 'done.txt:\n\tsleep 45; touch done.txt\n' >"$d/Makeflow"
	cd "$d" || return
	"$mf" -T wq -p 0 -Z port Makeflow >out 2>&1 &
	local mpid=$!
	local i=0
	while [ ! -s port ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	local pids=()
	for _ in $(seq 1 200); do
		"$worker" --cores 1 -t 120 localhost "$(cat port)" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 10
	local c0 c1 rss
	c0=$(awk '{ print $14 + $15 }' "/proc/$mpid/stat")
	sleep 20
	c1=$(awk '{ print $14 + $15 }' "/proc/$mpid/stat")
	rss=$(awk '/VmRSS/ { print $2 }' "/proc/$mpid/status")
	printf '   %-8s master CPU %s %% over 20 s, RSS %s MB\n' "$label" \
		"$(calc "'%.2f' % (100.0 * ($c1 - $c0) / $(getconf CLK_TCK) / 20)")" $((rss / 1024))
	kill "${pids[@]}" "$mpid" 2>/dev/null
	wait 2>/dev/null
	cd "$SRCDIR" || return
}

part4() {
	echo ""
	echo "4. 200 idle workers connected to one master (makeflow -T wq running one long rule)"
	idle_master ours "$MF" "$WORKER"
	[ $have_cct = 1 ] && idle_master CCTools "$CCT_MF" "$CCT_WORKER"
}

part5() {
	local ladder=${WQ_LADDER:-2 4 10 20 50} n=${WQ_LADDER_TASKS:-3000}
	echo ""
	echo "5. $n null rules through makeflow -T wq with N 1-core workers (tasks per second)"
	null_workflow "$WORK/ours.mf" "$n"
	cp "$WORK/ours.mf" "$WORK/cct.mf"
	local first="" last=""
	for w in $ladder; do
		local cores=()
		for _ in $(seq 1 "$w"); do cores+=(1); done
		run_wq ours "$MF" "$WORKER" "${cores[@]}" -- --progress=quiet
		local t_ours=$T t_cct=-
		if [ $have_cct = 1 ]; then
			run_wq cct "$CCT_MF" "$CCT_WORKER" "${cores[@]}" --
			t_cct=$T
		fi
		printf '   %3s workers  ours %8s s %7s tasks/s   CCTools %8s s %7s tasks/s   ours/CCTools %s\n' \
			"$w" "$t_ours" "$(rate "$n" "$t_ours")" "$t_cct" "$(rate "$n" "$t_cct")" \
			"$(python3 -c "
try: print('%.1fx' % (float('$t_cct') / float('$t_ours')))
except ValueError: print('n/a')")"
		[ -n "$first" ] || first=$t_ours
		last=$t_ours
	done
	python3 -c "
try: print('   ours with the most workers: %.0f %% of the rate with the fewest' % (100.0 * float('$first') / float('$last')))
except ValueError: pass"
}

part6() {
	local ladder=${WQ_MANY:-100 200 500} n=${WQ_MANY_TASKS:-5000} cap=${WQ_MANY_CAP:-180}
	echo ""
	echo "6. $n null rules through makeflow -T wq with N 1-core real workers, at most $cap s a step"
	ulimit -n "$(ulimit -Hn)" 2>/dev/null
	null_workflow "$WORK/ours.mf" "$n"
	cp "$WORK/ours.mf" "$WORK/cct.mf"
	for w in $ladder; do
		local cores=()
		for _ in $(seq 1 "$w"); do cores+=(1); done
		RUN_LIMIT=$cap run_wq ours "$MF" "$WORKER" "${cores[@]}" -- --progress=quiet
		local d_ours=$DONE e_ours=$ELAPSED t_ours=$T d_cct=- e_cct=- t_cct=-
		if [ $have_cct = 1 ]; then
			RUN_LIMIT=$cap run_wq cct "$CCT_MF" "$CCT_WORKER" "${cores[@]}" --
			d_cct=$DONE e_cct=$ELAPSED t_cct=$T
		fi
		printf '   %3s workers  ours %5s rules in %7s s%s: %5s/s   CCTools %5s rules in %7s s%s: %5s/s   ours/CCTools %s\n' \
			"$w" "$d_ours" "$e_ours" "$( [ "$t_ours" = timeout ] && echo ' (cap)')" \
			"$(rate "$d_ours" "$e_ours")" "$d_cct" "$e_cct" "$( [ "$t_cct" = timeout ] && echo ' (cap)')" \
			"$(rate "$d_cct" "$e_cct")" "$(python3 -c "
try: print('%.1fx' % ((float('$d_ours') / float('$e_ours')) / (float('$d_cct') / float('$e_cct'))))
except (ValueError, ZeroDivisionError): print('n/a')")"
	done
}

echo "== Work Queue: ours vs CCTools 9.9, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
[ $have_cct = 1 ] || echo "(CCTools 9.9 is not installed: its column is skipped)"
for p in ${WQ_PARTS:-1 2 3 4 5}; do
	"part$p"
done
