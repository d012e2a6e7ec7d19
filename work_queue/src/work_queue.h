/* work_queue.h: the public API of the Work Queue master library: tasks (a command, its files,
 * resources and limits, and after it ran its results) and, as the library grows, the queue
 * that sends them to workers. doc/work-queue-api.md is the reference; the protocol is in
 * doc/work-queue-protocol.md. */
#ifndef HTC_WORK_QUEUE_H
#define HTC_WORK_QUEUE_H

#include <stddef.h>
#include <stdint.h>

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
int work_queue_task_specify_disk(struct work_queue_task *t, int64_t mb);
int work_queue_task_specify_gpus(struct work_queue_task *t, int64_t gpus);
/* Copies the cores, memory, disk and gpus of R that are set (>= 0). */
int work_queue_task_specify_resources(struct work_queue_task *t, const struct rmsummary *r);
int work_queue_task_specify_category(struct work_queue_task *t, const char *category);
int work_queue_task_specify_tag(struct work_queue_task *t, const char *tag);
int work_queue_task_specify_priority(struct work_queue_task *t, double priority);
int work_queue_task_specify_max_retries(struct work_queue_task *t, int retries);
int work_queue_task_specify_running_time_max(struct work_queue_task *t, double seconds);
int work_queue_task_specify_end_time(struct work_queue_task *t, double epoch_seconds);
/* VALUE NULL: the variable is unset in the task's environment. Setting a name again replaces
 * its value. */
int work_queue_task_specify_environment_variable(struct work_queue_task *t, const char *name,
                                                 const char *value);
int work_queue_task_specify_feature(struct work_queue_task *t, const char *name);

/* The text of the last error a setter returned for T ("" if none). Owned by T. */
const char *work_queue_task_last_error(const struct work_queue_task *t);

/* Static name of a result ("SUCCESS", "INPUT_MISSING", ...); "UNKNOWN" for other values. */
const char *work_queue_result_str(int result);

#endif
