#!/bin/bash
# start.sh: builds the Kubernetes binaries if they are not cached yet, then starts the test
# cluster in $K8S_HOME (default /tmp/htc-k8s) and prints how to reach it. Stop it with
# stop.sh (same K8S_HOME). Needs root.
export K8S_HOME=${K8S_HOME:-/tmp/htc-k8s}
. "$(dirname "$0")/../lib/k8s-lib.sh"
k8s_build || exit 1
if ! k8s_start; then
	k8s_stop
	exit 1
fi
echo "cluster up: KUBECONFIG=$K8S_HOME/conf/kubeconfig (token), $K8S_HOME/conf/kubeconfig-cert (client certificate)"
echo "kubectl: $K8S_BIN/kubectl --kubeconfig $K8S_HOME/conf/kubeconfig get pods"
