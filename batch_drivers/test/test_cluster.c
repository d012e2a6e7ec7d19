/* test_cluster.c: unit tests for the layer cluster drivers share (batch_drivers/src/cluster):
 * the submission throttle's arithmetic, run ids and job names, scheduler commands run on the
 * loop and synchronously (output, status, time limit, a missing program), and the poller (one
 * call per interval, never two at once, asleep without jobs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cluster_cmd.h"
#include "cluster_poller.h"
#include "cluster_run.h"
#include "cluster_throttle.h"
#include "ts_loop.h"
#include "banned.h"

static void test_throttle_rate(void **st)
{
	(void)st;
	struct cluster_throttle t;
	cluster_throttle_init(&t, 10, 0);
	int64_t now = 1000000, wait = 0;
	/* a burst of at most 10, then one every 100 ms */
	int n = 0;
	while (cluster_throttle_may(&t, now, 0, &wait)) {
		cluster_throttle_take(&t, now);
		n++;
	}
	assert_int_equal(n, 10);
	assert_true(wait > 0 && wait <= 101);
	assert_false(cluster_throttle_may(&t, now + 50000, 0, &wait));
	assert_true(cluster_throttle_may(&t, now + 100000, 0, &wait));
	cluster_throttle_take(&t, now + 100000);
	assert_false(cluster_throttle_may(&t, now + 100000, 0, &wait));
	/* a long pause does not bank more than one second of submissions */
	n = 0;
	while (cluster_throttle_may(&t, now + 60000000, 0, NULL)) {
		cluster_throttle_take(&t, now + 60000000);
		n++;
	}
	assert_int_equal(n, 10);
}

static void test_throttle_slow_rate_and_max_jobs(void **st)
{
	(void)st;
	struct cluster_throttle t;
	cluster_throttle_init(&t, 0.5, 3);
	int64_t wait = 0;
	assert_true(cluster_throttle_may(&t, 1, 0, &wait));
	cluster_throttle_take(&t, 1);
	assert_false(cluster_throttle_may(&t, 1, 0, &wait));
	assert_true(wait >= 1999 && wait <= 2001);
	assert_true(cluster_throttle_may(&t, 1 + 2000000, 0, &wait));
	/* the unfinished-job limit stops everything, with no time to wait */
	assert_false(cluster_throttle_may(&t, 1 + 2000000, 3, &wait));
	assert_int_equal(wait, -1);
	assert_true(cluster_throttle_may(&t, 1 + 2000000, 2, &wait));
}

static void test_throttle_options(void **st)
{
	(void)st;
	struct cluster_throttle t;
	cluster_throttle_init(&t, 10, 0);
	assert_int_equal(cluster_throttle_set_option(&t, "submit-rate", "2.5"), 0);
	assert_true(t.rate == 2.5);
	assert_int_equal(cluster_throttle_set_option(&t, "max-jobs", "7"), 0);
	assert_int_equal(t.max_jobs, 7);
	assert_int_equal(cluster_throttle_set_option(&t, "submit-rate", "0"), -EINVAL);
	assert_int_equal(cluster_throttle_set_option(&t, "submit-rate", "x"), -EINVAL);
	assert_int_equal(cluster_throttle_set_option(&t, "max-jobs", "-1"), -EINVAL);
	assert_int_equal(cluster_throttle_set_option(&t, "max-jobs", "1.5"), -EINVAL);
	assert_int_equal(cluster_throttle_set_option(&t, "other", "1"), 1);
}

static void test_run_ids_and_names(void **st)
{
	(void)st;
	const char *id = "0123456789abcdef0123456789abcdef";
	assert_true(cluster_run_id_valid(id));
	assert_false(cluster_run_id_valid("0123456789ABCDEF0123456789abcdef"));
	assert_false(cluster_run_id_valid("0123"));
	assert_false(cluster_run_id_valid(NULL));
	char out[CLUSTER_RUN_ID_LEN + 1];
	const char *env[] = {"A=1", "HTC_RUN_ID=bad", "HTC_RUN_ID=0123456789abcdef0123456789abcdef",
	                     NULL};
	assert_int_equal(cluster_run_id_from_env(env, out), 0);
	assert_string_equal(out, id);
	const char *none[] = {"A=1", NULL};
	assert_int_equal(cluster_run_id_from_env(none, out), -ENOENT);
	assert_int_equal(cluster_run_id_from_env(NULL, out), -ENOENT);
	char a[CLUSTER_RUN_ID_LEN + 1], b[CLUSTER_RUN_ID_LEN + 1];
	assert_int_equal(cluster_run_id_random(a), 0);
	assert_int_equal(cluster_run_id_random(b), 0);
	assert_true(cluster_run_id_valid(a));
	assert_string_not_equal(a, b);
	char name[CLUSTER_JOB_NAME_LEN];
	cluster_job_name(id, name);
	assert_string_equal(name, "htc-0123456789abcdef0123456789abcdef");
	assert_int_equal(cluster_job_name_run(name, out), 0);
	assert_string_equal(out, id);
	assert_int_equal(cluster_job_name_run("htc-123", out), -EINVAL);
	assert_int_equal(cluster_job_name_run("job.sh", out), -EINVAL);
}

struct got {
	int n;
	int status, sig;
	char out[256], err[256], fail[256];
};

static void on_cmd(const struct cluster_cmd_result *r, void *arg)
{
	struct got *g = arg;
	g->n++;
	g->status = r->exit_status;
	g->sig = r->term_signal;
	snprintf(g->out, sizeof g->out, "%s", r->out);
	snprintf(g->err, sizeof g->err, "%s", r->err);
	snprintf(g->fail, sizeof g->fail, "%s", r->fail ? r->fail : "");
}

static bool got_one(void *arg)
{
	return ((struct got *)arg)->n > 0;
}

static void test_cmd_async(void **st)
{
	(void)st;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct got g = {0};
	char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
	assert_int_equal(cluster_cmd_run(&loop, argv, NULL, 30000, on_cmd, &g), 0);
	assert_true(ts_run_until(&loop, got_one, &g, TS_WAIT_MS));
	assert_int_equal(g.n, 1);
	assert_int_equal(g.status, 3);
	assert_string_equal(g.out, "out\n");
	assert_string_equal(g.err, "err\n");
	assert_string_equal(g.fail, "");

	/* stdin text reaches the command */
	memset(&g, 0, sizeof g);
	char *cat[] = {"cat", NULL};
	assert_int_equal(cluster_cmd_run(&loop, cat, "given\n", 30000, on_cmd, &g), 0);
	assert_true(ts_run_until(&loop, got_one, &g, TS_WAIT_MS));
	assert_string_equal(g.out, "given\n");

	/* a program that does not exist: the callback says so */
	memset(&g, 0, sizeof g);
	char *missing[] = {"/nonexistent/sbatch", NULL};
	assert_int_equal(cluster_cmd_run(&loop, missing, NULL, 30000, on_cmd, &g), 0);
	assert_true(ts_run_until(&loop, got_one, &g, TS_WAIT_MS));
	assert_non_null(strstr(g.fail, "cannot run /nonexistent/sbatch"));

	/* a command over its time limit is killed and reported */
	memset(&g, 0, sizeof g);
	char *slow[] = {"sleep", "30", NULL};
	assert_int_equal(cluster_cmd_run(&loop, slow, NULL, 100, on_cmd, &g), 0);
	assert_true(ts_run_until(&loop, got_one, &g, TS_WAIT_MS));
	assert_non_null(strstr(g.fail, "did not finish in time"));
	assert_int_equal(g.sig, 9);

	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_cmd_sync(void **st)
{
	(void)st;
	struct cluster_cmd_result r;
	char *argv[] = {"/bin/sh", "-c",
	                "echo out; echo \"  first line  \" >&2; echo 2nd >&2; exit 4", NULL};
	assert_int_equal(cluster_cmd_run_sync(argv, 30000, &r), 0);
	assert_int_equal(r.exit_status, 4);
	assert_string_equal(r.out, "out\n");
	char line[CLUSTER_CMD_LINE];
	assert_string_equal(cluster_cmd_first_line(r.err, line), "first line");
	assert_null(r.fail);
	cluster_cmd_result_free(&r);

	char *slow[] = {"sleep", "30", NULL};
	assert_int_equal(cluster_cmd_run_sync(slow, 100, &r), 0);
	assert_non_null(r.fail);
	assert_int_equal(r.term_signal, 9);
	cluster_cmd_result_free(&r);

	char *missing[] = {"no-such-program-here", NULL};
	assert_true(cluster_cmd_run_sync(missing, 1000, &r) < 0);
	assert_non_null(strstr(r.fail, "cannot run no-such-program-here"));
	cluster_cmd_result_free(&r);
}

struct pctx {
	struct cluster_poller *p;
	int calls, overlapping, active;
	int answer_after; /* answer (done) on this many loop timer ticks */
	uv_timer_t answer;
	int more;
};

static void on_answer(uv_timer_t *t)
{
	struct pctx *c = t->data;
	c->active = 0;
	cluster_poller_done(c->p, c->more);
}

static void poll_fn(void *arg)
{
	struct pctx *c = arg;
	if (c->active)
		c->overlapping++;
	c->active = 1;
	c->calls++;
	uv_timer_start(&c->answer, on_answer, 30, 0); /* a slow scheduler */
}

static bool three_calls(void *arg)
{
	return ((struct pctx *)arg)->calls >= 3;
}

static void test_poller(void **st)
{
	(void)st;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct pctx c = {0};
	uv_timer_init(&loop, &c.answer);
	c.answer.data = &c;
	c.more = 1;
	c.p = cluster_poller_new(&loop, 10, poll_fn, &c);
	assert_non_null(c.p);
	/* asleep until kicked */
	ts_run_for(&loop, 50);
	assert_int_equal(c.calls, 0);
	cluster_poller_kick(c.p);
	cluster_poller_kick(c.p);
	assert_true(ts_run_until(&loop, three_calls, &c, TS_WAIT_MS));
	assert_int_equal(c.overlapping, 0);
	assert_int_equal(cluster_poller_calls(c.p), c.calls);
	/* no more jobs: it stops after the call in progress */
	c.more = 0;
	ts_run_for(&loop, 100);
	int calls = c.calls;
	ts_run_for(&loop, 100);
	assert_int_equal(c.calls, calls);
	assert_false(cluster_poller_busy(c.p));
	cluster_poller_delete(c.p);
	uv_close((uv_handle_t *)&c.answer, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
	errno = 0;
	assert_null(cluster_poller_new(&loop, 0, poll_fn, &c));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_throttle_rate),
	    cmocka_unit_test(test_throttle_slow_rate_and_max_jobs),
	    cmocka_unit_test(test_throttle_options),
	    cmocka_unit_test(test_run_ids_and_names),
	    cmocka_unit_test(test_cmd_async),
	    cmocka_unit_test(test_cmd_sync),
	    cmocka_unit_test(test_poller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
