/* batch_queue.c: the generic batch layer. It validates and copies job specs, assigns ids, keeps
 * the job table and counters, and delivers every driver-reported completion to the engine from
 * an idle handle, so callbacks never run re-entrantly. Drivers are named only in the registry
 * array below. */
#include "batch_queue.h"
#include "batch_driver.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

static const struct batch_driver *const batch_drivers[] = {
    &batch_driver_local,   // this machine
    &batch_driver_cgroups, // this machine, each job in its cgroup
    &batch_driver_dryrun,  // nothing: a script of the jobs
    &batch_driver_wq,      // Work Queue workers
    &batch_driver_slurm,   // one Slurm batch job per job
    &batch_driver_k8s,     // one Kubernetes pod per job
    &batch_driver_mesos,   // one Mesos task per job
};
#define N_DRIVERS (sizeof batch_drivers / sizeof batch_drivers[0])

enum batch_job_state { JOB_WAITING, JOB_RUNNING, JOB_DONE };

/* The generic layer's record around a job: table link and done-list link. */
struct job_rec {
	struct batch_job job;
	UT_hash_handle hh;
	struct job_rec *next_done;
};

struct batch_queue {
	const struct batch_driver *drv;
	void *state;
	uv_loop_t *loop;
	batch_complete_fn cb;
	void *arg;
	int64_t next_id;
	int submitted;
	struct job_rec *table;
	size_t n_waiting, n_running;
	struct job_rec *done_head, *done_tail;
	uv_idle_t *idle; /* heap-allocated: freed by its close callback */
	int in_dispatch, delete_pending;
};

static struct job_rec *rec_of(struct batch_job *job)
{
	return (struct job_rec *)((char *)job - offsetof(struct job_rec, job));
}

void batch_result_init(struct batch_result *r)
{
	memset(r, 0, sizeof *r);
	r->measured = (struct batch_resources){-1, -1, -1, -1, -1};
	r->allocated = (struct batch_resources){-1, -1, -1, -1, -1};
	r->allocated_cores = -1;
	r->cpu_time_s = -1;
}

void batch_job_set_error(struct batch_job *job, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	free(job->error_text);
	job->error_text = text;
	job->result.error = text ? text : "driver error";
}

void batch_job_set_stderr_tail(struct batch_job *job, const char *text, size_t len)
{
	free(job->stderr_text);
	job->stderr_text =
	    text ? str_tail_lines(text, len, BATCH_TAIL_LINES, BATCH_TAIL_BYTES) : NULL;
	job->result.stderr_tail = job->stderr_text;
}

void batch_job_set_seccomp_denied(struct batch_job *job, const char *const *names)
{
	if (!names || !names[0])
		return;
	free(job->seccomp_text);
	job->seccomp_text = str_join((char *const *)names, ", ");
	job->result.seccomp_denied = job->seccomp_text;
}

const char *batch_queue_types(void)
{
	static char names[256];
	if (!names[0]) {
		size_t used = 0;
		for (size_t i = 0; i < N_DRIVERS; i++) {
			int n = snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "",
			                 batch_drivers[i]->name);
			if (n < 0 || (size_t)n >= sizeof names - used)
				break;
			used += (size_t)n;
		}
	}
	return names;
}

/* Batch systems of the Makeflow tradition (CCTools -T names) that no driver here provides. */
static const char *const planned_types[] = {
    "condor",     "sge",  "uge",     "pbs",    "torque",       "lsf",    "moab",
    "slurm",      "mpi",  "chirp",   "amazon", "amazon-batch", "lambda", "mesos",
    "kubernetes", "flux", "cluster", "vine",   "remote",
};

int batch_queue_type_check(const char *type, char *msg, size_t len)
{
	if (!type)
		type = "";
	for (size_t i = 0; i < N_DRIVERS; i++)
		if (!strcmp(batch_drivers[i]->name, type))
			return 0;
	for (size_t i = 0; i < sizeof planned_types / sizeof planned_types[0]; i++) {
		if (strcmp(planned_types[i], type))
			continue;
		snprintf(msg, len,
		         "batch system %s is not available in this build (yet); available: %s",
		         type, batch_queue_types());
		return HTC_EUNSUP;
	}
	snprintf(msg, len, "unknown batch system '%s'; available: %s", type, batch_queue_types());
	return -EINVAL;
}

static void idle_closed(uv_handle_t *h)
{
	free(h);
}

static void free_spec(struct batch_job_spec *s)
{
	free((char *)s->command);
	for (size_t i = 0; i < s->n_inputs; i++) {
		free((char *)s->inputs[i].local_name);
		free((char *)s->inputs[i].remote_name);
	}
	for (size_t i = 0; i < s->n_outputs; i++) {
		free((char *)s->outputs[i].local_name);
		free((char *)s->outputs[i].remote_name);
	}
	free((void *)s->inputs);
	free((void *)s->outputs);
	if (s->env) {
		for (size_t i = 0; s->env[i]; i++)
			free((char *)s->env[i]);
		free((void *)s->env);
	}
	free((char *)s->category);
	free((char *)s->batch_options);
	free((char *)s->tag);
	free((char *)s->container_image);
	free((char *)s->container_archive);
}

static void free_rec(struct job_rec *r)
{
	free_spec(&r->job.spec);
	free(r->job.error_text);
	free(r->job.seccomp_text);
	free(r->job.stderr_text);
	free(r);
}

static void really_delete(struct batch_queue *q)
{
	q->drv->destroy(q->state);
	struct job_rec *r, *tmp;
	HASH_ITER(hh, q->table, r, tmp)
	{
		HASH_DEL(q->table, r);
		free_rec(r);
	}
	uv_idle_stop(q->idle);
	q->idle->data = NULL;
	uv_close((uv_handle_t *)q->idle, idle_closed);
	debug(D_BATCH, "%s queue deleted", q->drv->name);
	free(q);
}

/* Delivers every completion queued so far; completions queued by the callbacks themselves wait
 * for the next pass. */
static void dispatch(uv_idle_t *idle)
{
	struct batch_queue *q = idle->data;
	if (!q)
		return;
	struct job_rec *r = q->done_head;
	q->done_head = q->done_tail = NULL;
	uv_idle_stop(idle);
	q->in_dispatch = 1;
	while (r) {
		struct job_rec *next = r->next_done;
		HASH_DEL(q->table, r);
		q->n_running--;
		q->cb(q, r->job.id, &r->job.result, q->arg);
		free_rec(r);
		if (q->delete_pending) {
			/* the rest of this pass is still in the table: freed there */
			really_delete(q);
			return;
		}
		r = next;
	}
	q->in_dispatch = 0;
}

struct batch_queue *batch_queue_create(uv_loop_t *loop, const char *type, batch_complete_fn cb,
                                       void *arg)
{
	if (!loop || !type || !cb) {
		errno = EINVAL;
		return NULL;
	}
	const struct batch_driver *drv = NULL;
	for (size_t i = 0; i < N_DRIVERS; i++)
		if (!strcmp(batch_drivers[i]->name, type))
			drv = batch_drivers[i];
	if (!drv) {
		errno = EINVAL;
		return NULL;
	}
	struct batch_queue *q = xcalloc(1, sizeof *q);
	q->drv = drv;
	q->loop = loop;
	q->cb = cb;
	q->arg = arg;
	q->next_id = 1;
	int rc = drv->create(q, &q->state);
	if (rc < 0) {
		free(q);
		errno = rc > -HTC_ERR_BASE ? -rc : EINVAL;
		return NULL;
	}
	q->idle = xmalloc(sizeof *q->idle);
	uv_idle_init(loop, q->idle);
	q->idle->data = q;
	debug(D_BATCH, "%s queue created", drv->name);
	return q;
}

int batch_queue_set_option(struct batch_queue *q, const char *key, const char *value)
{
	if (!key || !value)
		return -EINVAL;
	if (q->submitted)
		return -EBUSY;
	if (!q->drv->set_option)
		return -EINVAL;
	int rc = q->drv->set_option(q->state, key, value);
	if (rc == 0)
		debug(D_BATCH, "%s option %s=%s", q->drv->name, key, value);
	return rc;
}

int batch_queue_start(struct batch_queue *q)
{
	if (q->submitted)
		return -EBUSY;
	if (!q->drv->start)
		return 0;
	int rc = q->drv->start(q->state);
	debug(D_BATCH, "%s queue started: %d", q->drv->name, rc);
	return rc;
}

unsigned batch_queue_features(struct batch_queue *q)
{
	unsigned extra = q->drv->started_features ? q->drv->started_features(q->state) : 0;
	return q->drv->features | extra;
}

const char *batch_queue_type(struct batch_queue *q)
{
	return q->drv->name;
}

uv_loop_t *batch_queue_loop(struct batch_queue *q)
{
	return q->loop;
}

size_t batch_queue_running(struct batch_queue *q)
{
	if (!q->drv->started || !q->state)
		return q->n_running;
	/* finished ones waiting for their callback are in n_running */
	size_t all = q->n_waiting + q->n_running;
	size_t started = q->drv->started(q->state) + q->n_running;
	return started < all ? started : all;
}

size_t batch_queue_waiting(struct batch_queue *q)
{
	return q->n_waiting + q->n_running - batch_queue_running(q);
}

static int env_entry_ok(const char *e)
{
	const char *eq = strchr(e, '=');
	if (!eq || eq == e)
		return 0;
	for (const char *p = e; p < eq; p++) {
		int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
		int digit = *p >= '0' && *p <= '9';
		if (!alpha && !(digit && p > e))
			return 0;
	}
	return 1;
}

static int check_files(const struct batch_file *f, size_t n, unsigned features)
{
	if (n && !f)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!f[i].local_name || !f[i].local_name[0] ||
		    (f[i].remote_name && !f[i].remote_name[0]))
			return -EINVAL;
		const char *seen = f[i].remote_name ? f[i].remote_name : f[i].local_name;
		if (f[i].remote_name && strcmp(f[i].remote_name, f[i].local_name) &&
		    !(features & BATCH_FEATURE_REMOTE_RENAME))
			return HTC_EUNSUP;
		if (seen[0] == '/' && !(features & BATCH_FEATURE_ABSOLUTE_PATHS))
			return HTC_EUNSUP;
	}
	return 0;
}

static int check_spec(const struct batch_job_spec *s, unsigned features)
{
	if (!s || !s->command)
		return -EINVAL;
	if (s->env)
		for (size_t i = 0; s->env[i]; i++)
			if (!env_entry_ok(s->env[i]))
				return -EINVAL;
	if ((s->container_image || s->container_archive) && !(features & BATCH_FEATURE_CONTAINERS))
		return HTC_EUNSUP; /* the caller wraps the command instead */
	if (s->driver_sizes && !(features & BATCH_FEATURE_CATEGORY_SIZING))
		return HTC_EUNSUP; /* the caller sizes the job instead */
	int rc = check_files(s->inputs, s->n_inputs, features);
	if (rc == 0)
		rc = check_files(s->outputs, s->n_outputs, features);
	return rc;
}

static struct batch_file *copy_files(const struct batch_file *f, size_t n)
{
	if (!n)
		return NULL;
	struct batch_file *c = xcalloc(n, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		c[i].local_name = xstrdup(f[i].local_name);
		c[i].remote_name = xstrdup(f[i].remote_name);
	}
	return c;
}

static void copy_spec(struct batch_job_spec *d, const struct batch_job_spec *s)
{
	d->command = xstrdup(s->command);
	d->inputs = copy_files(s->inputs, s->n_inputs);
	d->n_inputs = s->n_inputs;
	d->outputs = copy_files(s->outputs, s->n_outputs);
	d->n_outputs = s->n_outputs;
	d->env = NULL;
	if (s->env) {
		size_t n = 0;
		while (s->env[n])
			n++;
		char **env = xcalloc(n + 1, sizeof *env);
		for (size_t i = 0; i < n; i++)
			env[i] = xstrdup(s->env[i]);
		d->env = (const char *const *)env;
	}
	d->resources = s->resources;
	d->max_resources = s->max_resources;
	d->category = xstrdup(s->category);
	d->batch_options = xstrdup(s->batch_options);
	d->tag = xstrdup(s->tag);
	d->container_image = xstrdup(s->container_image);
	d->container_archive = xstrdup(s->container_archive);
	d->container_shared = s->container_shared;
	d->driver_sizes = s->driver_sizes;
}

int64_t batch_queue_submit(struct batch_queue *q, const struct batch_job_spec *spec)
{
	int rc = check_spec(spec, q->drv->features);
	if (rc < 0)
		return rc;
	struct job_rec *r = xcalloc(1, sizeof *r);
	copy_spec(&r->job.spec, spec);
	r->job.id = q->next_id++;
	r->job.state = JOB_WAITING;
	batch_result_init(&r->job.result);
	r->job.result.submit_us = time_now_us();
	HASH_ADD(hh, q->table, job.id, sizeof r->job.id, r);
	q->n_waiting++;
	q->submitted = 1;
	rc = q->drv->submit(q->state, &r->job);
	if (rc < 0) {
		debug(D_BATCH, "%s job rejected: %s", q->drv->name, htc_strerror(rc));
		HASH_DEL(q->table, r);
		q->n_waiting--;
		free_rec(r);
		return rc;
	}
	debug(D_BATCH, "%s job %lld submitted: %s", q->drv->name, (long long)r->job.id,
	      r->job.spec.command);
	return r->job.id;
}

void batch_job_started(struct batch_queue *q, struct batch_job *job)
{
	if (job->state != JOB_WAITING)
		return;
	job->state = JOB_RUNNING;
	q->n_waiting--;
	q->n_running++;
}

void batch_job_complete(struct batch_queue *q, struct batch_job *job)
{
	if (job->state == JOB_DONE)
		return;
	if (job->state == JOB_WAITING) {
		q->n_waiting--;
		q->n_running++;
	}
	job->state = JOB_DONE;
	if (!job->result.end_us)
		job->result.end_us = time_now_us();
	struct job_rec *r = rec_of(job);
	r->next_done = NULL;
	if (q->done_tail)
		q->done_tail->next_done = r;
	else
		q->done_head = r;
	q->done_tail = r;
	uv_idle_start(q->idle, dispatch);
}

int batch_queue_remove(struct batch_queue *q, int64_t job_id)
{
	struct job_rec *r;
	HASH_FIND(hh, q->table, &job_id, sizeof job_id, r);
	if (!r || r->job.state == JOB_DONE)
		return -ENOENT;
	if (!q->drv->remove)
		return HTC_EUNSUP;
	debug(D_BATCH, "%s job %lld removed", q->drv->name, (long long)job_id);
	return q->drv->remove(q->state, &r->job);
}

int batch_queue_remove_all(struct batch_queue *q)
{
	if (!q->drv->remove)
		return HTC_EUNSUP;
	int n = 0;
	struct job_rec *r, *tmp;
	/* removal completes jobs but never takes them out of the table, so iteration is safe */
	HASH_ITER(hh, q->table, r, tmp)
	{
		if (r->job.state != JOB_DONE && q->drv->remove(q->state, &r->job) == 0)
			n++;
	}
	return n;
}

int batch_queue_remove_waiting(struct batch_queue *q)
{
	if (!q->drv->remove)
		return HTC_EUNSUP;
	int n = 0;
	struct job_rec *r, *tmp;
	HASH_ITER(hh, q->table, r, tmp)
	{
		if (r->job.state == JOB_WAITING && q->drv->remove(q->state, &r->job) == 0)
			n++;
	}
	return n;
}

void batch_queue_delete(struct batch_queue *q)
{
	if (!q)
		return;
	if (q->in_dispatch) {
		q->delete_pending = 1;
		return;
	}
	really_delete(q);
}
