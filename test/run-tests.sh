#!/bin/bash
# run-tests.sh: run every unit-test binary and end-to-end suite, each under a
# timeout, and print one closing line "N passed, N failed". Exits non-zero if
# anything failed. A unit binary or suite that crashes or hangs without
# reporting counts as one failure (plus whatever it had reported).
#
# Usage: run-tests.sh [--build DIR] [--no-e2e] [--no-unit] [--unit-dir DIR]
#                     [--suites "a.sh b.sh"] [--verbose]
set -u
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRCDIR/build
UNIT_DIRS=()
SUITES=""
RUN_UNIT=1
RUN_E2E=1
VERBOSE=0
UNIT_TIMEOUT=${UNIT_TIMEOUT:-120}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1800}

while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift ;;
	--unit-dir) UNIT_DIRS+=("$2"); shift ;;
	--suites) SUITES=$2; shift ;;
	--no-e2e) RUN_E2E=0 ;;
	--no-unit) RUN_UNIT=0 ;;
	--verbose | -v) VERBOSE=1 ;;
	*) echo "run-tests: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
export BUILD

passed=0
failed=0
skipped=0
failures=()
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/htc-check.XXXXXX")

run_unit() {
	local bin=$1 name
	name=${bin#"$BUILD"/}
	local log="$LOGDIR/$(echo "$name" | tr / _).log"
	timeout -k 5 "$UNIT_TIMEOUT" "$bin" >"$log" 2>&1
	local rc=$?
	local p f
	p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$log" | tail -n 1)
	p=${p:-0}
	f=${f:-0}
	local note=""
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		f=$((f + 1))
		note=" (killed after ${UNIT_TIMEOUT}s timeout)"
	elif [ $rc != 0 ] && [ "$f" = 0 ]; then
		f=1
		note=" (exit status $rc without a cmocka report)"
	elif [ $rc = 0 ] && [ "$p" = 0 ] && [ "$f" = 0 ]; then
		f=1
		note=" (ran no test)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" != 0 ]; then
		echo "FAIL unit $name: $p passed, $f failed$note"
		tail -n 40 "$log" | sed 's/^/    /'
		failures+=("unit $name")
	else
		echo "ok   unit $name: $p passed"
		[ $VERBOSE = 1 ] && sed 's/^/    /' "$log"
	fi
}

run_suite() {
	local suite=$1 name
	name=$(basename "$suite")
	local counts="$LOGDIR/$name.counts"
	local log="$LOGDIR/$name.log"
	rm -f "$counts"
	local vflag=""
	[ $VERBOSE = 1 ] && vflag=--verbose
	TEST_COUNTS_FILE=$counts timeout -k 10 "$SUITE_TIMEOUT" bash "$suite" $vflag >"$log" 2>&1 </dev/null
	local rc=$?
	local p=0 f=0 s=0
	if [ -s "$counts" ]; then
		read -r p f s <"$counts"
	fi
	local note=""
	if [ ! -s "$counts" ]; then
		f=$((f + 1))
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			note=" (suite killed after ${SUITE_TIMEOUT}s timeout)"
		else
			note=" (suite ended with status $rc before reporting)"
		fi
	elif [ $rc != 0 ] && [ "$f" = 0 ]; then
		f=1
		note=" (suite exit status $rc)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "$f" != 0 ]; then
		echo "FAIL e2e  $name: $p passed, $f failed$note"
		grep -v '^ok ' "$log" | tail -n 80 | sed 's/^/    /'
		failures+=("e2e $name")
	else
		local extra=""
		[ "$s" -gt 0 ] && extra=", $s skipped"
		echo "ok   e2e  $name: $p passed$extra"
		[ $VERBOSE = 1 ] && sed 's/^/    /' "$log"
	fi
}

if [ $RUN_UNIT = 1 ]; then
	[ ${#UNIT_DIRS[@]} -eq 0 ] && UNIT_DIRS=("$BUILD")
	while IFS= read -r bin; do
		run_unit "$bin"
	done < <(find "${UNIT_DIRS[@]}" -path '*/test/test_*' -type f -perm -u+x 2>/dev/null | sort)
fi

if [ $RUN_E2E = 1 ]; then
	if [ -z "$SUITES" ]; then
		SUITES=$(ls "$SRCDIR"/test/e2e/*.sh 2>/dev/null | sort)
	fi
	for s in $SUITES; do
		[ -f "$s" ] || s=$SRCDIR/test/e2e/$s
		if [ ! -f "$s" ]; then
			echo "FAIL e2e  $s: no such suite"
			failed=$((failed + 1))
			continue
		fi
		run_suite "$s"
	done
	# Cases end by killing what they started with SIGKILL; the cgroups of workers and
	# monitors killed that way are removed by the next monitor's stale cleanup
	# (doc/resource-monitor.md). One last monitor does it after the last suite.
	if [ -x "$BUILD/bin/resource_monitor" ]; then
		(cd "$LOGDIR" && "$BUILD/bin/resource_monitor" -O last -- true) >/dev/null 2>&1 || true
	fi
fi

rm -rf "$LOGDIR"
echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "Failed: ${failures[*]}"
fi
[ $skipped -gt 0 ] && echo "($skipped skipped: not under CI)"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
