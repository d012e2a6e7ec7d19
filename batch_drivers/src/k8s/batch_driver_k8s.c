/* batch_driver_k8s.c: the "k8s" driver: one pod per job, created through the Kubernetes API
 * (k8s_client), followed by one label-selector watch for all the run's pods, deleted when done
 * (doc/kubernetes.md, section 7). The pods carry the run id (cluster_run.h) as the label
 * htc-run; creates are throttled (cluster_throttle.h). The API calls run in one worker thread
 * and the watch in another; both hand their results to the loop through a uv_async_t, so the
 * loop never blocks. */
#include "batch_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uthash.h>

#include "cluster_run.h"
#include "cluster_throttle.h"
#include "debug.h"
#include "htc_error.h"
#include "k8s_client.h"
#include "k8s_pods.h"
#include "k8s_run.h"
#include "k8s_watch.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define RUN_LABEL            "htc-run"
#define OWNER_LABEL          "htc-owner"
#define K8S_DEFAULT_RATE     20  /* creates per second */
#define K8S_DEFAULT_MAX_PODS 100 /* pods of the run not yet finished (the kubelet runs 110) */
#define K8S_STOP_WAIT_MS     120000

enum kjob_state { KJ_WAITING, KJ_SENT, KJ_DONE };
struct kjob {
	char name[80];
	struct batch_job *job; /* NULL once completed */
	enum kjob_state state;
	bool created;
	bool log_pending;   /* failed: completed once its log tail is read */
	json_t *pod;        /* KJ_WAITING: the pod to create */
	struct kjob *wnext; /* the waiting list */
	struct k8s_pod_times times;
	UT_hash_handle hh;
};

enum cmd_kind { CMD_CREATE, CMD_DELETE, CMD_CHECK, CMD_LOG_DELETE };
struct cmd {
	enum cmd_kind kind;
	char name[80];
	json_t *pod;
	struct cmd *next;
};

enum msg_kind {
	MSG_CREATED,
	MSG_CREATE_FAILED,
	MSG_POD,
	MSG_DELETED,
	MSG_RELISTED,
	MSG_FATAL,
	MSG_LOG
};
struct msg {
	enum msg_kind kind;
	char name[80];
	json_t *obj;
	char *err;
	struct msg *next;
};

struct kd {
	struct batch_queue *q;
	char *kubeconfig, *context, *ns, *image, *shared_fs, *pull_policy, *owner;
	char **mounts; /* option mount: host paths mounted read-only at the same path */
	size_t n_mounts;
	bool host_network, whole_node, started, have_run, in_submit;
	int64_t node_cores, node_memory_mb;       /* whole-node: the largest node's allocatable */
	int64_t default_cores, default_memory_mb; /* jobs that declare none */
	double request_fraction; /* requests = this fraction of the limits (1: Guaranteed QoS) */
	struct k8s_client *api, *wapi; /* the API thread's and the watch thread's */
	char run_id[CLUSTER_RUN_ID_LEN + 1], selector[64];
	struct cluster_throttle throttle;
	uv_timer_t *timer;                   /* the throttle's wait; freed by its close callback */
	struct kjob *waiting, *waiting_tail; /* not yet handed to the API thread */
	int64_t unfinished;                  /* pods handed to the API thread and not finished */
	uv_thread_t api_thread, watch_thread;
	bool threads;
	uv_mutex_t mu;
	uv_cond_t cv;
	struct cmd *cmds, *cmds_tail; /* to the API thread */
	struct msg *msgs, *msgs_tail; /* to the loop */
	uv_async_t *async;            /* freed by its close callback */
	volatile int stop;
	struct kjob *jobs;
	char *fatal; /* the watch's last error: every job fails with it */
};

static void post(struct kd *d, enum msg_kind kind, const char *name, json_t *obj, char *err)
{
	struct msg *m = xcalloc(1, sizeof *m);
	m->kind = kind;
	if (name)
		snprintf(m->name, sizeof m->name, "%s", name);
	m->obj = obj;
	m->err = err;
	uv_mutex_lock(&d->mu);
	if (d->msgs_tail)
		d->msgs_tail->next = m;
	else
		d->msgs = m;
	d->msgs_tail = m;
	uv_mutex_unlock(&d->mu);
	uv_async_send(d->async);
}

static void command(struct kd *d, enum cmd_kind kind, const char *name, json_t *pod)
{
	struct cmd *c = xcalloc(1, sizeof *c);
	c->kind = kind;
	snprintf(c->name, sizeof c->name, "%s", name);
	c->pod = pod;
	uv_mutex_lock(&d->mu);
	if (d->cmds_tail)
		d->cmds_tail->next = c;
	else
		d->cmds = c;
	d->cmds_tail = c;
	uv_cond_signal(&d->cv);
	uv_mutex_unlock(&d->mu);
}

/* ---- threads ------------------------------------------------------------------------ */

static void api_thread(void *arg)
{
	struct kd *d = arg;
	for (;;) {
		uv_mutex_lock(&d->mu);
		while (!d->cmds && !d->stop)
			uv_cond_wait(&d->cv, &d->mu);
		struct cmd *c = d->cmds;
		if (c) {
			d->cmds = c->next;
			if (!d->cmds)
				d->cmds_tail = NULL;
		}
		uv_mutex_unlock(&d->mu);
		if (!c)
			return; /* stopped with nothing left to do */
		char *err = NULL;
		if (c->kind == CMD_CREATE && !d->stop) {
			int e = k8s_pod_create(d->api, d->ns, c->pod, NULL, &err);
			if (e == -EEXIST) { /* a retried create that had reached the server */
				free(err);
				e = 0;
			}
			if (e < 0)
				post(d, MSG_CREATE_FAILED, c->name, NULL, err);
			else
				post(d, MSG_CREATED, c->name, NULL, NULL);
		} else if (c->kind == CMD_CHECK) {
			/* a pod a list did not show: gone, or created after the list was taken */
			json_t *pod = NULL;
			int e = k8s_pod_get(d->api, d->ns, c->name, &pod, &err);
			if (e == 0)
				post(d, MSG_POD, c->name, pod, NULL);
			else if (e == -ENOENT && strstr(err, "pods \""))
				post(d, MSG_DELETED, c->name, NULL, err);
			else {
				warn("k8s: %s", err);
				free(err);
			}
		} else if (c->kind == CMD_LOG_DELETE) {
			/* a failed rule: its log's last lines, then the pod goes */
			char *text = NULL;
			if (k8s_pod_log_tail(d->api, d->ns, c->name, "main", BATCH_TAIL_LINES,
			                     &text, &err) < 0) {
				text = xasprintf("(the log cannot be read: %s)", err);
				free(err);
				err = NULL;
			}
			post(d, MSG_LOG, c->name, NULL, text);
			if (k8s_pod_delete(d->api, d->ns, c->name, 1, &err) < 0) {
				warn("k8s: %s", err);
				free(err);
			}
		} else if (c->kind == CMD_DELETE) {
			if (k8s_pod_delete(d->api, d->ns, c->name, 1, &err) < 0) {
				warn("k8s: %s", err);
				free(err);
			}
		}
		json_decref(c->pod);
		free(c);
	}
}

static bool on_watch(enum k8s_watch_event ev, json_t *obj, void *arg)
{
	struct kd *d = arg;
	enum msg_kind k = ev == K8S_WATCH_RELISTED  ? MSG_RELISTED
	                  : ev == K8S_WATCH_DELETED ? MSG_DELETED
	                                            : MSG_POD;
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	post(d, k, name, json_incref(obj), NULL);
	return !d->stop;
}

static void watch_thread(void *arg)
{
	struct kd *d = arg;
	struct k8s_watch_options o = {.ns = d->ns, .selector = d->selector, .stop = &d->stop};
	char *err = NULL;
	if (k8s_watch_run(d->wapi, &o, on_watch, d, NULL, &err) < 0 && !d->stop)
		post(d, MSG_FATAL, NULL, NULL, err);
	else
		free(err);
}

/* ---- results on the loop ------------------------------------------------------------ */

static void submit_some(struct kd *d);

static void log_times(struct kd *d, struct kjob *kj, const char *how)
{
	const struct k8s_pod_times *t = &kj->times;
	debug(D_BATCH, "k8s pod %s/%s %s: created %s, scheduled %s, running %s", d->ns, kj->name,
	      how, t->created[0] ? t->created : "-", t->scheduled[0] ? t->scheduled : "-",
	      t->running[0] ? t->running : "-");
}

static void finish(struct kd *d, struct kjob *kj)
{
	struct batch_job *job = kj->job;
	kj->job = NULL;
	if (kj->state == KJ_SENT)
		d->unfinished--;
	kj->state = KJ_DONE;
	job->result.end_us = time_now_us();
	batch_job_complete(d->q, job);
	submit_some(d);
}

static void fail(struct kd *d, struct kjob *kj, const char *text)
{
	batch_job_set_error(kj->job, "%s", text);
	kj->job->result.exited_normally = 0;
	finish(d, kj);
}

/* The pod OBJ of job KJ changed: start or complete the job. */
static void pod_update(struct kd *d, struct kjob *kj, json_t *obj)
{
	struct k8s_pod_result r;
	k8s_pod_result(obj, "main", &r);
	k8s_pod_times(obj, &kj->times);
	struct batch_job *job = kj->job;
	kj->created = true;
	if (r.phase >= K8S_POD_RUNNING && !job->result.start_us)
		batch_job_started(d->q, job);
	if (r.stuck) {
		char *t = xasprintf("k8s pod %s/%s: %s: %s", d->ns, kj->name, r.waiting, r.message);
		fail(d, kj, t);
		free(t);
		command(d, CMD_DELETE, kj->name, NULL);
		return;
	}
	if (!r.finished)
		return;
	log_times(d, kj, "finished");
	struct batch_result *res = &job->result;
	if (r.oom || r.deadline) {
		/* killed for exceeding its allocation: exhaustion, whatever the exit code */
		res->exhausted = r.oom ? BATCH_EXHAUSTED_MEMORY : BATCH_EXHAUSTED_WALL_TIME;
		res->exited_normally = 0;
		res->signal = 9;
	} else if (r.terminated) {
		res->exited_normally = 1;
		res->exit_code = r.exit_code;
		if (r.exit_code != 0) {
			/* completed when the log's last lines are read (MSG_LOG) */
			kj->log_pending = true;
			command(d, CMD_LOG_DELETE, kj->name, NULL);
			return;
		}
	} else {
		char *t = xasprintf("k8s pod %s/%s: %s without an exit code: %s %s", d->ns,
		                    kj->name, k8s_pod_phase_name(r.phase), r.reason, r.message);
		batch_job_set_error(job, "%s", t);
		free(t);
	}
	finish(d, kj);
	command(d, CMD_DELETE, kj->name, NULL);
}

static void fail_all(struct kd *d, const char *text)
{
	struct kjob *kj, *tmp;
	HASH_ITER(hh, d->jobs, kj, tmp)
	{
		if (kj->job && kj->state == KJ_SENT)
			fail(d, kj, text);
	}
	submit_some(d); /* the waiting ones fail with d->fatal */
}

static void handle(struct kd *d, struct msg *m)
{
	struct kjob *kj = NULL;
	if (m->name[0])
		HASH_FIND_STR(d->jobs, m->name, kj);
	switch (m->kind) {
	case MSG_CREATED:
		if (kj)
			kj->created = true;
		debug(D_BATCH, "k8s pod %s/%s created", d->ns, m->name);
		break;
	case MSG_CREATE_FAILED:
		if (kj && kj->job)
			fail(d, kj, m->err);
		break;
	case MSG_POD:
		if (kj && kj->job && !kj->log_pending)
			pod_update(d, kj, m->obj);
		break;
	case MSG_DELETED:
		if (kj && kj->job && !kj->log_pending) {
			char *t = xasprintf("k8s pod %s/%s was deleted before it finished", d->ns,
			                    kj->name);
			fail(d, kj, t);
			free(t);
		}
		break;
	case MSG_RELISTED: {
		/* a created pod that is not in the list is looked at once more (CMD_CHECK) */
		struct kjob *tmp;
		HASH_ITER(hh, d->jobs, kj, tmp)
		{
			if (!kj->job || !kj->created || kj->log_pending)
				continue;
			json_t *p, *found = NULL;
			size_t i;
			json_array_foreach(m->obj, i, p)
			{
				const char *n = json_string_value(
				    json_object_get(json_object_get(p, "metadata"), "name"));
				if (n && !strcmp(n, kj->name))
					found = p;
			}
			if (found)
				pod_update(d, kj, found);
			else
				command(d, CMD_CHECK, kj->name, NULL);
		}
		break;
	}
	case MSG_LOG: {
		/* the log's last lines become the job's stderr_tail, which makeflow prints with
		 * the rule's failure */
		char *text = m->err;
		if (str_has_prefix(text, "(the log cannot be read"))
			warn("k8s pod %s/%s failed; %s", d->ns, m->name, text);
		else
			warn("k8s pod %s/%s failed", d->ns, m->name);
		if (kj && kj->job && !str_has_prefix(text, "(the log cannot be read"))
			batch_job_set_stderr_tail(kj->job, text, strlen(text));
		if (kj && kj->job && kj->log_pending)
			finish(d, kj);
		break;
	}
	case MSG_FATAL:
		warn("k8s: %s", m->err);
		free(d->fatal);
		d->fatal = xstrdup(m->err);
		fail_all(d, m->err);
		break;
	}
}

static void on_async(uv_async_t *a)
{
	struct kd *d = a->data;
	uv_mutex_lock(&d->mu);
	struct msg *m = d->msgs;
	d->msgs = d->msgs_tail = NULL;
	uv_mutex_unlock(&d->mu);
	while (m) {
		struct msg *next = m->next;
		handle(d, m);
		json_decref(m->obj);
		free(m->err);
		free(m);
		m = next;
	}
}

/* ---- submission ---------------------------------------------------------------------- */

static void unlink_waiting(struct kd *d, struct kjob *kj)
{
	struct kjob **pp = &d->waiting, *prev = NULL;
	while (*pp && *pp != kj) {
		prev = *pp;
		pp = &(*pp)->wnext;
	}
	if (!*pp)
		return;
	*pp = kj->wnext;
	if (d->waiting_tail == kj)
		d->waiting_tail = prev;
	kj->wnext = NULL;
	json_decref(kj->pod);
	kj->pod = NULL;
}

static void on_timer(uv_timer_t *t)
{
	submit_some(t->data);
}

/* Hands waiting pods to the API thread as far as the throttle allows (doc/kubernetes.md
 * section 7: submit-rate creates per second, max-jobs pods not yet finished). */
static void submit_some(struct kd *d)
{
	if (d->in_submit) /* finish() calls back here: one pass at a time */
		return;
	d->in_submit = true;
	while (d->waiting) {
		struct kjob *kj = d->waiting;
		if (d->fatal) {
			unlink_waiting(d, kj);
			fail(d, kj, d->fatal);
			continue;
		}
		int64_t wait_ms = 0, now = time_monotonic_us();
		if (!cluster_throttle_may(&d->throttle, now, d->unfinished, &wait_ms)) {
			if (wait_ms >= 0 && !uv_is_active((uv_handle_t *)d->timer))
				uv_timer_start(d->timer, on_timer, (uint64_t)wait_ms, 0);
			break;
		}
		cluster_throttle_take(&d->throttle, now);
		d->waiting = kj->wnext;
		if (!d->waiting)
			d->waiting_tail = NULL;
		kj->wnext = NULL;
		kj->state = KJ_SENT;
		d->unfinished++;
		command(d, CMD_CREATE, kj->name, kj->pod);
		kj->pod = NULL;
	}
	d->in_submit = false;
}

/* ---- the driver --------------------------------------------------------------------- */

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static int k8s_create(struct batch_queue *q, void **state)
{
	struct kd *d = xcalloc(1, sizeof *d);
	d->q = q;
	d->pull_policy = xstrdup("IfNotPresent");
	d->request_fraction = 1;
	cluster_throttle_init(&d->throttle, K8S_DEFAULT_RATE, K8S_DEFAULT_MAX_PODS);
	uv_mutex_init(&d->mu);
	uv_cond_init(&d->cv);
	d->async = xmalloc(sizeof *d->async);
	uv_async_init(batch_queue_loop(q), d->async, on_async);
	d->async->data = d;
	uv_unref((uv_handle_t *)d->async);
	d->timer = xmalloc(sizeof *d->timer);
	uv_timer_init(batch_queue_loop(q), d->timer);
	d->timer->data = d;
	*state = d;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		return *out = true, 0;
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		return *out = false, 0;
	return -EINVAL;
}

/* A label value: at most 63 of [A-Za-z0-9._-], starting and ending with a letter or digit. */
static int label_value_valid(const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		int alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
			return 0;
	}
	return 1;
}

/* The clients, from the kubeconfig options; 0, or -EINVAL (said). */
static int open_clients(struct kd *d)
{
	if (d->api)
		return 0;
	char *err = NULL;
	struct k8s_config *c1 = k8s_config_load(d->kubeconfig, d->context, &err);
	struct k8s_config *c2 = c1 ? k8s_config_load(d->kubeconfig, d->context, &err) : NULL;
	if (!c2) {
		k8s_config_delete(c1);
		warn("k8s: %s", err);
		free(err);
		return -EINVAL;
	}
	if (!d->ns)
		d->ns = xstrdup(c1->namespace);
	d->api = k8s_client_create(c1, NULL);
	d->wapi = k8s_client_create(c2, NULL);
	return 0;
}

/* Deletes every pod matching SELECTOR and waits until they are gone (WHAT names them in the
 * messages). 0, or -EIO (said). */
static int stop_selected(struct kd *d, const char *selector, const char *what)
{
	if (open_clients(d) < 0)
		return -EIO;
	char *err = NULL;
	int n = 0;
	if (k8s_pods_delete_selected(d->api, d->ns, selector, K8S_STOP_WAIT_MS, &n, &err) < 0) {
		warn("k8s: cannot delete the pods of %s: %s", what, err);
		free(err);
		return -EIO;
	}
	if (n > 0)
		notice("k8s: %d pod%s of %s deleted (%s)", n, n == 1 ? "" : "s", what, selector);
	return 0;
}

static int k8s_set_option(void *state, const char *key, const char *value)
{
	struct kd *d = state;
	int r = cluster_throttle_set_option(&d->throttle, key, value);
	if (r <= 0)
		return r;
	if (!strcmp(key, "stop-run")) {
		if (!cluster_run_id_valid(value))
			return -EINVAL;
		char sel[64];
		snprintf(sel, sizeof sel, RUN_LABEL "=%s", value);
		char *what = xasprintf("the earlier run %s", value);
		r = stop_selected(d, sel, what);
		free(what);
		return r;
	}
	if (!strcmp(key, "host-network"))
		return parse_bool(value, &d->host_network);
	if (!strcmp(key, "whole-node"))
		return parse_bool(value, &d->whole_node);
	if (!strcmp(key, "default-cores") || !strcmp(key, "default-memory")) {
		int64_t v;
		if (str_to_int64(value, &v) < 0 || v < 1)
			return -EINVAL;
		*(key[8] == 'c' ? &d->default_cores : &d->default_memory_mb) = v;
		return 0;
	}
	if (!strcmp(key, "request-fraction")) {
		double f;
		if (str_to_double(value, &f) < 0 || !(f > 0 && f <= 1))
			return -EINVAL;
		d->request_fraction = f;
		return 0;
	}
	if (!strcmp(key, "mount")) {
		if (value[0] != '/' || access(value, F_OK) != 0)
			return -EINVAL;
		d->mounts = xrealloc(d->mounts, (d->n_mounts + 1) * sizeof *d->mounts);
		d->mounts[d->n_mounts++] = xstrdup(value);
		return 0;
	}
	if (!strcmp(key, "owner")) {
		if (!label_value_valid(value))
			return -EINVAL;
		free(d->owner);
		d->owner = xstrdup(value);
		return 0;
	}
	char **slot = !strcmp(key, "kubeconfig")    ? &d->kubeconfig
	              : !strcmp(key, "context")     ? &d->context
	              : !strcmp(key, "namespace")   ? &d->ns
	              : !strcmp(key, "image")       ? &d->image
	              : !strcmp(key, "shared-fs")   ? &d->shared_fs
	              : !strcmp(key, "pull-policy") ? &d->pull_policy
	                                            : NULL;
	if (!slot || !value[0])
		return -EINVAL;
	if (slot == &d->pull_policy && strcmp(value, "Never") && strcmp(value, "IfNotPresent") &&
	    strcmp(value, "Always"))
		return -EINVAL;
	if (slot == &d->shared_fs) {
		/* one directory: the pods mount it at the same path */
		char *real = realpath(value, NULL);
		if (d->shared_fs || !real) {
			free(real);
			return -EINVAL;
		}
		d->shared_fs = real;
		return 0;
	}
	free(*slot);
	*slot = xstrdup(value);
	return 0;
}

static int k8s_start(void *state)
{
	struct kd *d = state;
	if (d->started)
		return 0;
	if (!d->image) {
		warn("k8s: no image: name the image of the pods (makeflow --k8s-image=IMAGE, or "
		     "--batch-option image=IMAGE)");
		return -EINVAL;
	}
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		return -errno;
	if (!d->shared_fs)
		d->shared_fs = xstrdup(cwd);
	size_t n = strlen(d->shared_fs);
	while (n > 1 && d->shared_fs[n - 1] == '/')
		d->shared_fs[--n] = 0;
	if (strncmp(cwd, d->shared_fs, n) != 0 || (cwd[n] != 0 && cwd[n] != '/' && n > 1)) {
		warn("k8s: the working directory %s is not under the shared file system %s that "
		     "the pods mount",
		     cwd, d->shared_fs);
		return -EINVAL;
	}
	if (open_clients(d) < 0)
		return -EINVAL;
	/* calls now, so that bad credentials or a missing namespace stop the run at once (a
	 * user who may not read namespaces is told by the pod list instead) */
	char *err = NULL;
	char *nspath = xasprintf("/api/v1/namespaces/%s", d->ns);
	int e = k8s_call(d->api, "GET", nspath, NULL, NULL, NULL, &err);
	free(nspath);
	if (e == HTC_EAUTH) {
		free(err);
		err = NULL;
		json_t *items = NULL;
		e = k8s_pod_list(d->api, d->ns, RUN_LABEL, &items, NULL, &err);
		json_decref(items);
	}
	if (e == 0 && d->whole_node)
		e = k8s_node_size(d->api, &d->node_cores, &d->node_memory_mb, &err);
	if (e < 0) {
		warn("k8s: %s", err);
		free(err);
		return e;
	}
	d->started = true;
	return 0;
}

/* The first job gives the run its id (HTC_RUN_ID of makeflow, else a random one): the pods of
 * an earlier owner's run go, and the threads start watching this run's pods. */
static int begin_run(struct kd *d, const struct batch_job *job)
{
	if (cluster_run_id_from_env(job->spec.env, d->run_id) < 0) {
		int e = cluster_run_id_random(d->run_id);
		if (e < 0)
			return e;
	}
	snprintf(d->selector, sizeof d->selector, RUN_LABEL "=%s", d->run_id);
	if (d->owner) {
		/* a restart after kill -9 of the same owner: its earlier pods are not ours */
		char *sel = xasprintf(OWNER_LABEL "=%s," RUN_LABEL "!=%s", d->owner, d->run_id);
		char *what = xasprintf("an earlier run of %s", d->owner);
		int e = stop_selected(d, sel, what);
		free(sel);
		free(what);
		if (e < 0)
			return e;
	}
	if (uv_thread_create(&d->api_thread, api_thread, d) != 0)
		goto fail;
	if (uv_thread_create(&d->watch_thread, watch_thread, d) != 0) {
		d->stop = 1;
		uv_cond_signal(&d->cv);
		uv_thread_join(&d->api_thread);
		goto fail;
	}
	d->threads = true;
	d->have_run = true;
	uv_ref((uv_handle_t *)d->async);
	debug(D_BATCH, "k8s: namespace %s, image %s, pods labelled %s", d->ns, d->image,
	      d->selector);
	return 0;
fail:
	warn("k8s: cannot start the driver's threads");
	return -EAGAIN;
}

/* The image of a job: image=IMAGE among the words of its batch options (a rule's or a
 * category's BATCH_OPTIONS, or -B), else the queue's. NULL with *ERR for any other word. */
static char *job_image(struct kd *d, const struct batch_job_spec *s, char **err)
{
	char *image = xstrdup(d->image);
	if (!s->batch_options)
		return image;
	int n = 0;
	char **words = str_split_ws(s->batch_options, &n);
	for (int i = 0; i < n; i++) {
		if (!strncmp(words[i], "image=", 6) && words[i][6]) {
			free(image);
			image = xstrdup(words[i] + 6);
			continue;
		}
		*err = xasprintf("batch options '%s': -T k8s takes image=IMAGE there, not '%s'",
		                 s->batch_options, words[i]);
		free(image);
		image = NULL;
		break;
	}
	str_free_argv(words);
	return image;
}

static void add_env(json_t *env, const char *name, const char *value)
{
	json_array_append_new(env, json_pack("{s:s,s:s}", "name", name, "value", value));
}

/* The pod's requests: its limits (Guaranteed QoS), or with request-fraction F < 1 that
 * fraction of them, rounded up to whole millicores and MiB (Burstable QoS: the scheduler
 * packs pods by their requests, the limits still hold each one). A new reference. */
static json_t *pod_requests(const struct kd *d, int64_t cores, int64_t memory, json_t *limits)
{
	double f = d->request_fraction;
	if (f >= 1)
		return json_incref(limits);
	json_t *r = json_object();
	if (cores > 0)
		json_object_set_new(
		    r, "cpu",
		    json_sprintf("%" PRId64 "m", (int64_t)ceil((double)cores * 1000 * f - 1e-6)));
	if (memory > 0)
		json_object_set_new(
		    r, "memory",
		    json_sprintf("%" PRId64 "Mi", (int64_t)ceil((double)memory * f - 1e-6)));
	return r;
}

static json_t *pod_of(struct kd *d, struct kjob *kj, const char *image)
{
	const struct batch_job_spec *s = &kj->job->spec;
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, "%s", d->shared_fs);
	int64_t cores = s->resources.cores, memory = s->resources.memory_mb;
	if (d->whole_node && cores <= 0 && memory <= 0) {
		/* one large pod per node: the node's allocatable */
		cores = d->node_cores;
		memory = d->node_memory_mb;
	}
	if (cores <= 0)
		cores = d->default_cores;
	if (memory <= 0)
		memory = d->default_memory_mb;
	json_t *env = json_array();
	for (const char *const *e = s->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char *k = xstrndup(*e, (size_t)(eq - *e));
		add_env(env, k, eq + 1);
		free(k);
	}
	json_t *limits = json_object();
	char num[32];
	if (cores > 0) {
		json_object_set_new(limits, "cpu", json_sprintf("%" PRId64, cores));
		snprintf(num, sizeof num, "%" PRId64, cores);
		add_env(env, "CORES", num);
	}
	if (memory > 0) {
		json_object_set_new(limits, "memory", json_sprintf("%" PRId64 "Mi", memory));
		snprintf(num, sizeof num, "%" PRId64, memory);
		add_env(env, "MEMORY", num);
	}
	json_t *requests = pod_requests(d, cores, memory, limits);
	json_t *mounts = json_pack("[{s:s,s:s}]", "name", "shared", "mountPath", d->shared_fs);
	json_t *volumes =
	    json_pack("[{s:s,s:{s:s}}]", "name", "shared", "hostPath", "path", d->shared_fs);
	for (size_t i = 0; i < d->n_mounts; i++) {
		char vn[32];
		snprintf(vn, sizeof vn, "mount-%zu", i);
		json_array_append_new(mounts, json_pack("{s:s,s:s,s:b}", "name", vn, "mountPath",
		                                        d->mounts[i], "readOnly", 1));
		json_array_append_new(volumes, json_pack("{s:s,s:{s:s}}", "name", vn, "hostPath",
		                                         "path", d->mounts[i]));
	}
	json_t *c =
	    json_pack("{s:s,s:s,s:s,s:[s,s,s],s:s,s:o,s:{s:O,s:O},s:o}", "name", "main", "image",
	              image, "imagePullPolicy", d->pull_policy, "command", "/bin/sh", "-c",
	              s->command, "workingDir", cwd, "env", env, "resources", "limits", limits,
	              "requests", requests, "volumeMounts", mounts);
	json_decref(limits);
	json_decref(requests);
	json_t *spec =
	    json_pack("{s:s,s:i,s:[o],s:o}", "restartPolicy", "Never",
	              "terminationGracePeriodSeconds", 1, "containers", c, "volumes", volumes);
	if (d->host_network) {
		/* the pod network has no way to the host; a worker must reach its master */
		json_object_set_new(spec, "hostNetwork", json_true());
		json_object_set_new(spec, "dnsPolicy", json_string("ClusterFirstWithHostNet"));
	}
	if (s->resources.wall_time_s > 0)
		json_object_set_new(spec, "activeDeadlineSeconds",
		                    json_integer(s->resources.wall_time_s));
	json_t *labels = json_pack("{s:s}", RUN_LABEL, d->run_id);
	if (d->owner)
		json_object_set_new(labels, OWNER_LABEL, json_string(d->owner));
	return json_pack("{s:s,s:s,s:{s:s,s:o},s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
	                 "name", kj->name, "labels", labels, "spec", spec);
}

static int k8s_submit(void *state, struct batch_job *job)
{
	struct kd *d = state;
	int e = k8s_start(d);
	if (e < 0)
		return e;
	if (!d->have_run && (e = begin_run(d, job)) < 0)
		return e;
	struct kjob *kj = xcalloc(1, sizeof *kj);
	snprintf(kj->name, sizeof kj->name, "htc-%s-%" PRId64, d->run_id, job->id);
	kj->job = job;
	job->driver_data = kj;
	HASH_ADD_STR(d->jobs, name, kj);
	if (d->fatal) {
		fail(d, kj, d->fatal);
		return 0;
	}
	char *err = NULL, *image = job_image(d, &job->spec, &err);
	if (!image) {
		fail(d, kj, err);
		free(err);
		return 0;
	}
	kj->pod = pod_of(d, kj, image);
	free(image);
	kj->state = KJ_WAITING;
	if (d->waiting_tail)
		d->waiting_tail->wnext = kj;
	else
		d->waiting = kj;
	d->waiting_tail = kj;
	submit_some(d);
	return 0;
}

static int k8s_remove(void *state, struct batch_job *job)
{
	struct kd *d = state;
	struct kjob *kj = job->driver_data;
	if (!kj || !kj->job)
		return -ENOENT;
	if (kj->state == KJ_WAITING) {
		unlink_waiting(d, kj);
	} else {
		log_times(d, kj, "removed");
		command(d, CMD_DELETE, kj->name, NULL);
	}
	job->result.removed = 1;
	job->result.exited_normally = 0;
	job->result.signal = 9;
	finish(d, kj);
	return 0;
}

static void async_closed(uv_handle_t *h)
{
	free(h);
}

static void k8s_destroy(void *state)
{
	struct kd *d = state;
	if (d->threads) {
		uv_mutex_lock(&d->mu);
		d->stop = 1;
		/* pending creates are dropped: the pods of the run go below */
		while (d->cmds) {
			struct cmd *c = d->cmds;
			d->cmds = c->next;
			json_decref(c->pod);
			free(c);
		}
		d->cmds_tail = NULL;
		uv_cond_signal(&d->cv);
		uv_mutex_unlock(&d->mu);
		uv_thread_join(&d->api_thread);
		uv_thread_join(&d->watch_thread);
		/* every pod of the run, in one call */
		char *sel = k8s_escape(d->selector), *err = NULL;
		char *path = xasprintf("/api/v1/namespaces/%s/pods?labelSelector=%s", d->ns, sel);
		if (k8s_call(d->api, "DELETE", path, NULL, NULL, NULL, &err) < 0) {
			warn("k8s: %s", err);
			free(err);
		}
		free(path);
		free(sel);
	}
	while (d->msgs) {
		struct msg *m = d->msgs;
		d->msgs = m->next;
		json_decref(m->obj);
		free(m->err);
		free(m);
	}
	struct kjob *kj, *tmp;
	HASH_ITER(hh, d->jobs, kj, tmp)
	{
		HASH_DEL(d->jobs, kj);
		json_decref(kj->pod);
		free(kj);
	}
	uv_close((uv_handle_t *)d->async, async_closed);
	uv_timer_stop(d->timer);
	uv_close((uv_handle_t *)d->timer, timer_closed);
	uv_mutex_destroy(&d->mu);
	uv_cond_destroy(&d->cv);
	k8s_client_delete(d->api);
	k8s_client_delete(d->wapi);
	for (size_t i = 0; i < d->n_mounts; i++)
		free(d->mounts[i]);
	free(d->mounts);
	free(d->kubeconfig);
	free(d->context);
	free(d->ns);
	free(d->image);
	free(d->shared_fs);
	free(d->pull_policy);
	free(d->owner);
	free(d->fatal);
	free(d);
}

const struct batch_driver batch_driver_k8s = {
    .name = "k8s",
    .features = BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_REMOVE | BATCH_FEATURE_MEMORY_LIMIT |
                BATCH_FEATURE_RUN_LABEL,
    .create = k8s_create,
    .destroy = k8s_destroy,
    .set_option = k8s_set_option,
    .start = k8s_start,
    .submit = k8s_submit,
    .remove = k8s_remove,
};
