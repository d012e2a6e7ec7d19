/* worker_elastic.c: the worker's side of vertical elasticity (worker_elastic.h): one timer
 * watches every running task (growth rate, throttle, release, shrink) and the monitor's
 * at-limit callback grows a task or holds it, following rmon_elastic.h. */
#include "worker_elastic.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "atomic_file.h"
#include "debug.h"
#include "rmon_elastic.h"
#include "rmon_proc.h"
#include "worker_ctr_memory.h"
#include "xalloc.h"
#include "banned.h"

/* Period of the watch over running tasks, ms (and the sampling interval of their monitors). */
#define EL_TICK_MS 250

struct worker_elastic_task {
	struct worker_elastic *e;
	char *name;
	char *view; /* the task's allocation file (HTC_ALLOCATION_FILE), or NULL */
	struct worker_alloc *a;
	struct rmonitor *m;
	struct rmon_elastic_task st;
	int throttles;
	/* its own container followed by the worker (worker_ctr_memory.h), or NULL; CTR_MEMORY: its
	 * memory too (outside the task's cgroup; nested, the cgroup holds it); what it uses, MB,
	 * and its CPU time, s (-1 unknown) */
	struct worker_ctr_memory *ctr;
	bool ctr_memory;
	double ctr_mb, ctr_cpu_s;
	/* --cpu-grow: its allocation, its quota now and at most, the CPU time (s) at the start of
	 * the current window and when it began (ms), the cores it used over the last window (-1
	 * before its first window: it counts as using its allocation); the quota's integral over
	 * its life: core-ms up to the last change (ms), and its start (ms) */
	double base_cores, quota, quota_peak, cpu_at, used_cores, quota_core_ms;
	uint64_t cpu_ms, quota_ms, start_ms;
	int cpu_raises;
	worker_elastic_resized_fn resized;
	void *arg;
	struct worker_elastic_task *prev, *next;
};

struct worker_elastic {
	uv_loop_t *loop;
	struct worker_ledger *ledger;
	struct rmon_elastic_cfg cfg;
	bool cpu_grow;
	struct worker_elastic_task *tasks;
	uv_timer_t *tick; /* heap: freed by its close callback */
};

static void tick_closed(uv_handle_t *h)
{
	free(h);
}

struct worker_elastic *worker_elastic_create(uv_loop_t *loop, const struct worker_opts *o,
                                             struct worker_ledger *l)
{
	if (!o->memory_grow && !o->memory_throttle && !o->cpu_grow)
		return NULL;
	struct worker_elastic *e = xcalloc(1, sizeof *e);
	e->loop = loop;
	e->ledger = l;
	e->cfg.grow = o->memory_grow;
	e->cfg.step_up_mb = o->grow_step_up_mb > 0 ? o->grow_step_up_mb : 1;
	e->cfg.step_down_mb = o->memory_grow ? o->grow_step_down_mb : 0;
	e->cfg.shrink_cooldown_ms = o->shrink_cooldown_s * 1000;
	e->cfg.throttle = o->memory_throttle;
	e->cfg.throttle_rate = (double)o->throttle_rate_mbps;
	e->cfg.tick_ms = EL_TICK_MS;
	e->cfg.protect_neighbours = 1;
	e->cpu_grow = o->cpu_grow;
	e->tick = xmalloc(sizeof *e->tick);
	uv_timer_init(loop, e->tick);
	e->tick->data = e;
	debug(D_WORKER,
	      "elasticity: growth %s (step up %" PRId64 " MB, down %" PRId64
	      " MB, shrink cooldown %" PRId64 " s), throttle %s (%" PRId64 " MB/s)",
	      o->memory_grow ? "on" : "off", o->grow_step_up_mb, o->grow_step_down_mb,
	      o->shrink_cooldown_s, o->memory_throttle ? "on" : "off", o->throttle_rate_mbps);
	return e;
}

void worker_elastic_delete(struct worker_elastic *e)
{
	if (!e)
		return;
	struct worker_elastic_task *t, *tmp;
	DL_FOREACH_SAFE(e->tasks, t, tmp)
	worker_elastic_task_remove(t);
	uv_timer_stop(e->tick);
	uv_close((uv_handle_t *)e->tick, tick_closed);
	free(e);
}

double worker_elastic_interval(const struct worker_elastic *e)
{
	(void)e;
	return EL_TICK_MS / 1000.0;
}

/* What the task uses now (not its peak: a shrink needs the present use), its container
 * outside its cgroup included. */
static double usage_mb(const struct worker_elastic_task *t)
{
	return (t->m ? rmonitor_memory_now(t->m) : 0) + t->ctr_mb;
}

/* Sets T's memory limit: its container's through the engine, or its cgroup's. 0 or negative
 * with *ERR (caller frees). */
static int set_limit(struct worker_elastic_task *t, int64_t mb, char **err)
{
	if (t->ctr && t->ctr_memory)
		return worker_ctr_memory_set_limit(t->ctr, mb, err);
	int r = t->m ? rmonitor_set_memory_limit(t->m, mb) : -ESRCH;
	if (r < 0)
		*err = xstrdup(htc_strerror(r));
	return r;
}

/* The worker is short of memory: its tasks use more than 3/4 of its memory, or the machine has
 * less than a quarter of its memory available. */
static int memory_short(const struct worker_elastic *e)
{
	int64_t total = -1, avail = -1;
	rmon_machine_memory(&total, &avail);
	if (total > 0 && avail >= 0 &&
	    rmon_elastic_short(total >> 20, (double)((total - avail) >> 20)))
		return 1;
	struct worker_total mem;
	worker_ledger_totals(e->ledger, NULL, &mem, NULL, NULL);
	double used = 0;
	const struct worker_elastic_task *t;
	DL_FOREACH(e->tasks, t)
	used += usage_mb(t);
	return rmon_elastic_short((int64_t)mem.total, used);
}

static struct rmon_elastic_now figures(const struct worker_elastic_task *t, int short_mem)
{
	int n_tasks = 0;
	const struct worker_elastic_task *x;
	DL_COUNT(t->e->tasks, x, n_tasks);
	struct worker_total mem;
	worker_ledger_totals(t->e->ledger, NULL, &mem, NULL, NULL);
	struct rmon_elastic_now n = {
	    .ms = uv_now(t->e->loop),
	    .usage_mb = usage_mb(t),
	    .short_mem = short_mem,
	    .room_mb = worker_ledger_memory_free(t->e->ledger),
	    .unlimited_mb = (int64_t)mem.total,
	    .neighbours = n_tasks - 1,
	};
	return n;
}

/* Rewrites T's allocation file (doc/elasticity.md, "The adaptive view") with its cores and
 * memory now: a new file renamed into place, so a reader sees the old or the new, whole. */
static void write_view(const struct worker_elastic_task *t)
{
	if (!t->view)
		return;
	int64_t mem = t->st.limit_mb > 0 ? t->st.limit_mb : t->a->res.memory;
	char text[160];
	int n =
	    snprintf(text, sizeof text, "CORES=%g\nMEMORY=%" PRId64 "\nDISK=%" PRId64 "\nGPUS=%d\n",
	             t->quota, mem, t->a->res.disk, t->a->ngpus);
	int r = atomic_file_write(t->view, text, (size_t)n, 0644);
	if (r < 0)
		debug(D_WORKER, "task %s: cannot write %s: %s", t->name, t->view, strerror(-r));
}

/* T's charge in the ledger follows its limit when it is above its allocation. */
static void charge(struct worker_elastic_task *t, int64_t limit_mb)
{
	int64_t want = limit_mb > t->st.base_mb ? limit_mb : t->st.base_mb;
	if (want == t->a->res.memory || worker_ledger_resize_memory(t->e->ledger, t->a, want) < 0)
		return;
	if (t->resized)
		t->resized(t->arg, want);
}

/* T reached its memory limit LIMIT_MB: the new limit (grown or released), -1 to hold it there,
 * 0 to give it up (memory exhausted). */
static int64_t decide(struct worker_elastic_task *t, int64_t limit_mb)
{
	struct worker_elastic *e = t->e;
	struct rmon_elastic_now n = figures(t, t->st.throttled ? memory_short(e) : 0);
	int64_t to = 0;
	const char *why = NULL;
	switch (rmon_elastic_at_limit(&e->cfg, &t->st, limit_mb, &n, &to, &why)) {
	case RMON_ELASTIC_WAIT:
		debug(D_WORKER, "task %s held at %" PRId64 " MB: %s", t->name, limit_mb, why);
		return -1;
	case RMON_ELASTIC_RELEASE:
		notice("task %s: throttle released to %" PRId64 " MB", t->name, to);
		return to;
	case RMON_ELASTIC_GROW:
		charge(t, to);
		t->st.limit_mb = to; /* what the monitor sets on return: the view says it first */
		write_view(t);
		notice("task %s: memory limit grown from %" PRId64 " to %" PRId64
		       " MB (growth %d, maximum %" PRId64 " MB)",
		       t->name, limit_mb, to, t->st.raises, t->st.max_mb);
		return to;
	case RMON_ELASTIC_GIVE_UP:
	default: break;
	}
	notice("task %s reached its memory limit of %" PRId64 " MB (%s): memory exhausted", t->name,
	       limit_mb, why);
	return 0;
}

int64_t worker_elastic_at_limit(struct rmonitor *m, int64_t limit_mb, void *arg)
{
	(void)m;
	return decide(arg, limit_mb);
}

/* T's container waits at its limit LIMIT_MB: its limit is raised through the engine, or it is
 * held there, or the kernel is let end it and the task is given up for lack of memory. */
static void container_at_limit(struct worker_elastic_task *t, int64_t limit_mb)
{
	int64_t to = decide(t, limit_mb);
	if (to < 0)
		return;
	char *err = NULL;
	if (to > limit_mb && worker_ctr_memory_set_limit(t->ctr, to, &err) == 0) {
		notice("task %s: container %.12s updated to %" PRId64 " MB through the engine",
		       t->name, worker_ctr_memory_id(t->ctr), to);
		return;
	}
	if (err) {
		warn("task %s: %s", t->name, err);
		free(err);
	}
	worker_ctr_memory_let_kill(t->ctr);
	if (t->m)
		rmonitor_exhausted(t->m, RM_MEMORY, (double)limit_mb);
	/* its runner is killed with the task: the container is removed here, not left stopped
	 * until the worker ends */
	if (worker_ctr_memory_remove(t->ctr, &err) < 0) {
		warn("task %s: %s", t->name, err);
		free(err);
	}
}

/* A container that cannot be followed would wait at its limit with nobody to raise it: it is
 * given the most its task may hold, charged as such, once. */
static void unfollowed(struct worker_elastic_task *t, const char *why)
{
	warn("task %s: %s; its container is given its maximum of %" PRId64 " MB", t->name, why,
	     t->st.max_mb);
	char *err = NULL;
	if (t->st.max_mb > 0 && worker_ctr_memory_set_limit(t->ctr, t->st.max_mb, &err) == 0) {
		charge(t, t->st.max_mb);
		t->st.limit_mb = t->st.max_mb;
		write_view(t);
	} else if (err) {
		warn("task %s: %s", t->name, err);
		free(err);
	}
	worker_ctr_memory_delete(t->ctr);
	t->ctr = NULL;
	t->ctr_mb = 0;
}

/* Reads T's container: its use counts as the task's, and one waiting at its limit is decided
 * on now. True when it was (nothing else is done to it at this tick). */
static bool follow(struct worker_elastic_task *t)
{
	struct worker_ctr_memory_now now;
	char *err = NULL;
	int r = worker_ctr_memory_read(t->ctr, &now, &err);
	if (r < 0 && !t->ctr_memory) {
		warn("task %s: %s; it is not lent cores", t->name,
		     err ? err : "its container cannot be followed");
		worker_ctr_memory_delete(t->ctr);
		t->ctr = NULL;
	} else if (r < 0) {
		unfollowed(t, err ? err : "its container cannot be followed");
	}
	free(err);
	if (r <= 0)
		return false;
	t->ctr_cpu_s = now.cpu_s;
	if (!t->ctr_memory)
		return false;
	t->ctr_mb = now.usage_mb;
	if (t->m)
		rmonitor_report_memory(t->m, usage_mb(t));
	if (!now.at_limit)
		return false;
	container_at_limit(t, now.limit_mb);
	return true;
}

static void watch(struct worker_elastic_task *t, int short_mem)
{
	if (t->ctr && follow(t))
		return;
	struct rmon_elastic_now n = figures(t, short_mem);
	double rate = rmon_elastic_rate(&t->st, n.ms, n.usage_mb);
	int64_t to = 0;
	enum rmon_elastic_action a = rmon_elastic_tick(&t->e->cfg, &t->st, &n, &to);
	if (a == RMON_ELASTIC_NONE || !t->m)
		return;
	char *err = NULL;
	if (set_limit(t, to, &err) < 0) {
		debug(D_WORKER, "task %s: cannot set its memory limit to %" PRId64 " MB: %s",
		      t->name, to, err);
		free(err);
		return;
	}
	int64_t from = t->st.limit_mb;
	rmon_elastic_applied(&t->st, a, to, &n);
	switch (a) {
	case RMON_ELASTIC_THROTTLE:
		t->throttles++;
		notice("task %s: memory grows at %.0f MB/s while the worker is short of memory: "
		       "throttled at %" PRId64 " MB",
		       t->name, rate, to);
		break;
	case RMON_ELASTIC_UNTHROTTLE:
		notice("task %s: memory is free again, throttle released to %" PRId64 " MB%s",
		       t->name, to, t->st.throttled ? "" : " (its own limit)");
		break;
	case RMON_ELASTIC_SHRINK:
		charge(t, to);
		write_view(t);
		notice("task %s: memory limit shrunk from %" PRId64 " to %" PRId64
		       " MB (uses %.0f MB)",
		       t->name, from, to, n.usage_mb);
		break;
	case RMON_ELASTIC_NONE:
	default: break;
	}
}

/* Windows of at least this long (ms) measure the cores a task uses. */
#define CPU_WINDOW_MS 1000

/* Sets T's CPU quota to Q cores (its followed container's through the engine) and its view;
 * false when the engine or the monitor refuses. */
static bool set_quota(struct worker_elastic_task *t, double q)
{
	if (!t->m)
		return false;
	if (t->ctr) {
		char *err = NULL;
		if (worker_ctr_memory_set_cores(t->ctr, q, &err) < 0) {
			debug(D_WORKER,
			      "task %s: cannot set its container's CPU quota to %g cores: %s",
			      t->name, q, err);
			free(err);
			return false;
		}
	}
	if (rmonitor_set_cores(t->m, q) != 0)
		return false;
	uint64_t now = uv_now(t->e->loop);
	t->quota_core_ms += t->quota * (double)(now - t->quota_ms);
	t->quota_ms = now;
	t->quota = q;
	write_view(t);
	if (q > t->quota_peak)
		t->quota_peak = q;
	return true;
}

/* --cpu-grow: once a second, the cores each task used; a task that used its whole quota
 * grows into the worker's idle cores, and grown tasks go back to their allocation when the
 * cores are busy (rmon_elastic_cpu_quota). A task not measured yet counts as using its
 * allocation, so a task just placed is not lent away before it had a chance to run. */
static void watch_cpu(struct worker_elastic *e)
{
	uint64_t now = uv_now(e->loop);
	struct worker_total cores;
	worker_ledger_totals(e->ledger, &cores, NULL, NULL, NULL);
	double busy = 0;
	bool fresh = false;
	struct worker_elastic_task *t;
	DL_FOREACH(e->tasks, t)
	{
		const struct rmsummary *s = t->m ? rmonitor_current(t->m) : NULL;
		double cpu = s && s->v[RM_CPU_TIME] >= 0 ? s->v[RM_CPU_TIME] : -1;
		/* a followed container's processes may not be in the task's CPU group (not nested,
		 * or nested in its memory group only): the larger of the two (the runner itself
		 * uses next to nothing, and a container truly nested is counted in both) */
		if (t->ctr && t->ctr_cpu_s > cpu)
			cpu = t->ctr_cpu_s;
		if (cpu >= 0 && t->cpu_ms == 0) {
			t->cpu_ms = now;
			t->cpu_at = cpu;
		} else if (cpu >= 0 && now - t->cpu_ms >= CPU_WINDOW_MS) {
			t->used_cores = (cpu - t->cpu_at) * 1000.0 / (double)(now - t->cpu_ms);
			t->cpu_ms = now;
			t->cpu_at = cpu;
			fresh = true;
		}
		busy += t->used_cores >= 0 ? t->used_cores : t->base_cores;
	}
	if (!fresh)
		return;
	double idle = cores.total - busy;
	DL_FOREACH(e->tasks, t)
	{
		if (t->used_cores < 0)
			continue;
		double q = rmon_elastic_cpu_quota(t->base_cores, t->quota, t->used_cores, idle);
		debug(D_WORKER, "task %s: used %.2f of %g cores, %.2f idle", t->name, t->used_cores,
		      t->quota, idle);
		double was = t->quota;
		if (q == was || !set_quota(t, q))
			continue;
		if (q > was) {
			t->cpu_raises++;
			notice("task %s: uses %.2f of its %g cores while %.2f are idle: CPU quota "
			       "raised to %g cores",
			       t->name, t->used_cores, was, idle, q);
		} else {
			notice("task %s: the worker's cores are busy: CPU quota back to %g cores",
			       t->name, q);
		}
		idle -= q - was;
	}
}

/* A task placed on the worker claims cores: when the quotas of the running tasks add up to
 * more than the worker's cores, the cores lent to grown tasks are taken back at once (they
 * may be lent again once the newcomer is measured and leaves them idle). */
static void reclaim_cpu(struct worker_elastic *e, const struct worker_elastic_task *newcomer)
{
	struct worker_total cores;
	worker_ledger_totals(e->ledger, &cores, NULL, NULL, NULL);
	double quotas = 0;
	struct worker_elastic_task *t;
	DL_FOREACH(e->tasks, t)
	quotas += t->quota;
	if (quotas <= cores.total + 0.01)
		return;
	DL_FOREACH(e->tasks, t)
	{
		if (t->quota <= t->base_cores || !set_quota(t, t->base_cores))
			continue;
		t->used_cores = -1; /* its window measured the loan: start again */
		t->cpu_ms = 0;
		notice("task %s: task %s claims the cores it was lent: CPU quota back to %g cores",
		       t->name, newcomer->name, t->base_cores);
	}
}

static void on_tick(uv_timer_t *h)
{
	struct worker_elastic *e = h->data;
	int short_mem = memory_short(e);
	struct worker_elastic_task *t, *tmp;
	DL_FOREACH_SAFE(e->tasks, t, tmp)
	watch(t, short_mem);
	if (e->cpu_grow)
		watch_cpu(e);
}

struct worker_elastic_task *worker_elastic_task_add(struct worker_elastic *e, const char *name,
                                                    struct worker_alloc *a, int64_t max_mb,
                                                    const char *view,
                                                    worker_elastic_resized_fn resized, void *arg)
{
	struct worker_elastic_task *t = xcalloc(1, sizeof *t);
	t->e = e;
	t->name = xstrdup(name);
	t->view = view ? xstrdup(view) : NULL;
	t->a = a;
	t->resized = resized;
	t->arg = arg;
	int64_t limit = a->res.memory > 0 ? a->res.memory : -1;
	rmon_elastic_task_init(&t->st, limit, limit > 0 && max_mb > limit ? max_mb : -1);
	rmon_elastic_start(&t->st, uv_now(e->loop));
	t->base_cores = t->quota = t->quota_peak = a->res.cores;
	t->quota_core_ms = 0;
	t->quota_ms = t->start_ms = uv_now(e->loop);
	t->used_cores = -1;
	t->ctr_cpu_s = -1;
	write_view(t);
	DL_APPEND(e->tasks, t);
	if (e->cpu_grow)
		reclaim_cpu(e, t);
	if (!uv_is_active((uv_handle_t *)e->tick))
		uv_timer_start(e->tick, on_tick, EL_TICK_MS, EL_TICK_MS);
	return t;
}

double worker_elastic_lends_cores(const struct worker_elastic *e)
{
	if (!e || !e->cpu_grow)
		return 0;
	struct worker_total cores;
	worker_ledger_totals(e->ledger, &cores, NULL, NULL, NULL);
	return cores.total;
}

void worker_elastic_task_bind(struct worker_elastic_task *t, struct rmonitor *m)
{
	t->m = m;
}

void worker_elastic_task_container(struct worker_elastic_task *t, struct worker_ctr_memory *c,
                                   bool memory)
{
	worker_ctr_memory_delete(t->ctr);
	t->ctr = c;
	t->ctr_memory = memory;
}

json_t *worker_elastic_task_json(const struct worker_elastic_task *t)
{
	if (!t || (!t->st.raises && !t->throttles && !t->cpu_raises))
		return NULL;
	json_t *o = json_pack("{s:I,s:I,s:i,s:i,s:i}", "memory_mb", (json_int_t)t->st.peak_limit_mb,
	                      "final_mb", (json_int_t)t->st.limit_mb, "steps", t->st.raises,
	                      "shrinks", t->st.shrinks, "throttled", t->throttles);
	double held = rmon_elastic_mean_held(&t->st, uv_now(t->e->loop));
	if (o && held > 0 && (t->st.raises || t->st.shrinks))
		json_object_set_new(o, "memory_avg_mb", json_real(held));
	if (o && t->cpu_raises) {
		json_object_set_new(o, "cores", json_real(t->quota_peak));
		/* the cores it was allocated and lent, as a time-average: its allocated core-time
		 * over its run time */
		uint64_t now = uv_now(t->e->loop);
		if (now > t->start_ms)
			json_object_set_new(
			    o, "cores_avg",
			    json_real((t->quota_core_ms + t->quota * (double)(now - t->quota_ms)) /
			              (double)(now - t->start_ms)));
	}
	return o;
}

void worker_elastic_task_remove(struct worker_elastic_task *t)
{
	if (!t)
		return;
	struct worker_elastic *e = t->e;
	DL_DELETE(e->tasks, t);
	if (!e->tasks)
		uv_timer_stop(e->tick);
	worker_ctr_memory_delete(t->ctr);
	free(t->name);
	free(t->view);
	free(t);
}
