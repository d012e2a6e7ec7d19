/* batch_driver_k8s.c: the "k8s" driver: one pod per job, created through the Kubernetes API
 * (k8s_client), followed by one label-selector watch for all the run's pods, deleted when done
 * (doc/kubernetes.md, section 7). The API calls run in one worker thread and the watch in
 * another; both hand their results to the loop through a uv_async_t, so the loop never blocks. */
#include "batch_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uthash.h>

#include "debug.h"
#include "htc_error.h"
#include "k8s_client.h"
#include "k8s_pods.h"
#include "k8s_watch.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define RUN_LABEL "htc-run"

struct kjob {
	char name[64];
	struct batch_job *job; /* NULL once completed */
	bool created;
	UT_hash_handle hh;
};

enum cmd_kind { CMD_CREATE, CMD_DELETE, CMD_CHECK };
struct cmd {
	enum cmd_kind kind;
	char name[64];
	json_t *pod;
	struct cmd *next;
};

enum msg_kind { MSG_CREATED, MSG_CREATE_FAILED, MSG_POD, MSG_DELETED, MSG_RELISTED, MSG_FATAL };
struct msg {
	enum msg_kind kind;
	char name[64];
	json_t *obj;
	char *err;
	struct msg *next;
};

struct kd {
	struct batch_queue *q;
	char *kubeconfig, *context, *ns, *image, *shared_fs, *pull_policy;
	struct k8s_client *api, *wapi; /* the API thread's and the watch thread's */
	char run_id[33], selector[64];
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

static void finish(struct kd *d, struct kjob *kj)
{
	struct batch_job *job = kj->job;
	kj->job = NULL;
	job->result.end_us = time_now_us();
	batch_job_complete(d->q, job);
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
	struct batch_result *res = &job->result;
	if (r.oom || r.deadline) {
		/* killed for exceeding its allocation: exhaustion, whatever the exit code */
		res->exhausted = r.oom ? BATCH_EXHAUSTED_MEMORY : BATCH_EXHAUSTED_WALL_TIME;
		res->exited_normally = 0;
		res->signal = 9;
	} else if (r.terminated) {
		res->exited_normally = 1;
		res->exit_code = r.exit_code;
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
		if (kj->job)
			fail(d, kj, text);
	}
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
		break;
	case MSG_CREATE_FAILED:
		if (kj && kj->job)
			fail(d, kj, m->err);
		break;
	case MSG_POD:
		if (kj && kj->job)
			pod_update(d, kj, m->obj);
		break;
	case MSG_DELETED:
		if (kj && kj->job) {
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
			if (!kj->job || !kj->created)
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

/* ---- the driver --------------------------------------------------------------------- */

static int k8s_create(struct batch_queue *q, void **state)
{
	struct kd *d = xcalloc(1, sizeof *d);
	d->q = q;
	d->pull_policy = xstrdup("IfNotPresent");
	unsigned char raw[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		free(d->pull_policy);
		free(d);
		return e ? e : -EIO;
	}
	close(fd);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(d->run_id + 2 * i, 3, "%02x", raw[i]);
	snprintf(d->selector, sizeof d->selector, RUN_LABEL "=%s", d->run_id);
	uv_mutex_init(&d->mu);
	uv_cond_init(&d->cv);
	d->async = xmalloc(sizeof *d->async);
	uv_async_init(batch_queue_loop(q), d->async, on_async);
	d->async->data = d;
	uv_unref((uv_handle_t *)d->async);
	*state = d;
	return 0;
}

static int k8s_set_option(void *state, const char *key, const char *value)
{
	struct kd *d = state;
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
	/* calls now, so that bad credentials or a missing namespace stop the run at once (a
	 * user who may not read namespaces is told by the pod list instead) */
	char *nspath = xasprintf("/api/v1/namespaces/%s", d->ns);
	int e = k8s_call(d->api, "GET", nspath, NULL, NULL, NULL, &err);
	free(nspath);
	if (e == HTC_EAUTH) {
		free(err);
		err = NULL;
		json_t *items = NULL;
		e = k8s_pod_list(d->api, d->ns, d->selector, &items, NULL, &err);
		json_decref(items);
	}
	if (e < 0) {
		warn("k8s: %s", err);
		free(err);
		return e;
	}
	if (uv_thread_create(&d->api_thread, api_thread, d) != 0 ||
	    uv_thread_create(&d->watch_thread, watch_thread, d) != 0) {
		warn("k8s: cannot start the driver's threads");
		return -EAGAIN;
	}
	d->threads = true;
	uv_ref((uv_handle_t *)d->async);
	debug(D_BATCH, "k8s: namespace %s, image %s, pods labelled %s", d->ns, d->image,
	      d->selector);
	return 0;
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

static json_t *pod_of(struct kd *d, struct kjob *kj, const char *image)
{
	const struct batch_job_spec *s = &kj->job->spec;
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, "%s", d->shared_fs);
	json_t *env = json_array();
	for (const char *const *e = s->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char *k = xstrndup(*e, (size_t)(eq - *e));
		json_array_append_new(env, json_pack("{s:s,s:s}", "name", k, "value", eq + 1));
		free(k);
	}
	json_t *limits = json_object();
	if (s->resources.cores > 0)
		json_object_set_new(limits, "cpu", json_sprintf("%" PRId64, s->resources.cores));
	if (s->resources.memory_mb > 0)
		json_object_set_new(limits, "memory",
		                    json_sprintf("%" PRId64 "Mi", s->resources.memory_mb));
	json_t *c = json_pack("{s:s,s:s,s:s,s:[s,s,s],s:s,s:o,s:{s:O,s:O},s:[{s:s,s:s}]}", "name",
	                      "main", "image", image, "imagePullPolicy", d->pull_policy, "command",
	                      "/bin/sh", "-c", s->command, "workingDir", cwd, "env", env,
	                      "resources", "limits", limits, "requests", limits, "volumeMounts",
	                      "name", "shared", "mountPath", d->shared_fs);
	json_decref(limits);
	json_t *spec = json_pack("{s:s,s:i,s:[o],s:[{s:s,s:{s:s}}]}", "restartPolicy", "Never",
	                         "terminationGracePeriodSeconds", 1, "containers", c, "volumes",
	                         "name", "shared", "hostPath", "path", d->shared_fs);
	if (s->resources.wall_time_s > 0)
		json_object_set_new(spec, "activeDeadlineSeconds",
		                    json_integer(s->resources.wall_time_s));
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:o}", "apiVersion", "v1", "kind", "Pod",
	                 "metadata", "name", kj->name, "labels", RUN_LABEL, d->run_id, "spec",
	                 spec);
}

static int k8s_submit(void *state, struct batch_job *job)
{
	struct kd *d = state;
	if (!d->threads) {
		int e = k8s_start(d);
		if (e < 0)
			return e;
	}
	struct kjob *kj = xcalloc(1, sizeof *kj);
	snprintf(kj->name, sizeof kj->name, "htc-%.12s-%" PRId64, d->run_id, job->id);
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
	command(d, CMD_CREATE, kj->name, pod_of(d, kj, image));
	free(image);
	return 0;
}

static int k8s_remove(void *state, struct batch_job *job)
{
	struct kd *d = state;
	struct kjob *kj = job->driver_data;
	command(d, CMD_DELETE, kj->name, NULL);
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
		free(kj);
	}
	uv_close((uv_handle_t *)d->async, async_closed);
	uv_mutex_destroy(&d->mu);
	uv_cond_destroy(&d->cv);
	k8s_client_delete(d->api);
	k8s_client_delete(d->wapi);
	free(d->kubeconfig);
	free(d->context);
	free(d->ns);
	free(d->image);
	free(d->shared_fs);
	free(d->pull_policy);
	free(d->fatal);
	free(d);
}

const struct batch_driver batch_driver_k8s = {
    .name = "k8s",
    .features = BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_REMOVE | BATCH_FEATURE_MEMORY_LIMIT,
    .create = k8s_create,
    .destroy = k8s_destroy,
    .set_option = k8s_set_option,
    .start = k8s_start,
    .submit = k8s_submit,
    .remove = k8s_remove,
};
