/* master_sched.c: the bookkeeping half of the Work Queue scheduling core: categories, task classes
 * (category, level, request, features: tasks of a class get the same box on a given worker),
 * the ready heaps per (class, priority) grouped by priority level, the workers and their index
 * by free cores, and committing / releasing boxes. The pass itself is in master_sched_pass.c. */
#include "master_sched.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uthash.h>
#include <utlist.h>

#include "debug.h"
#include "heap.h"
#include "master_sched_internal.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* Requests and totals above this are refused (they would overflow the arithmetic). */
#define VALUE_MAX   1e12
#define FEATURE_SEP '\x1f'

const int master_sched_rm_field[NRES] = {RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS};

/* ---- small helpers ---- */

static int64_t cores_to_milli(double c)
{
	return (int64_t)ceil(c * MILLI - 1e-6);
}

/* Converts one value of a request (-1 unset) or a total; -EINVAL for a bad one. */
static int convert(double v, int k, int allow_unset, int64_t *out)
{
	if (allow_unset && v == -1) {
		*out = -1;
		return 0;
	}
	if (!isfinite(v) || v < 0 || v > VALUE_MAX)
		return -EINVAL;
	*out = k == R_CORES ? cores_to_milli(v) : (int64_t)ceil(v - 1e-9);
	return 0;
}

static int box_convert(const struct master_sched_box *b, int allow_unset, int64_t r[NRES])
{
	double v[NRES] = {b->cores, (double)b->memory, (double)b->disk, (double)b->gpus};
	for (int k = 0; k < NRES; k++)
		if (convert(v[k], k, allow_unset, &r[k]) < 0)
			return -EINVAL;
	return 0;
}

void master_sched_box_from(const int64_t r[NRES], struct master_sched_box *b)
{
	b->cores = r[R_CORES] < 0 ? -1 : (double)r[R_CORES] / MILLI;
	b->memory = r[R_MEMORY];
	b->disk = r[R_DISK];
	b->gpus = r[R_GPUS];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks and copies a list of labels, sorted and without repeats. -EINVAL for a NULL or empty
 * label or one holding the separator of class keys. */
static int copy_features(const char *const *in, int n, char ***out, int *nout)
{
	*out = NULL;
	*nout = 0;
	if (n < 0 || (n > 0 && !in))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!in[i] || !in[i][0] || strchr(in[i], FEATURE_SEP))
			return -EINVAL;
	if (n == 0)
		return 0;
	char **v = xmalloc((size_t)n * sizeof *v);
	for (int i = 0; i < n; i++)
		v[i] = xstrdup(in[i]);
	qsort(v, (size_t)n, sizeof *v, cmp_str);
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (m > 0 && strcmp(v[m - 1], v[i]) == 0) {
			free(v[i]);
			continue;
		}
		v[m++] = v[i];
	}
	*out = v;
	*nout = m;
	return 0;
}

static void free_strv(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ---- policies ---- */

static const char *const policy_names[] = {"fcfs", "files", "time", "worst", "rand"};

int master_sched_policy_parse(const char *s, enum master_sched_policy *policy)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof policy_names / sizeof policy_names[0]; i++)
		if (strcasecmp(s, policy_names[i]) == 0) {
			*policy = (enum master_sched_policy)i;
			return 0;
		}
	return -EINVAL;
}

const char *master_sched_policy_name(enum master_sched_policy policy)
{
	if ((unsigned)policy < sizeof policy_names / sizeof policy_names[0])
		return policy_names[policy];
	return "unknown";
}

/* ---- create / delete ---- */

struct master_sched *master_sched_create(void)
{
	struct master_sched *s = xcalloc(1, sizeof *s);
	s->pass_heap = heap_create(64);
	s->room_cap = -1;
	return s;
}

static void image_unref(struct master_sched *s, struct simage *im)
{
	if (!im || --im->refs > 0)
		return;
	HASH_DEL(s->images, im);
	free(im->key);
	free(im);
}

/* The image record of KEY (TRAVELS: an archive), one more reference taken; NULL for no image. */
static struct simage *image_get(struct master_sched *s, const char *image, int travels)
{
	if (!image)
		return NULL;
	char *key = xasprintf("%d/%s", travels ? 1 : 0, image);
	struct simage *im;
	HASH_FIND_STR(s->images, key, im);
	if (im) {
		free(key);
		im->refs++;
		return im;
	}
	im = xcalloc(1, sizeof *im);
	im->key = key;
	im->travels = travels ? 1 : 0;
	im->refs = 1;
	HASH_ADD_KEYPTR(hh, s->images, im->key, strlen(im->key), im);
	return im;
}

static void class_unref(struct master_sched *s, struct tclass *c)
{
	if (!c || --c->refs > 0)
		return;
	HASH_DEL(s->classes, c);
	free(c->key);
	free_strv(c->features, c->n_features);
	image_unref(s, c->img);
	free(c);
}

void master_sched_delete(struct master_sched *s)
{
	if (!s)
		return;
	struct group *g, *gtmp;
	HASH_ITER(hh, s->groups, g, gtmp)
	{
		/* Ready tasks are freed from the list of all tasks below; dead ones only here. */
		while (heap_size(g->h) > 0) {
			struct master_sched_task *t = heap_pop(g->h, NULL);
			if (t->dead)
				free(t);
		}
		heap_delete(g->h);
		HASH_DEL(s->groups, g);
		free(g);
	}
	struct master_sched_task *t, *ttmp;
	DL_FOREACH_SAFE2(s->all, t, ttmp, anext)
	{
		free(t);
	}
	struct tclass *c, *ctmp;
	HASH_ITER(hh, s->classes, c, ctmp)
	{
		HASH_DEL(s->classes, c);
		free(c->key);
		free_strv(c->features, c->n_features);
		free(c);
	}
	struct simage *im, *imtmp;
	HASH_ITER(hh, s->images, im, imtmp)
	{
		HASH_DEL(s->images, im);
		free(im->key);
		free(im);
	}
	struct wcat *wc, *wctmp;
	HASH_ITER(hh, s->cats, wc, wctmp)
	{
		HASH_DEL(s->cats, wc);
		category_delete(wc->cat);
		free(wc->name);
		free(wc);
	}
	struct master_sched_worker *w, *wtmp;
	HASH_ITER(hh, s->workers, w, wtmp)
	{
		HASH_DEL(s->workers, w);
		free(w->id);
		free_strv(w->features, w->n_features);
		free(w);
	}
	for (size_t i = 0; i < s->n_levels; i++)
		free(s->levels[i]);
	free(s->levels);
	free(s->buckets);
	heap_delete(s->pass_heap);
	free(s);
}

/* ---- categories ---- */

static struct wcat *cat_get(struct master_sched *s, const char *name)
{
	if (!name)
		name = "default";
	struct wcat *wc;
	HASH_FIND_STR(s->cats, name, wc);
	if (wc)
		return wc;
	wc = xcalloc(1, sizeof *wc);
	wc->name = xstrdup(name);
	wc->cat = category_create(name);
	wc->max_concurrent = -1;
	HASH_ADD_KEYPTR(hh, s->cats, wc->name, strlen(wc->name), wc);
	return wc;
}

struct category *master_sched_category(struct master_sched *s, const char *name)
{
	return cat_get(s, name)->cat;
}

int master_sched_category_set_max_concurrent(struct master_sched *s, const char *name, int n)
{
	cat_get(s, name)->max_concurrent = n < 0 ? -1 : n;
	return 0;
}

int64_t master_sched_category_running(struct master_sched *s, const char *name)
{
	struct wcat *wc;
	HASH_FIND_STR(s->cats, name ? name : "default", wc);
	return wc ? wc->running : 0;
}

void master_sched_category_record_time(struct master_sched *s, const char *name, double wall_s)
{
	if (!s || !isfinite(wall_s) || wall_s < 0)
		return;
	struct wcat *wc = cat_get(s, name);
	wc->wall_sum += wall_s;
	wc->wall_n++;
}

double master_sched_category_mean_time(struct master_sched *s, const char *name)
{
	struct wcat *wc;
	HASH_FIND_STR(s->cats, name ? name : "default", wc);
	return wc && wc->wall_n > 0 ? wc->wall_sum / (double)wc->wall_n : -1;
}

void master_sched_set_cached_bytes_fn(struct master_sched *s, master_sched_cached_bytes_fn fn,
                                      void *arg)
{
	s->cached_fn = fn;
	s->cached_arg = arg;
}

void master_sched_set_image_fn(struct master_sched *s, master_sched_image_fn fn, void *arg)
{
	s->image_fn = fn;
	s->image_arg = arg;
}

/* ---- classes, groups, levels ---- */

/* The class (CAT, LEVEL, REQ, FEATURES sorted, the image IMG), one more reference taken (and
 * one of IMG when the class is new). */
static struct tclass *class_get(struct master_sched *s, struct wcat *cat, enum category_level level,
                                const int64_t req[NRES], char *const *features, int n,
                                struct simage *img, int own_container)
{
	size_t flen = 1;
	for (int i = 0; i < n; i++)
		flen += strlen(features[i]) + 1;
	char *fkey = xmalloc(flen);
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(features[i]);
		memcpy(fkey + off, features[i], l);
		off += l;
		fkey[off++] = FEATURE_SEP;
	}
	fkey[off] = 0;
	char *key = xasprintf("%p/%d/%lld/%lld/%lld/%lld/%s/%p/%d", (void *)cat, (int)level,
	                      (long long)req[0], (long long)req[1], (long long)req[2],
	                      (long long)req[3], fkey, (void *)img, own_container);
	free(fkey);
	struct tclass *c;
	HASH_FIND_STR(s->classes, key, c);
	if (c) {
		free(key);
		c->refs++;
		return c;
	}
	c = xcalloc(1, sizeof *c);
	c->key = key;
	c->cat = cat;
	c->level = level;
	memcpy(c->req, req, sizeof c->req);
	if (n > 0) {
		c->features = xmalloc((size_t)n * sizeof *c->features);
		for (int i = 0; i < n; i++)
			c->features[i] = xstrdup(features[i]);
	}
	c->n_features = n;
	c->img = img;
	c->own_container = own_container;
	if (img)
		img->refs++;
	c->refs = 1;
	HASH_ADD_KEYPTR(hh, s->classes, c->key, strlen(c->key), c);
	return c;
}

/* Index of the level of priority PRIO in the descending array, or where it would go. */
static size_t level_find(const struct master_sched *s, double prio, int *found)
{
	size_t lo = 0, hi = s->n_levels;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->levels[mid]->prio > prio)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < s->n_levels && s->levels[lo]->prio == prio;
	return lo;
}

static struct level *level_get(struct master_sched *s, double prio)
{
	int found;
	size_t i = level_find(s, prio, &found);
	if (found)
		return s->levels[i];
	VEC_RESERVE(s->levels, s->cap_levels, s->n_levels + 1);
	memmove(&s->levels[i + 1], &s->levels[i], (s->n_levels - i) * sizeof *s->levels);
	struct level *lv = xcalloc(1, sizeof *lv);
	lv->prio = prio;
	s->levels[i] = lv;
	s->n_levels++;
	return lv;
}

static struct group *group_get(struct master_sched *s, struct tclass *c, double prio)
{
	struct gkey key;
	memset(&key, 0, sizeof key);
	key.cls = c;
	key.prio = prio;
	struct group *g;
	HASH_FIND(hh, s->groups, &key, sizeof key, g);
	if (g)
		return g;
	g = xcalloc(1, sizeof *g);
	g->key = key;
	g->h = heap_create(0);
	c->refs++;
	g->lvl = level_get(s, prio);
	DL_APPEND(g->lvl->groups, g);
	HASH_ADD(hh, s->groups, key, sizeof g->key, g);
	return g;
}

/* Frees an empty group (no live task; its heap holds only dead ones). */
void master_sched_group_free(struct master_sched *s, struct group *g)
{
	while (heap_size(g->h) > 0) {
		struct master_sched_task *t = heap_pop(g->h, NULL);
		free(t); /* dead: its class reference was dropped when it was removed */
	}
	heap_delete(g->h);
	HASH_DEL(s->groups, g);
	struct level *lv = g->lvl;
	DL_DELETE(lv->groups, g);
	if (!lv->groups) {
		int found;
		size_t i = level_find(s, lv->prio, &found);
		if (found) {
			memmove(&s->levels[i], &s->levels[i + 1],
			        (s->n_levels - i - 1) * sizeof *s->levels);
			s->n_levels--;
		}
		free(lv);
	}
	class_unref(s, g->key.cls);
	free(g);
}

struct master_sched_task *master_sched_group_head(struct group *g)
{
	while (heap_size(g->h) > 0) {
		struct master_sched_task *t = heap_peek(g->h, NULL);
		if (!t->dead)
			return t;
		heap_pop(g->h, NULL);
		free(t);
	}
	return NULL;
}

/* Puts T (IDLE) in the heap of its class and priority, under its submission number. */
static void enqueue(struct master_sched *s, struct master_sched_task *t)
{
	struct group *g = group_get(s, t->cls, t->prio);
	heap_push(g->h, (int64_t)t->seq, t);
	g->live++;
	t->grp = g;
	t->state = MASTER_SCHED_TASK_READY;
	s->n_ready++;
}

/* ---- the worker index ---- */

static int bucket_of(const struct master_sched *s, const struct master_sched_worker *w)
{
	int64_t f = w->total[R_CORES] - w->used[R_CORES];
	int64_t b = f > 0 ? f / MILLI : 0;
	return b >= s->n_buckets ? s->n_buckets - 1 : (int)b;
}

static void index_out(struct master_sched *s, struct master_sched_worker *w)
{
	if (w->bucket >= 0) {
		DL_DELETE2(s->buckets[w->bucket], w, bprev, bnext);
		w->bucket = -1;
	}
	if (w->has_free) {
		s->n_free--;
		w->has_free = 0;
	}
}

static void index_in(struct master_sched *s, struct master_sched_worker *w)
{
	/* A worker with queued tasks gets only queued ones (master_sched_prefetch): what frees
	 * there goes to its queue first. */
	if (w->flags || w->bucket >= 0 || w->n_queued > 0)
		return;
	w->bucket = bucket_of(s, w);
	DL_APPEND2(s->buckets[w->bucket], w, bprev, bnext);
	if (w->total[R_CORES] - w->used[R_CORES] > 0) {
		w->has_free = 1;
		s->n_free++;
	}
}

/* W's part of the sums (free cores, queue room) is brought up to date. */
static void sums_update(struct master_sched *s, struct master_sched_worker *w)
{
	int64_t f = w->total[R_CORES] - w->used[R_CORES];
	int64_t room = 0;
	if (!w->flags && w->queue_max > 0 && s->room_cap != 0) {
		int64_t lim = w->queue_max;
		if (s->room_cap > 0 && s->room_cap < lim)
			lim = s->room_cap;
		room = lim > w->n_queued ? lim - w->n_queued : 0;
	}
	s->agg_free += (f > 0 ? f : 0) - w->agg_free;
	w->agg_free = f > 0 ? f : 0;
	s->agg_room += room - w->agg_room;
	w->agg_room = room;
}

static void reindex(struct master_sched *s, struct master_sched_worker *w)
{
	index_out(s, w);
	index_in(s, w);
	sums_update(s, w);
}

/* The index of workers by queued count, for master_sched_prefetch (no scan of every worker). */
static void qindex_out(struct master_sched *s, struct master_sched_worker *w)
{
	if (w->qbucket >= 0) {
		DL_DELETE2(s->qbuckets[w->qbucket], w, qprev, qnext);
		w->qbucket = -1;
	}
}

static void qindex_in(struct master_sched *s, struct master_sched_worker *w)
{
	if (w->queue_max <= 0 || w->qbucket >= 0)
		return;
	if (w->queue_max > s->max_queue_max)
		s->max_queue_max = w->queue_max;
	w->qbucket = w->n_queued < QUEUE_BUCKETS - 1 ? (int)w->n_queued : QUEUE_BUCKETS - 1;
	DL_APPEND2(s->qbuckets[w->qbucket], w, qprev, qnext);
}

static void qreindex(struct master_sched *s, struct master_sched_worker *w)
{
	qindex_out(s, w);
	qindex_in(s, w);
	sums_update(s, w);
}

/* Makes the bucket array long enough for a worker of TOTAL_MILLI cores (rebuilding it). */
static void buckets_fit(struct master_sched *s, int64_t total_milli)
{
	int64_t want = total_milli / MILLI + 2;
	if (want > MAX_BUCKETS)
		want = MAX_BUCKETS;
	if (want <= s->n_buckets)
		return;
	struct master_sched_worker *w, *tmp;
	HASH_ITER(hh, s->workers, w, tmp)
	{
		index_out(s, w);
	}
	free(s->buckets);
	s->buckets = xcalloc((size_t)want, sizeof *s->buckets);
	s->n_buckets = (int)want;
	HASH_ITER(hh, s->workers, w, tmp)
	{
		index_in(s, w);
	}
}

/* ---- commit / release ---- */

void master_sched_commit(struct master_sched *s, struct master_sched_task *t,
                         struct master_sched_worker *w, const int64_t box[NRES], unsigned whole,
                         double now)
{
	for (int k = 0; k < NRES; k++) {
		w->used[k] += box[k];
		s->agg_used[k] += box[k];
		t->box[k] = box[k];
	}
	t->whole = whole;
	t->w = w;
	t->start = now;
	t->grp = NULL;
	t->state = MASTER_SCHED_TASK_RUNNING;
	DL_APPEND2(w->running, t, wprev, wnext);
	w->n_running++;
	t->cls->cat->running++;
	s->n_running++;
	reindex(s, w);
}

/* ---- the queues of prefetched tasks ---- */

static void queue_append(struct master_sched *s, struct master_sched_task *t,
                         struct master_sched_worker *w, const int64_t box[NRES], unsigned whole)
{
	memcpy(t->box, box, sizeof t->box);
	t->whole = whole;
	t->w = w;
	t->grp = NULL;
	t->state = MASTER_SCHED_TASK_QUEUED;
	t->was_queued = 1;
	DL_APPEND2(w->queue, t, wprev, wnext);
	w->n_queued++;
	s->n_queued++;
	qreindex(s, w);
	if (w->n_queued == 1)
		reindex(s, w);
}

/* Takes a QUEUED task out of its worker's queue: it becomes IDLE. */
static void dequeue(struct master_sched *s, struct master_sched_task *t)
{
	struct master_sched_worker *w = t->w;
	DL_DELETE2(w->queue, t, wprev, wnext);
	w->n_queued--;
	s->n_queued--;
	t->w = NULL;
	t->state = MASTER_SCHED_TASK_IDLE;
	qreindex(s, w);
	if (w->n_queued == 0)
		reindex(s, w);
}

static int fits_free(const struct master_sched_worker *w, const int64_t box[NRES])
{
	for (int k = 0; k < NRES; k++)
		if (box[k] > w->total[k] - w->used[k])
			return 0;
	return 1;
}

/* Commits the head of W's queue, then the next, while they fit (as the worker's FIFO does). */
static void promote(struct master_sched *s, struct master_sched_worker *w)
{
	while (w->queue && fits_free(w, w->queue->box)) {
		struct master_sched_task *t = w->queue;
		int64_t box[NRES];
		memcpy(box, t->box, sizeof box);
		unsigned whole = t->whole;
		dequeue(s, t);
		master_sched_commit(s, t, w, box, whole, s->last_now);
		debug(D_WQ, "sched: task %llu promoted from the queue of %s",
		      (unsigned long long)t->seq, w->id);
	}
}

void master_sched_enqueue_on(struct master_sched *s, struct master_sched_task *t,
                             struct master_sched_worker *w, const int64_t box[NRES], unsigned whole)
{
	queue_append(s, t, w, box, whole);
	promote(s, w); /* the worker commits a queued task that fits at once, too */
}

static void uncommit(struct master_sched *s, struct master_sched_task *t)
{
	struct master_sched_worker *w = t->w;
	for (int k = 0; k < NRES; k++) {
		w->used[k] -= t->box[k];
		s->agg_used[k] -= t->box[k];
	}
	DL_DELETE2(w->running, t, wprev, wnext);
	w->n_running--;
	t->cls->cat->running--;
	s->n_running--;
	t->w = NULL;
	t->state = MASTER_SCHED_TASK_IDLE;
	reindex(s, w);
	promote(s, w);
}

/* Takes T off its worker, whichever way it is there (then promotes there). */
static void leave_worker(struct master_sched *s, struct master_sched_task *t)
{
	if (t->state == MASTER_SCHED_TASK_RUNNING) {
		uncommit(s, t);
	} else if (t->state == MASTER_SCHED_TASK_QUEUED) {
		struct master_sched_worker *w = t->w;
		dequeue(s, t);
		promote(s, w);
	}
}

/* ---- tasks ---- */

void master_sched_task_spec_init(struct master_sched_task_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	spec->request = (struct master_sched_box){-1, -1, -1, -1};
}

void master_sched_task_spec_from_task(struct master_sched_task_spec *spec,
                                      const struct work_queue_task *t)
{
	master_sched_task_spec_init(spec);
	spec->priority = t->priority;
	spec->category = t->category;
	const struct rmsummary *r = t->resources_requested;
	if (r) {
		double v[NRES];
		for (int k = 0; k < NRES; k++)
			v[k] = r->v[master_sched_rm_field[k]] >= 0 ? r->v[master_sched_rm_field[k]]
			                                           : -1;
		spec->request.cores = v[R_CORES];
		spec->request.memory = v[R_MEMORY] >= 0 ? (int64_t)ceil(v[R_MEMORY]) : -1;
		spec->request.disk = v[R_DISK] >= 0 ? (int64_t)ceil(v[R_DISK]) : -1;
		spec->request.gpus = v[R_GPUS] >= 0 ? (int64_t)ceil(v[R_GPUS]) : -1;
	}
	spec->features = (const char *const *)t->features;
	spec->n_features = t->feature_count;
	if (t->container_image) {
		spec->image = t->container_image;
	} else if (t->container_archive) {
		/* the archive's local file names its image (its content is hashed later) */
		for (const struct work_queue_file *f = t->inputs; f; f = f->next)
			if (f->remote && f->source &&
			    strcmp(f->remote, t->container_archive) == 0) {
				spec->image = f->source;
				spec->image_travels = 1;
				break;
			}
	}
	spec->own_container = (t->container_image || t->container_archive) &&
	                      t->container_mode == WORK_QUEUE_CONTAINER_TASK;
	spec->data = (void *)t;
}

/* Checks SPEC and converts its request into REQ and its features into *FEAT (freed by the
 * caller with free_strv). 0, or -EINVAL with the reason at debug(D_WQ). */
static int spec_parse(const struct master_sched_task_spec *spec, int64_t req[NRES], char ***feat,
                      int *nfeat)
{
	if (!isfinite(spec->priority)) {
		debug(D_WQ, "sched: task refused: priority %g is not a finite number",
		      spec->priority);
		return -EINVAL;
	}
	if (box_convert(&spec->request, 1, req) < 0) {
		debug(D_WQ,
		      "sched: task refused: bad request (cores %g, memory %lld, disk %lld, gpus "
		      "%lld; -1 or a value >= 0 expected)",
		      spec->request.cores, (long long)spec->request.memory,
		      (long long)spec->request.disk, (long long)spec->request.gpus);
		return -EINVAL;
	}
	if (copy_features(spec->features, spec->n_features, feat, nfeat) < 0) {
		debug(D_WQ, "sched: task refused: a required feature is NULL, empty or invalid");
		return -EINVAL;
	}
	return 0;
}

int master_sched_task_spec_check(const struct master_sched_task_spec *spec)
{
	int64_t req[NRES];
	char **feat;
	int nfeat;
	if (!spec || spec_parse(spec, req, &feat, &nfeat) < 0)
		return -EINVAL;
	free_strv(feat, nfeat);
	return 0;
}

struct master_sched_task *master_sched_task_add(struct master_sched *s,
                                                const struct master_sched_task_spec *spec)
{
	int64_t req[NRES];
	char **feat;
	int nfeat;
	if (!s || !spec || spec_parse(spec, req, &feat, &nfeat) < 0) {
		errno = EINVAL;
		return NULL;
	}
	struct master_sched_task *t = xcalloc(1, sizeof *t);
	t->seq = ++s->next_seq;
	t->prio = spec->priority + 0.0; /* -0 and 0 are one level */
	t->data = spec->data;
	struct simage *img = image_get(s, spec->image, spec->image_travels);
	t->cls = class_get(s, cat_get(s, spec->category), CATEGORY_LEVEL_FIRST, req, feat, nfeat,
	                   img, spec->own_container != 0);
	image_unref(s, img);
	free_strv(feat, nfeat);
	DL_APPEND2(s->all, t, aprev, anext);
	enqueue(s, t);
	return t;
}

void *master_sched_task_remove(struct master_sched *s, struct master_sched_task *t)
{
	void *data = t->data;
	DL_DELETE2(s->all, t, aprev, anext);
	if (t->state == MASTER_SCHED_TASK_READY) {
		/* It stays in its heap, dead, until it surfaces or the heap empties. */
		struct group *g = t->grp;
		t->dead = 1;
		g->live--;
		s->n_ready--;
		class_unref(s, t->cls);
		t->cls = NULL;
		if (g->live == 0)
			master_sched_group_free(s, g);
		return data;
	}
	leave_worker(s, t);
	class_unref(s, t->cls);
	free(t);
	return data;
}

int master_sched_task_release(struct master_sched *s, struct master_sched_task *t, double now)
{
	if (isfinite(now) && now > s->last_now)
		s->last_now = now;
	if (t->state == MASTER_SCHED_TASK_QUEUED) {
		leave_worker(s, t);
		return 0;
	}
	if (t->state != MASTER_SCHED_TASK_RUNNING)
		return -EINVAL;
	struct master_sched_worker *w = t->w;
	double start = t->start;
	uncommit(s, t);
	if (isfinite(now) && now >= start)
		master_sched_worker_record_time(w, now - start);
	return 0;
}

int master_sched_task_started(struct master_sched *s, struct master_sched_task *t, double now)
{
	if (isfinite(now) && now > s->last_now)
		s->last_now = now;
	if (t->state == MASTER_SCHED_TASK_RUNNING) {
		if (t->was_queued)
			t->start = now;
		return 0;
	}
	if (t->state != MASTER_SCHED_TASK_QUEUED)
		return -EINVAL;
	/* The worker commits in order: T and every task before it are committed there. */
	struct master_sched_worker *w = t->w;
	int n = 0;
	for (;;) {
		struct master_sched_task *h = w->queue;
		int64_t box[NRES];
		memcpy(box, h->box, sizeof box);
		unsigned whole = h->whole;
		dequeue(s, h);
		master_sched_commit(s, h, w, box, whole, now);
		n++;
		if (h == t)
			break;
	}
	debug(D_WQ, "sched: task %llu started on %s while queued here: %d committed",
	      (unsigned long long)t->seq, w->id, n);
	return n;
}

int master_sched_task_was_queued(const struct master_sched_task *t)
{
	return t->was_queued;
}

int master_sched_task_requeue(struct master_sched *s, struct master_sched_task *t,
                              enum category_level level)
{
	if (level != CATEGORY_LEVEL_FIRST && level != CATEGORY_LEVEL_MAX)
		return -EINVAL;
	if (t->state == MASTER_SCHED_TASK_READY)
		return -EINVAL;
	leave_worker(s, t);
	t->was_queued = 0;
	if (t->cls->level != level) {
		struct tclass *old = t->cls;
		t->cls = class_get(s, old->cat, level, old->req, old->features, old->n_features,
		                   old->img, old->own_container);
		class_unref(s, old);
	}
	enqueue(s, t);
	return 0;
}

int master_sched_task_exhausted(struct master_sched *s, struct master_sched_task *t,
                                uint64_t exhausted, double now)
{
	if (t->state == MASTER_SCHED_TASK_READY)
		return -EINVAL;
	if (t->state == MASTER_SCHED_TASK_RUNNING || t->state == MASTER_SCHED_TASK_QUEUED)
		master_sched_task_release(s, t, now);
	struct rmsummary req, alloc;
	rmsummary_init(&req);
	rmsummary_init(&alloc);
	for (int k = 0; k < NRES; k++) {
		int f = master_sched_rm_field[k];
		double scale = k == R_CORES ? MILLI : 1;
		req.v[f] = t->cls->req[k] < 0 ? -1 : (double)t->cls->req[k] / scale;
		/* A resource that was the whole worker cannot grow: the category sees -1. */
		alloc.v[f] = (t->whole & (1u << k)) ? -1 : (double)t->box[k] / scale;
	}
	enum category_level next =
	    category_next_level(t->cls->cat->cat, t->cls->level, &req, &alloc, exhausted);
	debug(D_WQ, "sched: task %llu exhausted its allocation at level %d: next level %d",
	      (unsigned long long)t->seq, (int)t->cls->level, (int)next);
	if (next != CATEGORY_LEVEL_MAX)
		return 0;
	master_sched_task_requeue(s, t, CATEGORY_LEVEL_MAX);
	return 1;
}

uint64_t master_sched_task_chosen(const struct master_sched_task *t)
{
	uint64_t bits = 0;
	if (!t || !t->cls)
		return 0;
	for (int k = 0; k < NRES; k++)
		if (t->cls->req[k] < 0 && (t->cls->alloc[k] < 0 || (t->whole & (1u << k))))
			bits |= UINT64_C(1) << master_sched_rm_field[k];
	return bits;
}

void *master_sched_task_data(const struct master_sched_task *t)
{
	return t->data;
}

enum master_sched_task_state master_sched_task_state(const struct master_sched_task *t)
{
	return t->state;
}

enum category_level master_sched_task_level(const struct master_sched_task *t)
{
	return t->cls ? t->cls->level : CATEGORY_LEVEL_ERROR;
}

struct master_sched_worker *master_sched_task_worker(const struct master_sched_task *t)
{
	return t->state == MASTER_SCHED_TASK_RUNNING || t->state == MASTER_SCHED_TASK_QUEUED ? t->w
	                                                                                     : NULL;
}

int master_sched_task_resize_memory(struct master_sched *s, struct master_sched_task *t,
                                    int64_t memory_mb)
{
	if (t->state != MASTER_SCHED_TASK_RUNNING || !t->w || memory_mb < 0)
		return -EINVAL;
	struct master_sched_worker *w = t->w;
	int64_t old = t->box[R_MEMORY];
	w->used[R_MEMORY] += memory_mb - old;
	s->agg_used[R_MEMORY] += memory_mb - old;
	t->box[R_MEMORY] = memory_mb;
	reindex(s, w);
	if (memory_mb < old)
		promote(s, w);
	return 0;
}

void master_sched_task_box(const struct master_sched_task *t, struct master_sched_box *box)
{
	master_sched_box_from(t->box, box);
}

int64_t master_sched_ready_count(const struct master_sched *s)
{
	return s->n_ready;
}

int64_t master_sched_running_count(const struct master_sched *s)
{
	return s->n_running;
}

int64_t master_sched_queued_count(const struct master_sched *s)
{
	return s->n_queued;
}

/* ---- workers ---- */

struct master_sched_worker *master_sched_worker_add(struct master_sched *s,
                                                    const struct master_sched_worker_spec *spec)
{
	int64_t total[NRES];
	if (!s || !spec || !spec->id || !spec->id[0] || box_convert(&spec->total, 0, total) < 0) {
		debug(D_WQ, "sched: worker refused: missing id or bad total resources");
		errno = EINVAL;
		return NULL;
	}
	struct master_sched_worker *w;
	HASH_FIND_STR(s->workers, spec->id, w);
	if (w) {
		debug(D_WQ, "sched: worker %s refused: already known", spec->id);
		errno = EEXIST;
		return NULL;
	}
	char **feat;
	int nfeat;
	if (copy_features(spec->features, spec->n_features, &feat, &nfeat) < 0) {
		debug(D_WQ, "sched: worker %s refused: a feature is NULL, empty or invalid",
		      spec->id);
		errno = EINVAL;
		return NULL;
	}
	w = xcalloc(1, sizeof *w);
	w->id = xstrdup(spec->id);
	w->seq = ++s->next_worker_seq;
	w->data = spec->data;
	memcpy(w->total, total, sizeof w->total);
	w->features = feat;
	w->n_features = nfeat;
	w->queue_max = spec->queue_max > 0 ? spec->queue_max : 0;
	w->grow_step_mb = spec->grow_step_mb > 0 ? spec->grow_step_mb : 0;
	w->lends_cores = spec->lends_cores != 0;
	w->grows_containers = spec->grows_containers != 0;
	s->n_lenders += w->lends_cores;
	w->bucket = -1;
	w->qbucket = -1;
	HASH_ADD_KEYPTR(hh, s->workers, w->id, strlen(w->id), w);
	buckets_fit(s, total[R_CORES]);
	index_in(s, w);
	qindex_in(s, w);
	sums_update(s, w);
	return w;
}

struct master_sched_worker *master_sched_worker_lookup(struct master_sched *s, const char *id)
{
	struct master_sched_worker *w = NULL;
	if (id)
		HASH_FIND_STR(s->workers, id, w);
	return w;
}

int master_sched_worker_set_features(struct master_sched *s, struct master_sched_worker *w,
                                     const char *const *features, int n_features)
{
	char **feat;
	int nfeat;
	if (!s || !w || copy_features(features, n_features, &feat, &nfeat) < 0)
		return -EINVAL;
	free_strv(w->features, w->n_features);
	w->features = feat;
	w->n_features = nfeat;
	return 0;
}

int master_sched_worker_set_total(struct master_sched *s, struct master_sched_worker *w,
                                  const struct master_sched_box *total)
{
	int64_t t[NRES];
	if (!total || box_convert(total, 0, t) < 0)
		return -EINVAL;
	memcpy(w->total, t, sizeof w->total);
	buckets_fit(s, t[R_CORES]);
	reindex(s, w);
	return 0;
}

void master_sched_worker_set_flags(struct master_sched *s, struct master_sched_worker *w,
                                   unsigned flags)
{
	w->flags = flags;
	reindex(s, w);
}

unsigned master_sched_worker_flags(const struct master_sched_worker *w)
{
	return w->flags;
}

void master_sched_worker_record_time(struct master_sched_worker *w, double wall_s)
{
	if (!isfinite(wall_s) || wall_s < 0)
		return;
	w->hist[w->hpos] = wall_s;
	w->hpos = (w->hpos + 1) % HISTORY;
	if (w->nh < HISTORY)
		w->nh++;
}

double master_sched_worker_average_time(const struct master_sched_worker *w)
{
	if (w->nh == 0)
		return -1;
	double sum = 0;
	for (int i = 0; i < w->nh; i++)
		sum += w->hist[i];
	return sum / w->nh;
}

int master_sched_worker_remove(struct master_sched *s, struct master_sched_worker *w)
{
	s->n_lenders -= w->lends_cores;
	index_out(s, w);
	qindex_out(s, w);
	for (int k = 0; k < NRES; k++)
		s->agg_used[k] -= w->used[k];
	s->agg_free -= w->agg_free;
	s->agg_room -= w->agg_room;
	int n = 0;
	struct master_sched_task *t, *tmp;
	DL_FOREACH_SAFE2(w->running, t, tmp, wnext)
	{
		DL_DELETE2(w->running, t, wprev, wnext);
		t->cls->cat->running--;
		s->n_running--;
		t->w = NULL;
		t->state = MASTER_SCHED_TASK_IDLE;
		t->was_queued = 0;
		enqueue(s, t);
		n++;
	}
	/* Queued tasks too, in their original place (the heaps are ordered by submission). */
	DL_FOREACH_SAFE2(w->queue, t, tmp, wnext)
	{
		DL_DELETE2(w->queue, t, wprev, wnext);
		w->n_queued--;
		s->n_queued--;
		t->w = NULL;
		t->state = MASTER_SCHED_TASK_IDLE;
		t->was_queued = 0;
		enqueue(s, t);
		n++;
	}
	debug(D_WQ, "sched: worker %s removed, %d tasks back to ready", w->id, n);
	HASH_DEL(s->workers, w);
	free(w->id);
	free_strv(w->features, w->n_features);
	free(w);
	return n;
}

const char *master_sched_worker_id(const struct master_sched_worker *w)
{
	return w->id;
}

void *master_sched_worker_data(const struct master_sched_worker *w)
{
	return w->data;
}

void master_sched_worker_total(const struct master_sched_worker *w, struct master_sched_box *total)
{
	master_sched_box_from(w->total, total);
}

void master_sched_worker_free(const struct master_sched_worker *w,
                              struct master_sched_box *free_res)
{
	int64_t f[NRES];
	for (int k = 0; k < NRES; k++)
		f[k] = w->total[k] - w->used[k];
	master_sched_box_from(f, free_res);
	free_res->cores = (double)f[R_CORES] / MILLI; /* negative is a value here, not "unset" */
}

int64_t master_sched_worker_running(const struct master_sched_worker *w)
{
	return w->n_running;
}

int64_t master_sched_worker_queued(const struct master_sched_worker *w)
{
	return w->n_queued;
}

int64_t master_sched_prefetch_examined(const struct master_sched *s)
{
	return s->prefetch_examined;
}

int master_sched_worker_queue_max(const struct master_sched_worker *w)
{
	return w->queue_max;
}

void master_sched_worker_set_queue_max(struct master_sched *s, struct master_sched_worker *w,
                                       int queue_max)
{
	w->queue_max = queue_max > 0 ? queue_max : 0;
	qreindex(s, w);
}

void master_sched_set_room_cap(struct master_sched *s, int cap)
{
	s->room_cap = cap;
	struct master_sched_worker *w, *tmp;
	HASH_ITER(hh, s->workers, w, tmp)
	{
		sums_update(s, w);
	}
}

void master_sched_sums(const struct master_sched *s, struct master_sched_box *committed,
                       double *free_cores, int64_t *queue_room)
{
	if (committed)
		master_sched_box_from(s->agg_used, committed);
	if (free_cores)
		*free_cores = (double)s->agg_free / MILLI;
	if (queue_room)
		*queue_room = s->agg_room;
}
