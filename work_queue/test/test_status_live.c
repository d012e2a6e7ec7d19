/* test_status_live.c: unit tests of the frame of work_queue_status --live: the master's summary,
 * tasks by state, categories, workers (at most STATUS_LIVE_MAX_WORKERS listed), and the rates
 * (since the last frame and since the start). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status_live.h"

#include "banned.h"

static json_t *master(int done)
{
	return json_pack("[{s:s, s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, "
	                 "s:f}]",
	                 "project", "proj", "version", "htc 0.1.0", "started",
	                 (json_int_t)1000000000000LL, "workers_connected", 2, "workers_busy", 1,
	                 "workers_idle", 1, "tasks_waiting", 3, "tasks_running", 1, "tasks_done",
	                 done, "tasks_failed", 1, "workers_joined", 2, "workers_lost", 0,
	                 "committed_cores", 1.0, "total_cores", 4.0);
}

static void test_frame(void **state)
{
	(void)state;
	json_t *workers = json_array();
	for (int i = 0; i < STATUS_LIVE_MAX_WORKERS + 3; i++)
		json_array_append_new(
		    workers, json_pack("{s:s, s:s, s:s, s:i, s:{s:f, s:i}, s:{s:f, s:i}}", "host",
		                       "node", "address", "10.0.0.1:5", "state", "ACTIVE",
		                       "tasks_running", 1, "total", "cores", 2.0, "memory", 100,
		                       "in_use", "cores", 1.0, "memory", 50));
	json_t *tasks = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}]", "state", "WAITING", "state",
	                          "WAITING", "state", "RUNNING", "state", "ODD");
	json_t *cats = json_pack("[{s:s, s:i, s:i, s:i, s:i, s:i}]", "name", "sim", "waiting", 3,
	                         "running", 1, "done", 10, "failed", 1, "exhaustions", 2);
	json_t *m = master(10);
	struct status_live_sample s = {m, workers, tasks, cats, 1000000000000LL + 10000000};
	struct status_live_prev prev = {0};
	struct buffer b;
	buffer_init(&b, 0);
	assert_int_equal(status_live_frame(&b, "h", 9, &s, &prev), 0);
	const char *t = buffer_tostring(&b);
	printf("%s", t);
	assert_non_null(strstr(t, "master h:9  project proj  htc 0.1.0  up 10s  at "));
	assert_non_null(strstr(t, "workers: 2 connected (0 init, 1 idle, 1 busy); 2 joined"));
	assert_non_null(
	    strstr(t, "tasks: 3 waiting, 1 running, 0 with results, 10 done, 1 failed"));
	/* no earlier frame: no recent rate; 10 done in 10 s since the start */
	assert_non_null(strstr(t, "rates: - tasks done/s since the last refresh, 1.00 since"));
	assert_non_null(strstr(t, "tasks by state: WAITING 2 RUNNING 1 "));
	assert_non_null(strstr(t, " other 1\n"));
	assert_non_null(strstr(t, "sim                         3        1       10        1 "
	                          "          2\n"));
	assert_non_null(strstr(t, "... and 3 more workers\n"));
	assert_non_null(strstr(t, "1/2"));
	/* the next frame, 2 s later with 4 more done: 2 per second */
	json_decref(m);
	m = master(14);
	s.master = m;
	s.now_us += 2000000;
	buffer_clear(&b);
	assert_int_equal(status_live_frame(&b, "h", 9, &s, &prev), 0);
	assert_non_null(strstr(buffer_tostring(&b), "rates: 2.00 tasks done/s since the last"));
	buffer_free(&b);
	/* empty lists are said so */
	json_t *empty = json_array();
	struct status_live_sample e = {m, empty, empty, empty, s.now_us};
	buffer_init(&b, 0);
	assert_int_equal(status_live_frame(&b, "h", 9, &e, &prev), 0);
	assert_non_null(strstr(buffer_tostring(&b), "(no workers)"));
	assert_non_null(strstr(buffer_tostring(&b), "(no categories)"));
	buffer_free(&b);
	json_decref(empty);
	json_decref(m);
	json_decref(workers);
	json_decref(tasks);
	json_decref(cats);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
