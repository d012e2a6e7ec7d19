/* rmon_cn_shared.h: one proc connector socket per libuv loop, shared by the monitors on that
 * loop (internal). Each socket gets a copy of every fork, exec and exit of the whole machine,
 * and making one costs a socket, a bind, a subscription and its poll handle: a loop that runs
 * many tasks keeps one, opened with its first monitor and closed with its last, and feeds
 * every monitor's tracker from it. */
#ifndef HTC_RMON_CN_SHARED_H
#define HTC_RMON_CN_SHARED_H

#include <uv.h>

#include "rmon_proc.h"

struct rmon_cn_loop;

/* One monitor's place on its loop's connector; embedded in the monitor. */
struct rmon_cn_entry {
	struct rmon_cn_entry *next, *prev;
	struct rmon_cn_loop *on; /* NULL when not on a list */
	struct rmon_proc *proc;  /* the tracker fed; NULL until set */
};

/* Puts E on LOOP's connector, opening it for the first entry: from now on every fork is read
 * and kept in the socket until E's tracker is set (rmon_cn_set_proc), so none of the child's is
 * missed when E is added before the child exists. 0, or -errno when no connector can be opened
 * (the monitor then relies on sampling). */
int rmon_cn_add(uv_loop_t *loop, struct rmon_cn_entry *e);
/* The tracker E feeds from now on. */
void rmon_cn_set_proc(struct rmon_cn_entry *e, struct rmon_proc *proc);
/* Reads what the connector of E's loop holds now into every tracker on it (before a sample).
 * 0, or -ENOBUFS when events were lost (every tracker then scans /proc). */
int rmon_cn_drain(struct rmon_cn_entry *e);
/* Takes E off (nothing when it is on none); the last one closes the loop's connector. */
void rmon_cn_remove(struct rmon_cn_entry *e);

#endif
