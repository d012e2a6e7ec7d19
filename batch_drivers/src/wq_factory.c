/* wq_factory.c: how many workers work_queue_factory starts each cycle, from the masters'
 * demand and its limits (see wq_factory.h). */
#include "wq_factory.h"

#include <errno.h>
#include <math.h>

#include "banned.h"

int wq_factory_to_start(const struct wq_factory_limits *l, const struct wq_factory_demand *d,
                        int running)
{
	double per_worker = l->worker_cores > 0 ? floor(l->worker_cores) : 1;
	if (per_worker < 1)
		per_worker = 1;
	int64_t tasks = (d->tasks_waiting > 0 ? d->tasks_waiting : 0) +
	                (d->tasks_running > 0 ? d->tasks_running : 0);
	int64_t needed = (int64_t)ceil((double)tasks / per_worker);
	if (needed < l->min_workers)
		needed = l->min_workers;
	if (needed > l->max_workers)
		needed = l->max_workers;
	int64_t start = needed - running;
	if (start > l->workers_per_cycle)
		start = l->workers_per_cycle;
	return start > 0 ? (int)start : 0;
}

/* The first integer of KEYS in O, or 0. */
static int64_t first_int(const json_t *o, const char *const *keys)
{
	for (; *keys; keys++) {
		const json_t *v = json_object_get(o, *keys);
		if (json_is_integer(v))
			return json_integer_value(v);
		if (json_is_real(v))
			return (int64_t)json_real_value(v);
	}
	return 0;
}

int wq_factory_add_status(struct wq_factory_demand *d, const json_t *status)
{
	if (!json_is_object(status))
		return -EINVAL;
	static const char *const waiting[] = {"tasks_waiting", NULL};
	static const char *const running[] = {"tasks_running", "tasks_on_workers", NULL};
	static const char *const workers[] = {"workers_connected", "workers", NULL};
	d->tasks_waiting += first_int(status, waiting);
	d->tasks_running += first_int(status, running);
	d->workers_connected += first_int(status, workers);
	return 0;
}
