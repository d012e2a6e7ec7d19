#!/bin/bash
# images.sh: a burst of tasks of one image archive on 4 workers, two builds side by side (e.g. one
# without image-aware scheduling and one with it). Each run starts a master
# (work_queue/test/helper_image_master) with N tasks naming one `docker save` archive of MB MB
# (incompressible), then 4 one-core --containers workers, and prints the archive transfers (bytes
# the master sent / archive size) and the seconds from the submission to the first and to the
# last completion. A private dockerd is started and stopped by PID (test/lib/docker-lib.sh); the image
# is made from busybox and random bytes; nothing is pulled. Runs alternate between the builds.
# Usage: images.sh BUILD_A BUILD_B [RUNS]; IMG_TASKS (default 16), IMG_MB (default 100),
# IMG_SLEEP (the task's seconds, default 1).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
A=$1
B=$2
RUNS=${3:-3}
N=${IMG_TASKS:-16}
MB=${IMG_MB:-100}
SLEEP=${IMG_SLEEP:-1}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-bench-images.XXXXXX")

[ "$(id -u)" = 0 ] || { echo "images: needs root (dockerd)"; exit 0; }
. "$SRCDIR/test/lib/docker-lib.sh"
trap 'docker_stop; rm -rf "$WORK"' EXIT
docker_start "$WORK/docker" || { echo "images: dockerd did not start"; exit 1; }

d=$WORK/rootfs
mkdir -p "$d/data"
head -c $((MB << 20)) /dev/urandom >"$d/data/pad"
docker_busybox_image "$d" htc-bench-big:1 big && docker save -o "$WORK/big.tar" htc-bench-big:1 &&
	docker rmi htc-bench-big:1 >/dev/null || exit 1
SIZE=$(stat -c %s "$WORK/big.tar")

# one BUILD LABEL: one run; prints "LABEL transfers T first F last L".
one() {
	local build=$1 label=$2 r=$WORK/run
	rm -rf "$r"
	mkdir -p "$r"
	local args=() i
	for i in $(seq 1 "$N"); do
		args+=("t$i,archive,$WORK/big.tar,-,sleep $SLEEP")
	done
	"$build/work_queue/test/helper_image_master" "$r/port" "${args[@]}" >"$r/hm.out" 2>&1 &
	local hm=$! pids=()
	for i in $(seq 1 50); do [ -s "$r/port" ] && break; sleep 0.1; done
	for i in 1 2 3 4; do
		"$build/bin/work_queue_worker" -t 60 --containers --cores 1 -s "$r" localhost \
			"$(cat "$r/port")" >"$r/w$i.out" 2>&1 &
		pids+=($!)
	done
	wait $hm
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	awk -v l="$label" -v s="$SIZE" '
		$1 == "task" && $4 == "SUCCESS" { ok++ }
		/^bytes_sent/ { printf "%-8s transfers %.2f  first %6.2f s  last %6.2f s  (%d/%d tasks succeeded)\n", l, $2 / s, $6, $4, ok, n }
	' n="$N" "$r/hm.out"
	docker images -q | xargs -r docker rmi -f >/dev/null 2>&1
}

echo "images: $N tasks of one ${MB} MB archive (sleep $SLEEP), 4 one-core workers, $(nproc) cores"
for i in $(seq 1 "$RUNS"); do
	one "$A" A
	one "$B" B
done
