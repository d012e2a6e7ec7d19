/* rmon_seccomp_internal.h: what the profiles (rmon_seccomp.c) and the listener's service
 * (rmon_seccomp_watch.c) share inside the module: the compiled filter, and the call that hands
 * a freshly installed filter's listener to its service thread. */
#ifndef HTC_RMON_SECCOMP_INTERNAL_H
#define HTC_RMON_SECCOMP_INTERNAL_H

#include <linux/filter.h>

struct rmon_seccomp_hub;

struct rmon_seccomp_prog {
	struct sock_fprog fprog;
	int notify;
	struct rmon_seccomp_hub *hub; /* its listener's service, made on first use (hubs_lock) */
};

/* Serves LISTENER, the listener of PROG's filter just installed on this thread, from a thread
 * of its own (started here; it inherits the filter, which it never triggers). 0 or -errno. */
int rmon_seccomp_serve(const struct rmon_seccomp_prog *prog, int listener);

/* In a child after fork: every profile's hub is forgotten (its thread is not in the child). */
void rmon_seccomp_forget_hubs(void);

#endif
