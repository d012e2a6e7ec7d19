/* scaler_hta.c: the `hta` policy, Algorithm 1 of the HTA work with resource vectors. Over one
 * resource-preparing latency it simulates the master: running tasks end at their category's
 * mean run time, their resources go back to their worker, and waiting tasks are packed first-fit
 * into the free vectors of the connected workers and of those already requested. Tasks still
 * waiting at the end need new workers (packed into workers of the factory's size); when nothing
 * waits, idle workers are drained. Warm-up: a category with no measured run yet, whose tasks
 * do not declare their cores, counts as one task the size of a whole worker; one that declares
 * them counts in full, its running tasks held for the whole latency (their run time is not
 * known yet). Actions are at least one latency apart. */
#include "scaler.h"

#include <math.h>
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
	double end;     /* when its running tasks end (seconds from now), or > horizon */
	int64_t ending; /* how many of them */
};

void scaler_hta_decide(const struct scaler_input *in, struct scaler_decision *d)
{
	double L = in->latency > 0 ? in->latency : 1;
	d->next_in = L;
	struct scaler_vec wsize = in->worker_size;
	if (wsize.v[SC_CORES] <= 0)
		wsize.v[SC_CORES] = 1;
	/* the bins: connected workers not draining, then the requested ones */
	size_t nb = 0;
	struct scaler_vec *bins = xcalloc(in->n_workers + (size_t)in->pending + 1, sizeof *bins);
	for (size_t i = 0; i < in->n_workers; i++)
		if (!in->workers[i].draining)
			bins[nb++] = in->workers[i].free;
	for (int i = 0; i < in->pending; i++)
		bins[nb++] = wsize;
	struct sim_cat *sc = xcalloc(in->n_cats + 1, sizeof *sc);
	int64_t waiting0 = 0;
	for (size_t i = 0; i < in->n_cats; i++) {
		const struct scaler_category *c = &in->cats[i];
		sc[i].size = task_size(c, &wsize);
		/* warm-up: one task of a category never measured, until one has run */
		bool warm = c->done == 0 && !c->declared;
		sc[i].waiting = warm && c->running > 0 ? 0
		                : warm                 ? (c->waiting > 0 ? 1 : 0)
		                                       : c->waiting;
		waiting0 += c->waiting;
		sc[i].end = c->rt_mean >= 0 ? fmax(0, c->rt_mean - c->running_mean_age) : 2 * L;
		sc[i].ending = c->running;
	}
	/* events: t = 0, then each category's end within the horizon */
	for (int round = 0; round <= (int)in->n_cats; round++) {
		double t = 1e300;
		if (round == 0) {
			t = 0;
		} else {
			size_t which = in->n_cats;
			for (size_t i = 0; i < in->n_cats; i++)
				if (sc[i].ending > 0 && sc[i].end < t && sc[i].end < L) {
					t = sc[i].end;
					which = i;
				}
			if (which == in->n_cats)
				break;
			/* their resources come back; spread over the bins as a whole-pool credit */
			struct scaler_vec back = sc[which].size;
			for (int64_t k = 0; k < sc[which].ending && nb > 0; k++) {
				struct scaler_vec *b = &bins[(size_t)k % nb];
				for (int r = 0; r < SC_NRES; r++)
					if (back.v[r] > 0 && b->v[r] >= 0)
						b->v[r] += back.v[r];
			}
			sc[which].ending = 0;
		}
		for (size_t i = 0; i < in->n_cats; i++)
			for (size_t b = 0; b < nb && sc[i].waiting > 0; b++) {
				int64_t n = fits(&bins[b], &sc[i].size);
				if (n > sc[i].waiting)
					n = sc[i].waiting;
				take(&bins[b], &sc[i].size, n);
				sc[i].waiting -= n;
			}
	}
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
	free(bins);
	bool gap = in->last_action >= 0 && in->now - in->last_action < L;
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
	if (gap && (d->start > 0 || d->n_drain > 0)) {
		d->next_in = L - (in->now - in->last_action);
		d->start = 0;
		for (size_t i = 0; i < d->n_drain; i++)
			free(d->drain[i]);
		d->n_drain = 0;
		strncat(d->reason, " (held: within one latency of the last action)",
		        sizeof d->reason - strlen(d->reason) - 1);
	}
}
