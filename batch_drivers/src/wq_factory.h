/* wq_factory.h: the decision at the heart of work_queue_factory: from what the master reports
 * (tasks waiting and running, workers connected) and what the factory already runs, how many
 * workers to start this cycle. Pure arithmetic, so every rule can be tested; the program
 * (wq_factory_run.c) gathers the numbers and starts the workers. */
#ifndef HTC_WQ_FACTORY_H
#define HTC_WQ_FACTORY_H

#include <jansson.h>

/* What the factory is told to do. */
struct wq_factory_limits {
	int min_workers;       /* always keep at least this many (>= 0) */
	int max_workers;       /* never more than this many (>= min_workers, >= 1) */
	int workers_per_cycle; /* start at most this many per cycle (>= 1) */
	double worker_cores;   /* cores each worker offers (> 0): tasks it runs at once */
};

/* What the masters report, summed over the masters the factory serves. */
struct wq_factory_demand {
	int64_t tasks_waiting;
	int64_t tasks_running;
	int64_t workers_connected;
};

/* Workers to start now: enough workers of worker_cores cores for every waiting and running task
 * (one core each), within [min_workers, max_workers], minus the RUNNING workers the factory
 * already has (submitted and not ended), at most workers_per_cycle, never negative. */
int wq_factory_to_start(const struct wq_factory_limits *l, const struct wq_factory_demand *d,
                        int running);

/* Adds the demand reported in a master's status object STATUS (the "master" document of
 * doc/work-queue-api.md section 5, or a catalog record of type wq_master) to D. Missing keys
 * count as 0; tasks_running falls back to tasks_on_workers and workers_connected to workers.
 * Returns 0, or -EINVAL if STATUS is not an object. */
int wq_factory_add_status(struct wq_factory_demand *d, const json_t *status);

#endif
