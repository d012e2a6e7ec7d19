#!/bin/bash
# 44-report.sh: end-to-end tests of the run report. A real workflow with a failure, retries, an
# exhaustion and --monitor writes its report (makeflow --report, and makeflow_report from the log
# and the monitor directory); headless Chromium renders it (screenshot, DOM, console), and the
# page must hold every section, its SVG plots, the failed rules with their file:line and stderr,
# no console message and no reference outside the file. Bad input gives a clear message naming
# the file and line, or a report that says what was missing. makeflow_viz -D svg/png draws
# through Graphviz, and says so when dot is missing.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow makeflow_report makeflow_viz resource_monitor
command -v chromium >/dev/null || test_skip_all "chromium is not installed (test/install-deps.sh test)"
command -v dot >/dev/null || test_skip_all "graphviz is not installed (test/install-deps.sh test)"

MF=$BIN/makeflow
REP=$BIN/makeflow_report
VIZ=$BIN/makeflow_viz
export PATH=$BIN:$PATH # makeflow --monitor finds resource_monitor here

# Headless Chromium with its own profile, every request sent to a closed port (so nothing can
# be fetched), and console messages on stderr.
chrome() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$PWD/chrome-profile" --proxy-server=127.0.0.1:9 \
		--enable-logging=stderr --v=0 --window-size=1280,3200 "$@"
}

# render PAGE: PAGE.dom (the DOM after loading), PAGE.png (screenshot), PAGE.console (its
# console messages; must be empty for our reports).
render() {
	chrome --dump-dom "file://$PWD/$1" >"$1.dom" 2>"$1.chrome-err"
	chrome --screenshot="$PWD/$1.png" "file://$PWD/$1" >/dev/null 2>>"$1.chrome-err"
	grep -E ":CONSOLE[:(]" "$1.chrome-err" >"$1.console" || true
	test -s "$1.dom"
	test -s "$1.png"
	if [ -n "${REPORT_KEEP:-}" ]; then cp "$1.png" "$1.dom" "$REPORT_KEEP/" || true; fi
}

# every <svg> of the page is well-formed XML, and there are at least $2 of them
svgs_well_formed() {
	python3 - "$1" "$2" <<'EOF'
import re, sys, xml.dom.minidom
text = open(sys.argv[1]).read()
svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
assert len(svgs) >= int(sys.argv[2]), "only %d svg elements" % len(svgs)
for s in svgs:
    xml.dom.minidom.parseString(s)
print(len(svgs), "svg elements, all well-formed")
EOF
}

# a workflow with two categories of short rules, a rule that exceeds its memory, and a rule that
# fails (exit 3) after writing its stderr to an output file, retried once (-r 1)
workflow() {
	wf Makeflow <<'EOF2'
CATEGORY=prep
MEMORY=60
a.txt:
    echo a > a.txt
b.txt:
    echo b > b.txt
c.txt: a.txt b.txt
    cat a.txt b.txt > c.txt
CATEGORY=hog
MEMORY=30
hog.txt: a.txt
    python3 -c "x = bytearray(300 * 1024 * 1024); import time; time.sleep(2)"; echo > hog.txt
CATEGORY=bad
bad.txt bad.err: c.txt
    echo "error: disk <quota> & limits exceeded" > bad.err; exit 3
EOF2
}

test_expect_success 'makeflow --report: a real run with a failure, a retry and an exhaustion' '
	workflow
	test_must_fail "$MF" -j 2 -r 1 --monitor mon --report report.html Makeflow >mf.out 2>&1
	cat mf.out
	test -s report.html
	render report.html
	cat report.html.console
	test ! -s report.html.console
	for id in summary timeline concurrency resources failures dag categories failure-list; do
		grep -q "id=\"$id\"" report.html.dom || { echo "no #$id" >&2; false; }
	done
	svgs_well_formed report.html.dom 5
	grep -q "ended with failures" report.html.dom
	# five rules, one retried: six attempts, each a bar in both timelines
	grep -q "6 (1 retries)" report.html.dom
	test "$(grep -o "class=\"bar\"" report.html.dom | wc -l)" -eq 12
	# the failed rules, with file:line, how, and the kept stderr (escaped)
	test "$(grep -c "class=\"failed-rule\"" report.html.dom)" -eq 2
	grep -q "Makeflow:14" report.html.dom
	grep -q "Makeflow:11" report.html.dom
	grep -q "exit status 3" report.html.dom
	grep -q "exceeded its allocation" report.html.dom
	grep -q "error: disk &lt;quota&gt; &amp; limits exceeded" report.html.dom
	# measured per category, with the host of the summaries
	grep -q ">prep</td>" report.html.dom
	grep -q ">$(hostname)</text>" report.html.dom
	grep -q "Drawn by Graphviz" report.html.dom
	# nothing outside the file: no script, no link, no fetched resource
	not grep -Eiq "<script|<link|src=\"https?:|href=\"https?:|url\(|@import" report.html
'

test_expect_success 'makeflow_report LOG MONITOR_DIR gives the same report, and --no-dot our DAG' '
	workflow
	test_must_fail "$MF" -j 2 -r 1 --monitor mon Makeflow >mf.out 2>&1
	"$REP" -O r.html --no-dot Makeflow.makeflowlog mon
	render r.html
	test ! -s r.html.console
	svgs_well_formed r.html.dom 5
	grep -q "Drawn by makeflow_report (layered by depth)" r.html.dom
	test "$(grep -c "class=\"node\"" r.html.dom)" -eq 5
	test "$(grep -c "class=\"failed-rule\"" r.html.dom)" -eq 2
'

test_expect_success 'makeflow -X DIR --report: the report names the rules of the workflow it ran' '
	workflow
	mkdir sub
	test_must_fail "$MF" -X sub -r 1 --report r.html Makeflow >mf.out 2>&1
	test -s sub/r.html
	grep -q "Makeflow:14" sub/r.html
	grep -q ">bad</td>" sub/r.html
	not grep -q "was not found" sub/r.html
'

# start_waiting ARGS...: makeflow ARGS in the background (pid in mf) on one rule, line 2 of
# category wait, that runs until the file go appears.
start_waiting() {
	wf Makeflow <<EOF2
CATEGORY=wait
w.txt:
    while [ ! -e $PWD/go ]; do sleep 0.05; done; echo > w.txt
EOF2
	"$MF" "$@" Makeflow >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
}

test_expect_success 'makeflow_report on a running workflow shows its running rules' '
	start_waiting
	started() { grep -q "^N [0-9]* 0 2 " Makeflow.makeflowlog 2>/dev/null; }
	test_wait_until 30 started
	"$REP" -O r.html Makeflow.makeflowlog
	grep -q "not ended (running" r.html
	grep -q "rule 0 line 2 (wait): running" r.html
	touch go
	wait $mf
	"$REP" -O r2.html Makeflow.makeflowlog
	grep -q "<td id=\"run-status\">complete</td>" r2.html
	grep -q "rule 0 line 2 (wait): complete" r2.html
'

test_expect_success 'makeflow --report is rewritten while the run goes, and the page reloads itself' '
	start_waiting --report live.html --report-interval 1
	running_page() { grep -q "rule 0 line 2 (wait): running" live.html 2>/dev/null; }
	test_wait_until 60 running_page
	grep -q "<meta http-equiv=\"refresh\" content=\"1\">" live.html
	grep -q "not ended (running" live.html
	touch go
	wait $mf
	# the last page: complete, and it no longer reloads
	grep -q "<td id=\"run-status\">complete</td>" live.html
	not grep -q "http-equiv" live.html
	"$MF" --report-interval -1 Makeflow >bad.out 2>&1 && exit 1
	grep -q "option --report-interval: .-1. is not an integer >= 0" bad.out
'

test_expect_success 'a failed rule whose stderr was not kept: makeflow captured its last lines' '
	wf Makeflow <<EOF2
ok.txt:
    echo ok > ok.txt
bad.txt: ok.txt
    echo reading ref.fa; seq 1 40 >&2; echo "cannot open <ref.fa>" >&2; exit 5
EOF2
	test_must_fail "$MF" --report r.html Makeflow >mf.out 2>&1
	# the terminal still shows all of it, as it comes
	grep -qx "reading ref.fa" mf.out
	grep -qx "1" mf.out
	grep -q "cannot open <ref.fa>" mf.out
	# INFO.json keeps the last 20 lines of stderr (not stdout), the report shows them
	python3 -c "import json,sys; t = json.load(open(sys.argv[1]))[\"stderr_tail\"]; \
		lines = t.split(\"\\n\"); assert len(lines) == 20 and lines[0] == \"22\" and \
		lines[-1] == \"cannot open <ref.fa>\", lines" makeflow.failed.1/INFO.json
	grep -q "cannot open &lt;ref.fa&gt;" r.html
	not grep -qx "reading ref.fa" r.html
	render r.html
	test ! -s r.html.console
'

test_expect_success 'the console check sees a page that logs an error' '
	printf "<p>x</p><script>console.error(\"boom\")</script>\n" >bad.html
	render bad.html
	grep -q boom bad.html.console
'

test_expect_success 'without a monitor directory the report says the measurements are missing' '
	workflow
	test_must_fail "$MF" -r 1 Makeflow >mf.out 2>&1
	"$REP" -O r.html Makeflow.makeflowlog
	grep -q "no resource measurements: run makeflow with --monitor DIR" r.html
	"$REP" -O r2.html Makeflow.makeflowlog nowhere
	grep -q "the monitor directory nowhere does not exist" r2.html
	render r2.html
	test ! -s r2.html.console
'

test_expect_success 'a torn last line and a missing workflow are notes, not errors' '
	workflow
	"$MF" -c Makeflow >/dev/null 2>&1 || true
	printf "a:\n\techo a > a\n" >One
	"$MF" One >mf.out 2>&1
	printf "N 1795760723 0 2" >>One.makeflowlog
	mv One One.moved
	"$REP" -O r.html One.makeflowlog
	grep -q "incomplete line" r.html
	grep -q "the workflow file One was not found" r.html
	grep -q "The workflow was not loaded" r.html
'

test_expect_success 'a bad record stops makeflow_report with the file and line' '
	printf "a:\n\techo a > a\n" >One
	"$MF" One >mf.out 2>&1
	echo "garbage line" >>One.makeflowlog
	n=$(wc -l <One.makeflowlog)
	test_must_fail "$REP" -O r.html One.makeflowlog 2>err
	cat err
	grep -q "^makeflow_report: One.makeflowlog:$n: " err
	test ! -e r.html
'

test_expect_success 'a CCTools log, an empty file and a missing log are refused by name' '
	printf "# STARTED 1795760723\n" >cc.log
	test_must_fail "$REP" cc.log 2>err
	grep -q "^makeflow_report: cc.log:1: this is a CCTools makeflow log" err
	: >empty.log
	test_must_fail "$REP" empty.log 2>err
	grep -q "^makeflow_report: empty.log: no complete line: not a makeflow transaction log" err
	test_must_fail "$REP" absent.log 2>err
	grep -q "^makeflow_report: absent.log: No such file or directory" err
	test_must_fail "$REP" 2>err
	grep -q "no transaction log given" err
'

test_expect_success 'makeflow_viz -D svg and -D png draw through Graphviz' '
	workflow
	"$VIZ" -D svg Makeflow >dag.svg
	python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" dag.svg
	grep -q "<svg" dag.svg
	grep -q "hog.txt" dag.svg
	"$VIZ" -D png Makeflow >dag.png
	test "$(head -c 4 dag.png | od -An -c | tr -d " ")" = "211PNG"
	"$VIZ" -D dot Makeflow | dot -Tsvg >ref.svg
	grep -q "hog.txt" ref.svg
'

test_expect_success 'makeflow_viz -D png without Graphviz says what is missing' '
	workflow
	test_must_fail env PATH=/nonexistent "$VIZ" -D png Makeflow >out 2>err
	cat err
	grep -q "^makeflow_viz: -D png: Graphviz.s dot is not on the PATH (Debian: apt-get install graphviz)" err
	test ! -s out
	"$REP" -O r.html Makeflow.makeflowlog 2>/dev/null || true
'

test_done
