#!/bin/bash
# sim.sh: the master against simulated workers (doc/work-queue-sim.md), part of `make bench`.
# A master made with the C API alone (helper_master_bench) on core 1 and the load generator
# (helper_sim_workers) on core 0: null tasks completed per second with 100 / 1,000 / 5,000
# workers of 4 cores, the master's RSS per queued task and per connected worker, and a storm of
# 1,000 workers connecting within one second while tasks flow, and (part `makeflow`, not in the
# default parts) SIM_MF_RULES null rules through makeflow -T wq against SIM_MF_WORKERS simulated
# workers. Results: build/bench/sim.txt.
# SIM_PARTS="rate memory storm", SIM_STEPS="100 1000 5000", SIM_SECONDS=10, SIM_TASKS=1000000,
# SIM_MF_RULES=1000000, SIM_MF_WORKERS=100.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
B=$BUILD/work_queue/test
SIM=$B/helper_sim_workers
MB=${SIM_MASTER:-$B/helper_master_bench}
WORK=$BUILD/bench/sim
RESULTS=$BUILD/bench/sim.txt
PARTS=${SIM_PARTS:-rate memory storm}
STEPS=${SIM_STEPS:-100 1000 5000}
SECONDS_=${SIM_SECONDS:-10}
TASKS=${SIM_TASKS:-1000000}
mkdir -p "$WORK"
: >"$RESULTS"
ulimit -n "$(ulimit -Hn)"
for p in "$SIM" "$MB"; do
	[ -x "$p" ] || {
		echo "sim.sh: $p is missing (make tests)" >&2
		exit 2
	}
done
CPU_M="taskset -c 1"
CPU_S="taskset -c 0"
[ "$(nproc)" -ge 2 ] || CPU_M="" CPU_S=""

say() { echo "$*" | tee -a "$RESULTS"; }
json() { python3 -c "import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(d$2)" "$1"; }

# master MODE N SECONDS NAME: starts the master, sets MPID and PORT.
master() {
	rm -f "$WORK/port"
	$CPU_M "$MB" "$1" "$WORK/port" "$2" "$3" >"$WORK/$4.master" 2>"$WORK/$4.ticks" &
	MPID=$!
	for _ in $(seq 600); do
		[ -s "$WORK/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$WORK/port")
}

# ---- 1. dispatch rate ---------------------------------------------------------------------------
part_rate() {
	say "== null tasks per second, N simulated workers of 4 cores (${SECONDS_} s after all connected)"
	local n r1000=""
	for n in $STEPS; do
		master rate "$n" "$SECONDS_" "rate$n"
		# connects spread over N/1000 s (at least all at once for small N)
		local w
		w=$(python3 -c "print($n / 1000.0 if $n > 1000 else 0)")
		$CPU_S "$SIM" -n "$n" -a 32 -w "$w" -t $((SECONDS_ + 150)) "127.0.0.1:$PORT" \
			>"$WORK/rate$n.sim" 2>"$WORK/rate$n.simerr"
		wait "$MPID"
		local rate
		rate=$(json "$WORK/rate$n.master" "['tasks_per_s']")
		say "workers $n: $rate tasks/s, master CPU $(json "$WORK/rate$n.master" "['cpu_us_per_task']") us per task (sim: $(tail -1 "$WORK/rate$n.sim"))"
		[ "$n" = 1000 ] && r1000=$rate
		if [ "$n" = 5000 ] && [ -n "$r1000" ]; then
			say "  5,000 against 1,000: $(python3 -c "print('%.2f' % ($rate / $r1000))") (target at least 0.75)"
		fi
	done
}

# ---- 2. memory ------------------------------------------------------------------------------------
part_memory() {
	say "== master RSS growth"
	$CPU_M "$MB" tasks "$WORK/port" "$TASKS" 0 >"$WORK/mem_tasks.master" 2>&1
	say "$TASKS tasks queued: $(json "$WORK/mem_tasks.master" "['bytes_per_task']") bytes per task, submitted at $(json "$WORK/mem_tasks.master" "['submit_per_s']")/s (target at most 2048)"
	master workers 1000 60 mem_workers
	$CPU_S "$SIM" -n 1000 -a 32 -t 30 "127.0.0.1:$PORT" >"$WORK/mem_workers.sim" 2>&1 &
	local spid=$!
	wait "$MPID"
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	say "1,000 workers connected: $(json "$WORK/mem_workers.master" "['bytes_per_worker']") bytes per worker (target at most 51200)"
}

# ---- 3. reconnect storm -------------------------------------------------------------------------
part_storm() {
	say "== storm: 1,000 workers connecting within 1 s while 100 others run tasks"
	master rate 100 15 storm
	$CPU_S "$SIM" -n 100 -t 60 "127.0.0.1:$PORT" >"$WORK/storm.base" 2>&1 &
	local base=$!
	for _ in $(seq 600); do
		[ -s "$WORK/storm.ticks" ] && break
		sleep 0.05
	done
	$CPU_S "$SIM" -n 1000 -a 32 -w 1 -t 12 "127.0.0.1:$PORT" >"$WORK/storm.sim" 2>"$WORK/storm.simerr"
	wait "$MPID"
	kill "$base" 2>/dev/null
	wait "$base" 2>/dev/null
	say "all 1,000 admitted after $(json "$WORK/storm.sim" "['all_active_s']") s (target at most 10; retries $(json "$WORK/storm.sim" "['retries']"))"
	say "tasks completed per second meanwhile: $(python3 -c "
import json, sys
print(' '.join(str(json.loads(l)['done']) for l in open(sys.argv[1]) if l.startswith('{')))" "$WORK/storm.ticks")"
}

# ---- 4. makeflow with a million rules ---------------------------------------------------------
# SIM_MF_RULES null rules (`touch`, 1 core) through makeflow -T wq (core 1) against
# SIM_MF_WORKERS simulated workers of 4 cores (core 0), which send each output back: the time to
# parse and queue, makeflow's peak RSS per rule, and the completion rate over the run, at 10 %
# and at 90 % of it (from the master's transaction log).
part_makeflow() {
	local n=${SIM_MF_RULES:-1000000} w=${SIM_MF_WORKERS:-100}
	# on tmpfs by default: this machine's ext4 has no journal, and such an ext4 scans every
	# inode deleted in the last minutes at each new file, so the previous run's million deleted
	# outputs would slow this one's down several times (SIM_MF_DIR chooses)
	local base=${SIM_MF_DIR:-/dev/shm}
	[ -d "$base" ] && [ -w "$base" ] || base=$WORK
	local d=$base/htc-sim-mf.$$
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$d/Makeflow" "$n" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    f.write('CORES=1\n')
    for i in range(int(sys.argv[2])):
        f.write('o.%d:\n\ttouch o.%d\n' % (i, i))
PY
	say "== $n null rules through makeflow -T wq, $w simulated workers of 4 cores (in $base)"
	local s e
	s=$(date +%s.%N)
	(cd "$d" && exec /usr/bin/time -f '%M' -o "$d/rss" $CPU_M "$BUILD/bin/makeflow" -T wq -p 0 \
		-Z port --progress=quiet --batch-option txlog="$d/txlog" Makeflow >"$d/out" 2>&1) &
	local mpid=$!
	for _ in $(seq 1200); do
		[ -s "$d/port" ] && break
		sleep 0.05
	done
	$CPU_S "$SIM" -n "$w" "127.0.0.1:$(cat "$d/port")" >"$d/sim" 2>"$d/simerr" &
	local spid=$!
	wait "$mpid"
	local rc=$?
	e=$(date +%s.%N)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	if [ $rc != 0 ]; then
		say "makeflow failed (status $rc): see $d/out"
		return
	fi
	python3 - "$d/txlog" "$n" "$s" "$e" "$(cat "$d/rss")" <<'PY' | tee -a "$RESULTS"
import sys
log, n, s, e, rss_kb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
done, first_submit = [], None
for l in open(log):
    if l.startswith('#'):
        continue
    f = l.split()
    if ' TASK ' in l and ' DONE ' in l:
        done.append(int(f[0]))
    elif first_submit is None and ' TASK ' in l and ' WAITING ' in l:
        first_submit = int(f[0])
done.sort()
m = len(done)
print('%d of %d tasks done in %.1f s (start to end of makeflow): %.0f rules/s' % (m, n, e - s, n / (e - s)))
if first_submit:
    print('first task queued %.1f s after makeflow started' % (first_submit / 1e6 - s))
print('makeflow peak RSS %.0f MB: %.0f bytes per rule' % (rss_kb / 1024, rss_kb * 1024.0 / n))
def rate_at(frac, width=0.02):
    a, b = int(m * (frac - width)), int(m * (frac + width))
    return (b - a) / ((done[b] - done[a]) / 1e6)
if m >= 1000:
    r10, r90 = rate_at(0.10), rate_at(0.90)
    print('rate at 10 %%: %.0f tasks/s, at 90 %%: %.0f tasks/s, 90 %%/10 %% = %.2f (target at least 0.80)' % (r10, r90, r90 / r10))
PY
	rm -rf "$d"
}

for p in $PARTS; do
	"part_$p"
done
