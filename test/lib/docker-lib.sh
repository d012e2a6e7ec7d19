#!/bin/bash
# docker-lib.sh: a private Docker Engine for tests and benchmarks, sourced. docker_start DIR
# starts dockerd with its socket, data-root, exec-root and pidfile under DIR (no bridge, no
# iptables: containers use no network or the host's), exports DOCKER_HOST and DOCKERD (its
# PID), and waits until it answers. docker_stop stops it by PID (SIGTERM, up to 20 s, then
# SIGKILL) and unmounts whatever is still mounted under DIR. docker_busybox_image DIR NAME
# [MARKER] makes an image NAME from /bin/busybox with docker import (nothing is pulled); with
# MARKER, /etc/wq-marker in the image holds it.

# docker_start DIR: 0 when the engine answers within 30 s; else 1 with its log's tail on stderr.
docker_start() {
	DOCKER_DIR=$1
	mkdir -p "$DOCKER_DIR"
	export DOCKER_HOST=unix://$DOCKER_DIR/docker.sock
	dockerd -H "$DOCKER_HOST" --data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_DIR/exec" \
		--pidfile "$DOCKER_DIR/docker.pid" --bridge none --iptables=false --ip-masq=false \
		>"$DOCKER_DIR/dockerd.log" 2>&1 &
	DOCKERD=$!
	local i
	for i in $(seq 1 300); do
		docker info >/dev/null 2>&1 && return 0
		kill -0 "$DOCKERD" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 20 "$DOCKER_DIR/dockerd.log" >&2
	return 1
}

# docker_stop: a clean stop so that containerd, its shims and the overlay mounts go with it.
docker_stop() {
	[ -n "${DOCKERD:-}" ] || return 0
	kill -TERM "$DOCKERD" 2>/dev/null || true
	local i
	for i in $(seq 1 200); do
		kill -0 "$DOCKERD" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$DOCKERD" 2>/dev/null || true
	awk -v d="$DOCKER_DIR/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
	DOCKERD=
}

# docker_busybox_image DIR NAME [MARKER]: the rootfs is made in DIR.
docker_busybox_image() {
	local d=$1 name=$2 marker=${3:-}
	mkdir -p "$d/bin" "$d/tmp" "$d/etc"
	cp /bin/busybox "$d/bin/"
	local c
	for c in sh cat echo sleep ls dd tr wc id pwd touch rm mkdir head true false; do
		ln -sf busybox "$d/bin/$c"
	done
	[ -z "$marker" ] || echo "$marker" >"$d/etc/wq-marker"
	chmod 1777 "$d/tmp"
	tar -C "$d" -cf "$d.tar" . && docker import "$d.tar" "$name" >/dev/null
}
