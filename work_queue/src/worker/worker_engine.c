/* worker_engine.c: the watch on the container engine (see worker_engine.h): a repeating timer
 * that queues one ping at a time in the thread pool, each with a client of its own, and calls
 * back on a change of the answer. */
#include "worker_engine.h"

#include <stdlib.h>

#include "debug.h"
#include "docker_api.h"
#include "xalloc.h"

#include "banned.h"

#define PING_TIMEOUT_MS 5000

struct worker_engine {
	uv_loop_t *loop;
	uv_timer_t *timer;
	uv_work_t work;
	char *socket;
	worker_engine_fn fn;
	void *arg;
	bool up;
	bool busy;    /* a ping in the thread pool */
	bool deleted; /* freed when the ping in flight ends */
	bool result;  /* the ping's answer (thread) */
	char *why;    /* its error (thread), caller frees */
};

static void ping_work(uv_work_t *w)
{
	struct worker_engine *e = w->data;
	char *err = NULL;
	struct docker_api *api = docker_api_create(e->socket, &err);
	e->result = false;
	if (api) {
		docker_api_set_timeout(api, PING_TIMEOUT_MS);
		e->result = docker_api_ping(api, &err) == 0;
		docker_api_delete(api);
	}
	e->why = e->result ? NULL : (err ? err : xstrdup("no answer"));
	if (e->result)
		free(err);
}

static void engine_free(struct worker_engine *e)
{
	free(e->socket);
	free(e->why);
	free(e);
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static void set_state(struct worker_engine *e, bool up, const char *why)
{
	if (up == e->up)
		return;
	e->up = up;
	e->fn(up, why, e->arg);
}

static void ping_after(uv_work_t *w, int status)
{
	(void)status;
	struct worker_engine *e = w->data;
	e->busy = false;
	if (e->deleted) {
		engine_free(e);
		return;
	}
	char *why = e->why;
	e->why = NULL;
	set_state(e, e->result, why);
	free(why);
}

void worker_engine_check(struct worker_engine *e)
{
	if (!e || e->busy || e->deleted)
		return;
	e->busy = true;
	e->work.data = e;
	if (uv_queue_work(e->loop, &e->work, ping_work, ping_after) < 0)
		e->busy = false;
}

static void on_tick(uv_timer_t *t)
{
	worker_engine_check(t->data);
}

struct worker_engine *worker_engine_create(uv_loop_t *loop, const char *socket, uint64_t period_ms,
                                           worker_engine_fn fn, void *arg)
{
	if (!loop || !socket || !fn || period_ms == 0)
		return NULL;
	struct worker_engine *e = xcalloc(1, sizeof *e);
	e->loop = loop;
	e->socket = xstrdup(socket);
	e->fn = fn;
	e->arg = arg;
	e->up = true;
	e->timer = xmalloc(sizeof *e->timer);
	uv_timer_init(loop, e->timer);
	e->timer->data = e;
	uv_timer_start(e->timer, on_tick, period_ms, period_ms);
	uv_unref((uv_handle_t *)e->timer);
	return e;
}

bool worker_engine_up(const struct worker_engine *e)
{
	return e->up;
}

void worker_engine_down(struct worker_engine *e, const char *why)
{
	if (e && !e->deleted)
		set_state(e, false, why);
}

void worker_engine_delete(struct worker_engine *e)
{
	if (!e)
		return;
	uv_timer_stop(e->timer);
	uv_close((uv_handle_t *)e->timer, timer_closed);
	e->timer = NULL;
	if (e->busy)
		e->deleted = true;
	else
		engine_free(e);
}
