#!/bin/bash
# 02-sanitizers.sh: builds the whole tree a second time with AddressSanitizer
# and UndefinedBehaviorSanitizer (in a separate build directory) and runs every
# unit test there; any leak, overflow or undefined behaviour fails it.
. "$(dirname "$0")/../lib/test-lib.sh"
TEST_TIMEOUT=${SAN_TIMEOUT:-1200}

test_expect_success 'unit tests are clean under ASan+UBSan' '
	make -s -C "$TEST_SRCDIR" -j2 B=$PWD/asan \
		SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		OPT="-O1 -g" tests >build.log 2>&1 || { tail -50 build.log; exit 1; }
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		bash "$TEST_SRCDIR/test/run-tests.sh" --build "$PWD/asan" --no-e2e >out 2>&1 || { cat out; exit 1; }
	cat out
	tail -1 out | grep -q " 0 failed$"
'

test_done
