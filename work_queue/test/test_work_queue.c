/* test_work_queue.c: integration tests of the Work Queue master library (work_queue.h) over real
 * loopback TCP, against the scripted fake worker of support/wq_fake_worker.h: a task's round trip,
 * cache objects, refusals, lost workers, violations, passwords, exhaustion, submission errors,
 * cancel and retries, prefetch (queued tasks), watched outputs. TLS, the catalog, status queries
 * and fast abort are in test_work_queue_services.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "category.h"
#include "rmsummary.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_conn.h"
#include "wq_fake_worker.h"
#include "wq_sim.h"
#include "wq_xfer.h"
#include "banned.h"

/* ---- tests -------------------------------------------------------------------------------- */

static void test_task_round_trip(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[128], out2[128];
	snprintf(in, sizeof in, "%s/ref.fa", e->dir);
	snprintf(out, sizeof out, "%s/out1.txt", e->dir);
	snprintf(out2, sizeof out2, "%s/out2.txt", e->dir);
	ts_write_file(in, "ACGT\n");
	struct work_queue_task *t = fake_make_task(in, out);
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_false(work_queue_empty(q));
	assert_int_equal(work_queue_hungry(q), 9); /* 10 with no worker, minus 1 waiting */

	struct fake *f = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->return_status, 3);
	assert_string_equal(done->output, "hello\n");
	assert_int_equal(done->try_count, 1);
	char *content = ts_read_file(out, NULL);
	assert_non_null(content);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	assert_int_equal(f->objects_received, 1);
	assert_string_equal(f->last_object,
	                    "F-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55");
	/* the task message carried the allocation and the inputs in order */
	json_t *tm = f->task_msgs[0];
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(tm, "resources"), "memory")), 100);
	json_t *ins = json_object_get(tm, "inputs");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 0), "from")),
	                    "cache");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 1), "from")),
	                    "task");
	assert_true(done->resources_measured != NULL);
	assert_int_equal((int)done->resources_measured->v[RM_MEMORY], 10);
	assert_int_equal(done->time_workers_execute_last, 500000);

	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_submitted, 1);
	assert_int_equal(s.tasks_done, 1);
	assert_int_equal(s.tasks_dispatched, 1);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.workers_connected, 1);
	assert_int_equal(s.workers_idle, 1);
	assert_int_equal((int)s.total_cores, 4);
	assert_int_equal(s.total_memory, 4000);
	assert_true(s.bytes_sent >= 9);
	assert_true(s.bytes_received >= 15);
	assert_true(work_queue_empty(q));
	assert_int_equal(work_queue_hungry(q), 8); /* 2 x 4 free cores, nothing waiting */
	work_queue_task_delete(done);

	/* a second task using the same cached input: the object is not sent again */
	t = fake_make_task(in, out2);
	assert_true(work_queue_submit(q, t) > id);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f->objects_received, 1);
	assert_int_equal(f->tasks_received, 2);
	content = ts_read_file(out2, NULL);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	/* no temporary file is left beside the outputs */
	char pattern[160];
	snprintf(pattern, sizeof pattern, "%s/.out2.txt.wq-*", e->dir);
	glob_t g;
	assert_int_equal(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
	globfree(&g);
	fake_queue_delete(q);
	assert_true(f->closed); /* dismissed */
	fake_free(f);
	unlink(in);
	unlink(out);
	unlink(out2);
}

static void test_missing_object_resent(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref2.fa", e->dir);
	snprintf(out, sizeof out, "%s/out3.txt", e->dir);
	ts_write_file(in, "GGGG\n");
	struct fake *f = fake_start(e, q, FAKE_REFUSE_MISSING, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = fake_make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f->refused_once, 1);
	assert_int_equal(f->objects_received, 2); /* sent again after the refusal */
	assert_int_equal(f->tasks_received, 2);
	assert_int_equal(done->try_count, 1); /* a refusal is not a try */
	char *content = ts_read_file(out, NULL);
	assert_string_equal(content, "GGGG\nBUF\n");
	free(content);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.tasks_dispatched, 2);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
	unlink(in);
	unlink(out);
}

static void test_lost_worker_requeues(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref3.fa", e->dir);
	snprintf(out, sizeof out, "%s/out4.txt", e->dir);
	ts_write_file(in, "TTTT\n");
	struct fake *f1 = fake_start(e, q, FAKE_DISCONNECT, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = fake_make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	assert_true(fake_wait_flag(q, &f1->closed, 5));
	/* the master notices, the task is waiting again */
	struct work_queue_stats s;
	for (int i = 0; i < 50; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == 0)
			break;
		assert_null(work_queue_wait(q, 0.02));
	}
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.workers_lost, 1);
	assert_int_equal(s.tasks_waiting, 1);
	assert_int_equal(s.tasks_on_workers, 0);
	assert_false(work_queue_empty(q));
	struct fake *f2 = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1); /* same try */
	assert_int_equal(f2->tasks_received, 1);
	assert_int_equal(json_integer_value(json_object_get(f2->task_msgs[0], "try")), 1);
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.tasks_done, 1);
	char *content = ts_read_file(out, NULL);
	assert_string_equal(content, "TTTT\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f1);
	fake_free(f2);
	unlink(in);
	unlink(out);
}

static void test_worker_waiting(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ww.fa", e->dir);
	snprintf(out, sizeof out, "%s/ww.txt", e->dir);
	ts_write_file(in, "WW\n");
	assert_int_equal(work_queue_activate_worker_waiting(q, -1), -EINVAL);
	assert_int_equal(work_queue_activate_worker_waiting(q, 2), 0);
	assert_true(work_queue_submit(q, fake_make_task(in, out)) >= 1);
	struct fake *f1 = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	/* one worker of the two: the task stays waiting, however often the queue runs */
	for (int i = 0; i < 20; i++)
		assert_null(work_queue_wait(q, 0.01));
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_waiting, 1);
	assert_int_equal(s.tasks_dispatched, 0);
	assert_int_equal(f1->tasks_received, 0);
	/* the second arrives: dispatching starts */
	struct fake *f2 = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f1->tasks_received + f2->tasks_received, 1);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f1);
	fake_free(f2);
	unlink(in);
	unlink(out);
}

static void test_violation_drops_worker(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref4.fa", e->dir);
	snprintf(out, sizeof out, "%s/out5.txt", e->dir);
	ts_write_file(in, "CCCC\n");
	struct fake *f1 = fake_start(e, q, FAKE_VIOLATE, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = fake_make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	assert_true(fake_wait_flag(q, &f1->closed, 5));
	assert_true(
	    fake_log_has(e, "protocol violation: message \"task_running\" for task 9999 which is "
	                    "not assigned to this worker"));
	/* the master is still up and runs the task on another worker */
	struct fake *f2 = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_removed, 1);
	assert_int_equal(s.tasks_failed, 0);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f1);
	fake_free(f2);
	unlink(in);
	unlink(out);
}

static void test_wrong_password(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, "right password");
	struct fake *bad = fake_start(e, q, FAKE_RUN, "wrong password");
	assert_true(fake_wait_flag(q, &bad->hs_done, 5));
	assert_int_equal(bad->outcome, WQ_HS_PERMANENT);
	assert_string_equal(bad->hs_code, "auth");
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.workers_init, 0);
	struct fake *good = fake_start(e, q, FAKE_RUN, "right password");
	assert_true(fake_wait_workers(q, 1, 5));
	assert_int_equal(good->outcome, WQ_HS_OK);
	fake_queue_delete(q);
	fake_free(bad);
	fake_free(good);
}

static void test_exhaustion_retried_at_max(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	assert_int_equal(work_queue_specify_category_mode(q, "big", CATEGORY_MODE_MAX), 0);
	assert_int_equal(work_queue_specify_category_update_interval(q, "big", 1), 0);
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 2000;
	max.v[RM_CORES] = 2;
	max.v[RM_DISK] = 500;
	assert_int_equal(work_queue_specify_category_max_resources(q, "big", &max), 0);
	char out[128];
	snprintf(out, sizeof out, "%s/out6.txt", e->dir);
	struct fake *f = fake_start(e, q, FAKE_EXHAUST_FIRST, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	/* The first task runs at the maximum (nothing measured yet) and measures 10 MB. */
	struct work_queue_task *t = work_queue_task_create("grow");
	work_queue_task_specify_category(t, "big");
	work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 0);
	assert_int_equal(json_integer_value(json_object_get(
	                     json_object_get(f->task_msgs[0], "resources"), "memory")),
	                 2000);
	work_queue_task_delete(done);
	/* The second gets the measured first allocation, exhausts it, and is retried at the
	 * maximum with try 2. */
	t = work_queue_task_create("grow");
	work_queue_task_specify_category(t, "big");
	work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
	assert_true(work_queue_submit(q, t) >= 1);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 1);
	assert_int_equal(done->try_count, 2);
	assert_int_equal(f->tasks_received, 3);
	json_t *r1 = json_object_get(f->task_msgs[1], "resources");
	assert_true(json_integer_value(json_object_get(r1, "memory")) < 2000);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[1], "try")), 1);
	json_t *r2 = json_object_get(f->task_msgs[2], "resources");
	assert_int_equal(json_integer_value(json_object_get(r2, "memory")), 2000);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[2], "try")), 2);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_exhausted_attempts, 1);
	assert_int_equal(s.tasks_failed, 0);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
	unlink(out);
}

static void test_submit_errors(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct work_queue_task *t = work_queue_task_create("true");
	char missing[128];
	snprintf(missing, sizeof missing, "%s/does-not-exist", e->dir);
	work_queue_task_specify_input_file(t, missing, "x", WORK_QUEUE_CACHE);
	assert_int_equal(work_queue_submit(q, t), -ENOENT);
	work_queue_task_delete(t);
	t = work_queue_task_create(NULL);
	assert_int_equal(work_queue_submit(q, t), -EINVAL);
	work_queue_task_delete(t);
	/* a command over the protocol's 131071 bytes: refused here, not by the worker */
	char *big = malloc(200000);
	assert_non_null(big);
	memset(big, 'x', 199999);
	big[199999] = 0;
	t = work_queue_task_create(big);
	free(big);
	assert_int_equal(work_queue_submit(q, t), HTC_ETOOBIG);
	work_queue_task_delete(t);
	/* cancel a waiting task */
	t = work_queue_task_create("true");
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(t->result, WORK_QUEUE_RESULT_CANCELLED);
	assert_null(work_queue_cancel_by_taskid(q, id));
	assert_true(work_queue_empty(q));
	assert_null(work_queue_wait(q, WORK_QUEUE_WAITFORTASK)); /* empty: at once */
	work_queue_task_delete(t);
	/* a queued task keeps no index of its file names; one given back builds it again, so a
	 * name added then is still checked against the others */
	char in[256];
	snprintf(in, sizeof in, "%s/in.txt", e->dir);
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fclose(f);
	t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_input_file(t, in, "d/in", WORK_QUEUE_NOCACHE), 0);
	assert_int_equal(work_queue_task_specify_output_file(t, "out", "out", WORK_QUEUE_NOCACHE),
	                 0);
	assert_non_null(t->file_names);
	id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_null(t->file_names);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_true(work_queue_task_specify_input_file(t, in, "d", WORK_QUEUE_NOCACHE) < 0);
	assert_true(work_queue_task_specify_input_file(t, in, "d/in", WORK_QUEUE_NOCACHE) < 0);
	assert_true(work_queue_task_specify_output_file(t, "o2", "out/x", WORK_QUEUE_NOCACHE) < 0);
	work_queue_task_delete(t);
	t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_input_file(t, in, "d/in", WORK_QUEUE_NOCACHE), 0);
	id = work_queue_submit(q, t);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(work_queue_task_specify_input_file(t, in, "e", WORK_QUEUE_NOCACHE), 0);
	assert_int_equal(work_queue_task_specify_input_file(t, in, "d/in2", WORK_QUEUE_NOCACHE), 0);
	work_queue_task_delete(t);
	/* the categories document lists a category while it has tasks in the queue */
	t = work_queue_task_create("true");
	work_queue_task_specify_category(t, "gone");
	id = work_queue_submit(q, t);
	struct work_queue_task *y = work_queue_task_create("true");
	work_queue_task_specify_category(y, "kept");
	int yid = work_queue_submit(q, y);
	assert_true(yid >= 1);
	json_t *doc = work_queue_status(q, "categories");
	assert_int_equal(json_array_size(doc), 2);
	json_decref(doc);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	work_queue_task_delete(t);
	doc = work_queue_status(q, "categories");
	assert_int_equal(json_array_size(doc), 1);
	json_t *only = json_array_get(doc, 0);
	assert_string_equal(json_string_value(json_object_get(only, "name")), "kept");
	assert_int_equal(json_integer_value(json_object_get(only, "waiting")), 1);
	assert_int_equal(json_integer_value(json_object_get(only, "running")), 0);
	json_decref(doc);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, yid), y);
	work_queue_task_delete(y);
	/* by tag */
	struct work_queue_task *a = work_queue_task_create("true");
	struct work_queue_task *b = work_queue_task_create("true");
	work_queue_task_specify_tag(a, "alpha");
	work_queue_task_specify_tag(b, "beta");
	assert_true(work_queue_submit(q, a) >= 1);
	assert_true(work_queue_submit(q, b) >= 1);
	assert_null(work_queue_wait_for_tag(q, "beta", 0));
	assert_null(work_queue_cancel_by_tasktag(q, "gamma"));
	assert_ptr_equal(work_queue_cancel_by_tasktag(q, "beta"), b);
	assert_false(work_queue_empty(q));
	assert_ptr_equal(work_queue_cancel_by_tasktag(q, "alpha"), a);
	assert_true(work_queue_empty(q));
	work_queue_task_delete(a);
	work_queue_task_delete(b);
	fake_queue_delete(q);
}

static void test_cancel_running(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_tag(t, "slow");
	int id = work_queue_submit(q, t);
	struct work_queue_stats s;
	for (int i = 0; i < 100; i++) {
		assert_null(work_queue_wait(q, 0.02));
		work_queue_get_stats(q, &s);
		if (s.tasks_running == 1)
			break;
	}
	assert_int_equal(s.tasks_running, 1);
	assert_int_equal(s.workers_busy, 1);
	assert_true(s.committed_cores > 0.99 && s.committed_cores < 1.01);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(t->result, WORK_QUEUE_RESULT_CANCELLED);
	assert_true(work_queue_empty(q));
	/* the crossing task_done and the task_cancelled are taken quietly */
	assert_true(fake_wait_flag(q, &f->cancels, 5));
	for (int i = 0; i < 10; i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_false(f->closed);
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_cancelled, 1);
	assert_int_equal(s.tasks_running, 0);
	assert_int_equal(s.workers_idle, 1);
	assert_int_equal(s.workers_connected, 1);
	assert_false(fake_log_has(e, "for task 1 which is not assigned"));
	work_queue_task_delete(t);
	fake_queue_delete(q);
	fake_free(f);
}

static void test_max_retries(void **state)
{
	struct fake_env *e = *state;
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &e->loop;
	char txlog[160];
	snprintf(txlog, sizeof txlog, "%s/tx.log", e->dir);
	o.txlog = txlog;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	struct fake *f = fake_start(e, q, FAKE_SIGNAL, NULL);
	struct work_queue_task *t = work_queue_task_create("kill -SEGV $$");
	work_queue_task_specify_max_retries(t, 2);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_MAX_RETRIES);
	assert_int_equal(f->tasks_received, 3); /* max_retries + 1 tries */
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[2], "try")), 3);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 1);
	assert_int_equal(s.tasks_done, 0);
	work_queue_task_delete(done);
	/* without retries a signal is SIGNAL at once */
	t = work_queue_task_create("kill -SEGV $$");
	assert_true(work_queue_submit(q, t) >= 1);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SIGNAL);
	assert_int_equal(done->return_status, 11);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
	char *tx = ts_read_file(txlog, NULL);
	assert_non_null(tx);
	assert_non_null(strstr(tx, "MASTER START"));
	assert_non_null(strstr(tx, "TASK 1 DONE MAX_RETRIES"));
	assert_non_null(strstr(tx, "TASK 2 DONE SIGNAL 11"));
	assert_non_null(strstr(tx, "MASTER END"));
	free(tx);
}

/* How many lines of the debug log contain S. */
static int log_count(const struct fake_env *e, const char *s)
{
	FILE *f = fopen(e->log, "r");
	if (!f)
		return 0;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, s) != NULL;
	fclose(f);
	return n;
}

/* A worker the master dismisses (three sandbox errors in a row) gets no more tasks while its
 * connection closes: the tasks go to the next worker (the master once sent them to the closing
 * worker again and again, each send failing, and no other worker got any). */
static void test_dismissed_worker_gets_no_tasks(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128], out[8][128];
	snprintf(in, sizeof in, "%s/dz.fa", e->dir);
	ts_write_file(in, "DZ\n");
	struct fake *bad = fake_start(e, q, FAKE_SANDBOX_ERROR, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	for (int i = 0; i < 8; i++) {
		snprintf(out[i], sizeof out[i], "%s/dz%d.txt", e->dir, i);
		assert_true(work_queue_submit(q, fake_make_task(in, out[i])) >= 1);
	}
	assert_true(fake_wait_flag(q, &bad->closed, 10));
	int received_by_bad = bad->tasks_received;
	struct fake *good = fake_start(e, q, FAKE_RUN, NULL);
	int done = 0;
	for (int i = 0; i < 8; i++) {
		struct work_queue_task *t = fake_wait_task(q, 10);
		assert_non_null(t);
		done += t->result == WORK_QUEUE_RESULT_SUCCESS;
		work_queue_task_delete(t);
	}
	assert_int_equal(done, 8);
	assert_int_equal(bad->tasks_received, received_by_bad);
	/* a send already under way when the connection closed may fail, once; the defect sent
	 * the same tasks to the closing worker again and again */
	for (int id = 1; id <= 8; id++) {
		char what[64];
		snprintf(what, sizeof what, "cannot send task %d:", id);
		assert_true(log_count(e, what) <= 1);
	}
	fake_queue_delete(q);
	fake_free(bad);
	fake_free(good);
	unlink(in);
	for (int i = 0; i < 8; i++)
		unlink(out[i]);
}

/* Runs the loop until the fake worker has received N tasks; tasks that finish meanwhile are
 * counted in *DONE (may be NULL when none may finish). */
static int wait_received(struct work_queue *q, struct fake *f, int n, int *done, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	while (f->tasks_received < n && uv_hrtime() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		if (t) {
			assert_non_null(done);
			(*done)++;
			work_queue_task_delete(t);
		}
	}
	return f->tasks_received >= n;
}

static int pf_submit(struct fake_env *e, struct work_queue *q, const char *in, int k)
{
	char out[160];
	snprintf(out, sizeof out, "%s/pf_out%d.txt", e->dir, k);
	struct work_queue_task *t = fake_make_task(in, out);
	work_queue_task_specify_category(t, "short");
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	return id;
}

static bool msg_queued(struct fake *f, int i)
{
	return json_is_true(json_object_get(f->task_msgs[i], "queued"));
}

static bool two_running(void *arg)
{
	struct work_queue_stats st;
	work_queue_get_stats(arg, &st);
	return st.tasks_running >= 2;
}

static bool no_worker(void *arg)
{
	struct work_queue_stats st;
	work_queue_get_stats(arg, &st);
	return st.workers_connected == 0;
}

static void test_prefetch_fake_worker(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[128];
	snprintf(in, sizeof in, "%s/ref.fa", e->dir);
	ts_write_file(in, "ACGT\n");
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	f->queue_max = 2;
	f->cores = 1;
	assert_true(fake_wait_workers(q, 1, 5));
	int a1 = pf_submit(e, q, in, 1);
	assert_true(wait_received(q, f, 1, NULL, 5));
	/* The worker is full but nothing of the category was measured: nothing is queued. */
	int a2 = pf_submit(e, q, in, 2), a3 = pf_submit(e, q, in, 3), a4 = pf_submit(e, q, in, 4);
	assert_false(wait_received(q, f, 2, NULL, 0.4));
	assert_false(msg_queued(f, 0));
	/* a1 ends (0.5 s measured): a2 goes normally, a3 and a4 queued behind it. */
	fake_send_results(f, fake_task_find(f, a1));
	int done = 0;
	assert_true(wait_received(q, f, 4, &done, 5));
	assert_int_equal(done, 1);
	assert_int_equal((int)json_integer_value(json_object_get(f->task_msgs[1], "id")), a2);
	assert_false(msg_queued(f, 1));
	assert_true(msg_queued(f, 2));
	assert_true(msg_queued(f, 3));
	assert_int_equal(f->queued_received, 2);
	struct work_queue_stats st;
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_queued_on_workers, 2);
	assert_int_equal(st.tasks_on_workers, 3);
	assert_int_equal(st.tasks_running, 1);
	/* for scalers the two queued ahead of their turn still wait for resources */
	json_int_t sw = 0, sr = 0;
	json_t *doc = work_queue_status(q, "master");
	size_t ci;
	json_t *cat;
	json_array_foreach(
	    json_object_get(json_object_get(json_array_get(doc, 0), "scaler"), "categories"), ci,
	    cat)
	{
		sw += json_integer_value(json_object_get(cat, "waiting"));
		sr += json_integer_value(json_object_get(json_object_get(cat, "running"), "count"));
	}
	json_decref(doc);
	assert_int_equal(sw, 2);
	assert_int_equal(sr, 1);
	/* the categories document counts the same, from the same counters (no walk over the
	 * tasks); a1, done and not yet given back, keeps its category listed */
	doc = work_queue_status(q, "categories");
	sw = sr = 0;
	json_array_foreach(doc, ci, cat)
	{
		sw += json_integer_value(json_object_get(cat, "waiting"));
		sr += json_integer_value(json_object_get(cat, "running"));
	}
	assert_int_equal(json_array_size(doc), 1);
	assert_int_equal(sw, 2);
	assert_int_equal(sr, 1);
	json_decref(doc);
	/* queue_max reached: a5 is not sent. */
	int a5 = pf_submit(e, q, in, 5);
	assert_false(wait_received(q, f, 5, NULL, 0.3));
	/* Cancel of the queued a4: the fake answers task_cancelled, a slot frees; but with the
	 * category above the threshold, no prefetch. Back to 1 s: a5 goes queued. */
	assert_int_equal(work_queue_specify_prefetch(q, -1, 0.1), 0);
	struct work_queue_task *c = work_queue_cancel_by_taskid(q, a4);
	assert_non_null(c);
	work_queue_task_delete(c);
	fake_wait_flag(q, &f->cancels, 2);
	assert_int_equal(f->cancels, 1);
	assert_false(wait_received(q, f, 5, NULL, 0.3));
	assert_int_equal(work_queue_specify_prefetch(q, -1, 1.0), 0);
	assert_true(wait_received(q, f, 5, NULL, 5));
	assert_true(msg_queued(f, 4));
	/* The worker starts a3 by itself: the master counts it running from then on. */
	fake_start_queued(f, a3);
	assert_true(fake_queue_until(q, two_running, q, 5));
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_running, 2);
	assert_int_equal(st.tasks_queued_on_workers, 1);
	/* The worker vanishes with a2, a3 running and a5 queued: all back, not counted. */
	wq_conn_close_now(f->c);
	assert_true(fake_queue_until(q, no_worker, q, 5));
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_waiting, 3);
	assert_int_equal(st.tasks_on_workers, 0);
	assert_int_equal(st.tasks_queued_on_workers, 0);
	/* A worker without `queue` (1 core) gets them one by one, never queued, each once. */
	struct fake *g = fake_start(e, q, FAKE_RUN, NULL);
	g->cores = 1;
	int ids[3] = {0};
	for (int k = 0; k < 3; k++) {
		struct work_queue_task *t = fake_wait_task(q, 5);
		assert_non_null(t);
		assert_int_equal(t->result, WORK_QUEUE_RESULT_SUCCESS);
		ids[k] = t->taskid;
		work_queue_task_delete(t);
	}
	assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	for (int k = 0; k < 3; k++)
		assert_true(ids[k] == a2 || ids[k] == a3 || ids[k] == a5);
	assert_int_equal(g->tasks_received, 3);
	assert_int_equal(g->queued_received, 0);
	assert_true(work_queue_empty(q));
	fake_queue_delete(q);
	fake_free(f);
	fake_free(g);
}

/* ---- watched outputs (protocol 5.6) ------------------------------------------------------- */

static struct work_queue_task *watch_task(const char *out_path)
{
	struct work_queue_task *t = work_queue_task_create("tail -f log");
	assert_int_equal(
	    work_queue_task_specify_output_file(t, out_path, "log.txt", WORK_QUEUE_WATCH), 0);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_disk(t, 100);
	return t;
}

struct tasks_wait {
	struct fake *f;
	int n;
};

static bool tasks_received(void *arg)
{
	struct tasks_wait *w = arg;
	return w->f->tasks_received >= w->n;
}

/* Runs the queue until F has received N tasks (and none finishes meanwhile). */
static void until_tasks(struct work_queue *q, struct fake *f, int n)
{
	struct tasks_wait w = {f, n};
	fake_queue_until(q, tasks_received, &w, 5);
	assert_int_equal(f->tasks_received, n);
}

struct sent_wait {
	struct fake *f;
	int before;
};

static bool one_more_sent(void *arg)
{
	struct sent_wait *w = arg;
	return w->f->watch_sent != w->before;
}

/* The fake sends TEXT as output 0 of task ID at OFFSET (-1: no offset) and waits for its end. */
static uint32_t watch_send(struct work_queue *q, struct fake *f, int64_t id, int64_t offset,
                           const char *text)
{
	json_t *target = wq_xfer_target_output(id, 0);
	if (offset >= 0)
		json_object_set_new(target, "offset", json_integer(offset));
	uint32_t x = 0;
	struct sent_wait w = {f, f->watch_sent};
	assert_int_equal(wq_xfer_send_buffer(f->out, text, strlen(text), target, 0, NULL, &x), 0);
	json_decref(target);
	fake_queue_until(q, one_more_sent, &w, 5);
	assert_int_equal(f->watch_sent, w.before + 1);
	return wq_sim_wire_id(f->wire_ids, x); /* the id on the wire, for task_done */
}

struct content_wait {
	const char *path, *text;
};

static bool content_is(void *arg)
{
	struct content_wait *w = arg;
	char *c = ts_read_file(w->path, NULL);
	bool same = c && !strcmp(c, w->text);
	free(c);
	return same;
}

/* Runs the queue until PATH holds exactly TEXT (the master writes off the loop thread). */
static int until_content(struct work_queue *q, const char *path, const char *text)
{
	struct content_wait w = {path, text};
	return fake_queue_until(q, content_is, &w, 5);
}

static void watch_done(struct fake *f, int64_t id, int64_t try_, uint32_t xfer, int64_t size)
{
	fake_send(f, json_pack("{s:s,s:I,s:I,s:s,s:i,s:[{s:i,s:i,s:I}]}", "m", "task_done", "id",
	                       (json_int_t)id, "try", (json_int_t)try_, "outcome", "exited",
	                       "exit_status", 0, "outputs", "index", 0, "xfer", (int)xfer, "size",
	                       (json_int_t)size));
}

static bool msg_watch(struct fake *f, int i)
{
	json_t *o = json_array_get(json_object_get(f->task_msgs[i], "outputs"), 0);
	return json_is_true(json_object_get(o, "watch"));
}

static void test_watch_fake_worker(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/watched.log", e->dir);

	/* a worker without `watch`: watch false, the output comes back whole at the end */
	struct fake *plain = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(work_queue_submit(q, watch_task(out)) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_false(msg_watch(plain, 0));
	work_queue_task_delete(done);
	wq_conn_close_now(plain->c);

	/* a worker with `watch`: two increments, then the final transfer */
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	f->watch = 1;
	int id = work_queue_submit(q, watch_task(out));
	until_tasks(q, f, 1);
	assert_true(msg_watch(f, 0));
	watch_send(q, f, id, 0, "line 1\n");
	assert_true(until_content(q, out, "line 1\n")); /* visible while the task runs */
	watch_send(q, f, id, 7, "line 2\n");
	assert_true(until_content(q, out, "line 1\nline 2\n"));
	uint32_t last = watch_send(q, f, id, 14, "end\n");
	assert_int_equal(f->watch_fails, 0);
	watch_done(f, id, 1, last, 18);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	work_queue_task_delete(done);
	char *content = ts_read_file(out, NULL);
	assert_string_equal(content, "line 1\nline 2\nend\n");
	free(content);

	/* a size that does not match at task_done: output missing, what came is kept */
	id = work_queue_submit(q, watch_task(out));
	until_tasks(q, f, 2);
	watch_send(q, f, id, 0, "abc");
	assert_true(until_content(q, out, "abc")); /* truncated by the new task's first part */
	last = watch_send(q, f, id, 3, "de");
	watch_done(f, id, 1, last, 99);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_OUTPUT_MISSING);
	work_queue_task_delete(done);
	content = ts_read_file(out, NULL);
	assert_string_equal(content, "abcde");
	free(content);

	/* an offset that is not the bytes already received: the worker is dropped, the task
	 * goes back to READY and runs again elsewhere from 0 */
	id = work_queue_submit(q, watch_task(out));
	until_tasks(q, f, 3);
	watch_send(q, f, id, 0, "xyz");
	assert_true(until_content(q, out, "xyz"));
	json_t *target = wq_xfer_target_output(id, 0);
	json_object_set_new(target, "offset", json_integer(5));
	assert_int_equal(wq_xfer_send_buffer(f->out, "bad", 3, target, 0, NULL, NULL), 0);
	json_decref(target);
	assert_true(fake_wait_flag(q, &f->closed, 5));
	assert_true(fake_log_has(e, "transfer"));
	assert_true(fake_log_has(e, "offset 5 of output 0"));
	struct work_queue_stats st;
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_waiting, 1);
	struct fake *g = fake_start(e, q, FAKE_RUN, NULL);
	done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1);
	work_queue_task_delete(done);
	content = ts_read_file(out, NULL);
	assert_string_equal(content, ""); /* the fake's output of a task without inputs */
	free(content);
	fake_queue_delete(q);
	fake_free(plain);
	fake_free(f);
	fake_free(g);
	unlink(out);
}

/* Bytes in the debug log now, and whether S appears in what was written after MARK bytes. */
static long log_size(const struct fake_env *e)
{
	struct stat st;
	return stat(e->log, &st) == 0 ? (long)st.st_size : 0;
}

static int log_has_since(const struct fake_env *e, long mark, const char *s)
{
	FILE *f = fopen(e->log, "r");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	fseek(f, mark, SEEK_SET);
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

/* The task that logged PREP after MARK has its inputs named (or never needed to wait). */
struct named_wait {
	const struct fake_env *e;
	long mark;
	const char *prep, *named;
};

static bool inputs_named(void *arg)
{
	struct named_wait *w = arg;
	return !log_has_since(w->e, w->mark, w->prep) || log_has_since(w->e, w->mark, w->named);
}

/* A worker that reports its disk full (protocol 5.10): the objects no task needs are dropped,
 * least recently used first, one a READY task needs is kept, and the worker, still full and
 * with no task, is dismissed after the timeout. */
static void test_full_worker(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	assert_int_equal(work_queue_specify_full_worker_timeout(q, -1), -EINVAL);
	assert_int_equal(work_queue_specify_full_worker_timeout(q, 1), 0);
	char in[3][128], out[128];
	for (int i = 0; i < 3; i++) {
		snprintf(in[i], sizeof in[i], "%s/full%d.fa", e->dir, i);
		char text[16];
		snprintf(text, sizeof text, "OBJ%d\n", i);
		ts_write_file(in[i], text);
	}
	snprintf(out, sizeof out, "%s/full.out", e->dir);
	struct fake *f = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	/* uses in order: 0, 1, 0, 2: the least recently used is 1, then 0, then 2 */
	const int order[] = {0, 1, 0, 2};
	for (int k = 0; k < 4; k++) {
		struct work_queue_task *t = fake_make_task(in[order[k]], out);
		assert_true(work_queue_submit(q, t) >= 1);
		struct work_queue_task *done = fake_wait_task(q, 5);
		assert_non_null(done);
		assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(done);
	}
	assert_int_equal(f->objects_received, 3); /* cache[0..2] hold objects 0, 1, 2 */
	/* a task that waits (it fits no worker) and needs object 2 */
	struct work_queue_task *big = fake_make_task(in[2], out);
	work_queue_task_specify_cores(big, 64);
	long mark = log_size(e);
	int big_id = work_queue_submit(q, big);
	assert_true(big_id >= 1);
	/* Its input is named at once (its hash is known from the tasks before) or in the thread
	 * pool: then wait until it is, so that the drop below knows the task needs it. */
	char prep[64], named[64];
	snprintf(prep, sizeof prep, "wq: task %d: 1 input(s) being prepared", big_id);
	snprintf(named, sizeof named, "wq: task %d: inputs named", big_id);
	struct named_wait w = {e, mark, prep, named};
	assert_true(fake_queue_until(q, inputs_named, &w, 10));

	fake_capacity(f, 1);
	assert_true(fake_wait_flag(q, &f->drop_msgs, 5));
	assert_int_equal(f->drop_msgs, 1);
	assert_int_equal(f->ndropped, 2);
	assert_string_equal(f->dropped[0], f->cache[1]);
	assert_string_equal(f->dropped[1], f->cache[0]);
	assert_true(fake_log_has(e, "disk full: dropping 2 cached objects"));
	/* still full, no task: dismissed after 1 s, not before */
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_connected, 1);
	assert_true(fake_wait_flag(q, &f->dismissed, 5));
	assert_string_equal(f->dismiss_reason, "worker disk is full");
	assert_true(fake_log_has(e, "disk still full after"));
	struct work_queue_task *back = work_queue_cancel_by_taskid(q, big_id);
	assert_ptr_equal(back, big);
	work_queue_task_delete(back);
	fake_queue_delete(q);
	fake_free(f);
	for (int i = 0; i < 3; i++)
		unlink(in[i]);
	unlink(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_task_round_trip),
	    cmocka_unit_test(test_missing_object_resent),
	    cmocka_unit_test(test_lost_worker_requeues),
	    cmocka_unit_test(test_worker_waiting),
	    cmocka_unit_test(test_violation_drops_worker),
	    cmocka_unit_test(test_wrong_password),
	    cmocka_unit_test(test_exhaustion_retried_at_max),
	    cmocka_unit_test(test_submit_errors),
	    cmocka_unit_test(test_cancel_running),
	    cmocka_unit_test(test_max_retries),
	    cmocka_unit_test(test_dismissed_worker_gets_no_tasks),
	    cmocka_unit_test(test_prefetch_fake_worker),
	    cmocka_unit_test(test_watch_fake_worker),
	    cmocka_unit_test(test_full_worker),
	};
	return cmocka_run_group_tests(tests, fake_env_setup, fake_env_teardown);
}
