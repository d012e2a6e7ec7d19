/* wq_factory_run.c: the run of work_queue_factory (see wq_factory_run.h): every period it reads
 * the demand (tasks waiting and running) from the master or, through the catalog, from the
 * masters of a project, starts the workers it lacks on the batch system (wq_factory_to_start),
 * and on SIGINT or SIGTERM removes its workers and stops. */
#include "wq_factory_run.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "catalog_project.h"
#include "batch_queue.h"
#include "catalog_client.h"
#include "catalog_filter.h"
#include "debug.h"
#include "htc_error.h"
#include "k8s_factory.h"
#include "status_client.h"
#include "stringtools.h"
#include "wq_auth.h"
#include "wq_factory.h"
#include "wq_factory_cmd.h"
#include "xalloc.h"

#include "banned.h"

struct factory {
	uv_loop_t *loop;
	struct batch_queue *q;
	struct wq_factory_limits limits;
	const char *host;
	int port;
	const char *project;
	const struct catalog_project *project_re;
	const char *catalog;
	const char *password;
	struct wq_auth_key *key;
	char *worker_cmd;          /* the command of every worker job */
	const char *const *env;    /* --env, NULL-terminated, or NULL */
	struct batch_file *inputs; /* --wrapper-input */
	size_t n_inputs;
	double period;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
	int running; /* worker jobs submitted and not ended */
	int busy;    /* a demand query is under way */
	int stopping;
	int64_t started;  /* workers started in all */
	char *last_error; /* the last demand error logged, so a repeated one is logged once */
};

/* Logs a demand error once until it changes or a query succeeds. */
static void demand_error(struct factory *f, const char *fmt, const char *a, const char *b)
{
	char *e = xasprintf(fmt, a, b);
	if (!f->last_error || strcmp(e, f->last_error)) {
		warn("%s", e);
		free(f->last_error);
		f->last_error = e;
	} else {
		debug(D_FACTORY, "%s", e);
		free(e);
	}
}

static void demand_ok(struct factory *f)
{
	if (f->last_error)
		notice("the demand can be read again");
	free(f->last_error);
	f->last_error = NULL;
}

static void start_workers(struct factory *f, const struct wq_factory_demand *d)
{
	int n = wq_factory_to_start(&f->limits, d, f->running);
	debug(D_FACTORY,
	      "demand: %lld waiting, %lld running, %lld workers connected; %d of ours running; "
	      "starting %d",
	      (long long)d->tasks_waiting, (long long)d->tasks_running,
	      (long long)d->workers_connected, f->running, n);
	for (int i = 0; i < n; i++) {
		struct batch_job_spec spec = {0};
		spec.command = f->worker_cmd;
		spec.env = f->env;
		spec.inputs = f->inputs;
		spec.n_inputs = f->n_inputs;
		spec.resources = (struct batch_resources){-1, -1, -1, -1, -1};
		spec.tag = "work_queue_worker";
		int64_t id = batch_queue_submit(f->q, &spec);
		if (id < 0) {
			warn("cannot start a worker: %s", htc_strerror((int)id));
			return;
		}
		f->running++;
		f->started++;
	}
	if (n > 0)
		notice("started %d worker%s (%d running)", n, n == 1 ? "" : "s", f->running);
}

static void on_status(json_t *items, const char *err, void *arg)
{
	struct factory *f = arg;
	f->busy = 0;
	if (f->stopping) {
		json_decref(items);
		return;
	}
	if (!items) {
		char where[300];
		snprintf(where, sizeof where, "%s:%d", f->host, f->port);
		demand_error(f, "master %s: %s", where, err);
		/* No demand is known; the minimum is still kept. */
		struct wq_factory_demand none = {0};
		start_workers(f, &none);
		return;
	}
	demand_ok(f);
	struct wq_factory_demand d = {0};
	wq_factory_add_status(&d, json_array_get(items, 0));
	json_decref(items);
	start_workers(f, &d);
}

static void on_catalog(void *arg, json_t *records, const char *err)
{
	struct factory *f = arg;
	f->busy = 0;
	if (f->stopping) {
		json_decref(records);
		return;
	}
	struct wq_factory_demand d = {0};
	if (!records) {
		demand_error(f, "catalog%s: %s", "", err ? err : "no answer");
	} else {
		demand_ok(f);
		size_t i;
		json_t *r;
		json_array_foreach(records, i, r)
		{
			/* -M is matched here: the catalog is asked only for a plain name */
			const char *p = json_string_value(json_object_get(r, "project"));
			if (catalog_project_match(f->project_re, p))
				wq_factory_add_status(&d, r);
		}
		json_decref(records);
	}
	start_workers(f, &d);
}

static void cycle(uv_timer_t *t)
{
	struct factory *f = t->data;
	if (f->busy || f->stopping)
		return;
	f->busy = 1;
	char *err = NULL;
	if (f->project) {
		struct catalog_filter *flt = catalog_filter_create();
		catalog_filter_add(flt, "type", "wq_master", &err);
		const char *literal = catalog_project_literal(f->project_re);
		if (literal)
			catalog_filter_add(flt, "project", literal, &err);
		if (!catalog_query_start(f->loop, f->catalog, flt, f->period, on_catalog, f,
		                         &err)) {
			warn("catalog: %s", err ? err : "cannot query");
			f->busy = 0;
		}
		catalog_filter_delete(flt);
	} else {
		struct wq_status_opts o = {.key = f->key, .timeout_s = f->period};
		if (!wq_status_query_start(f->loop, f->host, f->port, "master", &o, on_status, f,
		                           &err)) {
			warn("master %s:%d: %s", f->host, f->port, err ? err : "cannot query");
			f->busy = 0;
		}
	}
	free(err);
}

static void on_job_done(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	struct factory *f = arg;
	f->running--;
	if (r->error)
		warn("worker job %lld: %s", (long long)id, r->error);
	else if (!r->removed && !(r->exited_normally && r->exit_code == 0))
		notice("worker job %lld ended with %s %d", (long long)id,
		       r->exited_normally ? "status" : "signal",
		       r->exited_normally ? r->exit_code : r->signal);
	if (f->stopping && f->running == 0)
		uv_stop(f->loop);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct factory *f = s->data;
	notice("signal %d: stopping %d worker%s", signum, f->running, f->running == 1 ? "" : "s");
	f->stopping = 1;
	uv_timer_stop(&f->timer);
	if (f->running == 0 || batch_queue_remove_all(f->q) <= 0)
		uv_stop(f->loop);
}

/* The worker to run: --worker-binary, else work_queue_worker beside this program, else from
 * PATH. Caller frees. */
static char *worker_binary(const char *given)
{
	if (given)
		return xstrdup(given);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			char *own = xasprintf("%s/work_queue_worker", self);
			if (access(own, X_OK) == 0)
				return own;
			free(own);
		}
	}
	return xstrdup("work_queue_worker");
}

/* What must be ready before the loop runs: the password, the workers' command, the batch
 * system and its options. */
static int setup(struct factory *f, const struct work_queue_factory_opts *o, char *err,
                 size_t errlen)
{
	f->limits = o->limits;
	f->host = o->host;
	f->port = o->port;
	f->project = o->project;
	f->project_re = o->project_re;
	f->catalog = o->catalog;
	f->password = o->password;
	f->period = o->period;
	if (f->password) {
		char *why = NULL;
		f->key = wq_auth_key_load(f->password, &why);
		if (!f->key) {
			snprintf(err, errlen, "%s", why ? why : "cannot read the password file");
			free(why);
			return HTC_EAUTH;
		}
	}
	char *binary = worker_binary(o->binary);
	/* -T k8s: the pods' image, worker binary, size and driver options (k8s_factory.h) */
	struct k8s_factory_out k8s = {0};
	if (!strcmp(o->type, "k8s")) {
		char *master = o->project ? xasprintf("project:%s", o->project)
		                          : xasprintf("%s:%d", o->host, o->port);
		struct k8s_factory_in in = {
		    o->k8s_image, o->k8s_worker_image, binary, o->binary, master, o->size};
		int rc = k8s_factory_setup(&in, &k8s, err, errlen);
		free(master);
		free(binary);
		if (rc < 0)
			return rc;
		binary = xstrdup(k8s.binary);
	}
	struct wq_factory_cmd c = {
	    .binary = binary,
	    .host = o->host,
	    .port = o->port,
	    .project = o->project,
	    .catalog = o->catalog,
	    .password = o->password,
	    .size = k8s.size ? k8s.size : o->size,
	    .timeout = o->timeout,
	    .extra = o->extra,
	    .wrappers = o->wrappers,
	    .n_wrappers = o->n_wrappers,
	};
	f->worker_cmd = wq_factory_worker_command(&c, err, errlen);
	free(binary);
	if (!f->worker_cmd) {
		k8s_factory_out_clear(&k8s);
		return errno ? -errno : -EIO;
	}
	/* --wrapper-input: named now rather than by every worker job that would fail */
	for (size_t i = 0; i < o->n_wrapper_inputs; i++)
		if (access(o->wrapper_inputs[i], R_OK) != 0) {
			int e = errno;
			snprintf(err, errlen, "--wrapper-input %s: %s", o->wrapper_inputs[i],
			         strerror(e));
			k8s_factory_out_clear(&k8s);
			return -e;
		}
	f->env = o->env;
	f->n_inputs = o->n_wrapper_inputs;
	if (f->n_inputs) {
		f->inputs = xcalloc(f->n_inputs, sizeof *f->inputs);
		for (size_t i = 0; i < f->n_inputs; i++)
			f->inputs[i].local_name = o->wrapper_inputs[i];
	}
	f->q = batch_queue_create(f->loop, o->type, on_job_done, f);
	for (size_t i = 0; f->q && k8s.opts && k8s.opts[i]; i++) {
		char *kv = k8s.opts[i], *eq = strchr(kv, '=');
		*eq = 0;
		int rc = batch_queue_set_option(f->q, kv, eq + 1);
		*eq = '=';
		if (rc < 0) {
			snprintf(err, errlen, "-T k8s: the driver refused %s", kv);
			k8s_factory_out_clear(&k8s);
			return HTC_EUNSUP;
		}
	}
	k8s_factory_out_clear(&k8s);
	if (!f->q) {
		char why[512];
		if (batch_queue_type_check(o->type, why, sizeof why) == 0)
			snprintf(why, sizeof why, "the batch queue could not be created: %s",
			         strerror(errno));
		snprintf(err, errlen, "-T %s: %s", o->type, why);
		return HTC_EUNSUP;
	}
	for (size_t i = 0; i < o->n_batch_opts; i++) {
		const char *kv = o->batch_opts[i];
		char *k = xstrndup(kv, (size_t)(strchr(kv, '=') - kv));
		int rc = batch_queue_set_option(f->q, k, strchr(kv, '=') + 1);
		free(k);
		if (rc < 0) {
			snprintf(err, errlen,
			         "--batch-option %s: the %s batch type does not accept it", kv,
			         o->type);
			return HTC_EUNSUP;
		}
	}
	if (o->mesos_master && batch_queue_set_option(f->q, "master", o->mesos_master) < 0) {
		snprintf(err, errlen, "--mesos-master %s: expected HOST:PORT", o->mesos_master);
		return HTC_EUNSUP;
	}
	return 0;
}

int wq_factory_run(const struct work_queue_factory_opts *o, char *err, size_t errlen)
{
	struct factory f = {0};
	f.loop = uv_default_loop();
	int rc = setup(&f, o, err, errlen);
	if (rc == 0) {
		notice("keeping %d..%d workers for %s%s%s%s, every %g s: %s", f.limits.min_workers,
		       f.limits.max_workers, f.project ? "project " : "",
		       f.project ? f.project : f.host, f.project ? "" : ":",
		       f.project ? "" : o->port_arg, f.period, f.worker_cmd);
		uv_timer_init(f.loop, &f.timer);
		f.timer.data = &f;
		uv_timer_start(&f.timer, cycle, 0, (uint64_t)(f.period * 1000));
		uv_signal_init(f.loop, &f.sigint);
		uv_signal_init(f.loop, &f.sigterm);
		f.sigint.data = f.sigterm.data = &f;
		uv_signal_start(&f.sigint, on_signal, SIGINT);
		uv_signal_start(&f.sigterm, on_signal, SIGTERM);
		uv_run(f.loop, UV_RUN_DEFAULT);

		notice("stopped; %lld worker%s started in all", (long long)f.started,
		       f.started == 1 ? "" : "s");
		batch_queue_delete(f.q);
		uv_close((uv_handle_t *)&f.timer, NULL);
		uv_close((uv_handle_t *)&f.sigint, NULL);
		uv_close((uv_handle_t *)&f.sigterm, NULL);
	} else {
		batch_queue_delete(f.q);
	}
	uv_run(f.loop, UV_RUN_NOWAIT);
	wq_auth_key_delete(f.key);
	free(f.worker_cmd);
	free(f.inputs);
	free(f.last_error);
	return rc;
}
