/* worker_cpus.h: the cpus of a worker that pins its tasks (--pin-cores): each task gets its
 * cores' worth of whole cpus that no other task of the worker holds, as a cpuset, so that
 * `nproc` and the runtimes that read the affinity mask inside the task see its allocation, not
 * the machine (doc/elasticity.md, "What a task sees"). */
#ifndef HTC_WORKER_CPUS_H
#define HTC_WORKER_CPUS_H

#include <sched.h>
#include <stddef.h>

struct worker_cpus;

/* The cpus the worker may use: its own affinity mask (or, when ALLOWED is not NULL, that
 * set: for tests). Never NULL. */
struct worker_cpus *worker_cpus_create(const cpu_set_t *allowed);
void worker_cpus_delete(struct worker_cpus *c); /* NULL is ok */

/* Takes ceil(CORES) cpus (at least one) that no task holds, the lowest first, into GOT, and
 * writes them as a cpuset list ("2,3") into BUF. Returns the number taken, or 0 (nothing
 * taken, BUF empty) when that many are not free or BUF is too small. */
int worker_cpus_take(struct worker_cpus *c, double cores, cpu_set_t *got, char *buf, size_t size);
/* Gives back the cpus of GOT (taken by worker_cpus_take), then empties GOT. */
void worker_cpus_give(struct worker_cpus *c, cpu_set_t *got);
/* How many cpus are free now. */
int worker_cpus_free(const struct worker_cpus *c);

#endif
