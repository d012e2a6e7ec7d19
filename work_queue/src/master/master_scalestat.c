/* master_scalestat.c: the per-category counters of master_scalestat.h. Each category keeps its
 * active and on-worker task counts, the sum and buckets of the times its on-worker tasks were
 * assigned (a hash by MASTER_SCALESTAT_QUANTUM-second slot, emptied slots removed), the largest
 * declared size, and Welford's running mean and variance of successful run times. A status query
 * costs O(categories + their occupied slots), whatever the number of tasks. */
#include "master_scalestat.h"

#include <math.h>
#include <string.h>

#include <uthash.h>

#include "category.h"
#include "master_internal.h"
#include "rmsummary.h"
#include "xalloc.h"

#include "banned.h"

struct mscale_slot {
	int64_t slot; /* floor(assigned time / quantum) */
	int64_t n;
	UT_hash_handle hh;
};

struct mscale_cat {
	char *name;
	int64_t in_queue;   /* submitted, not yet given back or cancelled (done ones included) */
	int64_t active;     /* submitted, not ended */
	int64_t on_workers; /* assigned to a worker (sending, queued there, running, receiving) */
	double start_sum;   /* sum of the assignment times of those */
	struct mscale_slot *slots;
	double declared[3]; /* largest declared cores, memory, disk (-1: none declared) */
	int64_t rt_n;       /* successful run times seen */
	double rt_mean, rt_m2;
	UT_hash_handle hh;
};

static struct mscale_cat *cat_get(struct work_queue *q, const char *name)
{
	struct mscale_cat *c;
	HASH_FIND_STR(q->scale_cats, name, c);
	if (!c) {
		c = xcalloc(1, sizeof *c);
		c->name = xstrdup(name);
		c->declared[0] = c->declared[1] = c->declared[2] = -1;
		HASH_ADD_KEYPTR(hh, q->scale_cats, c->name, strlen(c->name), c);
	}
	return c;
}

void master_scalestat_added(struct work_queue *q, struct mtask *m)
{
	struct mscale_cat *c = cat_get(q, m->t->category ? m->t->category : "default");
	m->scat = c;
	c->in_queue++;
	c->active++;
	const struct rmsummary *r = m->t->resources_requested;
	if (r) {
		static const int f[3] = {RM_CORES, RM_MEMORY, RM_DISK};
		for (int i = 0; i < 3; i++)
			if (r->v[f[i]] > c->declared[i])
				c->declared[i] = r->v[f[i]];
	}
}

void master_scalestat_ended(struct work_queue *q, const struct mtask *m, double run_s)
{
	(void)q;
	struct mscale_cat *c = m->scat;
	if (!c)
		return;
	if (c->active > 0)
		c->active--;
	if (run_s >= 0 && isfinite(run_s)) {
		c->rt_n++;
		double d = run_s - c->rt_mean;
		c->rt_mean += d / (double)c->rt_n;
		c->rt_m2 += d * (run_s - c->rt_mean);
	}
}

void master_scalestat_removed(struct work_queue *q, const struct mtask *m)
{
	(void)q;
	if (m->scat && m->scat->in_queue > 0)
		m->scat->in_queue--;
}

/* Counts M as running on a worker from NOW (or stops counting it). */
static void count_running(struct mscale_cat *c, struct mtask *m, bool on, double now)
{
	double at = on ? now : m->listed_at;
	int64_t key = (int64_t)floor(at / MASTER_SCALESTAT_QUANTUM);
	struct mscale_slot *s;
	HASH_FIND(hh, c->slots, &key, sizeof key, s);
	if (on) {
		m->listed_at = now;
		m->scale_running = true;
		c->on_workers++;
		c->start_sum += now;
		if (!s) {
			s = xcalloc(1, sizeof *s);
			s->slot = key;
			HASH_ADD(hh, c->slots, slot, sizeof s->slot, s);
		}
		s->n++;
		return;
	}
	m->scale_running = false;
	c->on_workers--;
	c->start_sum -= at;
	if (c->on_workers == 0)
		c->start_sum = 0; /* no drift from the sums */
	if (s && --s->n == 0) {
		HASH_DEL(c->slots, s);
		free(s);
	}
}

void master_scalestat_listed(struct work_queue *q, struct mtask *m, bool on, double now)
{
	(void)q;
	struct mscale_cat *c = m->scat;
	if (!c)
		return;
	/* a task queued on a worker ahead of its turn (prefetch) still waits for resources: it
	 * counts as running from its task_running (master_scalestat_started) */
	if (on && !m->queued && !m->scale_running)
		count_running(c, m, true, now);
	else if (!on && m->scale_running)
		count_running(c, m, false, now);
}

void master_scalestat_started(struct work_queue *q, struct mtask *m, double now)
{
	(void)q;
	if (m->scat && m->listed && !m->scale_running)
		count_running(m->scat, m, true, now);
}

/* Upper edges (seconds of age) of the histogram of on-worker tasks; the last is open. */
static const double age_edges[] = {10, 30, 60, 300, 900, 3600, 14400};
#define N_AGES (sizeof age_edges / sizeof age_edges[0] + 1)

static json_t *running_json(const struct mscale_cat *c, double now)
{
	int64_t hist[N_AGES] = {0};
	double oldest = now;
	struct mscale_slot *s, *tmp;
	HASH_ITER(hh, c->slots, s, tmp)
	{
		double start = (double)s->slot * MASTER_SCALESTAT_QUANTUM;
		if (start < oldest)
			oldest = start;
		double age = now - start;
		size_t i = 0;
		while (i < N_AGES - 1 && age >= age_edges[i])
			i++;
		hist[i] += s->n;
	}
	json_t *h = json_array();
	for (size_t i = 0; i < N_AGES; i++)
		json_array_append_new(h, json_integer(hist[i]));
	json_t *edges = json_array();
	for (size_t i = 0; i < N_AGES - 1; i++)
		json_array_append_new(edges, json_real(age_edges[i]));
	double mean_age = c->on_workers > 0 ? now - c->start_sum / (double)c->on_workers : 0;
	return json_pack("{s:I,s:f,s:f,s:o,s:o}", "count", (json_int_t)c->on_workers, "oldest_age",
	                 c->on_workers > 0 ? now - oldest : 0.0, "mean_age",
	                 mean_age > 0 ? mean_age : 0.0, "age_edges", edges, "age_histogram", h);
}

static json_t *size_json(const double v[3])
{
	return json_pack("{s:f,s:f,s:f}", "cores", v[0], "memory", v[1], "disk", v[2]);
}

json_t *master_scalestat_categories(struct work_queue *q, double now)
{
	json_t *a = json_array();
	struct mscale_cat *c, *tmp;
	HASH_ITER(hh, q->scale_cats, c, tmp)
	{
		if (c->active == 0 && c->rt_n == 0)
			continue;
		struct category *cat = master_sched_category(q->sched, c->name);
		const struct category_stats *st = category_get_stats(cat);
		double measured[3] = {st->max_seen.v[RM_CORES], st->max_seen.v[RM_MEMORY],
		                      st->max_seen.v[RM_DISK]};
		double first[3] = {st->first_alloc.v[RM_CORES], st->first_alloc.v[RM_MEMORY],
		                   st->first_alloc.v[RM_DISK]};
		int64_t waiting = c->active - c->on_workers;
		double sd = c->rt_n > 1 ? sqrt(c->rt_m2 / (double)(c->rt_n - 1)) : 0;
		json_t *o = json_pack(
		    "{s:s,s:I,s:o,s:o,s:o,s:o,s:{s:I,s:f,s:f}}", "name", c->name, "waiting",
		    (json_int_t)(waiting > 0 ? waiting : 0), "running", running_json(c, now),
		    "declared", size_json(c->declared), "measured", size_json(measured),
		    "first_allocation", size_json(first), "run_time", "count", (json_int_t)c->rt_n,
		    "mean", c->rt_n > 0 ? c->rt_mean : -1.0, "stddev", c->rt_n > 1 ? sd : -1.0);
		json_object_set_new(json_object_get(o, "measured"), "cores_avg",
		                    json_real(st->max_seen.v[RM_CORES_AVG]));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *master_scalestat_category_items(struct work_queue *q)
{
	json_t *a = json_array();
	struct mscale_cat *c, *tmp;
	HASH_ITER(hh, q->scale_cats, c, tmp)
	{
		if (c->in_queue == 0)
			continue;
		struct category *cat = master_sched_category(q->sched, c->name);
		const struct category_stats *st = category_get_stats(cat);
		int64_t waiting = c->active - c->on_workers;
		json_array_append_new(
		    a, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "name", c->name, "mode",
		                 category_mode_name(category_get_mode(cat)), "waiting",
		                 (json_int_t)(waiting > 0 ? waiting : 0), "running",
		                 (json_int_t)c->on_workers, "done", (json_int_t)st->tasks_done,
		                 "failed", (json_int_t)st->tasks_failed, "exhaustions",
		                 (json_int_t)st->exhaustions));
	}
	return a;
}

void master_scalestat_free(struct work_queue *q)
{
	struct mscale_cat *c, *tmp;
	HASH_ITER(hh, q->scale_cats, c, tmp)
	{
		struct mscale_slot *s, *t2;
		HASH_ITER(hh, c->slots, s, t2)
		{
			HASH_DEL(c->slots, s);
			free(s);
		}
		HASH_DEL(q->scale_cats, c);
		free(c->name);
		free(c);
	}
}
