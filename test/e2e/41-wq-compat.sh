#!/bin/bash
# 41-wq-compat.sh: the Work Queue tools meet CCTools 9.9's (installed in /usr/bin): CCTools
# work_queue_status and catalog_query list our master from our catalog_server (GET
# /query/BASE64 with a JX filter, /query.text); and each side of the protocol says in one
# line that the other is CCTools or ours, instead of timing out.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow work_queue_worker catalog_server
CCTOOLS=${CCTOOLS_BIN:-/usr/bin}
for t in work_queue_status catalog_query work_queue_worker makeflow; do
	[ -x "$CCTOOLS/$t" ] || test_skip_all "CCTools $t is not installed in $CCTOOLS"
done
export OMPI_MCA_ess_singleton_isolated=1
MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
. "$TEST_SRCDIR/test/lib/wq-lib.sh"

# start_catalog: our catalog server on a free port; sets CAT (host:port).
start_catalog() {
	test_daemon_start cport "$BIN/catalog_server" -p 0 -Z cport -d catalog
	CAT=127.0.0.1:$DAEMON_PORT
}

# cc TOOL ARGS...: a CCTools tool, bounded.
cc() {
	timeout 30 "$CCTOOLS/$1" "${@:2}"
}

test_expect_success 'CCTools work_queue_status and catalog_query list our master' '
	start_catalog
	wf Makeflow <<-\EOF
	out.txt:
	    echo hi > out.txt
	EOF
	start_master -N compat-$$ -C $CAT Makeflow
	listed() { cc work_queue_status -C $CAT >st.txt 2>&1 && grep -q "compat-$$ .* $port " st.txt; }
	test_wait_until 20 listed || { cat st.txt; exit 1; }
	# every column filled, COMPLETE from tasks_done
	grep "compat-$$" st.txt | not grep -q "???"
	cc catalog_query -c $CAT -w "project==\"compat-$$\"" >q.txt
	grep -q "\"project\":\"compat-$$\"" q.txt
	grep -q "\"port\":$port" q.txt
	grep -q "\"lastheardfrom\":" q.txt
	cc catalog_query -c $CAT -w "project==\"other-$$\"" >none.txt
	not grep -q compat none.txt
	cc catalog_query -c $CAT -w "type==\"wq_master\" and port>0 and not (project==\"x\")" >m.txt
	grep -q "compat-$$" m.txt
	cc work_queue_status -C $CAT -M compat-$$ -l >l.txt
	grep -q "compat-$$" l.txt
	# the same command lines with our work_queue_status
	"$BIN/work_queue_status" -Q -C $CAT -M compat-$$ -l >ours.json
	[ "$(jget ours.json 0.project)" = compat-$$ ]
	"$BIN/work_queue_status" -C $CAT --where "project == \"compat-$$\" and port == $port" >ours.txt
	grep -q "compat-$$" ours.txt
	"$BIN/work_queue_status" -C $CAT --where "port < 0" >none.txt
	not grep -q "compat-$$" none.txt
	# a CCTools worker given -M finds our master through our catalog, and is told
	cc work_queue_worker -M compat-$$ -C $CAT -t 60 >ccw.out 2>&1
	grep -q "a CCTools work_queue_worker (version .*) connected" mf.out
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat out.txt)" = hi ]
'

test_expect_success 'the catalog answers /query/BASE64 errors, /query.text, 404 and 405 clearly' '
	start_catalog
	echo "{\"type\":\"wq_master\",\"name\":\"h1\",\"port\":9,\"project\":\"p1\"}" |
		"$BIN/catalog_update" -C $CAT --http -
	q() { curl -s -o body.txt -w "%{http_code}" "http://$CAT$1"; }
	[ "$(q /query/$(printf "type = 1" | base64))" = 400 ]
	grep -q "bad query: expression: unexpected .=. at byte 5" body.txt
	[ "$(q /query/@@@)" = 400 ]
	grep -q "not base64" body.txt
	[ "$(q /query/$(printf "project==\"p1\"" | base64))" = 200 ]
	grep -q "\"name\":\"h1\"" body.txt
	[ "$(q /query/$(printf "like(project, \"^p\") && port < 10" | base64 -w0))" = 200 ]
	grep -q "\"name\":\"h1\"" body.txt
	[ "$(q /query/$(printf "like(project, \"^x\")" | base64 -w0))" = 200 ]
	not grep -q h1 body.txt
	[ "$(q /query.text)" = 200 ]
	grep -qx "project p1" body.txt
	grep -qx "port 9" body.txt
	[ "$(q /nothing)" = 404 ]
	[ "$(q /query.html)" = 404 ]
	grep -q "/query/BASE64" body.txt
	[ "$(curl -s -o body.txt -w "%{http_code}" -d x "http://$CAT/query.text")" = 405 ]
	grep -q "use GET" body.txt
'

test_expect_success 'CCTools command lines of catalog_update and catalog_query run here; CCTools updates are stored' '
	start_catalog
	echo "{\"type\":\"wq_master\",\"name\":\"h2\",\"port\":7,\"project\":\"p2\",\"workers\":3}" >rec.json
	"$BIN/catalog_update" -c $CAT -f rec.json
	"$BIN/catalog_query" -c $CAT -w "workers > 2 and project == \"p2\"" >q.json
	[ "$(jget q.json 0.name)" = h2 ]
	"$BIN/catalog_query" -c $CAT -w "workers > 3" >none.json
	python3 -c "import json,sys; sys.exit(len(json.load(open(\"none.json\"))) != 0)"
	# a record sent by CCTools catalog_update (UDP, with its host fields) is stored
	echo "{\"type\":\"wq_master\",\"name\":\"h3\",\"port\":8,\"project\":\"p3\"}" >cc.json
	cc catalog_update -c $CAT -f cc.json
	stored() { "$BIN/catalog_query" -c $CAT -w "project == \"p3\"" | grep -q "\"port\": 8"; }
	test_wait_until 20 stored
	# a large record (CCTools compresses what it sends over UDP beyond 1 KB)
	python3 -c "import json; print(json.dumps({\"type\": \"wq_master\", \"name\": \"h4\", \"port\": 9, \"project\": \"p4\", \"pad\": \"x\" * 3000}))" >big.json
	cc catalog_update -c $CAT -f big.json
	big() { "$BIN/catalog_query" -c $CAT -w "project == \"p4\"" | grep -q "xxxxxxxxxx"; }
	test_wait_until 20 big
'

test_expect_success 'a CCTools worker meets our master: one line in the master, the worker exits' '
	wf Makeflow <<-\EOF
	out.txt:
	    echo hi > out.txt
	EOF
	start_master Makeflow
	rc=0
	cc work_queue_worker -t 60 127.0.0.1 $port >ccw.out 2>&1 || rc=$?
	cat ccw.out
	[ $rc = 0 ]
	said() { grep -q "a CCTools work_queue_worker (version .*) connected: CCTools workers cannot serve this master" mf.out; }
	test_wait_until 20 said
	[ $(grep -c CCTools mf.out) = 1 ]
	start_worker --cores 1 localhost $port
	finish
	[ "$(cat out.txt)" = hi ]
'

test_expect_success 'our worker meets a CCTools master: one line, exit 2 (no retrying for ever)' '
	wf Makeflow <<-\EOF
	out.txt:
	    echo hi > out.txt
	EOF
	"$CCTOOLS/makeflow" -T wq -p 0 -Z ccport Makeflow >ccmf.out 2>&1 &
	test_track_pid $!
	test_wait_for_file ccport 30
	rc=0
	timeout 60 "$WORKER" --connect-timeout 50 127.0.0.1 $(cat ccport) >w.out 2>&1 || rc=$?
	cat w.out
	[ $rc = 2 ]
	grep -q "a CCTools Work Queue master (version .*): this worker cannot serve it" w.out
	[ $(wc -l <w.out) = 1 ]
	# work_queue_status HOST PORT says the same instead of a vague failure
	rc=0
	timeout 60 "$BIN/work_queue_status" 127.0.0.1 $(cat ccport) >st.out 2>&1 || rc=$?
	cat st.out
	[ $rc = 1 ]
	grep -q "a CCTools Work Queue master (version .*): use CCTools. work_queue_status for it" st.out
'

test_done
