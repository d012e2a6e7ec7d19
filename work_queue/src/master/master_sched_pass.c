/* master_sched_pass.c: the deciding half of the Work Queue scheduling core: the resource box of a
 * task on a worker (explicit values, then the category, then a proportional share or the whole
 * worker), the worker policies, and the scheduling pass over the ready heaps. The data
 * structures are in master_sched_internal.h; doc/work-queue-api.md section 6 is the design. */
#include "master_sched.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "debug.h"
#include "heap.h"
#include "master_sched_internal.h"
#include "banned.h"

/* The explicit and category-decided part of the class's box, for pass PASS. */
static void class_alloc(struct tclass *c, uint64_t pass)
{
	struct rmsummary req, a;
	rmsummary_init(&req);
	rmsummary_init(&a);
	for (int k = 0; k < NRES; k++)
		req.v[master_sched_rm_field[k]] =
		    c->req[k] < 0 ? -1 : (double)c->req[k] / (k == R_CORES ? MILLI : 1);
	category_allocation(c->cat->cat, &req, c->level, &a);
	int fixed = category_get_mode(c->cat->cat) == CATEGORY_MODE_FIXED;
	c->whole = 0;
	for (int k = 0; k < NRES; k++) {
		double v = a.v[master_sched_rm_field[k]];
		if (c->req[k] >= 0) {
			c->alloc[k] = c->req[k]; /* explicit values win */
		} else if (v >= 0 && isfinite(v)) {
			c->alloc[k] = k == R_CORES ? (int64_t)ceil(v * MILLI - 1e-6)
			                           : (int64_t)ceil(v - 1e-9);
		} else {
			c->alloc[k] = -1;
			/* A sizing category with no value yet (measuring phase, or a retry with no
			 * maximum): the whole worker, so the real need can be measured. */
			if (!fixed)
				c->whole |= 1u << k;
		}
	}
	c->alloc_pass = pass;
}

/* The memory a task of C starts with on a worker that grows in steps of STEP (MB), below its
 * computed WARMUP estimate (category_growth_start); -1 when it starts at alloc. Only for a
 * first try whose memory the category computed (a declared value is a promise). */
static int64_t growth_start(struct tclass *c, int64_t step)
{
	if (step <= 0 || c->req[R_MEMORY] >= 0 || c->alloc[R_MEMORY] <= 0 ||
	    c->level != CATEGORY_LEVEL_FIRST)
		return -1;
	int64_t measured = category_measurements(c->cat->cat);
	/* each measurement may move the start, but after the first few hundred it moves little:
	 * then recomputed once the count has grown by 1/32 (the search is O(64 x peaks kept)) */
	int64_t since = measured - c->grow_measured;
	int stale = since != 0 && (measured < 256 || since >= measured / 32);
	if (c->grow_step != step || stale || c->grow_alloc != c->alloc[R_MEMORY]) {
		c->grow_step = step;
		c->grow_measured = measured;
		c->grow_alloc = c->alloc[R_MEMORY];
		double s = category_growth_start(c->cat->cat, (double)step);
		int64_t was = c->grow_start;
		c->grow_start =
		    s > 0 && s < (double)c->alloc[R_MEMORY] ? (int64_t)ceil(s - 1e-9) : -1;
		if (c->grow_start > 0 && c->grow_start != was)
			debug(D_WQ,
			      "sched: category %s: tasks start with %" PRId64
			      " MB of memory (estimate "
			      "%" PRId64 " MB) on workers that grow in steps of %" PRId64 " MB",
			      category_name(c->cat->cat), c->grow_start, c->alloc[R_MEMORY], step);
	}
	return c->grow_start;
}

static int has_features(const struct tclass *c, const struct master_sched_worker *w)
{
	/* Both lists are sorted: one merge. */
	int j = 0;
	for (int i = 0; i < c->n_features; i++) {
		while (j < w->n_features && strcmp(w->features[j], c->features[i]) < 0)
			j++;
		if (j >= w->n_features || strcmp(w->features[j], c->features[i]) != 0)
			return 0;
		j++;
	}
	return 1;
}

/* The box of class C on worker W in BOX; 0 if it can have none there (missing feature, or a
 * request larger than the worker). Whether it fits the free resources is not checked. */
/* The cores (millicores) of a task of C on a worker that lends idle cores: its category's
 * average use (category_lent_cores), below the computed WARMUP estimate; -1 when it gets
 * alloc. Only for a first try whose cores the category computed. */
static int64_t lent_cores(struct tclass *c)
{
	if (c->req[R_CORES] >= 0 || c->alloc[R_CORES] <= 0 || c->level != CATEGORY_LEVEL_FIRST)
		return -1;
	int64_t measured = category_measurements(c->cat->cat);
	if (c->lent_measured != measured || c->lent_alloc != c->alloc[R_CORES] ||
	    c->lent_cores == 0) {
		c->lent_measured = measured;
		c->lent_alloc = c->alloc[R_CORES];
		double v = category_lent_cores(c->cat->cat);
		int64_t m = v > 0 ? (int64_t)ceil(v * MILLI - 1e-6) : -1, was = c->lent_cores;
		c->lent_cores = m > 0 && m < c->alloc[R_CORES] ? m : -1;
		if (c->lent_cores > 0 && c->lent_cores != was)
			debug(
			    D_WQ,
			    "sched: category %s: tasks get %g cores (estimate %g) on workers that "
			    "lend idle cores",
			    category_name(c->cat->cat), (double)c->lent_cores / MILLI,
			    (double)c->alloc[R_CORES] / MILLI);
	}
	return c->lent_cores;
}

static int box_on(struct tclass *c, const struct master_sched_worker *w, int64_t box[NRES])
{
	if (c->n_features && !has_features(c, w))
		return 0;
	int any = 0, open = 0;
	for (int k = 0; k < NRES; k++) {
		box[k] = c->alloc[k];
		if (box[k] >= 0)
			any = 1;
		else if (c->whole & (1u << k))
			box[k] = w->total[k];
		else
			open = 1;
	}
	int64_t start =
	    !c->own_container || w->grows_containers ? growth_start(c, w->grow_step_mb) : -1;
	if (start > 0)
		box[R_MEMORY] = start; /* the worker grows it to its need while it runs */
	int64_t cores = w->lends_cores ? lent_cores(c) : -1;
	if (cores > 0)
		box[R_CORES] = cores; /* a burst above it runs on lent cores */
	if (!any && !c->whole) {
		/* Nothing specified anywhere: the whole worker. */
		memcpy(box, w->total, sizeof w->total);
		return 1;
	}
	if (!open)
		return 1;
	/* A proportional share: the largest fraction of the worker that the given values take. */
	double frac = 0;
	for (int k = 0; k < NRES; k++) {
		if (c->alloc[k] < 0)
			continue;
		if (w->total[k] > 0) {
			double f = (double)c->alloc[k] / (double)w->total[k];
			if (f > frac)
				frac = f;
		} else if (c->alloc[k] > 0) {
			return 0;
		}
	}
	if (frac > 1)
		return 0;
	for (int k = 0; k < NRES; k++) {
		if (box[k] >= 0)
			continue;
		if (k == R_CORES) {
			/* Whole cores, at least one when the worker has one. */
			int64_t v =
			    (int64_t)ceil(frac * (double)w->total[k] / MILLI - 1e-9) * MILLI;
			if (v < MILLI)
				v = MILLI;
			box[k] = v > w->total[k] ? w->total[k] : v;
		} else if (k == R_GPUS) {
			box[k] = 0; /* gpus only when asked for */
		} else {
			box[k] = (int64_t)floor(frac * (double)w->total[k] + 1e-9);
		}
	}
	return 1;
}

static int fits(const struct master_sched_worker *w, const int64_t box[NRES])
{
	for (int k = 0; k < NRES; k++)
		if (box[k] > w->total[k] - w->used[k])
			return 0;
	return 1;
}

int master_sched_box_for(struct master_sched *s, const struct master_sched_task *t,
                         const struct master_sched_worker *w, struct master_sched_box *box)
{
	if (!s || !t || !w || !box || !t->cls)
		return -EINVAL;
	struct tclass *c = t->cls;
	class_alloc(c, 0); /* 0: recomputed at the next pass anyway */
	int64_t b[NRES];
	if (!box_on(c, w, b))
		return 0;
	master_sched_box_from(b, box);
	return fits(w, b);
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* ---- images (master_sched_set_image_fn) ---- */

void master_sched_image_refresh(struct master_sched *s, struct tclass *c,
                                struct master_sched_task *t, uint64_t pass)
{
	struct simage *im = c->img;
	if (!im || !s->image_fn || im->pass == pass)
		return;
	im->pass = pass;
	im->first = NULL;
	im->where = MASTER_SCHED_IMAGE_ABSENT;
	if (!im->travels)
		return; /* only the preference applies */
	struct master_sched_worker *w, *tmp;
	HASH_ITER(hh, s->workers, w, tmp)
	{
		enum master_sched_image_state st = s->image_fn(w->data, t->data, s->image_arg);
		if (st > im->where)
			im->where = st;
		if (im->where == MASTER_SCHED_IMAGE_HELD)
			break;
	}
}

int master_sched_image_allows(const struct tclass *c, const struct master_sched_worker *w,
                              enum master_sched_image_state state)
{
	const struct simage *im = c->img;
	if (!im || !im->travels || im->where == MASTER_SCHED_IMAGE_HELD ||
	    state != MASTER_SCHED_IMAGE_ABSENT)
		return 1;
	/* held nowhere: on its way to a worker (or given to one in this pass), others wait */
	if (im->first)
		return w == im->first;
	return im->where == MASTER_SCHED_IMAGE_ABSENT;
}

/* After T of class C went to W: an image that was nowhere has its one first fetch there. */
static void image_placed(struct tclass *c, struct master_sched_worker *w)
{
	struct simage *im = c->img;
	if (im && im->travels && im->where == MASTER_SCHED_IMAGE_ABSENT && !im->first)
		im->first = w;
}

static enum master_sched_image_state image_state(struct master_sched *s, const struct tclass *c,
                                                 const struct master_sched_worker *w,
                                                 const struct master_sched_task *t)
{
	if (!c->img || !s->image_fn)
		return MASTER_SCHED_IMAGE_ABSENT;
	return s->image_fn(w->data, t->data, s->image_arg);
}

struct choice {
	struct master_sched_worker *w;
	int64_t box[NRES];
	enum master_sched_image_state img; /* FILES, first */
	int64_t bytes;                     /* FILES */
	double avg;                        /* TIME */
	int64_t left;                      /* WORST: free cores after placement */
};

/* Is candidate N better than the current choice B under POLICY? */
static int better(enum master_sched_policy policy, const struct choice *n, const struct choice *b)
{
	if (!b->w)
		return 1;
	int earlier = n->w->seq < b->w->seq;
	switch (policy) {
	case MASTER_SCHED_FILES:
		if (n->img != b->img)
			return n->img > b->img;
		if (n->bytes != b->bytes)
			return n->bytes > b->bytes;
		return earlier;
	case MASTER_SCHED_TIME:
		if ((n->avg >= 0) != (b->avg >= 0))
			return n->avg >= 0; /* a known time beats an unknown one */
		if (n->avg >= 0 && n->avg != b->avg)
			return n->avg < b->avg;
		return earlier;
	case MASTER_SCHED_WORST:
		if (n->left != b->left)
			return n->left > b->left;
		return earlier;
	case MASTER_SCHED_FCFS:
	case MASTER_SCHED_RAND: break;
	}
	return earlier;
}

/* The worker for task T of class C, looking at most MAXCAND fitting workers of the free-cores
 * index; NULL if none fits. */
static int choose(struct master_sched *s, struct tclass *c, struct master_sched_task *t,
                  const struct master_sched_pass_opts *o, int maxcand, uint64_t *rng,
                  struct choice *best, struct master_sched_pass_stats *st)
{
	memset(best, 0, sizeof *best);
	if (s->n_buckets == 0)
		return 0;
	/* Workers with fewer free cores than the box's cores cannot fit it (the smaller box of a
	 * worker that lends cores, if there is one). */
	int64_t need = c->alloc[R_CORES], lent = s->n_lenders > 0 ? lent_cores(c) : -1;
	if (lent > 0 && lent < need)
		need = lent;
	int64_t lb = need > 0 ? need / MILLI : 0;
	if (lb >= s->n_buckets)
		lb = s->n_buckets - 1;
	int worst = o->policy == MASTER_SCHED_WORST;
	int ncand = 0;
	for (int i = 0; i < s->n_buckets; i++) {
		int64_t b = worst ? s->n_buckets - 1 - i : lb + i;
		if (b >= s->n_buckets || b < lb)
			break;
		for (struct master_sched_worker *w = s->buckets[b]; w; w = w->bnext) {
			struct choice n;
			st->workers_examined++;
			if (!box_on(c, w, n.box) || !fits(w, n.box))
				continue;
			n.img = image_state(s, c, w, t);
			if (!master_sched_image_allows(c, w, n.img))
				continue;
			n.w = w;
			n.bytes = 0;
			n.avg = -1;
			n.left = 0;
			ncand++;
			switch (o->policy) {
			case MASTER_SCHED_FILES:
				n.bytes = s->cached_fn
				              ? s->cached_fn(w->data, t->data, s->cached_arg)
				              : 0;
				break;
			case MASTER_SCHED_TIME: n.avg = master_sched_worker_average_time(w); break;
			case MASTER_SCHED_WORST:
				n.left = w->total[R_CORES] - w->used[R_CORES] - n.box[R_CORES];
				break;
			case MASTER_SCHED_FCFS:
			case MASTER_SCHED_RAND: break;
			}
			if (o->policy == MASTER_SCHED_RAND) {
				/* Reservoir sampling: the k-th candidate replaces with 1/k. */
				if (rng_next(rng) % (uint64_t)ncand == 0)
					*best = n;
			} else if (better(o->policy, &n, best)) {
				*best = n;
			}
			if (ncand >= maxcand)
				return 1;
		}
	}
	return best->w != NULL;
}

void master_sched_pass_opts_init(struct master_sched_pass_opts *o)
{
	memset(o, 0, sizeof *o);
	o->policy = MASTER_SCHED_FILES;
}

static void mark_pending(struct master_sched *s, struct group *g)
{
	if (g->pending)
		return;
	g->pending = 1;
	g->pnext = s->pending;
	s->pending = g;
}

/* The resources (bits 1 << k) that task boxes of class C take whole from the worker. */
static unsigned whole_mask(const struct tclass *c)
{
	unsigned whole = 0;
	for (int k = 0; k < NRES; k++)
		if (c->alloc[k] < 0)
			whole |= (c->whole & (1u << k));
	return whole;
}

/* After a task was taken from group G: its next head goes back into the pass's heap PH, or
 * an emptied group waits to be freed at the end of the pass. */
static void group_taken(struct master_sched *s, struct heap *ph, struct group *g)
{
	if (g->live > 0) {
		struct master_sched_task *h = master_sched_group_head(g);
		heap_push(ph, (int64_t)h->seq, g);
	} else {
		mark_pending(s, g);
	}
}

/* Frees the groups emptied during a pass, now that no level is being walked. */
static void free_pending(struct master_sched *s)
{
	while (s->pending) {
		struct group *g = s->pending;
		s->pending = g->pnext;
		g->pending = 0;
		if (g->live == 0)
			master_sched_group_free(s, g);
	}
}
int master_sched_pass(struct master_sched *s, const struct master_sched_pass_opts *opts,
                      struct master_sched_assignment *out, size_t max_out,
                      struct master_sched_pass_stats *stats)
{
	if (!s || !opts || (!out && max_out > 0) || (unsigned)opts->policy > MASTER_SCHED_RAND)
		return -EINVAL;
	struct master_sched_pass_stats st;
	memset(&st, 0, sizeof st);
	size_t budget = opts->max_assignments > 0 ? (size_t)opts->max_assignments : DEFAULT_BUDGET;
	if (budget > max_out)
		budget = max_out;
	int maxcand = opts->max_candidates > 0 ? opts->max_candidates : DEFAULT_CANDIDATES;
	uint64_t fixed_seed = UINT64_C(0x5eed);
	uint64_t *rng = opts->rng ? opts->rng : &fixed_seed;
	uint64_t pass = ++s->pass_id;
	struct heap *ph = s->pass_heap;
	size_t n = 0;
	if (isfinite(opts->now) && opts->now > s->last_now)
		s->last_now = opts->now;

	for (size_t li = 0; li < s->n_levels && n < budget && s->n_free > 0; li++) {
		struct level *lv = s->levels[li];
		struct group *g;
		/* The heads of this priority level, merged by submission order. */
		DL_FOREACH(lv->groups, g)
		{
			struct tclass *c = g->key.cls;
			if (g->live <= 0 || c->blocked_pass == pass || c->cat->full_pass == pass)
				continue;
			struct master_sched_task *h = master_sched_group_head(g);
			if (h)
				heap_push(ph, (int64_t)h->seq, g);
		}
		while (heap_size(ph) > 0) {
			g = heap_pop(ph, NULL);
			if (n >= budget || s->n_free == 0)
				continue; /* drain the merge heap */
			struct tclass *c = g->key.cls;
			struct wcat *wc = c->cat;
			if (c->blocked_pass == pass || wc->full_pass == pass)
				continue;
			if (wc->max_concurrent >= 0 && wc->running >= wc->max_concurrent) {
				wc->full_pass = pass;
				st.categories_full++;
				continue;
			}
			/* WARMUP: the category's first task runs alone to be measured; the
			 * others wait for its measurement rather than each take a whole worker. */
			if (wc->running > 0 && category_warming(wc->cat)) {
				wc->full_pass = pass;
				st.categories_full++;
				continue;
			}
			if (c->alloc_pass != pass)
				class_alloc(c, pass);
			struct master_sched_task *t = master_sched_group_head(g);
			master_sched_image_refresh(s, c, t, pass);
			st.heads_tried++;
			struct choice ch;
			if (!choose(s, c, t, opts, maxcand, rng, &ch, &st)) {
				/* Every task of the class would get the same answer. */
				c->blocked_pass = pass;
				st.classes_blocked++;
				continue;
			}
			heap_pop(g->h, NULL);
			g->live--;
			s->n_ready--;
			image_placed(c, ch.w);
			master_sched_commit(s, t, ch.w, ch.box, whole_mask(c), opts->now);
			out[n].task = t;
			out[n].worker = ch.w;
			master_sched_box_from(ch.box, &out[n].box);
			n++;
			group_taken(s, ph, g);
		}
	}
	free_pending(s);
	if (n > 0 || st.classes_blocked > 0)
		debug(D_WQ, "sched: pass %llu: %zu assigned, %lld heads, %lld workers examined",
		      (unsigned long long)pass, n, (long long)st.heads_tried,
		      (long long)st.workers_examined);
	if (stats)
		*stats = st;
	return (int)n;
}

/* ---- prefetch ---- */

void master_sched_prefetch_opts_init(struct master_sched_prefetch_opts *o)
{
	memset(o, 0, sizeof *o);
	o->per_worker = -1;
	o->max_task_seconds = 1.0;
	o->container_task_seconds = MASTER_SCHED_CONTAINER_PREFETCH_S;
}

/* How many queued tasks W may hold under PER_WORKER (0: none). */
static int64_t queue_limit(const struct master_sched_worker *w, int per_worker)
{
	if (w->flags || w->queue_max <= 0 || per_worker == 0)
		return 0;
	if (per_worker < 0 || per_worker > w->queue_max)
		return w->queue_max;
	return per_worker;
}

static int fits_total(const struct master_sched_worker *w, const int64_t box[NRES])
{
	for (int k = 0; k < NRES; k++)
		if (box[k] > w->total[k])
			return 0;
	return 1;
}

/* Queued counts below this may leave room under PER_WORKER: buckets from it on are full. */
static int qbucket_limit(const struct master_sched *s, int per_worker)
{
	int lim = s->max_queue_max;
	if (per_worker >= 0 && per_worker < lim)
		lim = per_worker;
	return lim < QUEUE_BUCKETS ? lim : QUEUE_BUCKETS;
}

/* The worker with room in its queue whose total fits class C (the fewest queued tasks first,
 * then the one that has had that count longest), with the box in BOX; NULL if none. It walks
 * the index by queued count (master_sched.c), not every worker. */
static struct master_sched_worker *prefetch_choose(struct master_sched *s, struct tclass *c,
                                                   const struct master_sched_task *t,
                                                   int per_worker, int64_t box[NRES])
{
	int lim = qbucket_limit(s, per_worker);
	for (int b = 0; b < lim; b++) {
		for (struct master_sched_worker *w = s->qbuckets[b]; w; w = w->qnext) {
			s->prefetch_examined++;
			if (w->n_queued >= queue_limit(w, per_worker) || !box_on(c, w, box) ||
			    !fits_total(w, box) ||
			    !master_sched_image_allows(c, w, image_state(s, c, w, t)))
				continue;
			return w;
		}
	}
	return NULL;
}

/* Some worker has room in its queue under PER_WORKER. */
static int prefetch_room(struct master_sched *s, int per_worker)
{
	int lim = qbucket_limit(s, per_worker);
	for (int b = 0; b < lim; b++)
		for (const struct master_sched_worker *w = s->qbuckets[b]; w; w = w->qnext) {
			s->prefetch_examined++;
			if (w->n_queued < queue_limit(w, per_worker))
				return 1;
		}
	return 0;
}

/* A class may be prefetched: its category is measured and short (MAX_S; CTR_S when longer, for
 * tasks in a container of their own), and has no concurrency cap. */
static int prefetchable(const struct tclass *c, double max_s, double ctr_s)
{
	const struct wcat *wc = c->cat;
	if (wc->wall_n <= 0 || wc->max_concurrent >= 0)
		return 0;
	if (c->own_container && ctr_s > max_s)
		max_s = ctr_s;
	return wc->wall_sum / (double)wc->wall_n <= max_s;
}

int master_sched_prefetch(struct master_sched *s, const struct master_sched_prefetch_opts *opts,
                          struct master_sched_assignment *out, size_t max_out)
{
	if (!s || !opts || (!out && max_out > 0) || opts->per_worker < -1 ||
	    !(opts->max_task_seconds >= 0) || !(opts->container_task_seconds >= 0))
		return -EINVAL;
	if (isfinite(opts->now) && opts->now > s->last_now)
		s->last_now = opts->now;
	size_t budget = opts->max_assignments > 0 ? (size_t)opts->max_assignments : DEFAULT_BUDGET;
	if (budget > max_out)
		budget = max_out;
	if (budget == 0 || s->n_ready == 0 || !prefetch_room(s, opts->per_worker))
		return 0;
	struct master_sched_worker *w;
	uint64_t pass = ++s->pass_id;
	struct heap *ph = s->pass_heap;
	size_t n = 0;
	for (size_t li = 0; li < s->n_levels && n < budget; li++) {
		struct level *lv = s->levels[li];
		struct group *g;
		DL_FOREACH(lv->groups, g)
		{
			struct tclass *c = g->key.cls;
			if (g->live <= 0 || c->blocked_pass == pass)
				continue;
			struct master_sched_task *h = master_sched_group_head(g);
			if (h)
				heap_push(ph, (int64_t)h->seq, g);
		}
		while (heap_size(ph) > 0) {
			g = heap_pop(ph, NULL);
			if (n >= budget)
				continue; /* drain the merge heap */
			struct tclass *c = g->key.cls;
			if (c->blocked_pass == pass)
				continue;
			if (!prefetchable(c, opts->max_task_seconds,
			                  opts->container_task_seconds) ||
			    category_warming(c->cat->cat)) {
				c->blocked_pass = pass;
				continue;
			}
			if (c->alloc_pass != pass)
				class_alloc(c, pass);
			int64_t box[NRES];
			struct master_sched_task *t = master_sched_group_head(g);
			master_sched_image_refresh(s, c, t, pass);
			w = prefetch_choose(s, c, t, opts->per_worker, box);
			if (!w) {
				c->blocked_pass = pass;
				continue;
			}
			image_placed(c, w);
			heap_pop(g->h, NULL);
			g->live--;
			s->n_ready--;
			master_sched_enqueue_on(s, t, w, box, whole_mask(c));
			out[n].task = t;
			out[n].worker = w;
			master_sched_box_from(box, &out[n].box);
			n++;
			group_taken(s, ph, g);
		}
	}
	free_pending(s);
	if (n > 0)
		debug(D_WQ, "sched: prefetch %llu: %zu queued", (unsigned long long)pass, n);
	return (int)n;
}
