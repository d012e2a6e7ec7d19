# http-lib.sh: a local HTTP server for suites that fetch URLs (sourced after test-lib.sh).

# serve_http DIR: an HTTP server for DIR on a free loopback port (python3's http.server; its PID
# is tracked and it is stopped with the suite's daemons); its access log is daemon.N.log. Sets
# HTTP_PORT and HTTP_LOG.
serve_http() {
	test_daemon_start http.port python3 -u -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
with open("http.port.tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os; os.rename("http.port.tmp", "http.port")
s.serve_forever()
' "$1"
	HTTP_PORT=$DAEMON_PORT
	HTTP_LOG=$(ls daemon.*.log | tail -n 1)
}
