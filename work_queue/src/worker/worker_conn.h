/* worker_conn.h: the running work_queue_worker (doc/work-queue-protocol.md sections 1, 3, 5 and 7):
 * connecting to a master with backoff (directly or through the catalog with -M), the worker side
 * of the handshake, the report after it, and the dispatch of the master's messages to the cache,
 * the transfer engine and the task runner. worker_conn.c holds the connection cycle and the exit
 * paths, worker_session.c the messages and tasks of one connection (with worker_session_report.c
 * and worker_session_fetch.c). */
#ifndef HTC_WORKER_CONN_H
#define HTC_WORKER_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "worker_opts.h"

/* Exit statuses (protocol section 1). */
#define WORKER_EXIT_OK        0
#define WORKER_EXIT_LOCAL     1
#define WORKER_EXIT_REFUSED   2
#define WORKER_EXIT_NO_MASTER 3

struct worker;

/* Prepares a worker for O (borrowed, must outlive it) on LOOP: the work directory (made under
 * TMPDIR without -s), its cache (rescanned), the resource ledger, the password and the TLS
 * configuration. Returns NULL with *ERR (caller frees) on a local error (exit status 1). */
struct worker *worker_create(uv_loop_t *loop, const struct worker_opts *o, char **err);
/* Starts connecting (the loop then runs the worker until it ends: uv_run returns). */
void worker_start(struct worker *w);
/* Starts the same way on TCP, a stream already connected to a master (a uv_tcp_t on W's loop,
 * malloc'd, initialised and opened; the worker takes it over), instead of connecting: the
 * handshake begins at once. NAME stands for the master in log lines and is the name a TLS
 * certificate is checked against. When that session ends the worker goes on as after any lost
 * connection (it connects to O's master, with backoff). For tests over a socketpair and for a
 * launcher that hands the worker its connection. */
void worker_start_connected(struct worker *w, uv_tcp_t *tcp, const char *name);
/* SIGTERM or SIGINT: the first one drains, the second kills the tasks and says bye. */
void worker_signal(struct worker *w, int signum);
/* The exit status once the loop has returned. */
int worker_exit_status(const struct worker *w);
/* Removes the work directory (unless --keep-cache) and frees W; NULL is accepted. Run the loop
 * until it has no handles after this before closing it. */
void worker_delete(struct worker *w);

/* ---- shared between worker_conn.c and worker_session*.c (not for other modules) ----------- */

struct wq_conn;
struct wq_handshake;
struct wq_xfer_in;
struct wq_xfer_out;
struct wtask;

/* One connection to a master, from TCP connect to close. */
struct worker_session {
	struct worker *w;
	struct wq_conn *conn;
	struct wq_handshake *hs;
	struct wq_xfer_in *xin;
	struct wq_xfer_out *xout;
	unsigned caps;
	bool active;         /* handshake done, report sent */
	bool draining;       /* `draining` sent */
	bool closing;        /* bye sent or close requested */
	bool lost;           /* closed callback seen */
	int64_t retry_after; /* from dismiss or a fatal error, seconds; -1 none */
	uint64_t up_since_ms;
	struct wtask *tasks; /* uthash by id */
	void *own;           /* worker_session*.c: objects being received, URL downloads */
	int ntasks;
	int64_t last_disk_free;
	bool last_disk_full;
	uint64_t last_capacity_ms;
};

/* worker_conn.c, for the session code. */
struct worker_session *worker_session_of(struct worker *w);
uv_loop_t *worker_loop(struct worker *w);
const struct worker_opts *worker_opts_of(struct worker *w);
/* Ends the worker with STATUS after a clean goodbye: kills tasks, sends bye REASON if connected,
 * closes, and stops the loop. */
void worker_finish(struct worker *w, int status, const char *reason);
/* The same from the loop's next turn, for callers inside a transfer or task callback (whose
 * module must not be deleted under it). REASON must be a static string. */
void worker_finish_soon(struct worker *w, int status, const char *reason);
/* The idle clock restarts (a task arrived or ended). */
void worker_touch(struct worker *w);

/* worker_session*.c. */
/* The handshake succeeded: sets up transfers and sends identity, capacity and cache_have. */
void worker_session_begin(struct worker_session *s, const char *master_id, unsigned caps,
                          int64_t ka_interval, int64_t ka_timeout);
/* A message of an active session. */
void worker_session_message(struct worker_session *s, json_t *msg, const char *name);
void worker_session_data(struct worker_session *s, uint32_t xfer, const uint8_t *b, size_t len);
void worker_session_writable(struct worker_session *s);
/* Kills and forgets every task and transfer of S (connection lost, dismiss, shutdown). */
void worker_session_drop_tasks(struct worker_session *s);
/* Sends `draining` (once) and refuses further tasks; says bye and ends when no task is left. */
void worker_session_drain(struct worker_session *s, const char *reason);
/* The periodic check (every second): capacity changes, drained and idle ends. */
void worker_session_tick(struct worker_session *s);

/* Internals of worker_conn.c that the session needs. */
struct worker_cache *worker_conn_cache(struct worker *w);
struct worker_ledger *worker_ledger(struct worker *w);
int worker_workdir_fd(struct worker *w);
const char *worker_workdir(struct worker *w);
const char *worker_hostname(struct worker *w);
/* The master's own end of a session (bye, dismiss, shutdown): closes with LAST (may be NULL). */
void worker_session_close(struct worker_session *s, json_t *last);
/* A task finished (for --single-shot). */
void worker_task_finished(struct worker *w);

#endif
