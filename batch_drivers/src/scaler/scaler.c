/* scaler.c: the policy names of --scaler, the common limits every policy's decision is held to
 * (pool within --min-workers..--max-workers, --workers-per-cycle, only the factory's own workers
 * drained), and the measured CPU load the hpa policy reads. See scaler.h. */
#include "scaler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stringtools.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

int scaler_parse(const char *spec, struct scaler_policy *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	if (!strcmp(spec, "hta")) {
		p->kind = SCALER_HTA;
		return 0;
	}
	if (!strcmp(spec, "queue")) {
		p->kind = SCALER_QUEUE;
		return 0;
	}
	if (!strncmp(spec, "hpa:", 4)) {
		char *copy = xstrdup(spec + 4);
		char *colon = strchr(copy, ':');
		double target = 0, window = 300;
		int bad = 0;
		if (colon) {
			*colon = 0;
			bad = str_to_double(colon + 1, &window) < 0 || window < 0 || window > 86400;
		}
		bad = bad || str_to_double(copy, &target) < 0 || target <= 0 || target > 100;
		free(copy);
		if (!bad) {
			p->kind = SCALER_HPA;
			p->hpa_target = target / 100;
			p->hpa_window = window;
			return 0;
		}
		snprintf(err, errlen,
		         "--scaler %s: expected hpa:TARGET (CPU load percent, 1..100) or "
		         "hpa:TARGET:WINDOW (scale-down window, 0..86400 s)",
		         spec);
		return -EINVAL;
	}
	snprintf(err, errlen, "--scaler %s: expected hta, queue or hpa:TARGET", spec);
	return -EINVAL;
}

void scaler_input_clear(struct scaler_input *in)
{
	for (size_t i = 0; i < in->n_cats; i++)
		free(in->cats[i].name);
	free(in->cats);
	for (size_t i = 0; i < in->n_workers; i++) {
		free(in->workers[i].id);
		free(in->workers[i].token);
	}
	free(in->workers);
	in->cats = NULL;
	in->workers = NULL;
	in->n_cats = in->n_workers = 0;
}

void scaler_decision_clear(struct scaler_decision *d)
{
	for (size_t i = 0; i < d->n_drain; i++)
		free(d->drain[i]);
	free(d->drain);
	memset(d, 0, sizeof *d);
}

void scaler_decision_drain(struct scaler_decision *d, const char *id)
{
	VEC_PUSH(d->drain, d->n_drain, d->cap_drain, xstrdup(id));
}

double scaler_cpu_load(const struct scaler_input *in)
{
	double cores = 0;
	for (size_t i = 0; i < in->n_workers; i++)
		if (in->workers[i].total.v[SC_CORES] > 0)
			cores += in->workers[i].total.v[SC_CORES];
	if (cores <= 0)
		return -1;
	double used = 0;
	for (size_t i = 0; i < in->n_cats; i++) {
		const struct scaler_category *c = &in->cats[i];
		double per = c->cores_avg >= 0 ? c->cores_avg : 0;
		used += per * (double)c->running;
	}
	return used / cores;
}

/* Holds D to the limits: the pool (minus the drained) within min..max, per_cycle starts, only
 * the factory's own workers drained, never more than would leave the pool under the minimum. */
void scaler_apply_limits(const struct scaler_input *in, struct scaler_decision *d)
{
	int live = in->pool - in->draining;
	if (d->start < 0)
		d->start = 0;
	if (live + d->start < in->min_workers)
		d->start = in->min_workers - live;
	if (live + d->start > in->max_workers)
		d->start = in->max_workers - live;
	if (d->start > in->per_cycle)
		d->start = in->per_cycle;
	if (d->start < 0)
		d->start = 0;
	size_t keep = 0;
	for (size_t i = 0; i < d->n_drain; i++) {
		bool ours = false;
		for (size_t k = 0; k < in->n_workers; k++)
			if (in->workers[k].ours && !in->workers[k].draining &&
			    !strcmp(in->workers[k].id, d->drain[i]))
				ours = true;
		if (ours && d->start == 0 && live - (int)keep - 1 >= in->min_workers)
			d->drain[keep++] = d->drain[i];
		else
			free(d->drain[i]);
	}
	d->n_drain = keep;
}

void scaler_decide(struct scaler_policy *p, const struct scaler_input *in,
                   struct scaler_decision *d)
{
	memset(d, 0, sizeof *d);
	switch (p->kind) {
	case SCALER_QUEUE: scaler_queue_decide(in, d); break;
	case SCALER_HPA: scaler_hpa_decide(p, in, d); break;
	case SCALER_HTA: scaler_hta_decide(in, d); break;
	}
	scaler_apply_limits(in, d);
}
