/* test_resource_monitor_opts.c: unit tests of resource_monitor's command-line parsing: the
 * defaults, every option's value, what to run (command, --sh, --pid and their conflicts), and
 * the exact error text of each bad value, missing value and unknown option. */
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
#include "resource_monitor_opts.h"
#include "rmon_seccomp.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "resource_monitor". */
static int parse(struct resource_monitor_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "resource_monitor", ap);
	va_end(ap);
	err[0] = 0;
	return resource_monitor_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct resource_monitor_opts o_;                                                   \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.cmd);                                                               \
		assert_int_equal(o_.n_extra, 0);                                                   \
	} while (0)

/* Help and version go to stdout: away from the test's report while they are checked. */
static int saved_stdout = -1;
static void stdout_off(void)
{
	fflush(stdout);
	saved_stdout = dup(STDOUT_FILENO);
	int fd = open("/dev/null", O_WRONLY);
	dup2(fd, STDOUT_FILENO);
	close(fd);
}
static void stdout_on(void)
{
	fflush(stdout);
	dup2(saved_stdout, STDOUT_FILENO);
	close(saved_stdout);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void test_defaults(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(parse(&o, "--", "ls", "-l", "/", NULL), CLI_DONE);
	assert_int_equal(o.n_args, 3);
	assert_string_equal(o.cmd[0], "ls");
	assert_string_equal(o.cmd[1], "-l");
	assert_string_equal(o.cmd[2], "/");
	assert_null(o.cmd[3]);
	assert_int_equal(o.have_limits, 0);
	assert_true(o.limits.v[RM_MEMORY] < 0);
	assert_int_equal(o.measure_only, 0);
	assert_true(o.interval == 1);
	assert_null(o.template);
	assert_int_equal(o.time_series, 0);
	assert_int_equal(o.report_files, 0);
	assert_null(o.measure_dirs);
	assert_int_equal(o.pprint, 1);
	assert_int_equal(o.compact, 0);
	assert_int_equal(o.attach_pid, 0);
	assert_int_equal(o.cgroups, RMONITOR_CGROUPS_AUTO);
	assert_null(o.cpuset);
	assert_int_equal(o.seccomp, RMON_SECCOMP_OFF);
	assert_null(o.category);
	assert_null(o.task_id);
	assert_null(o.sh);
	resource_monitor_opts_clear(&o);
	/* the command's own options are left alone, even without -- */
	assert_int_equal(parse(&o, "sleep", "-x", NULL), CLI_DONE);
	assert_string_equal(o.cmd[1], "-x");
	resource_monitor_opts_clear(&o);
}

static void test_flags_and_values(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(parse(&o, "--measure-only", "-i", "0.5", "-O", "out/t",
	                       "--with-time-series", "--with-opened-files", "--no-pprint",
	                       "--compact", "--cgroups=required", "--cpuset", "0-1,3",
	                       "--seccomp=nonet", "--category", "big", "--task-id", "17",
	                       "--measure-dir", ".", "--measure-dir=/", "--", "true", NULL),
	                 CLI_DONE);
	assert_int_equal(o.measure_only, 1);
	assert_true(o.interval == 0.5);
	assert_string_equal(o.template, "out/t");
	assert_int_equal(o.time_series, 1);
	assert_int_equal(o.report_files, 1);
	assert_int_equal(o.pprint, 0);
	assert_int_equal(o.compact, 1);
	assert_int_equal(o.cgroups, RMONITOR_CGROUPS_REQUIRED);
	assert_string_equal(o.cpuset, "0-1,3");
	assert_int_equal(o.seccomp, RMON_SECCOMP_NONET);
	assert_string_equal(o.category, "big");
	assert_string_equal(o.task_id, "17");
	assert_int_equal(o.n_measure_dirs, 2);
	assert_string_equal(o.measure_dirs[0], ".");
	assert_string_equal(o.measure_dirs[1], "/");
	assert_null(o.measure_dirs[2]);
	resource_monitor_opts_clear(&o);

	assert_int_equal(parse(&o, "--with-inotify", "--cgroups", "off", "true", NULL), CLI_DONE);
	assert_int_equal(o.report_files, 1);
	assert_int_equal(o.cgroups, RMONITOR_CGROUPS_OFF);
	resource_monitor_opts_clear(&o);
	assert_int_equal(parse(&o, "--cgroups=off", "--cgroups=auto", "true", NULL), CLI_DONE);
	assert_int_equal(o.cgroups, RMONITOR_CGROUPS_AUTO);
	resource_monitor_opts_clear(&o);
}

static void test_limits(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(
	    parse(&o, "-L", "memory: 1000, cores: 2", "--limits=memory: 500", "--", "true", NULL),
	    CLI_DONE);
	assert_int_equal(o.have_limits, 1);
	assert_true(o.limits.v[RM_MEMORY] == 500); /* later ones override */
	assert_true(o.limits.v[RM_CORES] == 2);
	resource_monitor_opts_clear(&o);

	char dir[] = "/tmp/test_rm_opts.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char lines[128], json[128], big[128];
	snprintf(lines, sizeof lines, "%s/limits.txt", dir);
	snprintf(json, sizeof json, "%s/limits.json", dir);
	snprintf(big, sizeof big, "%s/big", dir);
	write_file(lines, "memory: 100\nwall_time: 60\n\n");
	write_file(json, " {\"memory\": 200, \"cores\": 1}\n");
	assert_int_equal(parse(&o, "-l", lines, "true", NULL), CLI_DONE);
	assert_true(o.limits.v[RM_MEMORY] == 100);
	assert_true(o.limits.v[RM_WALL_TIME] == 60);
	resource_monitor_opts_clear(&o);
	assert_int_equal(parse(&o, "--limits-file", json, "true", NULL), CLI_DONE);
	assert_true(o.limits.v[RM_MEMORY] == 200);
	assert_true(o.limits.v[RM_CORES] == 1);
	resource_monitor_opts_clear(&o);

	FILE *f = fopen(big, "w");
	assert_non_null(f);
	for (int i = 0; i <= RESOURCE_MONITOR_LIMITS_FILE_MAX / 8; i++)
		fputs("        ", f);
	fclose(f);
	char want[256];
	snprintf(want, sizeof want, "-l %s: larger than %d bytes", big,
	         RESOURCE_MONITOR_LIMITS_FILE_MAX);
	assert_fails(want, "-l", big, "true");
	snprintf(want, sizeof want, "-l %s: invalid limits: unknown resource \"bogus\" in limits",
	         lines);
	write_file(lines, "bogus: 1\n");
	assert_fails(want, "-l", lines, "true");
	unlink(lines);
	unlink(json);
	unlink(big);
	rmdir(dir);

	assert_fails("-l /nonexistent/limits: No such file or directory", "-l",
	             "/nonexistent/limits", "true");
	assert_fails("-L: invalid limits: memory: bad value \"x\"", "-L", "memory: x", "true");
	assert_fails("-L: invalid limits: unknown resource \"bogus\" in limits", "-L", "bogus: 1",
	             "true");
}

static void test_verbatim(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(parse(&o, "-V", "k: {\"a\": 1}", "--verbatim-to-summary=name : some text",
	                       "-V", "n:3", "true", NULL),
	                 CLI_DONE);
	assert_int_equal(o.n_extra, 3);
	assert_string_equal(o.extra_keys[0], "k");
	assert_string_equal(o.extra_values[0], "{\"a\":1}");
	assert_string_equal(o.extra_keys[1], "name");
	assert_string_equal(o.extra_values[1], "\"some text\"");
	assert_string_equal(o.extra_keys[2], "n");
	assert_string_equal(o.extra_values[2], "3");
	resource_monitor_opts_clear(&o);

	assert_fails("-V 'nocolon': expected 'KEY: VALUE'", "-V", "nocolon", "true");
	assert_fails("-V ': v': empty key", "-V", ": v", "true");
	assert_fails("-V 'a b: 1': key 'a b' may hold only letters, digits, '_', '-' and '.'", "-V",
	             "a b: 1", "true");
	assert_fails("-V 'command: x': 'command' is a field of the summary itself", "-V",
	             "command: x", "true");
	assert_fails("-V 'memory: 1': 'memory' is a measured field of the summary", "-V",
	             "memory: 1", "true");
	assert_fails("-V 'k: 2': key 'k' given twice", "-V", "k: 1", "-V", "k: 2", "true");
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("-i 0: expected a number of seconds between 0.01 and 86400", "-i", "0",
	             "true");
	assert_fails("-i abc: expected a number of seconds between 0.01 and 86400", "--interval",
	             "abc", "true");
	assert_fails("-i 90000: expected a number of seconds between 0.01 and 86400", "-i90000",
	             "true");
	assert_fails("-O: empty output template", "-O", "", "true");
	assert_fails("--measure-dir /nonexistent: No such file or directory", "--measure-dir",
	             "/nonexistent", "true");
	assert_fails("--measure-dir /etc/passwd: not a directory", "--measure-dir", "/etc/passwd",
	             "true");
	assert_fails("--pid abc: expected a process id", "--pid", "abc");
	assert_fails("--pid 0: expected a process id", "--pid=0");
	assert_fails("--pid 9999999999: expected a process id", "--pid", "9999999999");
	assert_fails("--cgroups=x: expected auto, off or required", "--cgroups", "x", "true");
	assert_fails("--cpuset: empty list", "--cpuset", "", "true");
	assert_fails("--cpuset 'a': expected a list such as 0-1,3", "--cpuset", "a", "true");
	assert_fails("--seccomp 'lax': expected default, strict, nonet or off", "--seccomp", "lax",
	             "true");
}

static void test_what_to_run(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(parse(&o, "--sh", "echo hi | wc", NULL), CLI_DONE);
	assert_string_equal(o.sh, "echo hi | wc");
	assert_string_equal(o.cmd[0], "/bin/sh");
	assert_string_equal(o.cmd[1], "-c");
	assert_string_equal(o.cmd[2], "echo hi | wc");
	assert_null(o.cmd[3]);
	assert_int_equal(o.n_args, 0);
	resource_monitor_opts_clear(&o);
	assert_int_equal(parse(&o, "--pid", "1234", NULL), CLI_DONE);
	assert_int_equal(o.attach_pid, 1234);
	assert_null(o.cmd);
	resource_monitor_opts_clear(&o);

	assert_fails("--pid: give either a process to attach to or a command, not both", "--pid",
	             "1", "--", "true");
	assert_fails("--pid: give either a process to attach to or a command, not both", "--pid",
	             "1", "--sh", "true");
	assert_fails("--cpuset: cannot be used with --pid (the process already runs)", "--pid", "1",
	             "--cpuset", "0");
	assert_fails("--seccomp: cannot be used with --pid (the process already runs)", "--pid",
	             "1", "--seccomp", "default");
	assert_fails("--cgroups=required: cannot be used with --pid (an attached process is "
	             "measured through /proc only)",
	             "--pid", "1", "--cgroups=required");
	assert_fails("--sh: give the command either with --sh or after --, not both", "--sh", "x",
	             "--", "true");
	assert_fails("no command given (usage: resource_monitor [options] -- CMD ARGS; see --help)",
	             "-i", "2");
}

static void test_common_options(void **state)
{
	(void)state;
	struct resource_monitor_opts o;
	assert_int_equal(parse(&o, "-d", "rmon", "--debug=none", "true", NULL), CLI_DONE);
	resource_monitor_opts_clear(&o);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus", "true");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x",
	             "true");
	assert_fails("unknown option --bogus (see --help)", "--bogus", "true");
	assert_fails("unknown option -x (see --help)", "-x", "true");
	assert_fails("unknown option --compact=1 (see --help)", "--compact=1", "true");
	assert_fails("option -L needs a value (see --help)", "-L");
	assert_fails("option --limits needs a value (see --help)", "--limits");
	stdout_off();
	int rv = parse(&o, "-v", "true", NULL);
	int rh = parse(&o, "-L", "memory: 1", "--help", NULL);
	stdout_on();
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
	assert_int_equal(o.have_limits, 0);
	assert_null(o.cmd);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	resource_monitor_opts_usage(m, "rm");
	fclose(m);
	assert_non_null(strstr(text, "Usage: rm [options] -- COMMAND [ARGS...]\n"));
	assert_non_null(strstr(text, "--verbatim-to-summary='KEY: VALUE'"));
	assert_non_null(strstr(text, debug_flags_help()));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),       cmocka_unit_test(test_flags_and_values),
	    cmocka_unit_test(test_limits),         cmocka_unit_test(test_verbatim),
	    cmocka_unit_test(test_bad_values),     cmocka_unit_test(test_what_to_run),
	    cmocka_unit_test(test_common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
