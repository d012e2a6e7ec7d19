/* wq_txlog.h: the master's transactions log (doc/work-queue-api.md section 4): one line per
 * event (the master starting and ending, workers connecting, reporting resources and leaving,
 * tasks changing state, files crossing), each written with a single write(2) on an O_APPEND
 * descriptor so that a crash leaves only complete lines. */
#ifndef HTC_WQ_TXLOG_H
#define HTC_WQ_TXLOG_H

#include <stdint.h>

#include "rmsummary.h"

struct wq_txlog;

/* Opens (creating or appending to) PATH and writes the header comment if the file is empty.
 * NULL with errno set on failure. */
struct wq_txlog *wq_txlog_open(const char *path);
/* Closes the log; NULL is accepted. */
void wq_txlog_close(struct wq_txlog *l);

/* The instant written on each line: microseconds since the epoch. By default the real clock;
 * tests set a fixed value (0 = the real clock again). */
void wq_txlog_set_clock(struct wq_txlog *l, int64_t fixed_us);

/* Why a worker left (the DISCONNECTION reason). */
enum wq_txlog_leave {
	WQ_TXLOG_LEAVE_UNKNOWN = 0,
	WQ_TXLOG_LEAVE_IDLE_OUT,   /* the worker left after its idle timeout */
	WQ_TXLOG_LEAVE_FAST_ABORT, /* dismissed as a slow worker */
	WQ_TXLOG_LEAVE_FAILURE,    /* protocol violation or error */
	WQ_TXLOG_LEAVE_STATUS,     /* a status client ended its query */
	WQ_TXLOG_LEAVE_EXPLICIT,   /* dismissed, drained or shut down by the master */
	WQ_TXLOG_LEAVE_LOST,       /* connection lost, keepalive timeout */
};

/* MASTER START PORT PROJECT and MASTER END (PROJECT "-" when none). */
int wq_txlog_master_start(struct wq_txlog *l, int port, const char *project);
int wq_txlog_master_end(struct wq_txlog *l);

/* WORKER ID CONNECTION ADDRESS HOST. */
int wq_txlog_worker_connect(struct wq_txlog *l, const char *worker_id, const char *address,
                            const char *host);
/* WORKER ID DISCONNECTION REASON. */
int wq_txlog_worker_disconnect(struct wq_txlog *l, const char *worker_id, enum wq_txlog_leave why);
/* WORKER ID RESOURCES {json of cores, memory, disk, gpus}. */
int wq_txlog_worker_resources(struct wq_txlog *l, const char *worker_id, const struct rmsummary *r);

/* TASK ID STATE [EXTRA...]: STATE is WAITING, RUNNING, WAITING_RETRIEVAL, RETRIEVED, DONE or
 * CANCELED. DETAIL (may be NULL) is written as it is after the state (e.g. "blast FIRST_RESOURCES"
 * or "SUCCESS 0"); R (may be NULL) is appended as compact JSON of cores, memory, disk and gpus
 * (or of every set field for RETRIEVED measurements). DETAIL must not contain a newline. */
int wq_txlog_task(struct wq_txlog *l, int64_t task_id, const char *state, const char *detail,
                  const struct rmsummary *r);

/* TRANSFER INPUT|OUTPUT TASK_ID NAME BYTES SECONDS cache|task. NAME is written with spaces and
 * control characters escaped as %XX. */
int wq_txlog_transfer(struct wq_txlog *l, int output, int64_t task_id, const char *name,
                      int64_t bytes, double seconds, int cached);

/* CATEGORY NAME MAX|MIN|FIRST {json}: a category's limits or first allocation changed. */
int wq_txlog_category(struct wq_txlog *l, const char *name, const char *which,
                      const struct rmsummary *r);

#endif
