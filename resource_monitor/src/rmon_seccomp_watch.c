/* rmon_seccomp_watch.c: the service of a profile's user-notification listener and the tasks'
 * watches (see rmon_seccomp.h). A filter installed once on the spawner threads has one listener
 * for every task started under it: one thread per profile receives each refused call, finds the
 * task it belongs to (the caller's cgroup, else its ancestors), records the call's name there
 * and answers EPERM. A call whose task is not yet registered waits (the caller is blocked
 * anyway) until its task's first process is known, or is answered unrecorded after a while. */
#include "rmon_seccomp.h"
#include "rmon_seccomp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "debug.h"
#include "stringtools.h"
#include "timeutil.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

#define MAX_NAMES   64      /* distinct names kept per task */
#define MAX_DEPTH   32      /* ancestors looked at */
#define PENDING_MS  10      /* how often calls of tasks not yet known are looked at again */
#define UNROUTED_US 2000000 /* then a call that belongs to no task is answered anyway */
#define MAX_PENDING 1024

struct rmon_seccomp_watch {
	struct rmon_seccomp_watch *next, *prev;
	struct rmon_seccomp_hub *hub;
	char *cgroup; /* the group's name, NULL = none */
	pid_t pid;    /* the task's first process, 0 until known */
	char **names; /* NULL-terminated */
	size_t n_names, cap_names;
	long count;
};

struct pending {
	struct seccomp_notif *req;
	int64_t since_us;
};

struct rmon_seccomp_hub {
	pthread_mutex_t lock; /* watches, and what they record */
	struct rmon_seccomp_watch *watches;
	int fd; /* the listener, -1 until served */
	struct seccomp_notif_resp *resp;
	struct pending *pending; /* calls of tasks not known yet (service thread only) */
	size_t n_pending, cap_pending;
};

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;

/* After a fork, the child has neither the service threads nor the spawner threads: its tasks
 * will be started by new spawner threads under new filters, with new listeners. */
static void forget_hubs(void)
{
	pthread_mutex_init(&hubs_lock, NULL);
	rmon_seccomp_forget_hubs();
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_hubs);
}

/* PROG's hub, made on first use. */
static struct rmon_seccomp_hub *hub_of(const struct rmon_seccomp_prog *cprog)
{
	struct rmon_seccomp_prog *prog = (struct rmon_seccomp_prog *)cprog;
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&hubs_lock);
	if (!prog->hub) {
		struct rmon_seccomp_hub *h = xcalloc(1, sizeof *h);
		pthread_mutex_init(&h->lock, NULL);
		h->fd = -1;
		prog->hub = h;
	}
	struct rmon_seccomp_hub *h = prog->hub;
	pthread_mutex_unlock(&hubs_lock);
	return h;
}

/* ---- which task a call belongs to ---------------------------------------------------------- */

/* /proc/PID/cgroup into BUF (SIZE bytes, terminated); "" when it cannot be read. */
static void read_groups(pid_t pid, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/* 1 when GROUPS (a /proc/PID/cgroup) names a group NAME, or one nested in it. */
static int in_group(const char *groups, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = groups; (p = strstr(p, name)); p += len)
		if (p > groups && p[-1] == '/' && (p[len] == '/' || p[len] == '\n' || p[len] == 0))
			return 1;
	return 0;
}

/* The parent of PID, or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the name may hold anything but ends at the last ) */
	long pp = 0;
	if (!p || sscanf(p + 1, " %*c %ld", &pp) != 1)
		return 0;
	return (pid_t)pp;
}

/* The watch of H that a call belongs to, or NULL; with H's lock held. GROUPS is the caller's
 * /proc/PID/cgroup and CHAIN the caller and its ancestors (N of them), read before the lock was
 * taken. */
static struct rmon_seccomp_watch *owner(struct rmon_seccomp_hub *h, const char *groups,
                                        const pid_t *chain, size_t n)
{
	struct rmon_seccomp_watch *w;
	DL_FOREACH(h->watches, w)
	{
		if (w->cgroup && in_group(groups, w->cgroup))
			return w;
	}
	for (size_t i = 0; i < n; i++)
		DL_FOREACH(h->watches, w)
		{
			if (w->pid > 0 && w->pid == chain[i])
				return w;
		}
	return NULL;
}

static void record(struct rmon_seccomp_watch *w, const struct seccomp_notif *req)
{
	w->count++;
	char *name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);
	char *label = name ? xstrdup(name) : xasprintf("syscall_%d", req->data.nr);
	free(name);
	debug(D_RMON, "seccomp: refused %s (pid %u)", label, req->pid);
	for (size_t i = 0; i < w->n_names; i++)
		if (strcmp(w->names[i], label) == 0) {
			free(label);
			return;
		}
	if (w->n_names >= MAX_NAMES) {
		free(label);
		return;
	}
	VEC_RESERVE(w->names, w->cap_names, w->n_names + 2);
	w->names[w->n_names++] = label;
	w->names[w->n_names] = NULL;
}

static void answer(struct rmon_seccomp_hub *h, const struct seccomp_notif *req)
{
	memset(h->resp, 0, sizeof *h->resp);
	h->resp->id = req->id;
	h->resp->error = -EPERM;
	if (seccomp_notify_respond(h->fd, h->resp) < 0)
		debug(D_RMON, "seccomp: cannot answer pid %u (gone?)", req->pid);
}

/* Records REQ for its task and answers it: 1. 0 when its task is not known (yet) and it is
 * younger than UNROUTED_US (SINCE_US: when it came). */
static int route(struct rmon_seccomp_hub *h, const struct seccomp_notif *req, int64_t since_us)
{
	if (seccomp_notify_id_valid(h->fd, req->id) < 0)
		return 1; /* the caller is gone: nothing to answer */
	char groups[4096];
	read_groups((pid_t)req->pid, groups, sizeof groups);
	pid_t chain[MAX_DEPTH];
	size_t n = 0;
	for (pid_t p = (pid_t)req->pid; p > 1 && n < MAX_DEPTH; p = parent_of(p))
		chain[n++] = p;
	pthread_mutex_lock(&h->lock);
	struct rmon_seccomp_watch *w = owner(h, groups, chain, n);
	if (w)
		record(w, req);
	pthread_mutex_unlock(&h->lock);
	if (!w && time_monotonic_us() - since_us < UNROUTED_US)
		return 0;
	if (!w)
		debug(D_RMON, "seccomp: refused call %d of pid %u, which belongs to no task",
		      req->data.nr, req->pid);
	answer(h, req);
	return 1;
}

static void retry_pending(struct rmon_seccomp_hub *h)
{
	size_t kept = 0;
	for (size_t i = 0; i < h->n_pending; i++) {
		struct pending *p = &h->pending[i];
		if (route(h, p->req, p->since_us))
			free(p->req);
		else
			h->pending[kept++] = *p;
	}
	h->n_pending = kept;
}

static void *serve(void *arg)
{
	struct rmon_seccomp_hub *h = arg;
	for (;;) {
		struct pollfd pfd = {.fd = h->fd, .events = POLLIN};
		int r = poll(&pfd, 1, h->n_pending ? PENDING_MS : -1);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && (pfd.revents & POLLIN)) {
			struct seccomp_notif *req = NULL;
			struct seccomp_notif_resp *unused = NULL;
			if (seccomp_notify_alloc(&req, &unused) < 0)
				break;
			seccomp_notify_free(NULL, unused);
			memset(req, 0, sizeof *req);
			if (seccomp_notify_receive(h->fd, req) < 0) {
				seccomp_notify_free(req,
				                    NULL); /* the caller was killed meanwhile */
			} else if (route(h, req, time_monotonic_us())) {
				seccomp_notify_free(req, NULL);
			} else if (h->n_pending >= MAX_PENDING) {
				answer(h, req);
				seccomp_notify_free(req, NULL);
			} else {
				VEC_RESERVE(h->pending, h->cap_pending, h->n_pending + 1);
				h->pending[h->n_pending++] =
				    (struct pending){req, time_monotonic_us()};
			}
		}
		retry_pending(h);
	}
	debug(D_RMON, "seccomp: the listener's service ended: %s", strerror(errno));
	return NULL;
}

int rmon_seccomp_serve(const struct rmon_seccomp_prog *prog, int listener)
{
	struct rmon_seccomp_hub *h = hub_of(prog);
	pthread_mutex_lock(&hubs_lock);
	int busy = h->fd >= 0;
	pthread_mutex_unlock(&hubs_lock);
	if (busy)
		return -EBUSY; /* one listener per profile and process */
	struct seccomp_notif *unused = NULL;
	if (seccomp_notify_alloc(&unused, &h->resp) < 0)
		return -ENOMEM;
	seccomp_notify_free(unused, NULL);
	h->fd = listener;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int r = pthread_create(&t, &at, serve, h);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		h->fd = -1;
		seccomp_notify_free(NULL, h->resp);
		h->resp = NULL;
		return -r;
	}
	return 0;
}

/* ---- watches ------------------------------------------------------------------------------- */

struct rmon_seccomp_watch *rmon_seccomp_watch_start(const struct rmon_seccomp_prog *prog,
                                                    const char *cgroup_name)
{
	if (!prog || !prog->notify)
		return NULL;
	struct rmon_seccomp_hub *h = hub_of(prog);
	struct rmon_seccomp_watch *w = xcalloc(1, sizeof *w);
	w->hub = h;
	w->cgroup = cgroup_name ? xstrdup(cgroup_name) : NULL;
	pthread_mutex_lock(&h->lock);
	DL_APPEND(h->watches, w);
	pthread_mutex_unlock(&h->lock);
	return w;
}

void rmon_seccomp_watch_set_pid(struct rmon_seccomp_watch *w, pid_t pid)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->hub->lock);
	w->pid = pid;
	pthread_mutex_unlock(&w->hub->lock);
}

char **rmon_seccomp_watch_denied(const struct rmon_seccomp_watch *w)
{
	if (!w) {
		char **none = xcalloc(1, sizeof *none);
		return none;
	}
	pthread_mutex_lock(&w->hub->lock);
	char **copy = xcalloc(w->n_names + 1, sizeof *copy);
	for (size_t i = 0; i < w->n_names; i++)
		copy[i] = xstrdup(w->names[i]);
	pthread_mutex_unlock(&w->hub->lock);
	return copy;
}

long rmon_seccomp_watch_count(const struct rmon_seccomp_watch *w)
{
	if (!w)
		return 0;
	pthread_mutex_lock(&w->hub->lock);
	long n = w->count;
	pthread_mutex_unlock(&w->hub->lock);
	return n;
}

void rmon_seccomp_watch_delete(struct rmon_seccomp_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->hub->lock);
	DL_DELETE(w->hub->watches, w);
	pthread_mutex_unlock(&w->hub->lock);
	for (size_t i = 0; i < w->n_names; i++)
		free(w->names[i]);
	free(w->names);
	free(w->cgroup);
	free(w);
}
