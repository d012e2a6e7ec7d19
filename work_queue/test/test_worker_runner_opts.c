/* test_worker_runner_opts.c: unit tests of the container runner's arguments (work_queue_worker
 * --container-run): each argument, the command after --, the binds in order, and the exact error
 * text of a missing value, a relative bind, an unknown argument and a missing requirement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "htc_error.h"
#include "worker_runner_opts.h"

#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "work_queue_worker --container-run". */
static int parse(struct worker_runner_opts *o, char **argv, ...)
{
	int argc = 0;
	argv[argc++] = "work_queue_worker";
	argv[argc++] = "--container-run";
	va_list ap;
	va_start(ap, argv);
	char *w;
	while ((w = va_arg(ap, char *)) != NULL)
		argv[argc++] = w;
	va_end(ap);
	argv[argc] = NULL;
	err[0] = 0;
	return worker_runner_opts_parse(argc, argv, o, err, sizeof err);
}

#define USAGE                                                                                      \
	"usage: --container-run [--socket S] --image IMG [--shared ID [--agent NAME]] [--ahead "   \
	"DIR] [--nest] "                                                                           \
	"--workdir DIR "                                                                           \
	"[--bind DIR] [--bind-ro DIR] -- CMD..."

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct worker_runner_opts o_;                                                      \
		char *v_[64];                                                                      \
		assert_int_equal(parse(&o_, v_, __VA_ARGS__, NULL), HTC_EPARSE);                   \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.binds);                                                             \
	} while (0)

static void test_per_task(void **state)
{
	(void)state;
	struct worker_runner_opts o;
	char *argv[64];
	assert_int_equal(parse(&o, argv, "--socket", "unix:///run/d.sock", "--image", "debian:12",
	                       "--nest", "--workdir", "/w/t1/work", "--bind", "/w/t1", "--bind-ro",
	                       "/w/cache", "--", "/bin/sh", "-c", "echo hi", NULL),
	                 0);
	assert_string_equal(o.socket, "unix:///run/d.sock");
	assert_string_equal(o.image, "debian:12");
	assert_null(o.shared);
	assert_true(o.nest);
	assert_string_equal(o.workdir, "/w/t1/work");
	assert_int_equal(o.n_binds, 2);
	assert_string_equal(o.binds[0], "/w/t1:/w/t1");
	assert_string_equal(o.binds[1], "/w/cache:/w/cache:ro");
	assert_int_equal(o.n_cmd, 3);
	assert_string_equal(o.cmd[0], "/bin/sh");
	assert_string_equal(o.cmd[2], "echo hi");
	assert_null(o.cmd[3]);
	worker_runner_opts_clear(&o);
	assert_int_equal(o.n_binds, 0);
	assert_null(o.binds);
}

static void test_shared(void **state)
{
	(void)state;
	struct worker_runner_opts o;
	char *argv[64];
	assert_int_equal(parse(&o, argv, "--image", "img", "--shared", "abc123", "--workdir", "/w",
	                       "--", "true", NULL),
	                 0);
	assert_null(o.socket);
	assert_string_equal(o.shared, "abc123");
	assert_false(o.nest);
	assert_int_equal(o.n_binds, 0);
	assert_int_equal(o.n_cmd, 1);
	assert_string_equal(o.cmd[0], "true");
	worker_runner_opts_clear(&o);
	/* words after -- are the command's, even when they look like arguments */
	assert_int_equal(
	    parse(&o, argv, "--workdir", "/w", "--image", "i", "--", "--image", "x", NULL), 0);
	assert_string_equal(o.image, "i");
	assert_int_equal(o.n_cmd, 2);
	assert_string_equal(o.cmd[0], "--image");
	worker_runner_opts_clear(&o);
	/* the shared container's agent: a socket name in the state directory */
	assert_int_equal(parse(&o, argv, "--image", "img", "--shared", "abc", "--state", "/w/c",
	                       "--agent", "wq-worker-7.sock", "--workdir", "/w", "--", "true",
	                       NULL),
	                 0);
	assert_string_equal(o.agent, "wq-worker-7.sock");
	assert_string_equal(o.state, "/w/c");
	worker_runner_opts_clear(&o);
	assert_null(o.agent);
}

/* --ahead DIR: the task's own container, made before the task (worker_runner_ahead.h) */
static void test_ahead(void **state)
{
	(void)state;
	struct worker_runner_opts o;
	char *argv[64];
	assert_int_equal(parse(&o, argv, "--ahead", "/w/containers/ahead.3", "--image", "img",
	                       "--workdir", "/w/t1/work", "--bind", "/w/t1", "--", "/bin/sh", "-c",
	                       "true", NULL),
	                 0);
	assert_string_equal(o.ahead, "/w/containers/ahead.3");
	assert_null(o.shared);
	assert_int_equal(o.n_binds, 1);
	worker_runner_opts_clear(&o);
	assert_null(o.ahead);
	assert_fails("--ahead d: not an absolute path", "--ahead", "d", "--image", "i", "--workdir",
	             "/w", "--", "true");
	assert_fails("--ahead makes a task's own container, not a shared one", "--ahead", "/d",
	             "--image", "i", "--shared", "x", "--workdir", "/w", "--", "true");
	assert_fails("--ahead makes a task's own container, not a shared one", "--ahead", "/d",
	             "--image", "i", "--shared-image", "--state", "/s", "--owner", "1", "--workdir",
	             "/w", "--", "true");
}

static void test_errors(void **state)
{
	(void)state;
	assert_fails(USAGE, "--image", "i", "--workdir", "/w");
	assert_fails(USAGE, "--image", "i", "--workdir", "/w", "--");
	assert_fails(USAGE, "--workdir", "/w", "--", "true");
	assert_fails(USAGE, "--image", "i", "--", "true");
	assert_fails("--image: needs a value", "--image");
	assert_fails("--bogus: needs a value", "--bogus");
	assert_fails("unknown option --bogus", "--bogus", "x", "--", "true");
	assert_fails("--bind rel: not an absolute path", "--bind", "rel");
	assert_fails("--bind-ro ./c: not an absolute path", "--bind", "/a", "--bind-ro", "./c",
	             "--image", "i", "--workdir", "/w", "--", "true");
	assert_fails("--agent needs --shared and --state", "--image", "i", "--state", "/s",
	             "--agent", "a.sock", "--workdir", "/w", "--", "true");
	assert_fails("--agent needs --shared and --state", "--image", "i", "--shared", "c",
	             "--agent", "a.sock", "--workdir", "/w", "--", "true");
	assert_fails("--agent ../a.sock: a socket name, not a path", "--agent", "../a.sock");
	struct worker_runner_opts o;
	char *argv[4];
	assert_int_equal(parse(&o, argv, NULL), HTC_EPARSE);
	assert_string_equal(err, USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_per_task),
	    cmocka_unit_test(test_shared),
	    cmocka_unit_test(test_ahead),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
