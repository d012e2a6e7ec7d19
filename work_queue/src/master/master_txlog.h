/* master_txlog.h: the master's transactions log (doc/work-queue-api.md section 4): one line per
 * event (the master starting and ending, workers connecting, reporting resources and leaving,
 * tasks changing state, files crossing), each written with a single write(2) on an O_APPEND
 * descriptor so that a crash leaves only complete lines. */
#ifndef HTC_MASTER_TXLOG_H
#define HTC_MASTER_TXLOG_H

#include <stdint.h>

#include "rmsummary.h"

struct master_txlog;

/* Opens (creating or appending to) PATH and writes the header comment if the file is empty.
 * NULL with errno set on failure. */
struct master_txlog *master_txlog_open(const char *path);
/* Closes the log; NULL is accepted. */
void master_txlog_close(struct master_txlog *l);

/* The instant written on each line: microseconds since the epoch. By default the real clock;
 * tests set a fixed value (0 = the real clock again). */
void master_txlog_set_clock(struct master_txlog *l, int64_t fixed_us);

/* Why a worker left (the DISCONNECTION reason). */
enum master_txlog_leave {
	MASTER_TXLOG_LEAVE_UNKNOWN = 0,
	MASTER_TXLOG_LEAVE_IDLE_OUT,   /* the worker left after its idle timeout */
	MASTER_TXLOG_LEAVE_FAST_ABORT, /* dismissed as a slow worker */
	MASTER_TXLOG_LEAVE_FAILURE,    /* protocol violation or error */
	MASTER_TXLOG_LEAVE_STATUS,     /* a status client ended its query */
	MASTER_TXLOG_LEAVE_EXPLICIT,   /* dismissed, drained or shut down by the master */
	MASTER_TXLOG_LEAVE_LOST,       /* connection lost, keepalive timeout */
};

/* MASTER START PORT PROJECT and MASTER END (PROJECT "-" when none). */
int master_txlog_master_start(struct master_txlog *l, int port, const char *project);
int master_txlog_master_end(struct master_txlog *l);

/* WORKER ID CONNECTION ADDRESS HOST. */
int master_txlog_worker_connect(struct master_txlog *l, const char *worker_id, const char *address,
                                const char *host);
/* WORKER ID DISCONNECTION REASON. */
int master_txlog_worker_disconnect(struct master_txlog *l, const char *worker_id,
                                   enum master_txlog_leave why);
/* WORKER ID RESOURCES {json of cores, memory, disk, gpus}. */
int master_txlog_worker_resources(struct master_txlog *l, const char *worker_id,
                                  const struct rmsummary *r);

/* TASK ID STATE [EXTRA...]: STATE is WAITING, RUNNING, WAITING_RETRIEVAL, RETRIEVED, DONE or
 * CANCELED. DETAIL (may be NULL) is written as it is after the state (e.g. "blast FIRST_RESOURCES"
 * or "SUCCESS 0"); R (may be NULL) is appended as compact JSON of cores, memory, disk and gpus
 * (or of every set field for RETRIEVED measurements). DETAIL must not contain a newline. */
int master_txlog_task(struct master_txlog *l, int64_t task_id, const char *state,
                      const char *detail, const struct rmsummary *r);

/* TRANSFER INPUT|OUTPUT TASK_ID NAME BYTES SECONDS cache|task. NAME is written with spaces and
 * control characters escaped as %XX. */
int master_txlog_transfer(struct master_txlog *l, int output, int64_t task_id, const char *name,
                          int64_t bytes, double seconds, int cached);

/* CATEGORY NAME MAX|MIN|FIRST {json}: a category's limits or first allocation changed. */
int master_txlog_category(struct master_txlog *l, const char *name, const char *which,
                          const struct rmsummary *r);

#endif
