/* rmon_sigchld.h: one SIGCHLD handle per libuv loop, shared by the monitors on that loop
 * (internal). Starting and stopping a uv_signal_t per task costs a handful of system calls
 * each (libuv blocks signals and takes its signal lock through a pipe, and installs or removes
 * the handler when the first or last one comes and goes); a loop that runs many tasks keeps
 * one, started with its first monitor and closed with its last. */
#ifndef HTC_RMON_SIGCHLD_H
#define HTC_RMON_SIGCHLD_H

#include <uv.h>

struct rmon_sigchld_loop;

/* One monitor's place on its loop's list; embedded in the monitor. */
struct rmon_sigchld_entry {
	struct rmon_sigchld_entry *next, *prev;
	struct rmon_sigchld_loop *on; /* NULL when not on a list */
	void (*fn)(void *arg);
	void *arg;
};

/* Puts E on LOOP's list: FN(ARG) is called for every SIGCHLD the loop sees from now on (a
 * signal may stand for several children). 0, or a libuv error when the handle cannot start. */
int rmon_sigchld_add(uv_loop_t *loop, struct rmon_sigchld_entry *e, void (*fn)(void *arg),
                     void *arg);
/* Takes E off its list (nothing when it is on none); the last one closes the loop's handle.
 * Never from inside a FN (see rmon_sigchld.c): when the monitor is freed, in a close
 * callback. */
void rmon_sigchld_remove(struct rmon_sigchld_entry *e);

#endif
