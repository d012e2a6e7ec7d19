/* txlog_read.h: the incremental reader of the makeflow transaction log
 * (doc/makeflow-log-format.md), for tools that watch or report on a workflow (makeflow_monitor,
 * reports). It is fed bytes as the log grows, keeps a partial last line for the next feed, and
 * keeps the state of every rule and the progress of the latest run. Records are parsed by the
 * same code as makeflow's recovery (txlog.h). */
#ifndef MAKEFLOW_TXLOG_READ_H
#define MAKEFLOW_TXLOG_READ_H

#include <stddef.h>
#include <stdint.h>

#include "txlog.h"

/* At most this many rules in a run ('S' record): a larger count is refused as corrupt. */
#define TXLOG_READER_MAX_RULES (16 * 1024 * 1024)
/* The recent completion rate is measured over at most this many latest completions. */
#define TXLOG_READER_RECENT 128

/* What the log says of one rule. Times are microseconds since the epoch, 0 when unknown. */
struct txlog_rule {
	int state;        /* enum txlog_node_state, 0 when no record names it in this run */
	uint64_t key;     /* content key of its latest record */
	int attempts;     /* 'running' records of this rule in the whole log */
	int64_t start_us; /* its latest 'running' record */
	int64_t end_us;   /* its latest complete/failed/aborted record after that, 0 if none */
	/* how its latest failure happened ("exit:3", "signal:9", "exhausted", "error"), "" when
	 * it has not failed since its latest start or the log does not say */
	char failure[TXLOG_MAX_FAILURE + 1];
};

/* The progress of the latest run in the log (the last 'S' record and what followed it). */
struct txlog_progress {
	const char *workflow; /* named by the header (decoded); NULL before it is read */
	int runs;             /* 'S' records read */
	int64_t rules;        /* rules in the latest run, 0 before any 'S' */
	int64_t pid;          /* process id of the latest run */
	int64_t start_us;     /* time of the latest 'S' */
	int64_t last_us;      /* time of the latest record */
	int ended;            /* an 'E' record follows the latest 'S' */
	int end_status;       /* its status: 0 complete, 1 failures, 2 aborted */
	const char *end_reason;
	int64_t end_us;
	/* Rules by state; waiting counts every rule of the run not in another state. */
	int64_t waiting, running, complete, failed, aborted;
	int64_t completed_in_run; /* 'complete' records since the latest 'S' */
};

struct txlog_reader;

/* Called for every record after the reader has applied it (R valid during the call only); a
 * non-zero return stops the feed, which returns it. */
typedef int (*txlog_reader_fn)(const struct txlog_reader *rd, const struct txlog_record *r,
                               void *arg);

/* A reader whose messages name the log NAME (copied). FN may be NULL. */
struct txlog_reader *txlog_reader_create(const char *name, txlog_reader_fn fn, void *arg);
/* NULL is accepted. */
void txlog_reader_delete(struct txlog_reader *rd);

/* Parses the complete lines of BUF (LEN bytes) that follow what was fed before; a last line
 * without its newline is kept until the next feed completes it. Returns 0, or a negative code
 * with a "NAME:LINE: message" in txlog_reader_error (HTC_EUNSUP for a CCTools makeflow log,
 * HTC_EVERSION for an unknown format version, HTC_ECORRUPT for a bad record or a line longer
 * than TXLOG_MAX_LINE). An error is final: later feeds return it again. */
int txlog_reader_feed(struct txlog_reader *rd, const char *buf, size_t len);

/* Reads what was appended to the file PATH since the last call and feeds it. A file that was
 * replaced (another inode) or became shorter than what was read is read again from its start
 * (a workflow cleaned and run again), except that a torn last line cut off by a restarting
 * makeflow only drops that line. Returns 0, -errno when the file cannot be read (-ENOENT: not
 * there yet), or a feed error. */
int txlog_reader_read_file(struct txlog_reader *rd, const char *path);

/* Forgets everything read (the next feed starts a log). */
void txlog_reader_reset(struct txlog_reader *rd);

/* The message of the last error ("" when none). */
const char *txlog_reader_error(const struct txlog_reader *rd);
/* The progress so far (owned by RD, valid until its next feed). */
const struct txlog_progress *txlog_reader_progress(const struct txlog_reader *rd);
/* Rules of the latest run: ids 0 to progress->rules - 1. NULL past the end. */
const struct txlog_rule *txlog_reader_rule(const struct txlog_reader *rd, int64_t id);
/* Complete lines read (the header included). */
int txlog_reader_lines(const struct txlog_reader *rd);
/* A partial last line is waiting for its end. */
int txlog_reader_partial(const struct txlog_reader *rd);
/* Completions per second over the latest completions of the run (at most
 * TXLOG_READER_RECENT), or -1 when fewer than two are known or they share one instant. */
double txlog_reader_recent_rate(const struct txlog_reader *rd);

#endif
