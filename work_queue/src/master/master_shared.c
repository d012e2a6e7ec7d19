/* master_shared.c: the master's view of workers that share a store (protocol 5.12,
 * doc/work-queue-shared-cache.md). Per store it knows which objects are in it (`store_have`) and
 * which one worker is receiving an object for it; a worker of the store that needs such an
 * object takes it from the store (`cache_take`) instead of a transfer, after that transfer when
 * one is under way, so that one object crosses the network once per store. */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "wq_name.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* A worker of the store waiting for another worker's transfer of an object. */
struct swaiter {
	struct mworker *w;
	char *source;
	bool is_dir;
	int64_t task;
};

struct sobj {
	char *name;
	bool published;         /* a store_have announced it */
	struct mworker *sender; /* the worker of the store it is being sent to, or NULL */
	struct swaiter *waiters;
	size_t nwaiters, cap;
	UT_hash_handle hh;
};

struct mstore {
	char id[40];
	struct sobj *objs;
	int nworkers;
	UT_hash_handle hh;
};

void master_shared_join(struct mworker *w, const char *id)
{
	struct work_queue *q = w->q;
	struct mstore *st = NULL;
	HASH_FIND_STR(q->stores, id, st);
	if (!st) {
		st = xcalloc(1, sizeof *st);
		snprintf(st->id, sizeof st->id, "%s", id);
		HASH_ADD_STR(q->stores, id, st);
	}
	st->nworkers++;
	w->store = st;
	debug(D_WQ, "%s: shares store %s (%d workers)", MW_NAME(w), id, st->nworkers);
}

static struct sobj *sobj_get(struct mstore *st, const char *name)
{
	struct sobj *so = NULL;
	HASH_FIND_STR(st->objs, name, so);
	if (!so) {
		so = xcalloc(1, sizeof *so);
		so->name = xstrdup(name);
		HASH_ADD_KEYPTR(hh, st->objs, so->name, strlen(so->name), so);
	}
	return so;
}

static void send_take(struct mworker *w, struct mobject *o, const char *source, bool is_dir,
                      int64_t task)
{
	free(o->take_source);
	o->take_source = xstrdup(source);
	o->take_dir = is_dir;
	o->take_task = task;
	json_t *msg = json_pack("{s:s,s:s,s:I}", "m", "cache_take", "object", o->name, "size",
	                        (json_int_t)o->size);
	wq_conn_send_msg(w->c, msg);
	json_decref(msg);
	debug(D_WQ, "%s: take %s from store %s", MW_NAME(w), o->name, w->store->id);
}

/* Sends O to W itself; W becomes the store's sender of it. */
static void send_direct(struct mworker *w, struct mobject *o, const char *source, bool is_dir,
                        int64_t task)
{
	struct sobj *so = w->store ? sobj_get(w->store, o->name) : NULL;
	if (so)
		so->sender = w;
	if (master_dispatch_send_object(w, o, source, is_dir, task) < 0) {
		warn("%s: cannot send %s: %s", w->label, source, "the transfer could not start");
		if (so)
			so->sender = NULL;
		master_dispatch_object_done(w, o, -1, false);
	}
}

bool master_shared_route(struct mworker *w, struct mobject *o, const char *source, bool is_dir,
                         int64_t task)
{
	if (!w->store ||
	    !(o->name[0] == 'F' || (o->name[0] == 'D' && (w->caps & WQ_CAP_SHARED_DIRS))))
		return false;
	struct sobj *so = sobj_get(w->store, o->name);
	if (so->published) {
		send_take(w, o, source, is_dir, task);
		return true;
	}
	if (so->sender && so->sender != w) {
		struct swaiter sw = {w, xstrdup(source), is_dir, task};
		VEC_PUSH(so->waiters, so->nwaiters, so->cap, sw);
		debug(D_WQ, "%s: %s waits for its transfer to %s (same store)", MW_NAME(w), o->name,
		      MW_NAME(so->sender));
		return true; /* not sent now: it comes after the other transfer */
	}
	so->sender = w;
	return false;
}

/* The sender of SO is gone or failed: the first waiter still needing it gets it sent; when SO
 * is in the store, every waiter takes it instead. */
static void hand_over(struct sobj *so)
{
	while (so->nwaiters > 0 && (so->published || !so->sender)) {
		struct swaiter sw = so->waiters[0];
		memmove(so->waiters, so->waiters + 1, (so->nwaiters - 1) * sizeof *so->waiters);
		so->nwaiters--;
		struct mobject *o = master_worker_object_find(sw.w, so->name);
		if (o && !o->present && !o->take_source && sw.w->c) {
			if (so->published)
				send_take(sw.w, o, sw.source, sw.is_dir, sw.task);
			else
				send_direct(sw.w, o, sw.source, sw.is_dir, sw.task);
		}
		free(sw.source);
	}
}

void master_shared_send_failed(struct mworker *w, const char *name)
{
	if (!w->store)
		return;
	struct sobj *so = NULL;
	HASH_FIND_STR(w->store->objs, name, so);
	if (so && so->sender == w) {
		so->sender = NULL;
		hand_over(so);
	}
}

void master_shared_worker_lost(struct mworker *w)
{
	struct mstore *st = w->store;
	if (!st)
		return;
	w->store = NULL;
	st->nworkers--;
	struct sobj *so, *tmp;
	HASH_ITER(hh, st->objs, so, tmp)
	{
		size_t k = 0;
		for (size_t i = 0; i < so->nwaiters; i++) {
			if (so->waiters[i].w == w)
				free(so->waiters[i].source);
			else
				so->waiters[k++] = so->waiters[i];
		}
		so->nwaiters = k;
		if (so->sender == w) {
			so->sender = NULL;
			debug(D_WQ, "%s: lost while receiving %s for store %s", MW_NAME(w),
			      so->name, st->id);
			if (!w->q->ending)
				hand_over(so);
		}
	}
}

void master_shared_on_store_have(struct mworker *w, json_t *msg)
{
	if (!w->store || !(w->caps & WQ_CAP_SHARED_CACHE)) {
		wq_conn_violation(w->c, "proto",
		                  "message \"store_have\" needs capability \"shared_cache\"");
		return;
	}
	struct worker_cache_list *l = NULL;
	char *why = NULL;
	if (wq_msg_store_have_parse(msg, (w->caps & WQ_CAP_SHARED_DIRS) != 0, &l, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	for (size_t k = 0; k < l->n; k++) {
		struct sobj *so = sobj_get(w->store, l->names[k]);
		so->published = true;
		if (so->sender == w)
			so->sender = NULL;
		hand_over(so);
	}
	worker_cache_list_free(l);
	/* objects W received but could not put into the store: the next waiter gets its own */
	json_t *failed = json_object_get(msg, "failed"), *x;
	size_t i;
	if (failed && (!json_is_array(failed) || json_array_size(failed) > WQ_OBJECTS_MAX)) {
		wq_conn_violation(w->c, "proto",
		                  "message \"store_have\": key \"failed\": expected an array of at "
		                  "most %d object names",
		                  WQ_OBJECTS_MAX);
		return;
	}
	json_array_foreach(failed, i, x)
	{
		if (!json_is_string(x) || !wq_name_is_object(json_string_value(x))) {
			wq_conn_violation(w->c, "proto",
			                  "message \"store_have\": key \"failed[%zu]\": expected "
			                  "an object name",
			                  i);
			return;
		}
		warn("%s: could not put %s into its shared store", w->label, json_string_value(x));
		master_shared_send_failed(w, json_string_value(x));
	}
}

void master_shared_on_taken(struct mworker *w, json_t *msg)
{
	if (!w->store || !(w->caps & WQ_CAP_SHARED_CACHE)) {
		wq_conn_violation(w->c, "proto",
		                  "message \"cache_taken\" needs capability \"shared_cache\"");
		return;
	}
	struct wq_cache_take *t = NULL;
	char *why = NULL;
	if (wq_msg_cache_take_parse(msg, true, (w->caps & WQ_CAP_SHARED_DIRS) != 0, &t, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	struct mobject *o = master_worker_object_find(w, t->object);
	if (!o || !o->take_source) {
		/* dropped from the view meanwhile (master_full.c): nothing waits for it */
		debug(D_WQ, "%s: cache_taken for %s, no longer expected", MW_NAME(w), t->object);
		wq_cache_take_free(t);
		return;
	}
	char *source = o->take_source;
	o->take_source = NULL;
	if (t->ok) {
		w->q->stats.objects_taken++;
		o->size = t->size;
		master_dispatch_object_done(w, o, 1, false);
	} else {
		debug(D_WQ, "%s: %s not taken from store %s: %s", MW_NAME(w), t->object,
		      w->store->id, t->text ? t->text : "missing");
		struct sobj *so = sobj_get(w->store, t->object);
		so->published = false;
		if (so->sender && so->sender != w) {
			struct swaiter sw = {w, xstrdup(source), o->take_dir, o->take_task};
			VEC_PUSH(so->waiters, so->nwaiters, so->cap, sw);
		} else {
			send_direct(w, o, source, o->take_dir, o->take_task);
		}
	}
	free(source);
	wq_cache_take_free(t);
}

void master_shared_free(struct work_queue *q)
{
	struct mstore *st, *stmp;
	HASH_ITER(hh, q->stores, st, stmp)
	{
		struct sobj *so, *tmp;
		HASH_ITER(hh, st->objs, so, tmp)
		{
			for (size_t i = 0; i < so->nwaiters; i++)
				free(so->waiters[i].source);
			free(so->waiters);
			HASH_DEL(st->objs, so);
			free(so->name);
			free(so);
		}
		HASH_DEL(q->stores, st);
		free(st);
	}
}
