/* batch_driver.h: the contract between the generic batch queue (batch_queue.c) and each driver,
 * internal to the batch_drivers component. A driver is one const struct of function pointers;
 * the generic layer owns job records and delivers completions, the driver owns its own state.
 * See doc/batch-driver-interface.md. */
#ifndef HTC_BATCH_DRIVER_H
#define HTC_BATCH_DRIVER_H

#include "batch_queue.h"

#include <stdint.h>
#include <uv.h>

/* One job as the generic layer keeps it. The driver may read everything, writes only result
 * (before batch_job_complete) and driver_data; it never frees it. */
struct batch_job {
	int64_t id;
	struct batch_job_spec spec; /* deep copy, owned by the generic layer */
	int state;                  /* enum batch_job_state; generic layer only */
	struct batch_result result; /* filled by the driver before batch_job_complete() */
	void *driver_data;          /* the driver's per-job record */
	char *error_text;           /* owned copy behind result.error (batch_job_set_error) */
	char *seccomp_text;         /* owned copy behind result.seccomp_denied */
	char *stderr_text;          /* owned copy behind result.stderr_tail */
};

struct batch_driver {
	const char *name;
	unsigned features; /* batch_feature bits */
	/* Required. Sets *state to the driver's private state; 0 or -errno. */
	int (*create)(struct batch_queue *q, void **state);
	/* Required. Kills every job it still holds, without completing them, and frees state.
	 * Handles are closed with close callbacks that free their own memory. */
	void (*destroy)(void *state);
	/* Optional (NULL: the driver has no options). 0, or -EINVAL. */
	int (*set_option)(void *state, const char *key, const char *value);
	/* Optional. Called by batch_queue_start() once the options are set and before any job:
	 * acquires what the driver needs to run anything (the wq driver's master listens here),
	 * so that a setup error is reported before the first job. 0, or a negative error after
	 * the reason was reported with warn(). */
	int (*start)(void *state);
	/* Optional. After start: feature bits the driver adds once it knows what the system
	 * offers (slurm: BATCH_FEATURE_MEASURE where accounting answers). */
	unsigned (*started_features)(void *state);
	/* Required. Takes the job (already validated and copied); must not call the completion
	 * path synchronously in a way that re-enters the user (batch_job_complete() only queues).
	 * Returns 0, or a negative error, in which case the job is dropped and never completed. */
	int (*submit)(void *state, struct batch_job *job);
	/* Optional (NULL: HTC_EUNSUP). Kills a job that has not been completed yet; the driver
	 * must then complete it exactly once (now for a waiting job, on exit for a running one),
	 * with result.removed = 1. 0 or negative error. */
	int (*remove)(void *state, struct batch_job *job);
	/* Optional (NULL: batch_job_started counts). How many of its unfinished jobs have started,
	 * for a driver that learns it as a count rather than job by job (the wq master's running
	 * tasks); used for batch_queue_running / batch_queue_waiting. */
	size_t (*started)(void *state);
};

/* Services the generic layer provides to drivers. */

uv_loop_t *batch_queue_loop(struct batch_queue *q);
/* The driver calls this when the job starts executing (counts move waiting -> running) and sets
 * result.start_us. */
void batch_job_started(struct batch_queue *q, struct batch_job *job);
/* The driver has filled job->result; the generic layer delivers it from the loop on a later
 * turn. After this call the driver must not touch the job again. */
void batch_job_complete(struct batch_queue *q, struct batch_job *job);
/* Sets the job's result.seccomp_denied from NAMES (NULL-terminated; nothing when empty). */
void batch_job_set_seccomp_denied(struct batch_job *job, const char *const *names);
/* Sets result.stderr_tail to the tail (BATCH_TAIL_LINES, BATCH_TAIL_BYTES) of the LEN bytes at
 * TEXT, in a copy the job owns; nothing when TEXT has nothing but newlines. */
void batch_job_set_stderr_tail(struct batch_job *job, const char *text, size_t len);
/* Sets result.error to a formatted message the job owns. */
void batch_job_set_error(struct batch_job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A result with nothing known yet: measured all -1, times 0. */
void batch_result_init(struct batch_result *r);

extern const struct batch_driver batch_driver_local;
extern const struct batch_driver batch_driver_dryrun;
extern const struct batch_driver batch_driver_cgroups;
extern const struct batch_driver batch_driver_wq;
extern const struct batch_driver batch_driver_k8s;
extern const struct batch_driver batch_driver_slurm;
extern const struct batch_driver batch_driver_mesos;

#endif
