/* report_data.h: what the run report shows, gathered from a workflow's transaction log (with
 * the incremental log reader, txlog_read.h), the workflow file its header names, the summaries
 * of a --monitor directory and the makeflow.failed.N/ directories. Anything missing but the log
 * is noted, never fatal (doc/makeflow-report.md). */
#ifndef MAKEFLOW_REPORT_DATA_H
#define MAKEFLOW_REPORT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dag.h"
#include "txlog_read.h"

/* How one attempt of a rule ended. */
enum report_outcome {
	REPORT_RUNNING = 0, /* no record ends it yet */
	REPORT_COMPLETE,
	REPORT_FAILED,
	REPORT_EXHAUSTED, /* exceeded its allocation */
	REPORT_ABORTED,
	REPORT_RETRIED, /* another attempt of the rule started after it */
	REPORT_N_OUTCOMES
};
const char *report_outcome_name(int outcome);

struct report_attempt {
	int64_t rule;
	int64_t start_us, end_us; /* end_us 0 while running */
	int outcome;
};

/* Resources the report compares: memory MB, cores, disk MB. */
enum { REPORT_MEM = 0, REPORT_CORES, REPORT_DISK, REPORT_N_RES };

struct report_rule {
	int state;                  /* enum txlog_node_state, 0 when never named in the run */
	char failure[32];           /* from the log ("exit:3", ...), "" when none */
	int attempts;               /* in the latest run */
	const char *category;       /* from the workflow, else "(unknown)"; owned by the report */
	int line;                   /* in the workflow, 0 when unknown */
	const char *command;        /* owned by the workflow's dag; NULL when unknown */
	double alloc[REPORT_N_RES]; /* declared; -1 unknown */
	/* From the monitor summary of its latest attempt (measured = 1 when there is one). */
	int measured;
	double peak[REPORT_N_RES];
	double wall_s;
	char *host;      /* owned; NULL when unmeasured */
	int exhausted;   /* the summary says it was stopped for a limit */
	int exit_status; /* from the summary or INFO.json; -1 unknown */
	int signal;
	char *stderr_tail; /* last lines of a kept .err/.stderr/.log output, owned; NULL */
	char *failed_dir;  /* makeflow.failed.N when it exists, owned */
};

struct report {
	char *log_path;
	char *workflow_path; /* the workflow file loaded, or NULL */
	struct dag *dag;     /* NULL when the workflow could not be loaded */
	int own_dag;         /* DAG was loaded here (else the caller's, borrowed) */
	struct txlog_progress progress;
	char *workflow_name; /* as named by the log header (progress.workflow points here) */
	struct report_rule *rules;
	int64_t nrules;
	struct report_attempt *attempts;
	size_t nattempts, capattempts;
	int64_t t0_us, t1_us; /* first start and last end (or last record) of the run */
	int measured_rules;
	char **notes; /* what is missing, one sentence each */
	size_t nnotes, capnotes;
};

/* Where the inputs are: LOG (required), MONITOR_DIR (NULL: none), WORKFLOW (NULL: the one the
 * log names, found as named or beside the log), FAILED_DIR (where makeflow.failed.N are; NULL:
 * the log's directory), the workflow's form (workflow_load.h) as SRC_TEMPLATE (its path is
 * replaced; NULL: the Make-like language, or JSON for a name ending in .json), or DAG, the
 * workflow a caller has loaded already. */
struct workflow_source;
struct report_input {
	const char *log;
	const char *monitor_dir;
	const char *workflow;
	const char *failed_dir;
	const struct workflow_source *src_template;
	/* The workflow already loaded (makeflow --report), borrowed for the report's life; NULL:
	 * load it as above. */
	struct dag *dag;
};

/* Gathers a report. NULL with a "FILE:LINE: message" (or "FILE: message") in ERR when the log
 * cannot be read or is not a makeflow transaction log; everything else missing is a note. */
struct report *report_load(const struct report_input *in, char *err, size_t errlen);
/* NULL is accepted. */
void report_delete(struct report *r);

/* Adds a note (printf-style) to R. */
void report_note(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The outcome colour of an attempt (a CSS colour). */
const char *report_outcome_colour(int outcome);

#endif
