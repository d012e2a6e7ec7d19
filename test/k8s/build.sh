#!/bin/bash
# build.sh: build the Kubernetes binaries the test cluster needs
# (kube-apiserver, kube-scheduler, kube-controller-manager, kubelet, kubectl)
# from the Go modules, once, into a cache outside the work tree:
#   $K8S_CACHE (default /var/cache/htc-test/k8s)/bin
# A stamp file (bin/.stamp) records the version and the binaries built; a
# later run that finds a matching stamp does nothing. The first build takes
# 10-19 minutes on 2 cores and leaves about 3.4 GB of Go caches behind.
#
# Go: Kubernetes 1.31 needs Go 1.22 or later. $K8S_GO when set, else the first
# of `go` on PATH, /usr/local/go/bin/go and /usr/lib/go/bin/go that is new
# enough is used. If only an older
# Go is there (Debian 12's golang-go is 1.19), that Go downloads the toolchain
# module golang.org/toolchain@$K8S_GO_TOOLCHAIN from the module proxy and the
# build uses the Go inside it.
set -u

K8S_VERSION=${K8S_VERSION:-v1.31.4}
K8S_CACHE=${K8S_CACHE:-/var/cache/htc-test/k8s}
K8S_GO_TOOLCHAIN=${K8S_GO_TOOLCHAIN:-v0.0.1-go1.22.12.linux-amd64}
BINARIES="kube-apiserver kube-scheduler kube-controller-manager kubelet kubectl"
HERE=$(cd "$(dirname "$0")" && pwd)

say() { echo "k8s-build: $*"; }
die() {
	echo "k8s-build: $*" >&2
	exit 1
}

stamp_text() { echo "$K8S_VERSION $BINARIES"; }

stamp=$K8S_CACHE/bin/.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stamp_text)" ]; then
	ok=1
	for b in $BINARIES; do [ -x "$K8S_CACHE/bin/$b" ] || ok=0; done
	if [ $ok = 1 ]; then
		say "cached $K8S_VERSION binaries in $K8S_CACHE/bin"
		exit 0
	fi
fi

mkdir -p "$K8S_CACHE/bin" "$K8S_CACHE/mod" || die "cannot create $K8S_CACHE"

# One build at a time: a second caller waits for the first and then finds
# the stamp.
exec 9>"$K8S_CACHE/.build.lock"
if ! flock -n 9; then
	say "another build holds $K8S_CACHE/.build.lock; waiting for it"
	flock 9
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stamp_text)" ]; then
		say "cached $K8S_VERSION binaries in $K8S_CACHE/bin"
		exit 0
	fi
fi

export GOMODCACHE=$K8S_CACHE/gomodcache
export GOCACHE=$K8S_CACHE/gocache
export GOPATH=$K8S_CACHE/gopath
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0

# go_minor GO: the minor version of that Go (22 for go1.22.5), 0 if unknown.
go_minor() {
	"$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p' | grep . ||
		"$1" version 2>/dev/null | sed -n 's/.* go1\.\([0-9][0-9]*\).*/\1/p' | grep . || echo 0
}

pick_go() {
	local old="" c m
	local candidates=("$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go/bin/go)
	[ -n "${K8S_GO:-}" ] && candidates=("$K8S_GO") # only that one
	for c in "${candidates[@]}"; do
		[ -n "$c" ] && [ -x "$c" ] || continue
		m=$(go_minor "$c")
		if [ "$m" -ge 22 ]; then
			GO=$c
			return 0
		fi
		[ -z "$old" ] && old=$c
	done
	[ -n "$old" ] || die "no Go found: install Debian's golang-go (test/install-deps.sh k8s) or set K8S_GO"
	say "$old is Go 1.$(go_minor "$old"); Kubernetes $K8S_VERSION needs 1.22 or later:"
	say "downloading golang.org/toolchain@$K8S_GO_TOOLCHAIN with it"
	local dir
	# Outside any module, `go mod download MOD@VER` fetches into GOMODCACHE;
	# -json names the directory it was unpacked into.
	dir=$(cd "$K8S_CACHE" && GO111MODULE=on GOFLAGS=-mod=mod "$old" mod download -json \
		"golang.org/toolchain@$K8S_GO_TOOLCHAIN" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	[ -n "$dir" ] && [ -d "$dir" ] || die "downloading golang.org/toolchain@$K8S_GO_TOOLCHAIN failed"
	# Module zips keep no file modes: make the toolchain's programs executable.
	chmod -R u+w "$dir" 2>/dev/null
	find "$dir/bin" "$dir/pkg/tool" -type f -exec chmod 0755 {} + || die "cannot chmod $dir"
	GO=$dir/bin/go
	m=$(go_minor "$GO")
	[ "$m" -ge 22 ] || die "$GO does not run as Go 1.22 or later"
}

pick_go
say "using $GO ($("$GO" version))"

# The scratch module: require k8s.io/kubernetes and replace its staging
# modules (which it names v0.0.0) with the matching v0.x releases.
staging=${K8S_VERSION#v1.}
sed "s/v1\.31\.4/$K8S_VERSION/; s/ v0\.31\.4$/ v0.$staging/" "$HERE/go.mod.in" >"$K8S_CACHE/mod/go.mod" || die "cannot write go.mod"
cat >"$K8S_CACHE/mod/tools.go" <<EOF
//go:build tools

package tools

import (
$(for b in $BINARIES; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done)
)
EOF

t0=$(date +%s)
cd "$K8S_CACHE/mod" || die "no $K8S_CACHE/mod"
say "resolving modules (first run downloads about 400 MB)"
"$GO" mod download 2>&1 | tail -n 5
rm -f "$stamp"
ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
ld="$ld -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$staging" | cut -d. -f1)"
for b in $BINARIES; do
	s=$(date +%s)
	say "building $b ..."
	nice -n 19 "$GO" build -trimpath -ldflags="$ld" -o "$K8S_CACHE/bin/$b.new" "k8s.io/kubernetes/cmd/$b" ||
		die "building $b failed"
	mv "$K8S_CACHE/bin/$b.new" "$K8S_CACHE/bin/$b"
	say "$b built in $(($(date +%s) - s))s"
done
stamp_text >"$stamp"
say "done in $(($(date +%s) - t0))s; binaries in $K8S_CACHE/bin"
