#!/bin/bash
# alloc_bound.sh: a bound on the used share of allocated core-time for alloc.sh's workflow.
# Runs K rules of each of its three categories (the same commands, the same sizes) one at a
# time under resource_monitor sampling every 20 ms, then alloc_bound.py computes, for windows
# of 100 ms (the CFS period: a CPU quota is enforced per period) and 20 ms (finer than any
# quota can be held to), the share an allocation that follows each rule's use with one window
# of lag would reach, and one fixed at the category's mean use; both with free, instant
# lending above the allocation (alloc_bound.py). The rules run alone, at their own speed.
# Usage: alloc_bound.sh [BUILD]; K from BOUND_RULES (default 14, two of every size).
set -eu
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
H=$BUILD/resource_monitor/test
K=${BOUND_RULES:-14}
WORK=$BUILD/bench/alloc-bound
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# mon NAME COMMAND: run COMMAND under the monitor, its series in NAME.series
mon() {
	"$BUILD/bin/resource_monitor" -i 0.02 --with-time-series -O "$1" --sh "$2" >/dev/null ||
		{
			echo "alloc_bound: $1 failed under the monitor; left out" >&2
			rm -f "$1.series"
		}
	rm -f "$1.summary"
}
for i in $(seq 1 "$K"); do
	mon "c.$i" "$H/helper_alloc $((400 + (i % 5) * 50)) 0.4 & $H/helper_burn 1 0.4; wait"
	mon "m.$i" "$H/helper_alloc $((900 + (i % 7) * 40)) 0.4 > /dev/null"
	mon "w.$i" "$H/helper_alloc 200 0.2 & $H/helper_write w.out $((20 + (i % 5) * 10)); wait"
done
echo "core-time bound: $K rules of each category of alloc.sh's workflow, one at a time" \
	"(used share of allocated core-time: following use with one window of lag / fixed at the" \
	"category's mean use; floor 0.05 core)"
python3 "$SRCDIR/test/bench/alloc_bound.py" 0.05 0.1 0.02 -- "$WORK"/*.series
