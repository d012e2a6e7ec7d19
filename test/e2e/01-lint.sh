#!/bin/bash
# 01-lint.sh: `make lint` (format, layering, banned calls, purpose comments, globals)
# and the build-system contract: warnings are errors, configure reports
# missing dependencies clearly, install honours DESTDIR and PREFIX (what it installs is
# checked in 04-install.sh).
. "$(dirname "$0")/../lib/test-lib.sh"

test_expect_success 'lint passes on the tree' '
	bash "$TEST_SRCDIR/test/lint.sh"
'

test_expect_success 'lint catches a layering violation, a banned call, a missing purpose comment and a global' '
	mkdir -p tree && cd tree
	mkdir -p test dttools/src makeflow/src resource_monitor/src work_queue/src batch_drivers/src
	cp "$TEST_SRCDIR/test/lint.sh" test/
	cp "$TEST_SRCDIR/.clang-format" .
	printf "/* top: a header of the rightmost component. */\n#ifndef TOP_H\n#define TOP_H\n#endif\n" >makeflow/src/top.h
	printf "/* low: includes a header to its right. */\n#include \"top.h\"\n" >dttools/src/low.c
	printf "/* uses a banned call. */\n#include <stdio.h>\nvoid f(char *d, const char *s);\nvoid f(char *d, const char *s)\n{\n\tsprintf(d, \"%%s\", s);\n}\n" >dttools/src/bad.c
	printf "int x;\n" >dttools/src/nocomment.c
	bash test/lint.sh >out 2>&1 && { cat out; exit 1; }
	cat out
	grep -q "layering: dttools/src/low.c (dttools) includes top.h of makeflow" out
	grep -q "banned function in dttools/src/bad.c" out
	grep -q "dttools/src/nocomment.c does not open with a comment" out
	grep -q "mutable state in a library: dttools/src/nocomment.c x" out
'

test_expect_success 'configure names the Debian package of a missing dependency' '
	mkdir bin
	# A pkg-config that knows nothing: every dependency is missing.
	printf "#!/bin/sh\nexit 1\n" >bin/pkg-config
	chmod +x bin/pkg-config
	cp "$TEST_SRCDIR/configure" "$TEST_SRCDIR/VERSION" .
	PKG_CONFIG=$PWD/bin/pkg-config ./configure >out 2>&1 && exit 1
	cat out
	grep -q "libuv.*MISSING.*apt-get install libuv1-dev" out
	grep -q "error: required dependencies are missing" out
	[ ! -e config.mk ]
'

test_expect_success 'configure rejects an unknown option' '
	cp "$TEST_SRCDIR/configure" .
	./configure --bogus >out 2>&1 && exit 1
	grep -q "unknown option .--bogus." out
'

test_expect_success 'make install honours DESTDIR and PREFIX, uninstall removes it' '
	make -s -C "$TEST_SRCDIR" install DESTDIR=$PWD/root PREFIX=/opt/htc >log 2>&1 || { cat log; exit 1; }
	test -f root/opt/htc/lib/libdttools.a
	test -L root/opt/htc/lib/libwork_queue.so
	test -f root/opt/htc/include/htc/work_queue.h
	# The headers are the public list only (doc/install.md): no internals, no config.h.
	test ! -e root/opt/htc/include/htc/debug.h
	test ! -e root/opt/htc/include/htc/config.h
	for pc in htc-dttools htc-rmonitor htc-work-queue htc-batch; do
		grep -q "^prefix=/opt/htc\$" root/opt/htc/lib/pkgconfig/$pc.pc
	done
	for p in $(ls "$BIN" 2>/dev/null); do test -x root/opt/htc/bin/$p; done
	make -s -C "$TEST_SRCDIR" uninstall DESTDIR=$PWD/root PREFIX=/opt/htc >log 2>&1
	test ! -e root/opt/htc/lib/libdttools.a
	test ! -e root/opt/htc/lib/libwork_queue.so
	test ! -e root/opt/htc/lib/pkgconfig/htc-work-queue.pc
	test ! -e root/opt/htc/include/htc
'

test_done
