#!/bin/bash
# slurm.sh: N trivial rules (default 1000) through makeflow -T slurm on a real single-node Slurm
# cluster that the script starts (test/slurm/slurm-lib.sh) and stops, side by side with CCTools
# 9.9's makeflow -T slurm on the same cluster in the same run. Prints, for each: the wall time,
# rules per second, and the submission rate (jobs over the span of their Slurm SubmitTime, from
# jobcomp/filetxt, 1 s resolution); for this project's makeflow also the time the driver adds
# per job: from a rule ready (its 'running' record: the job is handed to the driver) to Slurm's
# SubmitTime, and from the job's end (the mtime of the output it writes last) to makeflow's
# 'complete' record. Usage: slurm.sh [N]; BUILD (default ./build); BENCH_NO_CCTOOLS=1 skips
# CCTools; BENCH_CCTOOLS_N (default N) rules for CCTools; BENCH_OPTS extra options of this
# project's makeflow (e.g. "--batch-option submit-rate=200"); SLURM_ACCOUNTING=1 starts the
# cluster with accounting (slurmdbd on its own MariaDB, test/slurm/README.md), so this project's
# driver also reads every finished job from sacct.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$SRCDIR/build}
N=${1:-1000}
CN=${BENCH_CCTOOLS_N:-$N}
. "$SRCDIR/test/slurm/slurm-lib.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-bench-slurm.XXXXXX")
trap 'slurm_stop; rm -rf "$WORK"' EXIT
slurm_start "$WORK/slurm" || exit 1

# workflow DIR COUNT: COUNT rules, each writing its own file.
workflow() {
	mkdir -p "$1"
	for i in $(seq 1 "$2"); do
		printf 'out.%d:\n\techo %d > out.%d\n\n' "$i" "$i" "$i"
	done >"$1/Makeflow"
}

# submit_span FIRST_LINE: "jobs span_seconds" of the jobcomp records from line FIRST_LINE on.
submit_span() {
	tail -n +"$1" "$WORK/slurm/jobcomp.txt" | python3 -c '
import sys, datetime
t = []
for line in sys.stdin:
    for w in line.split():
        if w.startswith("SubmitTime="):
            t.append(datetime.datetime.fromisoformat(w.split("=", 1)[1]).timestamp())
print(len(t), (max(t) - min(t) + 1) if t else 0)'
}

# driver_overhead DIR: from this project's log, the mean and max seconds from a rule running to
# Slurm's SubmitTime, and from the output's mtime to the complete record.
driver_overhead() {
	python3 - "$1/Makeflow.makeflowlog" "$WORK/slurm/jobcomp.txt" "$1" <<'PY'
import sys, os, datetime
log, comp, d = sys.argv[1:]
running, complete, out = {}, {}, {}
for line in open(log):
    f = line.split()
    if f[0] == 'N' and f[3] == '2':
        running[int(f[2])] = int(f[1]) / 1e6
    elif f[0] == 'N' and f[3] == '3':
        complete[int(f[2])] = int(f[1]) / 1e6
subs = []
for line in open(comp):
    kv = dict(w.split('=', 1) for w in line.split() if '=' in w)
    if kv.get('WorkDir') == d:
        subs.append(datetime.datetime.fromisoformat(kv['SubmitTime']).timestamp())
notice = []
for i, t in complete.items():
    p = os.path.join(d, 'out.%d' % (i + 1))
    notice.append(t - os.stat(p).st_mtime)
subs.sort()
ready = sorted(running.values())
# the k-th submission in Slurm's order against the k-th rule handed over (1 s resolution)
lat = [max(0.0, s - r) for s, r in zip(subs, ready)]
def st(v):
    return 'mean %.3f s, max %.3f s' % (sum(v) / len(v), max(v)) if v else 'n/a'
print('  ready -> submitted (Slurm SubmitTime, 1 s resolution): ' + st(lat))
print('  job end (output mtime) -> makeflow notices: ' + st(notice))
PY
}

# run NAME DIR CMD...: runs CMD in DIR and prints the figures.
run() {
	local name=$1 dir=$2
	shift 2
	local first n t0 t1 span
	first=$(($(wc -l <"$WORK/slurm/jobcomp.txt" 2>/dev/null || echo 0) + 1))
	t0=$(date +%s.%N)
	(cd "$dir" && "$@" >"$dir/out.log" 2>&1) || echo "$name: makeflow failed (see $dir/out.log)"
	t1=$(date +%s.%N)
	# jobcomp records are written as jobs end; the last ones may trail the exit a moment
	n=$(ls "$dir" | grep -c '^out\.[0-9]')
	read -r jobs span < <(submit_span "$first")
	python3 -c "
t = $t1 - $t0
print('%s: %d rules, %d outputs in %.1f s: %.2f rules/s; %d jobs submitted over %.0f s: %.2f submissions/s' % ('$name', $(grep -c '^out' "$dir/Makeflow"), $n, t, $n / t, $jobs, $span, $jobs / $span if $span else 0))"
}

echo "slurm.sh: $N rules ($CN for CCTools) on a single-node Slurm ($(nproc) CPUs)"
workflow "$WORK/ours" "$N"
# shellcheck disable=SC2086
run "this project (-T slurm${BENCH_OPTS:+ $BENCH_OPTS})" "$WORK/ours" "$BUILD/bin/makeflow" -T slurm ${BENCH_OPTS:-} Makeflow
driver_overhead "$WORK/ours"
if [ "${BENCH_NO_CCTOOLS:-0}" != 1 ] && [ -x /usr/bin/makeflow ]; then
	workflow "$WORK/cctools" "$CN"
	run "CCTools 9.9 (-T slurm)" "$WORK/cctools" env OMPI_MCA_ess_singleton_isolated=1 \
		/usr/bin/makeflow -T slurm Makeflow
fi
