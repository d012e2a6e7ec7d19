/* worker_queue.c: the FIFO of tasks a work_queue_worker accepted `queued` (protocol 5.6): a
 * doubly linked list in arrival order, bounded by the worker's queue_max, whose heads are
 * committed in the resource ledger in order as resources free. */
#include "worker_queue.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <utlist.h>

#include "xalloc.h"
#include "banned.h"

struct qnode {
	void *item;
	struct wq_resources r;
	struct qnode *prev, *next;
};

struct worker_queue {
	struct qnode *head;
	size_t n;
	int max;
};

static int clamp_max(int max)
{
	if (max < 1)
		return 1;
	return max > WQ_QUEUE_MAX ? WQ_QUEUE_MAX : max;
}

struct worker_queue *worker_queue_create(int max)
{
	struct worker_queue *q = xcalloc(1, sizeof *q);
	q->max = clamp_max(max);
	return q;
}

void worker_queue_delete(struct worker_queue *q)
{
	if (!q)
		return;
	struct qnode *x, *tmp;
	DL_FOREACH_SAFE(q->head, x, tmp)
	{
		DL_DELETE(q->head, x);
		free(x);
	}
	free(q);
}

int worker_queue_default_max(double cores)
{
	double v = isfinite(cores) && cores > 0 ? floor(2 * cores) : 1;
	return v > WQ_QUEUE_MAX ? WQ_QUEUE_MAX : clamp_max((int)v);
}

int worker_queue_max(const struct worker_queue *q)
{
	return q->max;
}

size_t worker_queue_length(const struct worker_queue *q)
{
	return q->n;
}

int worker_queue_push(struct worker_queue *q, void *item, const struct wq_resources *r)
{
	if (q->n >= (size_t)q->max)
		return -EBUSY;
	struct qnode *x = xcalloc(1, sizeof *x);
	x->item = item;
	x->r = *r;
	DL_APPEND(q->head, x);
	q->n++;
	return 0;
}

bool worker_queue_remove(struct worker_queue *q, void *item)
{
	struct qnode *x;
	DL_FOREACH(q->head, x)
	{
		if (x->item == item) {
			DL_DELETE(q->head, x);
			free(x);
			q->n--;
			return true;
		}
	}
	return false;
}

void *worker_queue_head(const struct worker_queue *q, struct wq_resources *r)
{
	if (!q->head)
		return NULL;
	if (r)
		*r = q->head->r;
	return q->head->item;
}

int worker_queue_run(struct worker_queue *q, struct worker_ledger *l, worker_queue_alloc_fn alloc,
                     worker_queue_committed_fn committed, void *arg)
{
	int n = 0;
	while (q->head) {
		struct qnode *x = q->head;
		if (worker_ledger_commit(l, &x->r, alloc(x->item, arg), NULL) != WORKER_FIT_OK)
			break;
		void *item = x->item;
		DL_DELETE(q->head, x);
		free(x);
		q->n--;
		n++;
		if (committed)
			committed(item, arg);
	}
	return n;
}

void *worker_queue_stuck(struct worker_queue *q, struct worker_ledger *l, const char **code,
                         char **text)
{
	*code = NULL;
	*text = NULL;
	if (!q->head || !worker_ledger_idle(l))
		return NULL;
	enum worker_fit fit = worker_ledger_check(l, &q->head->r, text);
	if (fit == WORKER_FIT_OK)
		return NULL;
	*code = fit == WORKER_FIT_DISK_FULL ? "disk_full" : "overcommit";
	if (!*text)
		*text = xstrdup("does not fit");
	return q->head->item;
}
