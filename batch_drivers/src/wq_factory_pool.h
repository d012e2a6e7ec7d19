/* wq_factory_pool.h: the workers work_queue_factory started, one entry per batch job: the token
 * the worker carries (`--feature wqf-RUN-N`, RUN the factory's run id, so its row in the master's
 * status names its job), when it was requested and when it connected. From these come the
 * resource-preparing latency (request -> connected) per driver, as a recent estimate, and the pool
 * counts the scalers see. */
#ifndef HTC_WQ_FACTORY_POOL_H
#define HTC_WQ_FACTORY_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler.h"

struct wq_factory_job {
	int64_t id;          /* the batch job */
	char token[64];      /* wqf-RUN-N */
	double requested_at; /* seconds, the factory's clock */
	double connected_at; /* 0 until its row is seen */
	bool draining;       /* told to drain */
	char *worker_id;     /* its id at the master once seen */
};

struct wq_factory_pool {
	char run[33]; /* the run id (32 hex digits, cluster_run.h) of this factory run */
	int64_t next; /* tokens given */
	struct wq_factory_job *jobs;
	size_t n, cap;
	double latency; /* the estimate: exponentially weighted, the newest sample weighs 1/2 */
	int samples;
};

/* A pool with a fresh random run name; LATENCY0 is the estimate until a sample is measured. */
void wq_factory_pool_init(struct wq_factory_pool *p, double latency0);
void wq_factory_pool_clear(struct wq_factory_pool *p);
/* The token prefix of this run's workers ("wqf-RUN-"), into BUF. */
const char *wq_factory_pool_prefix(const struct wq_factory_pool *p, char *buf, size_t len);
/* A new entry requested at NOW; its token is written into the entry. Returns it (valid until
 * the next add or remove). */
struct wq_factory_job *wq_factory_pool_add(struct wq_factory_pool *p, double now);
/* Sets the job id of the entry with TOKEN. */
void wq_factory_pool_set_id(struct wq_factory_pool *p, const char *token, int64_t id);
/* The job ID ended: its entry goes. Returns 1 if it was there. */
int wq_factory_pool_remove(struct wq_factory_pool *p, int64_t id);
/* Marks entries whose token is among IN's worker rows as connected (a latency sample each at
 * NOW) and notes their worker ids; fills IN's pool, pending and draining counts. */
void wq_factory_pool_observe(struct wq_factory_pool *p, struct scaler_input *in, double now);
/* The entry whose worker has id WORKER_ID, or NULL. */
struct wq_factory_job *wq_factory_pool_by_worker(struct wq_factory_pool *p, const char *worker_id);

#endif
