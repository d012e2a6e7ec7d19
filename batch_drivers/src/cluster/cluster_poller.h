/* cluster_poller.h: the periodic status watcher of a cluster driver. Every INTERVAL the poller
 * calls the driver's batched status function once, for all its jobs (one squeue, one list call),
 * never once per job; the next call is INTERVAL after that one has answered
 * (cluster_poller_done), so calls never overlap however slow the scheduler is. It runs only
 * while the driver has unfinished jobs: the driver kicks it when it submits. */
#ifndef HTC_CLUSTER_POLLER_H
#define HTC_CLUSTER_POLLER_H

#include <stdint.h>
#include <uv.h>

struct cluster_poller;

/* FN(ARG) starts one status call; the driver calls cluster_poller_done when it has answered.
 * INTERVAL_MS > 0. Returns NULL with errno set. */
struct cluster_poller *cluster_poller_new(uv_loop_t *loop, int64_t interval_ms,
                                          void (*fn)(void *arg), void *arg);
/* Changes the interval (the next wait uses it). */
void cluster_poller_set_interval(struct cluster_poller *p, int64_t interval_ms);
/* Makes sure a status call comes within the interval (no effect while one is waiting or
 * running). */
void cluster_poller_kick(struct cluster_poller *p);
/* The status call started by FN has answered. MORE: the driver still has unfinished jobs, so
 * the next call is scheduled; 0 lets the poller sleep until the next kick. */
void cluster_poller_done(struct cluster_poller *p, int more);
/* 1 while a status call is running (between FN and cluster_poller_done). */
int cluster_poller_busy(const struct cluster_poller *p);
/* How many status calls were made (for tests and statistics). */
int64_t cluster_poller_calls(const struct cluster_poller *p);
/* Stops and frees the poller (asynchronously: the loop must run). FN is not called again;
 * a call in progress may still call cluster_poller_done: it must not, after this. */
void cluster_poller_delete(struct cluster_poller *p);

#endif
