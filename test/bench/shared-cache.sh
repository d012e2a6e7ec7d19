#!/bin/bash
# shared-cache.sh: N workers on one machine (default 8), every task needing one archive of
# incompressible bytes (default 200 MB), run twice side by side: N private caches, then one
# shared store (work_queue_worker --shared-cache, doc/work-queue-shared-cache.md). Prints the
# bytes the master sent (its transactions log), the bytes the caches hold on the disk (du,
# each file counted once however many links it has) and the time until all N workers have run
# a task. Usage: shared-cache.sh [BUILD]; SC_MB, SC_WORKERS.
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRCDIR/build}
MB=${SC_MB:-200}
N=${SC_WORKERS:-8}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-shared-cache.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT

head -c $((MB * 1000000)) /dev/urandom >"$WORK/image.tar"
# Every rule waits until all N have started (so each of the N workers runs one), then checks
# the archive's size (the archive is in its sandbox: the time measured is the distribution's).
{
	for i in $(seq 1 "$N"); do
		printf 'out.%d: image.tar\n\ttouch %s/started.%d; until [ `ls %s | grep -c ^started` -ge %d ]; do sleep 0.05; done; stat -c %%s image.tar > out.%d\n' \
			"$i" "$WORK" "$i" "$WORK" "$N" "$i"
	done
} >"$WORK/Makeflow"

# run MODE: one run with N workers (MODE private or shared); prints one result line.
run() {
	local mode=$1 d=$WORK/$1
	mkdir -p "$d"
	cp "$WORK/Makeflow" "$d/"
	ln "$WORK/image.tar" "$d/image.tar"
	rm -f "$WORK"/started.*
	local extra=()
	[ "$mode" = shared ] && extra=(--shared-cache "$d/store")
	local s e
	s=$(date +%s.%N)
	(cd "$d" && exec "$BUILD/bin/makeflow" -T wq -p 0 -Z port -L tx.log --progress=quiet \
		--batch-option prefetch=0 Makeflow >mf.out 2>&1) &
	local mf=$!
	pids+=("$mf")
	until [ -s "$d/port" ]; do sleep 0.02; done
	local port
	port=$(cat "$d/port")
	for i in $(seq 1 "$N"); do
		"$BUILD/bin/work_queue_worker" -t 60 --single-shot --cores 1 --keep-cache \
			-s "$d/w$i" "${extra[@]}" localhost "$port" >>"$d/workers.out" 2>&1 &
		pids+=("$!")
	done
	if ! wait "$mf"; then
		echo "shared-cache: the $mode run failed; see $d/mf.out" >&2
		cat "$d/mf.out" >&2
		return 1
	fi
	e=$(date +%s.%N)
	wait
	for i in $(seq 1 "$N"); do
		[ "$(cat "$d/out.$i")" = $((MB * 1000000)) ] || {
			echo "shared-cache: $mode: task $i did not see the whole archive" >&2
			return 1
		}
	done
	local sent cached
	sent=$(awk '$3 == "TRANSFER" && $4 == "INPUT" && $9 == "cache" {s += $7} END {print s + 0}' \
		"$d/tx.log")
	cached=$(du -sb --exclude=tasks "$d"/w* ${extra:+"$d/store"} | awk '{s += $1} END {print s}')
	python3 -c "print('%-8s %3d workers  master sent %7.1f MB  caches hold %7.1f MB  all ran in %6.2f s' % ('$mode', $N, $sent / 1e6, $cached / 1e6, $e - $s))"
}

echo "shared cache: $N workers, each task needs one $MB MB archive of random bytes ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(df -T "$WORK" | awk 'NR == 2 {print $2}'))"
run private || exit 1
run shared || exit 1
