/* test_batch_dryrun.c: unit tests for the "dryrun" driver: the script it writes (content,
 * quoting, and that running it with sh does the real work), batched completion of 100,000 jobs,
 * removal, options and deletion from a callback. Each test runs in a fresh temporary
 * directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "batch_queue.h"
#include "timeutil.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "banned.h"

struct ctx {
	uv_loop_t loop;
	int in_submit;
	int reentered;
	long n_done, n_removed, n_failed;
	long turn;                  /* loop iterations so far */
	long first_turn, last_turn; /* turns in which callbacks ran */
	char *dir;
	char old_cwd[4096];
};

static struct ctx C;

static void on_complete(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	(void)id;
	struct ctx *c = arg;
	if (c->in_submit)
		c->reentered = 1;
	if (r->removed)
		c->n_removed++;
	else if (!r->exited_normally || r->exit_code != 0)
		c->n_failed++;
	if (!c->n_done)
		c->first_turn = c->turn;
	c->last_turn = c->turn;
	c->n_done++;
}

/* Checked once between two loop iterations: counts the turns. */
static bool n_done_reached(void *arg)
{
	C.turn++;
	return C.n_done >= *(long *)arg;
}

static void run_until_done(long n)
{
	assert_true(ts_run_until(&C.loop, n_done_reached, &n, TS_WAIT_MS));
}

static int setup(void **state)
{
	(void)state;
	memset(&C, 0, sizeof C);
	assert_non_null(getcwd(C.old_cwd, sizeof C.old_cwd));
	C.dir = ts_tmpdir_create("test_batch_dryrun");
	assert_int_equal(chdir(C.dir), 0);
	assert_int_equal(uv_loop_init(&C.loop), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&C.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&C.loop), 0);
	assert_int_equal(chdir(C.old_cwd), 0);
	ts_tmpdir_remove(C.dir);
	C.dir = NULL;
	return 0;
}

static struct batch_queue *make_queue(void)
{
	struct batch_queue *q = batch_queue_create(&C.loop, "dryrun", on_complete, &C);
	assert_non_null(q);
	return q;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_features_and_options(void **state)
{
	(void)state;
	errno = 0;
	assert_null(batch_queue_create(&C.loop, "dry-run", on_complete, &C));
	assert_int_equal(errno, EINVAL);
	struct batch_queue *q = make_queue();
	assert_string_equal(batch_queue_type(q), "dryrun");
	assert_true(batch_queue_features(q) & BATCH_FEATURE_VIRTUAL_OUTPUTS);
	assert_false(batch_queue_features(q) & BATCH_FEATURE_LOCAL_EXECUTION);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "4"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "script", ""), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "script", "no-such-dir/x.sh"), 0);
	struct batch_job_spec s = {.command = "true"};
	assert_int_equal(batch_queue_submit(q, &s), -ENOENT);
	batch_queue_delete(q);

	/* the default script name */
	q = make_queue();
	assert_true(batch_queue_submit(q, &s) > 0);
	assert_int_equal(batch_queue_set_option(q, "script", "other.sh"), -EBUSY);
	run_until_done(1);
	batch_queue_delete(q);
	assert_int_equal(access("makeflow.dryrun.sh", F_OK), 0);
}

static void test_script_content_and_run(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "script", "dry.sh"), 0);
	const char *env[] = {"GREETING=it's a \"test\" $HOME `x`", NULL};
	struct batch_file in1[] = {{"in.txt", NULL}};
	struct batch_file out1[] = {{"out1.txt", NULL}};
	struct batch_job_spec s = {
	    .command = "printf '%s\\n' \"$GREETING\" > out1.txt; cat in.txt >> out1.txt",
	    .inputs = in1,
	    .n_inputs = 1,
	    .outputs = out1,
	    .n_outputs = 1,
	    .env = env,
	    .resources = {2, 512, -1, -1, 60},
	    .category = "greet",
	    .tag = "first\nrule",
	};
	FILE *f = fopen("in.txt", "w");
	assert_non_null(f);
	fputs("input line\n", f);
	fclose(f);
	C.in_submit = 1;
	int64_t id1 = batch_queue_submit(q, &s);
	C.in_submit = 0;
	assert_int_equal(id1, 1);
	struct batch_file in2[] = {{"out1.txt", NULL}};
	struct batch_file out2[] = {{"/dev/null", NULL}, {"out2.txt", NULL}};
	struct batch_job_spec s2 = {
	    .command = "tr a-z A-Z < out1.txt > out2.txt && printf '%s' 'a$b\\c' > out3.txt",
	    .inputs = in2,
	    .n_inputs = 1,
	    .outputs = out2,
	    .n_outputs = 2,
	    .resources = {-1, -1, -1, -1, -1},
	};
	C.in_submit = 1;
	int64_t id2 = batch_queue_submit(q, &s2);
	C.in_submit = 0;
	assert_int_equal(id2, 2);
	assert_int_equal(C.n_done, 0);
	assert_int_equal(batch_queue_running(q) + batch_queue_waiting(q), 2);
	run_until_done(2);
	assert_false(C.reentered);
	assert_int_equal(C.n_failed, 0);
	assert_int_equal(batch_queue_running(q) + batch_queue_waiting(q), 0);
	/* nothing ran */
	assert_int_equal(access("out1.txt", F_OK), -1);
	assert_int_equal(access("out2.txt", F_OK), -1);

	char *text = slurp("dry.sh");
	assert_true(strncmp(text, "#!/bin/sh\nset -e\n", 17) == 0);
	assert_non_null(strstr(text, "# job 1: tag=first rule category=greet cores=2 memory_mb=512 "
	                             "disk_mb=-1 gpus=-1 wall_time_s=60\n"));
	assert_non_null(strstr(text, "# inputs: in.txt\n# outputs: out1.txt\n"));
	assert_non_null(strstr(text, "export GREETING='it'\\''s a \"test\" $HOME `x`'\n"));
	assert_non_null(strstr(text, "exec /bin/sh -c 'printf '\\''%s\\n'\\'' \"$GREETING\" > "
	                             "out1.txt; cat in.txt >> out1.txt'\n"));
	assert_non_null(strstr(text, "# job 2: tag=- category=- "));
	/* one header only */
	assert_null(strstr(text + 1, "#!/bin/sh"));

	/* running the script does what the real run would do */
	assert_int_equal(system("sh dry.sh"), 0);
	assert_string_equal(slurp("out1.txt"), "it's a \"test\" $HOME `x`\ninput line\n");
	assert_string_equal(slurp("out2.txt"), "IT'S A \"TEST\" $HOME `X`\nINPUT LINE\n");
	assert_string_equal(slurp("out3.txt"), "a$b\\c");

	/* a later queue on the same script appends without a second header */
	batch_queue_delete(q);
	q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "script", "dry.sh"), 0);
	struct batch_job_spec fail = {.command = "exit 7"};
	struct batch_job_spec after = {.command = "touch after.txt"};
	assert_true(batch_queue_submit(q, &fail) > 0);
	assert_true(batch_queue_submit(q, &after) > 0);
	run_until_done(4);
	assert_int_equal(C.n_failed, 0); /* dryrun reports success */
	text = slurp("dry.sh");
	assert_null(strstr(text + 1, "#!/bin/sh"));
	/* set -e: the script stops at the first failing job, like the real run */
	int st = system("sh dry.sh");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	assert_int_equal(access("after.txt", F_OK), -1);
	batch_queue_delete(q);
}

static void test_remove(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	struct batch_job_spec s = {.command = "true"};
	int64_t a = batch_queue_submit(q, &s);
	int64_t b = batch_queue_submit(q, &s);
	int64_t c = batch_queue_submit(q, &s);
	assert_int_equal(batch_queue_remove(q, b), 0);
	assert_int_equal(batch_queue_remove(q, b), -ENOENT);
	assert_int_equal(batch_queue_remove(q, 999), -ENOENT);
	assert_int_equal(C.n_done, 0);
	run_until_done(3);
	assert_int_equal(C.n_removed, 1);
	assert_int_equal(batch_queue_remove(q, a), -ENOENT);
	assert_int_equal(batch_queue_remove(q, c), -ENOENT);
	ts_run_for(&C.loop, 20);
	assert_int_equal(C.n_done, 3);
	batch_queue_delete(q);
}

static void test_many_jobs(void **state)
{
	(void)state;
	enum { N = 100000 };
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "script", "many.sh"), 0);
	const char *env[] = {"X=1", NULL};
	struct batch_file in[] = {{"input.dat", NULL}};
	struct batch_file out[] = {{"output.dat", NULL}};
	struct batch_job_spec s = {
	    .command = "./simulate --input input.dat --output output.dat",
	    .inputs = in,
	    .n_inputs = 1,
	    .outputs = out,
	    .n_outputs = 1,
	    .env = env,
	    .resources = {1, 100, 10, -1, -1},
	    .category = "sim",
	    .tag = "simulation step",
	};
	int64_t t0 = time_monotonic_us();
	for (int i = 0; i < N; i++)
		assert_true(batch_queue_submit(q, &s) > 0);
	assert_int_equal(C.n_done, 0);
	run_until_done(N);
	int64_t elapsed = time_monotonic_us() - t0;
	/* How fast is for the benchmarks (make bench, part 2); this test checks what is done. */
	print_message("100000 dryrun jobs: %.3f s\n", elapsed / 1e6);
	/* all completed in one callback pass */
	assert_int_equal(C.first_turn, C.last_turn);
	assert_int_equal(C.n_failed, 0);
	assert_int_equal(batch_queue_running(q) + batch_queue_waiting(q), 0);
	batch_queue_delete(q);
}

static struct batch_queue *deleting_q;
static int deleting_calls;

static void delete_on_first(struct batch_queue *q, int64_t id, const struct batch_result *r,
                            void *arg)
{
	(void)id;
	(void)r;
	(void)arg;
	assert_ptr_equal(q, deleting_q);
	deleting_calls++;
	batch_queue_delete(q);
}

static void test_delete_from_callback(void **state)
{
	(void)state;
	deleting_calls = 0;
	deleting_q = batch_queue_create(&C.loop, "dryrun", delete_on_first, NULL);
	assert_non_null(deleting_q);
	struct batch_job_spec s = {.command = "true"};
	for (int i = 0; i < 5; i++)
		assert_true(batch_queue_submit(deleting_q, &s) > 0);
	ts_run_for(&C.loop, 50);
	assert_int_equal(deleting_calls, 1);
}

static void test_delete_with_pending(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	struct batch_job_spec s = {.command = "true"};
	for (int i = 0; i < 10; i++)
		assert_true(batch_queue_submit(q, &s) > 0);
	batch_queue_delete(q);
	ts_run_for(&C.loop, 20);
	assert_int_equal(C.n_done, 0);
	/* what was written is complete */
	char *text = slurp("makeflow.dryrun.sh");
	assert_non_null(strstr(text, "# job 10:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_features_and_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_script_content_and_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_jobs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_from_callback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_with_pending, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
