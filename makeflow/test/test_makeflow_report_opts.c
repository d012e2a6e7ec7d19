/* test_makeflow_report_opts.c: unit tests of makeflow_report's command-line parsing: the log and
 * the monitor directory, -O and its default, -w, --failed-dir, --no-dot, the workflow-form
 * options, and the exact text of each error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "htc_error.h"
#include "makeflow_report_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[2048];

static int parse(struct makeflow_report_opts *o, ...)
{
	static char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "makeflow_report", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_report_opts_parse(argc, argv, o, err, sizeof err);
}

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

static void test_defaults(void **state)
{
	(void)state;
	struct makeflow_report_opts o;
	assert_int_equal(parse(&o, "wf.makeflowlog", NULL), CLI_DONE);
	assert_string_equal(o.log, "wf.makeflowlog");
	assert_null(o.monitor_dir);
	assert_string_equal(o.output, "report.html");
	assert_null(o.workflow);
	assert_int_equal(o.no_dot, 0);
	assert_int_equal(o.src_given, 0);
	makeflow_report_opts_clear(&o);
}

static void test_all_options(void **state)
{
	(void)state;
	struct makeflow_report_opts o;
	assert_int_equal(parse(&o, "-O", "r.html", "-w", "x.json", "--json", "--failed-dir", "d",
	                       "--no-dot", "log", "mon", NULL),
	                 CLI_DONE);
	assert_string_equal(o.output, "r.html");
	assert_string_equal(o.workflow, "x.json");
	assert_string_equal(o.failed_dir, "d");
	assert_int_equal(o.no_dot, 1);
	assert_int_equal(o.src_given, 1);
	assert_int_equal(o.src.format, WORKFLOW_JSON);
	assert_string_equal(o.log, "log");
	assert_string_equal(o.monitor_dir, "mon");
	makeflow_report_opts_clear(&o);
	assert_int_equal(parse(&o, "--output=s.html", "log", NULL), CLI_DONE);
	assert_string_equal(o.output, "s.html");
	makeflow_report_opts_clear(&o);
}

static void test_errors(void **state)
{
	(void)state;
	struct makeflow_report_opts o;
	assert_int_equal(parse(&o, NULL), CLI_USAGE);
	assert_string_equal(err, "no transaction log given");
	assert_int_equal(parse(&o, "a", "b", "c", NULL), CLI_USAGE);
	assert_string_equal(err, "too many arguments: LOG [MONITOR_DIR]");
	assert_int_equal(parse(&o, "-O", "", "log", NULL), HTC_EPARSE);
	assert_string_equal(err, "-O: the output file name is empty");
	int saved = mute(2);
	int r = parse(&o, "--bogus", "log", NULL);
	unmute(2, saved);
	assert_int_equal(r, CLI_USAGE);
	saved = mute(1);
	r = parse(&o, "-h", NULL);
	unmute(1, saved);
	assert_int_equal(r, CLI_EXIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_all_options),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
