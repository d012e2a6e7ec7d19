/* test_work_queue_factory_opts.c: unit tests of work_queue_factory's command-line parsing: the
 * defaults, every option's value and the workers' size options built from them, the master
 * given as HOST PORT or -M, and the exact error text of each bad value and unknown option. */
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

#include "catalog_project.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "work_queue_factory_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "work_queue_factory". */
static int parse(struct work_queue_factory_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "work_queue_factory", ap);
	va_end(ap);
	err[0] = 0;
	return work_queue_factory_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct work_queue_factory_opts o_;                                                 \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.batch_opts);                                                        \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	struct work_queue_factory_opts o;
	assert_int_equal(parse(&o, "master.example.org", "9123", NULL), CLI_DONE);
	assert_string_equal(o.type, "local");
	assert_string_equal(o.host, "master.example.org");
	assert_int_equal(o.port, 9123);
	assert_string_equal(o.port_arg, "9123");
	assert_null(o.project);
	assert_null(o.catalog);
	assert_null(o.password);
	assert_null(o.binary);
	assert_int_equal(o.limits.min_workers, 0);
	assert_int_equal(o.limits.max_workers, 10);
	assert_int_equal(o.limits.workers_per_cycle, 5);
	assert_true(o.limits.worker_cores == 1);
	assert_int_equal(o.timeout, 300);
	assert_true(o.period == 5);
	assert_string_equal(o.size, "");
	assert_null(o.batch_opts);
	assert_int_equal(o.n_batch_opts, 0);
	assert_string_equal(o.scaler, "hta");
	assert_null(o.scaler_hook);
	assert_true(o.hook_timeout == 10);
	assert_true(o.memory_mb == -1 && o.disk_mb == -1);
	work_queue_factory_opts_clear(&o);
}

static void test_scaler_options(void **state)
{
	(void)state;
	struct work_queue_factory_opts o;
	assert_int_equal(parse(&o, "--scaler", "hpa:20:60", "--scaler-hook", "./hook.py",
	                       "--scaler-hook-timeout", "2.5", "--memory", "2G", "h", "1", NULL),
	                 CLI_DONE);
	assert_string_equal(o.scaler, "hpa:20:60");
	assert_string_equal(o.scaler_hook, "./hook.py");
	assert_true(o.hook_timeout == 2.5);
	assert_true(o.memory_mb == 2048);
	work_queue_factory_opts_clear(&o);
	assert_int_equal(parse(&o, "--scaler=queue", "h", "1", NULL), CLI_DONE);
	work_queue_factory_opts_clear(&o);
	assert_fails("--scaler fast: expected hta, queue or hpa:TARGET", "--scaler", "fast", "h",
	             "1");
	assert_fails("--scaler hpa:0: expected hpa:TARGET (CPU load percent, 1..100) or "
	             "hpa:TARGET:WINDOW (scale-down window, 0..86400 s)",
	             "--scaler", "hpa:0", "h", "1");
	assert_fails("--scaler-hook: expected a command, got an empty string", "--scaler-hook", "",
	             "h", "1");
	assert_fails("--scaler-hook-timeout 0: expected seconds in 0.1..3600",
	             "--scaler-hook-timeout", "0", "h", "1");
}

static void test_options(void **state)
{
	(void)state;
	struct work_queue_factory_opts o;
	assert_int_equal(parse(&o, "-T", "cgroups", "-M", "proj", "--catalog=c1:9097,c2", "-w", "2",
	                       "--max-workers", "20", "--workers-per-cycle=3", "--cores", "2.5",
	                       "--memory", "4G", "--disk=1000", "--gpus", "1", "-t", "5m", "-P",
	                       "pw.txt", "--worker-binary", "/opt/w", "--period", "0.5",
	                       "--batch-option", "a=b", "--batch-option=c=d=e", NULL),
	                 CLI_DONE);
	assert_string_equal(o.type, "cgroups");
	assert_string_equal(o.project, "proj");
	assert_true(catalog_project_match(o.project_re, "proj"));
	assert_false(catalog_project_match(o.project_re, "proj2")); /* the whole name */
	assert_null(o.host);
	assert_string_equal(o.catalog, "c1:9097,c2");
	assert_int_equal(o.limits.min_workers, 2);
	assert_int_equal(o.limits.max_workers, 20);
	assert_int_equal(o.limits.workers_per_cycle, 3);
	assert_true(o.limits.worker_cores == 2.5);
	assert_string_equal(o.size, " --cores 2.5 --memory 4096 --disk 1000 --gpus 1");
	assert_int_equal(o.timeout, 300);
	assert_string_equal(o.password, "pw.txt");
	assert_string_equal(o.binary, "/opt/w");
	assert_true(o.period == 0.5);
	assert_int_equal(o.n_batch_opts, 2);
	assert_string_equal(o.batch_opts[0], "a=b");
	assert_string_equal(o.batch_opts[1], "c=d=e");
	work_queue_factory_opts_clear(&o);

	/* the size options keep their order, repeated ones too */
	assert_int_equal(
	    parse(&o, "--gpus=0", "--cores=1", "--cores=4", "--timeout", "60", "h", "1", NULL),
	    CLI_DONE);
	assert_string_equal(o.size, " --gpus 0 --cores 1 --cores 4");
	assert_true(o.limits.worker_cores == 4);
	assert_int_equal(o.timeout, 60);
	work_queue_factory_opts_clear(&o);
	/* CCTools names: -N and --manager-name are -M; -C is CCTools' configuration file */
	assert_int_equal(parse(&o, "-N", "p1", NULL), CLI_DONE);
	assert_string_equal(o.project, "p1");
	work_queue_factory_opts_clear(&o);
	assert_int_equal(parse(&o, "--manager-name", "p2", NULL), CLI_DONE);
	assert_string_equal(o.project, "p2");
	work_queue_factory_opts_clear(&o);
	assert_fails("-C: a CCTools work_queue_factory option that is not supported here "
	             "(doc/compatibility.md); the catalog is --catalog",
	             "-C", "cat:9097", "-M", "p");
	/* -E (the last given wins, as in CCTools), --env, --wrapper, --wrapper-input */
	assert_int_equal(parse(&o, "-E", "--feature a", "--extra-options=--feature b", "--env",
	                       "A=1", "--env=B_2=x=y", "--wrapper", "nice -n 3", "--wrapper",
	                       "env Z=9", "--wrapper-input", "w.sh", "-M", "p", NULL),
	                 CLI_DONE);
	assert_string_equal(o.extra, "--feature b");
	assert_int_equal(o.n_env, 2);
	assert_string_equal(o.env[0], "A=1");
	assert_string_equal(o.env[1], "B_2=x=y");
	assert_null(o.env[2]);
	assert_int_equal(o.n_wrappers, 2);
	assert_string_equal(o.wrappers[0], "nice -n 3");
	assert_string_equal(o.wrappers[1], "env Z=9");
	assert_int_equal(o.n_wrapper_inputs, 1);
	assert_string_equal(o.wrapper_inputs[0], "w.sh");
	assert_null(o.wrapper_inputs[1]);
	work_queue_factory_opts_clear(&o);
	assert_fails("--env 1A=x: expected NAME=VALUE (NAME: letters, digits, _)", "--env", "1A=x",
	             "-M", "p");
	assert_fails("-M: project name pattern \"p(\": Unmatched ( or \\(", "-M", "p(");
	assert_fails("--env A: expected NAME=VALUE (NAME: letters, digits, _)", "--env", "A", "-M",
	             "p");
	assert_fails("--env A-B=1: expected NAME=VALUE (NAME: letters, digits, _)", "--env=A-B=1",
	             "-M", "p");
	assert_fails("--wrapper: expected a command prefix, got an empty string", "--wrapper", "",
	             "-M", "p");
	/* -O, --debug-file-size: the rotation size of the -o file, in bytes as CCTools does */
	assert_int_equal(parse(&o, "-O", "2000", "--debug-file-size=1M", "-M", "p", NULL),
	                 CLI_DONE);
	work_queue_factory_opts_clear(&o);
	assert_fails("-O lots: expected bytes (a number) or a size such as 10M; 0 never rotates",
	             "-O", "lots", "-M", "p");
	assert_fails("--runos: a CCTools work_queue_factory option that is not supported here "
	             "(doc/compatibility.md)",
	             "--runos", "img", "-M", "p");
	assert_fails("-c: a CCTools work_queue_factory option that is not supported here "
	             "(doc/compatibility.md)",
	             "-c", "-M", "p");
	assert_fails("--k8s-image: this option needs -T k8s (the batch type is local)",
	             "--k8s-image", "img", "-M", "p");
	assert_fails("--k8s-worker-image: this option needs -T k8s (the batch type is local)",
	             "--k8s-worker-image", "img", "-M", "p");
	/* options end at the first argument: the rest is HOST PORT */
	assert_fails("expected HOST PORT or -M PROJECT (see --help)", "h", "1", "-w", "2");
	/* --mesos-master: CCTools' option of -T mesos, refused with another type */
	assert_fails("--mesos-master: this option needs -T mesos", "--mesos-master", "m:5050", "-M",
	             "p");
	assert_fails("--mesos-path: a CCTools work_queue_factory option that is not supported "
	             "here (doc/compatibility.md)",
	             "-T", "mesos", "--mesos-path", "x", "-M", "p");
	struct work_queue_factory_opts m;
	assert_int_equal(parse(&m, "-T", "mesos", "--mesos-master", "m:5050", "-M", "p", NULL), 0);
	assert_string_equal(m.mesos_master, "m:5050");
	work_queue_factory_opts_clear(&m);
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("--min-workers x: expected an integer in 0..100000", "-w", "x", "h", "1");
	assert_fails("--min-workers -1: expected an integer in 0..100000", "--min-workers=-1", "h",
	             "1");
	assert_fails("--max-workers 0: expected an integer in 1..100000", "-W", "0", "h", "1");
	assert_fails("--workers-per-cycle 0: expected an integer in 1..10000",
	             "--workers-per-cycle", "0", "h", "1");
	assert_fails("--cores 0: expected a number above 0", "--cores", "0", "h", "1");
	assert_fails("--memory x: expected a size (e.g. 4000, 4G)", "--memory", "x", "h", "1");
	assert_fails("--disk x: expected a size (e.g. 4000, 4G)", "--disk", "x", "h", "1");
	assert_fails("--gpus 2000: expected an integer in 0..1024", "--gpus", "2000", "h", "1");
	assert_fails("-t 0: expected a duration above 0 (e.g. 300, 5m)", "-t", "0", "h", "1");
	assert_fails("-t soon: expected a duration above 0 (e.g. 300, 5m)", "--timeout=soon", "h",
	             "1");
	assert_fails("--period 0: expected seconds in 0.1..3600", "--period", "0", "h", "1");
	assert_fails("--batch-option x: expected KEY=VALUE", "--batch-option", "x", "h", "1");
	assert_fails("--batch-option x: expected KEY=VALUE", "--batch-option", "a=b",
	             "--batch-option", "x", "h", "1");
}

static void test_master(void **state)
{
	(void)state;
	assert_fails("give either -M PROJECT or HOST PORT, not both", "-M", "p", "h");
	assert_fails("expected HOST PORT or -M PROJECT (see --help)", "h");
	assert_fails("expected HOST PORT or -M PROJECT (see --help)", "h", "1", "2");
	assert_fails("expected HOST PORT or -M PROJECT (see --help)", "-w", "1");
	assert_fails("PORT 70000: expected an integer in 1..65535", "h", "70000");
	assert_fails("PORT x: expected an integer in 1..65535", "h", "x");
	assert_fails("--min-workers 5 is above --max-workers 2", "-w", "5", "-W", "2", "h", "1");
	assert_fails("--min-workers 11 is above --max-workers 10", "-w", "11", "-M", "p");
}

static void test_common_options(void **state)
{
	(void)state;
	struct work_queue_factory_opts o;
	assert_int_equal(parse(&o, "-d", "factory", "--debug=none", "h", "1", NULL), CLI_DONE);
	work_queue_factory_opts_clear(&o);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus", "h", "1");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x", "h",
	             "1");
	assert_fails("unknown option --bogus (see --help)", "--bogus", "h", "1");
	assert_fails("unknown option -x (see --help)", "-x", "h", "1");
	assert_fails("unknown option -h (see --help)", "--help=x"); /* optopt names it */
	assert_fails("option -w needs a value (see --help)", "-w");
	assert_fails("option --period needs a value (see --help)", "--period");

	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "--cores", "2", "-h", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
	assert_null(o.size); /* nothing left to free */

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	work_queue_factory_opts_usage(m, "wqf");
	fclose(m);
	assert_non_null(
	    strstr(text, "Usage: wqf [options] HOST PORT     workers for one master\n"));
	assert_non_null(strstr(text, "--workers-per-cycle=N"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults), cmocka_unit_test(test_scaler_options),
	    cmocka_unit_test(test_options),  cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_master),   cmocka_unit_test(test_common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
