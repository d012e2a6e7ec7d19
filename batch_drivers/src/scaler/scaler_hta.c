/* scaler_hta.c: the `hta` policy, Algorithm 1 of the HTA work with resource vectors. Over one
 * resource-preparing latency it simulates the master: running tasks end at their category's
 * mean run time, their resources go back to their worker, and waiting tasks are packed first-fit
 * into the free vectors of the connected workers and of those already requested; the tasks it
 * packs end in turn at their category's mean run time, so a wave of short tasks that the pool
 * runs before a new worker could arrive asks for none. Tasks still waiting at the end need new
 * workers (packed into workers of the factory's size); when nothing waits, idle workers are
 * drained. Warm-up: a category with no measured run yet, whose tasks
 * do not declare their cores, counts as one task the size of a whole worker; one that declares
 * them counts in full. Until one of its tasks ends, such a category's run time is taken to be
 * twice the mean age of its running tasks (they are taken to be half done), at least one
 * period; with none running, its tasks hold their resources through the latency. A start comes
 * at least one latency after the previous start or drain, a drain at least one after the
 * previous start; drains in a row are not held. */
#include "scaler.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#include "banned.h"

/* How many tasks of SIZE fit in FREE (every known field). */
static int64_t fits(const struct scaler_vec *free, const struct scaler_vec *size)
{
	double n = 1e18;
	for (int i = 0; i < SC_NRES; i++) {
		if (size->v[i] <= 0 || free->v[i] < 0)
			continue;
		double k = floor(free->v[i] / size->v[i] + 1e-9);
		if (k < n)
			n = k;
	}
	return n < 0 ? 0 : (int64_t)n;
}

static void take(struct scaler_vec *free, const struct scaler_vec *size, int64_t n)
{
	for (int i = 0; i < SC_NRES; i++)
		if (size->v[i] > 0 && free->v[i] >= 0)
			free->v[i] -= size->v[i] * (double)n;
}

/* The size used for a category: unknown fields (and warm-up) take the whole worker. */
static struct scaler_vec task_size(const struct scaler_category *c, const struct scaler_vec *w)
{
	struct scaler_vec s = c->size;
	for (int i = 0; i < SC_NRES; i++)
		if (s.v[i] <= 0 || (c->done == 0 && !c->declared))
			s.v[i] = w->v[i] > 0 ? w->v[i] : (i == SC_CORES ? 1 : -1);
	return s;
}

struct sim_cat {
	struct scaler_vec size;
	int64_t waiting;
	double rt; /* the run time of a task started in the simulation; < 0 unknown */
};

/* Tasks of one category that end together at T and give their sizes back: to bin BIN, or
 * (BIN == SIZE_MAX: the tasks running now, whose workers are not known) spread over the bins.
 */
struct sim_end {
	double t;
	size_t cat, bin;
	int64_t n;
};

struct sim {
	struct scaler_vec *bins;
	size_t nb;
	struct sim_cat *cats;
	size_t nc;
	struct sim_end *ends;
	size_t n_ends, cap_ends;
	double horizon;
};

static void sim_add_end(struct sim *s, double t, size_t cat, size_t bin, int64_t n)
{
	if (n <= 0 || t > s->horizon)
		return; /* beyond the horizon: it holds its resources throughout */
	if (s->n_ends == s->cap_ends) {
		s->cap_ends = s->cap_ends ? 2 * s->cap_ends : 16;
		s->ends = xrealloc(s->ends, s->cap_ends * sizeof *s->ends);
	}
	s->ends[s->n_ends++] = (struct sim_end){t, cat, bin, n};
}

/* Packs the waiting tasks first-fit into the bins at time T; those whose run time is known end
 * at T + that time and give their resources back to their bin then. */
static void sim_pack(struct sim *s, double t)
{
	for (size_t i = 0; i < s->nc; i++)
		for (size_t b = 0; b < s->nb && s->cats[i].waiting > 0; b++) {
			int64_t n = fits(&s->bins[b], &s->cats[i].size);
			if (n > s->cats[i].waiting)
				n = s->cats[i].waiting;
			if (n <= 0)
				continue;
			take(&s->bins[b], &s->cats[i].size, n);
			s->cats[i].waiting -= n;
			if (s->cats[i].rt >= 0)
				sim_add_end(s, t + s->cats[i].rt, i, b, n);
		}
}

static void give_back(struct scaler_vec *b, const struct scaler_vec *size, int64_t n)
{
	for (int r = 0; r < SC_NRES; r++)
		if (size->v[r] > 0 && b->v[r] >= 0)
			b->v[r] += size->v[r] * (double)n;
}

/* At most this many moments of the horizon are simulated (a bound on the work of one decision
 * when tasks are much shorter than the latency); tasks still waiting after them count as
 * waiting at the horizon, so the bound can only start more workers, never fewer. */
#define HTA_SIM_ROUNDS 256

/* Runs the simulation from 0 to the horizon: at each moment where tasks end, their resources
 * come back and waiting tasks are packed. A task that can start by the horizon (when a worker
 * requested now would arrive) needs no new worker. */
static void sim_run(struct sim *s)
{
	sim_pack(s, 0);
	for (int round = 0; round < HTA_SIM_ROUNDS && s->n_ends > 0; round++) {
		double t = s->ends[0].t;
		for (size_t k = 1; k < s->n_ends; k++)
			if (s->ends[k].t < t)
				t = s->ends[k].t;
		for (size_t k = 0; k < s->n_ends;) {
			struct sim_end *e = &s->ends[k];
			if (e->t > t) {
				k++;
				continue;
			}
			const struct scaler_vec *size = &s->cats[e->cat].size;
			if (e->bin != SIZE_MAX)
				give_back(&s->bins[e->bin], size, e->n);
			else
				for (int64_t j = 0; j < e->n && s->nb > 0; j++)
					give_back(&s->bins[(size_t)j % s->nb], size, 1);
			s->ends[k] = s->ends[--s->n_ends];
		}
		sim_pack(s, t);
	}
}

/* The run time used for category C: the measured mean; for a category that declares its size
 * and has not finished a task yet, twice the mean age of its running tasks (at least PERIOD,
 * the next look); -1 (unknown) otherwise. */
static double run_time(const struct scaler_category *c, bool warm, double period)
{
	if (c->rt_mean >= 0)
		return c->rt_mean;
	if (warm || c->running <= 0)
		return -1;
	return fmax(2 * c->running_mean_age, period > 0 ? period : 1);
}

void scaler_hta_decide(const struct scaler_input *in, struct scaler_decision *d)
{
	double L = in->latency > 0 ? in->latency : 1;
	d->next_in = L;
	struct scaler_vec wsize = in->worker_size;
	if (wsize.v[SC_CORES] <= 0)
		wsize.v[SC_CORES] = 1;
	/* the bins: connected workers not draining, then the requested ones */
	struct sim sim = {.horizon = L};
	sim.bins = xcalloc(in->n_workers + (size_t)in->pending + 1, sizeof *sim.bins);
	for (size_t i = 0; i < in->n_workers; i++)
		if (!in->workers[i].draining)
			sim.bins[sim.nb++] = in->workers[i].free;
	for (int i = 0; i < in->pending; i++)
		sim.bins[sim.nb++] = wsize;
	struct sim_cat *sc = xcalloc(in->n_cats + 1, sizeof *sc);
	sim.cats = sc;
	sim.nc = in->n_cats;
	int64_t waiting0 = 0;
	for (size_t i = 0; i < in->n_cats; i++) {
		const struct scaler_category *c = &in->cats[i];
		sc[i].size = task_size(c, &wsize);
		/* warm-up: one task of a category never measured, until one has run */
		bool warm = c->done == 0 && !c->declared;
		sc[i].waiting = warm && c->running > 0 ? 0
		                : warm                 ? (c->waiting > 0 ? 1 : 0)
		                                       : c->waiting;
		double rt = run_time(c, warm, in->period);
		sc[i].rt = warm ? -1 : rt;
		waiting0 += c->waiting;
		/* the running tasks end at their run time, less what they have run; unknown: held
		 * through the horizon */
		double end = rt >= 0 ? fmax(0, rt - c->running_mean_age) : 2 * L;
		sim_add_end(&sim, end, i, SIZE_MAX, c->running);
	}
	sim_run(&sim);
	free(sim.ends);
	double need = 0;
	int64_t left = 0;
	for (size_t i = 0; i < in->n_cats; i++) {
		if (sc[i].waiting <= 0)
			continue;
		left += sc[i].waiting;
		int64_t per = fits(&wsize, &sc[i].size);
		need += (double)sc[i].waiting / (double)(per > 0 ? per : 1);
	}
	free(sc);
	free(sim.bins);
	/* the gap: a start waits one latency after any action, a drain one after a start */
	double since_action = in->last_action >= 0 ? in->now - in->last_action : 1e300;
	double since_start = in->last_start >= 0 ? in->now - in->last_start : 1e300;
	if (left > 0) {
		d->start = (int)ceil(need - 1e-9);
		snprintf(d->reason, sizeof d->reason,
		         "hta: %lld tasks would still wait after %.0f s: %d workers",
		         (long long)left, L, d->start);
	} else if (waiting0 == 0 && in->tasks_waiting == 0) {
		/* nothing waits: idle capacity is drained (clean-up when nothing runs either) */
		for (size_t i = 0; i < in->n_workers; i++) {
			const struct scaler_worker *w = &in->workers[i];
			if (w->ours && !w->draining && w->tasks == 0 && w->idle_s >= in->period)
				scaler_decision_drain(d, w->id);
		}
		snprintf(d->reason, sizeof d->reason, "hta: nothing waits: draining %zu idle",
		         d->n_drain);
	} else {
		snprintf(d->reason, sizeof d->reason,
		         "hta: the %lld waiting tasks fit within %.0f s", (long long)waiting0, L);
	}
	double since = d->start > 0 ? since_action : d->n_drain > 0 ? since_start : 1e300;
	if (since < L) {
		d->next_in = L - since;
		d->start = 0;
		for (size_t i = 0; i < d->n_drain; i++)
			free(d->drain[i]);
		d->n_drain = 0;
		strncat(d->reason, " (held: within one latency of the last action)",
		        sizeof d->reason - strlen(d->reason) - 1);
	}
}
