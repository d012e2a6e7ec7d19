/* master_full.c: what the Work Queue master does for a worker whose disk is full
 * (doc/work-queue-protocol.md 5.10). The scheduler already sends it nothing while `full` is set;
 * here the master asks it to delete the cached objects that no task still needs (READY tasks
 * anywhere, and the tasks assigned to that worker), the least recently used first, and dismisses
 * a worker that stays full with no task for full_worker_timeout seconds. The same drop is made
 * when a worker refuses an object for want of room (its cache has filled its --disk). */
#include "master_internal.h"

#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

#define FULL_RETRY_AFTER 300 /* seconds a worker dismissed for a full disk should stay away */

/* A task that may still run somewhere: its objects must stay where they are. */
static bool task_waits(const struct mtask *m)
{
	return m->state == MTASK_READY || m->state == MTASK_PREPARING ||
	       m->state == MTASK_CANCELLING;
}

static int by_last_use(const void *a, const void *b)
{
	const struct mobject *x = *(struct mobject *const *)a;
	const struct mobject *y = *(struct mobject *const *)b;
	if (x->last_use != y->last_use)
		return x->last_use < y->last_use ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sends one `cache_drop` for OBJS[0 .. N) and forgets them. */
static void drop_batch(struct mworker *w, struct mobject **objs, size_t n)
{
	json_t *names = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(names, json_string(objs[i]->name));
	json_t *msg = json_pack("{s:s,s:o,s:s}", "m", "cache_drop", "objects", names, "reason",
	                        "worker disk is full");
	int rc = msg ? wq_conn_send_msg(w->c, msg) : -ENOMEM;
	json_decref(msg);
	if (rc < 0) {
		debug(D_WQ, "%s: cache_drop: %s", MW_NAME(w), htc_strerror(rc));
		return; /* the view stays as it is: nothing was dropped */
	}
	for (size_t i = 0; i < n; i++)
		master_worker_object_free(w, objs[i]);
}

/* Drops every object of W's view that is in place and needed by no waiting task and by no task
 * of W. */
static void drop_unneeded(struct mworker *w)
{
	struct work_queue *q = w->q;
	struct mobject *o, *otmp;
	size_t n = 0;
	HASH_ITER(hh, w->objects, o, otmp)
	{
		o->keep = !o->present || o->nwait > 0;
		n += !o->keep;
	}
	if (n == 0)
		return;
	struct mtask *m, *mtmp;
	HASH_ITER(hh, q->tasks, m, mtmp)
	{
		if (!m->objects || (!task_waits(m) && !master_worker_assigned(w, m)))
			continue;
		for (int i = 0; i < m->n_inputs; i++)
			if (m->objects[i] &&
			    (o = master_worker_object_find(w, m->objects[i])) != NULL)
				o->keep = true;
	}
	struct mobject **drop = xcalloc(n, sizeof *drop);
	size_t k = 0;
	HASH_ITER(hh, w->objects, o, otmp)
	{
		if (!o->keep && k < n)
			drop[k++] = o;
	}
	qsort(drop, k, sizeof *drop, by_last_use);
	int64_t bytes = 0;
	for (size_t i = 0; i < k; i++)
		bytes += drop[i]->size;
	if (k > 0)
		notice("%s: disk full: dropping %zu cached object%s (%lld MB) no task needs",
		       w->label, k, k == 1 ? "" : "s", (long long)(bytes >> 20));
	for (size_t i = 0; i < k; i += WQ_OBJECTS_MAX)
		drop_batch(w, drop + i, k - i < WQ_OBJECTS_MAX ? k - i : WQ_OBJECTS_MAX);
	free(drop);
}

void master_full_capacity(struct mworker *w, bool was_full)
{
	if (!w->disk_full) {
		w->full_since = 0;
		return;
	}
	if (!was_full || w->full_since == 0)
		w->full_since = master_queue_now();
	if (w->state == MW_ACTIVE || w->state == MW_DRAINING)
		drop_unneeded(w);
}

void master_full_no_room(struct mworker *w)
{
	if (w->state == MW_ACTIVE || w->state == MW_DRAINING)
		drop_unneeded(w);
}

void master_full_check(struct work_queue *q)
{
	double now = master_queue_now();
	struct mworker *w = q->workers, *next;
	for (; w; w = next) {
		next = w->next;
		if (!w->disk_full || w->full_since == 0 || w->ntasks > 0 ||
		    (w->state != MW_ACTIVE && w->state != MW_DRAINING))
			continue;
		if (now - w->full_since < q->full_worker_timeout)
			continue;
		notice("%s: disk still full after %.0f s with no task: dismissed", w->label,
		       now - w->full_since);
		master_worker_end(w, false, "worker disk is full", FULL_RETRY_AFTER);
	}
}
