/* worker_conn.h: the running work_queue_worker (doc/work-queue-protocol.md sections 1, 3, 5 and 7):
 * connecting to a master with backoff (directly or through the catalog with -M), the worker side
 * of the handshake, the report after it, and the dispatch of the master's messages to the cache,
 * the transfer engine and the task runner. worker_conn.c holds the connection cycle and the exit
 * paths (worker_conn_internal.h: what it gives the session), worker_session.c the messages and
 * tasks of one connection (worker_session.h, with worker_session_report.c and
 * worker_session_fetch.c). */
#ifndef HTC_WORKER_CONN_H
#define HTC_WORKER_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "worker_opts.h"

/* Exit statuses (protocol section 1). */
#define WORKER_EXIT_OK              0
#define WORKER_EXIT_LOCAL           1
#define WORKER_EXIT_REFUSED         2
#define WORKER_EXIT_NO_MASTER       3
#define WORKER_EXIT_NEVER_CONNECTED 4 /* idle timeout without ever connecting to a master */

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
/* The work directory (valid until worker_delete). */
const char *worker_workdir(struct worker *w);
/* The exit status once the loop has returned. */
int worker_exit_status(const struct worker *w);
/* Removes the work directory (unless --keep-cache) and frees W; NULL is accepted. Run the loop
 * until it has no handles after this before closing it. */
void worker_delete(struct worker *w);

struct worker_docker;
/* The containers tasks run in (--docker), which main sets once it has started them; NULL: none.
 * D must outlive W. */
void worker_set_docker(struct worker *w, struct worker_docker *d);

#endif
