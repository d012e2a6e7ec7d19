/* worker_elastic.h: vertical elasticity of the tasks of work_queue_worker (doc/elasticity.md).
 * A task at its memory limit is grown in steps into memory no other task of the worker holds,
 * up to the maximum its master sent; a grown task is shrunk back when its use falls well below;
 * a task whose memory grows abnormally fast while the worker is short of memory is held at its
 * usage (throttled) and released when memory is free again. The decisions are the shared
 * policy of rmon_elastic.h; this module reads the figures, sets the limits through the
 * monitor, charges the growth in the worker's ledger and logs every change. */
#ifndef HTC_WORKER_ELASTIC_H
#define HTC_WORKER_ELASTIC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "rmonitor.h"
#include "worker_opts.h"
#include "worker_task.h"

struct worker_elastic;
struct worker_elastic_task;

/* The elasticity of a worker with the options O (--memory-grow, --grow-step-up, ...) whose
 * tasks are charged in L (borrowed, must outlive it). NULL when neither growth nor the throttle
 * is on. */
struct worker_elastic *worker_elastic_create(uv_loop_t *loop, const struct worker_opts *o,
                                             struct worker_ledger *l);
/* Frees E (its tasks must have been removed). NULL is accepted. */
void worker_elastic_delete(struct worker_elastic *e);

/* Called when the memory a task holds in the ledger changed (grown or shrunk), with its new
 * size in MB: the session tells the master and starts queued tasks a shrink made room for. */
typedef void (*worker_elastic_resized_fn)(void *arg, int64_t memory_mb);

/* A task of E named NAME ("ID.TRY", copied) whose allocation A (borrowed: the one held in the
 * ledger, which growth and shrink change; must outlive the task's membership) may grow up to
 * MAX_MB (<= its memory: never). VIEW (copied; NULL: none) is the path of its allocation file,
 * written now and again whenever its memory limit or CPU quota changes (doc/elasticity.md,
 * "The adaptive view"). Never NULL. Bind it to its monitor once started. */
struct worker_elastic_task *worker_elastic_task_add(struct worker_elastic *e, const char *name,
                                                    struct worker_alloc *a, int64_t max_mb,
                                                    const char *view,
                                                    worker_elastic_resized_fn resized, void *arg);
void worker_elastic_task_bind(struct worker_elastic_task *t, struct rmonitor *m);
/* T runs in a container of its own, followed through C (taken; see worker_ctr_memory.h): its
 * CPU time is read there and its CPU quota changed through the engine (--cpu-grow); with
 * MEMORY (a container outside the task's cgroup) also its memory use, and its limit grown,
 * shrunk and held through the engine. */
struct worker_ctr_memory;
void worker_elastic_task_container(struct worker_elastic_task *t, struct worker_ctr_memory *c,
                                   bool memory);
/* The monitor's at_memory_limit for a task (its argument is the task). */
int64_t worker_elastic_at_limit(struct rmonitor *m, int64_t limit_mb, void *arg);
/* --cpu-grow: the most cores a task may be lent (the worker's cores); 0 when E is NULL or does
 * not lend. */
double worker_elastic_lends_cores(const struct worker_elastic *e);
/* The sampling interval its monitor needs (fresh readings for the growth rate), s. */
double worker_elastic_interval(const struct worker_elastic *e);
/* Whether memory changes are worth reporting: the `grown` object of `task_done` {memory_mb:
 * largest limit, final_mb, steps, shrinks, throttled}, or NULL when it never changed. New
 * reference. */
json_t *worker_elastic_task_json(const struct worker_elastic_task *t);
/* Forgets T (its tree has ended or is being killed). NULL is accepted. */
void worker_elastic_task_remove(struct worker_elastic_task *t);

#endif
