/* test_rmon_elastic.c: unit tests of the shared elasticity policy (rmon_elastic.h): growth in
 * steps bounded by the maximum and the room, giving up, the growth rate, the throttle of a
 * runaway while memory is short and its release, and the shrink of a grown task after its
 * cooldown. Numbers only: no cgroup, no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "rmon_elastic.h"
#include "banned.h"

/* The worker's defaults: +256 / -128 MB, 10 s before a shrink, throttle over 1024 MB/s. */
static struct rmon_elastic_cfg worker_cfg(void)
{
	struct rmon_elastic_cfg c = {
	    .grow = 1,
	    .step_up_mb = 256,
	    .step_down_mb = 128,
	    .shrink_cooldown_ms = 10000,
	    .throttle = 1,
	    .throttle_rate = 1024,
	    .tick_ms = 250,
	};
	return c;
}

static struct rmon_elastic_now at(uint64_t ms, double usage, int short_mem, int64_t room)
{
	struct rmon_elastic_now n = {.ms = ms,
	                             .usage_mb = usage,
	                             .short_mem = short_mem,
	                             .room_mb = room,
	                             .unlimited_mb = 4000};
	return n;
}

static void test_step(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = {0};
	assert_int_equal(rmon_elastic_step_up(&c, 100), 64);   /* at least 64 */
	assert_int_equal(rmon_elastic_step_up(&c, 5000), 500); /* a tenth */
	c.step_up_mb = 256;
	assert_int_equal(rmon_elastic_step_up(&c, 5000), 256);
}

static void test_short(void **state)
{
	(void)state;
	assert_false(rmon_elastic_short(1000, 700)); /* 300 free of 1000 */
	assert_true(rmon_elastic_short(1000, 800));  /* 200 free < 250 */
	assert_false(rmon_elastic_short(0, 800));    /* no total: never */
}

/* 1000 MB allowed to grow to 1500 with room for everything: 1256, 1500 (capped), then no more. */
static void test_grow_steps_to_max(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 1000, 1500);
	struct rmon_elastic_now n = at(1000, 1000, 0, 10000);
	int64_t to = 0;
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why), RMON_ELASTIC_GROW);
	assert_int_equal(to, 1256);
	assert_int_equal(t.raises, 1);
	assert_int_equal(t.last_change_ms, 1000);
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1256, &n, &to, &why), RMON_ELASTIC_GROW);
	assert_int_equal(to, 1500);
	assert_int_equal(t.peak_limit_mb, 1500);
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1500, &n, &to, &why), RMON_ELASTIC_GIVE_UP);
	assert_string_equal(why, "it is at its maximum");
	assert_int_equal(t.raises, 2);
}

/* The memory a task held, integrated over its life: its allocation, then each growth and
 * shrink from the moment it happened; a throttle holds nothing back. */
static void test_mean_held(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	c.shrink_cooldown_ms = 0;
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 1000, 2000);
	assert_true(rmon_elastic_mean_held(&t, 5000) == -1); /* not started */
	rmon_elastic_start(&t, 1000);
	assert_true(rmon_elastic_mean_held(&t, 1000) == 1000);
	assert_true(rmon_elastic_mean_held(&t, 3000) == 1000);
	/* grown to 1256 at 2000 ms: 1 s at 1000, then 1256 */
	struct rmon_elastic_now n = at(2000, 1000, 0, 10000);
	int64_t to = 0;
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why), RMON_ELASTIC_GROW);
	assert_true(fabs(rmon_elastic_mean_held(&t, 4000) - (1000.0 + 2 * 1256.0) / 3) < 1e-9);
	/* shrunk at 4000 ms to 1128 (a step of 128): use far below */
	n = at(4000, 100, 0, 10000);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_SHRINK);
	rmon_elastic_applied(&t, RMON_ELASTIC_SHRINK, to, &n);
	assert_int_equal(to, 1128);
	double want = (1000.0 + 2 * 1256.0 + 2 * 1128.0) / 5;
	assert_true(fabs(rmon_elastic_mean_held(&t, 6000) - want) < 1e-9);
	/* a throttle below its allocation does not change what it holds */
	rmon_elastic_applied(&t, RMON_ELASTIC_THROTTLE, 600, &n);
	assert_true(fabs(rmon_elastic_mean_held(&t, 6000) - want) < 1e-9);
	/* no limit: nothing held */
	rmon_elastic_task_init(&t, -1, -1);
	rmon_elastic_start(&t, 0);
	assert_true(rmon_elastic_mean_held(&t, 1000) == -1);
}

/* The room bounds a step; no room at all ends the task. */
static void test_grow_bounded_by_room(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 1000, 3000);
	struct rmon_elastic_now n = at(0, 1000, 0, 100);
	int64_t to = 0;
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why), RMON_ELASTIC_GROW);
	assert_int_equal(to, 1100);
	n.room_mb = 0;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1100, &n, &to, &why), RMON_ELASTIC_GIVE_UP);
	assert_string_equal(why, "no memory is free to grow it");
}

/* Growth off, or no maximum known: the task ends at its limit. */
static void test_no_growth(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 1000, -1);
	struct rmon_elastic_now n = at(0, 1000, 0, 10000);
	int64_t to = 0;
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why), RMON_ELASTIC_GIVE_UP);
	rmon_elastic_task_init(&t, 1000, 2000);
	c.grow = 0;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why), RMON_ELASTIC_GIVE_UP);
	assert_string_equal(why, "growth is off");
	assert_int_equal(t.raises, 0);
}

static void test_rate(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	c.throttle = 0;
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, -1, -1);
	int64_t to;
	struct rmon_elastic_now n = at(0, 100, 0, 0);
	rmon_elastic_tick(&c, &t, &n, &to);
	assert_true(rmon_elastic_rate(&t, 500, 300) == 0); /* under a second of samples */
	n = at(500, 300, 0, 0);
	rmon_elastic_tick(&c, &t, &n, &to);
	/* from the latest sample a second old or more (at 500): 1000 MB in 1 s */
	assert_true(rmon_elastic_rate(&t, 1500, 1300) == 1000);
	assert_true(rmon_elastic_rate(&t, 1000, 1300) == 1200); /* from the one at 0 */
}

/* A runaway (2 GB/s) while memory is short is held at its usage plus two ticks of growth and
 * 16 MB, released in steps once memory is free again, back to its own limit. */
static void test_throttle_and_release(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 5000, -1);
	int64_t to = 0;
	struct rmon_elastic_now n = at(0, 100, 0, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	n = at(1000, 2100, 0, 0); /* fast, but memory is not short */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	n = at(1250, 2600, 1, 0); /* short now: 2000 MB/s over the last 1.25 s */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_THROTTLE);
	assert_int_equal(to, 2600 + 1000 + 16);
	rmon_elastic_applied(&t, RMON_ELASTIC_THROTTLE, to, &n);
	assert_true(t.throttled);
	assert_int_equal(t.restore_mb, 5000);
	/* at the pin while short: waits */
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 3616, &n, &to, &why), RMON_ELASTIC_WAIT);
	/* memory free again: back in steps of 256 to 5000 */
	t.limit_mb = 4600;
	n = at(1500, 3616, 0, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_UNTHROTTLE);
	assert_int_equal(to, 4856);
	rmon_elastic_applied(&t, RMON_ELASTIC_UNTHROTTLE, to, &n);
	assert_true(t.throttled);
	/* at its limit while memory is free: released a step at once */
	assert_int_equal(rmon_elastic_at_limit(&c, &t, 4856, &n, &to, &why), RMON_ELASTIC_RELEASE);
	assert_int_equal(to, 5000);
	assert_false(t.throttled);
	t.throttled = 1;
	t.limit_mb = 4856;
	n = at(1750, 3616, 0, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_UNTHROTTLE);
	assert_int_equal(to, 5000);
	rmon_elastic_applied(&t, RMON_ELASTIC_UNTHROTTLE, to, &n);
	assert_false(t.throttled);
	assert_int_equal(t.raises, 0); /* a release is not a growth */
}

/* With protect_neighbours (the worker): a task alone is never throttled, and a throttled task
 * whose neighbours have ended is released even while its own use keeps memory short. */
static void test_throttle_protects_neighbours(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	c.protect_neighbours = 1;
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 5000, -1);
	int64_t to = 0;
	struct rmon_elastic_now n = at(0, 100, 1, 0);
	rmon_elastic_tick(&c, &t, &n, &to);
	n = at(1000, 1100, 1, 0); /* alone: not throttled */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	n = at(2000, 3200, 1, 0);
	n.neighbours = 1;
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_THROTTLE);
	rmon_elastic_applied(&t, RMON_ELASTIC_THROTTLE, to, &n);
	const char *why = NULL;
	assert_int_equal(rmon_elastic_at_limit(&c, &t, to, &n, &to, &why), RMON_ELASTIC_WAIT);
	n = at(2250, 3200, 1, 0); /* the neighbour ended; memory still short */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_UNTHROTTLE);
	assert_int_equal(to, 4266 + 256); /* a step towards its own limit */
}

/* A task without a limit is throttled too, and released to the unlimited figure. */
static void test_throttle_unlimited(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, -1, -1);
	int64_t to;
	struct rmon_elastic_now n = at(0, 0, 1, 0);
	rmon_elastic_tick(&c, &t, &n, &to);
	n = at(1000, 1500, 1, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_THROTTLE);
	rmon_elastic_applied(&t, RMON_ELASTIC_THROTTLE, to, &n);
	assert_int_equal(t.restore_mb, 4000);
	/* slow growth is never throttled */
	rmon_elastic_task_init(&t, -1, -1);
	n = at(0, 0, 1, 0);
	rmon_elastic_tick(&c, &t, &n, &to);
	n = at(1000, 500, 1, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
}

/* A grown task whose use falls well below is shrunk by 128 after 10 s since its last change,
 * never below its allocation. */
static void test_shrink(void **state)
{
	(void)state;
	struct rmon_elastic_cfg c = worker_cfg();
	struct rmon_elastic_task t;
	rmon_elastic_task_init(&t, 1000, 2000);
	struct rmon_elastic_now n = at(0, 1000, 0, 5000);
	int64_t to = 0;
	const char *why;
	rmon_elastic_at_limit(&c, &t, 1000, &n, &to, &why); /* 1256 */
	rmon_elastic_at_limit(&c, &t, 1256, &n, &to, &why); /* 1512 */
	assert_int_equal(t.limit_mb, 1512);
	n = at(9999, 500, 0, 0); /* too early */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	n = at(10000, 1300, 0, 0); /* not well below: 1384 - 128 < 1300 */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	n = at(10000, 500, 0, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_SHRINK);
	assert_int_equal(to, 1384);
	rmon_elastic_applied(&t, RMON_ELASTIC_SHRINK, to, &n);
	n = at(15000, 500, 0, 0); /* the cooldown counts from the shrink */
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	for (uint64_t ms = 20000; t.limit_mb > 1000; ms += 10000) {
		n = at(ms, 500, 0, 0);
		assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_SHRINK);
		rmon_elastic_applied(&t, RMON_ELASTIC_SHRINK, to, &n);
	}
	assert_int_equal(t.limit_mb, 1000);
	assert_int_equal(t.shrinks, 4); /* 1384, 1256, 1128, 1000 */
	n = at(100000, 0, 0, 0);
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
	/* step_down 0: never */
	c.step_down_mb = 0;
	t.limit_mb = 1500;
	assert_int_equal(rmon_elastic_tick(&c, &t, &n, &to), RMON_ELASTIC_NONE);
}

/* CPU quota: grows by whole idle cores while the task uses its quota, back to its allocation
 * when the worker's cores are busy. */
static void test_cpu_quota(void **state)
{
	(void)state;
	assert_true(rmon_elastic_cpu_quota(1, 1, 0.95, 1.0) == 2); /* busy, one idle core */
	assert_true(rmon_elastic_cpu_quota(1, 1, 0.95, 0.9) == 2); /* a core, give or take */
	assert_true(rmon_elastic_cpu_quota(1, 1, 0.95, 0.8) == 1); /* less than a core idle */
	assert_true(rmon_elastic_cpu_quota(1, 1, 0.5, 3) == 1);    /* not using its quota */
	assert_true(rmon_elastic_cpu_quota(1, 2, 1.95, 1.2) == 3); /* grows on */
	/* squeezed back to its own core by a busy neighbour: back to its allocation */
	assert_true(rmon_elastic_cpu_quota(1, 3, 1.05, 0.2) == 1);
	assert_true(rmon_elastic_cpu_quota(1, 2, 0.7, 0.1) == 1);
	/* alone, using what it was lent: its own use is not a neighbour's need */
	assert_true(rmon_elastic_cpu_quota(1, 2, 1.62, 0.38) == 2);
	assert_true(rmon_elastic_cpu_quota(1, 3, 2.9, 0.2) == 3);
	/* a neighbour took some of the loan back: more than half a core is still spare */
	assert_true(rmon_elastic_cpu_quota(1, 3, 1.6, 0.0) == 3);
	assert_true(rmon_elastic_cpu_quota(1, 3, 1.0, 0.7) == 3); /* half a core idle: keeps */
	assert_true(rmon_elastic_cpu_quota(0, 0, 4, 4) == 0);     /* no quota: none grown */
	assert_true(rmon_elastic_cpu_quota(0.5, 0.5, 0.5, 1.5) == 1.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_step),
	    cmocka_unit_test(test_short),
	    cmocka_unit_test(test_grow_steps_to_max),
	    cmocka_unit_test(test_grow_bounded_by_room),
	    cmocka_unit_test(test_mean_held),
	    cmocka_unit_test(test_no_growth),
	    cmocka_unit_test(test_rate),
	    cmocka_unit_test(test_throttle_and_release),
	    cmocka_unit_test(test_throttle_unlimited),
	    cmocka_unit_test(test_throttle_protects_neighbours),
	    cmocka_unit_test(test_shrink),
	    cmocka_unit_test(test_cpu_quota),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
