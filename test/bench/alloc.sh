#!/bin/bash
# alloc.sh: the per-category sizing benchmark. One workflow of 3 x N independent
# rules in three categories whose needs are not declared (a CPU-bound one, a
# memory-heavy one, one that writes files), run on -T cgroups twice: once with
# every rule given the whole machine (the safe choice when needs are unknown),
# once with --allocation waste (MIN_WASTE). Prints both wall times, the speedup,
# and the share of allocated core-time and memory-time that went unused.
# Usage: alloc.sh [BUILD]; N from ALLOC_TASKS (default 100 per category).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MF=$BUILD/bin/makeflow
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

# run NAME ARGS...: run makeflow in its own directory; sets T (seconds).
run() {
	local name=$1
	shift
	local d=$WORK/$name
	mkdir -p "$d"
	cp "$WORK/$name.mf" "$d/Makeflow"
	local s e
	s=$(date +%s.%N)
	(cd "$d" && "$MF" -T cgroups --progress=quiet --summary-json summary.json "$@" Makeflow >out 2>&1)
	local rc=$?
	e=$(date +%s.%N)
	T=$(python3 -c "print('%.1f' % ($e - $s))")
	[ $rc = 0 ] || {
		echo "alloc: $name failed (status $rc); see $d/out" >&2
		T=failed
	}
}

# unused NAME FIELD [SUFFIX]: unused share of allocated FIELD-time over all
# categories; SUFFIX _sized: only the tries that ran with a computed allocation.
unused() {
	python3 - "$WORK/$1/summary.json" "$2" "${3:-}" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
f, suf = sys.argv[2], sys.argv[3]
w = sum(c["waste" + suf][f] for c in s.get("categories", []))
a = sum(c["allocated" + suf][f] for c in s.get("categories", []))
print("%.0f%%" % (100.0 * w / a) if a > 0 else "n/a")
EOF
}

first_allocs() {
	python3 - "$WORK/$1/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s.get("categories", []):
    if c["done"]:
        fa = c["first_allocation"]
        print("    %-4s first allocation: cores %s, memory %s MB; max seen: cores %.2f, memory %.0f MB; exhaustions %d, re-runs %d, limit raises %d" % (
            c["name"], fa.get("cores", "-"), fa.get("memory", "-"), c["max_seen"].get("cores", -1),
            c["max_seen"].get("memory", -1), c["exhaustions"], c["retries"], c["limit_raises"]))
EOF
}

workflow "$WORK/whole.mf" "CORES=$cores MEMORY=$mem"
workflow "$WORK/waste.mf" ""

echo "per-category sizing: $((3 * N)) rules in 3 categories, -T cgroups, $cores cores, $mem MB"
run whole
t_whole=$T
run waste --allocation waste
t_waste=$T
printf '  %-34s %8s s   unused core-time %5s   unused memory-time %5s\n' \
	"every rule gets the whole machine" "$t_whole" "$(unused whole cores)" "$(unused whole memory)"
printf '  %-34s %8s s   unused core-time %5s   unused memory-time %5s\n' \
	"--allocation waste (MIN_WASTE)" "$t_waste" "$(unused waste cores)" "$(unused waste memory)"
printf '  %-34s %10s   unused core-time %5s   unused memory-time %5s\n' \
	"  of which with a computed allocation" "" "$(unused waste cores _sized)" "$(unused waste memory _sized)"
first_allocs waste
rm -rf "$WORK/whole" "$WORK/waste" # the written files
python3 -c "
try:
    print('  speedup of MIN_WASTE: %.2fx (target >= 1.8x)' % (float('$t_whole') / float('$t_waste')))
except ValueError:
    print('  speedup: n/a')"
