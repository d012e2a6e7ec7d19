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
#include "wq_factory_pool.h"
#include "wq_factory_sweep.h"
#include "scaler_hook_run.h"
#include "scaler_model.h"
#include "scaler_hook.h"
#include "timeutil.h"
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
	char *worker_cmd;          /* the command of every worker job (without its token) */
	struct wq_factory_cmd cmd; /* what the per-job commands are made of */
	char *binary;
	char *k8s_size; /* -T k8s: the size options of the worker command (k8s_factory.h) */
	struct scaler_policy policy;
	const char *hook;    /* --scaler-hook */
	double hook_timeout; /* seconds */
	struct wq_factory_pool pool;
	char prefix[64]; /* the token prefix of this run's workers */
	struct scaler_vec worker_size;
	double last_action;          /* now of the last start or drain, -1 before */
	double last_start;           /* now of the last start, -1 before */
	double next_at;              /* a hook's next_in: no decision before this */
	double t0;                   /* the factory's start, for the pool log */
	struct scaler_input hook_in; /* the input a running hook was shown */
	struct scaler_model *model;  /* --modelled-load, or NULL */
	char *record;                /* the record of factory runs (wq_factory_sweep.h) */
	const char **job_env;        /* --env plus HTC_RUN_ID, NULL-terminated */
	char *run_env;               /* "HTC_RUN_ID=<run>" */
	const char *const *env;      /* --env, NULL-terminated, or NULL */
	struct batch_file *inputs;   /* --wrapper-input */
	size_t n_inputs;
	double period;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
	int running; /* worker jobs submitted and not ended */
	int busy;    /* a demand query is under way */
	int stopping;
	int64_t started;  /* workers started in all */
	char *last_error; /* the last demand error logged, so a repeated one is logged once */
	/* -M: each master the catalog names is asked for its own status (with its worker rows),
	 * so that a drain can go to the master that has the worker */
	char *hook_error;             /* the last reason the hook failed, said once */
	int pending;                  /* status answers of this cycle still awaited */
	struct scaler_input cycle_in; /* this cycle's answers, merged as they come */
	json_t *cycle_masters;        /* this cycle's worker id -> "PORT HOST" of its master */
	json_t *worker_masters;       /* the same, of the last complete cycle */
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

static double now_s(void)
{
	return (double)time_monotonic_us() / 1e6;
}

/* Starts one worker job with its own token. 0, or a negative error. */
static int start_one(struct factory *f, double now)
{
	struct wq_factory_job *j = wq_factory_pool_add(&f->pool, now);
	char token[64];
	snprintf(token, sizeof token, "%s", j->token);
	struct wq_factory_cmd c = f->cmd;
	c.token = token;
	char err[256] = "";
	char *cmd = wq_factory_worker_command(&c, err, sizeof err);
	if (!cmd)
		cmd = xstrdup(f->worker_cmd);
	struct batch_job_spec spec = {0};
	spec.command = cmd;
	spec.env = f->job_env;
	spec.inputs = f->inputs;
	spec.n_inputs = f->n_inputs;
	spec.resources = (struct batch_resources){-1, -1, -1, -1, -1};
	spec.tag = token;
	int64_t id = batch_queue_submit(f->q, &spec);
	free(cmd);
	if (id < 0) {
		j->id = -2;
		wq_factory_pool_remove(&f->pool, -2);
		warn("cannot start a worker: %s", htc_strerror((int)id));
		return (int)id;
	}
	wq_factory_pool_set_id(&f->pool, token, id);
	f->running++;
	f->started++;
	return 0;
}

static void on_drained(json_t *items, const char *err, void *arg)
{
	char *id = arg;
	if (!items)
		warn("master %s: drain of %s not sent: %s", "", id, err);
	else
		debug(D_FACTORY, "drain of %s: %lld told", id,
		      (long long)json_integer_value(
		          json_object_get(json_array_get(items, 0), "drained")));
	json_decref(items);
	free(id);
}

/* Asks the master of worker ID to drain it: HOST PORT, or with -M the master whose status
 * listed the worker in the last cycle. */
static void drain_one(struct factory *f, const char *id)
{
	const char *host = f->host;
	int port = f->port;
	if (f->project) {
		/* -M: the master whose status listed the worker */
		const char *where = json_string_value(json_object_get(f->worker_masters, id));
		char *end = NULL;
		long p = where ? strtol(where, &end, 10) : 0;
		if (!where || p <= 0 || p > 65535 || *end != ' ') {
			debug(D_FACTORY, "drain of %s: its master is not known", id);
			return;
		}
		port = (int)p;
		host = end + 1;
	}
	struct wq_status_opts o = {.key = f->key, .timeout_s = f->period, .worker = id};
	char *err = NULL;
	char *arg = xstrdup(id);
	if (!wq_status_query_start(f->loop, host, port, "drain", &o, on_drained, arg, &err)) {
		warn("master %s:%d: cannot ask for the drain of %s: %s", host, port, id,
		     err ? err : "");
		free(arg);
	} else {
		struct wq_factory_job *j = wq_factory_pool_by_worker(&f->pool, id);
		if (j)
			j->draining = true;
	}
	free(err);
}

/* Carries out D, decided on IN, and logs the pool. */
static void apply(struct factory *f, const struct scaler_input *in, struct scaler_decision *d)
{
	double now = now_s();
	int started = 0;
	for (int i = 0; i < d->start; i++) {
		if (start_one(f, now) < 0)
			break;
		started++;
	}
	for (size_t i = 0; i < d->n_drain; i++)
		drain_one(f, d->drain[i]);
	if (started > 0)
		f->last_start = now;
	if (started > 0 || d->n_drain > 0) {
		f->last_action = now;
		notice("%s: started %d worker%s, draining %zu (%d running)", d->reason, started,
		       started == 1 ? "" : "s", d->n_drain, f->running);
	} else {
		debug(D_FACTORY, "%s: no change", d->reason);
	}
	/* one line per cycle, read by test/bench/hta.sh */
	debug(D_FACTORY,
	      "pool t=%.2f size=%d pending=%d draining=%d connected=%lld waiting=%lld "
	      "running=%lld latency=%.2f started=%d drained=%zu",
	      now - f->t0, (int)f->pool.n, in->pending + started, in->draining + (int)d->n_drain,
	      (long long)in->workers_active, (long long)in->tasks_waiting,
	      (long long)in->tasks_running, f->pool.latency, started, d->n_drain);
}

static void fill_factory_state(struct factory *f, struct scaler_input *in)
{
	scaler_model_apply(f->model, in);
	in->now = now_s();
	in->min_workers = f->limits.min_workers;
	in->max_workers = f->limits.max_workers;
	in->per_cycle = f->limits.workers_per_cycle;
	in->worker_size = f->worker_size;
	in->latency = f->period;
	in->last_action = f->last_action;
	in->last_start = f->last_start;
	in->period = f->period;
	wq_factory_pool_observe(&f->pool, in, in->now);
}

/* The first line of TEXT, at most 200 bytes, into LINE. */
static const char *first_line(const char *text, char line[201])
{
	size_t n = strcspn(text, "\n");
	if (n > 200)
		n = 200;
	memcpy(line, text, n);
	line[n] = 0;
	return line;
}

static void on_hook(const struct scaler_hook_result *r, void *arg)
{
	struct factory *f = arg;
	f->busy = 0;
	struct scaler_input *in = &f->hook_in;
	if (f->stopping) {
		scaler_input_clear(in);
		return;
	}
	struct scaler_decision d = {0};
	char why[512] = "";
	if (r->fail)
		snprintf(why, sizeof why, "%s", r->fail);
	if (!why[0] && scaler_hook_parse(r->out, in, &d, why, sizeof why) == 0) {
		if (f->hook_error)
			notice("--scaler-hook %s answers again", f->hook);
		free(f->hook_error);
		f->hook_error = NULL;
		scaler_apply_limits(in, &d);
		if (d.next_in > 0)
			f->next_at = now_s() + d.next_in;
		apply(f, in, &d);
	} else {
		/* said once for each new reason, then only in the debug log, until it answers */
		char l1[201], l2[201], msg[1024];
		snprintf(msg, sizeof msg,
		         "--scaler-hook %s: %s; it printed \"%s\"%s%s%s; the pool keeps its size",
		         f->hook, why, first_line(r->out, l1), *r->err ? " and on stderr \"" : "",
		         *r->err ? first_line(r->err, l2) : "", *r->err ? "\"" : "");
		int again = f->hook_error && !strcmp(f->hook_error, why);
		if (again)
			debug(D_FACTORY, "%s", msg);
		else
			warn("%s", msg);
		if (!again) {
			free(f->hook_error);
			f->hook_error = xstrdup(why);
		}
		struct scaler_decision none = {0};
		snprintf(none.reason, sizeof none.reason, "hook failed");
		apply(f, in, &none);
	}
	scaler_decision_clear(&d);
	scaler_input_clear(in);
}

/* Decides on IN (owned from here) with the hook or the policy. */
static void decide(struct factory *f, struct scaler_input *in)
{
	fill_factory_state(f, in);
	if (f->hook) {
		if (in->now < f->next_at) {
			scaler_input_clear(in);
			return;
		}
		json_t *doc = scaler_input_json(in);
		char *text = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		f->hook_in = *in;
		f->busy = 1;
		int rc = scaler_hook_run(f->loop, f->hook, text, f->hook_timeout, on_hook, f);
		free(text);
		if (rc < 0) {
			f->busy = 0;
			warn("--scaler-hook %s: cannot run: %s; the pool keeps its size", f->hook,
			     htc_strerror(rc));
			scaler_input_clear(&f->hook_in);
		}
		return;
	}
	struct scaler_decision d;
	scaler_decide(&f->policy, in, &d);
	apply(f, in, &d);
	scaler_decision_clear(&d);
	scaler_input_clear(in);
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
		struct scaler_input none = {0};
		fill_factory_state(f, &none);
		struct scaler_decision d = {0};
		snprintf(d.reason, sizeof d.reason, "no demand known");
		scaler_apply_limits(&none, &d);
		apply(f, &none, &d);
		scaler_decision_clear(&d);
		scaler_input_clear(&none);
		return;
	}
	demand_ok(f);
	struct scaler_input in = {0};
	scaler_input_add_status(&in, json_array_get(items, 0), f->prefix);
	json_decref(items);
	decide(f, &in);
}

/* -M: every master of the cycle has answered (or failed and was taken from its record). */
static void masters_done(struct factory *f)
{
	f->busy = 0;
	json_decref(f->worker_masters);
	f->worker_masters = f->cycle_masters;
	f->cycle_masters = NULL;
	struct scaler_input in = f->cycle_in;
	memset(&f->cycle_in, 0, sizeof f->cycle_in);
	if (f->stopping) {
		scaler_input_clear(&in);
		return;
	}
	decide(f, &in);
}

struct master_ask {
	struct factory *f;
	json_t *record; /* its catalog record, used when the master does not answer */
	char *where;    /* "PORT HOST" */
};

static void on_master_status(json_t *items, const char *err, void *arg)
{
	struct master_ask *a = arg;
	struct factory *f = a->f;
	json_t *st = json_array_get(items, 0);
	if (st) {
		scaler_input_add_status(&f->cycle_in, st, f->prefix);
		size_t i;
		json_t *row;
		json_array_foreach(json_object_get(json_object_get(st, "scaler"), "worker_rows"), i,
		                   row)
		{
			const char *id = json_string_value(json_object_get(row, "id"));
			if (id)
				json_object_set_new(f->cycle_masters, id, json_string(a->where));
		}
	} else {
		/* its catalog record still says what it needs; no drains this cycle */
		debug(D_FACTORY, "master %s: %s; using its catalog record", a->where, err);
		scaler_input_add_status(&f->cycle_in, a->record, f->prefix);
	}
	json_decref(items);
	json_decref(a->record);
	free(a->where);
	free(a);
	if (--f->pending == 0)
		masters_done(f);
}

/* -M: asks the master of catalog record R for its own status; with no address, or when the
 * query cannot start, the record itself is taken. */
static void ask_master(struct factory *f, json_t *r)
{
	const char *host = json_string_value(json_object_get(r, "address"));
	if (!host)
		host = json_string_value(json_object_get(r, "host"));
	json_int_t port = json_integer_value(json_object_get(r, "port"));
	char *err = NULL;
	if (host && port > 0 && port <= 65535) {
		struct master_ask *a = xcalloc(1, sizeof *a);
		a->f = f;
		a->record = json_incref(r);
		a->where = xasprintf("%d %s", (int)port, host);
		struct wq_status_opts o = {.key = f->key, .timeout_s = f->period};
		f->pending++;
		if (wq_status_query_start(f->loop, host, (int)port, "master", &o, on_master_status,
		                          a, &err))
			return;
		f->pending--;
		debug(D_FACTORY, "master %s: %s", a->where, err ? err : "cannot query");
		json_decref(a->record);
		free(a->where);
		free(a);
		free(err);
	}
	scaler_input_add_status(&f->cycle_in, r, f->prefix);
}

static void on_catalog(void *arg, json_t *records, const char *err)
{
	struct factory *f = arg;
	if (f->stopping) {
		f->busy = 0;
		json_decref(records);
		return;
	}
	if (!records) {
		f->busy = 0;
		demand_error(f, "catalog%s: %s", "", err ? err : "no answer");
		struct scaler_input in = {0};
		decide(f, &in);
		return;
	}
	demand_ok(f);
	json_decref(f->cycle_masters);
	f->cycle_masters = json_object();
	f->pending = 1; /* until every master has been asked */
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	{
		/* -M is matched here: the catalog is asked only for a plain name */
		const char *p = json_string_value(json_object_get(r, "project"));
		if (catalog_project_match(f->project_re, p))
			ask_master(f, r);
	}
	json_decref(records);
	if (--f->pending == 0)
		masters_done(f);
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
	wq_factory_pool_remove(&f->pool, id);
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
	f->binary = binary;
	f->k8s_size = k8s.size ? xstrdup(k8s.size) : NULL;
	struct wq_factory_cmd c = {
	    .binary = binary,
	    .host = o->host,
	    .port = o->port,
	    .project = o->project,
	    .catalog = o->catalog,
	    .password = o->password,
	    .size = f->k8s_size ? f->k8s_size : o->size,
	    .timeout = o->timeout,
	    .extra = o->extra,
	    .wrappers = o->wrappers,
	    .n_wrappers = o->n_wrappers,
	};
	f->worker_cmd = wq_factory_worker_command(&c, err, errlen);
	f->cmd = c;
	if (scaler_parse(o->scaler, &f->policy, err, errlen) < 0) {
		k8s_factory_out_clear(&k8s);
		return HTC_EPARSE;
	}
	f->hook = o->scaler_hook;
	f->hook_timeout = o->hook_timeout;
	f->last_action = -1;
	f->last_start = -1;
	f->t0 = now_s();
	f->worker_size = (struct scaler_vec){{o->limits.worker_cores, o->memory_mb, o->disk_mb}};
	wq_factory_pool_init(&f->pool, 2 * f->period);
	wq_factory_pool_prefix(&f->pool, f->prefix, sizeof f->prefix);
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
	if (o->modelled_load) {
		f->model = scaler_model_load(o->modelled_load, err, errlen);
		if (!f->model)
			return HTC_EPARSE;
	}
	/* the record of factory runs: the workers of dead ones go now */
	f->record = o->pool_record ? xstrdup(o->pool_record) : wq_factory_sweep_default_path();
	int swept = wq_factory_sweep_start(f->record, f->pool.run, o->type, err, errlen);
	if (swept < 0)
		return swept;
	if (swept > 0)
		notice("removed %d worker%s left by stopped factories (%s)", swept,
		       swept == 1 ? "" : "s", f->record);
	/* every job carries the run id: cluster drivers name their jobs after it */
	size_t ne = 0;
	while (f->env && f->env[ne])
		ne++;
	f->job_env = xcalloc(ne + 2, sizeof *f->job_env);
	for (size_t i = 0; i < ne; i++)
		f->job_env[i] = f->env[i];
	f->run_env = xasprintf("HTC_RUN_ID=%s", f->pool.run);
	f->job_env[ne] = f->run_env;
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
	/* what the batch system needs before any worker (a kubeconfig, a Slurm controller that
	 * answers): a setup error stops the factory now, not one failed worker per period */
	int rc = batch_queue_start(f->q);
	if (rc < 0) {
		snprintf(err, errlen, "the %s batch system cannot be used: %s", o->type,
		         htc_strerror(rc));
		return rc;
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
	if (f.record && f.job_env)
		wq_factory_sweep_end(f.record, f.pool.run);
	free(f.record);
	scaler_model_delete(f.model);
	free(f.job_env);
	free(f.run_env);
	free(f.worker_cmd);
	free(f.binary);
	free(f.k8s_size);
	wq_factory_pool_clear(&f.pool);
	scaler_input_clear(&f.hook_in);
	free(f.inputs);
	free(f.last_error);
	free(f.hook_error);
	json_decref(f.worker_masters);
	json_decref(f.cycle_masters);
	scaler_input_clear(&f.cycle_in);
	return rc;
}
