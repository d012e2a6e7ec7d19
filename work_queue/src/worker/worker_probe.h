/* worker_probe.h: one short plain connection to a peer that closed the handshake without a
 * word, asking it the CCTools status query, so that the worker can say "this is a CCTools
 * master" instead of retrying for ever (doc/work-queue-protocol.md, 3.3). */
#ifndef HTC_WORKER_PROBE_H
#define HTC_WORKER_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct worker_probe;

/* Called once with CCTOOLS true and a one-line TEXT when the peer answered as a CCTools master,
 * else false and "" (no answer, another answer, a timeout, an error). */
typedef void (*worker_probe_cb)(void *arg, bool cctools, const char *text);

/* Connects to ADDR, sends the probe and reads the answer for at most TIMEOUT_MS. Never NULL. */
struct worker_probe *worker_probe_start(uv_loop_t *loop, const struct sockaddr *addr,
                                        uint64_t timeout_ms, worker_probe_cb cb, void *arg);

/* Stops P without calling its callback (NULL is accepted). Its handles close on the loop. */
void worker_probe_cancel(struct worker_probe *p);

#endif
