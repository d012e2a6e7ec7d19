/* worker_task.h: the task runner of work_queue_worker (doc/work-queue-protocol.md sections 5.2,
 * 5.6, 5.10 and 7.3). A resource ledger says what the worker offers, what running tasks hold and
 * whether a new allocation fits; a task is run as `/bin/sh -c COMMAND` in its sandbox under the
 * resource monitor with its allocation as limits, and its result becomes a `task_done` body.
 * Nothing here touches a socket: the connection code sends what these functions build. */
#ifndef HTC_WORKER_TASK_H
#define HTC_WORKER_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "rmonitor.h"
#include "rmsummary.h"
#include "worker_opts.h"
#include "wq_msg.h"
#include "worker_sandbox.h"

struct worker_ahead;
struct worker_docker;

/* The name, in the sandbox beside work/, of a task's allocation file when the worker may change
 * its allocation while it runs (HTC_ALLOCATION_FILE; doc/elasticity.md, "The adaptive view"). */
#define WORKER_TASK_VIEW_FILE "allocation"
/* The variable that gives the container runner the memory (MB) a task may grow to: its own
 * container gets that limit when nested in the task's cgroup, which the worker grows. */
#define WORKER_TASK_CONTAINER_MAX_ENV "HTC_CONTAINER_MEMORY_MAX"
struct htc_clock;

/* ---- the resource ledger ---------------------------------------------------------------- */

#define WORKER_GPUS_MAX       64  /* GPU indices 0..63 */
#define WORKER_RESERVE_MIN_MB 100 /* the disk reserve is max(100 MB, 1 % of the file system) */

/* Why an allocation does not fit (the `task_refused` codes of section 5.6). */
enum worker_fit {
	WORKER_FIT_OK = 0,
	WORKER_FIT_OVERCOMMIT, /* cores, memory or gpus beyond what is free */
	WORKER_FIT_DISK_FULL,  /* disk beyond disk_free, or disk_full is set */
};

/* One total of the worker: the amount and whether it was declared (--cores...) or measured. */
struct worker_total {
	double total;
	bool declared;
};

/* What a running task holds: its allocation and the GPU indices it was given. */
struct worker_alloc {
	struct wq_resources res;
	int gpu_ids[WORKER_GPUS_MAX]; /* ascending */
	int ngpus;
	bool held;          /* committed and not yet released */
	bool compute_freed; /* cores, memory and gpus given back already (the tree ended) */
};

struct worker_ledger;

/* A ledger with these totals; a negative value is measured (rmonitor_machine_resources on
 * WORKDIR for cores, memory and gpus; disk is the free space of WORKDIR's file system minus the
 * reserve). GPUs beyond WORKER_GPUS_MAX are not offered (a warning says so). The file system
 * figures are read once here (worker_ledger_refresh_disk reads them again). Never NULL. */
struct worker_ledger *worker_ledger_create(double cores, int64_t memory_mb, int64_t disk_mb,
                                           int64_t gpus, const char *workdir);
/* The same with the totals of the command line (--cores, --memory, --disk, --gpus). */
struct worker_ledger *worker_ledger_from_opts(const struct worker_opts *o, const char *workdir);
/* Frees L; NULL is accepted. */
void worker_ledger_delete(struct worker_ledger *l);

/* The size and free space (MB, free to unprivileged users) of the file system of DIR: 0, or
 * -errno. */
int worker_fs_figures(const char *dir, int64_t *size_mb, int64_t *free_mb);
/* The disk reserve for a file system of FS_SIZE_MB: max(100, ceil(1 % of it)). */
int64_t worker_disk_reserve_mb(int64_t fs_size_mb);

/* Reads the size and free space of the workdir's file system again (statvfs), unless they were
 * read less than WORKER_DISK_FRESH_US ago (several calls for each task would otherwise read the
 * same figures). 0 or -errno (the old figures are kept). */
#define WORKER_DISK_FRESH_US 10000
int worker_ledger_refresh_disk(struct worker_ledger *l);
/* The clock that age is measured on (timeutil.h; borrowed, must outlive L; NULL, the default:
 * the monotonic clock); the figures read so far count as read at its present time. */
void worker_ledger_set_clock(struct worker_ledger *l, const struct htc_clock *clock);
/* Sets the file system figures directly (MB; for tests and for callers that statvfs
 * themselves). */
void worker_ledger_set_fs(struct worker_ledger *l, int64_t fs_size_mb, int64_t fs_free_mb);
/* The space held by complete cache objects, in MB (from the cache module). */
void worker_ledger_set_cache(struct worker_ledger *l, int64_t cache_mb);

/* min(fs free - reserve, disk total - cache - disk of running tasks), >= 0. */
int64_t worker_ledger_disk_free(const struct worker_ledger *l);
/* File system free space is below the reserve. */
bool worker_ledger_disk_full(const struct worker_ledger *l);
/* The totals, and what running tasks hold (cores, memory MB, disk MB, gpus). */
void worker_ledger_totals(const struct worker_ledger *l, struct worker_total *cores,
                          struct worker_total *memory, struct worker_total *disk,
                          struct worker_total *gpus);
void worker_ledger_used(const struct worker_ledger *l, struct wq_resources *used);

/* Whether R fits what is free now. On a refusal *TEXT (when TEXT is not NULL; caller frees)
 * says what does not fit, e.g. "needs 4 cores, 1.5 of 2 free". The disk_full flag is checked
 * first, then cores, memory and gpus (overcommit), then disk against disk_free. */
enum worker_fit worker_ledger_check(const struct worker_ledger *l, const struct wq_resources *r,
                                    char **text);
/* Checks R and, when it fits, commits it into A with its GPUs (the lowest free indices).
 * Returns WORKER_FIT_OK, or the refusal with *TEXT as for worker_ledger_check (A untouched). */
enum worker_fit worker_ledger_commit(struct worker_ledger *l, const struct wq_resources *r,
                                     struct worker_alloc *a, char **text);
/* Gives back what A holds (its GPU indices become free). A not held is ignored. */
void worker_ledger_release(struct worker_ledger *l, struct worker_alloc *a);
/* Gives back A's cores, memory and gpus only (the task's process tree has ended); its disk stays
 * held until worker_ledger_release (the sandbox is gone). Once per allocation; A not held is
 * ignored. */
void worker_ledger_release_compute(struct worker_ledger *l, struct worker_alloc *a);
/* Whether R could ever fit: against the totals, not what is free (queued tasks, protocol 5.6).
 * WORKER_FIT_OK or WORKER_FIT_OVERCOMMIT with *TEXT (when TEXT is not NULL; caller frees). */
enum worker_fit worker_ledger_check_total(const struct worker_ledger *l,
                                          const struct wq_resources *r, char **text);
/* Memory (MB) no task holds: total - held, >= 0. */
int64_t worker_ledger_memory_free(const struct worker_ledger *l);
/* Changes the memory A holds to MEMORY_MB (a task grown or shrunk while it runs): 0, or
 * -ENOSPC when a growth does not fit the free memory, -EINVAL when A holds nothing. */
int worker_ledger_resize_memory(struct worker_ledger *l, struct worker_alloc *a, int64_t memory_mb);
/* Whether nothing is held by any task (cores, memory, disk and gpus all zero). */
bool worker_ledger_idle(const struct worker_ledger *l);

/* The `capacity` message (section 5.2), with "m". New reference. */
json_t *worker_ledger_capacity_json(const struct worker_ledger *l);

/* ---- running a task ----------------------------------------------------------------------- */

struct worker_task;

/* Called once from the loop when the task has ended and its result is ready (outputs checked,
 * stdout measured), or when a cancelled task is gone and its sandbox removed. Never called
 * after worker_task_delete, nor from inside worker_task_start. */
typedef void (*worker_task_done_fn)(struct worker_task *t, void *arg);
/* Called once from the loop when the task's process tree is gone, before its outputs are
 * checked (DONE follows later): the cores, memory and gpus it held may go to the next task now.
 * Not called for a task that never started; the task must not be deleted from inside it. */
typedef void (*worker_task_ended_fn)(struct worker_task *t, void *arg);

struct worker_task_params {
	uv_loop_t *loop;
	/* The worker's environment the task gets, NAME=VALUE, NULL-terminated; NULL = environ. */
	const char *const *base_env;
	enum rmonitor_cgroups cgroups; /* default (0) AUTO */
	double interval_s;             /* monitor sampling; <= 0: 1 s */
	/* Worker clock (us since the epoch) of the task's arrival and of its last input; 0 =
	 * now. */
	int64_t t_received, t_inputs_ready;
	/* When SB is NULL: why the sandbox could not be made (-errno), for the text. */
	int sandbox_err;
	worker_task_ended_fn ended; /* NULL: not called; its argument is DONE's */
	/* MB of cache objects linked into the sandbox: they are in the cache's share of the disk
	 * already, so the task's disk limit is its allocation plus this (the measured disk still
	 * counts them, as the task sees them). */
	int64_t linked_mb;
	const struct worker_docker *docker; /* --docker: the runner; NULL: no containers */
	/* The clock the monitor measures the task's wall time on (rmonitor_spec.clock); NULL: the
	 * monotonic clock. */
	const struct htc_clock *clock;
	int seccomp; /* the task's seccomp profile (rmonitor_spec.seccomp_profile); 0 none */
	/* --proc-events: the monitor listens to the kernel's process events even when the task
	 * has a cgroup (rmonitor_spec.no_proc_events is its opposite) */
	bool proc_events;
	/* --pin-cores: the task takes its cores' worth of whole free cpus as its cpuset (when
	 * that many are free and the monitor uses cgroups), given back when its tree ends; NULL:
	 * not pinned. Must outlive the task. */
	struct worker_cpus *cpus;
	/* --memory-grow / --memory-throttle (worker_elastic.h), or NULL. The task grows up to
	 * its message's max_memory, charging the growth to CHARGED (the allocation the caller
	 * holds in the ledger, which must stay valid until the task's tree has ended); RESIZED
	 * (with DONE's argument) is told of every change of its size. REPORT_GROWN: its
	 * `task_done` carries `grown` (the master negotiated `grow`). */
	struct worker_elastic *elastic;
	struct worker_alloc *charged;
	/* The task's own container, made ahead (worker_ahead.h), or NULL: used when its process
	 * still runs. The caller keeps it (and releases it after the start). */
	const struct worker_ahead *ahead;
	void (*resized)(void *arg, int64_t memory_mb);
	bool report_grown;
};

/* The runner argv of MSG's container (worker_docker.h) for the work directory WORK, or NULL
 * when the task runs on the host (no DK, no container named, none of the worker's own). *OWN:
 * the task has a container of its own (not a shared one). str_free_argv frees it. */
char **worker_task_container_argv(const struct worker_docker *dk, const struct wq_task_msg *msg,
                                  const char *work, bool *own);

/* Starts MSG's command in SB (which the task now owns: it is removed by worker_task_delete
 * or by a cancel) with the allocation ALLOC (copied; the caller releases it in its ledger
 * after DONE). The environment is the base one, then CORES MEMORY DISK GPUS OMP_NUM_THREADS
 * CUDA_VISIBLE_DEVICES TMPDIR from the allocation, then MSG's env, whose values win (a NULL
 * value removes the variable). stdout and stderr go to SANDBOX/stdout (outside work/), stdin
 * is /dev/null. Limits given to the monitor: memory and disk (when > 0; disk is measured in the
 * sandbox), cores, and wall_time (when > 0).
 *
 * Never NULL: when SB is NULL or the monitor cannot start, the task ends at once with outcome
 * sandbox_error (DONE is called from the loop). MSG need not outlive the call (the task keeps
 * a reference to its JSON). */
struct worker_task *worker_task_start(const struct worker_task_params *p,
                                      const struct wq_task_msg *msg, struct worker_sandbox *sb,
                                      const struct worker_alloc *alloc, worker_task_done_fn done,
                                      void *arg);

/* Kills the task's whole tree (rmonitor_kill SIGKILL: every process of its cgroup). DONE is
 * then called once the tree is gone and the sandbox removed, with worker_task_cancelled true
 * and no result. On a task that has already ended this does nothing and returns -ESRCH (the
 * caller removes it with worker_task_delete). */
int worker_task_cancel(struct worker_task *t);

/* Forgets T: a running tree is killed (no DONE), the sandbox is removed (off the loop, in the
 * libuv thread pool) unless KEEP_SANDBOX, open output fds are closed, and T is freed once that
 * is finished. NULL is accepted. */
void worker_task_delete(struct worker_task *t, bool keep_sandbox);

int64_t worker_task_id(const struct worker_task *t);
int64_t worker_task_try(const struct worker_task *t);
/* The pid of the task's first process (/bin/sh), or -1 when it did not start. */
pid_t worker_task_pid(const struct worker_task *t);
/* The task was cancelled (worker_task_cancel) before it ended. */
bool worker_task_cancelled(const struct worker_task *t);
/* The task's current measurements while it runs (NULL otherwise). */
const struct rmsummary *worker_task_current(const struct worker_task *t);
/* The sandbox (NULL after a sandbox failure). */
struct worker_sandbox *worker_task_sandbox(const struct worker_task *t);

/* The `task_running` message {m, id, try, at, gpus}. New reference. */
json_t *worker_task_running_json(const struct worker_task *t);

/* ---- the result (valid once DONE was called, for a task that was not cancelled) ------------ */

struct worker_task_output {
	/* WQ_DONE_XFER (a regular file, ready to send), WQ_DONE_DIR (a directory),
	 * WQ_DONE_MISSING or WQ_DONE_SKIPPED. */
	enum wq_done_output_kind kind;
	char
	    *missing; /* MISSING: the text ("does not exist: out.txt", "is a symbolic link: ...") */
	int fd;       /* XFER and DIR: an O_RDONLY fd of it, owned by the task (-1 otherwise) */
};

struct worker_task_result {
	enum wq_outcome outcome; /* exited, signaled, exhausted or sandbox_error */
	int exit_status;         /* exited */
	int signal;              /* signaled; exhausted (the signal used, 9) */
	char **exhausted;        /* exhausted: names of the limits exceeded, NULL-terminated */
	size_t nexhausted;
	char *text; /* sandbox_error */
	bool has_summary;
	struct rmsummary summary;
	struct worker_task_output *outputs; /* one per output of the task, in order */
	size_t noutputs;
	/* Captured stdout+stderr: SIZE bytes were written. The first HEAD bytes and the last TAIL
	 * bytes are to be sent; OMITTED = SIZE - HEAD - TAIL bytes are dropped (TRUNCATED). */
	int64_t stdout_size, stdout_head, stdout_tail, stdout_omitted;
	bool stdout_truncated;
	int64_t t_received, t_inputs_ready, t_started, t_ended; /* us since the epoch; 0 unknown */
	bool disk_full; /* the file system was below the reserve when the task ended */
	json_t
	    *container; /* what the container runner recorded (WORKER_CONTAINER_RECORD), or NULL */
	json_t *grown;  /* its memory changes (worker_elastic_task_json), or NULL */
};

/* The result of T; NULL before DONE or for a cancelled task. */
const struct worker_task_result *worker_task_result(const struct worker_task *t);

/* Absolute path of the capture file (SANDBOX/stdout), or NULL without a sandbox. */
const char *worker_task_stdout_path(const struct worker_task *t);
/* Reads the bytes to send back (head, then tail) into a new buffer (*BUF, caller frees; at most
 * stdout_max bytes) of *LEN bytes. A blocking read: for small captures and tests; a sender
 * streams the two ranges from worker_task_stdout_path instead. 0 or -errno. */
int worker_task_stdout_read(const struct worker_task *t, char **buf, size_t *len);

/* The `task_done` message of T (section 5.6), with "m". OUTPUT_XFERS[i] is the transfer (or
 * directory transfer) id the sender used for output i when the result lists it as XFER or
 * DIR: an id <= 0 (or OUTPUT_XFERS NULL) means it could not be sent, and it is reported
 * missing ("could not be sent: NAME"). STDOUT_XFER is the id of the stdout transfer, 0 when
 * none was sent. New reference; NULL before DONE or for a cancelled task. */
json_t *worker_task_done_json(const struct worker_task *t, const int64_t *output_xfers,
                              int64_t stdout_xfer);

/* The complete environment of a task, as worker_task_start builds it (exposed for tests):
 * BASE (NULL = environ), the allocation's variables, then ENV (values win; a NULL value
 * removes). TMPDIR is omitted when NULL. Caller frees each string and the array. */
char **worker_task_env(const char *const *base, const struct worker_alloc *alloc,
                       const char *tmpdir, const struct wq_env_var *env, size_t nenv);
void worker_task_env_free(char **env);

#endif
