/* rmon_cgroup_pool.c: a per-process pool of reusable task cgroups (see rmon_cgroup.h). Making
 * and removing a group per task (mkdir and rmdir in up to five v1 hierarchies, and the
 * kernel's offline work after each rmdir) is the largest cost of a short task; a group whose
 * task left nothing behind is reset here so that it measures like a fresh one, and reused. */
#include "rmon_cgroup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "rmon_cgroup_internal.h"
#include "banned.h"

/* Memory still charged to an empty group after its page cache was dropped (kernel objects
 * such as the dentries of files the task made) above which it is not reused: it would count
 * against the next task's memory limit. */
#define RESIDUAL_MAX (4LL << 20)
/* Page cache up to this much is left charged to a reused group rather than dropped: dropping
 * (v1 memory.force_empty) drains the per-CPU page lists of every CPU, which costs more than
 * a short task itself, and clean cache is reclaimed before a limit is reached anyway. The
 * next task's memory is measured without the cache left at its end, so this shifts its
 * peak by at most this much. */
#define CACHE_KEEP_MAX (1LL << 20)
/* How long a zombie still charged to an empty group may take to be reaped. */
#define ZOMBIE_WAIT_MS 10

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmon_cgroup *pool[RMON_CG_POOL_MAX];
static int pool_n;
static pid_t pool_owner; /* the process whose groups are pooled (a forked child has a copy) */
static int pool_atexit;

/* Pooling is on unless HTC_RMON_POOL is 0, no, off or false. */
static int pool_enabled(void)
{
	const char *v = getenv("HTC_RMON_POOL");
	if (!v)
		return 1;
	return strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 && strcasecmp(v, "off") != 0 &&
	       strcasecmp(v, "false") != 0;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* 1 when CG is a group of the kind O asks for. */
static int matches(const struct rmon_cgroup *cg, const struct rmon_cgroup_opts *o)
{
	return same_str(cg->key_root, o->root ? o->root : RMON_CG_DEFAULT_ROOT) &&
	       same_str(cg->key_psc, o->proc_self_cgroup) && cg->key_want == o->controllers;
}

struct rmon_cgroup *rmon_cgroup_take(const struct rmon_cgroup_opts *opts, int pool_on, int *reused,
                                     int *err)
{
	struct rmon_cgroup_opts o = {0};
	if (opts)
		o = *opts;
	if (reused)
		*reused = 0;
	pid_t self = getpid();
	if (pool_on && !o.name && (o.owner == 0 || o.owner == self) && pool_enabled()) {
		struct rmon_cgroup *cg = NULL;
		pthread_mutex_lock(&pool_lock);
		/* The most recently pooled first: its files are the warmest. */
		for (int i = pool_n - 1; pool_owner == self && i >= 0; i--) {
			if (!matches(pool[i], &o))
				continue;
			cg = pool[i];
			memmove(pool + i, pool + i + 1, (size_t)(pool_n - i - 1) * sizeof *pool);
			pool_n--;
			break;
		}
		pthread_mutex_unlock(&pool_lock);
		if (cg) {
			if (reused)
				*reused = 1;
			debug(D_RMON, "cgroup: reusing %s", cg->name);
			return cg;
		}
	}
	return rmon_cgroup_create(&o, err);
}

/* 1 when no hierarchy of CG lists a process and none has a nested group. */
static int all_empty(struct rmon_cgroup *cg)
{
	int none = rmon_cg_pids_none(cg);
	for (int i = 0; i < cg->ndirs; i++) {
		char buf[64];
		if (!none && rmon_cg_read_in(cg->dirs[i], "cgroup.procs", buf, sizeof buf) != 0)
			return 0;
		if (rmon_cg_dir_may_nest(cg, i))
			return 0;
	}
	return 1;
}

static int64_t positive(int64_t v)
{
	return v > 0 ? v : 0;
}

int rmon_cgroup_reset(struct rmon_cgroup *cg)
{
	const char *m = rmon_cg_dir(cg, C_MEMORY);
	int v1 = cg->version == RMON_CG_V1;
	if (!m)
		return HTC_EUNSUP;
	/* The limits stay until the next task has set its own (rmon_cgroup_settle). */
	cg->set_now = 0;
	/* v1 freezer: the kill may have frozen the group; it must be THAWED. */
	const char *fz = v1 ? rmon_cg_dir(cg, C_FREEZER) : NULL;
	char buf[64];
	if (fz) {
		if (rmon_cg_sf_read(cg, SF_FREEZER, fz, "freezer.state", buf, sizeof buf) < 0)
			return -EIO;
		if (strncmp(buf, "THAWED", 6) != 0) {
			rmon_cg_write_in(fz, "freezer.state", "THAWED");
			if (rmon_cg_sf_read(cg, SF_FREEZER, fz, "freezer.state", buf, sizeof buf) <
			        0 ||
			    strncmp(buf, "THAWED", 6) != 0)
				return -EBUSY;
		}
	}
	/* The raw figures: no baseline while they are taken. */
	cg->base_mem = cg->base_cpu_ns = cg->base_oom_events = 0;
	cg->base_high_events = cg->base_oom_kills = 0;
	struct rmon_cg_stats st;
	rmon_cgroup_stats_some(cg, &st, RMON_CGS_USAGE);
	if (st.mem_current < 0)
		return -EIO;
	/* The cache is part of what is charged: with no more than CACHE_KEEP_MAX charged, neither
	 * limit below can be passed, and the (costly) memory.stat is not read. */
	if (st.mem_current > CACHE_KEEP_MAX)
		rmon_cgroup_stats_some(cg, &st, RMON_CGS_MEMORY);
	/* Page cache the last task left charged would count as the next task's memory (and
	 * against its limit): drop it, unless there is little. */
	if (st.mem_cache > CACHE_KEEP_MAX || st.mem_current > RESIDUAL_MAX) {
		if (v1) {
			rmon_cg_write_in(m, "memory.force_empty", "0");
		} else if (rmon_cg_file_in(m, "memory.reclaim")) {
			char val[32];
			snprintf(val, sizeof val, "%lld", (long long)st.mem_current);
			rmon_cg_write_in(m, "memory.reclaim",
			                 val); /* may fail: part was reclaimed */
		}
	}
	/* The peak starts again from what is charged now (v1 any write; v2 since Linux 6.12, for
	 * reads through the same descriptor, which we keep). */
	int pfd = rmon_cg_sf_fd(cg, SF_PEAK, m, v1 ? "memory.max_usage_in_bytes" : "memory.peak");
	if (pfd < 0)
		return HTC_EUNSUP;
	const char *val = v1 ? "0" : "reset";
	if (pwrite(pfd, val, strlen(val), 0) < 0)
		return errno == EBADF ? HTC_EUNSUP : -errno;
	cg->max_seen = 0;
	rmon_cgroup_stats_some(cg, &st, RMON_CGS_PIDS);
	/* A zombie (e.g. an orphan init has not reaped yet) is not in cgroup.procs but still
	 * counts in pids.current, and would count against the next task's process limit: it
	 * is given a few milliseconds to be reaped. */
	for (int i = 0; st.pids_current > 0 && i < ZOMBIE_WAIT_MS; i++) {
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
		rmon_cgroup_stats_some(cg, &st, RMON_CGS_PIDS);
	}
	if (st.pids_current > 0) {
		debug(D_RMON, "cgroup %s: %lld zombies still charged", cg->name,
		      (long long)st.pids_current);
		return -EBUSY;
	}
	rmon_cgroup_stats_some(cg, &st, RMON_CGS_MEMORY | RMON_CGS_CPU | RMON_CGS_OOM);
	int64_t residual = st.mem_current - positive(st.mem_cache);
	if (st.mem_current < 0 || residual > RESIDUAL_MAX) {
		debug(D_RMON, "cgroup %s: %lld bytes still charged after the reset", cg->name,
		      (long long)st.mem_current);
		return -EBUSY;
	}
	if (st.mem_peak > st.mem_current + RESIDUAL_MAX)
		return HTC_EUNSUP; /* the write was accepted but the peak did not move */
	/* What stays charged and the counters that cannot be reset are taken out of what the
	 * next task reads. */
	debug(D_RMON, "cgroup %s reset: %lld bytes charged (%lld cache), peak %lld", cg->name,
	      (long long)st.mem_current, (long long)st.mem_cache, (long long)st.mem_peak);
	cg->base_mem = positive(residual);
	cg->base_cpu_ns = positive(st.cpu_ns);
	cg->base_oom_events = positive(st.oom_events);
	cg->base_high_events = positive(st.high_events);
	cg->base_oom_kills = positive(st.oom_kills);
	/* A notification of the last task still pending on the kept descriptor is read. */
	if (cg->mem_fd >= 0) {
		char ev[256];
		while (read(cg->mem_fd, ev, sizeof ev) > 0)
			;
	}
	return 0;
}

int rmon_cgroup_settle(struct rmon_cgroup *cg)
{
	unsigned stale = cg->changed & ~cg->set_now;
	int r;
	if (stale & RMON_CG_CHANGED_MEM) {
		const char *m = rmon_cg_dir(cg, C_MEMORY);
		if ((r = rmon_cgroup_set_memory(cg, -1, 0)) < 0)
			return r;
		if (cg->version == RMON_CG_V2 && rmon_cg_file_in(m, "memory.oom.group"))
			rmon_cg_write_in(m, "memory.oom.group", "0");
	}
	if ((stale & RMON_CG_CHANGED_CPU) && (r = rmon_cgroup_set_cpu(cg, 0)) < 0)
		return r;
	if ((stale & RMON_CG_CHANGED_PIDS) && (r = rmon_cgroup_set_pids(cg, -1)) < 0)
		return r;
	cg->changed = cg->set_now;
	return 0;
}

static void drain_at_exit(void)
{
	rmon_cgroup_pool_drain();
}

/* Puts CG in the pool; 0 when the pool is full or belongs to another process. */
static int pool_put(struct rmon_cgroup *cg)
{
	pid_t self = getpid();
	int ok = 0;
	pthread_mutex_lock(&pool_lock);
	if (pool_n == 0)
		pool_owner = self;
	if (pool_owner == self && pool_n < RMON_CG_POOL_MAX) {
		pool[pool_n++] = cg;
		ok = 1;
		/* A process that never drains still removes its groups when it exits. */
		if (!pool_atexit)
			pool_atexit = atexit(drain_at_exit) == 0;
	}
	pthread_mutex_unlock(&pool_lock);
	return ok;
}

int rmon_cgroup_release(struct rmon_cgroup *cg, int pool_on, int wait_ms)
{
	if (!cg)
		return 0;
	int r = rmon_cgroup_kill_all(cg, wait_ms);
	if (r == 0 && pool_on && cg->poolable && pool_enabled()) {
		if (!all_empty(cg)) {
			debug(D_RMON, "cgroup %s not reused: a process or nested group is left",
			      cg->name);
		} else {
			int e = rmon_cgroup_reset(cg);
			if (e == 0 && pool_put(cg)) {
				debug(D_RMON, "cgroup %s reset and pooled", cg->name);
				return 1;
			}
			if (e < 0)
				debug(D_RMON, "cgroup %s not reused: reset failed: %s", cg->name,
				      htc_strerror(e));
		}
	}
	if (r == 0)
		r = rmon_cgroup_destroy(cg, wait_ms);
	if (r == 0)
		debug(D_RMON, "cgroup %s removed", cg->name);
	else
		warn("cgroup %s could not be removed yet; rmonitor_cleanup_stale will", cg->name);
	rmon_cgroup_delete(cg);
	return r;
}

int rmon_cgroup_pool_drain(void)
{
	struct rmon_cgroup *taken[RMON_CG_POOL_MAX];
	pthread_mutex_lock(&pool_lock);
	int n = pool_n;
	int mine = pool_owner == getpid();
	memcpy(taken, pool, (size_t)n * sizeof *taken);
	pool_n = 0;
	pthread_mutex_unlock(&pool_lock);
	int removed = 0;
	for (int i = 0; i < n; i++) {
		/* A forked child only forgets its copy: the groups are its parent's. */
		if (mine) {
			int r = rmon_cgroup_kill_all(taken[i], 100);
			if (r == 0)
				r = rmon_cgroup_destroy(taken[i], 100);
			if (r == 0)
				removed++;
			else
				warn("cannot remove pooled cgroup %s: %s", taken[i]->name,
				     htc_strerror(r));
		}
		rmon_cgroup_delete(taken[i]);
	}
	if (n)
		debug(D_RMON, "cgroup pool drained: %d groups removed", removed);
	return removed;
}

int rmon_cgroup_pool_size(void)
{
	pthread_mutex_lock(&pool_lock);
	int n = pool_owner == getpid() ? pool_n : 0;
	pthread_mutex_unlock(&pool_lock);
	return n;
}
