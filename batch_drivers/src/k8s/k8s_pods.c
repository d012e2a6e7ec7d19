/* k8s_pods.c: pod calls on the client and the reading of a pod's status (k8s_pods.h). */
#include "k8s_pods.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "xalloc.h"

#include "banned.h"

int k8s_pod_create(struct k8s_client *k, const char *ns, json_t *pod, json_t **created, char **err)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods", ns);
	json_t *j = NULL;
	int e = k8s_call(k, "POST", path, pod, NULL, &j, err);
	free(path);
	if (created)
		*created = j;
	else
		json_decref(j);
	return e;
}

int k8s_pod_get(struct k8s_client *k, const char *ns, const char *name, json_t **pod, char **err)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name);
	int e = k8s_call(k, "GET", path, NULL, NULL, pod, err);
	free(path);
	return e;
}

int k8s_pod_delete(struct k8s_client *k, const char *ns, const char *name, int grace, char **err)
{
	char *path = grace >= 0 ? xasprintf("/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=%d",
	                                    ns, name, grace)
	                        : xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name);
	int e = k8s_call(k, "DELETE", path, NULL, NULL, NULL, err);
	free(path);
	if (e == -ENOENT && strstr(*err, "pods \"")) { /* the pod, not the namespace, is gone */
		free(*err);
		*err = NULL;
		return 0;
	}
	return e;
}

int k8s_pod_list(struct k8s_client *k, const char *ns, const char *selector, json_t **items,
                 char **rv, char **err)
{
	*items = NULL;
	if (rv)
		*rv = NULL;
	char *path;
	if (selector) {
		char *s = k8s_escape(selector);
		path = xasprintf("/api/v1/namespaces/%s/pods?labelSelector=%s", ns, s);
		free(s);
	} else {
		path = xasprintf("/api/v1/namespaces/%s/pods", ns);
	}
	json_t *j = NULL;
	int e = k8s_call(k, "GET", path, NULL, NULL, &j, err);
	if (e == 0) {
		json_t *it = json_object_get(j, "items");
		if (json_is_null(it) || !it) {
			*items = json_array();
		} else if (!json_is_array(it)) {
			*err =
			    xasprintf("kubernetes GET %s: the answer has no list of items", path);
			e = HTC_EPROTO;
		} else {
			*items = json_incref(it);
		}
		const char *v = json_string_value(
		    json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
		if (e == 0 && rv)
			*rv = v ? xstrdup(v) : NULL;
	}
	json_decref(j);
	free(path);
	return e;
}

const char *k8s_pod_phase_name(enum k8s_pod_phase p)
{
	static const char *const names[] = {"Unknown", "Pending", "Running", "Succeeded", "Failed"};
	return (unsigned)p < sizeof names / sizeof *names ? names[p] : "Unknown";
}

static void copy(char *dst, size_t size, const char *s)
{
	snprintf(dst, size, "%s", s ? s : "");
}

void k8s_pod_result(json_t *pod, const char *container, struct k8s_pod_result *r)
{
	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	json_t *st = json_object_get(pod, "status");
	const char *phase = json_string_value(json_object_get(st, "phase"));
	if (phase) {
		for (int p = K8S_POD_PENDING; p <= K8S_POD_FAILED; p++)
			if (strcmp(phase, k8s_pod_phase_name(p)) == 0)
				r->phase = p;
	}
	r->finished = r->phase == K8S_POD_SUCCEEDED || r->phase == K8S_POD_FAILED;
	const char *preason = json_string_value(json_object_get(st, "reason"));
	const char *pmessage = json_string_value(json_object_get(st, "message"));
	r->deadline = preason && strcmp(preason, "DeadlineExceeded") == 0;
	json_t *cs = json_object_get(st, "containerStatuses"), *main = NULL, *c;
	size_t i;
	json_array_foreach(cs, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (!main && (!container || (n && strcmp(n, container) == 0)))
			main = c;
	}
	json_t *state = json_object_get(main, "state");
	json_t *term = json_object_get(state, "terminated");
	json_t *wait = json_object_get(state, "waiting");
	if (wait) {
		static const char *const stuck[] = {
		    "ErrImageNeverPull",          "ErrImagePull",
		    "ImagePullBackOff",           "InvalidImageName",
		    "CreateContainerConfigError", "CreateContainerError"};
		copy(r->waiting, sizeof r->waiting,
		     json_string_value(json_object_get(wait, "reason")));
		for (size_t k = 0; k < sizeof stuck / sizeof *stuck; k++)
			if (strcmp(r->waiting, stuck[k]) == 0)
				r->stuck = true;
		if (r->stuck && !pmessage)
			pmessage = json_string_value(json_object_get(wait, "message"));
	}
	if (term) {
		r->terminated = true;
		json_t *code = json_object_get(term, "exitCode");
		r->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
		copy(r->reason, sizeof r->reason,
		     json_string_value(json_object_get(term, "reason")));
		copy(r->message, sizeof r->message,
		     json_string_value(json_object_get(term, "message")));
	}
	if (!r->reason[0] && preason)
		copy(r->reason, sizeof r->reason, preason);
	if (!r->message[0] && pmessage)
		copy(r->message, sizeof r->message, pmessage);
	r->oom = strcmp(r->reason, "OOMKilled") == 0;
}
