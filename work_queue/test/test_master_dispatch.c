/* test_master_dispatch.c: the master's data path against a rogue or unlucky worker (the fake
 * worker of wq_fake_worker.h, whose messages the tests write by hand): a task_done naming a
 * transfer never opened, an output announced larger than the master's disk, an exhaustion of a
 * size the master chose, and the temporary files of dead masters.
 */
#include "wq_fake_worker.h"

#include <dirent.h>

/* Runs the loop until the fake worker's task ID is RUNNING on the master. */
static int until_running(struct work_queue *q, int n)
{
	struct work_queue_stats s;
	for (int i = 0; i < 250; i++) {
		assert_null(work_queue_wait(q, 0.02));
		work_queue_get_stats(q, &s);
		if (s.tasks_running >= n)
			return 1;
	}
	return 0;
}

/* Entries of DIR whose name contains PART. */
static int count_entries(const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, part) != NULL;
	closedir(d);
	return n;
}

static struct work_queue_task *out_task(const char *out)
{
	struct work_queue_task *t = work_queue_task_create("echo x > out.txt");
	assert_int_equal(
	    work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE), 0);
	work_queue_task_specify_cores(t, 1);
	return t;
}

/* Defect: a worker naming, in task_done, a transfer it never opened made the task fail for good
 * (OUTPUT_MISSING). It is a violation: the worker is dropped and the task runs again elsewhere
 * with the same try. */
static void test_done_names_unopened_transfer(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/d9.txt", tmpdir);
	struct fake *f1 = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = out_task(out);
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_true(until_running(q, 1));
	fake_send(f1, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                        "try", 1, "outcome", "exited", "exit_status", 0, "outputs",
	                        "index", 0, "xfer", 77));
	assert_true(run_until_flag(q, &f1->closed, 5));
	assert_true(log_has("names transfer 77 for output 0, which was never opened"));
	struct work_queue_stats s;
	for (int i = 0; i < 100; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == 0)
			break;
		assert_null(work_queue_wait(q, 0.02));
	}
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.tasks_waiting, 1);
	assert_int_equal(s.tasks_failed, 0);
	/* another worker runs it, same try */
	struct fake *f2 = fake_start(q, FAKE_RUN, NULL);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_ptr_equal(done, t);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1);
	assert_int_equal(json_integer_value(json_object_get(f2->task_msgs[0], "try")), 1);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f1);
	fake_free(f2);
	unlink(out);
}

/* Defect: the master did not check an output's announced size against its own disk. A transfer
 * announcing 10 TiB is refused (disk_full) before anything is written, and the task's result
 * says why. */
static void test_output_larger_than_master_disk(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char dir[128], out[160];
	snprintf(dir, sizeof dir, "%s/d4", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof out, "%s/big.txt", dir);
	struct fake *f = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = out_task(out);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	int64_t huge = INT64_C(10) << 40;
	fake_send(f, json_pack("{s:s,s:i,s:{s:i,s:i},s:I,s:s}", "m", "xfer_begin", "xfer", 1,
	                       "target", "task", id, "output", 0, "size", (json_int_t)huge, "enc",
	                       "none"));
	fake_send(f, json_pack("{s:s,s:i,s:s}", "m", "xfer_abort", "xfer", 1, "reason",
	                       "refused by the master"));
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                       "try", 1, "outcome", "exited", "exit_status", 0, "outputs", "index",
	                       0, "xfer", 1));
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_OUTPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), "10995116277760 bytes announced"));
	assert_non_null(strstr(work_queue_task_last_error(done), "the master's disk"));
	assert_true(log_has("transfer 1 refused"));
	assert_int_equal(count_entries(dir, "big.txt"), 0); /* nothing was written */
	assert_false(f->closed);                              /* a refusal, not a violation */
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
}

/* The fake worker's task_done for try TRY of task ID: exhausted RESOURCE (its monitor's
 * verdict), measured at USED MB. */
static void send_exhausted(struct fake *f, int id, int try_, const char *resource, int used)
{
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[s],s:{s:s,s:i,s:f}}", "m", "task_done",
	                       "id", id, "try", try_, "outcome", "exhausted", "signal", 9,
	                       "exhausted", resource, "summary", "exit_type", "limits", resource,
	                       used, "wall_time", 0.2));
	for (int i = 0; i < f->ntasks; i++)
		if (f->tasks[i].id == id && f->tasks[i].try_ == try_)
			f->tasks[i].stage = 2;
}

static int64_t msg_resource(json_t *task, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(task, "resources"), name));
}

/* Defect: a task that declares no disk got the worker's free disk of the moment (after a
 * disk_full refusal, 15 MB), exceeded it and failed for good in FIXED mode. A size the master
 * chose is no promise: the task runs again with no limit on it, and succeeds. */
static void test_chosen_size_exhausted_retried(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/d3.txt", tmpdir);
	struct fake *f = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("make 20MB");
	assert_int_equal(
	    work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE), 0);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	assert_true(msg_resource(f->task_msgs[0], "disk") > 0); /* the master's choice */
	send_exhausted(f, id, 1, "disk", 20);
	uint64_t end = uv_hrtime() + (uint64_t)5e9;
	while (f->tasks_received < 2 && uv_hrtime() < end) {
		assert_null(work_queue_wait(q, 0.05)); /* not a failure */
	}
	assert_int_equal(f->tasks_received, 2);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[1], "try")), 2);
	assert_int_equal(msg_resource(f->task_msgs[1], "disk"), 0); /* no limit */
	assert_true(msg_resource(f->task_msgs[1], "memory") > 0);  /* only what was exceeded */
	fake_send_results(f, &f->tasks[1]);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 1);
	assert_int_equal(done->try_count, 2);
	assert_string_equal(work_queue_task_last_error(done), "");
	assert_true(log_has("exceeded the disk the master chose"));
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
	unlink(out);
}

/* A declared size stays a promise: exceeding it fails the task for good, and the result names
 * the resource (error text and limits_exceeded). */
static void test_declared_size_exhausted_named(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	struct fake *f = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("make 200MB");
	work_queue_task_specify_disk(t, 100);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	assert_int_equal(msg_resource(f->task_msgs[0], "disk"), 100);
	send_exhausted(f, id, 1, "disk", 200);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION);
	assert_int_equal(f->tasks_received, 1);
	assert_non_null(strstr(work_queue_task_last_error(done), "disk 100 MB (used 200)"));
	assert_non_null(done->resources_measured);
	assert_true(done->resources_measured->limits_exceeded[RM_DISK] >= 0);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_done_names_unopened_transfer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_larger_than_master_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chosen_size_exhausted_retried, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_declared_size_exhausted_named, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
