/* test_makeflow_viz_opts.c: unit tests of makeflow_viz's command-line parsing: -D and the
 * workflow, the workflow-form options, a missing or unknown display format, and the exact error
 * texts; getopt's own errors ask for the usage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "htc_error.h"
#include "makeflow_viz_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[2048];

/* Parses the NULL-terminated words after "makeflow_viz". */
static int parse(struct makeflow_viz_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "makeflow_viz", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_viz_opts_parse(argc, argv, o, err, sizeof err);
}

/* Sends FD to /dev/null (help, version, getopt's messages); returns it saved for unmute. */
static int mute(int fd)
{
	fflush(NULL);
	int saved = dup(fd);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, fd);
	close(null);
	return saved;
}

static void unmute(int fd, int saved)
{
	fflush(NULL);
	dup2(saved, fd);
	close(saved);
}

static void test_display_and_workflow(void **state)
{
	(void)state;
	struct makeflow_viz_opts o;
	assert_int_equal(parse(&o, "-D", "dot", NULL), CLI_DONE);
	assert_string_equal(o.display, "dot");
	assert_string_equal(o.src.path, "Makeflow");
	assert_int_equal(o.src.format, WORKFLOW_MAKE);
	makeflow_viz_opts_clear(&o);
	assert_int_equal(parse(&o, "w.json", "--display=json", "--json", NULL), CLI_DONE);
	assert_string_equal(o.display, "json");
	assert_string_equal(o.src.path, "w.json");
	assert_int_equal(o.src.format, WORKFLOW_JSON);
	makeflow_viz_opts_clear(&o);
	assert_int_equal(parse(&o, "-Ddot", "--jx", "--jx-args", "a", "--jx-define=A=1", NULL),
	                 CLI_DONE);
	assert_int_equal(o.src.format, WORKFLOW_JX);
	assert_string_equal(o.src.jx_args, "a");
	assert_string_equal(o.src.jx_defines[0], "A=1");
	makeflow_viz_opts_clear(&o);
}

static void test_errors(void **state)
{
	(void)state;
	struct makeflow_viz_opts o;
	assert_int_equal(parse(&o, "Makeflow", NULL), HTC_EUNSUP);
	assert_string_equal(err, "-D dot, json, svg or png is required");
	assert_int_equal(parse(&o, "-D", "gif", NULL), HTC_EUNSUP);
	assert_string_equal(err,
	                    "unknown display format 'gif'; -D dot, json, svg or png is required");
	/* svg and png are drawn through Graphviz */
	assert_int_equal(parse(&o, "-D", "svg", NULL), CLI_DONE);
	assert_string_equal(o.display, "svg");
	makeflow_viz_opts_clear(&o);
	assert_int_equal(parse(&o, "--display=png", NULL), CLI_DONE);
	assert_string_equal(o.display, "png");
	makeflow_viz_opts_clear(&o);
	/* the display is checked before the workflow */
	assert_int_equal(parse(&o, "a", "b", NULL), HTC_EUNSUP);
	assert_int_equal(parse(&o, "-D", "dot", "--jx-define", "X=1", "a", "b", NULL), HTC_EPARSE);
	assert_string_equal(err, "expected one workflow file (see --help)");
	assert_null(o.src.jx_defines);

	int saved = mute(STDERR_FILENO);
	int r1 = parse(&o, "--bogus", NULL);
	int r2 = parse(&o, "-d", "all", NULL);
	int r3 = parse(&o, "-D", NULL);
	unmute(STDERR_FILENO, saved);
	assert_int_equal(r1, CLI_USAGE);
	assert_int_equal(r2, CLI_USAGE);
	assert_int_equal(r3, CLI_USAGE);

	saved = mute(STDOUT_FILENO);
	int rv = parse(&o, "--version", NULL);
	int rh = parse(&o, "-h", "a", "b", NULL);
	unmute(STDOUT_FILENO, saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	makeflow_viz_opts_usage(m, "mv");
	fclose(m);
	assert_non_null(strstr(text, "Usage: mv -D dot|json|svg|png [options] [WORKFLOW]"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_display_and_workflow),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
