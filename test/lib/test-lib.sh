#!/bin/bash
# test-lib.sh: the end-to-end test library. A suite is a bash script that
# sources this file, calls test_expect_success / test_expect_failure for each
# case, and ends with test_done. Each case runs in its own temporary
# directory, under a timeout, and every daemon it starts is killed by PID
# afterwards, whether the case passed, failed or hung.
#
# Environment: TEST_TIMEOUT (seconds per case, default 120), TEST_VERBOSE=1 or
# --verbose (show every case's output), TEST_COUNTS_FILE (where test_done
# writes "passed failed skipped" for the runner), CI (a suite that cannot run
# fails instead of skipping), BUILD (the build directory, default build).

set -u

TEST_NAME=$(basename "$0" .sh)
TEST_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TEST_SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$TEST_SRCDIR/$BUILD ;; esac
BIN=$BUILD/bin
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
TEST_VERBOSE=${TEST_VERBOSE:-0}
for __arg in "$@"; do
	case "$__arg" in
	--verbose | -v) TEST_VERBOSE=1 ;;
	esac
done

test_count=0
test_passed=0
test_failed=0
test_skipped=0
TEST_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/htc-$TEST_NAME.XXXXXX")
TEST_ALL_PIDS=$TEST_ROOT/.all-pids
: >"$TEST_ALL_PIDS"
# Job control gives every background case its own process group, so a hung
# case can be killed with everything it started.
set -m

__kill_pidfile() {
	local f=$1 pid
	[ -f "$f" ] || return 0
	if [ "${2:-}" = fast ]; then
		while read -r pid; do
			[ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null || true; }
		done <"$f"
		# Reaped before the case ends (they are our children), so that nothing the case
		# started is still exiting when the next step looks for live owners of cgroups.
		while read -r pid; do
			[ -n "$pid" ] && { wait "$pid" 2>/dev/null || true; }
		done <"$f"
		return 0
	fi
	while read -r pid; do
		[ -n "$pid" ] || continue
		kill -TERM "$pid" 2>/dev/null || true
	done <"$f"
	# Give them a moment to exit, then force.
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		local alive=0
		while read -r pid; do
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then alive=1; fi
		done <"$f"
		[ $alive = 0 ] && break
		sleep 0.1
	done
	while read -r pid; do
		[ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null || true; }
	done <"$f"
	return 0
}

__cleanup_all() {
	__kill_pidfile "$TEST_ALL_PIDS"
	if [ "${TEST_KEEP:-0}" != 1 ]; then
		rm -rf "$TEST_ROOT"
	fi
}
trap __cleanup_all EXIT
trap 'exit 130' INT TERM

say() {
	printf '%s\n' "$*"
}

# test_daemon_start PORTFILE CMD ARGS... : start a daemon in the background
# (its output goes to ./daemon.N.log), record its PID for cleanup, and wait
# until it writes PORTFILE (up to TEST_DAEMON_WAIT seconds, default 20).
# Sets DAEMON_PID and DAEMON_PORT.
test_daemon_start() {
	local portfile=$1
	shift
	local n=$(($(wc -l <"$TEST_PIDS") + 1))
	"$@" >"daemon.$n.log" 2>&1 &
	DAEMON_PID=$!
	echo "$DAEMON_PID" >>"$TEST_PIDS"
	test_wait_for_file "$portfile" "${TEST_DAEMON_WAIT:-20}" || {
		echo "daemon '$*' did not write $portfile; its log:" >&2
		cat "daemon.$n.log" >&2
		return 1
	}
	DAEMON_PORT=$(cat "$portfile")
}

# test_track_pid PID: kill PID when the case ends.
test_track_pid() {
	echo "$1" >>"$TEST_PIDS"
}

# test_must_fail CMD...: succeeds only if CMD fails (unlike "! CMD", which
# set -e ignores in the middle of a case).
test_must_fail() {
	if "$@"; then
		echo "expected to fail: $*" >&2
		return 1
	fi
	return 0
}

# test_wait_for_file FILE [SECONDS]: wait until FILE exists and is not empty.
test_wait_for_file() {
	local f=$1 limit=${2:-20}
	local deadline=$((SECONDS + limit))
	while [ ! -s "$f" ]; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.02
	done
	return 0
}

# test_wait_until SECONDS CMD...: poll CMD until it succeeds.
test_wait_until() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit))
	until "$@"; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}

__run_case() {
	local expect=$1 desc=$2 body=$3
	test_count=$((test_count + 1))
	local dir="$TEST_ROOT/$test_count"
	mkdir -p "$dir"
	TEST_PIDS="$dir/.pids"
	TEST_CASE_DIR=$dir
	: >"$TEST_PIDS"
	local log="$dir/.log"
	(
		cd "$dir" || exit 99
		# On exit, while this subshell (the process group leader) is still
		# alive, record the status and kill everything the case started:
		# first the daemons by PID (our children, so their PIDs cannot have
		# been reused), then the whole group. Killing after the leader is
		# gone could hit an unrelated process that reused the number.
		trap 'echo $? >"$TEST_CASE_DIR/.rc"; __kill_pidfile "$TEST_PIDS" fast; kill -KILL -- -$BASHPID 2>/dev/null' EXIT
		# the command that ends the case, in its output
		trap 'echo "test-lib: this failed (status $?): $BASH_COMMAND"' ERR
		set -e
		eval "$body"
	) >"$log" 2>&1 </dev/null &
	local pid=$!
	(
		sleep "$TEST_TIMEOUT" &
		wait $!
		echo "timeout" >"$dir/.timedout"
		kill -KILL -- -"$pid" 2>/dev/null
	) >/dev/null 2>&1 &
	local watchdog=$!
	{ wait "$pid"; } 2>/dev/null
	local rc=$?
	[ -s "$dir/.rc" ] && rc=$(cat "$dir/.rc")
	[ -f "$dir/.timedout" ] || kill -- -"$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null

	local ok=0 why=""
	if [ -f "$dir/.timedout" ]; then
		why=" (killed after ${TEST_TIMEOUT}s timeout)"
	elif [ "$expect" = success ] && [ $rc = 0 ]; then
		ok=1
	elif [ "$expect" = failure ] && [ $rc != 0 ]; then
		ok=1
	else
		why=" (exit $rc)"
	fi
	if [ $ok = 1 ]; then
		test_passed=$((test_passed + 1))
		say "ok $test_count - $desc"
		[ "$TEST_VERBOSE" = 1 ] && sed 's/^/    /' "$log"
	else
		test_failed=$((test_failed + 1))
		say "not ok $test_count - $desc$why"
		echo "    --- case body:"
		printf '%s\n' "$body" | sed 's/^/    | /'
		echo "    --- output (last 40 lines):"
		tail -n 40 "$log" | sed 's/^/    /'
	fi
	return 0
}

# test_expect_success DESC BODY: BODY (shell text, run with set -e in a fresh
# temp directory) must exit 0.
test_expect_success() {
	__run_case success "$1" "$2"
}

# test_expect_failure DESC BODY: BODY must exit non-zero (used to check that
# bad input is refused).
test_expect_failure() {
	__run_case failure "$1" "$2"
}

# test_skip_all REASON: the suite cannot run here. Under CI this is a
# failure, never a silent skip.
test_skip_all() {
	if [ -n "${CI:-}" ]; then
		say "not ok - $TEST_NAME cannot run under CI: $1"
		test_failed=$((test_failed + 1))
	else
		say "skip - $TEST_NAME: $1"
		test_skipped=$((test_skipped + 1))
	fi
	test_done
}

# wf FILE: write stdin to FILE, turning a leading 4-space indent into a TAB
# (the command line of a rule), so workflows can be written readably.
wf() {
	sed 's/^    /\t/' >"$1"
}

# not CMD...: succeeds when CMD fails. (A bare `! CMD` does not stop a case
# under set -e, so a case must never end a check with it mid-body.)
not() {
	if "$@"; then return 1; fi
	return 0
}

# jget FILE PATH: print the JSON value at PATH (keys and list indices joined
# by dots, e.g. rules.total or failed_rules.0.line) of FILE.
jget() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
EOF
}

# test_require_bin NAME...: the suite needs these built programs.
test_require_bin() {
	local b
	for b in "$@"; do
		[ -x "$BIN/$b" ] || test_skip_all "program $BIN/$b is not built"
	done
}

test_done() {
	local extra=""
	[ "$test_skipped" -gt 0 ] && extra=", $test_skipped skipped"
	say "# $TEST_NAME: $test_passed ok, $test_failed not ok$extra"
	if [ -n "${TEST_COUNTS_FILE:-}" ]; then
		echo "$test_passed $test_failed $test_skipped" >"$TEST_COUNTS_FILE"
	fi
	[ $test_failed = 0 ]
	exit $?
}
