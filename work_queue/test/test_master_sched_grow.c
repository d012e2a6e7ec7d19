/* test_master_sched_grow.c: unit tests of a running task grown or shrunk on its worker
 * (master_sched_task_resize_memory, the master's side of `task_resized`): the worker's free
 * memory follows, so a pass does not send it a task that no longer fits, and does once the
 * task shrinks back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "master_sched.h"
#include "banned.h"

static struct master_sched_task *add_task(struct master_sched *s, intptr_t id)
{
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.request = (struct master_sched_box){1, 400, 10, 0};
	ts.data = (void *)id;
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	return t;
}

static int pass(struct master_sched *s)
{
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	struct master_sched_assignment out[4];
	int n = master_sched_pass(s, &o, out, 4, NULL);
	assert_true(n >= 0);
	return n;
}

static void test_resize(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker_spec ws = {.id = "w", .total = {2, 1000, 1000, 0}};
	struct master_sched_worker *w = master_sched_worker_add(s, &ws);
	assert_non_null(w);
	struct master_sched_task *a = add_task(s, 1);
	assert_int_equal(master_sched_task_resize_memory(s, a, 700), -EINVAL); /* not running */
	assert_int_equal(pass(s), 1);
	struct master_sched_box f, box;
	master_sched_worker_free(w, &f);
	assert_int_equal(f.memory, 600);
	/* grown to 700 on the worker: 300 MB left, a second task of 400 does not fit */
	assert_int_equal(master_sched_task_resize_memory(s, a, 700), 0);
	master_sched_task_box(a, &box);
	assert_int_equal(box.memory, 700);
	master_sched_worker_free(w, &f);
	assert_int_equal(f.memory, 300);
	add_task(s, 2);
	assert_int_equal(pass(s), 0);
	/* shrunk back: it fits */
	assert_int_equal(master_sched_task_resize_memory(s, a, 400), 0);
	assert_int_equal(pass(s), 1);
	master_sched_worker_free(w, &f);
	assert_int_equal(f.memory, 200);
	/* its release gives back what it holds now */
	assert_int_equal(master_sched_task_resize_memory(s, a, 500), 0);
	assert_int_equal(master_sched_task_release(s, a, 1.0), 0);
	master_sched_worker_free(w, &f);
	assert_int_equal(f.memory, 600);
	master_sched_delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
