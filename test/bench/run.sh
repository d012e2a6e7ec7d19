#!/bin/bash
# run.sh: behind `make bench`. Runs each makeflow benchmark side by side with
# GNU make and with CCTools 9.9 (Debian coop-computing-tools) in one run and
# prints wall time, peak memory and ratios. Sizes can be reduced for a quick
# look with BENCH_SCALE=0.1. Results also go to build/bench/results.txt.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
OURS=$BUILD/bin/makeflow
OURS_ANALYZE=$BUILD/bin/makeflow_analyze
SCALE=${BENCH_SCALE:-1}
CCTOOLS_TIMEOUT=${CCTOOLS_TIMEOUT:-600}
WORK=$BUILD/bench
RESULTS=$WORK/results.txt
mkdir -p "$WORK"
: >"$RESULTS"
export OMPI_MCA_ess_singleton_isolated=1

CCT_MAKEFLOW=/usr/bin/makeflow
CCT_ANALYZE=/usr/bin/makeflow_analyze
have_cctools=1
[ -x "$CCT_MAKEFLOW" ] || have_cctools=0

scaled() {
	python3 -c "print(max(1, int(round($1 * $SCALE))))"
}

say() {
	echo "$*" | tee -a "$RESULTS"
}

# measure NAME LIMIT CMD... : runs CMD, sets T (seconds) and M (peak RSS KB).
# T is "timeout" if it did not finish within LIMIT seconds.
measure() {
	local name=$1 limit=$2
	shift 2
	local tf
	tf=$(mktemp)
	timeout -k 5 "$limit" /usr/bin/time -f "%e %M" -o "$tf" "$@" >"$WORK/$name.out" 2>&1
	local rc=$?
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		T=timeout
		M=-
	elif [ $rc != 0 ]; then
		echo "bench: $name exited with status $rc; output in $WORK/$name.out" >&2
		T="failed($rc)"
		M=-
	else
		read -r T M <"$tf"
	fi
	rm -f "$tf"
}

# ratio A B [LIMIT]: A/B; when A timed out after LIMIT s, a lower bound.
ratio() {
	python3 -c "
a, b, lim = '$1', '$2', '${3:-}'
try:
    if a == 'timeout' and lim:
        print('> %.1fx (stopped after %s s)' % (float(lim) / float(b), lim))
    else:
        print('%.2fx' % (float(a) / float(b)))
except (ValueError, ZeroDivisionError):
    print('n/a')"
}

# ---- 1. N independent trivial rules, -j 2 ---------------------------------------
bench_independent() {
	local n
	n=$(scaled 5000)
	local d=$WORK/independent
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$d" "$n" <<'EOF'
import sys, os
d, n = sys.argv[1], int(sys.argv[2])
with open(os.path.join(d, 'Makeflow'), 'w') as f, open(os.path.join(d, 'Makefile'), 'w') as g:
    g.write('all: ' + ' '.join('out.%d' % i for i in range(n)) + '\n')
    for i in range(n):
        f.write('out.%d:\n\ttouch out.%d\n\n' % (i, i))
        g.write('out.%d:\n\ttouch out.%d\n' % (i, i))
EOF
	cd "$d" || return
	say ""
	say "== $n independent trivial rules, 2 at a time"
	rm -f out.* Makeflow.makeflowlog
	measure ours 600 "$OURS" -T local -j 2 --progress=quiet Makeflow
	local t_ours=$T m_ours=$M
	rm -f out.*
	measure gnumake 600 make -s -j2
	local t_make=$T
	rm -f out.* Makeflow.makeflowlog
	local t_cct=skipped
	if [ $have_cctools = 1 ]; then
		measure cctools "$CCTOOLS_TIMEOUT" "$CCT_MAKEFLOW" -T local -j 2 Makeflow
		t_cct=$T
	fi
	say "  ours (makeflow -T local -j 2):   ${t_ours} s  (peak ${m_ours} KB)"
	say "  GNU make -j2:                    ${t_make} s"
	say "  CCTools 9.9 makeflow -j 2:       ${t_cct} s"
	say "  ours / GNU make = $(ratio "$t_ours" "$t_make")   (target <= 1.2x)"
	say "  CCTools / ours  = $(ratio "$t_cct" "$t_ours" "$CCTOOLS_TIMEOUT")"
	cd "$SRCDIR" || return
}

# ---- 2. many rules with -T dryrun --------------------------------------------------
bench_dryrun() {
	local n
	n=$(scaled 100000)
	local d=$WORK/dryrun
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$d" "$n" <<'EOF'
import sys, os
d, n = sys.argv[1], int(sys.argv[2])
with open(os.path.join(d, 'Makeflow'), 'w') as f:
    for i in range(n):
        f.write('out.%d:\n\techo %d > out.%d\n\n' % (i, i, i))
EOF
	cd "$d" || return
	say ""
	say "== $n independent rules, -T dryrun (dispatch cost only)"
	measure ours_dryrun 600 "$OURS" -T dryrun --progress=quiet --batch-option script=ours.sh Makeflow
	local t_ours=$T m_ours=$M
	local t_cct=skipped
	if [ $have_cctools = 1 ]; then
		measure cctools_dryrun "$CCTOOLS_TIMEOUT" "$CCT_MAKEFLOW" -T dryrun Makeflow
		t_cct=$T
	fi
	say "  ours:          ${t_ours} s  (peak ${m_ours} KB)   (target < 30 s)"
	say "  CCTools 9.9:   ${t_cct} s"
	say "  CCTools / ours = $(ratio "$t_cct" "$t_ours" "$CCTOOLS_TIMEOUT")"
	cd "$SRCDIR" || return
}

# ---- 3. parse/check a million rules ------------------------------------------------
bench_analyze() {
	local n
	n=$(scaled 1000000)
	local d=$WORK/analyze
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$d" "$n" <<'EOF'
import sys, os
d, n = sys.argv[1], int(sys.argv[2])
with open(os.path.join(d, 'Makeflow'), 'w') as f:
    for i in range(n):
        f.write('out.%d: in.txt\n\tcat in.txt > out.%d\n\n' % (i, i))
open(os.path.join(d, 'in.txt'), 'w').write('x\n')
EOF
	cd "$d" || return
	say ""
	say "== $n rules, makeflow_analyze -k (parse and check)"
	measure ours_analyze 900 "$OURS_ANALYZE" -k Makeflow
	local t_ours=$T m_ours=$M
	local t_cct=skipped m_cct=-
	if [ $have_cctools = 1 ]; then
		measure cctools_analyze "$CCTOOLS_TIMEOUT" "$CCT_ANALYZE" -k Makeflow
		t_cct=$T
		m_cct=$M
	fi
	say "  ours:          ${t_ours} s, peak ${m_ours} KB"
	say "  CCTools 9.9:   ${t_cct} s, peak ${m_cct} KB"
	say "  memory ours / CCTools = $(ratio "$m_ours" "$m_cct")   (target <= 0.25x)"
	say "  time   ours / CCTools = $(ratio "$t_ours" "$t_cct")   (target <= 0.5x)"
	cd "$SRCDIR" || return
}

# ---- 4. a 10-level DAG with fan-in ---------------------------------------------------
bench_levels() {
	local n
	n=$(scaled 1000)
	local d=$WORK/levels
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$d" "$n" <<'EOF'
import sys, os
d, n = sys.argv[1], int(sys.argv[2])
levels = 10
width = max(1, n // levels)
with open(os.path.join(d, 'Makeflow'), 'w') as f, open(os.path.join(d, 'Makefile'), 'w') as g:
    finals = ['l%d.%d' % (levels - 1, i) for i in range(width)]
    g.write('all: ' + ' '.join(finals) + '\n')
    for l in range(levels):
        for i in range(width):
            out = 'l%d.%d' % (l, i)
            if l == 0:
                ins = []
                cmd = 'echo %d > %s' % (i, out)
            else:
                # fan-in: each file of a level reads two of the level below
                ins = ['l%d.%d' % (l - 1, i), 'l%d.%d' % (l - 1, (i + 1) % width)]
                cmd = 'cat %s > %s' % (' '.join(ins), out)
            f.write('%s: %s\n\t%s\n\n' % (out, ' '.join(ins), cmd))
            g.write('%s: %s\n\t%s\n' % (out, ' '.join(ins), cmd))
EOF
	cd "$d" || return
	say ""
	say "== 10-level DAG of $n rules with fan-in, 2 at a time"
	rm -f l*.* Makeflow.makeflowlog
	measure ours_levels 600 "$OURS" -T local -j 2 --progress=quiet Makeflow
	local t_ours=$T
	rm -f l*.*
	measure gnumake_levels 600 make -s -j2
	local t_make=$T
	say "  ours:       ${t_ours} s"
	say "  GNU make:   ${t_make} s"
	say "  ours / GNU make = $(ratio "$t_ours" "$t_make")"
	cd "$SRCDIR" || return
}

# ---- 5. resource_monitor against CCTools' resource_monitor ------------------------
bench_rmonitor() {
	say ""
	bash "$SRCDIR/test/bench/rmonitor.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 6. per-category sizing on -T cgroups ------------------------------------------
bench_alloc() {
	say ""
	ALLOC_TASKS=$(scaled 100) bash "$SRCDIR/test/bench/alloc.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
	# what an allocation following each rule's CPU use could reach on the same rules
	bash "$SRCDIR/test/bench/alloc_bound.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 6b. growth and throttling on the worker ---------------------------------------------
bench_grow() {
	say ""
	bash "$SRCDIR/test/bench/grow.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 7. Work Queue against CCTools' makeflow -T wq and work_queue_worker ----------
bench_wq() {
	say ""
	WQ_TASKS=$(scaled 5000) WQ_QUEUED=$(scaled 100000) WQ_BIG_MB=$(scaled 2048) \
		bash "$SRCDIR/test/bench/wq.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 8. the master alone against simulated workers (needs `make tests`) -------------
bench_sim() {
	say ""
	SIM_TASKS=$(scaled 1000000) bash "$SRCDIR/test/bench/sim.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 9. the run report of a synthetic 100,000-rule run ----------------------------------------
bench_report() {
	say ""
	REPORT_BENCH_RULES=$(scaled 100000) bash "$SRCDIR/test/bench/report.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 10. makeflow -T k8s and worker pods on the test cluster (root, cached binaries) ------
bench_k8s() {
	say ""
	BUILD=$BUILD BENCH_CCTOOLS_N=$(scaled 500) CCTOOLS_TIMEOUT=$CCTOOLS_TIMEOUT \
		bash "$SRCDIR/test/bench/k8s.sh" "$(scaled 500)" 2>&1 | tee -a "$RESULTS"
}

# ---- 11. autoscaling policies of work_queue_factory (hta, queue, hpa) ------------------
# local workers (their own start, and a modelled node start), then Kubernetes worker pods on
# the test cluster (the latency a real driver gives)
bench_hta() {
	say ""
	HTA_SCALE=$SCALE bash "$SRCDIR/test/bench/hta.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
	say ""
	HTA_SCALE=$SCALE HTA_DRIVER=k8s bash "$SRCDIR/test/bench/hta.sh" "$BUILD" 2>&1 |
		tee -a "$RESULTS"
}

# ---- 12. what containers cost: five ways of running the same rules (root, dockerd) -------
bench_containers() {
	say ""
	CONT_TASKS=$(scaled 500) bash "$SRCDIR/test/bench/containers.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 13. 8 workers on one shared cache against 8 private caches ---------------------------
bench_shared_cache() {
	say ""
	SC_MB=$(scaled 200) bash "$SRCDIR/test/bench/shared-cache.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

# ---- 14. 8 workers needing one URL: one shared store against 8 private caches -------------
bench_shared_url() {
	say ""
	SU_MB=$(scaled 200) bash "$SRCDIR/test/bench/shared-url.sh" "$BUILD" 2>&1 | tee -a "$RESULTS"
}

say "makeflow benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, scale $SCALE"
[ $have_cctools = 1 ] || say "(CCTools 9.9 is not installed: its columns are skipped; run 'make bench' as root to install it)"
for b in ${BENCHES:-independent dryrun analyze levels rmonitor alloc grow wq sim report k8s hta containers shared_cache shared_url}; do
	"bench_$b"
done
say ""
say "Results saved in $RESULTS"
