/* scaler_queue.c: the `queue` policy, CCTools' factory rule: enough workers for one core per
 * waiting or running task (wq_factory_to_start). It never drains: an idle worker leaves by its
 * own idle timeout (-t). */
#include "scaler.h"

#include <stdio.h>

#include "wq_factory.h"

#include "banned.h"

void scaler_queue_decide(const struct scaler_input *in, struct scaler_decision *d)
{
	struct wq_factory_limits l = {
	    .min_workers = in->min_workers,
	    .max_workers = in->max_workers,
	    .workers_per_cycle = in->per_cycle,
	    .worker_cores = in->worker_size.v[SC_CORES] > 0 ? in->worker_size.v[SC_CORES] : 1,
	};
	struct wq_factory_demand dm = {in->tasks_waiting, in->tasks_running, in->workers_active};
	d->start = wq_factory_to_start(&l, &dm, in->pool - in->draining);
	snprintf(d->reason, sizeof d->reason, "queue: %lld waiting + %lld running tasks",
	         (long long)in->tasks_waiting, (long long)in->tasks_running);
}
