/* scaler_hpa.c: the `hpa:TARGET` policy, the Kubernetes Horizontal Pod Autoscaler's rule as the
 * baseline: desired = ceil(current x load / target) on the workers' measured CPU load
 * (scaler_cpu_load), no change within a 10 % tolerance, and a scale-down only to the largest
 * desired size of the last WINDOW seconds (its stabilisation window). A scale-down drains
 * workers (idle first, then those with the fewest tasks); it never kills one. */
#include "scaler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "banned.h"

#define HPA_TOLERANCE 0.1
#define HPA_RING      (sizeof((struct scaler_policy *)0)->hpa_recent / (2 * sizeof(double)))

/* Records DESIRED at NOW and returns the largest desired size of the window. */
static int window_max(struct scaler_policy *p, double now, int desired)
{
	size_t slot = (p->hpa_head + p->hpa_n) % HPA_RING;
	if (p->hpa_n == HPA_RING) {
		p->hpa_head = (p->hpa_head + 1) % HPA_RING;
		p->hpa_n--;
	}
	p->hpa_recent[2 * slot] = now;
	p->hpa_recent[2 * slot + 1] = desired;
	p->hpa_n++;
	int best = desired;
	for (size_t k = 0; k < p->hpa_n; k++) {
		size_t i = (p->hpa_head + k) % HPA_RING;
		if (now - p->hpa_recent[2 * i] <= p->hpa_window && p->hpa_recent[2 * i + 1] > best)
			best = (int)p->hpa_recent[2 * i + 1];
	}
	return best;
}

/* Drains N of our workers: idle ones first, then the least busy. */
static void drain_some(const struct scaler_input *in, struct scaler_decision *d, int n)
{
	for (int round = 0; round < 2 && n > 0; round++)
		for (int tasks = 0; tasks <= 1024 && n > 0; tasks++) {
			for (size_t i = 0; i < in->n_workers && n > 0; i++) {
				const struct scaler_worker *w = &in->workers[i];
				if (!w->ours || w->draining || w->tasks != tasks)
					continue;
				scaler_decision_drain(d, w->id);
				n--;
			}
			if (round == 0)
				break; /* the first round takes only idle workers */
		}
}

void scaler_hpa_decide(struct scaler_policy *p, const struct scaler_input *in,
                       struct scaler_decision *d)
{
	int current = 0;
	for (size_t i = 0; i < in->n_workers; i++)
		if (in->workers[i].ours && !in->workers[i].draining)
			current++;
	int live = in->pool - in->draining;
	double load = scaler_cpu_load(in);
	int desired;
	if (load < 0 || current == 0) {
		/* no worker to measure: the deployment's one replica while there is work */
		desired = in->tasks_waiting + in->tasks_running > 0 ? (live > 0 ? live : 1) : live;
	} else {
		double ratio = load / p->hpa_target;
		desired =
		    fabs(ratio - 1) <= HPA_TOLERANCE ? current : (int)ceil((double)current * ratio);
	}
	if (desired < 1 && in->tasks_waiting + in->tasks_running > 0)
		desired = 1;
	int stable = window_max(p, in->now, desired);
	if (desired > live)
		d->start = desired - live;
	else if (stable < live)
		drain_some(in, d, live - stable);
	snprintf(d->reason, sizeof d->reason,
	         "hpa: load %.3f on %d workers, target %.2f: desired %d (window %d)", load, current,
	         p->hpa_target, desired, stable);
}
