/* wq_probe.h: one short plain connection to a peer that closed the handshake without a
 * word, asking it the CCTools status query, so that the worker and work_queue_status can say
 * "this is a CCTools master" instead of retrying or failing vaguely (doc/work-queue-protocol.md,
 * 3.3). */
#ifndef HTC_WQ_PROBE_H
#define HTC_WQ_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct wq_probe;

/* Called once with CCTOOLS true and a one-line TEXT when the peer answered as a CCTools master,
 * else false and "" (no answer, another answer, a timeout, an error). */
typedef void (*wq_probe_cb)(void *arg, bool cctools, const char *text);

/* Connects to ADDR, sends the probe and reads the answer for at most TIMEOUT_MS. Never NULL. */
struct wq_probe *wq_probe_start(uv_loop_t *loop, const struct sockaddr *addr, uint64_t timeout_ms,
                                wq_probe_cb cb, void *arg);

/* Stops P without calling its callback (NULL is accepted). Its handles close on the loop. */
void wq_probe_cancel(struct wq_probe *p);

#endif
