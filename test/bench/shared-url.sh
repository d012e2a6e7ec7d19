#!/bin/bash
# shared-url.sh: N workers on one machine (default 8), every task needing one URL input of
# incompressible bytes (default 200 MB) served by a local HTTP server (python3's http.server),
# run twice side by side: N private caches, then one shared store (work_queue_worker
# --shared-cache; doc/work-queue-shared-cache.md, "URL objects"). The master is
# work_queue/test/helper_url_master (makeflow names no URL inputs). Prints the GETs the server
# answered, the bytes they carried, the bytes the caches hold on the disk (each file counted
# once however many links it has) and the time until all N workers have run a task.
# Usage: shared-url.sh [BUILD]; SU_MB, SU_WORKERS.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRCDIR/build}" && pwd)
MB=${SU_MB:-200}
N=${SU_WORKERS:-8}
HELPER=$BUILD/work_queue/test/helper_url_master
[ -x "$HELPER" ] || {
	echo "shared-url: $HELPER is not built (make tests)" >&2
	exit 1
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-shared-url.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www"
head -c $((MB * 1000000)) /dev/urandom >"$WORK/www/data.bin"
(cd "$WORK" && exec python3 -u -c '
import functools, http.server, os, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open("http.port.tmp", "w").write(str(s.server_address[1]))
os.rename("http.port.tmp", "http.port")
s.serve_forever()
' "$WORK/www" >"$WORK/http.log" 2>&1) &
pids+=("$!")
until [ -s "$WORK/http.port" ]; do
	kill -0 "${pids[0]}" 2>/dev/null || {
		echo "shared-url: the HTTP server did not start" >&2
		cat "$WORK/http.log" >&2
		exit 1
	}
	sleep 0.02
done
URL="http://127.0.0.1:$(cat "$WORK/http.port")/data.bin"

# run MODE: one run with N workers (MODE private or shared); prints one result line.
run() {
	local mode=$1 d=$WORK/$1
	mkdir -p "$d/started"
	local extra=() workers=()
	[ "$mode" = shared ] && extra=(--shared-cache "$d/store")
	local gets0 s e
	gets0=$(grep -c '"GET /data.bin ' "$WORK/http.log")
	s=$(date +%s.%N)
	(cd "$d" && exec "$HELPER" together port "$URL" "$d/started" "$N" >master.out 2>&1) &
	local m=$!
	pids+=("$m")
	until [ -s "$d/port" ]; do
		kill -0 "$m" 2>/dev/null || {
			echo "shared-url: the master of the $mode run did not start" >&2
			cat "$d/master.out" >&2
			return 1
		}
		sleep 0.02
	done
	local port
	port=$(cat "$d/port")
	for i in $(seq 1 "$N"); do
		"$BUILD/bin/work_queue_worker" -t 60 --single-shot --cores 1 --keep-cache \
			-s "$d/w$i" "${extra[@]}" localhost "$port" >>"$d/workers.out" 2>&1 &
		pids+=("$!")
		workers+=("$!")
	done
	if ! wait "$m"; then
		echo "shared-url: the $mode run failed; see $d/master.out" >&2
		cat "$d/master.out" >&2
		return 1
	fi
	e=$(date +%s.%N)
	wait "${workers[@]}"
	for i in $(seq 1 "$N"); do
		[ "$(cat "$d/t$i.txt")" = $((MB * 1000000)) ] || {
			echo "shared-url: $mode: task $i did not see the whole input" >&2
			return 1
		}
	done
	local gets cached
	gets=$(($(grep -c '"GET /data.bin ' "$WORK/http.log") - gets0))
	cached=$(du -sb --exclude=tasks "$d"/w* ${extra:+"$d/store"} | awk '{s += $1} END {print s}')
	python3 -c "print('%-8s %3d workers  server GETs %3d (%7.1f MB)  caches hold %7.1f MB  all ran in %6.2f s' % ('$mode', $N, $gets, $gets * $MB, $cached / 1e6, $e - $s))"
}

echo "shared URL: $N workers, each task needs one $MB MB URL input of random bytes ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(df -T "$WORK" | awk 'NR == 2 {print $2}'))"
run private || exit 1
run shared || exit 1
