/* engine_internal.h: state shared by the engine's source files (engine.c,
 * engine_recover.c, engine_report.c). Not a public interface. */
#ifndef MAKEFLOW_ENGINE_INTERNAL_H
#define MAKEFLOW_ENGINE_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "batch_queue.h"
#include "dag.h"
#include "engine.h"
#include "txlog.h"

/* Rule states (dag_node.state). */
enum node_state {
	NODE_WAITING = 0, /* some parent is not complete */
	NODE_READY,       /* in the ready queue */
	NODE_RUNNING,     /* submitted to a batch queue */
	NODE_COMPLETE,
	NODE_FAILED,
	NODE_ABORTED,
};

/* What the log says about a file (file->engine points to one). */
struct file_rec {
	int state; /* TXLOG_FILE_* of the last record, 0 if none */
	int64_t size, mtime_ns;
};

struct node_extra {
	uint64_t key;       /* content key (see the log format) */
	int64_t job_id;     /* while running */
	int attempts;       /* submissions so far */
	int on_local_queue; /* submitted to the local queue */
	int recovered;      /* complete from an earlier run */
	int last_exit_code;
	int last_signal;
	int last_exhausted;
	char *last_error;
	char *last_stderr; /* the failed try's stderr (or output) tail, from the driver */
	int64_t start_us, end_us;
	/* sizing (engine_alloc.c) */
	uint8_t level;                /* enum category_level of the next/current try */
	uint8_t monitored;            /* the current try is wrapped with resource_monitor */
	uint8_t sized;                /* the current try runs with a computed first allocation */
	uint8_t long_cmd;             /* the current try runs its command from a script */
	uint8_t driver_sized;         /* the driver sizes the current try (spec.driver_sizes) */
	float alloc_cores;            /* the cores the driver gave it (a part of a core), or -1 */
	int sizing_retries;           /* re-runs at the maximum after exhaustion (not -r retries) */
	struct batch_resources alloc; /* what the current try was given */
};

struct job_map;
struct engine_sizing;
struct engine_advert;
struct engine_status_page;

struct engine {
	struct dag *dag;
	const struct engine_options *opt;
	uv_loop_t loop;
	struct batch_queue *queue;       /* the -T queue */
	struct batch_queue *local_queue; /* for LOCAL rules when -T is not local execution */
	unsigned features;
	struct txlog *log;
	struct txlog_lock *lock;             /* the workflow's lock, held for the whole run */
	char run_id[TXLOG_RUN_ID_LEN + 1];   /* this run's id (txlog_new_run_id) */
	char run_env[TXLOG_RUN_ID_LEN + 16]; /* "HTC_RUN_ID=<run_id>", in every job's env */
	struct node_extra *extra;            /* indexed by node id */
	struct engine_sizing *sizing;        /* categories, monitor (engine_alloc.c) */
	struct engine_archive *archive;      /* --archive (engine_archive.c); NULL = none */
	struct job_map *jobs;

	/* ready queue: a ring of node pointers (FIFO, file order within a wave) */
	struct dag_node **ready;
	size_t ready_cap, ready_head, ready_len;
	/* ready rules of a warming category (allocation WARMUP) waiting for its first
	 * measurement; back in the ready queue at the next dispatch */
	struct dag_node **parked;
	size_t n_parked, cap_parked;

	int64_t n_complete, n_failed, n_aborted, n_running, n_recovered;
	int64_t n_submitted_remote;
	int aborting;
	int log_failed; /* a record could not be written: no new rules are started */
	int finished;
	int exit_status;

	/* outputs of the rule being completed, as stat()ed once by outputs_ok */
	struct output_stat {
		int64_t size, mtime_ns;
	} * ostat;
	size_t ostat_cap;

	/* garbage collection */
	struct dag_file **collectable;
	size_t n_collectable, collectable_cap;
	int64_t gc_files, gc_bytes;

	struct engine_advert *advert;           /* -a (engine_advertise.c); NULL if off */
	struct engine_status_page *status_page; /* --file-status; NULL if off */
	struct engine_status_page *report_page; /* --report while running; NULL if off */

	/* --storage-limit (engine_storage.c) */
	int64_t storage_used; /* bytes of the counted files the workflow created and keeps */
	int storage_stuck;    /* at the limit with nothing running: no rule starts any more */

	/* reporting */
	int64_t start_us;
	int64_t last_plain_us;
	int tty;
	int progress_shown;
	uv_timer_t progress_timer;
	uv_timer_t sync_timer;
	uv_signal_t sig_int, sig_term;
	struct dag_node **failed;
	size_t n_failed_list, failed_cap;
};

/* engine_recover.c */
uint64_t engine_node_key(const struct dag_node *n, int ordinal);
/* Computes keys, reads the log, marks recovered rules complete. Returns 0 or
 * -1 after printing the error. */
int engine_recover(struct engine *e);
/* Logs the current state of every source file (only those that changed). */
void engine_log_sources(struct engine *e);
/* engine.c: takes the workflow's lock (txlog_lock on LOG_PATH) for a run or a clean; NULL after
 * printing why (another makeflow holds it, naming its PID). */
struct txlog_lock *engine_lock(const char *log_path);

/* engine_orphans.c */
/* Stops (SIGKILL) every process whose environment names one of the N run ids in IDS (runs the log
 * shows started and not ended), with the process groups they lead, and waits until they are
 * gone. Returns 0, or -1 after printing that some are still there. */
int engine_stop_orphans(char (*ids)[TXLOG_RUN_ID_LEN + 1], size_t n);
int file_stat(const char *name, int64_t *size, int64_t *mtime_ns, int *is_dir);

/* engine_alloc.c: resource monitoring and per-category sizing */
struct rmsummary;
/* Sets up categories (modes, maxima, seeds) and the monitor. Returns 0, or -1 after printing
 * the error. */
int engine_alloc_init(struct engine *e);
void engine_alloc_free(struct engine *e);
/* 1 if N's category computes its allocations (its mode is not FIXED). */
int engine_alloc_is_sized(struct engine *e, const struct dag_node *n);
/* 1 when N's category is in WARMUP mode and has no measurement yet (its first rule must run
 * alone, at the maximum). */
int engine_alloc_warming(struct engine *e, const struct dag_node *n);
/* 1 when the batch type sizes N's try itself (a WARMUP category on a driver with
 * BATCH_FEATURE_CATEGORY_SIZING, at the first level): the engine submits
 * the rule with its own declarations only and learns the allocation from the result. */
int engine_alloc_by_driver(struct engine *e, const struct dag_node *n);
/* Sets SPEC's resources for N's next try; returns the command wrapped with resource_monitor
 * (caller frees), or NULL to run COMMAND as it is. */
char *engine_alloc_prepare(struct engine *e, struct dag_node *n, const char *command,
                           struct batch_job_spec *spec);
/* For a finished try R of N: fills EFF (R as the rule's own command saw it: for a monitored
 * try, exit status and exhaustion come from its summary) and MEASURED (initialised by the
 * caller; what was measured, -1 where unknown). */
void engine_alloc_result(struct engine *e, struct dag_node *n, const struct batch_result *r,
                         struct batch_result *eff, struct rmsummary *measured);
/* Decides after a try that exhausted its allocation, and records the try: 1 if the rule runs
 * again at its category maximum (not counted against -r), 0 if the exhaustion is a failure. */
int engine_alloc_exhausted(struct engine *e, struct dag_node *n, const struct batch_result *eff,
                           const struct rmsummary *measured);
/* Records a finished try for the category statistics; DONE: 1 succeeded, -1 failed for good,
 * 0 will run again. */
void engine_alloc_record(struct engine *e, struct dag_node *n, const struct batch_result *eff,
                         const struct rmsummary *measured, int done);
/* Prints the per-category table (when sizing or monitoring was in use). */
void engine_alloc_report(struct engine *e);
/* The per-category statistics as a JSON array (a json_t *; NULL when there is nothing). */
void *engine_alloc_json(struct engine *e);

/* engine_prepare.c: joins the wrapper files to every rule, applies the mounts and opens the
 * archive. Returns 0, or -1 after printing the error. */
int engine_prepare(struct engine *e);
/* engine_advertise.c: -a, the workflow's catalog record */
/* Starts advertising (when -a is on). Returns 0, or -1 after printing why. */
int engine_advertise_start(struct engine *e);
/* Sends the final record and waits until it is sent (or failed). */
void engine_advertise_final(struct engine *e);
/* Stops; the loop frees what is left once it closes its handles. NULL advert is fine. */
void engine_advertise_free(struct engine *e);

/* engine_status_page.c: --file-status, the HTML status page, and --report's refreshes */
void engine_status_page_start(struct engine *e);
/* Rewrites the page now (also the last time, at the end). */
void engine_status_page_write(struct engine *e);
void engine_status_page_free(struct engine *e);
/* --report: starts and stops the refreshes of the run report (opt->report_refresh). */
void engine_report_page_start(struct engine *e);
void engine_report_page_free(struct engine *e);

/* engine_storage.c: --storage-limit */
/* Counts the files of earlier runs that are there. */
void engine_storage_init(struct engine *e);
/* A rule created F (SIZE bytes) / garbage collection deleted F. */
void engine_storage_created(struct engine *e, const struct dag_file *f, int64_t size);
void engine_storage_deleted(struct engine *e, const struct dag_file *f, int64_t size);
/* 1 if no rule may be submitted to Q now (the limit is reached, or Q still has jobs waiting to
 * start); at the limit with nothing running, says so once and sets storage_stuck. */
int engine_storage_full(struct engine *e, struct batch_queue *q);

/* engine_report.c */
void engine_progress_start(struct engine *e);
void engine_progress_update(struct engine *e, int force);
void engine_progress_stop(struct engine *e);
/* With -T dryrun: says where the script of the commands went. */
void engine_report_dryrun(struct engine *e);
/* engine_failed.c: a rule failed for good: its outputs go to makeflow.failed.N/ with an
 * INFO.json (or are deleted with --do-not-save-failed-output). */
void engine_failed_keep(struct engine *e, struct dag_node *n);
/* Where -T dryrun writes its script: --batch-option script=FILE, else WORKFLOW.sh (malloc). */
char *engine_dryrun_script(const struct engine *e);

/* Before the run (engine_start.c): every source a rule reads exists (the missing ones are
 * named), the driver has the features the workflow needs, and the driver takes the options of
 * the command line (IS_LOCAL_QUEUE: the queue of LOCAL rules). Each: 0, or -1 after saying why. */
int engine_check_sources(struct engine *e);
int engine_check_features(struct engine *e);
int engine_apply_options(struct engine *e, struct batch_queue *q, int is_local_queue);
void engine_report_failures(struct engine *e);
/* --summary-json FILE: the JSON summary (doc/manual.md). */
int engine_write_json_summary(struct engine *e);
/* -f FILE: the text summary of CCTools makeflow, line for line. */
int engine_write_text_summary(struct engine *e);
const char *engine_node_state_name(int state);

#endif
