/* cluster_poller.c: one batched status call per interval for a cluster driver
 * (cluster_poller.h). */
#include "cluster_poller.h"

#include <errno.h>
#include <stdlib.h>

#include "xalloc.h"
#include "banned.h"

struct cluster_poller {
	uv_timer_t timer;
	int64_t interval_ms;
	int busy;    /* a status call is running */
	int pending; /* the timer is set */
	int64_t calls;
	void (*fn)(void *arg);
	void *arg;
};

static void on_timer(uv_timer_t *t)
{
	struct cluster_poller *p = t->data;
	p->pending = 0;
	p->busy = 1;
	p->calls++;
	p->fn(p->arg);
}

struct cluster_poller *cluster_poller_new(uv_loop_t *loop, int64_t interval_ms,
                                          void (*fn)(void *arg), void *arg)
{
	if (!loop || !fn || interval_ms <= 0) {
		errno = EINVAL;
		return NULL;
	}
	struct cluster_poller *p = xcalloc(1, sizeof *p);
	uv_timer_init(loop, &p->timer);
	p->timer.data = p;
	p->interval_ms = interval_ms;
	p->fn = fn;
	p->arg = arg;
	return p;
}

void cluster_poller_set_interval(struct cluster_poller *p, int64_t interval_ms)
{
	if (interval_ms > 0)
		p->interval_ms = interval_ms;
}

static void arm(struct cluster_poller *p)
{
	p->pending = 1;
	uv_timer_start(&p->timer, on_timer, (uint64_t)p->interval_ms, 0);
}

void cluster_poller_kick(struct cluster_poller *p)
{
	if (!p->busy && !p->pending)
		arm(p);
}

void cluster_poller_done(struct cluster_poller *p, int more)
{
	p->busy = 0;
	if (more)
		arm(p);
}

int cluster_poller_busy(const struct cluster_poller *p)
{
	return p->busy;
}

int64_t cluster_poller_calls(const struct cluster_poller *p)
{
	return p->calls;
}

static void on_close(uv_handle_t *h)
{
	free(h->data);
}

void cluster_poller_delete(struct cluster_poller *p)
{
	if (!p)
		return;
	uv_timer_stop(&p->timer);
	uv_close((uv_handle_t *)&p->timer, on_close);
}
