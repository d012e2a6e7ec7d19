/* k8s_pods.h: the pod calls of the Kubernetes client (create, get, delete, list with a label
 * selector) and the reading of a pod's outcome, exit code and reason together
 * (doc/kubernetes.md, sections 3 and 4). Errors as k8s_call. */
#ifndef HTC_K8S_PODS_H
#define HTC_K8S_PODS_H

#include <stdbool.h>

#include <jansson.h>

#include "k8s_client.h"

/* POST /api/v1/namespaces/NS/pods with POD (not stolen); *CREATED (when not NULL) the pod
 * as the server stored it (new reference). */
int k8s_pod_create(struct k8s_client *k, const char *ns, json_t *pod, json_t **created, char **err);
/* GET .../pods/NAME; -ENOENT when there is no such pod. */
int k8s_pod_get(struct k8s_client *k, const char *ns, const char *name, json_t **pod, char **err);
/* DELETE .../pods/NAME?gracePeriodSeconds=GRACE (< 0: the pod's own); a pod already gone is
 * not an error. */
int k8s_pod_delete(struct k8s_client *k, const char *ns, const char *name, int grace, char **err);
/* GET .../pods?labelSelector=SELECTOR (NULL: all): *ITEMS the array (new reference), *RV
 * (when not NULL; caller frees) the list's resourceVersion. */
int k8s_pod_list(struct k8s_client *k, const char *ns, const char *selector, json_t **items,
                 char **rv, char **err);

enum k8s_pod_phase {
	K8S_POD_UNKNOWN = 0,
	K8S_POD_PENDING,
	K8S_POD_RUNNING,
	K8S_POD_SUCCEEDED,
	K8S_POD_FAILED,
};

/* What a pod came to, from its status. */
struct k8s_pod_result {
	enum k8s_pod_phase phase;
	bool finished;     /* Succeeded or Failed */
	bool terminated;   /* the main container has a terminated state */
	int exit_code;     /* its exitCode; -1 when not terminated */
	char reason[64];   /* the container's terminated reason, else the pod's reason */
	char message[256]; /* the matching message (cut) */
	bool oom;          /* killed for memory: reason OOMKilled, whatever the exit code */
	bool deadline;     /* the pod's reason is DeadlineExceeded */
	char waiting[64];  /* a waiting container's reason (ErrImageNeverPull...), or "" */
	bool stuck;        /* that reason will not pass by itself (image missing or invalid,
	                      container config error): the pod never runs */
};

/* Reads POD's status; CONTAINER names the main container (NULL: the first). */
void k8s_pod_result(json_t *pod, const char *container, struct k8s_pod_result *r);
const char *k8s_pod_phase_name(enum k8s_pod_phase p);

#endif
