/* master_sched.h: the scheduling core of the Work Queue master: the ready tasks (ordered by
 * priority, then submission), the workers' resources, the resource box a task gets on a worker
 * (explicit values, then the category, then a proportional share) and the scheduling pass that
 * assigns tasks to workers under a policy. Pure bookkeeping: no network, no clock (instants are
 * passed in), no I/O. doc/work-queue-api.md sections 2.2 and 6 are the reference. */
#ifndef HTC_MASTER_SCHED_H
#define HTC_MASTER_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "category.h"
#include "work_queue.h"

/* How the pass chooses among the workers that fit a task (doc/work-queue-api.md 2.1). */
enum master_sched_policy {
	MASTER_SCHED_FCFS = 0, /* first fit in worker order (order in which workers were added) */
	MASTER_SCHED_FILES,    /* most cached input bytes (the cached-bytes hook); ties: FCFS */
	MASTER_SCHED_TIME,     /* fastest average task wall time; workers without history last */
	MASTER_SCHED_WORST,    /* most free cores left after placement; ties: FCFS */
	MASTER_SCHED_RAND,     /* uniform among the candidates, from the caller's seeded state */
};

/* "fcfs", "files", "time", "worst", "rand" (case-insensitive). 0 or -EINVAL. */
int master_sched_policy_parse(const char *s, enum master_sched_policy *policy);
const char *master_sched_policy_name(enum master_sched_policy policy); /* static */

/* Worker flags: a worker with any of them set gets no new task. */
enum master_sched_worker_flags {
	MASTER_SCHED_BLOCKED = 1,  /* its host is on the blocklist */
	MASTER_SCHED_DRAINING = 2, /* told to drain: finishes what it has */
	MASTER_SCHED_FULL = 4,     /* the master decided it has enough (e.g. transfers pending) */
};

/* A set of resources: cores (fractions allowed, kept to a thousandth), memory and disk in MB,
 * gpus. In a request, -1 means unspecified (other negative values are refused). */
struct master_sched_box {
	double cores;
	int64_t memory;
	int64_t disk;
	int64_t gpus;
};

/* What the scheduler needs of a task. Strings and arrays are copied. */
struct master_sched_task_spec {
	double priority;                 /* higher first */
	const char *category;            /* NULL: "default" */
	struct master_sched_box request; /* -1 = unspecified */
	const char *const *features;     /* required worker labels */
	int n_features;
	/* The container image the task names, as a key equal for every task of that image (NULL:
	 * none), and whether it travels to the worker (an archive sent as a cached input: the
	 * first-fetch rule below applies) or is only named (an image the engine may have). */
	const char *image;
	int image_travels;
	/* The task runs in a container of its own (its worker makes one for it): worth queuing
	 * ahead for longer (master_sched_prefetch_opts.container_task_seconds). */
	int own_container;
	void *data; /* the caller's (e.g. its work_queue_task); never touched */
};

/* Priority 0, no category, nothing requested, no feature, data NULL. */
void master_sched_task_spec_init(struct master_sched_task_spec *spec);
/* Fills SPEC from the public task T (priority, category, resources_requested, features);
 * data = T. The pointers borrow T's strings until master_sched_task_add copies them. */
void master_sched_task_spec_from_task(struct master_sched_task_spec *spec,
                                      const struct work_queue_task *t);

/* What the scheduler needs of a worker. Strings and arrays are copied. */
struct master_sched_worker_spec {
	const char *id;                /* unique among the workers added */
	struct master_sched_box total; /* all >= 0 */
	const char *const *features;   /* labels (--feature) */
	int n_features;
	int queue_max; /* queued tasks it accepts beyond its free resources; 0: no prefetch */
	/* > 0: it grows a running task's memory in steps of this (MB), so a WARMUP task may start
	 * there below its category's estimate (category_growth_start); 0: it does not */
	int64_t grow_step_mb;
	/* it lends idle cores to tasks that use all of theirs, so a WARMUP task may be allocated
	 * its category's average use of cores there (category_lent_cores) */
	int lends_cores;
	/* its growth reaches a task in a container of its own (cgroup v1: the container is nested
	 * in the task's cgroup; doc/elasticity.md); else such a task starts at the estimate */
	int grows_containers;
	void *data; /* the caller's (e.g. its connection); never touched */
};

/* FILES policy: the bytes of the task's inputs already cached on the worker (called with the
 * data pointers of the worker and the task). */
typedef int64_t (*master_sched_cached_bytes_fn)(void *worker_data, void *task_data, void *arg);

/* What a worker has of the image of a task that names one (doc/work-queue-docker.md,
 * "Image-aware scheduling"). */
enum master_sched_image_state {
	MASTER_SCHED_IMAGE_ABSENT = 0, /* neither held nor on its way */
	MASTER_SCHED_IMAGE_COMING,     /* its archive is being sent to the worker */
	MASTER_SCHED_IMAGE_HELD,       /* loaded in the worker's engine, or its archive cached */
};
/* The state of the task's image on the worker (called with the data pointers of the worker and
 * of a task whose spec named an image). */
typedef enum master_sched_image_state (*master_sched_image_fn)(void *worker_data, void *task_data,
                                                               void *arg);

struct master_sched;        /* opaque */
struct master_sched_task;   /* opaque; owned by the scheduler */
struct master_sched_worker; /* opaque; owned by the scheduler */

enum master_sched_task_state {
	MASTER_SCHED_TASK_READY = 0, /* waiting in its heap */
	MASTER_SCHED_TASK_RUNNING,   /* assigned: its box is committed on its worker */
	MASTER_SCHED_TASK_IDLE,      /* released, neither ready nor running (done, or to requeue) */
	MASTER_SCHED_TASK_QUEUED,    /* prefetched: in its worker's queue, box not committed yet */
};

/* A new, empty scheduler. Never NULL. */
struct master_sched *master_sched_create(void);
/* Frees the scheduler with every task, worker and category handle. The data pointers are not
 * touched. NULL is ok. */
void master_sched_delete(struct master_sched *s);

/* The category NAME (NULL: "default"), created in FIXED mode on first use. Owned by the
 * scheduler: configure it with category.h (mode, max, min, ...) and feed it measurements with
 * category_accumulate / category_record; boxes follow the change at the next pass. The
 * scheduler never sets the largest worker: where the category leaves a resource open (-1), a
 * non-FIXED category gives the whole worker's value, a FIXED one a proportional share. */
struct category *master_sched_category(struct master_sched *s, const char *name);
/* At most N tasks of category NAME running at once; N < 0: unlimited (the default). 0. */
int master_sched_category_set_max_concurrent(struct master_sched *s, const char *name, int n);
/* Tasks of category NAME now running. */
int64_t master_sched_category_running(struct master_sched *s, const char *name);
/* One measured wall time (seconds >= 0) of a completed task of category NAME (prefetch). */
void master_sched_category_record_time(struct master_sched *s, const char *name, double wall_s);
/* The mean of the recorded wall times of category NAME, or -1 when none was recorded. */
double master_sched_category_mean_time(struct master_sched *s, const char *name);

/* The hook of the FILES policy (NULL: every worker has 0 bytes, FILES acts as FCFS). */
void master_sched_set_cached_bytes_fn(struct master_sched *s, master_sched_cached_bytes_fn fn,
                                      void *arg);

/* The image hook (NULL: no worker holds any image; no preference, no first-fetch rule).
 *
 * With it, under every policy, a task whose image travels (spec.image_travels) and that no
 * worker holds goes to one worker only: while its archive is on its way to that worker (COMING
 * there, HELD nowhere) the other tasks of the image go only to workers where it is COMING, and
 * wait otherwise; once one worker holds it, they may go anywhere (each other worker then fetches
 * it once). Under FILES, a worker that holds the task's image (HELD) comes before one it is
 * coming to, which comes before the others; cached bytes decide among equals, then FCFS. */
void master_sched_set_image_fn(struct master_sched *s, master_sched_image_fn fn, void *arg);

/* ---- tasks ---- */

/* Queues a task as READY at CATEGORY_LEVEL_FIRST, after every task submitted before it. NULL
 * with errno EINVAL for a bad spec (NaN or infinite priority, a negative request other than
 * -1, a NULL or empty feature name), with the reason at debug(D_WQ). */
struct master_sched_task *master_sched_task_add(struct master_sched *s,
                                                const struct master_sched_task_spec *spec);
/* The checks of master_sched_task_add without adding anything: 0, or -EINVAL for a bad SPEC (with
 * the reason at debug(D_WQ)). */
int master_sched_task_spec_check(const struct master_sched_task_spec *spec);
/* Takes a task out whatever its state (a running one's box is released first, with no wall
 * time recorded) and frees the handle. Returns the task's data. */
void *master_sched_task_remove(struct master_sched *s, struct master_sched_task *t);
/* The task ended on its worker at instant NOW (seconds, any epoch shared with the pass): frees
 * exactly the box committed, adds the wall time (NOW - start) to the worker's history, and the
 * task becomes IDLE. A QUEUED task leaves its worker's queue (no time recorded) and becomes
 * IDLE. Either way the worker then commits queued tasks from the head of its queue while they
 * fit (promotion). -EINVAL if it is neither RUNNING nor QUEUED.
 *
 * Promotion happens after every release of a box or removal from a queue, whatever the call
 * (release, remove, requeue, exhausted): the worker's own FIFO does the same, so both agree. */
int master_sched_task_release(struct master_sched *s, struct master_sched_task *t, double now);
/* Puts an IDLE or RUNNING (released first, no time recorded) task back among the ready ones at
 * LEVEL (FIRST or MAX) in its original place (same priority, same submission order). 0, or
 * -EINVAL (already READY, or LEVEL is not FIRST/MAX). */
int master_sched_task_requeue(struct master_sched *s, struct master_sched_task *t,
                              enum category_level level);
/* The try exhausted the fields EXHAUSTED (bits 1 << RM_*): a RUNNING task is released at NOW,
 * category_next_level decides. Returns 1 when the task is back in the ready heaps at
 * CATEGORY_LEVEL_MAX (same place), 0 when it must fail (it is then IDLE), -EINVAL if it is
 * READY. */
int master_sched_task_exhausted(struct master_sched *s, struct master_sched_task *t,
                                uint64_t exhausted, double now);

/* The fields (bits 1 << RM_*) of the task's last box whose size the master chose: neither the
 * task nor its category gave a value, and the box took a share or the whole of the worker. */
uint64_t master_sched_task_chosen(const struct master_sched_task *t);
void *master_sched_task_data(const struct master_sched_task *t);
enum master_sched_task_state master_sched_task_state(const struct master_sched_task *t);
enum category_level master_sched_task_level(const struct master_sched_task *t);
/* The task's worker said it started (`task_running`) at NOW. A QUEUED task is committed, with
 * every task before it in its worker's queue (the worker commits in order); the start of a task
 * that was queued becomes NOW (its running time excludes the time spent queued). Returns how
 * many tasks were committed, or -EINVAL if T is neither RUNNING nor QUEUED. */
int master_sched_task_started(struct master_sched *s, struct master_sched_task *t, double now);
/* The task was prefetched (sent queued), whether or not it is committed since. */
int master_sched_task_was_queued(const struct master_sched_task *t);
/* The worker of a RUNNING or QUEUED task, else NULL. */
struct master_sched_worker *master_sched_task_worker(const struct master_sched_task *t);
/* A RUNNING task was grown or shrunk on its worker to MEMORY_MB: its box and the worker's
 * use follow (a shrink may commit queued tasks). 0, or -EINVAL when T is not RUNNING. */
int master_sched_task_resize_memory(struct master_sched *s, struct master_sched_task *t,
                                    int64_t memory_mb);
/* The box committed for a RUNNING task (its last box otherwise; zeros before any). */
void master_sched_task_box(const struct master_sched_task *t, struct master_sched_box *box);

/* ---- workers ---- */

/* NULL with errno EINVAL (NULL/empty id, negative or non-finite total, bad feature) or EEXIST
 * (id already known). */
struct master_sched_worker *master_sched_worker_add(struct master_sched *s,
                                                    const struct master_sched_worker_spec *spec);
struct master_sched_worker *master_sched_worker_lookup(struct master_sched *s, const char *id);
/* Replaces the worker's labels (e.g. a feature it loses while its container engine is down).
 * 0, or -EINVAL for a NULL or empty label (W keeps its old ones). */
int master_sched_worker_set_features(struct master_sched *s, struct master_sched_worker *w,
                                     const char *const *features, int n_features);
/* The worker reported new totals (what is committed stays committed; a total below it only
 * means nothing more fits). 0 or -EINVAL. */
int master_sched_worker_set_total(struct master_sched *s, struct master_sched_worker *w,
                                  const struct master_sched_box *total);
/* Replaces the flags (enum master_sched_worker_flags). */
void master_sched_worker_set_flags(struct master_sched *s, struct master_sched_worker *w,
                                   unsigned flags);
unsigned master_sched_worker_flags(const struct master_sched_worker *w);
/* Adds one task wall time (seconds, >= 0) to the worker's TIME history (the last 16 count). */
void master_sched_worker_record_time(struct master_sched_worker *w, double wall_s);
/* Mean of the history, or -1 when it is empty. */
double master_sched_worker_average_time(const struct master_sched_worker *w);
/* The worker is gone: its RUNNING and QUEUED tasks go back to READY at their level and in their
 * original place; the handle is freed. Returns how many tasks went back. */
int master_sched_worker_remove(struct master_sched *s, struct master_sched_worker *w);

const char *master_sched_worker_id(const struct master_sched_worker *w);
void *master_sched_worker_data(const struct master_sched_worker *w);
void master_sched_worker_total(const struct master_sched_worker *w, struct master_sched_box *total);
/* Total minus committed (may be negative after a shrinking set_total). */
void master_sched_worker_free(const struct master_sched_worker *w,
                              struct master_sched_box *free_res);
int64_t master_sched_worker_running(const struct master_sched_worker *w);
/* Tasks in the worker's queue (QUEUED), and the queue_max it was added with. */
int64_t master_sched_worker_queued(const struct master_sched_worker *w);
int master_sched_worker_queue_max(const struct master_sched_worker *w);
/* Changes the queue_max (0: no more prefetch to W; tasks already queued stay). */
void master_sched_worker_set_queue_max(struct master_sched *s, struct master_sched_worker *w,
                                       int queue_max);

/* ---- the pass ---- */

struct master_sched_pass_opts {
	enum master_sched_policy policy;
	int max_assignments; /* budget of the pass; <= 0: 1,000 */
	int max_candidates;  /* workers that fit looked at per task; <= 0: 64 */
	uint64_t *rng;       /* RAND: the caller's generator state (advanced); NULL: fixed seed */
	double now;          /* instant of the assignments (start of the wall times) */
};
/* Policy FILES, defaults, now 0. */
void master_sched_pass_opts_init(struct master_sched_pass_opts *o);

struct master_sched_assignment {
	struct master_sched_task *task;
	struct master_sched_worker *worker;
	struct master_sched_box box; /* committed on the worker */
};

/* What a pass did (for tests and benchmarks). */
struct master_sched_pass_stats {
	int64_t heads_tried;      /* tasks taken from a heap head and tried */
	int64_t workers_examined; /* workers whose box and fit were computed */
	int64_t classes_blocked;  /* heaps stopped because their head fit nowhere */
	int64_t categories_full;  /* categories stopped at their max-concurrent */
};

/* One scheduling pass: takes ready tasks in priority order (priority, then submission), each
 * to the worker the policy prefers among those that fit its box, commits the box, and writes
 * the assignments to OUT (at most MAX_OUT, also bounded by the budget). A heap of ready tasks
 * whose head fits nowhere is skipped for the rest of the pass, and the pass stops when no
 * worker has free cores. STATS may be NULL. Returns the number of assignments, or -EINVAL. */
int master_sched_pass(struct master_sched *s, const struct master_sched_pass_opts *opts,
                      struct master_sched_assignment *out, size_t max_out,
                      struct master_sched_pass_stats *stats);

/* The box task T would get on worker W now (whether or not it fits W's free resources): 1 if
 * it fits the free resources, 0 if not, -EINVAL for a bad pair (features missing is 0). */
int master_sched_box_for(struct master_sched *s, const struct master_sched_task *t,
                         const struct master_sched_worker *w, struct master_sched_box *box);

/* ---- prefetch (doc/work-queue-api.md 6) ---- */

/* The default of master_sched_prefetch_opts.container_task_seconds (seconds). */
#define MASTER_SCHED_CONTAINER_PREFETCH_S 10.0

struct master_sched_prefetch_opts {
	int per_worker; /* queued tasks per worker: -1 its queue_max, 0 off, N: min(N, it) */
	double max_task_seconds; /* only categories whose mean wall time is at most this */
	/* for tasks in a container of their own, at most the larger of this and the above: the
	 * worker makes such a task's container while it waits in its queue */
	double container_task_seconds;
	int max_assignments; /* budget; <= 0: 1,000 */
	double now;
};
/* Per worker -1, 1.0 s (10 s in a container of its own), default budget, now 0. */
void master_sched_prefetch_opts_init(struct master_sched_prefetch_opts *o);

/* The second phase, after a pass that could place nothing more: takes ready tasks in priority
 * order and puts each in the queue of a worker (queue_max > 0, no flag, fewer queued tasks than
 * the limit) whose TOTAL fits its box, the one with the fewest queued tasks first (ties: the one
 * that has had that count longest). It looks only at workers with room, through an index by queued
 * count. Only tasks of a category with a recorded mean wall time at most max_task_seconds, and
 * without a max-concurrent limit, are queued. The tasks become QUEUED (their box is fixed now,
 * committed at promotion). A worker with queued tasks gets nothing from master_sched_pass. Writes
 * the assignments to OUT (at most MAX_OUT) and returns their number, or -EINVAL. */
int master_sched_prefetch(struct master_sched *s, const struct master_sched_prefetch_opts *opts,
                          struct master_sched_assignment *out, size_t max_out);

int64_t master_sched_ready_count(const struct master_sched *s);
int64_t master_sched_running_count(const struct master_sched *s);
int64_t master_sched_queued_count(const struct master_sched *s);
/* Workers looked at by master_sched_prefetch so far: its cost, for tests and benchmarks. */
int64_t master_sched_prefetch_examined(const struct master_sched *s);

/* Sums over every worker, kept as tasks and workers change (no walk): COMMITTED, what the
 * workers' running tasks hold; FREE_CORES, the free cores of the workers that have some; and
 * QUEUE_ROOM, the tasks that the queues of unflagged workers taking queued tasks could still
 * take, each capped at the room cap. Any may be NULL. */
void master_sched_sums(const struct master_sched *s, struct master_sched_box *committed,
                       double *free_cores, int64_t *queue_room);
/* Caps each worker's queue room in QUEUE_ROOM at CAP (> 0), none (< 0, the default), or makes
 * it 0 (0: no prefetch). Walks the workers once. */
void master_sched_set_room_cap(struct master_sched *s, int cap);

#endif
