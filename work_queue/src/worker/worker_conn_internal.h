/* worker_conn_internal.h: what worker_conn.c, the connection cycle of work_queue_worker, gives the
 * code of the session it holds (worker_session*.c): the worker's loop, options, cache, resource
 * ledger and work directory, its idle clock and its exit paths. Not for other modules: the
 * program uses worker_conn.h. */
#ifndef HTC_WORKER_CONN_INTERNAL_H
#define HTC_WORKER_CONN_INTERNAL_H

#include <uv.h>

#include "worker_conn.h"
#include "worker_opts.h"

struct worker_session;
struct worker_cache;
struct worker_ledger;
struct worker_shared;

/* The session of the current connection, or NULL. */
struct worker_session *worker_session_of(struct worker *w);
uv_loop_t *worker_loop(struct worker *w);
const struct worker_opts *worker_opts_of(struct worker *w);
struct worker_cache *worker_conn_cache(struct worker *w);
/* The store shared with other workers (--shared-cache), or NULL. */
struct worker_shared *worker_conn_shared(struct worker *w);
struct worker_ledger *worker_ledger(struct worker *w);
int worker_workdir_fd(struct worker *w);
const char *worker_hostname(struct worker *w);
/* The --docker containers set by worker_set_docker, or NULL. */
struct worker_docker;
struct worker_docker *worker_docker_of(struct worker *w);
/* The watch on the container engine (worker_engine.h), with docker; else NULL. */
struct worker_engine;
struct worker_engine *worker_engine_of(struct worker *w);
/* With --pin-cores: the cpus the worker's tasks hold (made at the first call); else NULL. */
struct worker_cpus;
struct worker_cpus *worker_cpus_of(struct worker *w);
/* With --memory-grow or --memory-throttle: the elasticity of its tasks (made at the first
 * call); else NULL. */
struct worker_elastic;
struct worker_elastic *worker_elastic_of(struct worker *w);
/* Ends the worker with STATUS after a clean goodbye: kills tasks, sends bye REASON if connected,
 * closes, and stops the loop. */
void worker_finish(struct worker *w, int status, const char *reason);
/* The same from the loop's next turn, for callers inside a transfer or task callback (whose
 * module must not be deleted under it). REASON must be a static string. */
void worker_finish_soon(struct worker *w, int status, const char *reason);
/* Counts one more finished task over the worker's whole life (every connection) and returns
 * the count. */
int64_t worker_count_task(struct worker *w);
/* The tasks finished so far over the worker's whole life. */
int64_t worker_tasks_done(struct worker *w);
/* The idle clock restarts (a task arrived or ended). */
void worker_touch(struct worker *w);

#endif
