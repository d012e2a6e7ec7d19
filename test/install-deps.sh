#!/bin/bash
# install-deps.sh: install the Debian packages the project needs, and only
# those that are missing. Groups: build (compile), test (make check; CCTools
# for the differential suite 50-compat-diff.sh; etcd, containerd, runc, the CNI
# plugins and Go for the Kubernetes test cluster of test/k8s/; slurm-wlm, munge, and
# mariadb-server and slurmdbd for the Slurm test cluster with accounting), bench
# (side-by-side comparisons). Without root it prints the apt-get command.
set -u

declare -A GROUP
GROUP[build]="gcc make pkg-config libuv1-dev libcurl4-openssl-dev libjansson-dev zlib1g-dev libseccomp-dev libcmocka-dev libssl-dev uthash-dev"
GROUP[test]="chromium clang-format universal-ctags clang libclang-rt-14-dev coreutils procps graphviz time python3 docker.io busybox-static coop-computing-tools curl python3-venv python3-dev python3-pip openssl etcd-server containerd runc containernetworking-plugins golang-go iproute2 util-linux slurm-wlm munge mariadb-server slurmdbd"
GROUP[bench]="coop-computing-tools hyperfine time chromium"

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(build)

want=()
for g in "${groups[@]}"; do
	if [ -z "${GROUP[$g]+x}" ]; then
		echo "install-deps: unknown group '$g' (known: ${!GROUP[*]})" >&2
		exit 2
	fi
	for p in ${GROUP[$g]}; do want+=("$p"); done
done

missing=()
for p in "${want[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing+=("$p") ;;
	esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: these Debian packages are missing: ${missing[*]}" >&2
	echo "install-deps: as root, run:  apt-get update && apt-get install -y ${missing[*]}" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/install-deps.XXXXXX)
# Refresh the package lists only when an install fails without it (saves time
# on machines whose lists are fresh).
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
	if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >>"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "install-deps: apt-get failed; full log in $log" >&2
		exit 1
	fi
fi
rm -f "$log"
exit 0
