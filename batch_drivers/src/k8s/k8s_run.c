/* k8s_run.c: deleting the pods of a selector, pod times, quantities and node size
 * (k8s_run.h). */
#include "k8s_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "k8s_pods.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

int k8s_pods_delete_selected(struct k8s_client *k, const char *ns, const char *selector,
                             int64_t wait_ms, int *deleted, char **err)
{
	char *sel = k8s_escape(selector);
	char *path =
	    xasprintf("/api/v1/namespaces/%s/pods?labelSelector=%s&gracePeriodSeconds=1", ns, sel);
	free(sel);
	json_t *reply = NULL;
	int e = k8s_call(k, "DELETE", path, NULL, NULL, &reply, err);
	free(path);
	if (deleted)
		*deleted = (int)json_array_size(json_object_get(reply, "items"));
	json_decref(reply);
	if (e < 0)
		return e;
	int64_t deadline = time_monotonic_us() + wait_ms * 1000;
	for (;;) {
		json_t *items = NULL;
		e = k8s_pod_list(k, ns, selector, &items, NULL, err);
		if (e < 0)
			return e;
		size_t n = json_array_size(items);
		if (n == 0) {
			json_decref(items);
			return 0;
		}
		if (time_monotonic_us() > deadline) {
			const char *first = json_string_value(json_object_get(
			    json_object_get(json_array_get(items, 0), "metadata"), "name"));
			*err = xasprintf("kubernetes: %zu pods of %s in namespace %s (%s, ...) are "
			                 "still there %lld s after they were deleted",
			                 n, selector, ns, first ? first : "?",
			                 (long long)(wait_ms / 1000));
			json_decref(items);
			return -ETIMEDOUT;
		}
		json_decref(items);
		usleep(200000);
	}
}

struct tail {
	char buf[K8S_LOG_TAIL_MAX + 1];
	size_t n;
};

static bool on_log(const char *data, size_t n, void *arg)
{
	struct tail *t = arg;
	size_t room = K8S_LOG_TAIL_MAX - t->n;
	if (n > room)
		n = room;
	memcpy(t->buf + t->n, data, n);
	t->n += n;
	return t->n < K8S_LOG_TAIL_MAX;
}

int k8s_pod_log_tail(struct k8s_client *k, const char *ns, const char *name, const char *container,
                     int lines, char **text, char **err)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&tailLines=%d"
	                       "&limitBytes=%d",
	                       ns, name, container, lines, K8S_LOG_TAIL_MAX);
	struct tail *t = xcalloc(1, sizeof *t);
	int e = k8s_stream(k, path, on_log, t, NULL, NULL, err);
	free(path);
	if (e == 0) {
		t->buf[t->n] = 0;
		*text = xstrdup(t->buf);
	}
	free(t);
	return e;
}

static void copy_time(char *out, size_t size, json_t *v)
{
	const char *s = json_string_value(v);
	snprintf(out, size, "%s", s ? s : "");
}

void k8s_pod_times(json_t *pod, struct k8s_pod_times *t)
{
	memset(t, 0, sizeof *t);
	copy_time(t->created, sizeof t->created,
	          json_object_get(json_object_get(pod, "metadata"), "creationTimestamp"));
	json_t *status = json_object_get(pod, "status"), *c;
	size_t i;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
	{
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));
		if (type && st && !strcmp(type, "PodScheduled") && !strcmp(st, "True"))
			copy_time(t->scheduled, sizeof t->scheduled,
			          json_object_get(c, "lastTransitionTime"));
	}
	json_t *state = json_object_get(
	    json_array_get(json_object_get(status, "containerStatuses"), 0), "state");
	json_t *started = json_object_get(json_object_get(state, "running"), "startedAt");
	if (!started)
		started = json_object_get(json_object_get(state, "terminated"), "startedAt");
	copy_time(t->running, sizeof t->running, started);
}

/* The number at the start of S (digits, a point, an exponent), its end in *END. */
static int number(const char *s, double *v, const char **end)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!((*p >= '0' && *p <= '9') || *p == '.'))
		return -1;
	char *e;
	errno = 0;
	*v = strtod(s, &e);
	if (errno || e == s || !isfinite(*v))
		return -1;
	*end = e;
	return 0;
}

int64_t k8s_quantity_millicores(const char *s)
{
	double v;
	const char *e;
	if (!s || number(s, &v, &e) < 0 || v < 0)
		return -1;
	if (!strcmp(e, "m"))
		return (int64_t)ceil(v);
	if (*e)
		return -1;
	return (int64_t)ceil(v * 1000);
}

int64_t k8s_quantity_bytes(const char *s)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {{"", 1},
	             {"m", 1e-3},
	             {"k", 1e3},
	             {"M", 1e6},
	             {"G", 1e9},
	             {"T", 1e12},
	             {"P", 1e15},
	             {"E", 1e18},
	             {"Ki", 1024.0},
	             {"Mi", 1024.0 * 1024},
	             {"Gi", 1024.0 * 1024 * 1024},
	             {"Ti", 1024.0 * 1024 * 1024 * 1024},
	             {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
	             {"Ei", 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024}};
	double v;
	const char *e;
	if (!s || number(s, &v, &e) < 0 || v < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(e, units[i].suffix)) {
			double b = ceil(v * units[i].mult);
			return b > 9.2e18 ? -1 : (int64_t)b;
		}
	return -1;
}

static int node_ready(json_t *node)
{
	json_t *c;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
	{
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));
		if (type && st && !strcmp(type, "Ready"))
			return !strcmp(st, "True");
	}
	return 0;
}

int k8s_node_size(struct k8s_client *k, int64_t *cores, int64_t *memory_mb, char **err)
{
	json_t *j = NULL;
	int e = k8s_call(k, "GET", "/api/v1/nodes", NULL, NULL, &j, err);
	if (e < 0)
		return e;
	int64_t best_c = -1, best_m = -1;
	json_t *n;
	size_t i;
	json_array_foreach(json_object_get(j, "items"), i, n)
	{
		if (!node_ready(n))
			continue;
		json_t *a = json_object_get(json_object_get(n, "status"), "allocatable");
		int64_t mc = k8s_quantity_millicores(json_string_value(json_object_get(a, "cpu")));
		int64_t b = k8s_quantity_bytes(json_string_value(json_object_get(a, "memory")));
		if (mc < 1000 || b < 0)
			continue;
		int64_t c = mc / 1000, m = b / (1024 * 1024);
		if (c > best_c || (c == best_c && m > best_m)) {
			best_c = c;
			best_m = m;
		}
	}
	json_decref(j);
	if (best_c < 0) {
		*err = xstrdup("kubernetes GET /api/v1/nodes: no node is Ready with at least one "
		               "allocatable core");
		return -ENOENT;
	}
	*cores = best_c;
	*memory_mb = best_m;
	return 0;
}
