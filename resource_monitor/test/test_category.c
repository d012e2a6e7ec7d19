/* test_category.c: unit tests for per-category allocation (category.h). The expected first
 * allocations are worked out by hand in the comments from the formulas of doc/allocation.md;
 * also covered: MAX padding, FIXED, explicit values, clipping, the restart rule, retry levels
 * and waste accounting, and the WARMUP estimate and its first-task rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "category.h"
#include "rmsummary.h"
#include "banned.h"

#define BIT(f) (UINT64_C(1) << (f))

static void assert_close(double got, double want)
{
	if (fabs(got - want) > 1e-6)
		fail_msg("got %.9g, want %.9g", got, want);
}

/* One finished task: cores, memory MB, wall time s (-1 = unset). */
static void add(struct category *c, double cores, double memory, double wall)
{
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_CORES] = cores;
	m.v[RM_MEMORY] = memory;
	m.v[RM_WALL_TIME] = wall;
	category_accumulate(c, &m);
	rmsummary_clear(&m);
}

static double first(const struct category *c, int field)
{
	return category_get_stats(c)->first_alloc.v[field];
}

static double alloc_of(const struct category *c, const struct rmsummary *req,
                       enum category_level level, int field)
{
	struct rmsummary a;
	rmsummary_init(&a);
	category_allocation(c, req, level, &a);
	double v = a.v[field];
	rmsummary_clear(&a);
	return v;
}

static void set_worker(struct category *c, double cores, double memory)
{
	struct rmsummary w;
	rmsummary_init(&w);
	w.v[RM_CORES] = cores;
	w.v[RM_MEMORY] = memory;
	w.v[RM_DISK] = 100000;
	w.v[RM_GPUS] = 0;
	category_set_largest_worker(c, &w);
}

/* The data set of the worked examples, largest first so that no measurement raises the
 * maximum after the first (which would restart the count):
 *   1 task  1900 MB, 3.6 cores, 30 s  -> memory bucket 2000, cores bucket 4
 *   3 tasks  600 MB, 1 core,    20 s  -> memory bucket  750, cores bucket 1
 *   6 tasks  200 MB, 0.8 cores, 10 s  -> memory bucket  250, cores bucket 1 */
static void add_example(struct category *c)
{
	add(c, 3.6, 1900, 30);
	for (int i = 0; i < 3; i++)
		add(c, 1, 600, 20);
	for (int i = 0; i < 6; i++)
		add(c, 0.8, 200, 10);
}

static void test_mode_names(void **state)
{
	(void)state;
	enum category_mode m = CATEGORY_MODE_FIXED;
	assert_int_equal(category_mode_parse("MIN_WASTE", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_MIN_WASTE);
	assert_int_equal(category_mode_parse("waste", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_MIN_WASTE);
	assert_int_equal(category_mode_parse("Throughput", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_MAX_THROUGHPUT);
	assert_int_equal(category_mode_parse("max_throughput", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_MAX_THROUGHPUT);
	assert_int_equal(category_mode_parse("max", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_MAX);
	assert_int_equal(category_mode_parse("fixed", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_FIXED);
	assert_int_equal(category_mode_parse("maximum", &m), -EINVAL);
	assert_int_equal(category_mode_parse("", &m), -EINVAL);
	assert_int_equal(category_mode_parse(NULL, &m), -EINVAL);
	assert_int_equal(m, CATEGORY_MODE_FIXED);
	assert_int_equal(category_mode_parse("WarmUp", &m), 0);
	assert_int_equal(m, CATEGORY_MODE_WARMUP);
	assert_int_equal(category_mode_parse("warm", &m), -EINVAL);
	for (int i = CATEGORY_MODE_FIXED; i <= CATEGORY_MODE_WARMUP; i++) {
		assert_int_equal(category_mode_parse(category_mode_name(i), &m), 0);
		assert_int_equal(m, i);
	}
	assert_string_equal(category_mode_name(CATEGORY_MODE_MIN_WASTE), "min_waste");
}

static void test_fixed(void **state)
{
	(void)state;
	struct category *c = category_create("fixed");
	assert_string_equal(category_name(c), "fixed");
	assert_int_equal(category_get_mode(c), CATEGORY_MODE_FIXED);
	category_set_update_interval(c, 1);
	set_worker(c, 8, 16000);
	struct rmsummary req, max;
	rmsummary_init(&req);
	rmsummary_init(&max);
	/* Nothing declared: no limit at all (not the worker). */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), -1);
	max.v[RM_MEMORY] = 2000;
	category_set_max(c, &max);
	add_example(c);
	assert_close(first(c, RM_MEMORY), -1); /* FIXED computes nothing */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 2000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), -1);
	req.v[RM_CORES] = 3;
	req.v[RM_WALL_TIME] = 60; /* not sized: passed through */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 3);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_WALL_TIME), 60);
	/* In FIXED mode any exhaustion is final. */
	struct rmsummary a;
	rmsummary_init(&a);
	a.v[RM_MEMORY] = 2000;
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	category_delete(c);
	category_delete(NULL);
}

static void test_before_any_measurement(void **state)
{
	(void)state;
	struct category *c = category_create("new");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	struct rmsummary req;
	rmsummary_init(&req);
	/* Nothing seen, no maximum, no worker: no limit. */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), -1);
	/* Nothing seen: the largest worker. */
	set_worker(c, 8, 16000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 16000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 8);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_GPUS), 0);
	/* An explicit maximum comes before the worker. */
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 4000;
	category_set_max(c, &max);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 4000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 4000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 8);
	/* Measurements below the update interval change nothing yet. */
	add(c, 1, 300, 5);
	assert_close(first(c, RM_MEMORY), -1);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 4000);
	assert_close(category_get_stats(c)->max_seen.v[RM_MEMORY], 300);
	category_delete(c);
}

/* MIN_WASTE on the example, memory (buckets of 250 MB):
 *   a = 250, 750, 2000; c = 6, 3, 1; T = 60, 60, 30 s; N = 10; tau = 150 / 10 = 15 s
 *   R(0) = (60 + 30) / 10 = 9, R(1) = 30 / 10 = 3, R(2) = 0; A_max = 1900 (largest seen)
 *   E(250)  =  250 * 15 + 1900 * 9 = 3750 + 17100 = 20850
 *   E(750)  =  750 * 15 + 1900 * 3 = 11250 + 5700 = 16950   <- minimum
 *   E(2000) = 2000 * 15 + 0        = 30000
 * cores (buckets of 1): a = 1, 4; c = 9, 1; T = 120, 30; tau = 15; R(0) = 3; A_max = 3.6
 *   E(1) = 1 * 15 + 3.6 * 3 = 25.8 <- minimum;  E(4) = 4 * 15 = 60
 * With an explicit memory maximum of 10000, A_max = 10000:
 *   E(250) = 3750 + 90000 = 93750, E(750) = 11250 + 30000 = 41250, E(2000) = 30000 <- min */
static void test_min_waste(void **state)
{
	(void)state;
	struct category *c = category_create("waste");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 10);
	set_worker(c, 8, 16000);
	struct rmsummary req;
	rmsummary_init(&req);
	add(c, 3.6, 1900, 30);
	for (int i = 0; i < 3; i++)
		add(c, 1, 600, 20);
	for (int i = 0; i < 5; i++)
		add(c, 0.8, 200, 10);
	/* Nine measurements: nothing computed, tasks still get the whole worker. */
	assert_close(first(c, RM_MEMORY), -1);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 16000);
	add(c, 0.8, 200, 10);
	assert_close(first(c, RM_MEMORY), 750);
	assert_close(first(c, RM_CORES), 1);
	assert_close(first(c, RM_DISK), -1); /* never measured */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 750);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 1);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_DISK), 100000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 16000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_CORES), 8);

	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 10000;
	category_set_max(c, &max);
	assert_close(first(c, RM_MEMORY), 2000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 10000);
	category_delete(c);
}

/* MAX_THROUGHPUT on the same example, memory, A_max = 1900:
 *   Theta(250)  = (6 * 1900 / 250 + 4) / (15 + 9) = (45.6 + 4) / 24 = 2.0667  <- maximum
 *   Theta(750)  = (9 * 1900 / 750 + 1) / (15 + 3) = (22.8 + 1) / 18 = 1.3222
 *   Theta(2000) = (10 * 1900 / 2000 + 0) / 15      = 9.5 / 15       = 0.6333
 * cores, A_max = 3.6: Theta(1) = (9 * 3.6 + 1) / 18 = 1.856 <- max; Theta(4) = 9 / 15 = 0.6
 * Switching the mode to MIN_WASTE recomputes at once: 750 (see test_min_waste). */
static void test_max_throughput(void **state)
{
	(void)state;
	struct category *c = category_create("throughput");
	category_set_mode(c, CATEGORY_MODE_MAX_THROUGHPUT);
	category_set_update_interval(c, 10);
	add_example(c);
	assert_close(first(c, RM_MEMORY), 250);
	assert_close(first(c, RM_CORES), 1);
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	assert_close(first(c, RM_MEMORY), 750);
	category_set_mode(c, CATEGORY_MODE_MAX_THROUGHPUT);
	assert_close(first(c, RM_MEMORY), 250);
	category_set_mode(c, CATEGORY_MODE_FIXED);
	assert_close(first(c, RM_MEMORY), -1);
	category_delete(c);

	/* Where the time of tasks that do not fit decides: 8 tasks of 500 MB running 100 s and
	 * 2 of 200 MB running 1 s. a = 250, 500; c = 2, 8; T = 2, 800; N = 10; tau = 80.2;
	 * R(0) = 80; A_max = 500.
	 *   Theta(250) = (2 * 500 / 250 + 8) / (80.2 + 80) = 12 / 160.2 = 0.0749
	 *   Theta(500) = (10 * 500 / 500 + 0) / 80.2       = 10 / 80.2  = 0.1247 <- maximum
	 * (without R in the denominator 250 would win: 12 / 80.2 = 0.1496). */
	c = category_create("long");
	category_set_mode(c, CATEGORY_MODE_MAX_THROUGHPUT);
	category_set_update_interval(c, 10);
	for (int i = 0; i < 8; i++)
		add(c, 1, 500, 100);
	add(c, 1, 200, 1);
	add(c, 1, 200, 1);
	assert_close(first(c, RM_MEMORY), 500);
	category_delete(c);
}

/* gpus: a task that uses none needs none. Five tasks with 0 gpus and one with 2 (bucket 1):
 * a = 0, 2 -> Theta(0) is unbounded, so MAX_THROUGHPUT picks 0. MIN_WASTE, wall 1 s each:
 *   tau = 1, R(0) = 1/6, A_max = 2: E(0) = 0 + 2/6 = 0.333 <- min; E(2) = 2. */
static void test_gpus_zero(void **state)
{
	(void)state;
	for (int mode = CATEGORY_MODE_MIN_WASTE; mode <= CATEGORY_MODE_MAX_THROUGHPUT; mode++) {
		struct category *c = category_create("gpu");
		category_set_mode(c, mode);
		category_set_update_interval(c, 6);
		struct rmsummary m;
		rmsummary_init(&m);
		m.v[RM_GPUS] = 2;
		category_accumulate(c, &m);
		m.v[RM_GPUS] = 0;
		for (int i = 0; i < 5; i++)
			category_accumulate(c, &m);
		assert_close(first(c, RM_GPUS), 0);
		assert_close(first(c, RM_MEMORY), -1);
		category_delete(c);
	}
}

/* MAX: largest seen plus a third of a bucket, rounded up to the bucket:
 *   memory 1000 + 83.3 -> 1250; cores 2 + 0.33 -> 3; disk 900 + 83.3 -> 1000; gpus 0 -> 0. */
static void test_max_mode(void **state)
{
	(void)state;
	struct category *c = category_create("max");
	category_set_mode(c, CATEGORY_MODE_MAX);
	category_set_update_interval(c, 1);
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_MEMORY] = 1000;
	m.v[RM_CORES] = 2;
	m.v[RM_DISK] = 900;
	m.v[RM_GPUS] = 0;
	category_accumulate(c, &m);
	m.v[RM_MEMORY] = 400;
	m.v[RM_CORES] = 1.2;
	m.v[RM_DISK] = 10;
	category_accumulate(c, &m);
	assert_close(first(c, RM_MEMORY), 1250);
	assert_close(first(c, RM_CORES), 3);
	assert_close(first(c, RM_DISK), 1000);
	assert_close(first(c, RM_GPUS), 0);
	/* 1100 MB: 1183.3 -> 1250 as well; 1200 MB: 1283.3 -> 1500. */
	m.v[RM_MEMORY] = 1200;
	category_accumulate(c, &m);
	assert_close(first(c, RM_MEMORY), 1500);
	/* Clipped to the explicit maximum, and to the worker when there is none. */
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 1300;
	category_set_max(c, &max);
	assert_close(first(c, RM_MEMORY), 1300);
	set_worker(c, 2, 16000);
	assert_close(first(c, RM_CORES), 2);
	category_delete(c);
}

static void test_explicit_and_min(void **state)
{
	(void)state;
	struct category *c = category_create("explicit");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 10);
	set_worker(c, 8, 16000);
	add_example(c);
	assert_close(first(c, RM_MEMORY), 750);
	/* The task's own values win at every level, even below or above the computed ones. */
	struct rmsummary req;
	rmsummary_init(&req);
	req.v[RM_MEMORY] = 300;
	req.v[RM_CORES] = 6;
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 300);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 300);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 6);
	assert_close(alloc_of(c, NULL, CATEGORY_LEVEL_FIRST, RM_MEMORY), 750);
	/* Never below the explicit minimum. */
	struct rmsummary min;
	rmsummary_init(&min);
	min.v[RM_MEMORY] = 1000;
	category_set_min(c, &min);
	assert_close(first(c, RM_MEMORY), 1000);
	assert_close(alloc_of(c, NULL, CATEGORY_LEVEL_FIRST, RM_MEMORY), 1000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 300);
	min.v[RM_MEMORY] = 100;
	category_set_min(c, &min);
	assert_close(first(c, RM_MEMORY), 750);
	category_delete(c);
}

/* Interval 5, no explicit maximum. Four tasks of 100 MB, then one of 500 MB: a new maximum
 * before steady state, so the count restarts at that task and nothing is computed yet. Four
 * more of 100 MB make five since the restart: computed. Wall times unset count 1 s each:
 *   a = 250, 500; c = 8, 1; T = 8, 1; N = 9; tau = 1; R(0) = 1/9; A_max = 500
 *   E(250) = 250 + 500/9 = 305.6 <- min;  E(500) = 500
 * Then (steady) five tasks of 900 MB, 10 s each: a new maximum no longer restarts anything,
 * and the allocation is recomputed after the fifth:
 *   a = 250, 500, 1000; c = 8, 1, 5; T = 8, 1, 50; N = 14; tau = 59/14 = 4.214; A_max = 900
 *   R(0) = 51/14 = 3.643, R(1) = 50/14 = 3.571
 *   E(250)  =  250 * 4.214 + 900 * 3.643 = 1053.6 + 3278.6 = 4332.1
 *   E(500)  =  500 * 4.214 + 900 * 3.571 = 2107.1 + 3214.3 = 5321.4
 *   E(1000) = 1000 * 4.214               = 4214.3 <- min */
static void test_restart_rule(void **state)
{
	(void)state;
	struct category *c = category_create("restart");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 5);
	for (int i = 0; i < 4; i++)
		add(c, -1, 100, -1);
	add(c, -1, 500, -1);
	assert_close(first(c, RM_MEMORY), -1);
	for (int i = 0; i < 3; i++)
		add(c, -1, 100, -1);
	assert_close(first(c, RM_MEMORY), -1);
	add(c, -1, 100, -1);
	assert_close(first(c, RM_MEMORY), 250);
	for (int i = 0; i < 4; i++) {
		add(c, -1, 900, 10);
		assert_close(first(c, RM_MEMORY), 250);
	}
	add(c, -1, 900, 10);
	assert_close(first(c, RM_MEMORY), 1000);
	category_delete(c);

	/* Growth within the bucket of the largest value seen is noise, not a new maximum:
	 * measurements creeping up 100, 101, 102 ... MB still reach steady state. */
	c = category_create("noise");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 5);
	for (int i = 0; i < 5; i++)
		add(c, 0.4 + 0.01 * i, 100 + i, -1);
	assert_close(first(c, RM_MEMORY), 250);
	assert_close(first(c, RM_CORES), 1);
	category_delete(c);

	/* With an explicit maximum a larger value does not restart the count. */
	c = category_create("capped");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 5);
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 1000;
	category_set_max(c, &max);
	for (int i = 0; i < 4; i++)
		add(c, -1, 100, -1);
	add(c, -1, 500, -1);
	/* E(250) = 250 * 1 + 1000 * (1/5) = 450 <- min; E(500) = 500 */
	assert_close(first(c, RM_MEMORY), 250);
	category_delete(c);

	/* An update interval below 1 is taken as 1. */
	c = category_create("every");
	category_set_mode(c, CATEGORY_MODE_MAX);
	category_set_update_interval(c, 0);
	add(c, 1, 100, 1);
	assert_close(first(c, RM_MEMORY), 250);
	category_delete(c);
}

static void test_next_level(void **state)
{
	(void)state;
	struct category *c = category_create("levels");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 10);
	set_worker(c, 8, 16000);
	add_example(c);
	struct rmsummary req, a;
	rmsummary_init(&req);
	rmsummary_init(&a);
	category_allocation(c, &req, CATEGORY_LEVEL_FIRST, &a);
	assert_close(a.v[RM_MEMORY], 750);
	/* The first allocation was below the maximum: retry at the maximum. */
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_MAX);
	assert_int_equal(
	    category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY) | BIT(RM_CORES)),
	    CATEGORY_LEVEL_MAX);
	/* The maximum itself exhausted: final. */
	category_allocation(c, &req, CATEGORY_LEVEL_MAX, &a);
	assert_close(a.v[RM_MEMORY], 16000);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_MAX, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	/* An explicit request exhausted: final. */
	req.v[RM_MEMORY] = 750;
	category_allocation(c, &req, CATEGORY_LEVEL_FIRST, &a);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	/* ...but another field, not requested, may still grow. */
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_CORES)),
	                 CATEGORY_LEVEL_MAX);
	/* Wall time is not sized: a retry would not help. */
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_WALL_TIME)),
	                 CATEGORY_LEVEL_ERROR);
	/* Nothing exhausted: the level stays. */
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, 0),
	                 CATEGORY_LEVEL_FIRST);
	/* At the explicit category cap: final even at the first level. */
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 200; /* A_max = 200: E(250) = 3750 + 1800 is the minimum, then 200 */
	category_set_max(c, &max);
	rmsummary_init(&req);
	category_allocation(c, &req, CATEGORY_LEVEL_FIRST, &a);
	assert_close(a.v[RM_MEMORY], 200); /* 250 clipped to the cap */
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	category_delete(c);

	/* No maximum and no worker known: the retry gets the whole worker (no limit). */
	c = category_create("open");
	category_set_mode(c, CATEGORY_MODE_MAX);
	category_set_update_interval(c, 1);
	add(c, 1, 600, 1);
	category_allocation(c, &req, CATEGORY_LEVEL_FIRST, &a);
	assert_close(a.v[RM_MEMORY], 750);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_MAX);
	category_allocation(c, &req, CATEGORY_LEVEL_MAX, &a);
	assert_close(a.v[RM_MEMORY], -1);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_ERROR, &req, &a, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	category_delete(c);
}

/* Waste in unit * seconds:
 *   try 1: 1000 MB, 2 cores for 10 s, used 400 MB, 1.5 cores -> waste 6000 MB-s, 5 core-s;
 *          allocated 10000 MB-s, 20 core-s
 *   try 2: 500 MB, 1 core for 4 s, exhausted -> waste and allocated 2000 MB-s, 4 core-s
 *   try 3 (its retry): 2000 MB, 1 core for 5 s (wall from the measurement), used 1500 MB,
 *          cores unknown -> waste 2500 MB-s; allocated 10000 MB-s; cores counted neither way
 *   totals: memory waste 10500 of 22000 MB-s; cores waste 9 of 24 core-s */
static void test_waste(void **state)
{
	(void)state;
	struct category *c = category_create("waste");
	struct rmsummary a, m;
	rmsummary_init(&a);
	rmsummary_init(&m);
	a.v[RM_MEMORY] = 1000;
	a.v[RM_CORES] = 2;
	m.v[RM_MEMORY] = 400;
	m.v[RM_CORES] = 1.5;
	category_record(c, &a, &m, 10, 0, 0, 1);
	a.v[RM_MEMORY] = 500;
	a.v[RM_CORES] = 1;
	m.v[RM_MEMORY] = 501;
	category_record(c, &a, &m, 4, 1, 0, 0);
	a.v[RM_MEMORY] = 2000;
	m.v[RM_MEMORY] = 1500;
	m.v[RM_CORES] = -1;
	m.v[RM_WALL_TIME] = 5;
	category_record(c, &a, &m, -1, 0, 1, 1);
	category_record(c, &a, NULL, 7, 0, 0, -1); /* usage unknown: no waste, no allocation */
	category_record_limit_raise(c);
	const struct category_stats *s = category_get_stats(c);
	assert_close(s->waste[RM_MEMORY], 10500);
	assert_close(s->allocated[RM_MEMORY], 22000);
	assert_close(s->waste[RM_CORES], 9);
	assert_close(s->allocated[RM_CORES], 24);
	assert_close(s->waste[RM_DISK], 0);
	assert_int_equal(s->tasks_done, 2);
	assert_int_equal(s->tasks_failed, 1);
	assert_int_equal(s->exhaustions, 1);
	assert_int_equal(s->retries, 1);
	assert_int_equal(s->limit_raises, 1);
	category_delete(c);
}

static void test_max_seen(void **state)
{
	(void)state;
	struct category *c = category_create(NULL);
	assert_non_null(category_name(c));
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_WALL_TIME] = 50;
	m.v[RM_BYTES_READ] = 3;
	category_accumulate(c, &m); /* nothing sized: counted nowhere but max_seen */
	add(c, 2.5, 700, 20);
	add(c, 1.5, 900, 10);
	const struct category_stats *s = category_get_stats(c);
	assert_close(s->max_seen.v[RM_CORES], 2.5);
	assert_close(s->max_seen.v[RM_MEMORY], 900);
	assert_close(s->max_seen.v[RM_WALL_TIME], 50);
	assert_close(s->max_seen.v[RM_BYTES_READ], 3);
	assert_close(s->max_seen.v[RM_DISK], -1);
	assert_int_equal(s->tasks_done, 0);
	category_delete(c);
}

/* WARMUP: the ceiling until the first measurement, then the largest value seen plus the
 * margin, refined after every measurement whatever the update interval. */
static void test_warmup_first_task(void **state)
{
	(void)state;
	struct category *c = category_create("w");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 8, 16000);
	struct rmsummary req;
	rmsummary_init(&req);
	assert_int_equal(category_warming(c), 1);
	assert_close(first(c, RM_MEMORY), -1);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 16000);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_CORES), 8);
	/* a measurement of nothing sized does not end the warm-up */
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_WALL_TIME] = 3;
	category_accumulate(c, &m);
	assert_int_equal(category_warming(c), 1);
	/* one task measured (update interval 25 by default): packed from now on */
	add(c, 1.02, 600, 10);
	assert_int_equal(category_warming(c), 0);
	assert_close(first(c, RM_MEMORY), 630); /* 600 + 5 % */
	assert_close(first(c, RM_CORES), 1);    /* 1.02 within 5 % of 1 core */
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 630);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 16000);
	/* refined on every measurement, by the largest seen */
	add(c, 1.3, 1000, 10);
	assert_close(first(c, RM_MEMORY), 1050);
	assert_close(first(c, RM_CORES), 1.25); /* 1.3 / 1.05 = 1.24 -> 1.25 */
	add(c, 0.5, 300, 10);
	assert_close(first(c, RM_MEMORY), 1050);
	/* explicit values still win */
	req.v[RM_MEMORY] = 200;
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 200);
	rmsummary_clear(&m);
	category_delete(c);
}

static void test_warmup_margins(void **state)
{
	(void)state;
	struct category *c = category_create("w");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_CORES] = 0.05;
	m.v[RM_MEMORY] = 100;
	m.v[RM_DISK] = 2000;
	m.v[RM_GPUS] = 0;
	category_accumulate(c, &m);
	assert_close(first(c, RM_MEMORY), 116); /* at least 16 MB of margin */
	assert_close(first(c, RM_DISK), 2100);  /* 5 % */
	assert_close(first(c, RM_CORES), 0.25); /* at least a quarter of a core */
	assert_close(first(c, RM_GPUS), 0);
	/* an explicit maximum caps the estimate, a minimum raises it */
	struct rmsummary b;
	rmsummary_init(&b);
	b.v[RM_MEMORY] = 110;
	category_set_max(c, &b);
	assert_close(first(c, RM_MEMORY), 110);
	rmsummary_init(&b);
	b.v[RM_CORES] = 2;
	category_set_max(c, &b);
	category_set_min(c, &b);
	assert_close(first(c, RM_CORES), 2);
	assert_close(first(c, RM_MEMORY), 116);
	rmsummary_clear(&b);
	rmsummary_clear(&m);
	category_delete(c);
}

/* A try that exhausts the estimate goes to the ceiling; its measurement, a lower bound of the
 * need, raises the estimate for the next tasks. */
static void test_warmup_learns_from_exhaustion(void **state)
{
	(void)state;
	struct category *c = category_create("w");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 2, 4000);
	add(c, 1, 400, 5);
	struct rmsummary req, alloc;
	rmsummary_init(&req);
	rmsummary_init(&alloc);
	category_allocation(c, &req, CATEGORY_LEVEL_FIRST, &alloc);
	assert_close(alloc.v[RM_MEMORY], 420);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_FIRST, &req, &alloc, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_MAX);
	add(c, 1, 421, 2); /* stopped at its limit */
	assert_close(first(c, RM_MEMORY), 443);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_MAX, RM_MEMORY), 4000);
	/* the retry at the ceiling is the last chance */
	category_allocation(c, &req, CATEGORY_LEVEL_MAX, &alloc);
	assert_int_equal(category_next_level(c, CATEGORY_LEVEL_MAX, &req, &alloc, BIT(RM_MEMORY)),
	                 CATEGORY_LEVEL_ERROR);
	add(c, 1, 600, 5);
	assert_close(first(c, RM_MEMORY), 630);
	rmsummary_clear(&req);
	rmsummary_clear(&alloc);
	category_delete(c);
}

/* The start of a task on a worker that grows: the measured peak (plus the margin) that
 * minimises the memory held, tasks above it grown in whole steps, weighted by wall time. */
static void test_growth_start(void **state)
{
	(void)state;
	struct category *c = category_create("g");
	assert_true(category_growth_start(c, 256) == -1); /* not WARMUP */
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 2, 24000);
	assert_true(category_growth_start(c, 256) == -1); /* nothing measured */
	for (int i = 0; i < 7; i++)
		add(c, 1, 900 + 40 * i, 1);
	assert_close(first(c, RM_MEMORY), 1197);
	/* from 945 (900 + 45), the five above grow once to 1201: 7,895 MB·s against 8,379 at
	 * the estimate; from 1029: 7,971 */
	assert_close(category_growth_start(c, 256), 945);
	assert_close(category_growth_start(c, 64), 945);
	assert_true(category_growth_start(c, 0) == -1);
	category_delete(c);

	/* one size: nothing below the estimate */
	c = category_create("g");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 2, 24000);
	for (int i = 0; i < 5; i++)
		add(c, 1, 1000, 1);
	assert_close(category_growth_start(c, 256), 1050);
	category_delete(c);

	/* weighted by time: the large peak runs 100 times as long, so growing it costs more than
	 * starting the small one high */
	c = category_create("g");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 2, 24000);
	add(c, 1, 900, 1);
	add(c, 1, 1140, 100);
	assert_close(category_growth_start(c, 256), 1197);
	/* and the other way round: the small one dominates */
	add(c, 1, 900, 200);
	assert_close(category_growth_start(c, 256), 945);
	category_delete(c);
}

/* The cores of a task on a worker that lends cores: the largest average use (CPU time over
 * wall time) plus 5 %, in twentieths of a core, at most the estimate from the peaks. */
static void test_lent_cores(void **state)
{
	(void)state;
	struct category *c = category_create("l");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	set_worker(c, 4, 8000);
	assert_true(category_lent_cores(c) == -1); /* nothing measured */
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_CORES] = 1; /* bursts to a whole core */
	m.v[RM_MEMORY] = 100;
	m.v[RM_WALL_TIME] = 10;
	m.v[RM_CPU_TIME] = 3; /* 0.3 on average */
	category_accumulate(c, &m);
	assert_close(first(c, RM_CORES), 1);
	assert_close(category_lent_cores(c), 0.35); /* 0.315, rounded up */
	m.v[RM_CPU_TIME] = 0.01;
	m.v[RM_WALL_TIME] = 0.05; /* too short to say anything */
	category_accumulate(c, &m);
	assert_close(category_lent_cores(c), 0.35);
	m.v[RM_WALL_TIME] = 1;
	m.v[RM_CPU_TIME] = 2; /* two threads, more than its peak says */
	category_accumulate(c, &m);
	assert_close(category_lent_cores(c), 1); /* never above the estimate */
	rmsummary_clear(&m);
	category_delete(c);
	/* not WARMUP */
	c = category_create("l");
	category_set_mode(c, CATEGORY_MODE_MAX);
	add(c, 1, 100, 10);
	assert_true(category_lent_cores(c) == -1);
	category_delete(c);
}

/* Leaving WARMUP before the update interval is reached: the other modes have computed nothing
 * yet, and WARMUP's estimate must not stand in for their allocation. Back to WARMUP, the
 * estimate returns at once. */
static void test_warmup_mode_switch(void **state)
{
	(void)state;
	struct category *c = category_create("w");
	set_worker(c, 8, 16000);
	add(c, 1, 600, 10);
	assert_int_equal(category_warming(c), 0); /* not in WARMUP */
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	assert_int_equal(category_warming(c), 0);
	assert_close(first(c, RM_MEMORY), 630);
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	assert_close(first(c, RM_MEMORY), -1);
	struct rmsummary req;
	rmsummary_init(&req);
	assert_close(alloc_of(c, &req, CATEGORY_LEVEL_FIRST, RM_MEMORY), 16000);
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	assert_close(first(c, RM_MEMORY), 630);
	category_delete(c);
}

/* Core-time used is the CPU time when it was measured, not the peak held all along. */
static void test_waste_cpu_time(void **state)
{
	(void)state;
	struct category *c = category_create("cpu");
	struct rmsummary a, m;
	rmsummary_init(&a);
	rmsummary_init(&m);
	a.v[RM_CORES] = 2;
	m.v[RM_CORES] = 2; /* a burst on both cores */
	m.v[RM_CPU_TIME] = 12;
	category_record(c, &a, &m, 10, 0, 0, 1);
	const struct category_stats *s = category_get_stats(c);
	assert_close(s->allocated[RM_CORES], 20);
	assert_close(s->waste[RM_CORES], 8); /* 1.2 cores used on average */
	m.v[RM_CPU_TIME] = -1;               /* unknown: the peak, as before */
	category_record(c, &a, &m, 10, 0, 0, 1);
	assert_close(s->waste[RM_CORES], 8);
	rmsummary_clear(&a);
	rmsummary_clear(&m);
	category_delete(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mode_names),
	    cmocka_unit_test(test_fixed),
	    cmocka_unit_test(test_before_any_measurement),
	    cmocka_unit_test(test_min_waste),
	    cmocka_unit_test(test_max_throughput),
	    cmocka_unit_test(test_gpus_zero),
	    cmocka_unit_test(test_max_mode),
	    cmocka_unit_test(test_explicit_and_min),
	    cmocka_unit_test(test_restart_rule),
	    cmocka_unit_test(test_next_level),
	    cmocka_unit_test(test_waste),
	    cmocka_unit_test(test_max_seen),
	    cmocka_unit_test(test_warmup_first_task),
	    cmocka_unit_test(test_warmup_margins),
	    cmocka_unit_test(test_warmup_learns_from_exhaustion),
	    cmocka_unit_test(test_warmup_mode_switch),
	    cmocka_unit_test(test_growth_start),
	    cmocka_unit_test(test_lent_cores),
	    cmocka_unit_test(test_waste_cpu_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
