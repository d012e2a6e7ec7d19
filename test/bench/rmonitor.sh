#!/bin/bash
# rmonitor.sh: benchmark of our resource_monitor side by side with CCTools 9.9's
# /usr/bin/resource_monitor (Debian coop-computing-tools) and GNU /usr/bin/time in one run:
# overhead per task on /bin/true, on a CPU-bound program and on a large allocator, and the
# accuracy of the reported peak memory against the truth. Run as
#   bash test/bench/rmonitor.sh [BUILD]        (or as bench "rmonitor" of test/bench/run.sh)
# Sizes: RMON_BENCH_N (runs of /bin/true, default 200), RMON_BENCH_BURN (seconds of CPU,
# default 10), RMON_BENCH_MB (MiB allocated, default 500).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
OURS=$BUILD/bin/resource_monitor
HELPERS=$BUILD/resource_monitor/test
CCT=/usr/bin/resource_monitor
N=${RMON_BENCH_N:-200}
BURN=${RMON_BENCH_BURN:-10}
MB=${RMON_BENCH_MB:-500}
WORK=$BUILD/bench/rmonitor
export OMPI_MCA_ess_singleton_isolated=1

for f in "$OURS" "$HELPERS/helper_burn" "$HELPERS/helper_alloc"; do
	if [ ! -x "$f" ]; then
		echo "rmonitor bench: $f is not built (make tests)" >&2
		exit 1
	fi
done
have_cct=1
[ -x "$CCT" ] || have_cct=0
have_time=1
[ -x /usr/bin/time ] || have_time=0
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1

now_ns() {
	date +%s%N
}

# loop_ms N CMD...: total milliseconds for N sequential runs of CMD.
loop_ms() {
	local n=$1 i t0 t1
	shift
	t0=$(now_ns)
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1
	done
	t1=$(now_ns)
	echo $(((t1 - t0) / 1000000))
}

# once_ms CMD...: milliseconds of one run of CMD.
once_ms() {
	loop_ms 1 "$@"
}

# field FILE KEY: number of a summary field (either form), or "-" when absent.
field() {
	python3 -c '
import json, sys
try:
    x = json.load(open(sys.argv[1]))[sys.argv[2]]
    print(x[0] if isinstance(x, list) else x)
except Exception:
    print("-")' "$1" "$2"
}

calc() {
	python3 -c "
try:
    print($1)
except Exception:
    print('n/a')"
}

echo "== resource_monitor: ours vs CCTools 9.9 vs /usr/bin/time, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
[ $have_cct = 1 ] || echo "(CCTools 9.9 is not installed: its column is skipped; install coop-computing-tools)"

# ---- 1. overhead per task on /bin/true ------------------------------------------------------
bare=$(loop_ms "$N" /bin/true)
ours=$(loop_ms "$N" "$OURS" -O "$WORK/true-ours" -- /bin/true)
cct=-
[ $have_cct = 1 ] && cct=$(loop_ms "$N" "$CCT" -O "$WORK/true-cct" -- /bin/true)
echo ""
echo "1. /bin/true, $N runs each (ms per task)"
printf '   %-26s %10s\n' "bare" "$(calc "'%.2f' % ($bare / $N)")"
printf '   %-26s %10s   overhead %s ms/task\n' "ours" "$(calc "'%.2f' % ($ours / $N)")" \
	"$(calc "'%.2f' % (($ours - $bare) / $N)")"
printf '   %-26s %10s   overhead %s ms/task\n' "CCTools 9.9" "$(calc "'%.2f' % ($cct / $N)")" \
	"$(calc "'%.2f' % (($cct - $bare) / $N)")"
echo "   CCTools / ours (per task) = $(calc "'%.2fx' % ($cct / $ours)")"

# ---- 2. CPU-bound program ----------------------------------------------------------------------
bare=$(once_ms "$HELPERS/helper_burn" 1 "$BURN")
ours=$(once_ms "$OURS" -O "$WORK/burn-ours" -- "$HELPERS/helper_burn" 1 "$BURN")
cct=-
[ $have_cct = 1 ] && cct=$(once_ms "$CCT" -O "$WORK/burn-cct" -- "$HELPERS/helper_burn" 1 "$BURN")
echo ""
echo "2. helper_burn 1 $BURN (wall ms, % over bare)"
printf '   %-26s %10s\n' "bare" "$bare"
printf '   %-26s %10s   %s %%\n' "ours" "$ours" "$(calc "'%+.2f' % (100.0 * ($ours - $bare) / $bare)")"
printf '   %-26s %10s   %s %%\n' "CCTools 9.9" "$cct" "$(calc "'%+.2f' % (100.0 * ($cct - $bare) / $bare)")"
echo "   cpu_time reported: ours $(field burn-ours.summary cpu_time) s, CCTools $(field burn-cct.summary cpu_time) s"

# ---- 3. large allocator --------------------------------------------------------------------------
# One unmeasured run first, so the bare run does not pay alone for a cold start.
"$HELPERS/helper_alloc" "$MB" 0 >/dev/null 2>&1
bare=$(once_ms "$HELPERS/helper_alloc" "$MB" 1)
ours=$(once_ms "$OURS" -O "$WORK/alloc-ours" -- "$HELPERS/helper_alloc" "$MB" 1)
cct=-
[ $have_cct = 1 ] && cct=$(once_ms "$CCT" -O "$WORK/alloc-cct" -- "$HELPERS/helper_alloc" "$MB" 1)
echo ""
echo "3. helper_alloc $MB 1 (wall ms, % over bare)"
printf '   %-26s %10s\n' "bare" "$bare"
printf '   %-26s %10s   %s %%\n' "ours" "$ours" "$(calc "'%+.2f' % (100.0 * ($ours - $bare) / $bare)")"
printf '   %-26s %10s   %s %%\n' "CCTools 9.9" "$cct" "$(calc "'%+.2f' % (100.0 * ($cct - $bare) / $bare)")"

# ---- 4. accuracy of peak memory --------------------------------------------------------------------
# Truth: MB MiB touched by the helper plus its own baseline, the peak resident size of the
# same program allocating nothing (getrusage through /usr/bin/time).
base=-
gtime=-
if [ $have_time = 1 ]; then
	/usr/bin/time -f %M -o base.kb "$HELPERS/helper_alloc" 0 0.1
	base=$(calc "int(open('base.kb').read().split()[-1]) / 1024.0")
	/usr/bin/time -f %M -o alloc.kb "$HELPERS/helper_alloc" "$MB" 1
	gtime=$(calc "int(open('alloc.kb').read().split()[-1]) / 1024.0")
fi
truth=$(calc "$MB + $base")
m_ours=$(field alloc-ours.summary memory)
m_cct=-
[ $have_cct = 1 ] && m_cct=$(field alloc-cct.summary memory)
m_cct1=-
if [ $have_cct = 1 ]; then
	"$CCT" -i 1 -O "$WORK/alloc-cct-i1" -- "$HELPERS/helper_alloc" "$MB" 1 >/dev/null 2>&1
	m_cct1=$(field alloc-cct-i1.summary memory)
fi
echo ""
echo "4. peak memory of helper_alloc $MB 1 (MB; truth = $MB + baseline $(calc "'%.2f' % $base") = $(calc "'%.2f' % $truth"))"
for row in "ours:$m_ours" "CCTools 9.9 (default -i):$m_cct" "CCTools 9.9 -i 1:$m_cct1" "/usr/bin/time -v:$gtime"; do
	name=${row%%:*}
	val=${row#*:}
	printf '   %-26s %10s   error %s %%\n' "$name" "$(calc "'%.2f' % $val")" \
		"$(calc "'%+.2f' % (100.0 * ($val - $truth) / $truth)")"
done
echo ""
echo "(single runs of 2. and 3. on a shared machine: differences of a few % are noise)"
echo "Outputs in $WORK"
