/* test_master_sched_warmup.c: unit tests for the WARMUP mode in the Work Queue scheduling core:
 * a category's first task runs alone on a whole worker while the category's other tasks wait
 * (a second worker stays free for them), is never prefetched, and once it is measured the
 * others are packed at the estimate; other categories are not held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "master_sched.h"
#include "category.h"
#include "rmsummary.h"
#include "banned.h"

#define MAXA 64

static struct master_sched_worker *worker(struct master_sched *s, const char *id, double cores,
                                          int64_t mem, int qmax)
{
	struct master_sched_worker_spec ws = {
	    .id = id, .total = {cores, mem, 10000, 0}, .queue_max = qmax, .data = (void *)id};
	struct master_sched_worker *w = master_sched_worker_add(s, &ws);
	assert_non_null(w);
	return w;
}

static struct master_sched_task *task(struct master_sched *s, const char *cat, intptr_t id)
{
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.category = cat;
	ts.data = (void *)id;
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	return t;
}

static int run_pass(struct master_sched *s, struct master_sched_assignment *out)
{
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	int n = master_sched_pass(s, &o, out, MAXA, NULL);
	assert_true(n >= 0);
	return n;
}

/* A measurement of a task of C; CPU time CPU (s; -1: not measured). */
static void measure_cpu(struct category *c, double cores, double mem, double wall, double cpu)
{
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_CORES] = cores;
	m.v[RM_MEMORY] = mem;
	m.v[RM_DISK] = 10;
	m.v[RM_GPUS] = 0;
	m.v[RM_WALL_TIME] = wall;
	m.v[RM_CPU_TIME] = cpu;
	category_accumulate(c, &m);
}

static void measure(struct category *c, double cores, double mem, double wall)
{
	measure_cpu(c, cores, mem, wall, -1);
}

static void test_first_task_alone(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	worker(s, "a", 4, 8000, 0);
	worker(s, "b", 4, 8000, 0);
	struct category *c = master_sched_category(s, "wu");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	struct master_sched_task *t[4];
	for (int i = 0; i < 4; i++)
		t[i] = task(s, "wu", i);
	struct master_sched_assignment out[MAXA];
	/* one task, on a whole worker; the other worker stays free */
	assert_int_equal(run_pass(s, out), 1);
	assert_ptr_equal(out[0].task, t[0]);
	assert_true(out[0].box.cores == 4);
	assert_int_equal(out[0].box.memory, 8000);
	assert_int_equal(run_pass(s, out), 0);
	/* another category is not held */
	task(s, "other", 9);
	assert_int_equal(run_pass(s, out), 1);
	assert_true(out[0].task != t[1]);
	/* the first finishes and is measured: the rest are packed at the estimate */
	assert_int_equal(master_sched_task_release(s, t[0], 10), 0);
	measure(c, 1, 1000, 10);
	assert_int_equal(run_pass(s, out), 3);
	for (int i = 0; i < 3; i++) {
		assert_true(out[i].box.cores == 1);
		assert_int_equal(out[i].box.memory, 1050);
	}
	master_sched_delete(s);
}

/* A measuring task that ends without a measurement (it failed): the next task measures. */
static void test_failed_measurer(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	worker(s, "a", 2, 4000, 0);
	worker(s, "b", 2, 4000, 0);
	category_set_mode(master_sched_category(s, "wu"), CATEGORY_MODE_WARMUP);
	struct master_sched_task *a = task(s, "wu", 1);
	task(s, "wu", 2);
	struct master_sched_assignment out[MAXA];
	assert_int_equal(run_pass(s, out), 1);
	assert_ptr_equal(master_sched_task_remove(s, a), (void *)1);
	assert_int_equal(run_pass(s, out), 1);
	assert_int_equal(out[0].box.memory, 4000);
	master_sched_delete(s);
}

/* Nothing of a warming category is sent ahead into a worker's queue. */
static void test_no_prefetch_while_warming(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	worker(s, "a", 2, 4000, 4);
	struct category *c = master_sched_category(s, "wu");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	master_sched_category_record_time(s, "wu", 0.1);
	task(s, "wu", 1);
	task(s, "wu", 2);
	struct master_sched_assignment out[MAXA];
	assert_int_equal(run_pass(s, out), 1);
	struct master_sched_prefetch_opts po;
	master_sched_prefetch_opts_init(&po);
	assert_int_equal(master_sched_prefetch(s, &po, out, MAXA), 0);
	measure(c, 1, 500, 0.1);
	assert_int_equal(master_sched_prefetch(s, &po, out, MAXA), 1);
	master_sched_delete(s);
}

/* On a worker that grows a task's memory while it runs, a task of a measured WARMUP category
 * starts below the estimate (category_growth_start); elsewhere it gets the estimate, and a
 * declared memory is kept everywhere. */
static void test_growth_start(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker_spec ws = {
	    .id = "g", .total = {8, 24000, 10000, 0}, .grow_step_mb = 256, .data = "g"};
	struct master_sched_worker *g = master_sched_worker_add(s, &ws);
	assert_non_null(g);
	struct category *c = master_sched_category(s, "wu");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	for (int i = 0; i < 7; i++)
		measure(c, 1, 900 + 40 * i, 1);
	task(s, "wu", 1);
	struct master_sched_assignment out[MAXA];
	assert_int_equal(run_pass(s, out), 1);
	assert_ptr_equal(out[0].worker, g);
	assert_int_equal(out[0].box.memory, 945); /* the estimate is 1197 */
	/* a worker that does not grow: the estimate */
	master_sched_worker_set_flags(s, g, MASTER_SCHED_DRAINING);
	struct master_sched_worker *n = worker(s, "n", 8, 24000, 0);
	task(s, "wu", 2);
	assert_int_equal(run_pass(s, out), 1);
	assert_int_equal(out[0].box.memory, 1197);
	master_sched_worker_set_flags(s, g, 0);
	master_sched_worker_set_flags(s, n, MASTER_SCHED_DRAINING);
	/* a declared memory is a promise */
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.category = "wu";
	ts.request.memory = 1100;
	ts.data = (void *)3;
	assert_non_null(master_sched_task_add(s, &ts));
	assert_int_equal(run_pass(s, out), 1);
	assert_int_equal(out[0].box.memory, 1100);
	/* a task in a container of its own, on a worker whose growth does not reach it (not
	 * cgroup v1): the estimate */
	master_sched_task_spec_init(&ts);
	ts.category = "wu";
	ts.own_container = 1;
	ts.data = (void *)4;
	assert_non_null(master_sched_task_add(s, &ts));
	assert_int_equal(run_pass(s, out), 1);
	assert_int_equal(out[0].box.memory, 1197);
	master_sched_delete(s);
}

/* On a worker that lends idle cores, a task of a measured WARMUP category is allocated its
 * category's average use of cores; elsewhere the estimate from the peaks. */
static void test_lent_cores(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker_spec ws = {
	    .id = "l", .total = {2, 8000, 10000, 0}, .lends_cores = 1, .data = "l"};
	struct master_sched_worker *l = master_sched_worker_add(s, &ws);
	assert_non_null(l);
	struct category *c = master_sched_category(s, "wu");
	category_set_mode(c, CATEGORY_MODE_WARMUP);
	measure_cpu(c, 1, 500, 1, 0.4);
	for (int i = 0; i < 5; i++)
		task(s, "wu", i + 1);
	struct master_sched_assignment out[MAXA];
	/* 0.45 cores each: four fit two cores (memory 525 each) */
	assert_int_equal(run_pass(s, out), 4);
	for (int i = 0; i < 4; i++)
		assert_true(out[i].box.cores > 0.449 && out[i].box.cores < 0.451);
	master_sched_worker_set_flags(s, l, MASTER_SCHED_DRAINING);
	worker(s, "n", 2, 8000, 0);
	assert_int_equal(run_pass(s, out), 1);
	assert_true(out[0].box.cores == 1);
	master_sched_delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_task_alone),
	    cmocka_unit_test(test_failed_measurer),
	    cmocka_unit_test(test_no_prefetch_while_warming),
	    cmocka_unit_test(test_growth_start),
	    cmocka_unit_test(test_lent_cores),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
