/* category.h: per-category resource sizing. A category collects the measured peaks of its
 * finished tasks and turns them into the allocation the next task gets, in one of four modes
 * (FIXED, MAX, MIN_WASTE, MAX_THROUGHPUT); it also keeps the statistics a user sees at the end
 * of a run. The model and the formulas are in doc/allocation.md. Used by makeflow and Work
 * Queue; no I/O. */
#ifndef HTC_CATEGORY_H
#define HTC_CATEGORY_H

#include <stdint.h>

#include "rmsummary.h"

enum category_mode {
	CATEGORY_MODE_FIXED = 0,
	CATEGORY_MODE_MAX,
	CATEGORY_MODE_MIN_WASTE,
	CATEGORY_MODE_MAX_THROUGHPUT,
	/* Not a CCTools mode: the first task of the category runs alone at the ceiling to be
	 * measured, later ones at the largest value measured so far plus a margin, refined on
	 * every measurement (doc/allocation.md, "Warm-up"). */
	CATEGORY_MODE_WARMUP,
};

/* Which allocation a try of a task gets. */
enum category_level {
	/* the computed first allocation (or the max until there is one) */
	CATEGORY_LEVEL_FIRST = 0,
	/* the category maximum / largest worker: a retry after exhaustion */
	CATEGORY_LEVEL_MAX,
	/* exhausted a limit that cannot grow: fails permanently */
	CATEGORY_LEVEL_ERROR,
};

/* The resources categories size (the others in an rmsummary pass through untouched). */
#define CATEGORY_N_SIZED 4
/* RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS */
extern const int category_sized_fields[CATEGORY_N_SIZED];

struct category; /* opaque */

/* What a user sees per category at the end of a run. */
struct category_stats {
	int64_t tasks_done;        /* completed successfully */
	int64_t tasks_failed;      /* ended permanently failed (including CATEGORY_LEVEL_ERROR) */
	int64_t exhaustions;       /* tries killed for exceeding their allocation */
	int64_t retries;           /* tries re-run at CATEGORY_LEVEL_MAX */
	int64_t limit_raises;      /* times a running try's limit was raised instead of a kill */
	struct rmsummary max_seen; /* largest measured values (v[] only) */
	struct rmsummary first_alloc; /* current first allocation; -1 where none computed */
	/* Allocated minus used, integrated over each try's wall time, per field, in unit*seconds
	 * (core-s, MB-s); exhausted tries count their whole allocation. */
	double waste[RM_N_FIELDS];
	double allocated[RM_N_FIELDS]; /* allocated unit*seconds (for a waste fraction) */
};

/* Mode by name: "fixed", "max", "min_waste" or "waste", "max_throughput" or "throughput",
 * "warmup" (case-insensitive). 0, or -EINVAL. */
int category_mode_parse(const char *s, enum category_mode *mode);
/* Static lower-case name ("min_waste"). */
const char *category_mode_name(enum category_mode mode);

/* A new category in FIXED mode with nothing set. NAME is copied. Never NULL. */
struct category *category_create(const char *name);
void category_delete(struct category *c); /* NULL is ok */
const char *category_name(const struct category *c);

void category_set_mode(struct category *c, enum category_mode mode);
enum category_mode category_get_mode(const struct category *c);
/* Explicit maximum / minimum per field (v[] values; -1 = none). Copied. */
void category_set_max(struct category *c, const struct rmsummary *max);
void category_set_min(struct category *c, const struct rmsummary *min);
/* The largest worker (for a local run: the machine), used as A_max for a field with neither an
 * explicit maximum nor a measurement. Copied. */
void category_set_largest_worker(struct category *c, const struct rmsummary *worker);
/* Recompute the first allocation after this many new measurements (default 25, min 1). */
void category_set_update_interval(struct category *c, int n);

/* 1 while C is in WARMUP mode and has no measurement yet: its first task must run alone (the
 * caller holds the category's other tasks back while one of them runs), at the ceiling. */
int category_warming(const struct category *c);

/* WARMUP on a worker that grows a task's memory in steps of STEP_MB while it runs
 * (doc/allocation.md, "Warm-up on a worker that grows"): the memory a task of C starts with,
 * at most the warm-up estimate. Among the measured peaks (each plus the warm-up margin), the
 * start that minimises the expected memory held, a task above it being grown in whole steps,
 * weighting each peak by its wall time; the estimate itself unless that saves at least 2 %.
 * -1 when C is not in WARMUP, has no estimate yet, or STEP_MB is not positive. */
double category_growth_start(const struct category *c, double step_mb);

/* WARMUP on a worker that lends its idle cores to the tasks that use all of theirs (doc/
 * allocation.md, "Warm-up on a worker that lends cores"): the cores a task of C is allocated,
 * at most the warm-up estimate. The largest average use measured (CPU time over wall time,
 * tries of at least 0.1 s), plus 5 %, rounded up to a twentieth of a core (at least that): a
 * burst above it runs on lent cores. -1 when C is not in WARMUP, has no estimate yet, or no
 * such measurement. */
double category_lent_cores(const struct category *c);

/* The measurements C has accumulated, ever (changes whenever its estimates may). */
int64_t category_measurements(const struct category *c);

/* Records the measured peaks of one finished task (a success, or an exhausted try whose
 * measurement is a lower bound). Updates max_seen, the histograms, and every update_interval
 * measurements the first allocation. Does not touch the task counters (see category_record). */
void category_accumulate(struct category *c, const struct rmsummary *measured);

/* The resources a try at LEVEL gets, in ALLOC (v[] of the sized fields; others copied from
 * REQUESTED): per field, an explicit value in REQUESTED (the task's own declaration, -1 =
 * none) always wins; otherwise FIXED uses the category maximum (or -1 when none), and the
 * other modes use the first allocation at CATEGORY_LEVEL_FIRST (the maximum until one is
 * computed) and the maximum at CATEGORY_LEVEL_MAX. "The maximum" is the explicit category
 * maximum, else the largest worker (a whole worker, so a task's real need can be measured),
 * else -1 (no limit). The largest value seen is only the A_max of the formulas. Only v[] of
 * ALLOC is written. ALLOC must be initialised. */
void category_allocation(const struct category *c, const struct rmsummary *requested,
                         enum category_level level, struct rmsummary *alloc);

/* After a try at LEVEL exhausted the fields in EXHAUSTED (bits 1 << field): the level of the
 * next try. CATEGORY_LEVEL_MAX when the try ran below the maximum in every exhausted field
 * (the mode is not FIXED and no exhausted field was explicitly requested by the task or capped
 * by the category); otherwise CATEGORY_LEVEL_ERROR. */
enum category_level category_next_level(const struct category *c, enum category_level level,
                                        const struct rmsummary *requested,
                                        const struct rmsummary *allocated, uint64_t exhausted);

/* Records one finished try for the statistics: its allocation, its measurement (may be NULL),
 * its wall time in seconds, whether it exhausted its allocation, whether it was a retry, and
 * whether the task is now finished for good (done = 1 success, -1 failed, 0 will be retried). */
void category_record(struct category *c, const struct rmsummary *allocated,
                     const struct rmsummary *measured, double wall_time_s, int exhausted,
                     int was_retry, int done);
/* Counts one raise of a running try's limit (cgroups driver). */
void category_record_limit_raise(struct category *c);

/* Current statistics (max_seen and first_alloc are copies owned by the category; valid until
 * the next call that changes it). */
const struct category_stats *category_get_stats(const struct category *c);

#endif
