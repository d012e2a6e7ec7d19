#!/bin/bash
# 03-fuzz.sh: runs every libFuzzer target (parser, JX, ...) briefly under
# ASan+UBSan; `make fuzz` runs them longer. Needs clang (installed by
# `make check` through test/install-deps.sh).
. "$(dirname "$0")/../lib/test-lib.sh"
command -v clang >/dev/null || test_skip_all "clang is not installed"
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
TEST_TIMEOUT=600

for src in "$TEST_SRCDIR"/*/test/fuzz_*.c; do
	t=$(basename "$src" .c)
	test_expect_success "fuzz target $t survives ${FUZZ_SECONDS}s" "
		bash \"$TEST_SRCDIR/test/fuzz.sh\" \"\$PWD/b\" $FUZZ_SECONDS $t
	"
done

test_done
