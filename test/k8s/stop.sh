#!/bin/bash
# stop.sh: stops the test cluster of $K8S_HOME (default /tmp/htc-k8s) by PID and restores the
# host (mounts, cgroups, kernel tunables, bridges, fixed paths).
export K8S_HOME=${K8S_HOME:-/tmp/htc-k8s}
. "$(dirname "$0")/../lib/k8s-lib.sh"
k8s_stop
