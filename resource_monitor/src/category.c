/* category.c: per-category resource sizing. Each sized resource keeps a histogram of measured
 * peaks (count and summed wall time per bucket) from which the first allocation is recomputed
 * every update_interval measurements, by the MAX, MIN_WASTE or MAX_THROUGHPUT rule of
 * doc/allocation.md (WARMUP: after every measurement, from the largest value seen); the module also
 * decides retry levels and keeps the end-of-run statistics. */
#include "category.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "debug.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

const int category_sized_fields[CATEGORY_N_SIZED] = {RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS};

/* Bucket width per sized field, and whether a measurement of 0 still takes one bucket (a task
 * always needs some cores, memory and disk; it may need no gpu at all). */
static const double bucket_size[CATEGORY_N_SIZED] = {1, 250, 250, 1};
static const int at_least_one_bucket[CATEGORY_N_SIZED] = {1, 1, 1, 0};

#define DEFAULT_UPDATE_INTERVAL 25
/* A wall time below this counts as this much, so the formulas never divide by zero. */
#define MIN_WALL_TIME 0.001

struct bucket {
	double value; /* the bucket's upper edge */
	int64_t count;
	double time; /* summed wall time, s */
};

struct histogram {
	struct bucket *b; /* sorted by value */
	size_t n, cap;
};

struct category {
	char *name;
	enum category_mode mode;
	struct rmsummary max;    /* explicit maximum (v[] only) */
	struct rmsummary min;    /* explicit minimum (v[] only) */
	struct rmsummary worker; /* largest worker (v[] only) */
	int interval;
	int64_t since_reset; /* measurements since the count was last restarted */
	int steady;          /* reached update_interval measurements without a restart */
	int64_t n_measured;  /* measurements accumulated, ever */
	int have_alloc;      /* computed[] holds a computed first allocation */
	double computed[CATEGORY_N_SIZED]; /* before clipping; -1 = none */
	struct histogram hist[CATEGORY_N_SIZED];
	struct histogram fine_mem; /* memory peaks in FINE_MB steps, for category_growth_start */
	double max_avg_cores;      /* largest CPU time / wall time seen (-1: none), ditto */
	struct category_stats stats;
};

/* Tries shorter than this (s) say nothing of a task's average use of cores. */
#define LENT_MIN_WALL 0.1

/* The grain (MB) of the memory peaks kept for the growth start, and the most starts tried. */
#define FINE_MB           4
#define GROWTH_CANDIDATES 64

int category_mode_parse(const char *s, enum category_mode *mode)
{
	if (!s)
		return -EINVAL;
	if (strcasecmp(s, "fixed") == 0)
		*mode = CATEGORY_MODE_FIXED;
	else if (strcasecmp(s, "max") == 0)
		*mode = CATEGORY_MODE_MAX;
	else if (strcasecmp(s, "min_waste") == 0 || strcasecmp(s, "waste") == 0)
		*mode = CATEGORY_MODE_MIN_WASTE;
	else if (strcasecmp(s, "max_throughput") == 0 || strcasecmp(s, "throughput") == 0)
		*mode = CATEGORY_MODE_MAX_THROUGHPUT;
	else if (strcasecmp(s, "warmup") == 0)
		*mode = CATEGORY_MODE_WARMUP;
	else
		return -EINVAL;
	return 0;
}

const char *category_mode_name(enum category_mode mode)
{
	switch (mode) {
	case CATEGORY_MODE_FIXED: return "fixed";
	case CATEGORY_MODE_MAX: return "max";
	case CATEGORY_MODE_MIN_WASTE: return "min_waste";
	case CATEGORY_MODE_MAX_THROUGHPUT: return "max_throughput";
	case CATEGORY_MODE_WARMUP: return "warmup";
	}
	return "unknown";
}

struct category *category_create(const char *name)
{
	struct category *c = xcalloc(1, sizeof *c);
	c->name = xstrdup(name ? name : "default");
	c->mode = CATEGORY_MODE_FIXED;
	c->max_avg_cores = -1;
	rmsummary_init(&c->max);
	rmsummary_init(&c->min);
	rmsummary_init(&c->worker);
	rmsummary_init(&c->stats.max_seen);
	rmsummary_init(&c->stats.first_alloc);
	c->interval = DEFAULT_UPDATE_INTERVAL;
	for (int k = 0; k < CATEGORY_N_SIZED; k++)
		c->computed[k] = -1;
	return c;
}

void category_delete(struct category *c)
{
	if (!c)
		return;
	for (int k = 0; k < CATEGORY_N_SIZED; k++)
		free(c->hist[k].b);
	free(c->fine_mem.b);
	rmsummary_clear(&c->max);
	rmsummary_clear(&c->min);
	rmsummary_clear(&c->worker);
	rmsummary_clear(&c->stats.max_seen);
	rmsummary_clear(&c->stats.first_alloc);
	free(c->name);
	free(c);
}

const char *category_name(const struct category *c)
{
	return c->name;
}

/* Index of FIELD among the sized fields, or -1. */
static int sized_index(int field)
{
	for (int k = 0; k < CATEGORY_N_SIZED; k++)
		if (category_sized_fields[k] == field)
			return k;
	return -1;
}

/* The upper edge of the bucket holding V (rounded up; exact edges stay). */
static double bucket_value(int k, double v)
{
	double size = bucket_size[k];
	double q = v > 0 ? ceil(v / size - 1e-9) : 0;
	if (q < 1 && at_least_one_bucket[k])
		q = 1;
	return q * size;
}

/* The hard ceiling for a field: the explicit maximum, else the largest worker, else -1 (none:
 * a whole worker, whatever it is). */
static double hard_max(const struct category *c, int field)
{
	if (c->max.v[field] >= 0)
		return c->max.v[field];
	return c->worker.v[field];
}

/* A_max of the formulas: explicit maximum, else the largest value seen, else the worker. */
static double a_max(const struct category *c, int field)
{
	if (c->max.v[field] >= 0)
		return c->max.v[field];
	if (c->stats.max_seen.v[field] >= 0)
		return c->stats.max_seen.v[field];
	return c->worker.v[field];
}

static double clip(const struct category *c, int field, double v)
{
	double top = hard_max(c, field);
	if (top >= 0 && v > top)
		v = top;
	if (c->min.v[field] >= 0 && v < c->min.v[field])
		v = c->min.v[field];
	return v;
}

/* Re-derives the visible first allocation from computed[] and the current bounds. */
static void refresh_first_alloc(struct category *c)
{
	for (int k = 0; k < CATEGORY_N_SIZED; k++) {
		int f = category_sized_fields[k];
		double v = -1;
		if (c->have_alloc && c->computed[k] >= 0)
			v = clip(c, f, c->computed[k]);
		c->stats.first_alloc.v[f] = v;
	}
}

static void hist_add(struct histogram *h, double value, double time)
{
	size_t lo = 0, hi = h->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->b[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->n && h->b[lo].value == value) {
		h->b[lo].count++;
		h->b[lo].time += time;
		return;
	}
	VEC_RESERVE(h->b, h->cap, h->n + 1);
	memmove(&h->b[lo + 1], &h->b[lo], (h->n - lo) * sizeof *h->b);
	h->b[lo] = (struct bucket){.value = value, .count = 1, .time = time};
	h->n++;
}

/* MAX: the largest value seen padded by a third of a bucket, rounded up to the bucket. */
static double compute_max(const struct category *c, int k)
{
	int f = category_sized_fields[k];
	double seen = c->stats.max_seen.v[f];
	if (seen <= 0 && !at_least_one_bucket[k])
		return 0;
	return bucket_value(k, seen + bucket_size[k] / 3.0);
}

/* A value plus the warm-up margin (memory, disk): 5 %, at least 16 MB. */
static double warmup_margin(double mb)
{
	double m = mb * 0.05;
	return ceil(mb + (m < 16 ? 16 : m));
}

/* WARMUP: the largest value seen plus a margin. Memory and disk get 5 % (at least 16 MB): a
 * try below its need is stopped and run again at the ceiling, which costs far more than the
 * margin. Cores are not stopped when exceeded (a quota slows the task), so the peak is only
 * rounded up to a quarter of a core, forgiving 5 % of measurement noise (1.04 -> 1). Gpus are
 * whole. */
static double compute_warmup(const struct category *c, int k)
{
	int f = category_sized_fields[k];
	double seen = c->stats.max_seen.v[f];
	if (!(seen >= 0))
		return -1;
	switch (f) {
	case RM_CORES: {
		double q = ceil(seen / 1.05 / 0.25 - 1e-9) * 0.25;
		return q < 0.25 ? 0.25 : q;
	}
	case RM_GPUS: return ceil(seen - 1e-9);
	default: return warmup_margin(seen);
	}
}

/* The memory held over the fine histogram of C, time-weighted, when tasks start with START
 * MB and one above it is grown in steps of STEP MB (at most up to TOP, the ceiling). */
static double held_cost(const struct category *c, double start, double step, double top)
{
	const struct histogram *h = &c->fine_mem;
	double cost = 0;
	for (size_t j = 0; j < h->n; j++) {
		double v = h->b[j].value, held = start;
		if (v > start) {
			held = start + step * ceil((v - start) / step - 1e-9);
			if (top > 0 && held > top && v <= top)
				held = top;
		}
		cost += held * h->b[j].time;
	}
	return cost;
}

double category_growth_start(const struct category *c, double step_mb)
{
	double est = c->stats.first_alloc.v[RM_MEMORY];
	if (c->mode != CATEGORY_MODE_WARMUP || !(step_mb > 0) || c->fine_mem.n == 0 || !(est > 0) ||
	    !c->have_alloc)
		return -1;
	double top = hard_max(c, RM_MEMORY);
	double best = est, best_cost = held_cost(c, est, step_mb, top);
	double limit = best_cost * 0.98;
	size_t n = c->fine_mem.n, stride = n / GROWTH_CANDIDATES + 1;
	for (size_t i = 0; i < n; i += stride) {
		double s = clip(c, RM_MEMORY, warmup_margin(c->fine_mem.b[i].value));
		if (s >= est)
			break;
		double cost = held_cost(c, s, step_mb, top);
		if (cost < best_cost && cost <= limit) {
			best = s;
			best_cost = cost;
		}
	}
	return best;
}

/* MIN_WASTE and MAX_THROUGHPUT over the histogram of sized field K (not empty). */
static double compute_formula(const struct category *c, int k, int throughput)
{
	const struct histogram *h = &c->hist[k];
	int f = category_sized_fields[k];
	double amax = a_max(c, f);
	double n_tasks = 0, total_time = 0;
	for (size_t i = 0; i < h->n; i++) {
		n_tasks += (double)h->b[i].count;
		total_time += h->b[i].time;
	}
	double tau = total_time / n_tasks;
	double after = total_time; /* sum of T_j for j > i */
	double fit = 0;            /* C(i) */
	double best = 0, best_score = 0;
	for (size_t i = 0; i < h->n; i++) {
		double a = h->b[i].value;
		fit += (double)h->b[i].count;
		after -= h->b[i].time;
		if (i == h->n - 1 || after < 0)
			after = 0;
		double r = after / n_tasks;
		double score;
		if (throughput) {
			if (a <= 0) /* tasks that need none of it: unbounded throughput */
				return 0;
			score = (fit * amax / a + (n_tasks - fit)) / (tau + r);
			debug(D_ALLOC, "category %s: %s %g: throughput %g", c->name,
			      rmsummary_field_name(f), a, score);
			if (i == 0 || score > best_score) {
				best = a;
				best_score = score;
			}
		} else {
			score = a * tau + amax * r;
			debug(D_ALLOC, "category %s: %s %g: expected waste %g", c->name,
			      rmsummary_field_name(f), a, score);
			if (i == 0 || score < best_score) {
				best = a;
				best_score = score;
			}
		}
	}
	return best;
}

static void recompute(struct category *c)
{
	c->have_alloc = c->mode != CATEGORY_MODE_FIXED;
	for (int k = 0; k < CATEGORY_N_SIZED; k++) {
		double v = -1;
		if (c->have_alloc && c->hist[k].n > 0) {
			switch (c->mode) {
			case CATEGORY_MODE_MAX: v = compute_max(c, k); break;
			case CATEGORY_MODE_MIN_WASTE: v = compute_formula(c, k, 0); break;
			case CATEGORY_MODE_MAX_THROUGHPUT: v = compute_formula(c, k, 1); break;
			case CATEGORY_MODE_WARMUP: v = compute_warmup(c, k); break;
			case CATEGORY_MODE_FIXED: break;
			}
		}
		c->computed[k] = v;
	}
	refresh_first_alloc(c);
	if (c->have_alloc)
		debug(D_ALLOC,
		      "category %s (%s): first allocation cores %g, memory %g MB, disk %g MB, "
		      "gpus %g",
		      c->name, category_mode_name(c->mode), c->stats.first_alloc.v[RM_CORES],
		      c->stats.first_alloc.v[RM_MEMORY], c->stats.first_alloc.v[RM_DISK],
		      c->stats.first_alloc.v[RM_GPUS]);
}

void category_set_mode(struct category *c, enum category_mode mode)
{
	c->mode = mode;
	if (c->steady || (mode == CATEGORY_MODE_WARMUP && c->n_measured > 0)) {
		recompute(c);
		return;
	}
	/* an estimate of WARMUP is not an allocation of the other modes */
	c->have_alloc = 0;
	for (int k = 0; k < CATEGORY_N_SIZED; k++)
		c->computed[k] = -1;
	refresh_first_alloc(c);
}

enum category_mode category_get_mode(const struct category *c)
{
	return c->mode;
}

static void copy_values(struct rmsummary *dst, const struct rmsummary *src)
{
	for (int i = 0; i < RM_N_FIELDS; i++)
		dst->v[i] = src && isfinite(src->v[i]) && src->v[i] >= 0 ? src->v[i] : -1;
}

/* Bounds changed: A_max and the clipping may differ, so redo the computation if there is
 * one. */
static void bounds_changed(struct category *c)
{
	if (c->have_alloc)
		recompute(c);
	else
		refresh_first_alloc(c);
}

void category_set_max(struct category *c, const struct rmsummary *max)
{
	copy_values(&c->max, max);
	bounds_changed(c);
}

void category_set_min(struct category *c, const struct rmsummary *min)
{
	copy_values(&c->min, min);
	bounds_changed(c);
}

void category_set_largest_worker(struct category *c, const struct rmsummary *worker)
{
	copy_values(&c->worker, worker);
	bounds_changed(c);
}

void category_set_update_interval(struct category *c, int n)
{
	c->interval = n < 1 ? 1 : n;
}

void category_accumulate(struct category *c, const struct rmsummary *measured)
{
	if (!measured)
		return;
	int any = 0, new_max = 0;
	double wall = measured->v[RM_WALL_TIME];
	if (!isfinite(wall) || wall < 0)
		wall = 1;
	if (wall < MIN_WALL_TIME)
		wall = MIN_WALL_TIME;
	for (int k = 0; k < CATEGORY_N_SIZED; k++) {
		int f = category_sized_fields[k];
		double v = measured->v[f];
		if (!isfinite(v) || v < 0)
			continue;
		any = 1;
		/* "Above the largest seen" is judged in buckets: measurement noise within a
		 * bucket must not keep a category from ever reaching steady state. */
		if (c->max.v[f] < 0 && c->stats.max_seen.v[f] >= 0 &&
		    bucket_value(k, v) > bucket_value(k, c->stats.max_seen.v[f]))
			new_max = 1;
		hist_add(&c->hist[k], bucket_value(k, v), wall);
		if (f == RM_MEMORY)
			hist_add(&c->fine_mem, ceil(v / FINE_MB - 1e-9) * FINE_MB, wall);
	}
	double cpu = measured->v[RM_CPU_TIME], w = measured->v[RM_WALL_TIME];
	if (isfinite(cpu) && cpu >= 0 && isfinite(w) && w >= LENT_MIN_WALL &&
	    cpu / w > c->max_avg_cores)
		c->max_avg_cores = cpu / w;
	for (int i = 0; i < RM_N_FIELDS; i++) {
		double v = measured->v[i];
		if (isfinite(v) && v >= 0 && v > c->stats.max_seen.v[i])
			c->stats.max_seen.v[i] = v;
	}
	if (!any)
		return;
	c->n_measured++;
	if (new_max && !c->steady) {
		if (c->since_reset > 0)
			debug(D_ALLOC,
			      "category %s: new maximum before steady state, restarting count",
			      c->name);
		c->since_reset = 0;
		if (c->have_alloc) {
			c->have_alloc = 0;
			for (int k = 0; k < CATEGORY_N_SIZED; k++)
				c->computed[k] = -1;
			refresh_first_alloc(c);
		}
	}
	c->since_reset++;
	if (c->since_reset % c->interval == 0) {
		recompute(c);
		c->steady = 1;
	} else if (c->mode == CATEGORY_MODE_WARMUP) {
		recompute(c); /* refined on every measurement, whatever the interval */
	}
}

double category_lent_cores(const struct category *c)
{
	double est = c->stats.first_alloc.v[RM_CORES];
	if (c->mode != CATEGORY_MODE_WARMUP || !c->have_alloc || !(est > 0) || c->max_avg_cores < 0)
		return -1;
	double v = ceil(c->max_avg_cores * 1.05 / 0.05 - 1e-9) * 0.05;
	if (v < 0.05)
		v = 0.05;
	v = clip(c, RM_CORES, v);
	return v < est ? v : est;
}

int64_t category_measurements(const struct category *c)
{
	return c->n_measured;
}

int category_warming(const struct category *c)
{
	return c->mode == CATEGORY_MODE_WARMUP && c->n_measured == 0;
}

/* The allocation of sized field F at LEVEL when the task did not declare it. */
static double level_value(const struct category *c, int k, enum category_level level)
{
	int f = category_sized_fields[k];
	if (c->mode == CATEGORY_MODE_FIXED)
		return c->max.v[f];
	if (level == CATEGORY_LEVEL_FIRST && c->have_alloc && c->stats.first_alloc.v[f] >= 0)
		return c->stats.first_alloc.v[f];
	return hard_max(c, f);
}

void category_allocation(const struct category *c, const struct rmsummary *requested,
                         enum category_level level, struct rmsummary *alloc)
{
	double req[RM_N_FIELDS];
	for (int i = 0; i < RM_N_FIELDS; i++)
		req[i] = requested ? requested->v[i] : -1;
	for (int i = 0; i < RM_N_FIELDS; i++)
		alloc->v[i] = req[i];
	for (int k = 0; k < CATEGORY_N_SIZED; k++) {
		int f = category_sized_fields[k];
		alloc->v[f] = req[f] >= 0 ? req[f] : level_value(c, k, level);
	}
}

enum category_level category_next_level(const struct category *c, enum category_level level,
                                        const struct rmsummary *requested,
                                        const struct rmsummary *allocated, uint64_t exhausted)
{
	if (exhausted == 0)
		return level;
	if (c->mode == CATEGORY_MODE_FIXED || level != CATEGORY_LEVEL_FIRST)
		return CATEGORY_LEVEL_ERROR;
	for (int f = 0; f < RM_N_FIELDS; f++) {
		if (!(exhausted & (UINT64_C(1) << f)))
			continue;
		if (sized_index(f) < 0)
			return CATEGORY_LEVEL_ERROR; /* e.g. wall time: a retry would not change it
			                              */
		if (requested && requested->v[f] >= 0)
			return CATEGORY_LEVEL_ERROR; /* the task's own value is final */
		double had = allocated ? allocated->v[f] : -1;
		double top = hard_max(c, f);
		if (had < 0)
			return CATEGORY_LEVEL_ERROR; /* it already had the whole worker */
		if (top >= 0 && had >= top)
			return CATEGORY_LEVEL_ERROR; /* capped by the category or the worker */
	}
	return CATEGORY_LEVEL_MAX;
}

void category_record(struct category *c, const struct rmsummary *allocated,
                     const struct rmsummary *measured, double wall_time_s, int exhausted,
                     int was_retry, int done)
{
	struct category_stats *s = &c->stats;
	if (exhausted)
		s->exhaustions++;
	if (was_retry)
		s->retries++;
	if (done > 0)
		s->tasks_done++;
	else if (done < 0)
		s->tasks_failed++;
	double wall = wall_time_s;
	if (!(wall >= 0) && measured && measured->v[RM_WALL_TIME] >= 0)
		wall = measured->v[RM_WALL_TIME];
	if (!(wall >= 0) || !isfinite(wall) || !allocated)
		return;
	for (int k = 0; k < CATEGORY_N_SIZED; k++) {
		int f = category_sized_fields[k];
		double a = allocated->v[f];
		if (!(a >= 0) || !isfinite(a))
			continue; /* no limit: nothing was set aside */
		if (exhausted) {
			s->allocated[f] += a * wall;
			s->waste[f] += a * wall;
			continue;
		}
		double used = measured ? measured->v[f] : -1;
		/* core-time used is the CPU time when measured: a peak of cores held for a
		 * moment is not a use of them over the whole try */
		if (f == RM_CORES && measured && measured->v[RM_CPU_TIME] >= 0 && wall > 0)
			used = measured->v[RM_CPU_TIME] / wall;
		if (!(used >= 0) || !isfinite(used))
			continue; /* usage unknown: counted neither way */
		s->allocated[f] += a * wall;
		if (a > used)
			s->waste[f] += (a - used) * wall;
	}
}

void category_record_limit_raise(struct category *c)
{
	c->stats.limit_raises++;
}

const struct category_stats *category_get_stats(const struct category *c)
{
	return &c->stats;
}
