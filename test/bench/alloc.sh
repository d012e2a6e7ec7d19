#!/bin/bash
# alloc.sh: the per-category sizing benchmark. One workflow of 3 x N independent
# rules in three categories whose needs are not declared (a CPU-bound one, a
# memory-heavy one, one that writes files), run on -T cgroups and on -T wq with
# one 2-core worker, three ways each: every rule given the whole machine (the
# safe choice when needs are unknown), --allocation waste (MIN_WASTE, the
# CCTools rule: 25 tries at the ceiling first) and --allocation warmup (one try
# measured alone, then packed). Prints the wall times, the speedup over the
# whole machine, and the used share of allocated core-time and memory-time
# (allocation x wall time per try), over all tries and over the tries that ran
# with a computed allocation. On -T wq two more ways: "grow", warm-up with a
# worker started with --memory-grow on (the master starts a rule below the
# estimate and the worker grows the ones that need more; doc/allocation.md),
# and "lend", the same worker also with --cpu-grow on (the master allocates a
# rule its category's average use of cores, bursts run on lent cores).
# Usage: alloc.sh [BUILD]; N from ALLOC_TASKS (default 100 per category);
# ALLOC_DRIVERS (default "cgroups wq"), ALLOC_MODES (default "whole waste
# warmup grow lend"; grow and lend run on wq only), ALLOC_GROW_STEP (the
# worker's --grow-step-up, default 256).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MF=$BUILD/bin/makeflow
WORKER=$BUILD/bin/work_queue_worker
H=$BUILD/resource_monitor/test
N=${ALLOC_TASKS:-100}
WORK=$BUILD/bench/alloc
rm -rf "$WORK"
mkdir -p "$WORK"

cores=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)

# workflow FILE DECLARE: the rules, interleaved as a real workflow would list
# them; DECLARE (e.g. "CORES=2 MEMORY=24000") goes into every category.
workflow() {
	local f=$1 decl=$2
	: >"$f"
	# category CAT: select CAT (with the declarations) for the next rule
	category() {
		echo "CATEGORY=$1"
		for d in $decl; do echo "$d"; done
	}
	# a compute task with a working set, a memory-heavy task, a task writing a
	# file, interleaved as a real workflow lists them
	for i in $(seq 1 "$N"); do
		{
			category cpu
			printf 'c.%d:\n\t%s/helper_alloc %d 0.4 & %s/helper_burn 1 0.4; wait; touch c.%d\n' \
				"$i" "$H" $((400 + (i % 5) * 50)) "$H" "$i"
			category mem
			printf 'm.%d:\n\t%s/helper_alloc %d 0.4 > m.%d\n' "$i" "$H" $((900 + (i % 7) * 40)) "$i"
			category io
			printf 'w.%d:\n\t%s/helper_alloc 200 0.2 & %s/helper_write w.%d %d; wait\n' \
				"$i" "$H" "$H" "$i" $((20 + (i % 5) * 10))
		} >>"$f"
	done
}

# run NAME DRIVER WORKFLOW ARGS...: run makeflow on DRIVER in its own directory;
# sets T (seconds). For wq: one worker with 2 cores and the machine's memory.
run() {
	local name=$1 driver=$2 wfname=$3
	shift 3
	local d=$WORK/$name
	mkdir -p "$d"
	cp "$WORK/$wfname.mf" "$d/Makeflow"
	local s e rc=0
	s=$(date +%s.%N)
	if [ "$driver" = wq ]; then
		(cd "$d" && exec "$MF" -T wq -p 0 -Z port --progress=quiet --summary-json summary.json \
			"$@" Makeflow >out 2>&1) &
		local mfpid=$!
		local i=0
		while [ ! -s "$d/port" ] && [ $i -lt 600 ] && kill -0 $mfpid 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		local wpid=
		if [ -s "$d/port" ]; then
			mkdir -p "$d/worker"
			(cd "$d/worker" && exec "$WORKER" -t 60 --cores 2 --memory "$mem" --disk 20000 \
				${WORKER_ARGS:-} localhost "$(cat "$d/port")" >"$d/worker.out" 2>&1) &
			wpid=$!
		fi
		wait $mfpid || rc=$?
		[ -n "$wpid" ] && { kill $wpid 2>/dev/null; wait $wpid 2>/dev/null; }
	else
		(cd "$d" && "$MF" -T cgroups --progress=quiet --summary-json summary.json "$@" Makeflow >out 2>&1) || rc=$?
	fi
	e=$(date +%s.%N)
	T=$(python3 -c "print('%.1f' % ($e - $s))")
	[ $rc = 0 ] || {
		echo "alloc: $name failed (status $rc); see $d/out" >&2
		T=failed
	}
}

# used NAME FIELD [SUFFIX]: used share of allocated FIELD-time over all
# categories; SUFFIX _sized: only the tries that ran with a computed allocation.
used() {
	python3 - "$WORK/$1/summary.json" "$2" "${3:-}" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("n/a"); sys.exit()
f, suf = sys.argv[2], sys.argv[3]
w = sum(c["waste" + suf][f] for c in s.get("categories", []))
a = sum(c["allocated" + suf][f] for c in s.get("categories", []))
print("%.3f" % (1 - w / a) if a > 0 else "n/a")
EOF
}

first_allocs() {
	python3 - "$WORK/$1/summary.json" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit()
for c in s.get("categories", []):
    if c["done"]:
        fa = c["first_allocation"]
        print("    %-4s first allocation: cores %s, memory %s MB; max seen: cores %.2f, memory %.0f MB; exhaustions %d, re-runs %d, limit raises %d" % (
            c["name"], fa.get("cores", "-"), fa.get("memory", "-"), c["max_seen"].get("cores", -1),
            c["max_seen"].get("memory", -1), c["exhaustions"], c["retries"], c["limit_raises"]))
EOF
}

workflow "$WORK/whole.mf" "CORES=$cores MEMORY=$mem"
workflow "$WORK/sized.mf" ""

echo "per-category sizing: $((3 * N)) rules in 3 categories, $cores cores, $mem MB" \
	"(used share of allocated resource-time: all tries / tries with a computed allocation)"
for driver in ${ALLOC_DRIVERS:-cgroups wq}; do
	t_whole=
	for mode in ${ALLOC_MODES:-whole waste warmup grow lend}; do
		case $mode in
		whole) run "$driver-whole" "$driver" whole; label="every rule gets the whole machine" ;;
		grow)
			[ "$driver" = wq ] || continue
			WORKER_ARGS="--memory-grow on --grow-step-up ${ALLOC_GROW_STEP:-256}" \
				run "$driver-$mode" "$driver" sized --allocation warmup
			label="warmup, worker --memory-grow on"
			;;
		lend)
			[ "$driver" = wq ] || continue
			WORKER_ARGS="--memory-grow on --grow-step-up ${ALLOC_GROW_STEP:-256} --cpu-grow on" \
				run "$driver-$mode" "$driver" sized --allocation warmup
			label="warmup, --memory-grow, --cpu-grow on"
			;;
		*) run "$driver-$mode" "$driver" sized --allocation "$mode"; label="--allocation $mode" ;;
		esac
		[ "$mode" = whole ] && t_whole=$T
		speed=$(python3 -c "
try:
    print('%.2fx' % (float('$t_whole') / float('$T')))
except ValueError:
    print('-')")
		printf '  -T %-8s %-34s %8s s  %6s   cores %s / %s   memory %s / %s\n' "$driver" "$label" "$T" \
			"$speed" "$(used "$driver-$mode" cores)" "$(used "$driver-$mode" cores _sized)" \
			"$(used "$driver-$mode" memory)" "$(used "$driver-$mode" memory _sized)"
		[ "$mode" = whole ] || first_allocs "$driver-$mode"
		rm -rf "$WORK/$driver-$mode"/[cmw].* "$WORK/$driver-$mode/worker" # the written files
	done
done
echo "  (targets: warmup >= 1.8x the whole machine; >= 0.95 of core-time and >= 0.90 of" \
	"memory-time used in the tries with a computed allocation)"
