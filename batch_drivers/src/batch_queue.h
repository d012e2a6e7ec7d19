/* batch_queue.h: the one interface through which the workflow engine runs jobs on any execution
 * system ("local", "dryrun", ...). A queue is bound to a libuv loop; submission returns at once
 * and each job's completion is delivered later, from the loop, through one callback. The
 * contract is written out in doc/batch-driver-interface.md. */
#ifndef HTC_BATCH_QUEUE_H
#define HTC_BATCH_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "htc_error.h"

/* The file the dryrun driver writes its script to unless option script=FILE says otherwise. */
#define BATCH_DRYRUN_SCRIPT "makeflow.dryrun.sh"

struct batch_queue; /* opaque */

/* A file a job reads or writes. remote_name is the name the job sees; NULL means the same as
 * local_name. A different remote_name needs BATCH_FEATURE_REMOTE_RENAME. */
struct batch_file {
	const char *local_name;
	const char *remote_name;
};

/* Declared (or measured) resources; -1 means unset (or unknown). */
struct batch_resources {
	int64_t cores;
	int64_t memory_mb;
	int64_t disk_mb;
	int64_t gpus;
	int64_t wall_time_s;
};

/* What to run. Everything is copied by batch_queue_submit(); the caller keeps ownership. */
/* A max_resources field with no bound of its own (grown as far as the machine or worker
 * allows). */
#define BATCH_RESOURCES_UNBOUNDED INT64_MAX

struct batch_job_spec {
	const char *command; /* run by /bin/sh -c; required */
	const struct batch_file *inputs;
	size_t n_inputs;
	const struct batch_file *outputs;
	size_t n_outputs;
	const char *const *env; /* NULL-terminated "NAME=value" list added to the job's
	                           environment; may be NULL */
	struct batch_resources resources;
	const char *category;      /* may be NULL */
	const char *batch_options; /* driver-specific per-job text; may be NULL */
	const char *tag;           /* free text for logs and scripts; may be NULL */
	/* The most the job may grow to while it runs (cgroups driver, memory-grow): a field
	 * unset (-1), zero or not above the allocation in resources allows no raise. A
	 * zero-initialised spec allows none. BATCH_RESOURCES_UNBOUNDED: as far as the machine
	 * or worker allows (the category has no ceiling of its own; the value was not declared). */
	struct batch_resources max_resources;
	/* The job's container, for a driver with BATCH_FEATURE_CONTAINERS (the others get the
	 * command already wrapped): an image the engine has, or a docker save archive (a local
	 * file, sent as a cached input), and whether it runs in the worker's one container of
	 * the image. Both NULL: no container. */
	const char *container_image;
	const char *container_archive;
	int container_shared;
	/* For a driver with BATCH_FEATURE_CATEGORY_SIZING: 1 hands the sizing of the job's
	 * category to the driver, in warm-up mode (doc/allocation.md, "Warm-up"). resources then
	 * holds only what the job declared itself (-1 elsewhere); the driver chooses the rest
	 * when it dispatches the job, from the category's measurements at that moment, with
	 * max_resources as the ceiling (BATCH_RESOURCES_UNBOUNDED: a whole worker), holds the
	 * category's other jobs while its first one is measured, and runs a try that exhausts a
	 * chosen allocation again at the ceiling itself. result.allocated says what the last try
	 * got. 0: the resources are the job's allocation. */
	int driver_sizes;
};

/* Which limit a job exceeded (bits of batch_result.exhausted). */
enum batch_exhausted {
	BATCH_EXHAUSTED_CORES = 1 << 0,
	BATCH_EXHAUSTED_MEMORY = 1 << 1,
	BATCH_EXHAUSTED_DISK = 1 << 2,
	BATCH_EXHAUSTED_GPUS = 1 << 3,
	BATCH_EXHAUSTED_WALL_TIME = 1 << 4,
};

/* How a job ended. Valid only during the completion callback (copy what you keep). */
struct batch_result {
	int exited_normally; /* like WIFEXITED */
	int exit_code;       /* like WEXITSTATUS, when exited_normally */
	int signal;          /* terminating signal, or 0 */
	int exhausted;       /* nonzero (batch_exhausted bits): killed for exceeding its
	                        allocation, which is not an ordinary failure */
	int removed;         /* 1 if it ended because of batch_queue_remove*() */
	int64_t submit_us;   /* wall-clock microseconds since the epoch; */
	int64_t start_us;    /* start_us is 0 if the job never started */
	int64_t end_us;
	struct batch_resources measured; /* -1 where unknown */
	const char *error; /* driver-level failure text (e.g. spawn failed), or NULL */
	int limit_raises;  /* times the driver raised the job's memory limit while it ran */
	/* When the driver changed the job's memory limit while it ran (growth, shrink): the
	 * time-average of the memory it held, MB, so that its allocated memory-time is this times
	 * its wall time; 0 otherwise. */
	double memory_held_mb;
	/* Likewise when the driver lent the job cores beyond its allocation while it ran: the
	 * time-average of its CPU quota, cores; 0 otherwise. */
	double cores_held;
	double cpu_time_s; /* CPU time of the job's processes, s, where measured; else -1 */
	/* The calls the job's seccomp profile refused (option seccomp, doc/seccomp.md), joined
	 * with ", ", or NULL when none was. */
	const char *seccomp_denied;
	/* For a job that did not succeed, the last lines it wrote to stderr (local and cgroups),
	 * or of its output where the batch system keeps stdout and stderr together (wq, k8s,
	 * slurm); NULL when it wrote nothing or the driver cannot capture it. At most
	 * BATCH_TAIL_LINES lines and BATCH_TAIL_BYTES bytes. */
	const char *stderr_tail;
	/* For a job the driver sized (spec.driver_sizes): what its last try was given (-1 where
	 * unknown), whether that was the category's computed allocation (1) rather than the
	 * ceiling (0: the measuring try, or a try at the ceiling), and how many tries the driver
	 * stopped for exceeding a chosen allocation and ran again at the ceiling. */
	struct batch_resources allocated;
	double allocated_cores; /* the cores of allocated as given (a part of a core), or -1 */
	int allocation_computed;
	int driver_retries;
};

#define BATCH_TAIL_LINES 20
#define BATCH_TAIL_BYTES 4096

typedef void (*batch_complete_fn)(struct batch_queue *q, int64_t job_id,
                                  const struct batch_result *r, void *arg);

/* What a driver can do (batch_queue_features()). */
enum batch_feature {
	BATCH_FEATURE_REMOTE_RENAME = 1 << 0,    /* remote_name may differ from local_name */
	BATCH_FEATURE_ABSOLUTE_PATHS = 1 << 1,   /* file names may be absolute paths */
	BATCH_FEATURE_VIRTUAL_OUTPUTS = 1 << 2,  /* outputs are not created (dryrun) */
	BATCH_FEATURE_LOCAL_EXECUTION = 1 << 3,  /* jobs run on this host in the cwd */
	BATCH_FEATURE_WALL_TIME = 1 << 4,        /* enforces resources.wall_time_s */
	BATCH_FEATURE_ADMISSION = 1 << 5,        /* never overcommits declared resources;
	                                            rejects jobs that can never fit */
	BATCH_FEATURE_REMOVE = 1 << 6,           /* batch_queue_remove() is supported */
	BATCH_FEATURE_MEMORY_LIMIT = 1 << 7,     /* resources.memory_mb is enforced (kill +
	                                            BATCH_EXHAUSTED_MEMORY), max_resources
	                                            lets it grow */
	BATCH_FEATURE_MEASURE = 1 << 8,          /* result.measured has cores and memory */
	BATCH_FEATURE_RUN_LABEL = 1 << 9,        /* jobs carry the run id (HTC_RUN_ID) as a name
	                                            or label; option stop-run=ID stops every job
	                                            of run ID (a run that died) */
	BATCH_FEATURE_CONTAINERS = 1 << 10,      /* runs the spec's container itself */
	BATCH_FEATURE_CATEGORY_SIZING = 1 << 11, /* sizes a category's jobs at dispatch
	                                            (spec.driver_sizes) */
};

/* Space-separated names of the compiled-in drivers, e.g. "local dryrun" (static string). */
const char *batch_queue_types(void);

/* Checks that TYPE names a compiled-in driver. Returns 0, or HTC_EUNSUP for a batch system the
 * Makeflow tradition names that this build does not have ("batch system condor is not
 * available in this build (yet); available: ..."), or -EINVAL for a name nobody knows
 * ("unknown batch system 'x'; available: ..."), with that sentence in MSG (LEN bytes). */
int batch_queue_type_check(const char *type, char *msg, size_t len);

/* Creates a queue of the given type on LOOP; CB is called once per submitted job, from the loop,
 * never from inside another batch_queue_* call. Returns NULL with errno set (EINVAL for an
 * unknown type). Caller deletes with batch_queue_delete(). */
struct batch_queue *batch_queue_create(uv_loop_t *loop, const char *type, batch_complete_fn cb,
                                       void *arg);

/* Sets a driver option (see doc/batch-driver-interface.md for each driver's keys). Returns 0,
 * -EINVAL for an unknown key or a bad value, -EBUSY once a job has been submitted. */
int batch_queue_set_option(struct batch_queue *q, const char *key, const char *value);

/* Starts the driver once its options are set: whatever it needs before the first job (the wq
 * driver's master binds its port, writes its port file, loads its password) is acquired now,
 * and an error is returned (its reason already reported with warn()) instead of failing every
 * job later. Optional: a queue that is not started starts at its first submission. Returns 0
 * or a negative error; -EBUSY once a job has been submitted. */
int batch_queue_start(struct batch_queue *q);

/* The batch_feature bits of the queue's driver; after batch_queue_start, also those it added
 * then (a Slurm cluster with accounting measures). */
unsigned batch_queue_features(struct batch_queue *q);
/* The driver's name, e.g. "local" (static string). */
const char *batch_queue_type(struct batch_queue *q);

/* Submits a job; SPEC is copied and the call returns at once. Returns the job id (> 0), or a
 * negative error: -EINVAL (bad spec), HTC_EUNSUP (needs a feature the driver lacks),
 * HTC_ELIMIT (can never fit this queue's resources), or another -errno from the driver. No
 * callback fires for a rejected job. */
int64_t batch_queue_submit(struct batch_queue *q, const struct batch_job_spec *spec);

/* Kills a waiting or running job. Returns 0, after which its callback still fires exactly once
 * (removed = 1, normally with signal set); -ENOENT if the id is unknown or the job has already
 * finished (its callback reports how it really ended); HTC_EUNSUP if the driver cannot. */
int batch_queue_remove(struct batch_queue *q, int64_t job_id);
/* batch_queue_remove() on every unfinished job; returns how many were removed, or HTC_EUNSUP. */
int batch_queue_remove_all(struct batch_queue *q);
/* batch_queue_remove() on every job not yet started (the running ones go on); returns how many
 * were removed, or HTC_EUNSUP. */
int batch_queue_remove_waiting(struct batch_queue *q);

/* Jobs started (or finished) whose callback has not yet been called. */
size_t batch_queue_running(struct batch_queue *q);
/* Jobs accepted but not yet started. */
size_t batch_queue_waiting(struct batch_queue *q);

/* Kills every unfinished job (no callbacks fire for them) and frees the queue; NULL is ok. May be
 * called from the completion callback. libuv handles are closed asynchronously: run the loop
 * (e.g. uv_run(loop, UV_RUN_NOWAIT)) before uv_loop_close(). */
void batch_queue_delete(struct batch_queue *q);

#endif
