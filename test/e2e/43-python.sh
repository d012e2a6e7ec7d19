#!/bin/bash
# 43-python.sh: the Python bindings (work_queue/python, imported as htc.work_queue) against
# real work_queue_worker processes of this build over loopback TCP. The virtual environment
# lives outside the work tree, under $HTC_PYVENV_CACHE (default /var/cache/htc-test/pyvenv),
# keyed by a hash of the package's files, the C headers it compiles against, the build
# directory and the Python version, so a run after the first only runs pytest.
. "$(dirname "$0")/../lib/test-lib.sh"
TEST_TIMEOUT=600

test_require_bin work_queue_worker
[ -e "$BUILD/lib/libwork_queue.so" ] || test_skip_all "no $BUILD/lib/libwork_queue.so (make all)"
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3) || test_skip_all "python3 is not installed"
"$PYTHON" -c "import venv, ensurepip" 2>/dev/null || test_skip_all "python3-venv is not installed"
"$PYTHON" -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" ||
	test_skip_all "Python.h is missing (python3-dev)"

PKG=$TEST_SRCDIR/work_queue/python
key=$({
	"$PYTHON" --version
	echo "$BUILD"
	cd "$TEST_SRCDIR" && find work_queue/python -type f \( -name "*.py" -o -name "*.c" -o -name "*.h" -o -name "*.toml" \) \
		! -path "*/build/*" ! -path "*/tests/*" | sort | xargs sha256sum
	cd "$TEST_SRCDIR" && sha256sum work_queue/src/master/work_queue.h resource_monitor/src/rmsummary.h \
		resource_monitor/src/category.h dttools/src/htc_error.h
} | sha256sum | cut -c1-16)
CACHE=${HTC_PYVENV_CACHE:-/var/cache/htc-test/pyvenv}
# Not root and no such cache: one of this user's own, still outside the work tree.
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/htc-test/pyvenv
VENV=$CACHE/$key

test_expect_success 'the package installs with pip into a virtual environment (cached)' '
	if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import htc.work_queue, pytest, wheel"; then
		mkdir -p "$CACHE"
		tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
		"$PYTHON" -m venv "$tmp/venv" >log 2>&1 || { cat log; rm -rf "$tmp"; exit 1; }
		# pip builds in the directory it is given: build from a copy, not in the work tree.
		cp -r "$PKG" "$tmp/src"
		rm -rf "$tmp/src/build" "$tmp/src"/src/*.egg-info
		{ "$tmp/venv/bin/python" -m pip install -q pytest wheel &&
			HTC_BUILD=$BUILD HTC_SRC=$TEST_SRCDIR "$tmp/venv/bin/python" -m pip install -q "$tmp/src"; } >log 2>&1 ||
			{ cat log; rm -rf "$tmp"; exit 1; }
		# Moved into place whole (bin/python -m works from anywhere); a concurrent run that
		# made it first wins.
		rm -rf "$VENV.old.$$"
		[ -e "$VENV" ] && mv "$VENV" "$VENV.old.$$"
		mv -T "$tmp/venv" "$VENV" || true
		rm -rf "$tmp" "$VENV.old.$$"
	fi
	"$VENV/bin/python" -c "import htc.work_queue as wq; print(wq.WorkQueue, wq.Task)"
	# It runs the library of this build (RUNPATH), not another one.
	ldd "$("$VENV/bin/python" -c "import htc.work_queue._work_queue as m; print(m.__file__)")" |
		grep -q "libwork_queue.so.* => $BUILD/lib/"
'

test_expect_success 'pytest: the bindings against real workers' '
	HTC_BIN=$BIN "$VENV/bin/python" -m pytest -q -p no:cacheprovider --basetemp="$PWD/pt" \
		"$PKG/tests" >out 2>&1 || { cat out; exit 1; }
	cat out
	grep -q " passed" out
	not grep -q "skipped" out
'

test_expect_success 'built against an installed prefix through pkg-config, it runs a task there' '
	command -v pkg-config >/dev/null || { echo "pkg-config is not installed"; exit 1; }
	make -s -C "$TEST_SRCDIR" B="$BUILD" install PREFIX="$PWD/prefix" >log 2>&1 || { cat log; exit 1; }
	cp -r "$PKG" src
	rm -rf src/build src/src/*.egg-info
	# The cached venv has setuptools and wheel: build without fetching anything.
	PKG_CONFIG_PATH=$PWD/prefix/lib/pkgconfig "$VENV/bin/python" -m pip wheel -q \
		--no-build-isolation --no-deps -w wheels ./src >log 2>&1 || { cat log; exit 1; }
	"$VENV/bin/python" -m zipfile -e wheels/*.whl site
	so=$(ls site/htc/work_queue/_work_queue*.so)
	readelf -d "$so" | grep -q "R.*PATH.*\[$PWD/prefix/lib\]"
	ldd "$so" | grep -q "libwork_queue.so.* => $PWD/prefix/lib/"
	cat >run.py <<-\EOF
	import subprocess, sys
	import htc.work_queue as wq
	q = wq.WorkQueue(port=0)
	w = subprocess.Popen([sys.argv[1], "-s", "wd", "-t", "30", "--single-shot", "127.0.0.1", str(q.port)])
	t = wq.Task("echo installed")
	q.submit(t)
	t = q.wait(30)
	print(t.result_str, t.return_status, t.output.strip())
	w.kill()
	EOF
	PYTHONPATH=$PWD/site "$VENV/bin/python" run.py "$PWD/prefix/bin/work_queue_worker" >out 2>err || { cat err; exit 1; }
	[ "$(cat out)" = "SUCCESS 0 installed" ]
'

test_expect_success 'without HTC_BUILD, HTC_PREFIX or pkg-config the build says what to set' '
	cp -r "$PKG" src
	rm -rf src/build src/src/*.egg-info
	PKG_CONFIG_PATH=$PWD/none test_must_fail env -u HTC_BUILD -u HTC_PREFIX \
		"$VENV/bin/python" -m pip wheel --no-build-isolation --no-deps -w wheels ./src >log 2>&1
	grep -q "cannot find libwork_queue: set HTC_BUILD" log
'

test_done
