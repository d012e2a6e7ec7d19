/* test_worker_cpus.c: unit tests for worker_cpus, the cpus a pinning worker's tasks hold: whole
 * cpus per task (a fraction of a core takes one), the lowest free first, never one held by
 * another task, nothing taken when too few are free, and given back exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "worker_cpus.h"
#include "banned.h"

static struct worker_cpus *four_of_six(void)
{
	cpu_set_t a;
	CPU_ZERO(&a);
	CPU_SET(1, &a); /* the worker may use 1, 2, 4, 5 */
	CPU_SET(2, &a);
	CPU_SET(4, &a);
	CPU_SET(5, &a);
	return worker_cpus_create(&a);
}

static void test_take_and_give(void **state)
{
	(void)state;
	struct worker_cpus *c = four_of_six();
	cpu_set_t a, b, x;
	char buf[64];
	assert_int_equal(worker_cpus_free(c), 4);
	assert_int_equal(worker_cpus_take(c, 0.25, &a, buf, sizeof buf), 1);
	assert_string_equal(buf, "1");
	assert_int_equal(worker_cpus_take(c, 2, &b, buf, sizeof buf), 2);
	assert_string_equal(buf, "2,4");
	assert_int_equal(CPU_COUNT(&b), 2);
	/* 1.5 cores: two whole cpus, only one is free */
	assert_int_equal(worker_cpus_take(c, 1.5, &x, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	assert_int_equal(CPU_COUNT(&x), 0);
	assert_int_equal(worker_cpus_free(c), 1);
	worker_cpus_give(c, &a);
	assert_int_equal(CPU_COUNT(&a), 0);
	assert_int_equal(worker_cpus_free(c), 2);
	assert_int_equal(worker_cpus_take(c, 1.5, &x, buf, sizeof buf), 2);
	assert_string_equal(buf, "1,5");
	worker_cpus_give(c, &b);
	worker_cpus_give(c, &x);
	assert_int_equal(worker_cpus_free(c), 4);
	worker_cpus_delete(c);
	worker_cpus_delete(NULL);
}

static void test_small_buffer(void **state)
{
	(void)state;
	struct worker_cpus *c = four_of_six();
	cpu_set_t a;
	char buf[3];
	assert_int_equal(worker_cpus_take(c, 2, &a, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	assert_int_equal(worker_cpus_free(c), 4);
	worker_cpus_delete(c);
}

static void test_own_affinity(void **state)
{
	(void)state;
	cpu_set_t mine;
	assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
	struct worker_cpus *c = worker_cpus_create(NULL);
	assert_int_equal(worker_cpus_free(c), CPU_COUNT(&mine));
	worker_cpus_delete(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_take_and_give),
	    cmocka_unit_test(test_small_buffer),
	    cmocka_unit_test(test_own_affinity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
