/* batch_driver_wq.c: the "wq" driver. Each job becomes a Work Queue task of a master that runs on
 * makeflow's own libuv loop; workers connect to it (HOST PORT, or the project name through the
 * catalog) and run the tasks in sandboxes. Finished tasks are collected after every loop turn
 * by a uv_check handle, so the driver never polls or blocks. Options and behaviour are in
 * doc/batch-driver-interface.md ("wq"). */
#include "batch_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include <uthash.h>

#include "category.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "work_queue.h"
#include "xalloc.h"

#include "banned.h"

/* Options kept as given until the master is created by wq_start (or at the first submission of
 * a caller that does not start the queue). */
enum wq_opt {
	OPT_PORT,
	OPT_PORT_FILE,
	OPT_PROJECT,
	OPT_CATALOG,
	OPT_PASSWORD,
	OPT_SSL_CERT,
	OPT_SSL_KEY,
	OPT_TXLOG,
	OPT_SHARED_FS,
	OPT_CACHE,
	OPT_KEEPALIVE_INTERVAL,
	OPT_KEEPALIVE_TIMEOUT,
	OPT_SCHEDULE,
	OPT_SYNC_OUTPUTS,
	OPT_PREFETCH,
	OPT_UNFIT_WARNING,
	OPT_FAST_ABORT,
	OPT_PRIORITY,
	OPT_PREFERRED_CONNECTION,
	OPT_WAIT_QUEUE_SIZE,
	OPT_COUNT
};

static const char *const opt_names[OPT_COUNT] = {
    [OPT_PORT] = "port",
    [OPT_PORT_FILE] = "port-file",
    [OPT_PROJECT] = "project",
    [OPT_CATALOG] = "catalog",
    [OPT_PASSWORD] = "password",
    [OPT_SSL_CERT] = "ssl-cert",
    [OPT_SSL_KEY] = "ssl-key",
    [OPT_TXLOG] = "txlog",
    [OPT_SHARED_FS] = "shared-fs",
    [OPT_CACHE] = "cache",
    [OPT_KEEPALIVE_INTERVAL] = "keepalive-interval",
    [OPT_KEEPALIVE_TIMEOUT] = "keepalive-timeout",
    [OPT_SCHEDULE] = "schedule",
    [OPT_SYNC_OUTPUTS] = "sync-outputs",
    [OPT_PREFETCH] = "prefetch",
    [OPT_UNFIT_WARNING] = "unfit-warning",
    [OPT_FAST_ABORT] = "fast-abort",
    [OPT_PRIORITY] = "priority",
    [OPT_PREFERRED_CONNECTION] = "preferred-connection",
    [OPT_WAIT_QUEUE_SIZE] = "wait-queue-size",
};

/* Seconds tasks too large for every connected worker wait before the warning. */
#define UNFIT_WARNING_DEFAULT 30

/* One submitted job: the task's id on the master and the job record, found by task id when
 * the task comes back. */
struct wq_job {
	int taskid;
	struct batch_job *job;
	UT_hash_handle hh;
};

/* A category whose sizing the master was given (spec.driver_sizes). */
struct wq_sized {
	char *name;
	UT_hash_handle hh;
};

struct wq_state {
	struct batch_queue *q;
	struct wq_sized *sized; /* categories handed to the master, by name */
	char *opt[OPT_COUNT];
	struct work_queue *master; /* created by wq_start or the first submission */
	uv_check_t *check;         /* heap-allocated: freed by its close callback */
	struct wq_job *jobs;       /* submitted, not yet completed, by task id */
	int create_error;          /* sticky: the master could not be created */
	/* tasks no connected worker can hold: since when (us, 0 = none), last look, warned */
	int64_t unfit_since, unfit_checked;
	int unfit_warned;
};

static void check_closed(uv_handle_t *h)
{
	free(h);
}

static void collect(uv_check_t *check);

static int wq_create(struct batch_queue *q, void **state)
{
	struct wq_state *st = xcalloc(1, sizeof *st);
	st->q = q;
	st->check = xmalloc(sizeof *st->check);
	uv_check_init(batch_queue_loop(q), st->check);
	st->check->data = st;
	*state = st;
	return 0;
}

/* Checks VALUE for option I; 0 or -EINVAL. */
static int check_value(int i, const char *value)
{
	int64_t v;
	switch (i) {
	case OPT_PORT: return str_to_int64(value, &v) == 0 && v >= 0 && v <= 65535 ? 0 : -EINVAL;
	case OPT_UNFIT_WARNING:
		return str_to_int64(value, &v) == 0 && v >= 0 && v <= 86400 ? 0 : -EINVAL;
	case OPT_KEEPALIVE_INTERVAL:
	case OPT_KEEPALIVE_TIMEOUT:
		return str_to_int64(value, &v) == 0 && v >= 1 && v <= 86400 ? 0 : -EINVAL;
	case OPT_PREFETCH: /* queued tasks per worker: -1 the worker's own limit, 0 off */
		return str_to_int64(value, &v) == 0 && v >= -1 && v <= 256 ? 0 : -EINVAL;
	case OPT_FAST_ABORT: { /* a multiplier; <= 0 off */
		char *end = NULL;
		double d = strtod(value, &end);
		return *value && !*end && d <= 1e6 ? 0 : -EINVAL;
	}
	case OPT_WAIT_QUEUE_SIZE: /* workers to wait for before dispatching */
		return str_to_int64(value, &v) == 0 && v >= 0 && v <= 1000000 ? 0 : -EINVAL;
	case OPT_PRIORITY:
		return str_to_int64(value, &v) == 0 && v >= INT32_MIN && v <= INT32_MAX ? 0
		                                                                        : -EINVAL;
	case OPT_PREFERRED_CONNECTION:
		return !strcmp(value, "by_ip") || !strcmp(value, "by_hostname") ||
		               !strcmp(value, "by_apparent_ip")
		           ? 0
		           : -EINVAL;
	case OPT_CACHE:
	case OPT_SYNC_OUTPUTS: return !strcmp(value, "yes") || !strcmp(value, "no") ? 0 : -EINVAL;
	case OPT_SCHEDULE:
		return !strcmp(value, "fcfs") || !strcmp(value, "files") ||
		               !strcmp(value, "time") || !strcmp(value, "worst") ||
		               !strcmp(value, "rand")
		           ? 0
		           : -EINVAL;
	default: return value[0] ? 0 : -EINVAL;
	}
}

static int wq_set_option(void *state, const char *key, const char *value)
{
	struct wq_state *st = state;
	for (int i = 0; i < OPT_COUNT; i++) {
		if (strcmp(key, opt_names[i]))
			continue;
		if (check_value(i, value) < 0)
			return -EINVAL;
		if (i == OPT_SHARED_FS && st->opt[i]) {
			/* repeatable: one directory per line */
			if (strchr(value, '\n'))
				return -EINVAL;
			char *both = xasprintf("%s\n%s", st->opt[i], value);
			free(st->opt[i]);
			st->opt[i] = both;
			return 0;
		}
		free(st->opt[i]);
		st->opt[i] = xstrdup(value);
		return 0;
	}
	return -EINVAL;
}

static int start_master(struct wq_state *st)
{
	if (st->master)
		return 0;
	if (st->create_error)
		return st->create_error;
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	int64_t port = 9123;
	if (st->opt[OPT_PORT])
		str_to_int64(st->opt[OPT_PORT], &port);
	else if (getenv("WORK_QUEUE_PORT"))
		port = WORK_QUEUE_DEFAULT_PORT;
	o.port = (int)port;
	o.port_file = st->opt[OPT_PORT_FILE];
	o.project = st->opt[OPT_PROJECT];
	o.catalog_hosts = st->opt[OPT_CATALOG];
	o.password_file = st->opt[OPT_PASSWORD];
	o.ssl_cert = st->opt[OPT_SSL_CERT];
	o.ssl_key = st->opt[OPT_SSL_KEY];
	o.txlog = st->opt[OPT_TXLOG];
	o.loop = batch_queue_loop(st->q);
	if ((o.ssl_cert == NULL) != (o.ssl_key == NULL)) {
		warn("wq: --ssl-cert and --ssl-key go together");
		return st->create_error = -EINVAL;
	}
	st->master = work_queue_create_opts(&o); /* reports its own reason with warn() */
	if (!st->master)
		return st->create_error = -(errno ? errno : EIO);
	if (st->opt[OPT_KEEPALIVE_INTERVAL])
		work_queue_specify_keepalive_interval(st->master,
		                                      atoi(st->opt[OPT_KEEPALIVE_INTERVAL]));
	if (st->opt[OPT_KEEPALIVE_TIMEOUT])
		work_queue_specify_keepalive_timeout(st->master,
		                                     atoi(st->opt[OPT_KEEPALIVE_TIMEOUT]));
	if (st->opt[OPT_PREFETCH])
		work_queue_specify_prefetch(st->master, atoi(st->opt[OPT_PREFETCH]), 1.0);
	if (st->opt[OPT_FAST_ABORT])
		work_queue_activate_fast_abort(st->master, strtod(st->opt[OPT_FAST_ABORT], NULL));
	if (st->opt[OPT_SYNC_OUTPUTS])
		work_queue_specify_sync_outputs(st->master,
		                                !strcmp(st->opt[OPT_SYNC_OUTPUTS], "yes"));
	if (st->opt[OPT_WAIT_QUEUE_SIZE])
		work_queue_activate_worker_waiting(st->master, atoi(st->opt[OPT_WAIT_QUEUE_SIZE]));
	if (st->opt[OPT_PRIORITY])
		work_queue_specify_priority(st->master, atoi(st->opt[OPT_PRIORITY]));
	if (st->opt[OPT_PREFERRED_CONNECTION])
		work_queue_master_preferred_connection(st->master,
		                                       st->opt[OPT_PREFERRED_CONNECTION]);
	if (st->opt[OPT_SCHEDULE]) {
		static const char *const algs[] = {"fcfs", "files", "time", "worst", "rand"};
		for (int i = 0; i < 5; i++)
			if (!strcmp(st->opt[OPT_SCHEDULE], algs[i]))
				work_queue_specify_algorithm(st->master,
				                             (enum work_queue_schedule)i);
	}
	notice("wq: listening on port %d%s%s", work_queue_port(st->master),
	       o.project ? ", project " : "", o.project ? o.project : "");
	uv_check_start(st->check, collect);
	return 0;
}

/* The master listens, writes its port file and loads its password and certificates now, so
 * that makeflow stops before running anything when one of them fails. */
static int wq_start(void *state)
{
	return start_master(state);
}

/* True if PATH lies in the shared file system (not transferred). */
static int on_shared_fs(const struct wq_state *st, const char *path)
{
	for (const char *fs = st->opt[OPT_SHARED_FS]; fs && *fs;) {
		const char *end = strchr(fs, '\n');
		size_t len = end ? (size_t)(end - fs) : strlen(fs);
		size_t n = len;
		while (n > 1 && fs[n - 1] == '/')
			n--;
		if (strncmp(path, fs, n) == 0 &&
		    (path[n] == '/' || path[n] == 0 || (n == 1 && fs[0] == '/')))
			return 1;
		fs = end ? end + 1 : fs + len;
	}
	return 0;
}

/* A file a job names by an absolute path is one the workers must find where it is: only
 * under a --shared-fs directory (it is not transferred); anywhere else it is refused. */
static int absolute_paths_ok(const struct wq_state *st, struct batch_job *job)
{
	const struct batch_job_spec *s = &job->spec;
	for (int dir = 0; dir < 2; dir++) {
		const struct batch_file *f = dir ? s->outputs : s->inputs;
		size_t n = dir ? s->n_outputs : s->n_inputs;
		for (size_t i = 0; i < n; i++) {
			const char *seen = f[i].remote_name ? f[i].remote_name : f[i].local_name;
			if ((seen[0] == '/' || f[i].local_name[0] == '/') &&
			    !on_shared_fs(st, f[i].local_name)) {
				warn("wq: job %" PRId64
				     ": %s: a file named by an absolute path must be "
				     "under a --shared-fs directory (workers cannot be sent it)",
				     job->id, f[i].local_name);
				return HTC_EUNSUP;
			}
		}
	}
	return 0;
}

/* The ceiling of a driver-sized field: -1 (a whole worker) when unbounded or unset. */
static double ceiling_of(int64_t v)
{
	return v > 0 && v != BATCH_RESOURCES_UNBOUNDED ? (double)v : -1;
}

/* Hands the sizing of the job's category to the master the first time it is seen: warm-up mode
 * (doc/allocation.md), with the spec's max_resources as its ceiling. 0 or -EINVAL. */
static int size_category(struct wq_state *st, const struct batch_job_spec *s)
{
	const char *name = s->category && *s->category ? s->category : "default";
	struct wq_sized *c = NULL;
	HASH_FIND_STR(st->sized, name, c);
	if (c)
		return 0;
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_CORES] = ceiling_of(s->max_resources.cores);
	max.v[RM_MEMORY] = ceiling_of(s->max_resources.memory_mb);
	max.v[RM_DISK] = ceiling_of(s->max_resources.disk_mb);
	max.v[RM_GPUS] = ceiling_of(s->max_resources.gpus);
	int r = work_queue_specify_category_mode(st->master, name, CATEGORY_MODE_WARMUP);
	if (r == 0)
		r = work_queue_specify_category_max_resources(st->master, name, &max);
	rmsummary_clear(&max);
	if (r < 0)
		return r;
	c = xcalloc(1, sizeof *c);
	c->name = xstrdup(name);
	HASH_ADD_KEYPTR(hh, st->sized, c->name, strlen(c->name), c);
	debug(D_BATCH, "wq: category %s sized by the master (warm-up)", name);
	return 0;
}

/* Builds the task of JOB; NULL with the reason in the job's error on failure. */
static struct work_queue_task *make_task(struct wq_state *st, struct batch_job *job, int *err)
{
	const struct batch_job_spec *s = &job->spec;
	struct work_queue_task *t = work_queue_task_create(s->command);
	int cache = !st->opt[OPT_CACHE] || !strcmp(st->opt[OPT_CACHE], "yes");
	int r = 0;
	for (size_t i = 0; r == 0 && i < s->n_inputs; i++) {
		const struct batch_file *f = &s->inputs[i];
		if (on_shared_fs(st, f->local_name))
			continue;
		const char *remote = f->remote_name ? f->remote_name : f->local_name;
		int flags = cache ? WORK_QUEUE_CACHE : WORK_QUEUE_NOCACHE;
		/* A directory input means the directory and all of its contents (as in CCTools),
		 * cached like a file: sent once per worker (once per store of workers that share
		 * one), and placed in each sandbox as a tree of its own whose files are links to
		 * the worker's cache. */
		struct stat sb;
		if (stat(f->local_name, &sb) == 0 && S_ISDIR(sb.st_mode))
			r = work_queue_task_specify_directory(t, f->local_name, remote,
			                                      WORK_QUEUE_INPUT, flags, 1);
		else
			r = work_queue_task_specify_input_file(t, f->local_name, remote, flags);
	}
	for (size_t i = 0; r == 0 && i < s->n_outputs; i++) {
		const struct batch_file *f = &s->outputs[i];
		if (on_shared_fs(st, f->local_name))
			continue;
		const char *remote = f->remote_name ? f->remote_name : f->local_name;
		r = work_queue_task_specify_output_file(t, f->local_name, remote,
		                                        WORK_QUEUE_NOCACHE);
	}
	int cmode = s->container_shared ? WORK_QUEUE_CONTAINER_SHARED : WORK_QUEUE_CONTAINER_TASK;
	if (r == 0 && s->container_archive)
		r = work_queue_task_specify_container_archive(t, s->container_archive, NULL, cmode);
	else if (r == 0 && s->container_image)
		r = work_queue_task_specify_container(t, s->container_image, cmode);
	for (const char *const *e = s->env; r == 0 && e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char *name = xstrndup(*e, (size_t)(eq - *e));
		r = work_queue_task_specify_environment_variable(t, name, eq + 1);
		free(name);
	}
	const struct batch_resources *res = &s->resources;
	if (r == 0 && s->driver_sizes) {
		r = size_category(st, s);
		if (r < 0)
			warn("wq: job %" PRId64 ": cannot size category %s", job->id,
			     s->category ? s->category : "default");
	}
	if (r == 0 && res->cores >= 0)
		r = work_queue_task_specify_cores(t, (double)res->cores);
	if (r == 0 && res->memory_mb >= 0)
		r = work_queue_task_specify_memory(t, res->memory_mb);
	/* the category's ceiling: a worker that grows tasks may grow it up to there (for a task
	 * the master sizes, the master's category says it; a declared value does not grow) */
	if (r == 0 && !s->driver_sizes && res->memory_mb > 0 &&
	    s->max_resources.memory_mb > res->memory_mb)
		r = work_queue_task_specify_memory_max(t, s->max_resources.memory_mb);
	if (r == 0 && res->disk_mb >= 0)
		r = work_queue_task_specify_disk(t, res->disk_mb);
	if (r == 0 && res->gpus >= 0)
		r = work_queue_task_specify_gpus(t, res->gpus);
	if (r == 0 && res->wall_time_s > 0)
		r = work_queue_task_specify_running_time_max(t, (double)res->wall_time_s);
	if (r == 0 && s->category && *s->category)
		r = work_queue_task_specify_category(t, s->category);
	if (r == 0 && s->tag && *s->tag)
		r = work_queue_task_specify_tag(t, s->tag);
	if (r < 0) {
		warn("wq: job %" PRId64 ": %s", job->id, work_queue_task_last_error(t));
		work_queue_task_delete(t);
		*err = r;
		return NULL;
	}
	return t;
}

static int wq_submit(void *state, struct batch_job *job)
{
	struct wq_state *st = state;
	int r = start_master(st);
	if (r < 0)
		return r;
	r = absolute_paths_ok(st, job);
	if (r < 0)
		return r;
	struct work_queue_task *t = make_task(st, job, &r);
	if (!t)
		return r;
	int id = work_queue_submit(st->master, t);
	if (id < 0) {
		work_queue_task_delete(t);
		return id;
	}
	struct wq_job *w = xcalloc(1, sizeof *w);
	w->taskid = id;
	w->job = job;
	HASH_ADD_INT(st->jobs, taskid, w);
	job->driver_data = w;
	return 0;
}

static struct wq_job *find(struct wq_state *st, int taskid)
{
	struct wq_job *w = NULL;
	HASH_FIND_INT(st->jobs, &taskid, w);
	return w;
}

static void unlink_job(struct wq_state *st, struct wq_job *w)
{
	HASH_DEL(st->jobs, w);
	w->job->driver_data = NULL;
	free(w);
}

/* Which batch_exhausted bits the measured limits_exceeded of T name. */
static int exhausted_bits(const struct work_queue_task *t)
{
	int bits = 0;
	const struct rmsummary *m = t->resources_measured;
	if (m) {
		if (m->limits_exceeded[RM_CORES] >= 0)
			bits |= BATCH_EXHAUSTED_CORES;
		if (m->limits_exceeded[RM_MEMORY] >= 0)
			bits |= BATCH_EXHAUSTED_MEMORY;
		if (m->limits_exceeded[RM_DISK] >= 0)
			bits |= BATCH_EXHAUSTED_DISK;
		if (m->limits_exceeded[RM_GPUS] >= 0)
			bits |= BATCH_EXHAUSTED_GPUS;
		if (m->limits_exceeded[RM_WALL_TIME] >= 0)
			bits |= BATCH_EXHAUSTED_WALL_TIME;
	}
	return bits ? bits : BATCH_EXHAUSTED_MEMORY;
}

/* The summary's seccomp_denied (a JSON array of names, kept as an extra of the rmsummary) into
 * the job's result. */
static void fill_seccomp(struct batch_job *job, const struct rmsummary *m)
{
	for (size_t i = 0; i < m->n_extra; i++) {
		if (strcmp(m->extra_keys[i], "seccomp_denied") != 0 || !m->extra_values[i])
			continue;
		json_t *a = json_loads(m->extra_values[i], JSON_DECODE_ANY, NULL);
		size_t n = json_is_array(a) ? json_array_size(a) : 0;
		if (n > 64)
			n = 64;
		const char **names = xcalloc(n + 1, sizeof *names);
		size_t k = 0;
		for (size_t j = 0; j < n; j++) {
			const char *s = json_string_value(json_array_get(a, j));
			if (s)
				names[k++] = s;
		}
		batch_job_set_seccomp_denied(job, names);
		free(names);
		json_decref(a);
		return;
	}
}

/* Fills the job's result from the finished task T. */
static void fill_result(struct batch_job *job, const struct work_queue_task *t)
{
	struct batch_result *r = &job->result;
	r->start_us = t->time_when_commit_end ? t->time_when_commit_end : t->time_when_commit_start;
	r->end_us = t->time_when_done ? t->time_when_done : time_now_us();
	const struct rmsummary *m = t->resources_measured;
	if (m) {
		r->measured.cores = m->v[RM_CORES] >= 0 ? (int64_t)(m->v[RM_CORES] + 0.999) : -1;
		r->measured.memory_mb = m->v[RM_MEMORY] >= 0 ? (int64_t)m->v[RM_MEMORY] : -1;
		r->measured.disk_mb = m->v[RM_DISK] >= 0 ? (int64_t)m->v[RM_DISK] : -1;
		r->measured.wall_time_s =
		    m->v[RM_WALL_TIME] >= 0 ? (int64_t)m->v[RM_WALL_TIME] : -1;
		r->cpu_time_s = m->v[RM_CPU_TIME] >= 0 ? m->v[RM_CPU_TIME] : -1;
		fill_seccomp(job, m);
	}
	r->limit_raises = t->memory_grow_steps; /* grown on the worker instead of a kill */
	r->memory_held_mb = t->memory_held_avg > 0 ? t->memory_held_avg : 0;
	r->cores_held = t->cores_held_avg > 0 ? t->cores_held_avg : 0; /* lent idle cores */
	const struct rmsummary *a = t->resources_allocated;
	if (job->spec.driver_sizes && a) {
		r->allocated.cores = a->v[RM_CORES] >= 0 ? (int64_t)(a->v[RM_CORES] + 0.999) : -1;
		r->allocated_cores = a->v[RM_CORES];
		r->allocated.memory_mb = a->v[RM_MEMORY] >= 0 ? (int64_t)a->v[RM_MEMORY] : -1;
		r->allocated.disk_mb = a->v[RM_DISK] >= 0 ? (int64_t)a->v[RM_DISK] : -1;
		r->allocated.gpus = a->v[RM_GPUS] >= 0 ? (int64_t)a->v[RM_GPUS] : -1;
		r->allocation_computed = t->allocation_computed;
		r->driver_retries = t->exhausted_attempts;
	}
	switch (t->result) {
	case WORK_QUEUE_RESULT_SUCCESS:
		r->exited_normally = 1;
		r->exit_code = t->return_status;
		break;
	case WORK_QUEUE_RESULT_SIGNAL:
		r->signal = t->return_status > 0 ? t->return_status : 9;
		break;
	case WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION:
		r->exhausted = exhausted_bits(t);
		r->signal = 9;
		break;
	case WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME:
		r->exhausted = BATCH_EXHAUSTED_WALL_TIME;
		r->signal = 9;
		break;
	case WORK_QUEUE_RESULT_DISK_ALLOC_FULL:
		r->exhausted = BATCH_EXHAUSTED_DISK;
		r->signal = 9;
		break;
	default:
		batch_job_set_error(job, "work queue: %s%s%s", work_queue_result_str(t->result),
		                    t->hostname ? " on " : "", t->hostname ? t->hostname : "");
		break;
	}
	/* the worker keeps the task's stdout and stderr together, in t->output */
	int ok = r->exited_normally && r->exit_code == 0 && !r->exhausted && !r->error;
	if (!ok && t->output)
		batch_job_set_stderr_tail(job, t->output, strlen(t->output));
}

/* After every loop turn: hand each finished task back to its job. */
/* 1 if the resources R fit the worker box TOTAL (a JSON object with cores, memory, disk, gpus);
 * an unset request fits. */
static int fits(const struct batch_resources *r, json_t *total)
{
	double cores = json_number_value(json_object_get(total, "cores"));
	json_int_t memory = json_integer_value(json_object_get(total, "memory"));
	json_int_t disk = json_integer_value(json_object_get(total, "disk"));
	json_int_t gpus = json_integer_value(json_object_get(total, "gpus"));
	return !((r->cores > 0 && (double)r->cores > cores + 1e-9) ||
	         (r->memory_mb > 0 && r->memory_mb > memory) ||
	         (r->disk_mb > 0 && r->disk_mb > disk) || (r->gpus > 0 && r->gpus > gpus));
}

/* Warns once when, for the grace period (option unfit-warning), some tasks have needed more than
 * any connected worker has: without it they would wait for a larger worker in silence. Looks at
 * most once a second. */
static void check_unfit(struct wq_state *st)
{
	int64_t now = time_now_us();
	if (st->unfit_warned || now - st->unfit_checked < 1000000)
		return;
	st->unfit_checked = now;
	int64_t grace = UNFIT_WARNING_DEFAULT;
	if (st->opt[OPT_UNFIT_WARNING])
		str_to_int64(st->opt[OPT_UNFIT_WARNING], &grace);
	json_t *workers = (json_t *)work_queue_status(st->master, "workers");
	json_t *largest = NULL;
	size_t i, nw = 0;
	json_t *w;
	json_array_foreach(workers, i, w)
	{
		json_t *total = json_object_get(w, "total");
		if (!total || json_number_value(json_object_get(total, "cores")) <= 0)
			continue; /* still in its handshake */
		nw++;
		if (!largest || json_number_value(json_object_get(total, "cores")) >
		                    json_number_value(json_object_get(largest, "cores")))
			largest = total;
	}
	int64_t unfit = 0;
	struct batch_job *example = NULL;
	for (struct wq_job *j = st->jobs; j && nw > 0; j = j->hh.next) {
		int any = 0;
		json_array_foreach(workers, i, w)
		{
			json_t *total = json_object_get(w, "total");
			if (total && json_number_value(json_object_get(total, "cores")) > 0 &&
			    fits(&j->job->spec.resources, total)) {
				any = 1;
				break;
			}
		}
		if (!any && unfit++ == 0)
			example = j->job;
	}
	if (!unfit) {
		st->unfit_since = 0;
	} else if (!st->unfit_since) {
		st->unfit_since = now;
	}
	if (unfit && now - st->unfit_since >= grace * 1000000) {
		const struct batch_resources *r = &example->spec.resources;
		const int64_t want[4] = {r->cores, r->memory_mb, r->disk_mb, r->gpus};
		static const char *const fmt[4] = {"cores %lld", "memory %lld MB", "disk %lld MB",
		                                   "gpus %lld"};
		char asks[160] = "";
		size_t n = 0;
		for (int k = 0; k < 4; k++) {
			if (want[k] <= 0 || n >= sizeof asks)
				continue;
			if (n)
				n += (size_t)snprintf(asks + n, sizeof asks - n, ", ");
			if (n < sizeof asks)
				n += (size_t)snprintf(asks + n, sizeof asks - n, fmt[k],
				                      (long long)want[k]);
		}
		warn("wq: %lld task%s need%s more than any of the %zu connected worker%s has and "
		     "wait%s for a larger one; e.g. %s asks for %s; the largest worker has cores "
		     "%g, "
		     "memory %lld MB, disk %lld MB, gpus %lld",
		     (long long)unfit, unfit == 1 ? "" : "s", unfit == 1 ? "s" : "", nw,
		     nw == 1 ? "" : "s", unfit == 1 ? "s" : "",
		     example->spec.tag ? example->spec.tag : "a task", asks,
		     json_number_value(json_object_get(largest, "cores")),
		     (long long)json_integer_value(json_object_get(largest, "memory")),
		     (long long)json_integer_value(json_object_get(largest, "disk")),
		     (long long)json_integer_value(json_object_get(largest, "gpus")));
		st->unfit_warned = 1;
	}
	json_decref(workers);
}

static void collect(uv_check_t *check)
{
	struct wq_state *st = check->data;
	if (!st->master)
		return;
	check_unfit(st);
	struct work_queue_task *t;
	while ((t = work_queue_wait(st->master, 0)) != NULL) {
		struct wq_job *w = find(st, t->taskid);
		if (!w) {
			debug(D_BATCH, "wq: task %d finished but no job holds it", t->taskid);
			work_queue_task_delete(t);
			continue;
		}
		struct batch_job *job = w->job;
		unlink_job(st, w);
		fill_result(job, t);
		work_queue_task_delete(t);
		batch_job_complete(st->q, job);
	}
}

static int wq_remove(void *state, struct batch_job *job)
{
	struct wq_state *st = state;
	struct wq_job *w = job->driver_data;
	if (!w || !st->master)
		return -ENOENT;
	struct work_queue_task *t = work_queue_cancel_by_taskid(st->master, w->taskid);
	unlink_job(st, w);
	job->result.removed = 1;
	job->result.signal = 9;
	job->result.end_us = time_now_us();
	work_queue_task_delete(t);
	batch_job_complete(st->q, job);
	return 0;
}

static void wq_destroy(void *state)
{
	struct wq_state *st = state;
	while (st->jobs)
		unlink_job(st, st->jobs);
	struct wq_sized *c, *tmp;
	HASH_ITER(hh, st->sized, c, tmp)
	{
		HASH_DEL(st->sized, c);
		free(c->name);
		free(c);
	}
	work_queue_delete(st->master);
	uv_close((uv_handle_t *)st->check, check_closed);
	for (int i = 0; i < OPT_COUNT; i++)
		free(st->opt[i]);
	free(st);
}

/* The master's count of running tasks (and of those finished, not yet collected). */
static size_t wq_started(void *state)
{
	struct wq_state *st = state;
	if (!st->master)
		return 0;
	struct work_queue_stats s;
	work_queue_get_stats(st->master, &s);
	return (size_t)s.tasks_running + (size_t)s.tasks_with_results;
}

const struct batch_driver batch_driver_wq = {
    .name = "wq",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_REMOTE_RENAME | BATCH_FEATURE_REMOVE |
                BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_MEMORY_LIMIT | BATCH_FEATURE_MEASURE |
                BATCH_FEATURE_CONTAINERS | BATCH_FEATURE_CATEGORY_SIZING,
    .create = wq_create,
    .destroy = wq_destroy,
    .set_option = wq_set_option,
    .start = wq_start,
    .submit = wq_submit,
    .remove = wq_remove,
    .started = wq_started,
};
