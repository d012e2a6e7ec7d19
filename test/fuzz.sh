#!/bin/bash
# fuzz.sh: builds the libFuzzer targets (COMPONENT/test/fuzz_*.c) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs each for SECONDS
# (default 300; `make check` runs them briefly through test/e2e/03-fuzz.sh).
# A crash, leak or hang fails the run and leaves the reproducer in the
# output directory. Usage: fuzz.sh BUILD_DIR SECONDS [TARGET...]
set -u
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
SECONDS_EACH=${2:-300}
shift 2 2>/dev/null || shift $#
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
OUT=$BUILD/fuzz
mkdir -p "$OUT"
if ! command -v clang >/dev/null; then
	echo "fuzz: clang is needed (apt-get install clang)" >&2
	exit 1
fi
. <(sed -n 's/^\(DEP_CFLAGS\|DEP_LIBS\) = *\(.*\)$/\1="\2"/p' "$SRCDIR/config.mk")
CFLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -std=gnu11"
# Lower evaluation limits for fuzzing: an input that runs to the default JX
# step limit takes seconds natively but minutes under the sanitizers. The
# limits themselves are tested by the unit tests.
CFLAGS="$CFLAGS -DJX_MAX_WORK=2000000 -DJX_MAX_ELEMENTS=1000000 -DJX_MAX_BYTES=16777216"
# Smaller protocol frame limits, so that inputs reach the over-the-limit paths
# (doc/work-queue-protocol.md section 9); the real limits are unit-tested.
CFLAGS="$CFLAGS -DWQ_MAX_MSG=65536 -DWQ_MAX_DATA=4096"
INC="-I$SRCDIR"
for d in "$SRCDIR"/*/src "$SRCDIR"/*/src/*/; do [ -d "$d" ] && INC="$INC -I${d%/}"; done

# Library sources each target needs (its component and those to its left).
sources_for() {
	local comp=$1 c out=""
	for c in dttools resource_monitor work_queue batch_drivers makeflow; do
		out="$out $(ls "$SRCDIR"/$c/src/*.c "$SRCDIR"/$c/src/*/*.c 2>/dev/null | grep -v '_main\.c$')"
		[ "$c" = "$comp" ] && break
	done
	echo "$out"
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$SRCDIR"/*/test/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi

status=0
for t in "${targets[@]}"; do
	src=$(ls "$SRCDIR"/*/test/"$t".c)
	comp=$(basename "$(dirname "$(dirname "$src")")")
	bin=$OUT/$t
	if ! clang $CFLAGS $INC -o "$bin" "$src" $(sources_for "$comp") $DEP_LIBS -lm 2>"$OUT/$t.build.log"; then
		echo "fuzz: $t does not build:"
		tail -20 "$OUT/$t.build.log"
		status=1
		continue
	fi
	corpus=$OUT/$t.corpus
	mkdir -p "$corpus"
	seeds=$SRCDIR/test/fuzz-seeds/$t
	[ -d "$seeds" ] && cp -n "$seeds"/* "$corpus"/ 2>/dev/null
	echo "fuzz: running $t for ${SECONDS_EACH}s"
	(cd "$OUT" && "$bin" -max_total_time="$SECONDS_EACH" -timeout=60 -rss_limit_mb=2048 \
		-max_len=4096 -print_final_stats=1 "$corpus" >"$OUT/$t.log" 2>&1)
	rc=$?
	if [ $rc != 0 ]; then
		echo "fuzz: $t FAILED (exit $rc); log $OUT/$t.log; reproducers in $OUT:"
		grep -E "ERROR|SUMMARY|Test unit written" "$OUT/$t.log" | head -10
		status=1
	else
		grep -E "stat::number_of_executed_units|cov:" "$OUT/$t.log" | tail -2
	fi
done
exit $status
