/* wq_factory_pool.c: the factory's record of the workers it started, and the
 * resource-preparing latency measured from it (wq_factory_pool.h). */
#include "wq_factory_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_run.h"
#include "debug.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

void wq_factory_pool_init(struct wq_factory_pool *p, double latency0)
{
	memset(p, 0, sizeof *p);
	if (cluster_run_id_random(p->run) < 0) {
		/* no entropy source: unique enough on one machine for one user's factories */
		snprintf(p->run, sizeof p->run, "%016llx%016llx", (unsigned long long)time(NULL),
		         (unsigned long long)getpid());
	}
	p->latency = latency0;
}

void wq_factory_pool_clear(struct wq_factory_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->jobs[i].worker_id);
	free(p->jobs);
	memset(p, 0, sizeof *p);
}

const char *wq_factory_pool_prefix(const struct wq_factory_pool *p, char *buf, size_t len)
{
	snprintf(buf, len, "wqf-%s-", p->run);
	return buf;
}

struct wq_factory_job *wq_factory_pool_add(struct wq_factory_pool *p, double now)
{
	struct wq_factory_job j = {.id = -1, .requested_at = now};
	snprintf(j.token, sizeof j.token, "wqf-%s-%lld", p->run, (long long)++p->next);
	VEC_PUSH(p->jobs, p->n, p->cap, j);
	return &p->jobs[p->n - 1];
}

void wq_factory_pool_set_id(struct wq_factory_pool *p, const char *token, int64_t id)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->jobs[i].token, token))
			p->jobs[i].id = id;
}

int wq_factory_pool_remove(struct wq_factory_pool *p, int64_t id)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->jobs[i].id == id) {
			free(p->jobs[i].worker_id);
			p->jobs[i] = p->jobs[--p->n];
			return 1;
		}
	return 0;
}

void wq_factory_pool_observe(struct wq_factory_pool *p, struct scaler_input *in, double now)
{
	for (size_t w = 0; w < in->n_workers; w++) {
		const struct scaler_worker *sw = &in->workers[w];
		if (!sw->token)
			continue;
		for (size_t i = 0; i < p->n; i++) {
			struct wq_factory_job *j = &p->jobs[i];
			if (strcmp(j->token, sw->token))
				continue;
			if (j->connected_at == 0) {
				j->connected_at = now;
				double sample = now - j->requested_at;
				p->latency = p->samples++ == 0 ? sample : (p->latency + sample) / 2;
				debug(D_FACTORY,
				      "%s connected as %s after %.1f s (estimate %.1f s)", j->token,
				      sw->id, sample, p->latency);
			}
			if (!j->worker_id || strcmp(j->worker_id, sw->id)) {
				free(j->worker_id);
				j->worker_id = xstrdup(sw->id);
			}
			if (sw->draining)
				j->draining = true;
		}
	}
	in->pool = (int)p->n;
	in->pending = in->draining = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (p->jobs[i].connected_at == 0)
			in->pending++;
		if (p->jobs[i].draining)
			in->draining++;
	}
	if (p->latency > 0)
		in->latency = p->latency;
}

struct wq_factory_job *wq_factory_pool_by_worker(struct wq_factory_pool *p, const char *worker_id)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->jobs[i].worker_id && !strcmp(p->jobs[i].worker_id, worker_id))
			return &p->jobs[i];
	return NULL;
}
