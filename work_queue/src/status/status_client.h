/* status_client.h: a status client of a Work Queue master (doc/work-queue-protocol.md 5.11):
 * connect, go through the handshake with role "status" (password and TLS as the master needs),
 * send one `query`, collect the `query_reply` batches, and say `bye`. Used by work_queue_status
 * and work_queue_factory; asynchronous on a libuv loop, with a blocking form for tools. */
#ifndef HTC_STATUS_CLIENT_H
#define HTC_STATUS_CLIENT_H

#include <jansson.h>
#include <uv.h>

#include "wq_auth.h"
#include "wq_tls.h"

/* How to reach the master. Pointers are borrowed for the duration of the query. */
struct wq_status_opts {
	const struct wq_auth_key *key; /* the master's password, or NULL */
	struct wq_tls_config *tls;     /* a client TLS configuration, or NULL for plain TCP */
	double timeout_s;              /* the whole query; <= 0 means 10 s */
	const char *worker;            /* WHAT "drain": the worker to drain (its id) */
};

struct wq_status_query;

/* Called once from the loop: ITEMS (a JSON array the callback must json_decref) on success, or
 * NULL and ERR, one line saying what failed ("cannot connect: connection refused", "the master
 * refused: authentication failed: ..."). */
typedef void (*wq_status_cb)(json_t *items, const char *err, void *arg);

/* Starts a query of WHAT ("master", "workers", "tasks", "categories", or "drain" with
 * OPTS->worker: the master drains that worker and answers [{worker, drained: N}]) to HOST:PORT
 * (HOST is an
 * IPv4 address or a name, resolved with uv_getaddrinfo). Returns NULL with *ERR (caller frees)
 * if it cannot start; otherwise CB is called exactly once, never from inside this call. */
struct wq_status_query *wq_status_query_start(uv_loop_t *loop, const char *host, int port,
                                              const char *what, const struct wq_status_opts *opts,
                                              wq_status_cb cb, void *arg, char **err);

/* Stops a query whose callback has not run yet; the callback will not run. The memory is
 * released from the loop. NULL is accepted. */
void wq_status_query_cancel(struct wq_status_query *q);

/* The blocking form, on a private loop: the items (caller json_decrefs) or NULL with *ERR
 * (caller frees). */
json_t *wq_status_query_run(const char *host, int port, const char *what,
                            const struct wq_status_opts *opts, char **err);

#endif
