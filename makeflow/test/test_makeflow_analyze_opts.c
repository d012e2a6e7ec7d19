/* test_makeflow_analyze_opts.c: unit tests of makeflow_analyze's command-line parsing: the
 * default mode and workflow, each mode option, the workflow-form options, and the exact error
 * text of each bad value; getopt's own errors ask for the usage. */
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
#include "debug.h"
#include "htc_error.h"
#include "makeflow_analyze_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[2048];

/* Parses the NULL-terminated words after "makeflow_analyze". */
static int parse(struct makeflow_analyze_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "makeflow_analyze", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_analyze_opts_parse(argc, argv, o, err, sizeof err);
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

static void test_defaults_and_modes(void **state)
{
	(void)state;
	struct makeflow_analyze_opts o;
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	assert_int_equal(o.mode, 'k');
	assert_string_equal(o.src.path, "Makeflow");
	assert_int_equal(o.src.format, WORKFLOW_MAKE);
	makeflow_analyze_opts_clear(&o);
	/* the file is not read here: workflow_load says what is wrong with it */
	assert_int_equal(parse(&o, "-i", "nonexist.mf", NULL), CLI_DONE);
	assert_int_equal(o.mode, 'i');
	assert_string_equal(o.src.path, "nonexist.mf");
	makeflow_analyze_opts_clear(&o);
	static const char *const longs[] = {"--syntax-check", "--info", "--inputs", "--outputs"};
	static const char modes[] = "kiIO";
	for (int i = 0; i < 4; i++) {
		char s[3] = {'-', modes[i], 0};
		assert_int_equal(parse(&o, "-O", s, NULL), CLI_DONE);
		assert_int_equal(o.mode, modes[i]);
		makeflow_analyze_opts_clear(&o);
		assert_int_equal(parse(&o, "-O", (char *)longs[i], "w.mf", NULL), CLI_DONE);
		assert_int_equal(o.mode, modes[i]);
		makeflow_analyze_opts_clear(&o);
	}
	assert_int_equal(parse(&o, "--jx", "--jx-args=a.json", "--jx-define", "N=3", "w.jx", NULL),
	                 CLI_DONE);
	assert_int_equal(o.src.format, WORKFLOW_JX);
	assert_string_equal(o.src.jx_args, "a.json");
	assert_string_equal(o.src.jx_defines[0], "N=3");
	assert_string_equal(o.src.path, "w.jx");
	makeflow_analyze_opts_clear(&o);
	assert_int_equal(parse(&o, "--json", NULL), CLI_DONE);
	assert_int_equal(o.src.format, WORKFLOW_JSON);
	makeflow_analyze_opts_clear(&o);
	/* -b DIR / --bundle-dir=DIR (the CCTools spelling) */
	assert_int_equal(parse(&o, "-b", "out", "w.mf", NULL), CLI_DONE);
	assert_int_equal(o.mode, 'b');
	assert_string_equal(o.bundle_dir, "out");
	assert_string_equal(o.src.path, "w.mf");
	makeflow_analyze_opts_clear(&o);
	assert_int_equal(parse(&o, "--bundle-dir=b2", NULL), CLI_DONE);
	assert_int_equal(o.mode, 'b');
	assert_string_equal(o.bundle_dir, "b2");
	makeflow_analyze_opts_clear(&o);
}

static void test_errors(void **state)
{
	(void)state;
	struct makeflow_analyze_opts o;
	assert_int_equal(parse(&o, "a", "b", NULL), HTC_EPARSE);
	assert_string_equal(err, "expected one workflow file (see --help)");
	assert_int_equal(parse(&o, "--jx-define", "X=1", "a", "b", NULL), HTC_EPARSE);
	assert_null(o.src.jx_defines);
	assert_int_equal(parse(&o, "-o", "/nonexistent/x", NULL), HTC_EPARSE);
	assert_string_equal(err, "-o /nonexistent/x: cannot open");
	assert_int_equal(parse(&o, "-d", "bogus", NULL), HTC_EPARSE);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_string_equal(err, want);
	assert_int_equal(parse(&o, "--debug", "dag", "-d", "none", NULL), CLI_DONE);
	makeflow_analyze_opts_clear(&o);

	int saved = mute(STDERR_FILENO);
	int r1 = parse(&o, "--bogus", NULL);
	int r2 = parse(&o, "-x", NULL);
	int r3 = parse(&o, "-d", NULL);
	int r4 = parse(&o, "--info=1", NULL);
	unmute(STDERR_FILENO, saved);
	assert_int_equal(r1, CLI_USAGE);
	assert_int_equal(r2, CLI_USAGE);
	assert_int_equal(r3, CLI_USAGE);
	assert_int_equal(r4, CLI_USAGE);

	saved = mute(STDOUT_FILENO);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "-i", "--help", "a", "b", NULL);
	unmute(STDOUT_FILENO, saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	makeflow_analyze_opts_usage(m, "ma");
	fclose(m);
	assert_non_null(strstr(text, "Usage: ma [options] [WORKFLOW]"));
	assert_non_null(strstr(text, "  -k, --syntax-check   check the workflow only"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_and_modes),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
