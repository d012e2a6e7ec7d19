/* k8s_run.h: what a driver needs beyond single pods: deleting every pod of a label selector and
 * waiting until they are gone (the pods of a run that died, doc/kubernetes.md section 7), the
 * times a pod went through (created, scheduled, running), and the size of the largest node
 * (work_queue_factory's one large worker per node). */
#ifndef HTC_K8S_RUN_H
#define HTC_K8S_RUN_H

#include <stdint.h>

#include <jansson.h>

#include "k8s_client.h"

/* DELETE .../pods?labelSelector=SELECTOR (grace 1 s), then lists until no pod of SELECTOR is
 * left, for at most WAIT_MS. 0, -ETIMEDOUT with *ERR naming the pods left, or an error as
 * k8s_call. *DELETED (when not NULL) is the number of pods the delete found. */
int k8s_pods_delete_selected(struct k8s_client *k, const char *ns, const char *selector,
                             int64_t wait_ms, int *deleted, char **err);

/* The last LINES lines of the log of CONTAINER of pod NAME (GET .../pods/NAME/log), at most
 * K8S_LOG_TAIL_MAX bytes: *TEXT (caller frees). 0, or an error as k8s_call. */
#define K8S_LOG_TAIL_MAX 4096
int k8s_pod_log_tail(struct k8s_client *k, const char *ns, const char *name, const char *container,
                     int lines, char **text, char **err);

/* The times of a pod as the server reports them (RFC 3339 text; "" when not yet). */
struct k8s_pod_times {
	char created[40];   /* metadata.creationTimestamp */
	char scheduled[40]; /* the PodScheduled condition's lastTransitionTime, when True */
	char running[40];   /* the main container's startedAt (running or terminated) */
};
void k8s_pod_times(json_t *pod, struct k8s_pod_times *t);

/* A Kubernetes quantity as a number: CPU in millicores ("2" -> 2000, "1500m" -> 1500), memory
 * in bytes ("8041232Ki", "512Mi", "1G", "1e3", "123"). -1 for text that is not a quantity. */
int64_t k8s_quantity_millicores(const char *s);
int64_t k8s_quantity_bytes(const char *s);

/* The allocatable whole cores and memory (MB) of the largest Ready node (by cores, then
 * memory): GET /api/v1/nodes. 0, -ENOENT with *ERR when no node is Ready, or an error as
 * k8s_call. */
int k8s_node_size(struct k8s_client *k, int64_t *cores, int64_t *memory_mb, char **err);

#endif
