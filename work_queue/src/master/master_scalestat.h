/* master_scalestat.h: counters the master keeps for autoscalers (work_queue_factory), so that its
 * status can say per category how many tasks wait and run, since when they run, and how long
 * they take, without looking at every task at each query. Updated where a task is submitted,
 * joins or leaves a worker, and ends (doc/work-queue-api.md section 5, "Status for scalers"). */
#ifndef HTC_MASTER_SCALESTAT_H
#define HTC_MASTER_SCALESTAT_H

#include <jansson.h>
#include <stdbool.h>

struct work_queue;
struct mtask;

/* Width in seconds of the start-time buckets of running tasks. */
#define MASTER_SCALESTAT_QUANTUM 5.0

/* M entered the queue (submitted). */
void master_scalestat_added(struct work_queue *q, struct mtask *m);
/* M leaves the queue's active tasks (finished, cancelled or deleted before it finished);
 * RUN_S >= 0 is the run time of a successful try, counted in the category's mean and spread. */
void master_scalestat_ended(struct work_queue *q, const struct mtask *m, double run_s);
/* M left the queue's table (given back by work_queue_wait, or cancelled). */
void master_scalestat_removed(struct work_queue *q, const struct mtask *m);
/* M joined (ON) or left (!ON) a worker at time NOW (master_queue_now()). A task queued there
 * ahead of its turn (prefetch) counts as waiting until master_scalestat_started. */
void master_scalestat_listed(struct work_queue *q, struct mtask *m, bool on, double now);
/* M, queued on its worker ahead of its turn, started running there at NOW. */
void master_scalestat_started(struct work_queue *q, struct mtask *m, double now);
/* The per-category array of the status (caller json_decrefs); NOW is master_queue_now(). */
json_t *master_scalestat_categories(struct work_queue *q, double now);
/* The `categories` status document (caller json_decrefs): one object per category with tasks
 * in the queue (done ones not yet given back included), from the counters alone. */
json_t *master_scalestat_category_items(struct work_queue *q);
/* Frees the counters. */
void master_scalestat_free(struct work_queue *q);

#endif
