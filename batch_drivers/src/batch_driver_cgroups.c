/* batch_driver_cgroups.c: the "cgroups" driver. Jobs are admitted and scheduled on this machine
 * exactly as by the local driver (batch_local_sched.c), but each one runs under the resource
 * monitor in its own cgroup, with its allocation enforced by the kernel (CPU quota, a cpuset of
 * cores no other job holds, memory limit, process limit) and measured exactly. A job at its
 * memory limit may be grown while the machine has memory to spare, and a job whose memory
 * grows abnormally fast while memory is short is throttled to protect its neighbours. */
#include "batch_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "batch_local_sched.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_elastic.h"
#include "rmonitor.h"
#include "rmsummary.h"
#include "shell_words.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

/* Period of the watch over running jobs (growth rate, throttle release), ms. */
#define CG_TICK_MS 250
/* What at_memory_limit returns to leave a throttled task waiting at its limit (released later
 * with rmonitor_set_memory_limit). */
#define CG_KEEP_WAITING (-1)

struct cg_job {
	struct lsched_job base; /* first: the scheduler allocates and frees the record */
	struct rmonitor *m;
	cpu_set_t cpus; /* the cores pinned to the job (none when n_cpus is 0) */
	int n_cpus;
	struct rmon_elastic_task el; /* its limit, growths, throttle (the shared policy) */
};

struct cg_state {
	struct lsched s;
	cpu_set_t allowed; /* the cpus this process may use */
	cpu_set_t used;    /* pinned to running jobs */
	int null_fd;       /* /dev/null, the jobs' stdin */
	int pin_cpus;
	struct rmon_elastic_cfg el; /* memory-grow, memory-throttle, memory-throttle-rate */
	int64_t pids_max;           /* -1 = none */
	uv_timer_t *tick;           /* heap: freed by its close callback */
};

static double current_mb(const struct cg_job *cj)
{
	const struct rmsummary *now = cj->m ? rmonitor_current(cj->m) : NULL;
	return now && now->v[RM_MEMORY] > 0 ? now->v[RM_MEMORY] : 0;
}

/* Memory the queue may still hand out: the machine's available memory less what running jobs
 * were allocated but do not use yet (they may still claim it), bounded by what admission has
 * not promised. EXCEPT is left out of the reserve (the job asking). */
static int64_t headroom_mb(const struct cg_state *st, const struct cg_job *except)
{
	double reserve = 0;
	const struct lsched_job *j;
	DL_FOREACH(st->s.running, j)
	{
		const struct cg_job *cj = (const struct cg_job *)j;
		if (cj == except || cj->el.limit_mb < 0)
			continue;
		double unused = (double)cj->el.limit_mb - current_mb(cj);
		if (unused > 0)
			reserve += unused;
	}
	int64_t machine = lsched_meminfo_mb("MemAvailable") - (int64_t)reserve;
	int64_t queue = st->s.memory - st->s.used_memory;
	return machine < queue ? machine : queue;
}

/* Whether free memory is under CG_SHORT_FRACTION, of the machine or of the queue's memory. */
static int memory_short(const struct cg_state *st)
{
	int64_t total = lsched_meminfo_mb("MemTotal");
	int64_t avail = lsched_meminfo_mb("MemAvailable");
	if (rmon_elastic_short(total, (double)(total - avail)))
		return 1;
	double used = 0;
	const struct lsched_job *j;
	DL_FOREACH(st->s.running, j)
	used += current_mb((const struct cg_job *)j);
	return rmon_elastic_short(st->s.memory, used);
}

/* rmonitor's at_memory_limit: grow the job, keep a throttled one waiting, or end it. */
static int64_t at_memory_limit(struct rmonitor *m, int64_t limit_mb, void *arg)
{
	(void)m;
	struct cg_job *cj = arg;
	struct cg_state *st = cj->base.s->arg;
	int64_t id = cj->base.job->id;
	struct rmon_elastic_now now = {
	    .ms = uv_now(st->s.loop),
	    .usage_mb = current_mb(cj),
	    .short_mem = cj->el.throttled ? memory_short(st) : 0,
	    .unlimited_mb = st->s.memory,
	};
	/* the headroom is read only when growth is possible (it reads /proc/meminfo) */
	if (st->el.grow && cj->el.max_mb > limit_mb)
		now.room_mb = headroom_mb(st, cj);
	int64_t to = 0;
	const char *why = NULL;
	switch (rmon_elastic_at_limit(&st->el, &cj->el, limit_mb, &now, &to, &why)) {
	case RMON_ELASTIC_WAIT:
		debug(D_BATCH, "cgroups job %" PRId64 " throttled at %" PRId64 " MB: waits", id,
		      limit_mb);
		return CG_KEEP_WAITING; /* released from the tick */
	case RMON_ELASTIC_RELEASE:
		notice("cgroups job %" PRId64 ": throttle released to %" PRId64 " MB", id, to);
		return to;
	case RMON_ELASTIC_GROW:
		lsched_charge_memory(&st->s, &cj->base, to - limit_mb);
		notice("cgroups job %" PRId64 ": memory limit raised from %" PRId64 " to %" PRId64
		       " MB (raise %d, maximum %" PRId64 " MB)",
		       id, limit_mb, to, cj->el.raises, cj->el.max_mb);
		return to;
	case RMON_ELASTIC_GIVE_UP:
	default: break;
	}
	if (st->el.grow)
		notice("cgroups job %" PRId64 " reached its memory limit of %" PRId64
		       " MB (maximum %" PRId64 " MB; %s): memory exhausted",
		       id, limit_mb, cj->el.max_mb > 0 ? cj->el.max_mb : limit_mb, why);
	return 0;
}

static void watch_job(struct cg_state *st, struct cg_job *cj, uint64_t now_ms, int short_mem)
{
	struct rmon_elastic_now now = {
	    .ms = now_ms,
	    .usage_mb = current_mb(cj),
	    .short_mem = short_mem,
	    .unlimited_mb = st->s.memory,
	};
	int64_t id = cj->base.job->id;
	int64_t to = 0;
	double rate = rmon_elastic_rate(&cj->el, now_ms, now.usage_mb);
	enum rmon_elastic_action a = rmon_elastic_tick(&st->el, &cj->el, &now, &to);
	if (a == RMON_ELASTIC_NONE || rmonitor_set_memory_limit(cj->m, to) != 0)
		return;
	rmon_elastic_applied(&cj->el, a, to, &now);
	if (a == RMON_ELASTIC_UNTHROTTLE)
		notice("cgroups job %" PRId64 ": memory is free again, throttle released to "
		       "%" PRId64 " MB%s",
		       id, to, cj->el.throttled ? "" : " (its own limit)");
	else if (a == RMON_ELASTIC_THROTTLE)
		notice("cgroups job %" PRId64 ": memory grows at %.0f MB/s while memory is "
		       "short: throttled at %" PRId64 " MB",
		       id, rate, to);
}

static void on_tick(uv_timer_t *t)
{
	struct cg_state *st = t->data;
	uint64_t now_ms = uv_now(st->s.loop);
	int short_mem = memory_short(st);
	struct lsched_job *j;
	DL_FOREACH(st->s.running, j)
	watch_job(st, (struct cg_job *)j, now_ms, short_mem);
}

static void release_cpus(struct cg_state *st, struct cg_job *cj)
{
	for (int c = 0; c < CPU_SETSIZE && cj->n_cpus; c++)
		if (CPU_ISSET(c, &cj->cpus))
			CPU_CLR(c, &st->used);
	cj->n_cpus = 0;
	CPU_ZERO(&cj->cpus);
}

/* Pins the job to its cores' worth of whole cpus that no other job holds, written as a cpuset
 * list into BUF; returns 0 (BUF empty) when that many are not free. */
static int pick_cpus(struct cg_state *st, struct cg_job *cj, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!st->pin_cpus || !cj->base.cores_declared)
		return 0;
	cpu_set_t freeset;
	CPU_XOR(&freeset, &st->allowed, &st->used);
	CPU_AND(&freeset, &freeset, &st->allowed);
	if (CPU_COUNT(&freeset) < cj->base.cores)
		return 0;
	size_t used = 0;
	CPU_ZERO(&cj->cpus);
	for (int c = 0; c < CPU_SETSIZE && cj->n_cpus < cj->base.cores; c++) {
		if (!CPU_ISSET(c, &freeset))
			continue;
		int n = snprintf(buf + used, size - used, "%s%d", used ? "," : "", c);
		if (n < 0 || (size_t)n >= size - used)
			break;
		used += (size_t)n;
		CPU_SET(c, &cj->cpus);
		CPU_SET(c, &st->used);
		cj->n_cpus++;
	}
	if (cj->n_cpus < cj->base.cores) {
		release_cpus(st, cj);
		buf[0] = '\0';
	}
	return cj->n_cpus;
}

static int64_t to_count(double v, int up)
{
	if (v < 0)
		return -1;
	return (int64_t)(up ? ceil(v) : llround(v));
}

/* rmonitor's done: the job and its whole tree are gone, its cgroup removed. */
static void job_done(struct rmonitor *m, const struct rmsummary *sum, void *arg)
{
	struct cg_job *cj = arg;
	struct cg_state *st = cj->base.s->arg;
	struct batch_result *r = &cj->base.job->result;
	r->measured.cores = to_count(sum->v[RM_CORES], 0);
	r->measured.memory_mb = to_count(sum->v[RM_MEMORY], 1);
	/* jobs share the cwd: no disk use of its own was measured */
	r->measured.disk_mb = -1;
	r->measured.gpus = to_count(sum->v[RM_GPUS], 0);
	r->measured.wall_time_s = to_count(sum->v[RM_WALL_TIME], 0);
	r->cpu_time_s = sum->v[RM_CPU_TIME] >= 0 ? sum->v[RM_CPU_TIME] : -1;
	r->limit_raises = cj->el.raises;
	if (cj->el.raises || cj->el.shrinks) {
		double held = rmon_elastic_mean_held(&cj->el, uv_now(st->s.loop));
		r->memory_held_mb = held > 0 ? held : 0;
	}
	int64_t status = 0;
	int sig = 0;
	switch (sum->exit_type) {
	case RM_EXIT_NORMAL: status = sum->exit_status; break;
	case RM_EXIT_LIMITS: {
		static const struct {
			int field, bit;
		} map[] = {
		    {RM_MEMORY, BATCH_EXHAUSTED_MEMORY},
		    {RM_SWAP_MEMORY, BATCH_EXHAUSTED_MEMORY},
		    {RM_VIRTUAL_MEMORY, BATCH_EXHAUSTED_MEMORY},
		    {RM_DISK, BATCH_EXHAUSTED_DISK},
		    {RM_WALL_TIME, BATCH_EXHAUSTED_WALL_TIME},
		    {RM_CORES, BATCH_EXHAUSTED_CORES},
		    {RM_CPU_TIME, BATCH_EXHAUSTED_CORES},
		    {RM_GPUS, BATCH_EXHAUSTED_GPUS},
		};
		for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
			if (sum->limits_exceeded[map[i].field] >= 0)
				r->exhausted |= map[i].bit;
		sig = sum->signal > 0 ? sum->signal : SIGKILL;
		break;
	}
	case RM_EXIT_SIGNAL: sig = sum->signal > 0 ? sum->signal : SIGKILL; break;
	default:
		batch_job_set_error(cj->base.job, "resource monitor gave no exit status");
		sig = SIGKILL;
		break;
	}
	if (r->exhausted & BATCH_EXHAUSTED_MEMORY)
		notice("cgroups job %" PRId64 " killed: memory exhausted (limit %" PRId64
		       " MB, peak %" PRId64 " MB)",
		       cj->base.job->id, cj->el.limit_mb, r->measured.memory_mb);
	batch_job_set_seccomp_denied(cj->base.job, rmonitor_seccomp_denied(m));
	rmonitor_delete(m);
	cj->m = NULL;
	release_cpus(st, cj);
	lsched_job_ended(&cj->base, status, sig);
	lsched_schedule(&st->s);
	if (!st->s.running)
		uv_timer_stop(st->tick);
}

static int cg_start(void *arg, struct lsched_job *j)
{
	struct cg_state *st = arg;
	struct cg_job *cj = (struct cg_job *)j;
	struct batch_job *job = j->job;
	const struct batch_resources *res = &job->spec.resources;
	const char *sh_args[] = {"/bin/sh", "-c", job->spec.command, NULL};
	char **words = lsched_command_words(job);
	char **env = lsched_job_env(j);
	static const char *const no_dirs[] = {NULL};
	char cpus[1024];
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = words ? (const char *const *)words : sh_args;
	spec.env = (const char *const *)env;
	spec.stdin_fd = st->null_fd;
	int err_fd = lsched_stderr_pipe(j);
	spec.stderr_fd = err_fd;
	spec.new_session = 1;
	/* local execution shares the cwd: no per-job disk to measure there */
	spec.measure_dirs = no_dirs;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	spec.seccomp_profile = st->s.seccomp;
	/* the throttle needs fresh memory readings (rmonitor_current is a snapshot) */
	if (st->el.throttle)
		spec.interval_s = CG_TICK_MS / 1000.0;
	spec.at_memory_limit = at_memory_limit;
	spec.at_memory_limit_arg = cj;
	rmon_elastic_task_init(&cj->el, res->memory_mb, job->spec.max_resources.memory_mb);
	rmon_elastic_start(&cj->el, uv_now(st->s.loop));
	if (cj->el.limit_mb >= 0)
		spec.limits.v[RM_MEMORY] = (double)cj->el.limit_mb;
	if (j->cores_declared)
		spec.limits.v[RM_CORES] = (double)j->cores;
	if (st->pids_max > 0)
		spec.limits.v[RM_MAX_CONCURRENT_PROCESSES] = (double)st->pids_max;
	if (pick_cpus(st, cj, cpus, sizeof cpus))
		spec.cpuset = cpus;
	int err = 0;
	cj->m = rmonitor_start(st->s.loop, &spec, job_done, cj, &err);
	if (err_fd >= 0)
		close(err_fd);
	shell_words_free(words);
	lsched_env_free(env);
	if (!cj->m) {
		release_cpus(st, cj);
		batch_job_set_error(job, "cannot start under the resource monitor: %s",
		                    htc_strerror(err));
		return err < 0 ? err : -EIO;
	}
	if (!uv_is_active((uv_handle_t *)st->tick))
		uv_timer_start(st->tick, on_tick, CG_TICK_MS, CG_TICK_MS);
	debug(D_BATCH,
	      "cgroups job %" PRId64 " started as pid %d (cores %" PRId64 ", memory %" PRId64
	      " MB, cpus %s)",
	      job->id, (int)rmonitor_pid(cj->m), j->cores, cj->el.limit_mb, cpus[0] ? cpus : "any");
	return 0;
}

static void cg_kill(void *arg, struct lsched_job *j)
{
	(void)arg;
	struct cg_job *cj = (struct cg_job *)j;
	if (cj->m)
		rmonitor_kill(cj->m, SIGKILL);
}

static void cg_abandon(void *arg, struct lsched_job *j)
{
	struct cg_job *cj = (struct cg_job *)j;
	/* kills the whole tree and removes its cgroup; done is not called */
	rmonitor_delete(cj->m);
	cj->m = NULL;
	release_cpus(arg, cj);
}

static const struct lsched_ops cg_ops = {
    .start = cg_start,
    .kill = cg_kill,
    .abandon = cg_abandon,
};

static void tick_closed(uv_handle_t *h)
{
	free(h);
}

static void probe_done(struct rmonitor *m, const struct rmsummary *s, void *arg)
{
	(void)m;
	(void)s;
	(void)arg;
}

/* Whether this process can run a task in its own cgroup: start `true` under a monitor that
 * requires cgroups, and drop it at once. */
static int probe_cgroups(uv_loop_t *loop)
{
	static const char *const argv[] = {"true", NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	int err = 0;
	struct rmonitor *m = rmonitor_start(loop, &spec, probe_done, NULL, &err);
	if (!m)
		return err < 0 ? err : -EIO;
	rmonitor_delete(m);
	return 0;
}

static int cg_create(struct batch_queue *q, void **state)
{
	uv_loop_t *loop = batch_queue_loop(q);
	int removed = rmonitor_cleanup_stale(NULL);
	if (removed > 0)
		notice("cgroups: removed %d cgroups left by earlier runs", removed);
	int rc = probe_cgroups(loop);
	if (rc < 0) {
		warn("cgroups: cannot run jobs in their own cgroups here (%s); the cgroups batch "
		     "type needs a writable cgroup hierarchy with the memory controller (run as "
		     "root "
		     "or with a delegated cgroup), or use -T local",
		     htc_strerror(rc));
		return -ENOTSUP;
	}
	struct cg_state *st = xcalloc(1, sizeof *st);
	lsched_init(&st->s, q, "cgroups", &cg_ops, st, sizeof(struct cg_job));
	if (sched_getaffinity(0, sizeof st->allowed, &st->allowed) < 0) {
		CPU_ZERO(&st->allowed);
		for (int64_t c = 0; c < st->s.cores && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, &st->allowed);
	}
	st->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	st->el.grow = 1;
	st->el.throttle = 1;
	st->el.throttle_rate = 1024;
	st->el.tick_ms = CG_TICK_MS;
	st->pin_cpus = 1;
	st->pids_max = -1;
	st->tick = xmalloc(sizeof *st->tick);
	uv_timer_init(loop, st->tick);
	st->tick->data = st;
	*state = st;
	return 0;
}

static int parse_bool(const char *value, int *out)
{
	if (!strcmp(value, "1") || !strcmp(value, "on") || !strcmp(value, "yes") ||
	    !strcmp(value, "true"))
		*out = 1;
	else if (!strcmp(value, "0") || !strcmp(value, "off") || !strcmp(value, "no") ||
	         !strcmp(value, "false"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static int cg_set_option(void *state, const char *key, const char *value)
{
	struct cg_state *st = state;
	int rc = lsched_set_option(&st->s, key, value);
	if (rc != -ENOENT)
		return rc;
	if (!strcmp(key, "memory-grow"))
		return parse_bool(value, &st->el.grow);
	if (!strcmp(key, "memory-throttle"))
		return parse_bool(value, &st->el.throttle);
	if (!strcmp(key, "cpuset"))
		return parse_bool(value, &st->pin_cpus);
	int64_t v;
	if (!strcmp(key, "memory-throttle-rate")) {
		if (str_to_int64(value, &v) < 0 || v < 1)
			return -EINVAL;
		st->el.throttle_rate = (double)v;
		return 0;
	}
	if (!strcmp(key, "pids-max")) {
		if (str_to_int64(value, &v) < 0 || v < 1)
			return -EINVAL;
		st->pids_max = v;
		return 0;
	}
	return -EINVAL;
}

static int cg_submit(void *state, struct batch_job *job)
{
	return lsched_submit(&((struct cg_state *)state)->s, job);
}

static int cg_remove(void *state, struct batch_job *job)
{
	return lsched_remove(&((struct cg_state *)state)->s, job);
}

static void cg_destroy(void *state)
{
	struct cg_state *st = state;
	lsched_destroy(&st->s);
	uv_timer_stop(st->tick);
	uv_close((uv_handle_t *)st->tick, tick_closed);
	if (st->null_fd >= 0)
		close(st->null_fd);
	free(st);
}

const struct batch_driver batch_driver_cgroups = {
    .name = "cgroups",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_LOCAL_EXECUTION |
                BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_ADMISSION | BATCH_FEATURE_REMOVE |
                BATCH_FEATURE_MEMORY_LIMIT | BATCH_FEATURE_MEASURE,
    .create = cg_create,
    .set_option = cg_set_option,
    .submit = cg_submit,
    .remove = cg_remove,
    .destroy = cg_destroy,
};
