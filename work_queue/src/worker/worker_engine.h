/* worker_engine.h: a watch on a work_queue_worker's container engine: every period it asks the
 * engine (`GET /_ping`, in libuv's thread pool, never on the loop) and calls back when the
 * answer changes, so that the worker withdraws its containers while the engine is down and
 * offers them again when it answers (doc/work-queue-docker.md, "An engine that stops
 * answering"). Its timer does not keep the loop alive. */
#ifndef HTC_WORKER_ENGINE_H
#define HTC_WORKER_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct worker_engine;

/* FN(UP, WHY, ARG): the engine answers (UP) or not, WHY the client's error (NULL when UP). */
typedef void (*worker_engine_fn)(bool up, const char *why, void *arg);

/* Watches the engine at SOCKET (a path) every PERIOD_MS, starting up. NULL on a bad argument. */
struct worker_engine *worker_engine_create(uv_loop_t *loop, const char *socket, uint64_t period_ms,
                                           worker_engine_fn fn, void *arg);
/* Asks now (after a task found the engine gone) rather than at the next period. */
void worker_engine_check(struct worker_engine *e);
/* The engine answered at the last check. */
bool worker_engine_up(const struct worker_engine *e);
/* Tells it the engine did not answer (a task found it gone): calls FN at once if that is a
 * change, and checks again at the next period. */
void worker_engine_down(struct worker_engine *e, const char *why);
/* Stops the watch (a check in flight ends first, without calling FN). NULL is ok. */
void worker_engine_delete(struct worker_engine *e);

#endif
