/* master_sched_internal.h: the structures shared by the two halves of the scheduling core,
 * master_sched.c (bookkeeping) and master_sched_pass.c (boxes, policies, the pass). Not a public
 * header: everything else uses master_sched.h. */
#ifndef HTC_MASTER_SCHED_INTERNAL_H
#define HTC_MASTER_SCHED_INTERNAL_H

#include <stdint.h>
#include <uthash.h>

#include "category.h"
#include "heap.h"
#include "master_sched.h"

/* Resources, internally integers so that commit and release cancel exactly: cores in
 * thousandths, memory and disk in MB, gpus. */
#define NRES 4
enum { R_CORES = 0, R_MEMORY, R_DISK, R_GPUS };
#define MILLI 1000
extern const int master_sched_rm_field[NRES]; /* RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS */

#define HISTORY            16   /* wall times kept per worker for TIME */
#define DEFAULT_BUDGET     1000 /* assignments per pass */
#define DEFAULT_CANDIDATES 64   /* fitting workers looked at per task */
#define MAX_BUCKETS        4096 /* free-core buckets; the last holds everything above */
#define QUEUE_BUCKETS      257  /* queued-count buckets (0 .. 256, the protocol's queue_max) */

struct wcat {
	char *name;
	struct category *cat;
	int max_concurrent; /* -1: unlimited */
	int64_t running;
	uint64_t full_pass; /* pass in which max_concurrent was reached */
	double wall_sum;    /* recorded wall times (prefetch) */
	int64_t wall_n;
	UT_hash_handle hh;
};

/* An image named by tasks (master_sched_set_image_fn): where it is, computed once per pass. */
struct simage {
	char *key;
	int travels;
	int64_t refs;                        /* classes */
	uint64_t pass;                       /* the pass for which WHERE and FIRST hold */
	enum master_sched_image_state where; /* the best state on any worker */
	struct master_sched_worker *first;   /* nowhere: the one worker given its first fetch */
	UT_hash_handle hh;
};

/* Tasks of one class get the same box on a given worker and fit the same workers. */
struct tclass {
	char *key;
	struct wcat *cat;
	enum category_level level;
	int64_t req[NRES]; /* the task's own values, -1 unset */
	char **features;   /* sorted */
	int n_features;
	struct simage *img;    /* the image its tasks name, or NULL */
	int own_container;     /* its tasks each run in a container of their own */
	int64_t refs;          /* tasks and groups */
	uint64_t blocked_pass; /* pass in which its head fitted nowhere */
	uint64_t alloc_pass;   /* pass for which alloc/whole were computed */
	int64_t alloc[NRES];   /* explicit or category values, -1 still open */
	unsigned whole;        /* open fields that take the whole worker (non-FIXED modes) */
	/* the memory its tasks start with on a worker growing in steps of grow_step (-1: alloc),
	 * computed for that step, the category's measurements and alloc of that moment */
	int64_t grow_step, grow_measured, grow_alloc, grow_start;
	/* its cores on a worker that lends cores (millicores, -1: alloc), computed for the
	 * category's measurements and alloc of that moment */
	int64_t lent_measured, lent_alloc, lent_cores;
	UT_hash_handle hh;
};

struct gkey {
	struct tclass *cls;
	double prio;
};

/* The ready tasks of one class at one priority: a heap keyed by submission number. */
struct group {
	struct gkey key;
	struct heap *h;
	int64_t live; /* ready tasks in h (the others are dead, freed when they surface) */
	struct level *lvl;
	int pending; /* on the list of groups to free after the pass if still empty */
	struct group *pnext;
	struct group *prev, *next; /* in its level */
	UT_hash_handle hh;
};

/* All groups of one priority. */
struct level {
	double prio;
	struct group *groups;
};

struct master_sched_task {
	uint64_t seq; /* submission order: the key in its heap */
	double prio;
	struct tclass *cls; /* NULL once dead */
	struct group *grp;  /* while READY */
	enum master_sched_task_state state;
	int dead; /* removed while READY: still in its heap */
	void *data;
	int64_t box[NRES];
	unsigned whole; /* fields of box that were the whole worker */
	struct master_sched_worker *w;
	double start;
	int was_queued;                          /* prefetched */
	struct master_sched_task *wprev, *wnext; /* the worker's running tasks, or its queue */
	struct master_sched_task *aprev, *anext; /* every task not dead */
};

struct master_sched_worker {
	char *id;
	uint64_t seq; /* order of addition (FCFS) */
	void *data;
	int64_t total[NRES], used[NRES];
	char **features; /* sorted */
	int n_features;
	unsigned flags;
	int bucket;   /* index by free cores, -1 when not indexed (flags) */
	int has_free; /* counted in n_free */
	struct master_sched_worker *bprev, *bnext;
	double hist[HISTORY];
	int nh, hpos;
	struct master_sched_task *running;
	int64_t n_running;
	struct master_sched_task *queue; /* QUEUED tasks, in the order sent */
	int64_t n_queued;
	int queue_max;
	int64_t grow_step_mb; /* master_sched_worker_spec */
	int lends_cores;      /* master_sched_worker_spec */
	int grows_containers; /* master_sched_worker_spec */
	int qbucket;          /* index by queued count, -1 when not indexed (queue_max 0) */
	struct master_sched_worker *qprev, *qnext;
	int64_t agg_free, agg_room; /* what this worker adds to the sums (sums_update) */
	UT_hash_handle hh;
};

struct master_sched {
	struct wcat *cats;
	struct tclass *classes;
	struct group *groups;
	struct level **levels; /* by descending priority */
	size_t n_levels, cap_levels;
	struct master_sched_worker *workers;  /* by id */
	struct master_sched_worker **buckets; /* bucket b: free cores in [b, b+1) */
	int n_buckets;
	int64_t n_free; /* indexed workers with free cores */
	/* Workers that take queued tasks, by queued count; in each, in the order they entered it.
	 */
	struct master_sched_worker *qbuckets[QUEUE_BUCKETS];
	int max_queue_max; /* the largest queue_max seen */
	int64_t n_lenders; /* workers that lend cores (lends_cores) */
	int64_t prefetch_examined;
	/* Sums over the workers, kept as they change, so that the master's status and hungry
	 * walk no list: committed resources; free cores (milli, workers with some only); room in
	 * the queues of workers that take queued tasks (each capped at room_cap when > 0). */
	int64_t agg_used[NRES], agg_free, agg_room;
	int room_cap;
	struct master_sched_task *all;
	uint64_t next_seq, next_worker_seq, pass_id;
	int64_t n_ready, n_running, n_queued;
	double last_now; /* latest instant given (start of promoted tasks) */
	master_sched_cached_bytes_fn cached_fn;
	void *cached_arg;
	master_sched_image_fn image_fn;
	void *image_arg;
	struct simage *images; /* by key */
	struct heap *pass_heap;
	struct group *pending;
};

/* May task T (of class C, whose image's state is fresh for pass PASS) go to W, whose state of
 * the image is STATE? The first-fetch rule (master_sched.h). */
int master_sched_image_allows(const struct tclass *c, const struct master_sched_worker *w,
                              enum master_sched_image_state state);
/* Brings C's image up to pass PASS (where it is), through T's data. */
void master_sched_image_refresh(struct master_sched *s, struct tclass *c,
                                struct master_sched_task *t, uint64_t pass);
void master_sched_box_from(const int64_t r[NRES], struct master_sched_box *b);
/* The live head of G (dead heads are freed on the way), or NULL. */
struct master_sched_task *master_sched_group_head(struct group *g);
void master_sched_group_free(struct master_sched *s, struct group *g);
void master_sched_commit(struct master_sched *s, struct master_sched_task *t,
                         struct master_sched_worker *w, const int64_t box[NRES], unsigned whole,
                         double now);
/* Appends T (taken from its heap) to W's queue with BOX, then promotes on W. */
void master_sched_enqueue_on(struct master_sched *s, struct master_sched_task *t,
                             struct master_sched_worker *w, const int64_t box[NRES],
                             unsigned whole);

#endif
