/* test_batch_k8s.c: unit tests of the "k8s" driver that need no cluster: its options (unknown
 * keys and bad values refused), and a start that stops before any job without an image, with a
 * working directory outside the shared file system, or with a kubeconfig that cannot be read.
 * The driver against a real cluster is tested by the e2e suite 60-k8s.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "batch_queue.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static uv_loop_t loop;

static void on_complete(struct batch_queue *q, int64_t id, const struct batch_result *r, void *a)
{
	(void)q, (void)id, (void)r, (void)a;
	fail_msg("no job was submitted");
}

static struct batch_queue *queue(void)
{
	struct batch_queue *q = batch_queue_create(&loop, "k8s", on_complete, NULL);
	assert_non_null(q);
	return q;
}

static void done(struct batch_queue *q)
{
	batch_queue_delete(q);
	uv_run(&loop, UV_RUN_NOWAIT);
}

static void test_type(void **state)
{
	(void)state;
	assert_non_null(strstr(batch_queue_types(), "k8s"));
	char msg[256];
	assert_int_equal(batch_queue_type_check("k8s", msg, sizeof msg), 0);
	struct batch_queue *q = queue();
	assert_string_equal(batch_queue_type(q), "k8s");
	assert_true(batch_queue_features(q) & BATCH_FEATURE_MEMORY_LIMIT);
	assert_true(batch_queue_features(q) & BATCH_FEATURE_WALL_TIME);
	assert_false(batch_queue_features(q) & BATCH_FEATURE_LOCAL_EXECUTION);
	/* pods carry the run id: makeflow's restart and -c give stop-run */
	assert_true(batch_queue_features(q) & BATCH_FEATURE_RUN_LABEL);
	done(q);
}

static void test_options(void **state)
{
	(void)state;
	struct batch_queue *q = queue();
	assert_int_equal(batch_queue_set_option(q, "image", "busybox:local"), 0);
	assert_int_equal(batch_queue_set_option(q, "namespace", "jobs"), 0);
	assert_int_equal(batch_queue_set_option(q, "context", "c"), 0);
	assert_int_equal(batch_queue_set_option(q, "pull-policy", "Never"), 0);
	assert_int_equal(batch_queue_set_option(q, "pull-policy", "Sometimes"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "image", ""), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "no-such-key", "x"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "shared-fs", "/nonexistent/dir"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "shared-fs", "/tmp"), 0);
	/* one shared directory: a second is refused, not silently replacing the first */
	assert_int_equal(batch_queue_set_option(q, "shared-fs", "/"), -EINVAL);
	/* the cluster layer's throttle */
	assert_int_equal(batch_queue_set_option(q, "submit-rate", "5"), 0);
	assert_int_equal(batch_queue_set_option(q, "submit-rate", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "10"), 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "-1"), -EINVAL);
	/* worker pods */
	assert_int_equal(batch_queue_set_option(q, "host-network", "yes"), 0);
	assert_int_equal(batch_queue_set_option(q, "host-network", "maybe"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "whole-node", "no"), 0);
	assert_int_equal(batch_queue_set_option(q, "default-cores", "2"), 0);
	assert_int_equal(batch_queue_set_option(q, "default-memory", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "owner", "wqf-0123abcd"), 0);
	assert_int_equal(batch_queue_set_option(q, "owner", "-bad"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "owner", "has space"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "mount", "/tmp"), 0);
	assert_int_equal(batch_queue_set_option(q, "mount", "relative"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "mount", "/nonexistent/x"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "stop-run", "nothex"), -EINVAL);
	done(q);
}

/* stop-run reaches the cluster without a start (makeflow -c has no image); a kubeconfig
 * that cannot be read makes it fail, rather than pretend the pods are gone */
static void test_stop_run_unreadable(void **state)
{
	(void)state;
	struct batch_queue *q = queue();
	assert_int_equal(batch_queue_set_option(q, "kubeconfig", "/nonexistent/kubeconfig"), 0);
	assert_true(batch_queue_set_option(q, "stop-run", "0123456789abcdef0123456789abcdef") < 0);
	done(q);
}

static void test_start_refused(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_batch_k8s");
	char old[4096];
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(dir), 0);
	/* no image */
	struct batch_queue *q = queue();
	assert_true(batch_queue_start(q) < 0);
	done(q);
	/* the working directory is not under the shared file system */
	char *sub = xasprintf("%s/shared", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	q = queue();
	assert_int_equal(batch_queue_set_option(q, "image", "busybox:local"), 0);
	assert_int_equal(batch_queue_set_option(q, "shared-fs", sub), 0);
	assert_true(batch_queue_start(q) < 0);
	done(q);
	/* a kubeconfig that is not there */
	q = queue();
	assert_int_equal(batch_queue_set_option(q, "image", "busybox:local"), 0);
	assert_int_equal(batch_queue_set_option(q, "kubeconfig", "no-such-kubeconfig"), 0);
	assert_true(batch_queue_start(q) < 0);
	done(q);
	assert_int_equal(chdir(old), 0);
	free(sub);
	ts_tmpdir_remove(dir);
}

static int setup(void **state)
{
	(void)state;
	return uv_loop_init(&loop);
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&loop, UV_RUN_NOWAIT);
	return uv_loop_close(&loop) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_type),
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_start_refused),
	    cmocka_unit_test(test_stop_run_unreadable),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
