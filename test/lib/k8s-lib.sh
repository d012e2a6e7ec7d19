# k8s-lib.sh: a real single-node Kubernetes cluster for tests (sourced). k8s_start lays out
# $K8S_HOME (configs, keys, tokens, kubeconfig), starts etcd, containerd, kube-apiserver,
# kube-scheduler, kube-controller-manager and the kubelet with their PIDs in $K8S_HOME/pids,
# imports the locally made images (pause, busybox:local) and waits for the node to be Ready
# and the default ServiceAccount and kube-root-ca.crt to exist. k8s_stop deletes the pods,
# stops everything by PID and leaves the host as it was: mounts, cgroups, kernel tunables,
# bridges and the fixed paths the kubelet and containerd use (doc/kubernetes.md).
#
# Binaries come from test/k8s/build.sh (cached in $K8S_CACHE/bin). Needs root and the
# packages of the k8s group of test/install-deps.sh. Functions return non-zero with a
# message on stderr; none of them exits.
#
# Environment: K8S_CACHE (default /var/cache/htc-test/k8s), K8S_HOME (the cluster's
# directory; required), K8S_START_TIMEOUT (seconds, default 180).

K8S_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_SRC=$(cd "$K8S_LIB_DIR/../k8s" && pwd)
K8S_CACHE=${K8S_CACHE:-/var/cache/htc-test/k8s}
K8S_BIN=$K8S_CACHE/bin
K8S_SERVER=https://127.0.0.1:6443
K8S_NODE=htc-node
K8S_NODE_IP=10.250.0.1
K8S_NODE_BRIDGE=htck8snode0
K8S_POD_BRIDGE=htck8spods0
K8S_POD_SUBNET=10.244.0.0/24
# Who runs the one cluster this host can have (its ports and fixed paths are shared).
K8S_OWNER_FILE=/run/htc-k8s-cluster.owner
# Paths the kubelet, containerd and the CNI plugins use whatever the configuration says;
# k8s_stop removes those that were not there before k8s_start.
K8S_FIXED_PATHS="/var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers
/var/log/pods /var/lib/cni/results /var/lib/cni /run/containerd/s /run/containerd/fifo
/run/containerd /var/run/netns"
K8S_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
K8S_DAEMONS="etcd containerd kube-apiserver kube-scheduler kube-controller-manager kubelet"

k8s_log() { echo "k8s: $*" >&2; }

__k8s_elapsed() { echo $(($(date +%s%N) / 1000000 - __k8s_t0)); }

# k8s_api [CURL-ARGS...] PATH: the API server's answer to PATH (admin token, verified TLS).
k8s_api() {
	local n=$(($# - 1))
	curl -sS --max-time 20 --cacert "$K8S_HOME/conf/ca.crt" \
		-H "Authorization: Bearer $(cat "$K8S_HOME/conf/admin.token")" \
		"${@:1:$n}" "$K8S_SERVER${!#}"
}

# k8s_missing: the names of what the cluster needs that this host lacks (empty when none).
k8s_missing() {
	local m="" c
	for c in etcd containerd containerd-shim-runc-v2 runc ctr openssl curl python3 gcc ip flock; do
		command -v $c >/dev/null 2>&1 || m="$m $c"
	done
	[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || m="$m containernetworking-plugins"
	[ -x /bin/busybox ] || m="$m busybox-static"
	[ "$(id -u)" = 0 ] || m="$m root"
	echo "${m# }"
}

# k8s_build: the cached binaries (builds them the first time: 10-19 minutes).
k8s_build() {
	bash "$K8S_SRC/build.sh"
}

__k8s_subst() { # TEMPLATE OUT
	sed -e "s|@K8S_HOME@|$K8S_HOME|g" -e "s|@NODE_IP@|$K8S_NODE_IP|g" \
		-e "s|@POD_BRIDGE@|$K8S_POD_BRIDGE|g" -e "s|@POD_SUBNET@|$K8S_POD_SUBNET|g" "$1" >"$2"
}

# __k8s_cert NAME SUBJECT EXT: a key and a certificate signed by the test CA.
__k8s_cert() {
	local c=$K8S_HOME/conf
	openssl req -new -newkey rsa:2048 -nodes -keyout "$c/$1.key" -out "$c/$1.csr" \
		-subj "$2" 2>/dev/null &&
		printf '%b' "$3" >"$c/$1.ext" &&
		openssl x509 -req -in "$c/$1.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial \
			-days 3650 -out "$c/$1.crt" -extfile "$c/$1.ext" 2>/dev/null &&
		rm -f "$c/$1.csr" "$c/$1.ext"
}

# k8s_kubeconfig OUT USER-LINES...: a kubeconfig for the cluster (CA verified) whose user
# has the given lines (e.g. "token: X", or client-certificate/client-key).
k8s_kubeconfig() {
	local out=$1 l
	shift
	{
		echo "apiVersion: v1"
		echo "kind: Config"
		echo "clusters:"
		echo "- name: htc-test"
		echo "  cluster:"
		echo "    server: $K8S_SERVER"
		echo "    certificate-authority: $K8S_HOME/conf/ca.crt"
		echo "users:"
		echo "- name: htc-user"
		echo "  user:"
		for l in "$@"; do echo "    $l"; done
		echo "contexts:"
		echo "- name: htc-test"
		echo "  context:"
		echo "    cluster: htc-test"
		echo "    user: htc-user"
		echo "    namespace: default"
		echo "current-context: htc-test"
	} >"$out"
}

# k8s_layout: configs, keys, certificates, the admin token and kubeconfigs under $K8S_HOME.
k8s_layout() {
	: "${K8S_HOME:?set K8S_HOME}"
	local c=$K8S_HOME/conf
	mkdir -p "$c" "$K8S_HOME/run" "$K8S_HOME/logs" "$K8S_HOME/pids" "$K8S_HOME/cni/net.d" || return 1
	__k8s_subst "$K8S_SRC/conf/containerd.toml" "$c/containerd.toml" &&
		__k8s_subst "$K8S_SRC/conf/kubelet.yaml" "$c/kubelet.yaml" &&
		__k8s_subst "$K8S_SRC/conf/10-pods.conflist" "$K8S_HOME/cni/net.d/10-pods.conflist" || return 1
	echo "nameserver 127.0.0.1" >"$c/resolv.conf"
	[ -f "$c/ca.crt" ] && return 0
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.crt" -days 3650 \
		-subj "/CN=htc-test-ca" 2>/dev/null || { k8s_log "openssl: cannot make the CA"; return 1; }
	__k8s_cert apiserver "/CN=kube-apiserver" \
		"subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n" &&
		__k8s_cert admin "/O=system:masters/CN=htc-admin" "extendedKeyUsage=clientAuth\n" ||
		{ k8s_log "openssl: cannot make the certificates"; return 1; }
	openssl genrsa -out "$c/sa.key" 2048 2>/dev/null && openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null ||
		{ k8s_log "openssl: cannot make the service-account key"; return 1; }
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$c/admin.token"
	echo "$(cat "$c/admin.token"),htc-admin,1,system:masters" >"$c/tokens.csv"
	chmod 600 "$c"/*.key "$c/admin.token" "$c/tokens.csv"
	k8s_kubeconfig "$c/kubeconfig" "token: $(cat "$c/admin.token")"
	k8s_kubeconfig "$c/kubeconfig-cert" "client-certificate: $c/admin.crt" "client-key: $c/admin.key"
}

# __k8s_daemon NAME CMD...: starts CMD in a session of its own (so that neither a test case's
# process group nor a terminal's signals reach it; k8s_stop stops it), its PID in
# pids/NAME.pid, its output in logs/NAME.log.
__k8s_daemon() {
	local name=$1 pidf=$K8S_HOME/pids/$1.pid i
	shift
	rm -f "$pidf"
	# the shell writes its own PID and becomes CMD (exec keeps the PID)
	setsid sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidf" "$@" \
		>"$K8S_HOME/logs/$name.log" 2>&1 </dev/null &
	for i in $(seq 1 100); do
		[ -s "$pidf" ] && break
		sleep 0.05
	done
	k8s_log "$(printf '%6dms' "$(__k8s_elapsed)") started $name (pid $(cat "$pidf" 2>/dev/null))"
}

# __k8s_running PID: the process runs (a zombie does not count).
__k8s_running() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# __k8s_wait SECONDS WHAT CMD...: runs CMD until it succeeds, at most SECONDS.
__k8s_wait() {
	local limit=$1 what=$2 end
	shift 2
	end=$(($(date +%s) + limit))
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge $end ]; then
			k8s_log "$what: not within ${limit}s"
			return 1
		fi
		sleep 0.2
	done
	k8s_log "$(printf '%6dms' "$(__k8s_elapsed)") $what"
}

__k8s_alive() { [ -f "$K8S_HOME/pids/$1.pid" ] && __k8s_running "$(cat "$K8S_HOME/pids/$1.pid")"; }

__k8s_node_ready() {
	k8s_api "/api/v1/nodes/$K8S_NODE" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True"
                  for c in d.get("status", {}).get("conditions", [])) else 1)'
}

__k8s_has_image() {
	ctr --address "$K8S_HOME/run/containerd.sock" -n k8s.io images ls -q | grep -qx "$1"
}

# __k8s_start_apiserver: starts kube-apiserver and waits (at most 120 s) until it is ready.
__k8s_start_apiserver() {
	local r=$K8S_HOME/run c=$K8S_HOME/conf
	__k8s_daemon kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:23790 \
		--service-account-key-file="$c/sa.pub" --service-account-signing-key-file="$c/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc --token-auth-file="$c/tokens.csv" \
		--client-ca-file="$c/ca.crt" --tls-cert-file="$c/apiserver.crt" --tls-private-key-file="$c/apiserver.key" \
		--authorization-mode=AlwaysAllow --bind-address=127.0.0.1 --secure-port=6443 \
		--service-cluster-ip-range=10.96.0.0/16 --advertise-address=127.0.0.1 \
		--kubelet-preferred-address-types=InternalIP --enable-priority-and-fairness=false
	__k8s_wait 120 "apiserver ready" sh -c "[ \"\$(curl -s --max-time 2 --cacert '$c/ca.crt' \
		-H 'Authorization: Bearer $(cat "$c/admin.token")' $K8S_SERVER/readyz)\" = ok ]" ||
		return 1
}

# k8s_restart_apiserver: stops kube-apiserver by its PID and starts it again (tests of
# watches that must survive it). Waits until it is ready again.
k8s_restart_apiserver() {
	__k8s_stop_pid kube-apiserver
	__k8s_t0=$(($(date +%s%N) / 1000000))
	__k8s_start_apiserver
}

# k8s_start: lays out $K8S_HOME and starts the cluster. Returns 1 (with the log tails) when
# any step fails; the caller then runs k8s_stop.
k8s_start() {
	: "${K8S_HOME:?set K8S_HOME}"
	__k8s_t0=$(($(date +%s%N) / 1000000))
	local missing limit=${K8S_START_TIMEOUT:-180} owner
	missing=$(k8s_missing)
	[ -z "$missing" ] || { k8s_log "missing: $missing (bash test/install-deps.sh test)"; return 1; }
	for b in kube-apiserver kube-scheduler kube-controller-manager kubelet; do
		[ -x "$K8S_BIN/$b" ] || { k8s_log "$K8S_BIN/$b is not built (test/k8s/build.sh)"; return 1; }
	done
	if [ -f "$K8S_OWNER_FILE" ]; then
		owner=$(cat "$K8S_OWNER_FILE")
		if [ -f "$owner/pids/kube-apiserver.pid" ] && __k8s_running "$(cat "$owner/pids/kube-apiserver.pid")"; then
			k8s_log "a test cluster of $owner is running (only one can run at a time; stop it with K8S_HOME=$owner test/k8s/stop.sh)"
			return 1
		fi
	fi
	for port in 6443 23790 23800 10250 10248 10257 10259; do
		if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			k8s_log "port $port is in use: cannot start the test cluster"
			return 1
		fi
	done
	k8s_layout || return 1
	echo "$K8S_HOME" >"$K8S_OWNER_FILE"
	# What was there before, so that k8s_stop removes only what the cluster made.
	: >"$K8S_HOME/preexisting"
	for p in $K8S_FIXED_PATHS; do [ -e "$p" ] && echo "$p" >>"$K8S_HOME/preexisting"; done
	[ -f "$K8S_HOME/sysctl.orig" ] || for k in $K8S_SYSCTLS; do
		echo "$k=$(sysctl -n "$k")"
	done >"$K8S_HOME/sysctl.orig"
	# The kubelet refuses a loopback node IP: the node's address is on a bridge of its own.
	if ! ip link show "$K8S_NODE_BRIDGE" >/dev/null 2>&1; then
		ip link add "$K8S_NODE_BRIDGE" type bridge && ip addr add "$K8S_NODE_IP/32" dev "$K8S_NODE_BRIDGE" &&
			ip link set "$K8S_NODE_BRIDGE" up || { k8s_log "cannot make the bridge $K8S_NODE_BRIDGE"; return 1; }
	fi
	if [ ! -f "$K8S_HOME/images/busybox.tar" ]; then
		bash "$K8S_SRC/images.sh" "$K8S_HOME/images" >/dev/null || { k8s_log "cannot make the images"; return 1; }
	fi
	local r=$K8S_HOME/run c=$K8S_HOME/conf
	__k8s_daemon etcd etcd --name htc --data-dir "$r/etcd" \
		--listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
		--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster htc=http://127.0.0.1:23800 --quota-backend-bytes 1073741824
	__k8s_daemon containerd containerd --config "$c/containerd.toml"
	__k8s_wait 60 "etcd healthy" sh -c 'curl -s --max-time 2 http://127.0.0.1:23790/health | grep -q true' ||
		{ k8s_start_failed; return 1; }
	__k8s_start_apiserver || { k8s_start_failed; return 1; }
	__k8s_daemon kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$c/kubeconfig" \
		--authentication-kubeconfig="$c/kubeconfig" --authorization-kubeconfig="$c/kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1
	__k8s_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig="$c/kubeconfig" \
		--authentication-kubeconfig="$c/kubeconfig" --authorization-kubeconfig="$c/kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1 --use-service-account-credentials=false \
		--service-account-private-key-file="$c/sa.key" --root-ca-file="$c/ca.crt" \
		--controllers='*,-bootstrapsigner,-tokencleaner' --flex-volume-plugin-dir="$r/kcm-volume-plugins"
	__k8s_wait 60 "containerd up" ctr --address "$r/containerd.sock" version || { k8s_start_failed; return 1; }
	__k8s_has_image registry.local/pause:3.10 ||
		ctr --address "$r/containerd.sock" -n k8s.io images import "$K8S_HOME/images/pause.tar" >/dev/null
	__k8s_has_image docker.io/library/busybox:local ||
		ctr --address "$r/containerd.sock" -n k8s.io images import "$K8S_HOME/images/busybox.tar" >/dev/null
	__k8s_has_image registry.local/pause:3.10 && __k8s_has_image docker.io/library/busybox:local ||
		{ k8s_log "importing the images failed"; k8s_start_failed; return 1; }
	k8s_log "$(printf '%6dms' "$(__k8s_elapsed)") images imported"
	__k8s_daemon kubelet "$K8S_BIN/kubelet" --config="$c/kubelet.yaml" --kubeconfig="$c/kubeconfig" \
		--root-dir="$r/kubelet" --cert-dir="$r/kubelet/pki" --node-ip=$K8S_NODE_IP \
		--hostname-override=$K8S_NODE
	__k8s_wait "$limit" "node $K8S_NODE Ready" __k8s_node_ready || { k8s_start_failed; return 1; }
	__k8s_wait 60 "default ServiceAccount and kube-root-ca.crt" sh -c "
		curl -sf --max-time 2 --cacert '$c/ca.crt' -H 'Authorization: Bearer $(cat "$c/admin.token")' \
			$K8S_SERVER/api/v1/namespaces/default/serviceaccounts/default &&
		curl -sf --max-time 2 --cacert '$c/ca.crt' -H 'Authorization: Bearer $(cat "$c/admin.token")' \
			$K8S_SERVER/api/v1/namespaces/default/configmaps/kube-root-ca.crt" ||
		{ k8s_start_failed; return 1; }
	for d in $K8S_DAEMONS; do __k8s_alive $d || { k8s_log "$d exited"; k8s_start_failed; return 1; }; done
	return 0
}

# k8s_start_failed: the last lines of each daemon's log, on stderr.
k8s_start_failed() {
	local d
	for d in $K8S_DAEMONS; do
		[ -f "$K8S_HOME/logs/$d.log" ] || continue
		__k8s_alive $d && s=running || s=exited
		k8s_log "---- $d ($s), last lines of $K8S_HOME/logs/$d.log"
		tail -n 8 "$K8S_HOME/logs/$d.log" >&2
	done
}

# __k8s_stop_pid NAME: SIGTERM, up to 15 s, then SIGKILL; by the recorded PID only.
__k8s_stop_pid() {
	local f=$K8S_HOME/pids/$1.pid pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if __k8s_running "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		for i in $(seq 1 150); do
			__k8s_running "$pid" || break
			sleep 0.1
		done
		__k8s_running "$pid" && kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$f"
}

# k8s_stop_daemon NAME / k8s_start_apiserver_again: for tests that restart the apiserver.
k8s_stop_daemon() { __k8s_stop_pid "$1"; }

# k8s_delete_pods: deletes every pod and Job of every namespace and waits (at most 60 s) until
# the kubelet has stopped them, so that their sandboxes are torn down properly.
k8s_delete_pods() {
	__k8s_alive kube-apiserver || return 0
	local ns end
	for ns in $(k8s_api /api/v1/namespaces | python3 -c '
import json, sys
print(" ".join(i["metadata"]["name"] for i in json.load(sys.stdin).get("items", [])))' 2>/dev/null); do
		k8s_api -X DELETE "/apis/batch/v1/namespaces/$ns/jobs?propagationPolicy=Background" >/dev/null 2>&1
		k8s_api -X DELETE "/api/v1/namespaces/$ns/pods?gracePeriodSeconds=1" >/dev/null 2>&1
	done
	__k8s_alive kubelet || return 0
	end=$(($(date +%s) + 60))
	while [ "$(date +%s)" -lt $end ]; do
		k8s_api /api/v1/pods | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["items"] == [] else 1)' 2>/dev/null && return 0
		sleep 0.3
	done
	k8s_log "pods still there after 60 s"
}

# k8s_stop: deletes the pods, stops every daemon by PID (containerd's shims of this cluster
# too), unmounts what is mounted under $K8S_HOME, removes the empty cgroups the kubelet made,
# restores the kernel tunables, deletes the bridges and the fixed paths the cluster created.
k8s_stop() {
	[ -n "${K8S_HOME:-}" ] && [ -d "$K8S_HOME" ] || return 0
	local d pid p h top
	k8s_delete_pods
	for d in kubelet kube-controller-manager kube-scheduler kube-apiserver etcd; do __k8s_stop_pid $d; done
	# The shims of this cluster's containerd (named by its socket), then containerd.
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $K8S_HOME/run/containerd.sock" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	__k8s_stop_pid containerd
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $K8S_HOME/run/containerd.sock" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	awk -v d="$K8S_HOME/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		for top in kubepods kubepods.slice k8s.io; do
			[ -d "$h$top" ] && find "$h$top" -depth -type d -exec rmdir {} \; 2>/dev/null
		done
	done
	[ -f "$K8S_HOME/sysctl.orig" ] && sysctl -q -p "$K8S_HOME/sysctl.orig" >/dev/null
	ip link del "$K8S_POD_BRIDGE" 2>/dev/null
	ip link del "$K8S_NODE_BRIDGE" 2>/dev/null
	if [ -f "$K8S_HOME/preexisting" ]; then
		for p in $K8S_FIXED_PATHS; do
			grep -qxF "$p" "$K8S_HOME/preexisting" && continue
			[ -e "$p" ] || continue
			case "$p" in
			/run/containerd | /var/lib/kubelet | /var/lib/cni) rmdir "$p" 2>/dev/null ;; # only when empty
			*) rm -rf "$p" ;;
			esac
		done
	fi
	[ "$(cat "$K8S_OWNER_FILE" 2>/dev/null)" = "$K8S_HOME" ] && rm -f "$K8S_OWNER_FILE"
	return 0
}

# k8s_host_state: what k8s_stop must restore, one line each (for tests comparing before/after;
# safe under set -e).
k8s_host_state() {
	local k p
	for k in $K8S_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done
	for p in $K8S_FIXED_PATHS; do [ -e "$p" ] && echo "exists $p"; done
	ip -o link show | awk -F': ' '{print "link " $2}' | grep -E "$K8S_NODE_BRIDGE|$K8S_POD_BRIDGE|veth" || true
	ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io 2>/dev/null | sed 's/^/cgroup /' || true
	echo "mounts $(grep -c " $K8S_HOME/" /proc/self/mounts)"
	return 0
}
