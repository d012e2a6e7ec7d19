/* test_makeflow_monitor_opts.c: unit tests of makeflow_monitor's command-line parsing (the
 * CCTools options -t, -S and -H, the long forms, --once, the logs, and the exact text of each
 * error) and of the view it shows for a log: running, ended, failed rules, not started. */
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
#include <zlib.h>

#include "cli.h"
#include "htc_error.h"
#include "makeflow_monitor_opts.h"
#include "makeflow_monitor_view.h"
#include "txlog_read.h"

#include "ts_argv.h"
#include "banned.h"

static char err[2048];

/* Parses the NULL-terminated words after "makeflow_monitor". */
static int parse(struct makeflow_monitor_opts *o, ...)
{
	static char *argv[64]; /* o->logs points into it */
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "makeflow_monitor", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_monitor_opts_parse(argc, argv, o, err, sizeof err);
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

static void test_options(void **state)
{
	(void)state;
	struct makeflow_monitor_opts o;
	assert_int_equal(parse(&o, "a.makeflowlog", NULL), CLI_DONE);
	assert_true(o.interval == 1.0);
	assert_int_equal(o.sort + o.hide_finished + o.once, 0);
	assert_int_equal(o.nlogs, 1);
	assert_string_equal(o.logs[0], "a.makeflowlog");
	assert_int_equal(parse(&o, "-t", "0.5", "-S", "-H", "a", "b", NULL), CLI_DONE);
	assert_true(o.interval == 0.5);
	assert_int_equal(o.sort, 1);
	assert_int_equal(o.hide_finished, 1);
	assert_int_equal(o.nlogs, 2);
	assert_string_equal(o.logs[1], "b");
	assert_int_equal(
	    parse(&o, "--interval=2", "--sort", "--hide-finished", "--once", "x", NULL), CLI_DONE);
	assert_true(o.interval == 2.0);
	assert_int_equal(o.sort + o.hide_finished + o.once, 3);
	assert_int_equal(parse(&o, "-d", "none", "x", NULL), CLI_DONE);
}

static void test_errors(void **state)
{
	(void)state;
	struct makeflow_monitor_opts o;
	assert_int_equal(parse(&o, NULL), CLI_USAGE);
	assert_string_equal(err, "no transaction log given");
	assert_int_equal(parse(&o, "-t", "0", "x", NULL), HTC_EPARSE);
	assert_string_equal(err, "-t 0: the interval is a number of seconds from 0.01 to 86400");
	assert_int_equal(parse(&o, "-t", "abc", "x", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "-t", "nan", "x", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "-t", "1e9", "x", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "-o", "/nonexistent/x", "x", NULL), HTC_EPARSE);
	assert_string_equal(err, "-o /nonexistent/x: cannot open");
	int saved = mute(STDERR_FILENO);
	int r1 = parse(&o, "--bogus", "x", NULL);
	int r2 = parse(&o, "-t", NULL);
	unmute(STDERR_FILENO, saved);
	assert_int_equal(r1, CLI_USAGE);
	assert_int_equal(r2, CLI_USAGE);
	saved = mute(STDOUT_FILENO);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "-h", NULL);
	unmute(STDOUT_FILENO, saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
}

static void rec(char *buf, size_t size, const char *text)
{
	size_t used = strlen(buf);
	uLong crc = crc32(0L, (const Bytef *)text, (uInt)strlen(text));
	snprintf(buf + used, size - used, "%s %08lx\n", text, (unsigned long)crc);
}

/* The view of LOG as of NOW_US (caller frees). */
static char *view_of(const char *log, int64_t now_us)
{
	struct txlog_reader *rd = txlog_reader_create("wf.makeflowlog", NULL, NULL);
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	makeflow_monitor_view(m, "wf.makeflowlog", rd, now_us);
	fclose(m);
	txlog_reader_delete(rd);
	return text;
}

static void test_view(void **state)
{
	(void)state;
	char log[4096] = "#htc-makeflow-log 1 Makeflow\n";
	char *v = view_of(log, 0);
	assert_string_equal(
	    v, "\n    Makeflow: wf.makeflowlog\n      Status: waiting for events...\n");
	free(v);
	rec(log, sizeof log, "S 1000000 7 4");
	rec(log, sizeof log, "N 1000001 0 2 0000000000000001");
	rec(log, sizeof log, "N 11000000 0 3 0000000000000001");
	rec(log, sizeof log, "N 11000001 1 2 0000000000000002");
	rec(log, sizeof log, "N 11000002 1 4 0000000000000002");
	rec(log, sizeof log, "N 11000003 1 2 0000000000000002");
	rec(log, sizeof log, "N 11000004 1 4 0000000000000002 signal:9");
	rec(log, sizeof log, "N 11000005 2 2 0000000000000003");
	v = view_of(log, 61000000);
	/* 1 of 4 done in 60 s: 1 per minute on average, 3 minutes left */
	assert_non_null(strstr(v, "      Status: [============>"));
	assert_non_null(strstr(v, "] 25.00 %\n"));
	assert_non_null(strstr(v, ", elapsed: 00:01:00, left: 00:03:00\n"));
	assert_non_null(strstr(v, "Tasks/Minute: current: 1.00, average: 1.00\n"));
	assert_non_null(strstr(v, "       Tasks: waiting: 1, running: 1, complete: 1, failed: 1, "
	                          "aborted: 0, total: 4\n"));
	assert_non_null(strstr(v, "      Failed: rule 1 (signal 9, 2 attempts)\n"));
	free(v);
	rec(log, sizeof log, "N 12000000 2 5 0000000000000003");
	rec(log, sizeof log, "E 13000000 2 killed");
	v = view_of(log, 99000000);
	assert_non_null(strstr(v, "      Status: finished: aborted\n"));
	assert_non_null(strstr(v, ", elapsed: 00:00:12\n"));
	assert_non_null(strstr(v, "Tasks/Minute: average: 5.00\n"));
	assert_non_null(strstr(v, "aborted: 1, total: 4\n"));
	free(v);
	char d[32];
	makeflow_monitor_duration(90061, d, sizeof d);
	assert_string_equal(d, "1:01:01:01");
	makeflow_monitor_duration(-1, d, sizeof d);
	assert_string_equal(d, "N/A");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
