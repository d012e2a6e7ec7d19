/* worker_queue.h: the FIFO of queued tasks of work_queue_worker (doc/work-queue-protocol.md 5.6,
 * "Queued tasks"): tasks the master sent ahead with `queued: true` wait here, in the order
 * received, until the head fits the free resources of the ledger; heads are then committed in
 * order (never a later one before the head). The items are the caller's; this only orders them. */
#ifndef HTC_WORKER_QUEUE_H
#define HTC_WORKER_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "worker_task.h"
#include "wq_msg.h"

struct worker_queue;

/* A FIFO that holds at most MAX items (1 .. WQ_QUEUE_MAX; clamped). Never NULL. */
struct worker_queue *worker_queue_create(int max);
/* Frees Q (not the items). NULL is accepted. */
void worker_queue_delete(struct worker_queue *q);

/* The `queue_max` a worker of CORES cores offers: 2 x CORES rounded down, 1 .. WQ_QUEUE_MAX. */
int worker_queue_default_max(double cores);
int worker_queue_max(const struct worker_queue *q);
size_t worker_queue_length(const struct worker_queue *q);

/* Appends ITEM, which will need R (copied). 0, or -EBUSY when MAX items are held. */
int worker_queue_push(struct worker_queue *q, void *item, const struct wq_resources *r);
/* Takes ITEM out wherever it is; true if it was there. */
bool worker_queue_remove(struct worker_queue *q, void *item);
/* The head (NULL when empty) and, when R is not NULL, what it needs. */
void *worker_queue_head(const struct worker_queue *q, struct wq_resources *r);

/* Where the allocation of ITEM is kept, and what to do once ITEM is committed. */
typedef struct worker_alloc *(*worker_queue_alloc_fn)(void *item, void *arg);
typedef void (*worker_queue_committed_fn)(void *item, void *arg);

/* Commits heads while they fit the free resources of L: the head's allocation is committed into
 * ALLOC(item) (worker_ledger_commit), the head leaves the FIFO, then COMMITTED(item) is called
 * (it may push or remove other items). Returns how many were committed. */
int worker_queue_run(struct worker_queue *q, struct worker_ledger *l, worker_queue_alloc_fn alloc,
                     worker_queue_committed_fn committed, void *arg);

/* The head, when it does not fit L although no task holds anything (it would wait for ever),
 * with the refusal code in *CODE ("disk_full" or "overcommit") and its text in *TEXT (caller
 * frees); else NULL. */
void *worker_queue_stuck(struct worker_queue *q, struct worker_ledger *l, const char **code,
                         char **text);

#endif
