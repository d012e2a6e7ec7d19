/* worker_ledger.c: the resource ledger of work_queue_worker (declared in worker_task.h): what the
 * worker offers (`capacity`), what its running tasks hold, and the checks behind `task_refused`
 * and a full disk. */
#include "worker_task.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "debug.h"
#include "htc_error.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

#define CORES_EPSILON 1e-6
#define MB_BYTES      (1024.0 * 1024.0)

/* ---- the resource ledger ---------------------------------------------------------------- */

struct worker_ledger {
	char *workdir;
	struct worker_total cores, memory, disk, gpus;
	int64_t fs_size_mb, fs_free_mb; /* -1: unknown */
	int64_t fs_read_us;             /* CLOCK's time of the last statvfs; 0: never */
	const struct htc_clock *clock;  /* NULL: the monotonic clock */
	int64_t cache_mb;
	double used_cores;
	int64_t used_memory, used_disk, used_gpus;
	uint64_t gpu_mask; /* bit i: gpu i is held */
};

int64_t worker_disk_reserve_mb(int64_t fs_size_mb)
{
	int64_t pct = fs_size_mb > 0 ? (fs_size_mb + 99) / 100 : 0;
	return pct > WORKER_RESERVE_MIN_MB ? pct : WORKER_RESERVE_MIN_MB;
}

int worker_fs_figures(const char *dir, int64_t *size_mb, int64_t *free_mb)
{
	struct statvfs vfs;
	if (statvfs(dir, &vfs) < 0)
		return -errno;
	*size_mb = (int64_t)floor((double)vfs.f_blocks * (double)vfs.f_frsize / MB_BYTES);
	*free_mb = (int64_t)floor((double)vfs.f_bavail * (double)vfs.f_frsize / MB_BYTES);
	return 0;
}

struct worker_ledger *worker_ledger_create(double cores, int64_t memory_mb, int64_t disk_mb,
                                           int64_t gpus, const char *workdir)
{
	struct worker_ledger *l = xcalloc(1, sizeof *l);
	l->workdir = xstrdup(workdir ? workdir : ".");
	l->fs_size_mb = l->fs_free_mb = -1;
	int r = worker_ledger_refresh_disk(l);
	if (r < 0)
		warn("cannot read the free space of %s: %s", l->workdir, strerror(-r));
	struct rmsummary m;
	rmsummary_init(&m);
	if (cores < 0 || memory_mb < 0 || gpus < 0)
		rmonitor_machine_resources(l->workdir, &m);
	l->cores.declared = cores >= 0;
	l->cores.total = cores >= 0 ? cores : (m.v[RM_CORES] > 0 ? m.v[RM_CORES] : 1);
	l->memory.declared = memory_mb >= 0;
	l->memory.total =
	    (double)(memory_mb >= 0 ? memory_mb
	                            : (m.v[RM_MEMORY] > 0 ? (int64_t)m.v[RM_MEMORY] : 0));
	l->gpus.declared = gpus >= 0;
	int64_t g = gpus >= 0 ? gpus : (m.v[RM_GPUS] > 0 ? (int64_t)m.v[RM_GPUS] : 0);
	if (g > WORKER_GPUS_MAX) {
		warn("%" PRId64 " gpus: only %d are offered to tasks", g, WORKER_GPUS_MAX);
		g = WORKER_GPUS_MAX;
	}
	l->gpus.total = (double)g;
	l->disk.declared = disk_mb >= 0;
	if (disk_mb >= 0) {
		l->disk.total = (double)disk_mb;
	} else if (l->fs_free_mb >= 0) {
		int64_t d = l->fs_free_mb - worker_disk_reserve_mb(l->fs_size_mb);
		l->disk.total = (double)(d > 0 ? d : 0);
	}
	debug(D_WORKER,
	      "resources: %g cores (%s), %.0f MB memory (%s), %.0f MB disk (%s), %.0f gpus (%s)",
	      l->cores.total, l->cores.declared ? "declared" : "measured", l->memory.total,
	      l->memory.declared ? "declared" : "measured", l->disk.total,
	      l->disk.declared ? "declared" : "measured", l->gpus.total,
	      l->gpus.declared ? "declared" : "measured");
	return l;
}

struct worker_ledger *worker_ledger_from_opts(const struct worker_opts *o, const char *workdir)
{
	return worker_ledger_create(o->cores, o->memory_mb, o->disk_mb, o->gpus, workdir);
}

void worker_ledger_delete(struct worker_ledger *l)
{
	if (!l)
		return;
	free(l->workdir);
	free(l);
}

void worker_ledger_set_clock(struct worker_ledger *l, const struct htc_clock *clock)
{
	l->clock = clock;
	if (l->fs_read_us)
		l->fs_read_us = htc_clock_now_us(clock);
}

int worker_ledger_refresh_disk(struct worker_ledger *l)
{
	int64_t now = htc_clock_now_us(l->clock);
	if (l->fs_read_us && now - l->fs_read_us < WORKER_DISK_FRESH_US)
		return 0;
	int64_t size = -1, avail = -1;
	int r = worker_fs_figures(l->workdir, &size, &avail);
	if (r < 0)
		return r;
	worker_ledger_set_fs(l, size, avail);
	l->fs_read_us = now;
	return 0;
}

void worker_ledger_set_fs(struct worker_ledger *l, int64_t fs_size_mb, int64_t fs_free_mb)
{
	l->fs_size_mb = fs_size_mb;
	l->fs_free_mb = fs_free_mb;
}

void worker_ledger_set_cache(struct worker_ledger *l, int64_t cache_mb)
{
	l->cache_mb = cache_mb > 0 ? cache_mb : 0;
}

int64_t worker_ledger_disk_free(const struct worker_ledger *l)
{
	int64_t f = (int64_t)l->disk.total - l->cache_mb - l->used_disk;
	if (l->fs_free_mb >= 0) {
		int64_t fs = l->fs_free_mb - worker_disk_reserve_mb(l->fs_size_mb);
		if (fs < f)
			f = fs;
	}
	return f > 0 ? f : 0;
}

bool worker_ledger_disk_full(const struct worker_ledger *l)
{
	return l->fs_free_mb >= 0 && l->fs_free_mb < worker_disk_reserve_mb(l->fs_size_mb);
}

void worker_ledger_totals(const struct worker_ledger *l, struct worker_total *cores,
                          struct worker_total *memory, struct worker_total *disk,
                          struct worker_total *gpus)
{
	if (cores)
		*cores = l->cores;
	if (memory)
		*memory = l->memory;
	if (disk)
		*disk = l->disk;
	if (gpus)
		*gpus = l->gpus;
}

void worker_ledger_used(const struct worker_ledger *l, struct wq_resources *used)
{
	used->cores = l->used_cores;
	used->memory = l->used_memory;
	used->disk = l->used_disk;
	used->gpus = l->used_gpus;
}

enum worker_fit worker_ledger_check(const struct worker_ledger *l, const struct wq_resources *r,
                                    char **text)
{
	char *why = NULL;
	enum worker_fit fit = WORKER_FIT_OK;
	double free_cores = l->cores.total - l->used_cores;
	int64_t free_mem = (int64_t)l->memory.total - l->used_memory;
	int64_t free_gpus = (int64_t)l->gpus.total - l->used_gpus;
	int64_t disk_free = worker_ledger_disk_free(l);
	if (worker_ledger_disk_full(l)) {
		fit = WORKER_FIT_DISK_FULL;
		why = xasprintf("the worker's disk is full (%" PRId64 " MB free, reserve %" PRId64
		                " MB)",
		                l->fs_free_mb, worker_disk_reserve_mb(l->fs_size_mb));
	} else if (r->cores > free_cores + CORES_EPSILON) {
		fit = WORKER_FIT_OVERCOMMIT;
		why = xasprintf("needs %g cores, %g of %g free", r->cores,
		                free_cores > 0 ? free_cores : 0, l->cores.total);
	} else if (r->memory > free_mem) {
		fit = WORKER_FIT_OVERCOMMIT;
		why = xasprintf("needs %" PRId64 " MB of memory, %" PRId64 " of %.0f MB free",
		                r->memory, free_mem > 0 ? free_mem : 0, l->memory.total);
	} else if (r->gpus > free_gpus) {
		fit = WORKER_FIT_OVERCOMMIT;
		why = xasprintf("needs %" PRId64 " gpus, %" PRId64 " of %.0f free", r->gpus,
		                free_gpus > 0 ? free_gpus : 0, l->gpus.total);
	} else if (r->disk > disk_free) {
		fit = WORKER_FIT_DISK_FULL;
		why = xasprintf("needs %" PRId64 " MB of disk, %" PRId64 " MB free", r->disk,
		                disk_free);
	}
	if (text)
		*text = why;
	else
		free(why);
	return fit;
}

enum worker_fit worker_ledger_commit(struct worker_ledger *l, const struct wq_resources *r,
                                     struct worker_alloc *a, char **text)
{
	enum worker_fit fit = worker_ledger_check(l, r, text);
	if (fit != WORKER_FIT_OK)
		return fit;
	memset(a, 0, sizeof *a);
	a->res = *r;
	for (int i = 0; i < (int)l->gpus.total && a->ngpus < r->gpus; i++) {
		if (l->gpu_mask & (UINT64_C(1) << i))
			continue;
		l->gpu_mask |= UINT64_C(1) << i;
		a->gpu_ids[a->ngpus++] = i;
	}
	l->used_cores += r->cores;
	l->used_memory += r->memory;
	l->used_disk += r->disk;
	l->used_gpus += r->gpus;
	a->held = true;
	return WORKER_FIT_OK;
}

void worker_ledger_release_compute(struct worker_ledger *l, struct worker_alloc *a)
{
	if (!a || !a->held || a->compute_freed)
		return;
	for (int i = 0; i < a->ngpus; i++)
		l->gpu_mask &= ~(UINT64_C(1) << a->gpu_ids[i]);
	l->used_cores -= a->res.cores;
	if (l->used_cores < CORES_EPSILON)
		l->used_cores = 0;
	l->used_memory -= a->res.memory;
	l->used_gpus -= a->res.gpus;
	a->compute_freed = true;
}

void worker_ledger_release(struct worker_ledger *l, struct worker_alloc *a)
{
	if (!a || !a->held)
		return;
	worker_ledger_release_compute(l, a);
	l->used_disk -= a->res.disk;
	a->held = false;
}

enum worker_fit worker_ledger_check_total(const struct worker_ledger *l,
                                          const struct wq_resources *r, char **text)
{
	char *why = NULL;
	if (r->cores > l->cores.total + CORES_EPSILON)
		why = xasprintf("needs %g cores, the worker has %g", r->cores, l->cores.total);
	else if (r->memory > (int64_t)l->memory.total)
		why = xasprintf("needs %" PRId64 " MB of memory, the worker has %.0f MB", r->memory,
		                l->memory.total);
	else if (r->gpus > (int64_t)l->gpus.total)
		why = xasprintf("needs %" PRId64 " gpus, the worker has %.0f", r->gpus,
		                l->gpus.total);
	else if (r->disk > (int64_t)l->disk.total)
		why = xasprintf("needs %" PRId64 " MB of disk, the worker has %.0f MB", r->disk,
		                l->disk.total);
	if (text)
		*text = why;
	else
		free(why);
	return why ? WORKER_FIT_OVERCOMMIT : WORKER_FIT_OK;
}

int64_t worker_ledger_memory_free(const struct worker_ledger *l)
{
	int64_t f = (int64_t)l->memory.total - l->used_memory;
	return f > 0 ? f : 0;
}

int worker_ledger_resize_memory(struct worker_ledger *l, struct worker_alloc *a, int64_t memory_mb)
{
	if (!a->held || a->compute_freed || memory_mb < 0)
		return -EINVAL;
	int64_t delta = memory_mb - a->res.memory;
	if (delta > 0 && delta > worker_ledger_memory_free(l))
		return -ENOSPC;
	l->used_memory += delta;
	a->res.memory = memory_mb;
	return 0;
}

bool worker_ledger_idle(const struct worker_ledger *l)
{
	return l->used_cores < CORES_EPSILON && l->used_memory == 0 && l->used_disk == 0 &&
	       l->used_gpus == 0;
}

static json_t *number(double v)
{
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	return json_real(v);
}

static json_t *total_json(const struct worker_total *t)
{
	return json_pack("{s:o,s:s}", "total", number(t->total), "source",
	                 t->declared ? "declared" : "measured");
}

json_t *worker_ledger_capacity_json(const struct worker_ledger *l)
{
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:I,s:I,s:b}", "m", "capacity", "cores",
	                 total_json(&l->cores), "memory", total_json(&l->memory), "disk",
	                 total_json(&l->disk), "gpus", total_json(&l->gpus), "disk_free",
	                 (json_int_t)worker_ledger_disk_free(l), "cache", (json_int_t)l->cache_mb,
	                 "disk_full", (int)worker_ledger_disk_full(l));
}
