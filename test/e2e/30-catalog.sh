#!/bin/bash
# 30-catalog.sh: end-to-end tests of catalog_server, catalog_update and catalog_query
# (doc/catalog.md): updates over UDP and HTTP, server-set keys, filters, expiry, bad input of
# every kind (the server answers with a clear error and keeps serving), slow and excess
# connections, and host lists whose first server is down.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin catalog_server catalog_update catalog_query
command -v python3 >/dev/null || test_skip_all "python3 is missing"
command -v curl >/dev/null || test_skip_all "curl is missing"

# start_catalog ARGS...: a catalog server on a free port; sets P and C (its host:port).
start_catalog() {
	test_daemon_start port "$BIN/catalog_server" -p 0 -Z port -d catalog "$@"
	P=$DAEMON_PORT
	C=127.0.0.1:$P
	SERVER_PID=$DAEMON_PID
}

# q [QUERY]: GET /query.json[?QUERY] into q.json.
q() {
	curl -sS -o q.json "http://$C/query.json${1:+?$1}"
}

# count [QUERY]: the number of records a query returns.
count() {
	q "${1:-}" && python3 -c 'import json; print(len(json.load(open("q.json"))))'
}

# has_n N [QUERY]: the query returns N records.
has_n() {
	[ "$(count "${2:-}")" = "$1" ]
}

# http REQUEST-TEXT: send the bytes of REQUEST-TEXT (with \r, \n, \xHH escapes) over TCP, print the whole answer (status line first).
http() {
	python3 - "$P" "$1" <<'PYEOF'
import codecs, os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(codecs.escape_decode(os.fsencode(sys.argv[2]))[0])
out = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    out += d
sys.stdout.write(out.decode("latin-1"))
PYEOF
}

# alive: the server still runs and answers.
alive() {
	kill -0 "$SERVER_PID"
	curl -sS -f -o /dev/null "http://$C/query.json"
}

# stop_clean: SIGTERM the server; it must exit 0 without any sanitizer report (meaningful
# when BUILD is a sanitizer build).
stop_clean() {
	kill -TERM "$SERVER_PID"
	local rc=0
	wait "$SERVER_PID" || rc=$?
	if [ $rc != 0 ] || grep -q "Sanitizer" daemon.1.log; then
		echo "server exit status $rc; log:" >&2
		tail -n 30 daemon.1.log >&2
		return 1
	fi
}

master() { # master NAME PORT PROJECT [EXTRA-JSON]
	echo "{\"type\":\"wq_master\",\"name\":\"$1\",\"port\":$2,\"project\":\"$3\"${4:+,$4}}"
}

test_expect_success 'updates over UDP and HTTP appear in query.json with address and lastheard' '
	start_catalog
	before=$(date +%s)
	master h1 9001 alpha | "$BIN/catalog_update" --udp -C "$C" -
	master h2 9002 beta "\"address\":\"6.6.6.6\",\"lastheard\":1" >rec.json
	"$BIN/catalog_update" --http -C "$C" rec.json
	test_wait_until 30 has_n 2
	jget q.json 0.name | grep -x h1
	jget q.json 0.address | grep -x 127.0.0.1
	jget q.json 1.address | grep -x 127.0.0.1
	lh=$(jget q.json 1.lastheard)
	[ "$lh" -ge "$before" ] && [ "$lh" -le "$(date +%s)" ]
	jget q.json 1.port | grep -x 9002
	grep -q "new record wq_master|127.0.0.1|h1|9001 (UDP" daemon.1.log
	grep -q "new record wq_master|127.0.0.1|h2|9002 (HTTP" daemon.1.log
	# The same identity replaces the record.
	master h1 9001 alpha2 | "$BIN/catalog_update" --http -C "$C" -
	has_n 2
	jget q.json 0.project | grep -x alpha2
	# A record over 1,200 bytes goes by HTTP in the default mode.
	pad=$(head -c 3000 /dev/zero | tr "\0" x)
	master big 9003 gamma "\"pad\":\"$pad\"" | "$BIN/catalog_update" -d catalog -C "$C" - 2>upd.log
	grep -q "by HTTP" upd.log
	has_n 3
	curl -sS "http://$C/" | grep -E "wq_master +big:9003 +gamma +127.0.0.1"
'

test_expect_success 'filters: project, type, any key, URL-encoded values; catalog_query' '
	start_catalog
	master a 1 "my proj" | "$BIN/catalog_update" --http -C "$C" -
	master b 2 other "\"workers\":7" | "$BIN/catalog_update" --http -C "$C" -
	echo "{\"type\":\"wq_factory\",\"name\":\"f\",\"port\":0,\"project\":\"other\"}" |
		"$BIN/catalog_update" --http -C "$C" -
	has_n 3
	has_n 1 "project=my%20proj"
	has_n 1 "project=my+proj&type=wq_master"
	has_n 2 "project=other"
	has_n 1 "project=other&type=wq_master"
	has_n 1 "workers=7"
	has_n 0 "project=nope"
	has_n 1 "port=0"
	"$BIN/catalog_query" -C "$C" --project other --type wq_master --json >out.json
	[ "$(jget out.json 0.name)" = b ]
	python3 -c "import json,sys; sys.exit(len(json.load(open(\"out.json\"))) != 1)"
	"$BIN/catalog_query" -C "$C" --field "project=my proj" --table >table.txt
	cat table.txt
	[ "$(wc -l <table.txt)" = 2 ]
	grep -E "^wq_master +a:1 +my proj +127.0.0.1" table.txt
	"$BIN/catalog_query" -C "$C" --field workers=7 --table | grep -E "b:2 .* 7 +- +-$"
	"$BIN/catalog_query" -C "$C" -w "workers > 6" >w.json
	[ "$(jget w.json 0.name)" = b ]
	"$BIN/catalog_query" -c "$C" -w "project == \"other\"" -w "type != \"wq_master\"" >w.json
	[ "$(jget w.json 0.name)" = f ]
	test_must_fail "$BIN/catalog_query" -C "$C" --where "project=x" 2>err.txt
	grep -q "expression: unexpected .=. at byte 7" err.txt
	code=$(curl -sS -o err.txt -w "%{http_code}" "http://$C/query.json?project")
	[ "$code" = 400 ] && grep -q "has no" err.txt
	code=$(curl -sS -o err.txt -w "%{http_code}" "http://$C/query.json?a=%zz")
	[ "$code" = 400 ] && grep -q "escape" err.txt
	test_must_fail "$BIN/catalog_query" -C "$C" --field noequals 2>err.txt
	grep -q "KEY=VALUE" err.txt
'

test_expect_success 'records expire after -l seconds, or after their own shorter lifetime' '
	start_catalog -l 2
	master short 1 p "\"lifetime\":1" | "$BIN/catalog_update" --http -C "$C" -
	master long 2 p "\"lifetime\":100" | "$BIN/catalog_update" --http -C "$C" -
	has_n 2
	test_wait_until 30 has_n 1
	[ "$(jget q.json 0.name)" = long ]
	# (the long record has a lifetime of 100 s: gone within 30 s means -l 2 cut it)
	test_wait_until 30 has_n 0
	test_wait_until 30 grep -q "expired" daemon.1.log
	# Refreshing keeps a record alive past its lifetime.
	for i in 1 2 3 4 5 6; do
		master fresh 3 p | "$BIN/catalog_update" --udp -C "$C" -
		sleep 0.5
	done
	has_n 1
'

test_expect_success 'bad updates get a 400 naming the problem; the server stays up' '
	start_catalog
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary "{\"type\":" "http://$C/update")
	[ "$code" = 400 ] && grep "invalid JSON at byte" e.txt
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary "{\"type\":\"x\",\"name\":\"h\"}" "http://$C/update")
	[ "$code" = 400 ] && grep "missing required key \"port\"" e.txt
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary "{\"type\":\"wq_master\",\"name\":\"h\",\"port\":1}" "http://$C/update")
	[ "$code" = 400 ] && grep "\"project\"" e.txt
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary "{\"type\":\"x\",\"name\":\"h\",\"port\":70000}" "http://$C/update")
	[ "$code" = 400 ] && grep "0..65535" e.txt
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary "[1]" "http://$C/update")
	[ "$code" = 400 ] && grep "not a JSON object" e.txt
	# Oversized body: refused from its Content-Length, before it is read.
	head -c 2000000 /dev/zero | tr "\0" " " >big.txt
	code=$(curl -sS -o e.txt -w "%{http_code}" --data-binary @big.txt "http://$C/update")
	[ "$code" = 413 ] && grep "body too large: 2000000 bytes" e.txt
	http "POST /update HTTP/1.0\r\n\r\n" | tee r.txt | head -1 | grep "411"
	http "POST /update HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" | head -1 | grep 501
	http "garbage garbage garbage\r\n\r\n" | tee r.txt | head -1 | grep " 400 "
	grep "request line" r.txt
	http "\\x01\\x02\\xff\\xfe\\n\\n" | head -1 | grep " 400 "
	http "GET / HTTP/3.0\r\n\r\n" | head -1 | grep " 505 "
	http "PUT /update HTTP/1.1\r\n\r\n" | tee r.txt | head -1 | grep " 405 "
	grep -i "^Allow: GET, POST" r.txt
	http "GET /update HTTP/1.1\r\n\r\n" | grep -i "^Allow: POST"
	http "POST /query.json HTTP/1.1\r\nContent-Length: 0\r\n\r\n" | head -1 | grep " 405 "
	http "GET /nothing HTTP/1.0\r\n\r\n" | head -1 | grep " 404 "
	python3 -c "print(\"GET /\" + \"a\" * 9000 + \" HTTP/1.1\r\n\r\n\", end=\"\")" >long.txt
	http "$(cat long.txt)" | head -1 | grep " 414 "
	# UDP garbage: dropped with a warning.
	python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for d in [b\"\\x00\\x01garbage\", b\"{\\\"type\\\":1}\", b\"{}\" * 30000]:
    s.sendto(d, (\"127.0.0.1\", $P))
"
	test_wait_until 30 grep -q "UDP update from 127.0.0.1:[0-9]* refused: invalid JSON" daemon.1.log
	test_wait_until 30 grep -q "refused: key \"type\" must be a string" daemon.1.log
	alive
	has_n 0
	# Still accepts good updates afterwards.
	master ok 1 p | "$BIN/catalog_update" --udp -C "$C" -
	test_wait_until 30 has_n 1
	stop_clean
'

test_expect_success 'catalog_update checks records locally and reports failures' '
	start_catalog
	echo "{\"type\":\"x\"}" >bad.json
	test_must_fail "$BIN/catalog_update" -C "$C" bad.json 2>err.txt
	grep "bad.json: missing required key \"name\"" err.txt
	test_must_fail "$BIN/catalog_update" -C "$C" missing.json 2>err.txt
	grep "missing.json: No such file" err.txt
	echo "{nope" | test_must_fail "$BIN/catalog_update" -C "$C" - 2>err.txt
	grep "invalid JSON" err.txt
	test_must_fail "$BIN/catalog_update" -C "bad host" - </dev/null 2>err.txt
	grep "bad catalog host" err.txt
	has_n 0
'

test_expect_success '-T (CCTools: the time allowed to a query) cuts a trickling client' '
	start_catalog -T 1 --idle-timeout 10
	python3 - "$P" <<-PYEOF
	import socket, sys, time
	t = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
	t.settimeout(0.2)
	t0 = time.time()
	out = b""
	# a byte every 0.2 s keeps the idle timer (10 s) quiet; the request deadline (1 s) is not
	while not out and time.time() - t0 < 8:
	    try:
	        t.sendall(b"G")
	        out = t.recv(100)
	    except socket.timeout:
	        pass
	    except OSError:
	        break
	print("answered after %.2f s: %r" % (time.time() - t0, out[:40]))
	assert out.startswith(b"HTTP/1.1 408"), out
	assert time.time() - t0 < 8
	PYEOF
'

test_expect_success 'a slow client is timed out with 408 while others are served' '
	start_catalog --idle-timeout 1
	python3 - "$P" "$C" <<-PYEOF
	import socket, sys, time, urllib.request
	port = int(sys.argv[1])
	slow = socket.create_connection(("127.0.0.1", port))
	slow.sendall(b"GET /query.json HTTP/1.1\r\nHost: x\r\n")  # never finished
	t0 = time.time()
	# Others are answered meanwhile.
	for i in range(5):
	    body = urllib.request.urlopen("http://%s/query.json" % sys.argv[2], timeout=5).read()
	    assert body == b"[]", body
	slow.settimeout(10)
	out = b""
	while True:
	    d = slow.recv(4096)
	    if not d:
	        break
	    out += d
	took = time.time() - t0
	print("slow client answered after %.2f s: %r" % (took, out[:40]))
	assert out.startswith(b"HTTP/1.1 408"), out
	assert took < 4, took
	# A client trickling one byte at a time is cut at the 30 s request deadline at the
	# latest; here the idle timer (1 s) catches a 2 s pause.
	t = socket.create_connection(("127.0.0.1", port))
	for c in b"GET /query":
	    t.sendall(bytes([c]))
	    time.sleep(0.05)
	time.sleep(2)
	t.settimeout(5)
	assert t.recv(100).startswith(b"HTTP/1.1 408")
	PYEOF
	grep -q "request not complete in time" daemon.1.log
	alive
	stop_clean
'

test_expect_success 'connections beyond --max-connections are closed at once' '
	start_catalog --max-connections 3 --idle-timeout 20
	python3 - "$P" <<-PYEOF
	import socket, sys, time
	port = int(sys.argv[1])
	held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
	for h in held:
	    h.sendall(b"GET / HTTP/1.1\r\n")
	time.sleep(0.3)
	extra = socket.create_connection(("127.0.0.1", port))
	extra.settimeout(5)
	try:
	    got = extra.recv(100)
	except ConnectionResetError:
	    got = b""
	assert got == b"", got
	for h in held:
	    h.close()
	time.sleep(0.3)
	s = socket.create_connection(("127.0.0.1", port))
	s.sendall(b"GET /query.json HTTP/1.0\r\n\r\n")
	s.settimeout(5)
	assert s.recv(100).startswith(b"HTTP/1.1 200")
	PYEOF
	grep -q "too many connections" daemon.1.log
	alive
	stop_clean
'

test_expect_success 'host lists: the first server down, CATALOG_HOST, and no server at all' '
	start_catalog
	dead=$(python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])")
	export CATALOG_HOST="127.0.0.1:$dead,$C"
	master m 5 proj | "$BIN/catalog_update" --udp -
	test_wait_until 30 has_n 1
	"$BIN/catalog_query" --project proj --json >out.json
	[ "$(jget out.json 0.name)" = m ]
	# Over HTTP the dead host is reported (exit 2), the live one still stores it.
	master n 6 proj | test_must_fail "$BIN/catalog_update" --http - 2>err.txt
	grep "127.0.0.1:$dead" err.txt
	has_n 2
	# -C wins over CATALOG_HOST.
	CATALOG_HOST=127.0.0.1:$dead test_must_fail "$BIN/catalog_query" -t 3 2>err.txt
	grep "no catalog server answered" err.txt
	"$BIN/catalog_query" -C "$C" --json >out.json
	rc=0; CATALOG_HOST=127.0.0.1:$dead "$BIN/catalog_query" -t 3 >/dev/null 2>&1 || rc=$?
	[ $rc = 2 ]
'

test_expect_success 'bad command lines are refused; SIGTERM stops the server cleanly' '
	test_must_fail "$BIN/catalog_server" -p 70000 2>err.txt
	grep -- "-p 70000" err.txt
	test_must_fail "$BIN/catalog_server" -l 0 2>err.txt
	grep -- "-l 0" err.txt
	test_must_fail "$BIN/catalog_server" --bogus 2>err.txt
	grep "unknown option" err.txt
	start_catalog
	# The port is taken (TCP): a second server on it fails with a clear error.
	test_must_fail "$BIN/catalog_server" -p "$P" 2>err.txt
	grep "cannot bind" err.txt
	stop_clean
'

test_done
