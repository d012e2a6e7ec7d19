/* worker_session_internal.h: what worker_session.c and the files split from it share:
 * worker_session_fetch.c (URL inputs) and worker_session_report.c (identity, capacity and
 * cache_have): the state of a task on this worker and of a session, and the functions one file
 * calls in another. Not for other modules: worker_conn.c uses worker_session.h. */
#ifndef HTC_WORKER_SESSION_INTERNAL_H
#define HTC_WORKER_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uthash.h>

#include "worker_conn_internal.h"
#include "worker_fetch.h"
#include "worker_queue.h"
#include "worker_session.h"
#include "worker_task.h"
#include "worker_watch.h"
#include "worker_cache.h"
#include "wq_msg.h"
#include "worker_sandbox.h"

enum wt_state { WT_STAGING, WT_RUNNING, WT_SENDING };

struct wsend {
	struct wtask *t;
	int64_t index;   /* output index, -1 for stdout */
	bool watch;      /* a transfer of a watched output (worker_watch) */
	bool final;      /* the transfer task_done names (every one but a watched increment) */
	uint32_t handle; /* of the send while it is pending (wq_xfer_out_abort), else 0 */
};

struct wtask {
	int64_t id, try_;
	struct worker_session *s;
	struct wq_task_msg *msg;
	struct worker_sandbox *sb;
	struct worker_alloc alloc;
	struct worker_task *t;
	enum wt_state state;
	bool *have_input;
	bool *fetching; /* url input i holds a worker_fetch_want */
	size_t inputs_pending;
	bool cancelled;
	bool queued;        /* in the FIFO: accepted `queued`, not committed yet */
	bool inputs_ready;  /* queued with every input in place: starts when committed */
	int64_t *out_xfers; /* ids on the wire for task_done: -1 pending, 0 none */
	int64_t stdout_xfer;
	struct worker_watch *watch; /* watched outputs while running, or NULL */
	struct wsend *wsends;       /* their tags, one per output */
	int sends_pending;
	struct wsend *sends; /* noutputs + 1 */
	char **dir_refs;
	size_t ndir_refs;
	int64_t t_received;
	struct worker_ahead *ahead; /* its own container, being made while it waits, or NULL */
	UT_hash_handle hh;
};

/* Cache objects being received: a task may name one whose xfer_end is still being processed. */
struct pending_obj {
	char name[WORKER_CACHE_NAME_LEN + 1];
	UT_hash_handle hh;
};

/* What worker_session.c and the files split from it keep per session, behind
 * worker_session.own. */
struct session_priv {
	struct pending_obj *pending; /* uthash by name */
	struct worker_fetch *fetch;  /* URL downloads, made at the first URL input */
	struct worker_queue *queue;  /* queued tasks (capability queue), made at first use */
	bool dropping;               /* every task is being forgotten: commit nothing more */
};

static inline struct worker *W(struct worker_session *s)
{
	return s->w;
}

/* worker_session.c. */
/* The session's own state, made at first use. */
struct session_priv *ws_priv(struct worker_session *s);
/* Sends M (stolen, NULL is accepted) unless the connection is closing or lost. */
void ws_send(struct worker_session *s, json_t *m);
/* Forgets T: releases what it holds; a running tree is killed, the sandbox removed. */
void ws_task_free(struct wtask *t);
/* A task of S finished (task_done sent): the idle clock restarts; with --exit-after-tasks N the
 * worker drains after its Nth task. */
void ws_task_finished(struct worker_session *s);
/* Ends the worker once it is draining and no task is left. */
void ws_check_drained(struct worker_session *s);
/* Places cache input I of T into its sandbox. 0 or -errno. */
int ws_link_cache_input(struct wtask *t, size_t i);
/* Every input of T is in place (ERR 0), or cannot be (ERR): T starts, unless it still waits in
 * the FIFO; a failure ends it at once (outcome sandbox_error), queued or not. */
void ws_inputs_in_place(struct wtask *t, int err);

/* worker_session_fetch.c. */
/* Asks for every URL input of T that is not in the cache. */
void ws_start_fetches(struct wtask *t);

/* worker_session_report.c. */
/* Sends `identity` (with queue_max when the queue capability was agreed). */
void ws_send_identity(struct worker_session *s);
/* Object NAME is (ON) or is no longer (off) on its way into the cache: a `task` naming it
 * waits instead of being refused (a transfer or a take from the shared store). */
void ws_pending_set(struct worker_session *s, const char *name, bool on);
/* Object NAME is in the cache now: the staging tasks waiting for it link it. */
void ws_object_arrived(struct worker_session *s, const char *name);
/* Sends `capacity` and remembers the disk it reported. */
void ws_send_capacity(struct worker_session *s);
/* A worker_cache_foreach_batch callback: one `cache_have` per batch (ARG is the session). */
int ws_have_batch(const struct worker_cache_item *items, size_t n, bool last, void *arg);

#endif
