/* master_prepare.h: naming the inputs of a submitted task off the master's loop thread.
 * work_queue_submit does the cheap checks at once; hashing files and directories and the HEAD
 * requests of URL inputs run in libuv's thread pool, one job per path or URL shared by every
 * task that needs it, and the task enters the scheduler when its last input is named. */
#ifndef HTC_MASTER_PREPARE_H
#define HTC_MASTER_PREPARE_H

#include <stdint.h>

#include "master_internal.h"

/* Preparation jobs of one queue running in the thread pool at once (the pool is process-wide
 * and transfers use it too); later jobs wait in a FIFO. */
#define MASTER_PREPARE_MAX_JOBS 3

/* The preparation state of a queue (its jobs, the memo of file hashes, counters), q->prep. */
struct master_prepare;
struct master_prepare *master_prepare_create(void);
/* The queue is being deleted: its queued jobs are dropped, its running ones are told to stop
 * and are detached; P is freed with the last of them (at once when none runs). NULL is
 * accepted. */
void master_prepare_end(struct master_prepare *p);

/* The synchronous part, for task M of Q (m->t set, not yet in Q): stats every local input (a
 * missing one, or a cached one that is not a regular file, is an error, warned), allocates
 * m->objects and m->obj_size, and names the cached files the memo already knows. Returns how
 * many inputs still need a job (>= 0, also stored in m->prep_pending), or -errno / HTC_E*. */
int master_prepare_inputs(struct work_queue *q, struct mtask *m);

/* Starts or joins the jobs naming the remaining inputs of M, which is in Q's task table with
 * its id, in state MTASK_PREPARING. When the last one is named M enters the scheduler (state
 * MTASK_READY); when one fails M finishes with WORK_QUEUE_RESULT_INPUT_MISSING and
 * work_queue_task_last_error(M->t) names the input and the reason. */
void master_prepare_start(struct work_queue *q, struct mtask *m);

/* A task of Q leaves MTASK_PREPARING for another reason (cancelled): its jobs go on and only
 * fill the memo. */
void master_prepare_forget(struct work_queue *q, struct mtask *m);

/* Tasks of Q in MTASK_PREPARING. */
int64_t master_prepare_count(const struct work_queue *q);

/* For tests. */
struct master_prepare_counters {
	int64_t jobs_started;  /* jobs handed to the thread pool */
	int64_t jobs_finished; /* jobs handed back (detached ones included) */
	int64_t jobs_joined;   /* inputs that joined a job another task had started */
	int64_t max_in_flight; /* most jobs in the pool at once */
	int64_t in_flight;
	int64_t queued;
	int64_t dirs_reused; /* cached directories named again without reading their files */
};
void master_prepare_get_counters(const struct work_queue *q, struct master_prepare_counters *c);
/* FN(PATH_OR_URL, ARG) is called in the pool thread as each job of Q begins (NULL: none). */
void master_prepare_set_test_hook(struct work_queue *q, void (*fn)(const char *what, void *arg),
                                  void *arg);

#endif
