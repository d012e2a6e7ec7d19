/* master_abort.c: fast abort and the host blocklist of the Work Queue master
 * (doc/work-queue-protocol.md 7.2): per-category mean wall times of completed tasks, the check
 * that cancels a task running much longer than its category's mean, the dismissal of a worker
 * after two fast aborts, and the hosts refused for a while after that. */
#include "master_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "xalloc.h"
#include "banned.h"

#define FAST_ABORT_MIN_DONE 10  /* completed tasks of a category before it can fast abort */
#define FAST_ABORT_MAX      2   /* a task is fast-aborted at most this many times */
#define SLOW_WORKER_ABORTS  2   /* fast aborts on one worker before it is dismissed */
#define SLOW_WORKER_BLOCK_S 600 /* and its host refused for this long */

/* A task that started running, as the category's list has it (the task may have ended since:
 * the entry is then stale, known by its task's state and start). */
struct started {
	int id;
	double since;
};

struct wq_abort_cat {
	char *name;
	double multiplier; /* < 0: the queue's default */
	int64_t done;
	double wall_sum;
	/* The tasks of the category that started running, oldest first (starts come in time
	 * order): the check looks at the oldest ones only, never at every running task. Stale
	 * entries leave at the head, or when the list has doubled since the last compaction. */
	struct started *run;
	size_t head, tail, cap, compact_at;
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

/* The task of entry E when it still stands for a running task (the same run: its start
 * matches); NULL when the entry is stale. */
static struct mtask *live(struct work_queue *q, const struct started *e)
{
	struct mtask *m = master_queue_task_lookup(q, e->id);
	return m && m->state == MTASK_RUNNING && m->w && m->running_since == e->since ? m : NULL;
}

/* Drops the stale entries of C (amortised: called when the list has doubled). */
static void compact(struct work_queue *q, struct wq_abort_cat *c)
{
	size_t n = 0;
	for (size_t i = c->head; i < c->tail; i++)
		if (live(q, &c->run[i]))
			c->run[n++] = c->run[i];
	c->head = 0;
	c->tail = n;
	c->compact_at = 2 * n + 64;
}

static void push(struct work_queue *q, struct mtask *m)
{
	struct wq_abort_cat *c = cat_get(q, m->t->category);
	if (c->tail - c->head >= c->compact_at)
		compact(q, c);
	if (c->tail == c->cap) {
		if (c->head > 0) { /* room at the front: move the entries down */
			memmove(c->run, c->run + c->head, (c->tail - c->head) * sizeof *c->run);
			c->tail -= c->head;
			c->head = 0;
		} else {
			c->cap = c->cap ? 2 * c->cap : 64;
			c->run = xrealloc(c->run, c->cap * sizeof *c->run);
		}
	}
	c->run[c->tail++] = (struct started){m->id, m->running_since};
}

void master_abort_started(struct work_queue *q, struct mtask *m)
{
	/* Nothing is kept while fast abort is off: turning it on takes in what runs then. */
	if (q->abort_on)
		push(q, m);
}

static int by_start(const void *a, const void *b)
{
	double x = (*(struct mtask *const *)a)->running_since;
	double y = (*(struct mtask *const *)b)->running_since;
	return x < y ? -1 : x > y;
}

/* Fast abort was just turned on: the lists are made anew from the tasks running now, in the
 * order they started (one walk of the workers, at this rare call only). */
static void seed(struct work_queue *q)
{
	struct wq_abort_cat *c, *ct;
	HASH_ITER(hh, q->abort_cats, c, ct)
	c->head = c->tail = 0;
	size_t n = 0, cap = 0;
	struct mtask **run = NULL;
	for (struct mworker *w = q->workers; w; w = w->next)
		for (struct mtask *m = w->assigned; m; m = m->wnext)
			if (m->state == MTASK_RUNNING) {
				if (n == cap) {
					cap = cap ? 2 * cap : 64;
					run = xrealloc(run, cap * sizeof *run);
				}
				run[n++] = m;
			}
	if (n)
		qsort(run, n, sizeof *run, by_start);
	for (size_t i = 0; i < n; i++)
		push(q, run[i]);
	free(run);
}

/* Whether fast abort applies to some category now; seeds the lists when it becomes so. */
static void refresh_on(struct work_queue *q)
{
	bool on = q->fast_abort > 0;
	struct wq_abort_cat *c, *ct;
	HASH_ITER(hh, q->abort_cats, c, ct)
	on = on || c->multiplier > 0;
	if (on && !q->abort_on) {
		q->abort_on = true;
		seed(q);
	}
	q->abort_on = on;
}

int master_abort_set_multiplier(struct work_queue *q, double multiplier)
{
	if (!q || isnan(multiplier))
		return -EINVAL;
	q->fast_abort = multiplier > 0 ? multiplier : 0;
	refresh_on(q);
	return 0;
}

int master_abort_set_category_multiplier(struct work_queue *q, const char *category,
                                         double multiplier)
{
	if (!q || isnan(multiplier))
		return -EINVAL;
	cat_get(q, category)->multiplier = multiplier > 0 ? multiplier : 0;
	refresh_on(q);
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
	if (!q->abort_on)
		return;
	struct wq_abort_cat *c, *ct;
	double now = master_queue_now();
	/* Per category, the oldest running tasks only: the first one under the limit ends the
	 * look (every later one started after it). Neither the queue (it may hold a million
	 * tasks waiting) nor every running task is walked. */
	HASH_ITER(hh, q->abort_cats, c, ct)
	{
		double mult = c->multiplier >= 0 ? c->multiplier : q->fast_abort;
		if (mult <= 0 || c->done < FAST_ABORT_MIN_DONE)
			continue;
		double limit = mult * (c->wall_sum / (double)c->done);
		while (c->head < c->tail) {
			struct started e = c->run[c->head];
			struct mtask *m = live(q, &e);
			if (m) {
				q->abort_examined++;
				if (now - e.since <= limit)
					break;
				/* over the limit: aborted now, or never again (it was aborted
				 * twice) */
				check_task(q, m->w, m, now);
			}
			c->head++;
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
		free(c->run);
		free(c);
	}
}
