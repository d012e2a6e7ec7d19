/* batch_local_sched.h: the admission and scheduling core shared by the drivers that run jobs on
 * this machine ("local" and "cgroups"). It keeps the waiting and running lists, admits jobs
 * against cores, memory, disk, gpus and max-jobs with a bounded backfill window, enforces wall
 * time with a timer, and builds each job's argv and environment; a driver supplies only how a
 * job is started and killed (struct lsched_ops). Internal to the batch_drivers component. */
#ifndef HTC_BATCH_LOCAL_SCHED_H
#define HTC_BATCH_LOCAL_SCHED_H

#include "batch_driver.h"

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct lsched;
struct stderr_tap;

/* One job as the scheduler keeps it. A driver that needs more per-job fields embeds this as the
 * FIRST member of its own struct and passes that struct's size to lsched_init(); the scheduler
 * allocates (zeroed) and frees records of that size. */
struct lsched_job {
	struct batch_job *job; /* NULL once completed or abandoned */
	struct lsched *s;
	int64_t cores, memory, disk, gpus; /* what admission charged for it */
	int cores_declared;                /* the job asked for a number of cores */
	int running;
	int timed_out; /* killed by the wall-time timer */
	int removed;   /* killed by batch_queue_remove() */
	int has_timer;
	int open_handles; /* freed when the last handle is closed */
	uv_timer_t timer;
	uint64_t gpu_ids;       /* bit i: gpu i is this job's (up to 64 gpus) */
	struct stderr_tap *tap; /* its stderr, until it ends (lsched_stderr_pipe) */
	struct lsched_job *prev, *next;
};

/* How a driver starts and kills jobs. ARG is the one given to lsched_init(). */
struct lsched_ops {
	/* Starts J (result.start_us is already set). Returns 0 once the job runs; it must then
	 * end with lsched_job_ended(). Returns a negative error after setting the job's error
	 * text (batch_job_set_error) when it could not start; the scheduler completes it. */
	int (*start)(void *arg, struct lsched_job *j);
	/* Kills every process of the running job J with SIGKILL; the driver notices the end as
	 * for any other exit. */
	void (*kill)(void *arg, struct lsched_job *j);
	/* The queue is being destroyed: kill J now and leave no process, zombie or cgroup of it
	 * behind; J is never completed. Frees nothing the scheduler owns. */
	void (*abandon)(void *arg, struct lsched_job *j);
};

struct lsched {
	struct batch_queue *q;
	uv_loop_t *loop;
	const char *name; /* driver name, for logs */
	const struct lsched_ops *ops;
	void *arg;
	size_t job_size;
	int64_t max_jobs; /* <= 0: same as cores */
	int64_t cores, memory, disk, gpus;
	int64_t used_cores, used_memory, used_disk, used_gpus;
	uint64_t used_gpu_ids;
	int64_t n_running;
	int seccomp;        /* option seccomp: enum rmon_seccomp_profile, 0 (off) by default */
	int no_stderr_tail; /* option stderr-tail=no: jobs inherit stderr, nothing is kept */
	struct lsched_job *waiting; /* utlist DL, submission order */
	struct lsched_job *running; /* utlist DL */
};

/* Initialises S with the machine's resources (online cores, MemTotal, free disk of the cwd, no
 * gpus). JOB_SIZE >= sizeof(struct lsched_job). */
void lsched_init(struct lsched *s, struct batch_queue *q, const char *name,
                 const struct lsched_ops *ops, void *arg, size_t job_size);
/* The options every local-execution driver takes: max-jobs, cores, memory, disk, gpus,
 * seccomp (a profile name of doc/seccomp.md), stderr-tail (yes, the default, or no).
 * 0, -EINVAL for a bad value, -ENOENT for a key that is not one of these. */
int lsched_set_option(struct lsched *s, const char *key, const char *value);
/* Admits (HTC_ELIMIT if it can never fit) and queues JOB, then starts what fits. */
int lsched_submit(struct lsched *s, struct batch_job *job);
/* Completes a waiting job at once, or kills a running one (it completes on exit). */
int lsched_remove(struct lsched *s, struct batch_job *job);
/* Starts, in submission order, every job of the scan window that fits what is free. */
void lsched_schedule(struct lsched *s);
/* The running job J has ended with EXIT_STATUS, or TERM_SIGNAL when nonzero. Fills the rest
 * of the result (times, wall time if the driver left it unknown, removed, wall-time
 * exhaustion), releases its resources and completes it. J is freed: do not touch it after.
 * The caller calls lsched_schedule() afterwards (once for several ends). */
void lsched_job_ended(struct lsched_job *j, int64_t exit_status, int term_signal);
/* Changes what admission charges the running job J for memory by DELTA MB. */
void lsched_charge_memory(struct lsched *s, struct lsched_job *j, int64_t delta);
/* The fd the driver gives the job J as its stderr: the write end of a pipe whose bytes go on to
 * this process's stderr and whose last lines become result.stderr_tail if J fails (the driver
 * closes it once J is spawned); or -1 (inherit stderr) with option stderr-tail=no or when no
 * pipe can be made. */
int lsched_stderr_pipe(struct lsched_job *j);
/* Abandons every running job (ops->abandon) and drops waiting ones; completes nothing. S itself
 * is the caller's to free. */
void lsched_destroy(struct lsched *s);

/* The job's program as plain words when its command has no shell syntax and the program is
 * found in PATH (exec it directly, as make does), else NULL: run /bin/sh -c COMMAND. Free with
 * shell_words_free(). */
char **lsched_command_words(const struct batch_job *job);
/* The job's complete environment: the inherited one, the allocation (CORES, MEMORY, DISK, GPUS,
 * CUDA_VISIBLE_DEVICES for what J declared; OMP_NUM_THREADS and friends = cores unless the
 * job's env sets them) and the job's env entries. Caller frees with lsched_env_free(). */
char **lsched_job_env(const struct lsched_job *j);
void lsched_env_free(char **env);

/* MemAvailable (or MemTotal when FIELD is "MemTotal") of /proc/meminfo in MB; 0 if unknown. */
int64_t lsched_meminfo_mb(const char *field);

#endif
