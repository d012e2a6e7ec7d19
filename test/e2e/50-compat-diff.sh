#!/bin/bash
# 50-compat-diff.sh: the differential harness. Every case of the compatibility corpus
# (test/compat/NAME/) runs through CCTools' makeflow (/usr/bin) and ours, with -T local
# and with -T wq (one worker of the same system); the exit statuses and the files each
# run leaves (names and bytes, the systems' own logs left out) must be equal, or the
# difference must be listed in test/compat/KNOWN. A listed difference that has gone
# away fails too, so that the list stays true. The corpus is described in
# test/compat/README.md.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
CCT_MF=${CCTOOLS_MAKEFLOW:-/usr/bin/makeflow}
CCT_WORKER=${CCTOOLS_WORKER:-/usr/bin/work_queue_worker}
CORPUS=$TEST_SRCDIR/test/compat
KNOWN=${COMPAT_KNOWN:-$CORPUS/KNOWN}
TEST_TIMEOUT=${COMPAT_TIMEOUT:-120}
# One makeflow run: CCTools 9.9 with -T wq never ends after a rule fails for good.
RUN_TIMEOUT=${COMPAT_RUN_TIMEOUT:-12}
export OMPI_MCA_ess_singleton_isolated=1

[ -x "$CCT_MF" ] && [ -x "$CCT_WORKER" ] ||
	test_skip_all "CCTools is not installed ($CCT_MF, $CCT_WORKER; test/install-deps.sh test)"

# The control files of a case; everything else in its directory is the workflow and its inputs.
CONTROL="args expect setup env modes normalize"

# manifest DIR: one line per file left in DIR, sorted: "d PATH", "l PATH TARGET" or
# "f PATH SHA256 SIZE"; the systems' own logs are left out.
manifest() {
	python3 - "$1" <<'EOF'
import hashlib, os, sys
top = sys.argv[1]
logs = (".makeflowlog", ".wqlog", ".wqlog.tr", ".batchlog", ".condorlog")
out = []
for d, dirs, files in os.walk(top):
    for n in dirs + files:
        p = os.path.join(d, n)
        r = "./" + os.path.relpath(p, top)
        if r.endswith(logs):
            continue
        if os.path.islink(p):
            out.append("l %s %s" % (r, os.readlink(p)))
        elif os.path.isdir(p):
            out.append("d " + r)
        else:
            b = open(p, "rb").read()
            out.append("f %s %s %d" % (r, hashlib.sha256(b).hexdigest()[:16], len(b)))
for line in sorted(out, key=lambda x: x[2:].split(" ")[0].encode()):
    print(line)
EOF
}

# http_start DIR: serve DIR on a loopback port (the manual's downloads); sets COMPAT_HTTP_PORT.
http_start() {
	python3 - "$1" "$PWD/http.port" >http.log 2>&1 <<'EOF' &
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
EOF
	test_track_pid $!
	test_wait_for_file http.port 20
	COMPAT_HTTP_PORT=$(cat http.port)
	export COMPAT_HTTP_PORT
}

# run_system SYS MODE CASE: copy the case to ./SYS-MODE/work and run each line of its args
# file there (one makeflow command line per line). Writes ./SYS-MODE/rc (the statuses),
# ./SYS-MODE/out.N (each run's output) and ./SYS-MODE/manifest.
run_system() {
	local sys=$1 mode=$2 case=$3 mf worker top=$PWD/$1-$2
	mkdir -p "$top"
	if [ "$sys" = cctools ]; then
		# Private copies: CCTools' makeflow names itself as an input of a nested rule, and
		# with -T wq the failed rule's clean-up removes that file; never the installed one.
		mkdir -p "$top/bin"
		cp "$CCT_MF" "$top/bin/makeflow"
		cp "$CCT_WORKER" "$top/bin/work_queue_worker"
		mf=$top/bin/makeflow worker=$top/bin/work_queue_worker
	else
		mf=$MF worker=$WORKER
	fi
	cp -a "$CORPUS/$case" "$top/work"
	local f
	for f in $CONTROL; do rm -f "$top/work/$f"; done
	: >"$top/rc"
	(
		cd "$top/work"
		unset CORES MEMORY DISK GPUS CATEGORY MAKEFLOW_BATCH_QUEUE_TYPE
		if [ -f "$CORPUS/$case/env" ]; then
			set -a
			. "$CORPUS/$case/env"
			set +a
		fi
		[ -f "$CORPUS/$case/setup" ] && bash "$CORPUS/$case/setup"
		local n=0 line
		local -a lines
		if [ -f "$CORPUS/$case/args" ]; then
			mapfile -t lines <"$CORPUS/$case/args"
		else
			lines=(Makeflow)
		fi
		for line in "${lines[@]}"; do
			[ -n "$line" ] || continue
			n=$((n + 1))
			eval "set -- $line"
			local out=$top/out.$n rc=0
			if [ "$mode" = local ]; then
				setsid -w timeout -k 5 "$RUN_TIMEOUT" "$mf" -T local "$@" >"$out" 2>&1 </dev/null || rc=$?
			else
				local port=$top/port.$n wpid=""
				setsid -w timeout -k 5 "$RUN_TIMEOUT" "$mf" -T wq -p 0 -Z "$port" "$@" >"$out" 2>&1 </dev/null &
				local mpid=$!
				test_track_pid $mpid
				# The worker starts once the master listens (a run that never listens,
				# e.g. a parse error or a clean, ends without one).
				while kill -0 $mpid 2>/dev/null && [ ! -s "$port" ]; do sleep 0.02; done
				if [ -s "$port" ]; then
					mkdir -p "$top/worker.$n"
					(cd "$top/worker.$n" && exec setsid "$worker" -t 60 --cores 2 localhost "$(cat "$port")") \
						>"$top/worker.$n.log" 2>&1 </dev/null &
					wpid=$!
					test_track_pid $wpid
				fi
				wait $mpid || rc=$?
				if [ -n "$wpid" ]; then
					kill $wpid 2>/dev/null || true
					wait $wpid 2>/dev/null || true
				fi
			fi
			echo "$rc" >>"$top/rc.raw"
			# Statuses compare as success (0) or failure: CCTools ends a parse error with
			# SIGTERM (143) where ours exits 1.
			if [ "$rc" = 0 ]; then echo 0; else echo fail; fi >>"$top/rc"
		done
	)
	# normalize: "FILE SED-SCRIPT" lines, applied to both runs' FILE before comparing (the
	# parts of an output that change from run to run, like a date).
	if [ -f "$CORPUS/$case/normalize" ]; then
		local file script
		while read -r file script; do
			[ -f "$top/work/$file" ] && sed -E -i "$script" "$top/work/$file"
		done <"$CORPUS/$case/normalize"
	fi
	manifest "$top/work" >"$top/manifest"
}

# known CASE MODE: the KNOWN line for this case and mode, if any ("case | mode | ...").
known() {
	awk -F'|' -v c="$1" -v m="$2" '
		/^[ \t]*#/ || NF < 3 { next }
		{ gsub(/^[ \t]+|[ \t]+$/, "", $1); gsub(/^[ \t]+|[ \t]+$/, "", $2) }
		$1 == c && ($2 == m || $2 == "*") { print; exit }' "$KNOWN"
}

# show SYS-MODE: what one run did, for a failure report.
show() {
	local n
	echo "--- $1: statuses $(tr '\n' ' ' <"$1/rc.raw")"
	for n in "$1"/out.*; do
		[ -f "$n" ] || continue
		echo "--- $n (last 15 lines)"
		tail -n 15 "$n"
	done
}

compat_case() {
	local case=$1 mode=$2
	if [ -f "$CORPUS/$case/modes" ] && ! grep -qw "$mode" "$CORPUS/$case/modes"; then
		echo "case $case does not run with -T $mode"
		return 0
	fi
	if [ -d "$CORPUS/$case/www" ] || grep -qs COMPAT_HTTP_PORT "$CORPUS/$case"/*; then
		http_start "$CORPUS/$case/www"
	fi
	run_system cctools "$mode" "$case"
	run_system ours "$mode" "$case"
	# expect: "fail", "any" (CCTools' own outcome is not what the manual says), or per
	# mode "local:fail wq:success"; the default is success.
	local expect=success w
	if [ -f "$CORPUS/$case/expect" ]; then
		for w in $(cat "$CORPUS/$case/expect"); do
			case "$w" in
			"$mode":*) expect=${w#*:} ;;
			*:*) ;;
			*) expect=$w ;;
			esac
		done
	fi
	local last
	last=$(tail -n 1 cctools-$mode/rc)
	# CCTools 9.9 ends with status 0 after a rule failed for good ("failed too many times").
	if [ "$last" = 0 ] && grep -qs "failed too many times" cctools-$mode/out.*; then last=fail; fi
	if [ "$expect" = fail ] && [ "$last" = 0 ]; then
		echo "the corpus expects $case to fail, but CCTools succeeded"
		show cctools-$mode
		return 1
	fi
	if [ "$expect" = success ] && [ "$last" != 0 ]; then
		echo "the corpus expects $case to succeed, but CCTools failed"
		show cctools-$mode
		return 1
	fi
	# A failing case: ours names the file and line of what failed.
	if [ "$expect" = fail ]; then
		local o
		o=$(ls ours-$mode/out.* | sort -t. -k2 -n | tail -n 1)
		grep -Eq '(Makeflow|\.jx|\.json|\.mf):[0-9]+' "$o" || {
			echo "ours did not name the workflow file and line of the failure:"
			cat "$o"
			return 1
		}
	fi
	local same=1
	cmp -s cctools-$mode/rc ours-$mode/rc || same=0
	cmp -s cctools-$mode/manifest ours-$mode/manifest || same=0
	local k
	k=$(known "$case" "$mode")
	if [ $same = 1 ] && [ -n "$k" ]; then
		echo "the difference listed in test/compat/KNOWN has gone away; remove its line:"
		echo "  $k"
		return 1
	fi
	if [ $same = 0 ] && [ -n "$k" ]; then
		echo "known difference: $k"
		diff cctools-$mode/manifest ours-$mode/manifest || true
		return 0
	fi
	if [ $same = 0 ]; then
		echo "$case differs with -T $mode (not listed in test/compat/KNOWN)"
		echo "--- files: CCTools (<) and ours (>)"
		diff cctools-$mode/manifest ours-$mode/manifest || true
		show cctools-$mode
		show ours-$mode
		return 1
	fi
	echo "$case: same statuses ($(tr '\n' ' ' <ours-$mode/rc)) and files with -T $mode"
}

# Every KNOWN line names a case of the corpus.
test_expect_success 'every line of test/compat/KNOWN names a case of the corpus' '
	awk -F"|" "/^[ \t]*#/ || NF < 3 { next } { gsub(/^[ \t]+|[ \t]+\$/, \"\", \$1); print \$1 }" \
		"$KNOWN" | sort -u >names
	while read -r c; do
		[ -d "$CORPUS/$c" ] || { echo "KNOWN names $c, which is not in test/compat/"; exit 1; }
	done <names
'

# The harness itself, on one case with -T local and a KNOWN list of the test's own: a
# difference not listed fails, and so does a listed one that has gone away.
if [ "${COMPAT_SELFTEST:-1}" = 1 ]; then
	self() {
		env -u TEST_COUNTS_FILE COMPAT_SELFTEST=0 COMPAT_MODES=local COMPAT_CASES=$1 \
			COMPAT_KNOWN=$PWD/known bash "$TEST_SRCDIR/test/e2e/50-compat-diff.sh" >self.out 2>&1
	}
	test_expect_success 'the harness fails on a difference that KNOWN does not list' '
		: >known
		test_must_fail self category-undefined
		grep -q "category-undefined differs with -T local (not listed" self.out
	'
	test_expect_success 'the harness fails on a KNOWN line whose difference has gone away' '
		echo "plain-rules | local | a difference that is not there | nowhere" >known
		test_must_fail self plain-rules
		grep -q "has gone away; remove its line" self.out
	'
	test_expect_success 'the harness passes a difference that KNOWN lists' '
		echo "category-undefined | * | listed | here" >known
		self category-undefined
		grep -q "^ok 2 - category-undefined (-T local)" self.out
	'
	test_expect_success 'without CCTools the suite skips, and fails under CI' '
		env -u TEST_COUNTS_FILE -u CI COMPAT_SELFTEST=0 CCTOOLS_MAKEFLOW=/nonexistent \
			bash "$TEST_SRCDIR/test/e2e/50-compat-diff.sh" >skip.out 2>&1
		grep -q "^skip - 50-compat-diff: CCTools is not installed" skip.out
		test_must_fail env -u TEST_COUNTS_FILE CI=true COMPAT_SELFTEST=0 CCTOOLS_MAKEFLOW=/nonexistent \
			bash "$TEST_SRCDIR/test/e2e/50-compat-diff.sh" >ci.out 2>&1
		grep -q "^not ok - 50-compat-diff cannot run under CI: CCTools is not installed" ci.out
	'
fi

cases=${COMPAT_CASES:-$(cd "$CORPUS" && for d in */; do echo "${d%/}"; done)}
modes=${COMPAT_MODES:-"local wq"}
for c in $cases; do
	for m in $modes; do
		test_expect_success "$c (-T $m): CCTools and ours agree" "compat_case $c $m"
	done
done

test_done
