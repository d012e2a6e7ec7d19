#!/bin/bash
# images.sh DIR: make the test cluster's two images as docker-save tarballs in DIR, without a
# registry: DIR/pause.tar (registry.local/pause:3.10, the sandbox image: a static pause
# program) and DIR/busybox.tar (docker.io/library/busybox:local: busybox with its applets,
# and memhog for out-of-memory tests). Pods use `image: busybox:local` with
# `imagePullPolicy: Never`. Needs gcc with a static libc, /bin/busybox (busybox-static), python3.
# The archives are written by the project's image builder (htc_worker_image --rootfs).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: images.sh DIR}
mkdir -p "$OUT"
W=$(mktemp -d "$OUT/.images.XXXXXX")
trap 'rm -rf "$W"' EXIT

mkdir -p "$W/pause"
gcc -static -O2 -o "$W/pause/pause" "$HERE/images/pause.c"
IMAGE=$HERE/../../batch_drivers/src/k8s/htc_worker_image.py
python3 "$IMAGE" --rootfs "$W/pause" -o "$OUT/pause.tar.new" --name registry.local/pause:3.10 --entrypoint /pause >/dev/null

R=$W/busybox
mkdir -p "$R/bin" "$R/tmp" "$R/etc" "$R/proc" "$R/sys" "$R/dev" "$R/root" "$R/var/run"
chmod 1777 "$R/tmp"
cp /bin/busybox "$R/bin/busybox"
for a in $("$R/bin/busybox" --list); do
	[ "$a" = busybox ] || ln -s busybox "$R/bin/$a"
done
gcc -static -O2 -o "$R/bin/memhog" "$HERE/images/memhog.c"
echo "root:x:0:0:root:/root:/bin/sh" >"$R/etc/passwd"
echo "root:x:0:" >"$R/etc/group"
python3 "$IMAGE" --rootfs "$R" -o "$OUT/busybox.tar.new" --name docker.io/library/busybox:local >/dev/null
mv "$OUT/pause.tar.new" "$OUT/pause.tar"
mv "$OUT/busybox.tar.new" "$OUT/busybox.tar"
