/* test_wq_factory.c: unit tests of work_queue_factory's decision: scaling up to the demand,
 * the minimum kept, the maximum and per-cycle caps, workers of several cores, and reading the
 * demand from status documents. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "wq_factory.h"

#include "banned.h"

static void test_to_start(void **state)
{
	(void)state;
	struct wq_factory_limits l = {
	    .min_workers = 0, .max_workers = 10, .workers_per_cycle = 5, .worker_cores = 1};
	struct wq_factory_demand d = {0};
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 0); /* nothing to do */
	d.tasks_waiting = 3;
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 3);
	assert_int_equal(wq_factory_to_start(&l, &d, 2), 1); /* two already running */
	assert_int_equal(wq_factory_to_start(&l, &d, 5), 0); /* more than needed: none */
	d.tasks_waiting = 100;
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 5); /* per-cycle cap */
	assert_int_equal(wq_factory_to_start(&l, &d, 8), 2); /* max cap */
	assert_int_equal(wq_factory_to_start(&l, &d, 10), 0);
	assert_int_equal(wq_factory_to_start(&l, &d, 12), 0); /* never negative */
	/* running tasks count too */
	d.tasks_waiting = 0;
	d.tasks_running = 4;
	assert_int_equal(wq_factory_to_start(&l, &d, 3), 1);
}

static void test_min_and_cores(void **state)
{
	(void)state;
	struct wq_factory_limits l = {
	    .min_workers = 2, .max_workers = 6, .workers_per_cycle = 10, .worker_cores = 4};
	struct wq_factory_demand d = {0};
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 2); /* the minimum with no demand */
	assert_int_equal(wq_factory_to_start(&l, &d, 1), 1);
	d.tasks_waiting = 9; /* 9 one-core tasks on 4-core workers: 3 workers */
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 3);
	d.tasks_waiting = 8;
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 2);
	l.worker_cores = 0.5; /* less than a core still runs one task */
	assert_int_equal(wq_factory_to_start(&l, &d, 0), 6);
}

static void test_add_status(void **state)
{
	(void)state;
	struct wq_factory_demand d = {0};
	json_t *a = json_pack("{s:i, s:i, s:i}", "tasks_waiting", 7, "tasks_running", 2,
	                      "workers_connected", 1);
	json_t *b =
	    json_pack("{s:i, s:f, s:i}", "tasks_waiting", 1, "tasks_on_workers", 3.0, "workers", 4);
	json_t *c = json_pack("{s:s}", "type", "wq_master");
	assert_int_equal(wq_factory_add_status(&d, a), 0);
	assert_int_equal(wq_factory_add_status(&d, b), 0);
	assert_int_equal(wq_factory_add_status(&d, c), 0);
	assert_int_equal(d.tasks_waiting, 8);
	assert_int_equal(d.tasks_running, 5);
	assert_int_equal(d.workers_connected, 5);
	json_t *arr = json_array();
	assert_int_equal(wq_factory_add_status(&d, arr), -EINVAL);
	assert_int_equal(wq_factory_add_status(&d, NULL), -EINVAL);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(arr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_to_start),
	    cmocka_unit_test(test_min_and_cores),
	    cmocka_unit_test(test_add_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
