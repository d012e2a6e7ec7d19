#!/bin/bash
# 04-install.sh: the installed tree as a user sees it (doc/install.md). `make install` into a
# temporary prefix puts exactly the listed files there; each installed header compiles alone;
# a small application (test/install/install_app.c) builds with nothing but pkg-config, against
# the shared libraries and against the static ones, and runs a real task on a worker started
# from the installed bin/. Also: every program and shared library names only the libraries
# it uses (doc/design.md, "Build"), and uninstall removes everything install put.
. "$(dirname "$0")/../lib/test-lib.sh"
command -v pkg-config >/dev/null || test_skip_all "pkg-config is not installed"
command -v readelf >/dev/null || test_skip_all "readelf is not installed (binutils)"
test_require_bin work_queue_worker

# Two installs shared by the cases: the default one (static and shared libraries) and one made
# with SHARED=no, where the linker can only find the static libraries.
INST=$TEST_ROOT/prefix
SINST=$TEST_ROOT/static-prefix
APP_SRC=$TEST_SRCDIR/test/install/install_app.c
HEADERS="batch_queue.h category.h htc_error.h rmonitor.h rmsummary.h work_queue.h"
LIBS="dttools rmonitor work_queue batch"
PCS="htc-batch htc-dttools htc-rmonitor htc-work-queue"
VERSION=$(cat "$TEST_SRCDIR/VERSION")

# needed FILE: the NEEDED entries of FILE, one a line.
needed() {
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# run_app APP [ENV...]: runs APP as the master, a worker from the installed bin/ against its
# port, and checks that the task's output came back.
run_app() {
	local app=$1
	shift
	test_daemon_start port env "$@" "$app" port out.txt
	local mpid=$DAEMON_PID
	"$INST/bin/work_queue_worker" -s "$PWD/wd" -t 30 127.0.0.1 "$DAEMON_PORT" >worker.log 2>&1 &
	test_track_pid $!
	local rc=0
	wait $mpid || rc=$?
	cat daemon.*.log
	[ $rc = 0 ] || { cat worker.log; return 1; }
	grep -q "install_app: task 1: SUCCESS, exit 0" daemon.*.log
	[ "$(cat out.txt)" = "HELLO FROM AN INSTALLED LIBWORK_QUEUE" ]
}

test_expect_success 'make install puts the programs, libraries, headers and .pc files listed, nothing else' '
	make -s -C "$TEST_SRCDIR" B="$BUILD" install PREFIX="$INST" >log 2>&1 || { cat log; exit 1; }
	make -s -C "$TEST_SRCDIR" B="$BUILD" install PREFIX="$SINST" SHARED=no >log 2>&1 || { cat log; exit 1; }
	abi=$(readelf -d "$INST/lib/libwork_queue.so" | sed -n "s/.*SONAME.*\[libwork_queue\.so\.\(.*\)\]/\1/p")
	[ -n "$abi" ]
	{
		for p in $(ls "$BIN"); do echo "bin/$p"; done
		for h in $HEADERS; do echo "include/htc/$h"; done
		for l in $LIBS; do
			echo "lib/lib$l.a"
			echo "lib/lib$l.so"
			echo "lib/lib$l.so.$abi"
			echo "lib/lib$l.so.$VERSION"
		done
		for p in $PCS; do echo "lib/pkgconfig/$p.pc"; done
		for m in "$TEST_SRCDIR"/doc/man/*.1; do [ -e "$m" ] && echo "share/man/man1/${m##*/}"; done
	} | sort >expected
	(cd "$INST" && find . ! -type d | sed "s|^\./||" | sort) >got
	diff expected got
	grep -v "\.so" expected >expected.static
	(cd "$SINST" && find . ! -type d | sed "s|^\./||" | sort) >got.static
	diff expected.static got.static
	# The links: lib*.so -> lib*.so.ABI -> lib*.so.VERSION, which carries that soname.
	for l in $LIBS; do
		[ "$(readlink "$INST/lib/lib$l.so")" = "lib$l.so.$abi" ]
		[ "$(readlink "$INST/lib/lib$l.so.$abi")" = "lib$l.so.$VERSION" ]
		readelf -d "$INST/lib/lib$l.so.$VERSION" | grep -q "SONAME.*\[lib$l\.so\.$abi\]"
	done
	grep -q "^prefix=$INST\$" "$INST/lib/pkgconfig/htc-work-queue.pc"
'

test_expect_success 'each installed header compiles alone and includes only installed headers' '
	export PKG_CONFIG_PATH=$INST/lib/pkgconfig
	cflags=$(pkg-config --cflags htc-work-queue htc-batch)
	for h in "$INST"/include/htc/*.h; do
		n=${h##*/}
		printf "#include <%s>\nint main(void)\n{\n\treturn 0;\n}\n" "$n" >t.c
		cc -std=gnu11 -Wall -Wextra -Werror -Wstrict-prototypes $cflags -c -o t.o t.c ||
			{ echo "$n does not compile alone"; exit 1; }
		for inc in $(sed -n "s/^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$h"); do
			[ -f "$INST/include/htc/$inc" ] || { echo "$n includes $inc, which is not installed"; exit 1; }
		done
		not grep -q "config\.h\|HAVE_[A-Z]" "$h"
	done
'

test_expect_success 'pkg-config --libs: the application links the shared libwork_queue and runs a task' '
	export PKG_CONFIG_PATH=$INST/lib/pkgconfig
	libdir=$(pkg-config --variable=libdir htc-work-queue)
	[ "$libdir" = "$INST/lib" ]
	cc -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags htc-work-queue) -o app "$APP_SRC" \
		$(pkg-config --libs htc-work-queue)
	needed app | tee needed
	grep -qx "libwork_queue.so.[0-9.]*" needed
	LD_LIBRARY_PATH=$libdir ldd app | grep "libwork_queue.so" | grep -q "=> $libdir/"
	run_app ./app LD_LIBRARY_PATH="$libdir"
'

test_expect_success 'pkg-config --static: the application links the static libraries and runs a task' '
	export PKG_CONFIG_PATH=$SINST/lib/pkgconfig
	cc -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags htc-work-queue) -o app "$APP_SRC" \
		$(pkg-config --static --libs htc-work-queue)
	needed app | tee needed
	not grep -q "libwork_queue\|librmonitor\|libdttools" needed
	grep -qx "libuv.so.1" needed
	run_app ./app
'

test_expect_success 'the shared libraries need only what they use, and resolve everything' '
	cd "$INST/lib"
	for l in $LIBS; do
		f=lib$l.so.$VERSION
		echo "$f: $(needed "$f" | tr "\n" " ")"
		LD_LIBRARY_PATH=$PWD ldd -r "$f" >ldd.out 2>&1 || { cat ldd.out; exit 1; }
		not grep -q "undefined symbol\|not found" ldd.out
		LD_LIBRARY_PATH=$PWD ldd -u "$f" || { echo "$f names a library it does not use"; exit 1; }
	done
	rm -f ldd.out
'

test_expect_success 'the shared libraries define no symbol the C library defines (it would win)' '
	cd "$INST/lib"
	libc=$(ldd "lib$(set -- $LIBS; echo $1).so.$VERSION" | awk "/libc.so/ {print \$3}")
	nm -D --defined-only "$libc" | awk "{print \$3}" | sed "s/@.*//" | sort -u >libc.syms
	for l in $LIBS; do nm -D --defined-only "lib$l.so.$VERSION" | awk "{print \$3}"; done |
		sort -u >ours.syms
	comm -12 ours.syms libc.syms >clash.syms
	cat clash.syms
	[ ! -s clash.syms ]
	rm -f libc.syms ours.syms clash.syms
'

test_expect_success 'every program names only the libraries it uses' '
	for p in "$BIN"/*; do
		[ "$(head -c 2 "$p")" != "#!" ] || continue # a script (htc_worker_image)
		# a static program (htc_container_agent, which runs inside any image) names none
		readelf -d "$p" | grep -q "(NEEDED)" || { echo "${p##*/}: static"; continue; }
		echo "${p##*/}: $(needed "$p" | tr "\n" " ")"
		ldd -u "$p" || { echo "${p##*/} names a library it does not use"; exit 1; }
	done
	# the agent of shared containers is static: it runs in images without our libraries
	[ -z "$(needed "$BIN/htc_container_agent")" ]
	# A program that needs none of them does not link libcurl, OpenSSL or zlib.
	needed "$BIN/catalog_query" >cq
	not grep -q "libcurl\|libssl\|libcrypto\|libz" cq
'

test_expect_success 'every installed program has its man page, and man finds ours as the README sets MANPATH' '
	for p in $(ls "$INST/bin"); do
		[ -f "$INST/share/man/man1/$p.1" ] || { echo "no man page for $p"; exit 1; }
	done
	if command -v man >/dev/null; then
		export PATH=$INST/bin:$PATH MANPATH=$INST/share/man:
		for p in makeflow catalog_query catalog_update work_queue_worker; do
			[ "$(man -w $p)" = "$INST/share/man/man1/$p.1" ] || { man -w $p; exit 1; }
		done
	fi
'

test_expect_success 'make uninstall removes everything make install put' '
	make -s -C "$TEST_SRCDIR" B="$BUILD" uninstall PREFIX="$INST" >log 2>&1 || { cat log; exit 1; }
	make -s -C "$TEST_SRCDIR" B="$BUILD" uninstall PREFIX="$SINST" >log 2>&1 || { cat log; exit 1; }
	[ -z "$(find "$INST" "$SINST" ! -type d)" ]
'

test_done
