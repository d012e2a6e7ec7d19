/* rmon_sigchld.c: the SIGCHLD handle of each loop, shared by its monitors (rmon_sigchld.h).
 *
 * A dispatch walks the list with the next entry saved, so FN may end its own monitor. An entry
 * leaves the list only when its monitor is freed, which happens in a close callback, never
 * inside a dispatch: the saved next entry is still there when the walk reaches it. Entries
 * added during a dispatch go to the head and are not visited by it; a child of theirs that
 * ends raises a SIGCHLD of its own. Loops of different threads each have their own handle; the
 * list of handles is locked. */
#include "rmon_sigchld.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <utlist.h>

#include "xalloc.h"
#include "banned.h"

struct rmon_sigchld_loop {
	struct rmon_sigchld_loop *next;
	uv_loop_t *loop;
	uv_signal_t *sig;
	struct rmon_sigchld_entry *head;
};

static pthread_mutex_t loops_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmon_sigchld_loop *loops;

static void on_signal(uv_signal_t *h, int signum)
{
	(void)signum;
	struct rmon_sigchld_loop *l = h->data;
	struct rmon_sigchld_entry *e = l->head, *next;
	for (; e; e = next) {
		next = e->next;
		e->fn(e->arg);
	}
}

static void on_closed(uv_handle_t *h)
{
	free(h);
}

int rmon_sigchld_add(uv_loop_t *loop, struct rmon_sigchld_entry *e, void (*fn)(void *arg),
                     void *arg)
{
	pthread_mutex_lock(&loops_lock);
	struct rmon_sigchld_loop *l;
	LL_SEARCH_SCALAR(loops, l, loop, loop);
	if (!l) {
		l = xcalloc(1, sizeof *l);
		l->loop = loop;
		l->sig = xmalloc(sizeof *l->sig);
		int r = uv_signal_init(loop, l->sig);
		if (r == 0) {
			l->sig->data = l;
			r = uv_signal_start(l->sig, on_signal, SIGCHLD);
			if (r < 0)
				uv_close((uv_handle_t *)l->sig, on_closed);
		} else {
			free(l->sig);
		}
		if (r < 0) {
			free(l);
			pthread_mutex_unlock(&loops_lock);
			return r;
		}
		/* The monitors keep the loop alive, not this handle. */
		uv_unref((uv_handle_t *)l->sig);
		LL_PREPEND(loops, l);
	}
	e->fn = fn;
	e->arg = arg;
	e->on = l;
	DL_PREPEND(l->head, e);
	pthread_mutex_unlock(&loops_lock);
	return 0;
}

void rmon_sigchld_remove(struct rmon_sigchld_entry *e)
{
	struct rmon_sigchld_loop *l = e->on;
	if (!l)
		return;
	pthread_mutex_lock(&loops_lock);
	DL_DELETE(l->head, e);
	e->on = NULL;
	if (!l->head) {
		LL_DELETE(loops, l);
		uv_close((uv_handle_t *)l->sig, on_closed);
		free(l);
	}
	pthread_mutex_unlock(&loops_lock);
}
