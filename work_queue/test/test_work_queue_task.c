/* test_wq_task.c: unit tests of the master library's task object: every setter's checks and
 * error texts, file lists in order, environment replacement, cloning as a deep copy, and
 * result names. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "htc_error.h"
#include "work_queue.h"
#include "wq_msg.h"

#include "banned.h"

static void test_create_defaults(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("echo hi");
	assert_string_equal(t->command_line, "echo hi");
	assert_int_equal(t->result, WORK_QUEUE_RESULT_UNKNOWN);
	assert_null(t->inputs);
	assert_null(t->outputs);
	for (int f = 0; f < RM_N_FIELDS; f++)
		assert_true(t->resources_requested->v[f] < 0);
	assert_string_equal(work_queue_task_last_error(t), "");
	work_queue_task_delete(t);
	work_queue_task_delete(NULL);
}

static void test_command(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create(NULL);
	assert_null(t->command_line);
	assert_int_equal(work_queue_task_specify_command(t, ""), -EINVAL);
	char *big = malloc(131073);
	memset(big, 'x', 131072);
	big[131072] = 0;
	assert_int_equal(work_queue_task_specify_command(t, big), HTC_ETOOBIG);
	assert_non_null(strstr(work_queue_task_last_error(t), "131071"));
	big[131071] = 0; /* exactly the limit */
	assert_int_equal(work_queue_task_specify_command(t, big), 0);
	assert_int_equal(strlen(t->command_line), 131071);
	assert_string_equal(work_queue_task_last_error(t), "");
	free(big);
	work_queue_task_delete(t);
}

static void test_files_in_order_and_names_checked(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("cat a b > c");
	assert_int_equal(work_queue_task_specify_input_file(t, "/data/a", "a", WORK_QUEUE_CACHE),
	                 0);
	assert_int_equal(
	    work_queue_task_specify_input_file(t, "b.txt", "sub/b", WORK_QUEUE_NOCACHE), 0);
	assert_int_equal(work_queue_task_specify_output_file(t, "out/c", "c", WORK_QUEUE_NOCACHE),
	                 0);
	/* an output may have an input's name */
	assert_int_equal(work_queue_task_specify_output_file(t, "out/a", "a", 0), 0);

	assert_string_equal(t->inputs->remote, "a");
	assert_string_equal(t->inputs->source, "/data/a");
	assert_int_equal(t->inputs->flags, WORK_QUEUE_CACHE);
	assert_string_equal(t->inputs->next->remote, "sub/b");
	assert_null(t->inputs->next->next);
	assert_string_equal(t->outputs->remote, "c");
	assert_string_equal(t->outputs->next->remote, "a");

	/* name rules of the protocol, with its texts */
	assert_int_equal(work_queue_task_specify_input_file(t, "x", "/etc/passwd", 0), HTC_EPARSE);
	assert_string_equal(work_queue_task_last_error(t),
	                    "input name \"/etc/passwd\": absolute names are not allowed");
	assert_int_equal(work_queue_task_specify_input_file(t, "x", "a/../b", 0), HTC_EPARSE);
	assert_non_null(strstr(work_queue_task_last_error(t), "\"..\" is not allowed"));
	assert_int_equal(work_queue_task_specify_output_file(t, "x", "d//e", 0), HTC_EPARSE);
	assert_non_null(strstr(work_queue_task_last_error(t), "output name"));
	/* rule 4: twice, or one inside another */
	assert_int_equal(work_queue_task_specify_input_file(t, "y", "a", 0), HTC_EPARSE);
	assert_int_equal(work_queue_task_specify_input_file(t, "y", "a/z", 0), HTC_EPARSE);
	assert_int_equal(work_queue_task_specify_input_file(t, "y", "sub", 0), HTC_EPARSE);
	assert_int_equal(work_queue_task_specify_input_file(t, "", "q", 0), -EINVAL);
	assert_int_equal(work_queue_task_specify_input_file(t, "y", "", 0), -EINVAL);
	assert_int_equal(work_queue_task_specify_input_file(t, "y", NULL, 0), -EINVAL);
	/* nothing was added by the refused calls */
	int n = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next)
		n++;
	assert_int_equal(n, 2);
	work_queue_task_delete(t);
}

static void test_flags(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a", WORK_QUEUE_WATCH),
	                 -EINVAL);
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a", WORK_QUEUE_SUCCESS_ONLY),
	                 -EINVAL);
	assert_int_equal(work_queue_task_specify_output_file(t, "o", "o", WORK_QUEUE_CACHE),
	                 -EINVAL);
	assert_int_equal(work_queue_task_specify_output_file(
	                     t, "o", "o", WORK_QUEUE_SUCCESS_ONLY | WORK_QUEUE_FAILURE_ONLY),
	                 -EINVAL);
	assert_int_equal(work_queue_task_specify_output_file(t, "o", "o", 64), -EINVAL);
	assert_non_null(strstr(work_queue_task_last_error(t), "unknown file flags"));
	assert_int_equal(work_queue_task_specify_output_file(
	                     t, "o", "o", WORK_QUEUE_WATCH | WORK_QUEUE_FAILURE_ONLY),
	                 0);
	assert_int_equal(t->outputs->flags, WORK_QUEUE_WATCH | WORK_QUEUE_FAILURE_ONLY);
	assert_int_equal(
	    work_queue_task_specify_directory(t, "d", "d", WORK_QUEUE_OUTPUT, WORK_QUEUE_WATCH, 1),
	    -EINVAL);
	assert_int_equal(work_queue_task_specify_directory(t, "d", "d", WORK_QUEUE_OUTPUT, 0, 0),
	                 0);
	assert_int_equal(t->outputs->next->kind, WORK_QUEUE_FILE_DIRECTORY);
	assert_int_equal(t->outputs->next->recursive, 0);
	assert_int_equal(work_queue_task_specify_directory(t, "i", "i", WORK_QUEUE_INPUT, 0, 0), 0);
	assert_int_equal(t->inputs->recursive, 1); /* input directories are sent whole */
	assert_int_equal(work_queue_task_specify_directory(t, "i", "j", 7, 0, 0), -EINVAL);
	work_queue_task_delete(t);
}

static void test_buffer_and_url(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	char data[] = "hello";
	assert_int_equal(work_queue_task_specify_buffer(t, data, 5, "greeting", 0), 0);
	data[0] = 'j'; /* the buffer was copied */
	assert_memory_equal(t->inputs->data, "hello", 5);
	assert_int_equal(t->inputs->length, 5);
	assert_int_equal(t->inputs->kind, WORK_QUEUE_FILE_BUFFER);
	assert_null(t->inputs->source);
	assert_int_equal(work_queue_task_specify_buffer(t, NULL, 0, "empty", 0), 0);
	assert_int_equal(work_queue_task_specify_buffer(t, NULL, 3, "bad", 0), -EINVAL);

	assert_int_equal(
	    work_queue_task_specify_url(t, "https://example.org/x.fa", "x.fa", WORK_QUEUE_CACHE),
	    0);
	assert_int_equal(work_queue_task_specify_url(t, "gopher://x", "y", 0), -EINVAL);
	assert_non_null(strstr(work_queue_task_last_error(t), "only http"));
	assert_int_equal(work_queue_task_specify_url(t, "file:///etc/passwd", "y", 0), -EINVAL);
	assert_int_equal(work_queue_task_specify_url(t, "ftp://host/x", "y", 0), -EINVAL);
	char *url = malloc(4200);
	memcpy(url, "http://", 7);
	memset(url + 7, 'a', 4190);
	url[4197] = 0;
	assert_int_equal(work_queue_task_specify_url(t, url, "z", 0), HTC_ETOOBIG);
	free(url);
	work_queue_task_delete(t);
}

static void test_resources(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_cores(t, 1.23456), 0);
	assert_true(fabs(t->resources_requested->v[RM_CORES] - 1.235) < 1e-9);
	assert_int_equal(work_queue_task_specify_memory(t, 900), 0);
	assert_int_equal(work_queue_task_specify_disk(t, 0), 0);
	assert_int_equal(work_queue_task_specify_gpus(t, -1), HTC_ERANGE);
	assert_int_equal(work_queue_task_specify_cores(t, NAN), HTC_ERANGE);
	assert_int_equal(work_queue_task_specify_cores(t, INFINITY), HTC_ERANGE);
	assert_true(t->resources_requested->v[RM_GPUS] < 0);
	assert_int_equal(t->resources_requested->v[RM_MEMORY], 900);

	struct rmsummary r;
	rmsummary_init(&r);
	r.v[RM_GPUS] = 2;
	r.v[RM_WALL_TIME] = 10; /* not a resource a task asks for: ignored */
	assert_int_equal(work_queue_task_specify_resources(t, &r), 0);
	assert_int_equal(t->resources_requested->v[RM_GPUS], 2);
	assert_int_equal(t->resources_requested->v[RM_MEMORY], 900); /* unset in r: kept */
	assert_true(t->resources_requested->v[RM_WALL_TIME] < 0);
	assert_int_equal(work_queue_task_specify_resources(t, NULL), -EINVAL);
	work_queue_task_delete(t);
}

static void test_labels_and_limits(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_category(t, "blast"), 0);
	assert_string_equal(t->category, "blast");
	char cat[130];
	memset(cat, 'c', 129);
	cat[129] = 0;
	assert_int_equal(work_queue_task_specify_category(t, cat), HTC_ETOOBIG);
	cat[128] = 0;
	assert_int_equal(work_queue_task_specify_category(t, cat), 0);
	assert_int_equal(work_queue_task_specify_tag(t, "a\nb"), -EINVAL);
	assert_int_equal(work_queue_task_specify_tag(t, "run-7"), 0);
	assert_int_equal(work_queue_task_specify_priority(t, 2.5), 0);
	assert_int_equal(work_queue_task_specify_priority(t, NAN), HTC_ERANGE);
	assert_true(t->priority == 2.5);
	assert_int_equal(work_queue_task_specify_max_retries(t, -1), HTC_ERANGE);
	assert_int_equal(work_queue_task_specify_max_retries(t, 3), 0);
	assert_int_equal(work_queue_task_specify_running_time_max(t, -5), HTC_ERANGE);
	assert_int_equal(work_queue_task_specify_running_time_max(t, 60), 0);
	assert_int_equal(work_queue_task_specify_end_time(t, 2e9), 0);
	assert_int_equal(work_queue_task_specify_feature(t, "gpu-node"), 0);
	assert_int_equal(work_queue_task_specify_feature(t, "gpu-node"), 0);
	assert_int_equal(t->feature_count, 1);
	work_queue_task_delete(t);
}

static void test_environment(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("env");
	assert_int_equal(work_queue_task_specify_environment_variable(t, "A", "1"), 0);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "_B2", NULL), 0);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "A", "2"), 0);
	assert_int_equal(t->env_count, 2);
	assert_string_equal(t->env_values[0], "2");
	assert_null(t->env_values[1]);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "2B", "x"), -EINVAL);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "A-B", "x"), -EINVAL);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "", "x"), -EINVAL);
	char *v = malloc(4098);
	memset(v, 'v', 4097);
	v[4097] = 0;
	assert_int_equal(work_queue_task_specify_environment_variable(t, "V", v), HTC_ETOOBIG);
	v[4096] = 0;
	assert_int_equal(work_queue_task_specify_environment_variable(t, "V", v), 0);
	free(v);
	for (int i = t->env_count; i < 256; i++) {
		char name[16];
		snprintf(name, sizeof name, "E%d", i);
		assert_int_equal(work_queue_task_specify_environment_variable(t, name, "x"), 0);
	}
	assert_int_equal(t->env_count, 256);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "ONE_MORE", "x"),
	                 HTC_ETOOBIG);
	assert_int_equal(work_queue_task_specify_environment_variable(t, "A", "3"), 0);
	work_queue_task_delete(t);
}

static void test_file_count_limit(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	char name[32];
	/* WQ_FILES_MAX inputs are taken (each name checked against all the others through the
	 * index, so this is quick); one more is refused, an output still fits */
	for (int i = 0; i < WQ_FILES_MAX; i++) {
		snprintf(name, sizeof name, "d%d/in.%d", i % 100, i);
		assert_int_equal(work_queue_task_specify_input_file(t, name, name, 0), 0);
	}
	assert_int_equal(work_queue_task_specify_input_file(t, "x", "x", 0), HTC_ETOOBIG);
	assert_int_equal(work_queue_task_specify_output_file(t, "x", "x", 0), 0);
	/* the names keep the order given, and a clone checks against the same names */
	int n = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next, n++) {
		snprintf(name, sizeof name, "d%d/in.%d", n % 100, n);
		assert_string_equal(f->remote, name);
	}
	assert_int_equal(n, WQ_FILES_MAX);
	struct work_queue_task *c = work_queue_task_clone(t);
	assert_int_equal(work_queue_task_specify_output_file(c, "y", "x", 0), HTC_EPARSE);
	assert_non_null(strstr(work_queue_task_last_error(c), "given twice"));
	work_queue_task_delete(c);
	work_queue_task_delete(t);
}

/* Rule 4 through the index: a name twice, a name inside another (either order), and names that
 * only share a beginning. */
static void test_name_clashes(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a/b", 0), 0);
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a", 0), HTC_EPARSE);
	assert_non_null(
	    strstr(work_queue_task_last_error(t), "\"a\": a directory prefix of \"a/b\""));
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a/b/c", 0), HTC_EPARSE);
	assert_non_null(
	    strstr(work_queue_task_last_error(t), "\"a/b\": a directory prefix of \"a/b/c\""));
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a/b", 0), HTC_EPARSE);
	assert_non_null(strstr(work_queue_task_last_error(t), "given twice"));
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "ab", 0), 0);
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a/bc", 0), 0);
	assert_int_equal(work_queue_task_specify_input_file(t, "a", "a.b", 0), 0);
	/* the same name in the other direction is fine */
	assert_int_equal(work_queue_task_specify_output_file(t, "a", "a", 0), 0);
	int n = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next)
		n++;
	assert_int_equal(n, 4); /* the refused ones were not added */
	work_queue_task_delete(t);
}

static void test_clone_is_deep(void **state)
{
	(void)state;
	struct work_queue_task *t = work_queue_task_create("sort in > out");
	work_queue_task_specify_input_file(t, "in.txt", "in", WORK_QUEUE_CACHE);
	work_queue_task_specify_buffer(t, "abc", 3, "buf", 0);
	work_queue_task_specify_output_file(t, "out.txt", "out", 0);
	work_queue_task_specify_environment_variable(t, "X", "1");
	work_queue_task_specify_feature(t, "big");
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_category(t, "sort");
	work_queue_task_specify_priority(t, 4);
	t->taskid = 9;
	t->result = WORK_QUEUE_RESULT_SUCCESS;

	struct work_queue_task *c = work_queue_task_clone(t);
	work_queue_task_delete(t); /* the clone owns its own copies */
	assert_string_equal(c->command_line, "sort in > out");
	assert_string_equal(c->inputs->remote, "in");
	assert_int_equal(c->inputs->flags, WORK_QUEUE_CACHE);
	assert_memory_equal(c->inputs->next->data, "abc", 3);
	assert_string_equal(c->outputs->remote, "out");
	assert_string_equal(c->env_names[0], "X");
	assert_string_equal(c->features[0], "big");
	assert_int_equal(c->resources_requested->v[RM_MEMORY], 100);
	assert_string_equal(c->category, "sort");
	assert_true(c->priority == 4);
	assert_int_equal(c->taskid, 0); /* no id, no result */
	assert_int_equal(c->result, WORK_QUEUE_RESULT_UNKNOWN);
	work_queue_task_delete(c);
}

static void test_result_names(void **state)
{
	(void)state;
	assert_string_equal(work_queue_result_str(WORK_QUEUE_RESULT_SUCCESS), "SUCCESS");
	assert_string_equal(work_queue_result_str(WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION),
	                    "RESOURCE_EXHAUSTION");
	assert_string_equal(work_queue_result_str(WORK_QUEUE_RESULT_CANCELLED), "CANCELLED");
	assert_string_equal(work_queue_result_str(-1), "UNKNOWN");
	assert_string_equal(work_queue_result_str(999), "UNKNOWN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_defaults),
	    cmocka_unit_test(test_command),
	    cmocka_unit_test(test_files_in_order_and_names_checked),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_buffer_and_url),
	    cmocka_unit_test(test_resources),
	    cmocka_unit_test(test_labels_and_limits),
	    cmocka_unit_test(test_environment),
	    cmocka_unit_test(test_file_count_limit),
	    cmocka_unit_test(test_name_clashes),
	    cmocka_unit_test(test_clone_is_deep),
	    cmocka_unit_test(test_result_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
