/* test_master_images.c: the master's side of the worker's `images` report, against fake
 * workers: a worker whose engine does not answer gets no task that names a container (others
 * still run there) until it says the engine answers again; the message without its capability,
 * or malformed, is a violation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "work_queue.h"
#include "wq_fake_worker.h"
#include "banned.h"

static json_t *images_msg(int engine)
{
	return json_pack("{s:s,s:b,s:[s],s:[]}", "m", "images", "engine", engine, "names",
	                 "busybox:1", "archives");
}

struct log_wait {
	struct fake_env *e;
	const char *s;
};

static bool log_has(void *arg)
{
	struct log_wait *w = arg;
	return fake_log_has(w->e, w->s);
}

static void test_engine_down_withdraws_containers(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct fake *f = fake_start(e, q, FAKE_RUN, NULL);
	f->containers = 1;
	assert_true(fake_wait_workers(q, 1, 5));
	fake_send(f, images_msg(0));
	struct log_wait lw = {e, "1 named, 0 archives loaded, engine down"};
	assert_true(fake_queue_until(q, log_has, &lw, 5));
	/* the workers document says so */
	json_t *ws = work_queue_status(q, "workers");
	assert_int_equal(json_array_size(ws), 1);
	assert_true(json_is_false(json_object_get(json_array_get(ws, 0), "container_engine")));
	json_decref(ws);
	struct work_queue_task *ct = work_queue_task_create("true");
	work_queue_task_specify_cores(ct, 1);
	assert_int_equal(
	    work_queue_task_specify_container(ct, "busybox:1", WORK_QUEUE_CONTAINER_TASK), 0);
	assert_true(work_queue_submit(q, ct) >= 1);
	struct work_queue_task *plain = work_queue_task_create("true");
	work_queue_task_specify_cores(plain, 1);
	assert_true(work_queue_submit(q, plain) >= 1);
	/* the plain task runs; the container task is not sent while the engine is down */
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_ptr_equal(done, plain);
	assert_int_equal(f->tasks_received, 1);
	work_queue_task_delete(done);
	/* the engine answers again: the container task goes there */
	fake_send(f, images_msg(1));
	done = fake_wait_task(q, 5);
	assert_ptr_equal(done, ct);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f->tasks_received, 2);
	assert_true(fake_log_has(e, "its container engine answers again"));
	ws = work_queue_status(q, "workers");
	assert_true(json_is_true(json_object_get(json_array_get(ws, 0), "container_engine")));
	json_decref(ws);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
}

static void test_violations(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	/* without the capability */
	struct fake *f = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	fake_send(f, images_msg(1));
	assert_true(fake_wait_flag(q, &f->closed, 5));
	assert_true(fake_log_has(e, "message \"images\" without the capability \"images\""));
	fake_free(f);
	/* a name that is none */
	f = fake_start(e, q, FAKE_RUN, NULL);
	f->containers = 1;
	assert_true(fake_wait_workers(q, 1, 5));
	fake_send(f, json_pack("{s:s,s:b,s:[s],s:[]}", "m", "images", "engine", 1, "names", "-x y",
	                       "archives"));
	assert_true(fake_wait_flag(q, &f->closed, 5));
	assert_true(fake_log_has(e, "key \"names[0]\""));
	fake_free(f);
	fake_queue_delete(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_engine_down_withdraws_containers, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_violations, fake_env_setup, fake_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
