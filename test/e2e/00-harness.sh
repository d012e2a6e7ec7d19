#!/bin/bash
# 00-harness.sh: tests of the test harness itself: a failing case is reported
# as failed, a hung case or unit binary is killed at its timeout, daemons are
# cleaned up by PID, and the runner's closing line adds up.
. "$(dirname "$0")/../lib/test-lib.sh"

RUNNER=$TEST_SRCDIR/test/run-tests.sh

test_expect_success 'a passing case passes' '
	true
'

test_expect_failure 'test_expect_failure sees a non-zero exit' '
	false
'

test_expect_success 'each case starts in its own empty directory' '
	[ -z "$(ls)" ] && touch marker
'

test_expect_success 'the previous case left nothing here' '
	[ ! -e marker ]
'

test_expect_success 'a suite with a failing and a hung case reports both as failed' '
	cat >fake.sh <<EOS
. "$TEST_SRCDIR/test/lib/test-lib.sh"
test_expect_success "passes" "true"
test_expect_success "fails" "false"
test_expect_success "hangs" "sleep 600"
test_done
EOS
	TEST_TIMEOUT=2 bash "$RUNNER" --no-unit --suites "$PWD/fake.sh" >out 2>&1 && exit 1
	cat out
	grep -q "^1 passed, 2 failed$" out
	grep -q "killed after 2s timeout" out
	grep -q "^Failed: e2e fake.sh" out
'

test_expect_success 'a daemon started by a case is killed by PID when the case ends' '
	cat >fake.sh <<EOS
. "$TEST_SRCDIR/test/lib/test-lib.sh"
test_expect_success "starts a daemon" "
	test_daemon_start port.txt sh -c \"echo \\\$\\\$ > \$PWD/../daemon.pid; echo 1234 > port.txt; exec sleep 600\"
	test \\\$DAEMON_PORT = 1234
"
test_done
EOS
	bash "$RUNNER" --no-unit --suites "$PWD/fake.sh" >out 2>&1 || { cat out; exit 1; }
	grep -q "^1 passed, 0 failed$" out
	pid=$(cat "$TEST_ROOT/daemon.pid" 2>/dev/null || true)
	rm -f "$TEST_ROOT/daemon.pid"
	test -n "$pid"
	! kill -0 "$pid" 2>/dev/null
'

test_expect_success 'a unit binary that fails, hangs or reports nothing counts as failed' '
	mkdir -p u/test
	printf "#!/bin/sh\necho \"[  PASSED  ] 3 test(s).\"\n" >u/test/test_good
	printf "#!/bin/sh\necho \"[  PASSED  ] 2 test(s).\"\necho \"[  FAILED  ] 1 test(s), listed below:\"\nexit 1\n" >u/test/test_bad
	printf "#!/bin/sh\nexec sleep 600\n" >u/test/test_hang
	printf "#!/bin/sh\nkill -SEGV \$\$\n" >u/test/test_crash
	chmod +x u/test/*
	UNIT_TIMEOUT=2 bash "$RUNNER" --no-e2e --unit-dir "$PWD/u" >out 2>&1 && exit 1
	cat out
	grep -q "^5 passed, 3 failed$" out
	grep -q "test_hang.*killed after 2s timeout" out
	grep -q "test_crash.*without a cmocka report" out
'

test_expect_success 'under CI a suite that cannot run fails instead of skipping' '
	cat >fake.sh <<EOS
. "$TEST_SRCDIR/test/lib/test-lib.sh"
test_skip_all "no server here"
EOS
	CI=true bash "$RUNNER" --no-unit --suites "$PWD/fake.sh" >out 2>&1 && exit 1
	grep -q "^0 passed, 1 failed$" out
	env -u CI bash "$RUNNER" --no-unit --suites "$PWD/fake.sh" >out2 2>&1
	grep -q "^0 passed, 0 failed$" out2
'

test_expect_failure 'test_must_fail fails a case when the command succeeds' '
	test_must_fail true
	true
'

test_expect_success 'test_must_fail passes when the command fails' '
	test_must_fail false
'

test_done
