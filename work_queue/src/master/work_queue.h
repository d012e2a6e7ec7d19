/* work_queue.h: the public API of the Work Queue master library: tasks (a command, its files,
 * resources and limits, and after it ran its results) and, as the library grows, the queue
 * that sends them to workers. doc/work-queue-api.md is the reference; the protocol is in
 * doc/work-queue-protocol.md. */
#ifndef HTC_WORK_QUEUE_H
#define HTC_WORK_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "htc_error.h"
#include "rmsummary.h"

/* Flags of a task's file (bits; combine with |). */
enum work_queue_file_flags {
	WORK_QUEUE_NOCACHE = 0,      /* per-task: sent for this task only */
	WORK_QUEUE_CACHE = 1,        /* input kept in the worker's cache and reused */
	WORK_QUEUE_WATCH = 2,        /* output streamed back while the task runs */
	WORK_QUEUE_SUCCESS_ONLY = 4, /* output returned only if the command exited 0 */
	WORK_QUEUE_FAILURE_ONLY = 8, /* output returned only if it did not */
};

/* Direction of a file or directory of a task. */
enum work_queue_file_type {
	WORK_QUEUE_INPUT = 0,
	WORK_QUEUE_OUTPUT = 1,
};

/* What a file of a task is made from. */
enum work_queue_file_kind {
	WORK_QUEUE_FILE_LOCAL = 0, /* a file on the master's side */
	WORK_QUEUE_FILE_DIRECTORY, /* a directory on the master's side */
	WORK_QUEUE_FILE_BUFFER,    /* bytes given by the application (inputs only) */
	WORK_QUEUE_FILE_URL,       /* fetched by the worker (inputs only) */
};

/* How a task ended (doc/work-queue-api.md section 2.3). */
enum work_queue_result {
	WORK_QUEUE_RESULT_UNKNOWN = -1, /* not finished */
	WORK_QUEUE_RESULT_SUCCESS = 0,  /* ran; see return_status */
	WORK_QUEUE_RESULT_INPUT_MISSING,
	WORK_QUEUE_RESULT_OUTPUT_MISSING,
	WORK_QUEUE_RESULT_STDOUT_MISSING,
	WORK_QUEUE_RESULT_SIGNAL,
	WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION,
	WORK_QUEUE_RESULT_TASK_TIMEOUT,
	WORK_QUEUE_RESULT_MAX_RETRIES,
	WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME,
	WORK_QUEUE_RESULT_DISK_ALLOC_FULL,
	WORK_QUEUE_RESULT_INVALID_TASK,
	WORK_QUEUE_RESULT_SANDBOX_ERROR,
	WORK_QUEUE_RESULT_CANCELLED,
};

/* One file or directory of a task, in the order given. Read-only for the application. */
struct work_queue_file {
	enum work_queue_file_type type;
	enum work_queue_file_kind kind;
	char *source;  /* local path or URL; NULL for a buffer */
	char *remote;  /* name in the task's sandbox */
	void *data;    /* a buffer's bytes (owned), else NULL */
	size_t length; /* a buffer's length */
	int flags;     /* enum work_queue_file_flags */
	int recursive; /* directories: with their contents (always, for inputs) */
	struct work_queue_file *next;
};

/* A task. The application writes it only through the functions below and reads the result
 * fields after work_queue_wait returns it. Strings are owned by the task. */
struct work_queue_task {
	/* What to run. */
	char *command_line;
	char *tag;
	char *category;
	double priority;
	int max_retries; /* 0 = the library's default (no retry of the task's own failures) */
	double running_time_max;         /* seconds per try, 0 = none */
	double end_time;                 /* seconds since the epoch, 0 = none */
	struct work_queue_file *inputs;  /* in order of specification */
	struct work_queue_file *outputs; /* in order of specification */
	char **env_names;                /* environment: names and values (value NULL = unset) */
	char **env_values;
	int env_count;
	char **features; /* required worker labels */
	int feature_count;
	struct rmsummary *resources_requested; /* cores, memory, disk, gpus; -1 = unspecified */
	char *container_image;                 /* the container's image (an engine name), or NULL */
	char *container_archive; /* the remote name of the image archive input, or NULL */
	int container_mode;      /* enum work_queue_container_mode */
	/* MB the task may be grown to on a worker that grows tasks (work_queue_worker
	 * --memory-grow); -1 (the default): its category's ceiling when the master chose its
	 * memory, no growth when the task declared its memory. */
	int64_t memory_max;

	/* Results (valid once the task is returned). */
	int taskid; /* set by work_queue_submit */
	enum work_queue_result result;
	int return_status;
	char *output; /* captured stdout and stderr, NUL-terminated, or NULL */
	char *host;   /* worker address:port */
	char *hostname;
	char *worker_id;
	int try_count;
	int exhausted_attempts;
	int fast_aborts;
	struct rmsummary *resources_allocated;
	struct rmsummary *resources_measured;
	/* A task that named a container (work_queue_task_specify_container): what its last try's
	 * container cost in seconds, as the worker measured it; -1 where not done in that try. */
	double container_load_time;   /* loading the image archive into the engine */
	double container_create_time; /* creating its own container, or starting the shared one */
	double container_run_time;    /* from the start of its container (or exec) to its end */
	double container_delete_time; /* deleting its own container */
	/* Its last try's memory growth on the worker (doc/elasticity.md): the largest limit it
	 * had in MB (-1: never grown) and the number of growth steps. */
	int64_t memory_grown;
	int memory_grow_steps;
	/* The time-average of the memory (MB) its last try held on a worker that grew or shrank
	 * it while it ran (its allocated memory-time over its run time); -1: never changed. */
	double memory_held_avg;
	/* The largest CPU quota (cores) a worker lent its last try beyond its allocation
	 * (work_queue_worker --cpu-grow on; doc/elasticity.md); -1: never lent. */
	double cores_grown;
	/* The time-average of the CPU quota (cores) its last try held on a worker that lent it
	 * cores (its allocated core-time over its run time); -1: never lent. */
	double cores_held_avg;
	/* 1 when its last try ran at its category's computed allocation (the master chose its
	 * memory from the category's measurements), 0 when at a declared value, the ceiling or a
	 * whole worker (doc/allocation.md). */
	int allocation_computed;
	/* Instants in microseconds since the epoch (0 = did not happen). */
	int64_t time_when_submitted;
	int64_t time_when_commit_start;
	int64_t time_when_commit_end;
	int64_t time_when_retrieval;
	int64_t time_when_done;
	/* Microseconds the command ran: the last try, and all tries. */
	int64_t time_workers_execute_last;
	int64_t time_workers_execute_all;
	int64_t bytes_sent;
	int64_t bytes_received;

	/* Internal: the text behind work_queue_task_last_error. */
	char last_error[256];
	/* Internal: the index of the file names given so far (master/task_names.h). */
	struct task_names *file_names;
};

/* A new task running COMMAND (with /bin/sh -c in its sandbox); COMMAND may be NULL and set
 * later. Never NULL (allocation failure is fatal, as everywhere in this project). */
struct work_queue_task *work_queue_task_create(const char *command);
/* Frees T and everything it owns. NULL is ok. */
void work_queue_task_delete(struct work_queue_task *t);
/* A deep copy of what T asks for (command, files, resources, limits...), without results or
 * an id, ready to be submitted. */
struct work_queue_task *work_queue_task_clone(const struct work_queue_task *t);

/* The setters return 0, or a negative error and leave T unchanged:
 * -EINVAL for a NULL or empty argument or flags that contradict each other (WATCH,
 * SUCCESS_ONLY or FAILURE_ONLY on an input; SUCCESS_ONLY with FAILURE_ONLY; CACHE on an
 * output); HTC_EPARSE for a remote name that breaks the protocol's name rules
 * (doc/work-queue-protocol.md section 6, including a name given twice in one direction or a
 * name inside another, as "a" and "a/b"); HTC_ETOOBIG past a protocol limit (command length,
 * 1,000 inputs or outputs, 256 environment variables...); HTC_ERANGE for a value out of range.
 * work_queue_task_last_error(T) says why. */
int work_queue_task_specify_command(struct work_queue_task *t, const char *command);
int work_queue_task_specify_input_file(struct work_queue_task *t, const char *local,
                                       const char *remote, int flags);
int work_queue_task_specify_output_file(struct work_queue_task *t, const char *local,
                                        const char *remote, int flags);
int work_queue_task_specify_directory(struct work_queue_task *t, const char *local,
                                      const char *remote, enum work_queue_file_type type, int flags,
                                      int recursive);
int work_queue_task_specify_buffer(struct work_queue_task *t, const void *data, size_t length,
                                   const char *remote, int flags);
int work_queue_task_specify_url(struct work_queue_task *t, const char *url, const char *remote,
                                int flags);
int work_queue_task_specify_cores(struct work_queue_task *t, double cores);
int work_queue_task_specify_memory(struct work_queue_task *t, int64_t mb);
/* The memory (MB) the task may be grown to while it runs (struct work_queue_task's
 * memory_max); -EINVAL below -1. */
int work_queue_task_specify_memory_max(struct work_queue_task *t, int64_t mb);
int work_queue_task_specify_disk(struct work_queue_task *t, int64_t mb);
int work_queue_task_specify_gpus(struct work_queue_task *t, int64_t gpus);
/* Copies the cores, memory, disk and gpus of R that are set (>= 0). */
int work_queue_task_specify_resources(struct work_queue_task *t, const struct rmsummary *r);
int work_queue_task_specify_category(struct work_queue_task *t, const char *category);
int work_queue_task_specify_tag(struct work_queue_task *t, const char *tag);
int work_queue_task_specify_priority(struct work_queue_task *t, double priority);
int work_queue_task_specify_max_retries(struct work_queue_task *t, int retries);
int work_queue_task_specify_running_time_max(struct work_queue_task *t, double seconds);
/* Set before work_queue_submit: a task still waiting at EPOCH_SECONDS ends with TASK_TIMEOUT. */
int work_queue_task_specify_end_time(struct work_queue_task *t, double epoch_seconds);
/* VALUE NULL: the variable is unset in the task's environment. Setting a name again replaces
 * its value. */
int work_queue_task_specify_environment_variable(struct work_queue_task *t, const char *name,
                                                 const char *value);
int work_queue_task_specify_feature(struct work_queue_task *t, const char *name);

/* Containers named by the task (doc/work-queue-docker.md). The task runs only on workers that
 * run containers (work_queue_worker --containers, --docker or --docker-preserve); it requires the
 * feature WORK_QUEUE_CONTAINERS_FEATURE, which such workers have. */
enum work_queue_container_mode {
	WORK_QUEUE_CONTAINER_TASK = 0, /* a container of its own, deleted when it ends */
	WORK_QUEUE_CONTAINER_SHARED,   /* the worker's one container of the image (an exec) */
};
#define WORK_QUEUE_CONTAINERS_FEATURE "@containers"
/* IMAGE is an image the workers' engine already has ("busybox:1.36"). */
int work_queue_task_specify_container(struct work_queue_task *t, const char *image, int mode);
/* ARCHIVE is a local `docker save` archive: a cached input (sent once per worker, loaded into
 * its engine once), named REMOTE in the sandbox (NULL: "htc-image-" and its base name). */
int work_queue_task_specify_container_archive(struct work_queue_task *t, const char *archive,
                                              const char *remote, int mode);

/* The text of the last error a setter returned for T ("" if none). Owned by T. */
const char *work_queue_task_last_error(const struct work_queue_task *t);

/* Removes from directory DIR the partial outputs (.NAME.wq-HOST-PID-START-XFER.tmp) that a
 * master of this host left when it was killed during a transfer, and only those whose master is
 * gone (doc/work-queue-protocol.md 5.4). A master does it itself in the directories of the
 * outputs of the tasks submitted to it; this is for a cleaning tool (makeflow -c). Returns how
 * many were removed, or a negative errno when DIR cannot be read. */
int work_queue_clean_partials(const char *dir);

/* Static name of a result ("SUCCESS", "INPUT_MISSING", ...); "UNKNOWN" for other values. */
const char *work_queue_result_str(int result);

/* ---- The queue (doc/work-queue-api.md section 2.1) ------------------------------------- */

struct work_queue;

/* work_queue_wait's timeout meaning "until a task is done or the queue is empty". */
#define WORK_QUEUE_WAITFORTASK (-1)
/* work_queue_create's port meaning "WORK_QUEUE_PORT from the environment, or 9123". */
#define WORK_QUEUE_DEFAULT_PORT (-1)

/* How a worker is chosen among those that fit (doc/work-queue-api.md 2.1). */
enum work_queue_schedule {
	WORK_QUEUE_SCHEDULE_FCFS = 0, /* first fit */
	WORK_QUEUE_SCHEDULE_FILES,    /* most cached input bytes (the default) */
	WORK_QUEUE_SCHEDULE_TIME,     /* fastest history */
	WORK_QUEUE_SCHEDULE_WORST,    /* worst fit */
	WORK_QUEUE_SCHEDULE_RAND,     /* random */
};

/* Everything that is fixed when the queue is created. */
struct work_queue_opts {
	int port;                  /* 0 = any free port; WORK_QUEUE_DEFAULT_PORT */
	const char *port_file;     /* written with the port once listening (-Z), or NULL */
	const char *interface;     /* address to bind, NULL = all */
	const char *project;       /* advertised to the catalog, or NULL */
	const char *catalog_hosts; /* NULL = CATALOG_HOST or localhost:9097 */
	const char *password_file; /* NULL = no authentication */
	const char *ssl_cert;      /* with ssl_key: TLS; NULL = plain */
	const char *ssl_key;
	const char *ssl_client_ca; /* require worker certificates from this CA, or NULL */
	const char *txlog;         /* transactions log path, or NULL */
	void *loop;                /* a uv_loop_t * to run on, or NULL for the library's own */
};

/* Fills O with the defaults (port WORK_QUEUE_DEFAULT_PORT, everything else NULL). */
void work_queue_opts_init(struct work_queue_opts *o);

/* A queue listening as O says. SIGPIPE is set to SIG_IGN if it has its default action (a lost
 * worker must not kill the application). NULL with errno set on failure (EADDRINUSE, EACCES, ENOENT
 * for a missing password or certificate file, EINVAL for an unusable one); the reason is
 * logged with warn(). */
struct work_queue *work_queue_create_opts(const struct work_queue_opts *o);
/* work_queue_create_opts with only the port set. */
struct work_queue *work_queue_create(int port);
/* Dismisses (or shuts down) every worker, waits at most 5 s for their byes, frees the queue
 * and every task still inside it. NULL is accepted. */
void work_queue_delete(struct work_queue *q);
/* The port listened on. */
int work_queue_port(const struct work_queue *q);

/* Queues T (the queue owns it until returned). Returns the task id (>= 1), or a negative
 * error with the reason logged: -EINVAL (no command), -ENOENT (a local input is missing),
 * HTC_ETOOBIG (a command over 131071 bytes, or a task message over the protocol's limit),
 * HTC_ECYCLE (a link cycle in an input directory). */
int work_queue_submit(struct work_queue *q, struct work_queue_task *t);
/* Runs the queue until a task is done (returned; the caller owns it again) or TIMEOUT seconds
 * pass (NULL). 0 does not block; WORK_QUEUE_WAITFORTASK waits until a task is done and returns
 * NULL at once when the queue is empty. On the application's own loop (work_queue_opts.loop),
 * TIMEOUT 0 only collects what is finished and never runs the loop, so it may be called from the
 * application's loop callbacks; a TIMEOUT other than 0 runs the loop and must not be used from
 * inside it. */
struct work_queue_task *work_queue_wait(struct work_queue *q, double timeout);
/* work_queue_wait for the tasks whose tag is TAG only (TAG NULL: any task). */
struct work_queue_task *work_queue_wait_for_tag(struct work_queue *q, const char *tag,
                                                double timeout);
/* True when no task is waiting, running, or done and not yet returned. */
int work_queue_empty(struct work_queue *q);
/* How many more tasks the queue would like now (0: enough are waiting). */
int work_queue_hungry(struct work_queue *q);
/* Takes task ID back (cancelling it on its worker first); NULL if unknown. */
struct work_queue_task *work_queue_cancel_by_taskid(struct work_queue *q, int id);
/* The same for one task whose tag is TAG (the lowest id is not guaranteed); NULL if none. */
struct work_queue_task *work_queue_cancel_by_tasktag(struct work_queue *q, const char *tag);

/* Tuning; each returns 0 or -EINVAL for a value out of range. */
int work_queue_specify_keepalive_interval(struct work_queue *q, int seconds);
int work_queue_specify_keepalive_timeout(struct work_queue *q, int seconds);
int work_queue_specify_algorithm(struct work_queue *q, enum work_queue_schedule alg);
/* The project name advertised to the catalog (every 60 s, and at once), and the catalog servers
 * ("host:port,..."; default CATALOG_HOST or localhost:9097). 0 or a negative error. */
int work_queue_specify_name(struct work_queue *q, const char *name);
int work_queue_specify_catalog_servers(struct work_queue *q, const char *hosts);
/* The priority in the catalog record (default 0): a worker given several masters of its
 * project (-M) tries those of higher priority first. 0 or -EINVAL. */
int work_queue_specify_priority(struct work_queue *q, int priority);
/* No task is dispatched until N workers have connected at once (then dispatching goes on
 * whatever their number); 0 (the default) dispatches at once. 0 or -EINVAL. */
int work_queue_activate_worker_waiting(struct work_queue *q, int n);
/* Which address of the master the catalog record tells workers to connect to: "by_ip" (the
 * default: the addresses of the master's network interfaces, listed in the record, then the
 * address the catalog saw), "by_hostname" (the master's host name) or "by_apparent_ip" (the
 * address the catalog saw). 0 or -EINVAL. */
int work_queue_master_preferred_connection(struct work_queue *q, const char *how);
/* Requires workers to prove the password in PATH (before any worker connects): 0, or a
 * negative errno with the reason logged. */
int work_queue_specify_password_file(struct work_queue *q, const char *path);
/* The libuv loop the queue's handles live on (a uv_loop_t *; the application's own when it gave
 * one in work_queue_opts). */
void *work_queue_loop(struct work_queue *q);
/* Fast abort (doc/work-queue-protocol.md 7.2): once a category has 10 completed tasks, a task
 * running longer than MULTIPLIER times the category's mean wall time is cancelled and waits
 * again (same try, at most twice per task); a worker with two fast aborts is dismissed and its
 * host refused for 600 s. MULTIPLIER <= 0 turns it off; the category value wins over the
 * queue's. 0 or -EINVAL. */
int work_queue_activate_fast_abort(struct work_queue *q, double multiplier);
int work_queue_activate_fast_abort_category(struct work_queue *q, const char *category,
                                            double multiplier);
/* Blocklist by host name (the worker's `identity` host): its connected workers are dismissed,
 * new ones refused with `error blocked`; SECONDS 0 = until unblocked. 0, -EINVAL or -ENOENT. */
int work_queue_block_host(struct work_queue *q, const char *host);
int work_queue_block_host_with_timeout(struct work_queue *q, const char *host, double seconds);
int work_queue_unblock_host(struct work_queue *q, const char *host);
void work_queue_unblock_all(struct work_queue *q);
/* Drains the connected workers named by WORKER: a host name (the worker's `identity` host), an
 * address "IP:PORT" as in the logs, or a worker id (the `worker_id` of its hello, or that id
 * with its "#serial"). Each gets `drain`: it receives no new task, finishes and reports the
 * ones it runs, says `bye` and exits 0 (a draining worker cannot be taken back). Returns how
 * many workers were told (0 when none matched), or -EINVAL. */
int work_queue_drain_worker(struct work_queue *q, const char *worker);
/* With SYNC non-zero, each output is flushed to disk (fsync) before it is renamed into place,
 * and its directory after. Off by default: an output appears whole or not at all under its
 * name either way (temporary file and rename), but after a power loss a recent output may be
 * empty, as with a task run locally. */
void work_queue_specify_sync_outputs(struct work_queue *q, int sync);
/* Workers exit (shutdown) rather than reconnect (dismiss) when the queue is deleted. */
void work_queue_specify_shutdown(struct work_queue *q, int shutdown);

/* Categories (doc/allocation.md): MODE is an enum category_mode of category.h (FIXED, MAX,
 * MIN_WASTE, MAX_THROUGHPUT, or WARMUP, which is not a CCTools mode); MAX and MIN are copied (v[]
 * of cores, memory, disk, gpus; -1 = none); N < 0 is unlimited. Each returns 0 or -EINVAL. CATEGORY
 * NULL is "default". */
int work_queue_specify_category_mode(struct work_queue *q, const char *category, int mode);
int work_queue_specify_category_max_resources(struct work_queue *q, const char *category,
                                              const struct rmsummary *max);
int work_queue_specify_category_min_resources(struct work_queue *q, const char *category,
                                              const struct rmsummary *min);
int work_queue_specify_category_max_concurrent(struct work_queue *q, const char *category, int n);
/* The first allocation is recomputed after every N measurements (default 25, N >= 1). */
int work_queue_specify_category_update_interval(struct work_queue *q, const char *category, int n);

/* The status document WHAT ("master", "workers", "tasks" or "categories"; doc/work-queue-api.md
 * section 5) as a JSON array of objects (caller frees with json_decref), or NULL for another
 * WHAT. Declared with an opaque type so that this header does not need jansson. */
struct json_t;
struct json_t *work_queue_status(struct work_queue *q, const char *what);

/* Statistics (doc/work-queue-api.md section 3); every field is kept up to date as events
 * happen, so this is O(1). */
struct work_queue_stats {
	int workers_connected, workers_init, workers_idle, workers_busy;
	int64_t workers_joined, workers_removed, workers_lost;
	int tasks_waiting, tasks_on_workers, tasks_running, tasks_with_results;
	int64_t tasks_submitted, tasks_dispatched, tasks_done, tasks_failed, tasks_cancelled;
	int64_t tasks_exhausted_attempts;
	int tasks_queued_on_workers; /* sent `queued` (prefetch), not started yet */
	int64_t time_when_started;   /* microseconds since the epoch */
	int64_t bytes_sent, bytes_received;
	double total_cores, committed_cores;
	int64_t total_memory, committed_memory, total_disk, committed_disk, total_gpus,
	    committed_gpus;
	int64_t objects_taken; /* cached objects workers took from their shared store instead of a
	                        * transfer (doc/work-queue-shared-cache.md) */
};
void work_queue_get_stats(struct work_queue *q, struct work_queue_stats *s);

/* A worker that reports its disk full (doc/work-queue-protocol.md 5.10) is sent no task and
 * told to drop the cached objects no waiting or assigned task needs; if it is still full after
 * SECONDS (default 60) with no task running, it is dismissed (it may come back after 300 s).
 * 0 .. 86400; 0 or -EINVAL. */
int work_queue_specify_full_worker_timeout(struct work_queue *q, double seconds);

/* Task prefetch (doc/work-queue-api.md 2.1, protocol 5.6 "Queued tasks"): when a pass can place
 * nothing more, ready tasks of categories whose mean measured wall time is at most
 * MAX_TASK_SECONDS are sent `queued` to workers that negotiated `queue`, at most PER_WORKER per
 * worker (-1: the worker's queue_max; 0: off). Default -1 and 1.0 s. 0 or -EINVAL. */
int work_queue_specify_prefetch(struct work_queue *q, int per_worker, double max_task_seconds);

/* Tasks that run in a container of their own (work_queue_task_specify_container, mode
 * WORK_QUEUE_CONTAINER_TASK) are prefetched up to the larger of MAX_TASK_SECONDS and the limit
 * above: their worker makes the container while the task waits in its queue, which takes the
 * container's cost (a few hundred ms) off the task's path. Default 10 s. 0 or -EINVAL. */
int work_queue_specify_prefetch_containers(struct work_queue *q, double max_task_seconds);

#endif
