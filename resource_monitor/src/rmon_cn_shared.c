/* rmon_cn_shared.c: the proc connector of each loop, shared by its monitors (rmon_cn_shared.h).
 * While an entry has no tracker yet (its child is being started), nothing is read, so the
 * child's first forks wait in the socket for it. Loops of different threads each have their
 * own socket; the list of loops is locked, and each loop's entries are used only from its
 * thread. */
#include "rmon_cn_shared.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <utlist.h>
#include <unistd.h>

#include "debug.h"
#include "xalloc.h"
#include "banned.h"

#define MAX_FED 64 /* trackers fed per read; more are fed by further reads */

/* After a read, the socket is left alone this long: every process event of the machine comes
 * to every connector, and with one worker per core or more, reading each as it comes woke
 * every worker for every fork anywhere. The events wait in the socket (4 MB) and nothing is
 * lost by reading them later: every sample and every task's end read them first. */
#define PAUSE_MS 100

struct rmon_cn_loop {
	struct rmon_cn_loop *next;
	uv_loop_t *loop;
	int fd;
	uv_poll_t *poll;
	uv_timer_t *pause; /* restarts the poll after PAUSE_MS */
	int open_handles;  /* freed when both are closed */
	struct rmon_cn_entry *head;
};

static pthread_mutex_t loops_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmon_cn_loop *loops;

static int drain(struct rmon_cn_loop *l)
{
	struct rmon_proc *ps[MAX_FED];
	size_t n = 0;
	for (struct rmon_cn_entry *e = l->head; e; e = e->next) {
		if (!e->proc)
			return 0; /* a child is being started: its forks wait for its tracker */
		if (n < MAX_FED)
			ps[n++] = e->proc;
	}
	int r = rmon_proc_connector_read(l->fd, ps, n);
	if (r == -ENOBUFS)
		debug(D_RMON, "proc connector overflow: some short-lived processes may be missed");
	return r;
}

static void on_readable(uv_poll_t *h, int status, int events);

static void on_pause_end(uv_timer_t *t)
{
	struct rmon_cn_loop *l = t->data;
	uv_poll_start(l->poll, UV_READABLE, on_readable);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	(void)events;
	if (status < 0)
		return;
	struct rmon_cn_loop *l = h->data;
	drain(l);
	uv_poll_stop(l->poll);
	uv_timer_start(l->pause, on_pause_end, PAUSE_MS, 0);
}

static void on_closed(uv_handle_t *h)
{
	struct rmon_cn_loop *l = h->data;
	free(h);
	if (--l->open_handles > 0)
		return;
	close(l->fd);
	free(l);
}

int rmon_cn_add(uv_loop_t *loop, struct rmon_cn_entry *e)
{
	pthread_mutex_lock(&loops_lock);
	struct rmon_cn_loop *l;
	LL_SEARCH_SCALAR(loops, l, loop, loop);
	if (!l) {
		int fd = rmon_proc_connector_open();
		if (fd < 0) {
			pthread_mutex_unlock(&loops_lock);
			return fd;
		}
		l = xcalloc(1, sizeof *l);
		l->loop = loop;
		l->fd = fd;
		l->poll = xmalloc(sizeof *l->poll);
		int r = uv_poll_init(loop, l->poll, fd);
		if (r < 0) {
			free(l->poll);
			free(l);
			close(fd);
			pthread_mutex_unlock(&loops_lock);
			return -EIO;
		}
		l->pause = xmalloc(sizeof *l->pause);
		uv_timer_init(loop, l->pause);
		l->poll->data = l->pause->data = l;
		l->open_handles = 2;
		uv_poll_start(l->poll, UV_READABLE, on_readable);
		uv_unref((uv_handle_t *)l->poll); /* the monitors keep the loop alive */
		uv_unref((uv_handle_t *)l->pause);
		LL_PREPEND(loops, l);
	}
	e->on = l;
	e->proc = NULL;
	DL_PREPEND(l->head, e);
	pthread_mutex_unlock(&loops_lock);
	return 0;
}

void rmon_cn_set_proc(struct rmon_cn_entry *e, struct rmon_proc *proc)
{
	e->proc = proc;
}

int rmon_cn_drain(struct rmon_cn_entry *e)
{
	return e->on ? drain(e->on) : 0;
}

void rmon_cn_remove(struct rmon_cn_entry *e)
{
	struct rmon_cn_loop *l = e->on;
	if (!l)
		return;
	pthread_mutex_lock(&loops_lock);
	/* What is waiting belongs to this tracker too: read it while E is still fed. */
	if (e->proc)
		drain(l);
	DL_DELETE(l->head, e);
	e->on = NULL;
	e->proc = NULL;
	if (!l->head) {
		LL_DELETE(loops, l);
		uv_close((uv_handle_t *)l->poll, on_closed); /* the socket after its poll */
		uv_close((uv_handle_t *)l->pause, on_closed);
	}
	pthread_mutex_unlock(&loops_lock);
}
