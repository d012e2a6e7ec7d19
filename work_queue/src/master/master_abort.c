/* master_abort.c: fast abort and the host blocklist of the Work Queue master
 * (doc/work-queue-protocol.md 7.2): per-category mean wall times of completed tasks, the check
 * that cancels a task running much longer than its category's mean, the dismissal of a worker
 * after two fast aborts, and the hosts refused for a while after that. */
#include "master_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "debug.h"
#include "xalloc.h"
#include "banned.h"

#define FAST_ABORT_MIN_DONE 10  /* completed tasks of a category before it can fast abort */
#define FAST_ABORT_MAX      2   /* a task is fast-aborted at most this many times */
#define SLOW_WORKER_ABORTS  2   /* fast aborts on one worker before it is dismissed */
#define SLOW_WORKER_BLOCK_S 600 /* and its host refused for this long */

struct wq_abort_cat {
	char *name;
	double multiplier; /* < 0: the queue's default */
	int64_t done;
	double wall_sum;
	UT_hash_handle hh;
};

struct wq_block {
	char *host;
	double until; /* master_queue_now() seconds; 0 = for ever */
	UT_hash_handle hh;
};

static struct wq_abort_cat *cat_get(struct work_queue *q, const char *name)
{
	if (!name)
		name = "default";
	struct wq_abort_cat *c = NULL;
	HASH_FIND_STR(q->abort_cats, name, c);
	if (!c) {
		c = xcalloc(1, sizeof *c);
		c->name = xstrdup(name);
		c->multiplier = -1;
		HASH_ADD_KEYPTR(hh, q->abort_cats, c->name, strlen(c->name), c);
	}
	return c;
}

int master_abort_set_multiplier(struct work_queue *q, double multiplier)
{
	if (!q || isnan(multiplier))
		return -EINVAL;
	q->fast_abort = multiplier > 0 ? multiplier : 0;
	return 0;
}

int master_abort_set_category_multiplier(struct work_queue *q, const char *category,
                                         double multiplier)
{
	if (!q || isnan(multiplier))
		return -EINVAL;
	cat_get(q, category)->multiplier = multiplier > 0 ? multiplier : 0;
	return 0;
}

void master_abort_record(struct work_queue *q, const char *category, double wall_s)
{
	if (wall_s < 0)
		return;
	struct wq_abort_cat *c = cat_get(q, category);
	c->done++;
	c->wall_sum += wall_s;
}

/* Fast-aborts M, running on W, if it ran longer than its category's multiple of the mean;
 * true when W was ended for it (its list of tasks is then gone). */
static bool check_task(struct work_queue *q, struct mworker *w, struct mtask *m, double now)
{
	if (m->state != MTASK_RUNNING || m->t->fast_aborts >= FAST_ABORT_MAX)
		return false;
	struct wq_abort_cat *c = cat_get(q, m->t->category);
	double mult = c->multiplier >= 0 ? c->multiplier : q->fast_abort;
	if (mult <= 0 || c->done < FAST_ABORT_MIN_DONE)
		return false;
	double mean = c->wall_sum / (double)c->done;
	if (now - m->running_since <= mult * mean)
		return false;
	notice("%s: task %d fast-aborted after %.1f s (category %s mean %.2f s)", w->label, m->id,
	       now - m->running_since, c->name, mean);
	m->t->fast_aborts++;
	master_sched_task_release(q->sched, m->st, now);
	master_dispatch_cancel(w, m, "fast abort");
	/* waits for the worker's task_cancelled before it can run again (7.2) */
	m->state = MTASK_CANCELLING;
	if (++w->fast_aborts >= SLOW_WORKER_ABORTS && w->host) {
		master_abort_block_host(q, w->host, SLOW_WORKER_BLOCK_S);
		master_worker_end(w, false, "fast abort: slow worker", SLOW_WORKER_BLOCK_S);
		return true;
	}
	return false;
}

void master_abort_check(struct work_queue *q)
{
	bool any = q->fast_abort > 0;
	struct wq_abort_cat *c, *ct;
	HASH_ITER(hh, q->abort_cats, c, ct)
	any = any || c->multiplier > 0;
	if (!any)
		return;
	double now = master_queue_now();
	/* only the tasks on workers can run: walk the workers' lists, not the whole queue (it may
	 * hold a million tasks waiting) */
	for (struct mworker *w = q->workers, *wn; w; w = wn) {
		wn = w->next;
		for (struct mtask *m = w->assigned, *mn; m; m = mn) {
			mn = m->wnext;
			q->abort_examined++;
			if (check_task(q, w, m, now))
				break; /* W was ended: its list is gone */
		}
	}
}

void master_abort_block_host(struct work_queue *q, const char *host, double seconds)
{
	struct wq_block *b = NULL;
	HASH_FIND_STR(q->blocked, host, b);
	if (!b) {
		b = xcalloc(1, sizeof *b);
		b->host = xstrdup(host);
		HASH_ADD_KEYPTR(hh, q->blocked, b->host, strlen(b->host), b);
	}
	b->until = seconds > 0 ? master_queue_now() + seconds : 0;
}

double master_abort_blocked_for(struct work_queue *q, const char *host)
{
	struct wq_block *b = NULL;
	if (host)
		HASH_FIND_STR(q->blocked, host, b);
	if (!b)
		return 0;
	if (b->until == 0)
		return INFINITY;
	double left = b->until - master_queue_now();
	if (left <= 0) {
		HASH_DEL(q->blocked, b);
		free(b->host);
		free(b);
		return 0;
	}
	return left;
}

int master_abort_block_workers(struct work_queue *q, const char *host, double seconds)
{
	if (!q || !host || !*host || seconds < 0)
		return -EINVAL;
	master_abort_block_host(q, host, seconds);
	for (struct mworker *w = q->workers, *n; w; w = n) {
		n = w->next;
		if (w->host && !strcmp(w->host, host) && !w->status_client)
			master_worker_end(w, false, "host blocked",
			                  seconds > 0 ? (int)ceil(seconds) : 600);
	}
	return 0;
}

int master_abort_unblock(struct work_queue *q, const char *host)
{
	struct wq_block *b = NULL;
	if (!q || !host)
		return -EINVAL;
	HASH_FIND_STR(q->blocked, host, b);
	if (!b)
		return -ENOENT;
	HASH_DEL(q->blocked, b);
	free(b->host);
	free(b);
	return 0;
}

void master_abort_free(struct work_queue *q, bool categories)
{
	struct wq_block *b, *bt;
	HASH_ITER(hh, q->blocked, b, bt)
	{
		HASH_DEL(q->blocked, b);
		free(b->host);
		free(b);
	}
	if (!categories)
		return;
	struct wq_abort_cat *c, *ct;
	HASH_ITER(hh, q->abort_cats, c, ct)
	{
		HASH_DEL(q->abort_cats, c);
		free(c->name);
		free(c);
	}
}
