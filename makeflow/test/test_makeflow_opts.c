/* test_makeflow_opts.c: unit tests of makeflow's command-line parsing: the defaults, every
 * option's value, the Work Queue options turned into driver options, the workflow argument and
 * --clean, and the exact error text of each bad value; getopt's own errors ask for the usage. */
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

#include "category.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "batch_queue.h"
#include "makeflow_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[2048];
static char dir[] = "/tmp/test_makeflow_opts.XXXXXX";

/* Parses the NULL-terminated words after "makeflow". */
static int parse(struct makeflow_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "makeflow", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_opts_parse(argc, argv, o, err, sizeof err);
}

/* Sends FD (stdout: help and version; stderr: getopt's messages) to /dev/null; returns the
 * saved descriptor for unmute. */
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

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct makeflow_opts o_;                                                           \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.batch_opts);                                                        \
		assert_null(o_.log_path);                                                          \
	} while (0)

/* Expects getopt's own complaint (the usage follows). */
#define assert_usage(...)                                                                          \
	do {                                                                                       \
		struct makeflow_opts o_;                                                           \
		int saved_ = mute(STDERR_FILENO);                                                  \
		int r_ = parse(&o_, __VA_ARGS__, NULL);                                            \
		unmute(STDERR_FILENO, saved_);                                                     \
		assert_int_equal(r_, CLI_USAGE);                                                   \
		assert_null(o_.batch_opts);                                                        \
	} while (0)

/* Runs in a directory holding the workflows "Makeflow" and "other.mf". */
static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir) || chdir(dir) < 0)
		return -1;
	FILE *f = fopen("Makeflow", "w");
	FILE *g = fopen("other.mf", "w");
	if (!f || !g)
		return -1;
	fputs("out:\n\ttouch out\n", f);
	fputs("out:\n\ttouch out\n", g);
	fclose(f);
	fclose(g);
	unsetenv("MAKEFLOW_BATCH_QUEUE_TYPE");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink("Makeflow");
	unlink("other.mf");
	if (chdir("/") < 0)
		return -1;
	return rmdir(dir);
}

static void test_defaults(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	struct engine_options d;
	engine_options_init(&d);
	assert_string_equal(o.src.path, "Makeflow");
	assert_int_equal(o.src.format, WORKFLOW_MAKE);
	assert_null(o.src.jx_args);
	assert_null(o.src.jx_defines);
	assert_int_equal(o.clean, 0);
	assert_null(o.batch_opts);
	assert_string_equal(o.log_path, "Makeflow.makeflowlog");
	assert_ptr_equal(o.engine.log_path, o.log_path);
	assert_null(o.engine.batch_opts);
	assert_string_equal(o.engine.batch_type, "local");
	assert_int_equal(o.engine.max_local_jobs, d.max_local_jobs);
	assert_int_equal(o.engine.max_remote_jobs, d.max_remote_jobs);
	assert_int_equal(o.engine.retries, d.retries);
	assert_int_equal(o.engine.gc, d.gc);
	assert_int_equal(o.engine.gc_count, d.gc_count);
	assert_int_equal(o.engine.gc_size, d.gc_size);
	assert_int_equal(o.engine.progress, d.progress);
	assert_int_equal(o.engine.allocation_mode, d.allocation_mode);
	assert_true(o.engine.monitor_interval == d.monitor_interval);
	assert_null(o.engine.monitor_dir);
	assert_null(o.engine.summary_path);
	assert_null(o.engine.summary_json_path);
	assert_null(o.engine.self_exe);
	assert_int_equal(o.engine.local_cores, 0);
	assert_int_equal(o.engine.wait_for_files_s, 0);
	assert_int_equal(o.engine.storage_limit, 0);
	assert_null(o.local_port_file);
	assert_null(o.slurm_only);
	assert_null(o.report_path);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--report", "run.html", NULL), CLI_DONE);
	assert_string_equal(o.report_path, "run.html");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--report=r2.html", NULL), CLI_DONE);
	assert_string_equal(o.report_path, "r2.html");
	makeflow_opts_clear(&o);

	setenv("MAKEFLOW_BATCH_QUEUE_TYPE", "dryrun", 1);
	assert_int_equal(parse(&o, "other.mf", NULL), CLI_DONE);
	assert_string_equal(o.engine.batch_type, "dryrun");
	assert_string_equal(o.src.path, "other.mf");
	assert_string_equal(o.log_path, "other.mf.makeflowlog");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-T", "local", NULL), CLI_DONE);
	assert_string_equal(o.engine.batch_type, "local");
	makeflow_opts_clear(&o);
	unsetenv("MAKEFLOW_BATCH_QUEUE_TYPE");
}

static void test_engine_options(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "--batch-type=wq", "-j", "3", "--max-remote", "40", "-B",
	                       "queue=long", "-r", "2", "-z", "--skip-file-check", "-l", "my.log",
	                       "-f", "summary.txt", "--summary-json", "summary.json", "-g",
	                       "ref_cnt", "-G", "7", "--progress", "quiet", "--monitor", "mon",
	                       "--monitor-interval", "0.5", "--monitor-with-time-series",
	                       "--monitor-exe", "/bin/rm", "--allocation", "waste",
	                       "--allocation-seed", "seeds", "other.mf", NULL),
	                 CLI_DONE);
	struct engine_options *e = &o.engine;
	assert_string_equal(e->batch_type, "wq");
	assert_int_equal(e->max_local_jobs, 3);
	assert_int_equal(e->max_remote_jobs, 40);
	assert_string_equal(e->batch_options, "queue=long");
	assert_int_equal(e->retries, 2);
	assert_int_equal(e->zero_length_is_missing, 1);
	assert_int_equal(e->skip_file_check, 1);
	assert_string_equal(o.log_path, "my.log");
	assert_string_equal(e->log_path, "my.log");
	assert_string_equal(e->summary_path, "summary.txt");
	assert_string_equal(e->summary_json_path, "summary.json");
	assert_string_equal(e->argv[0], "makeflow");
	assert_string_equal(e->argv[1], "--batch-type=wq");
	assert_int_equal(e->gc, ENGINE_GC_REF_CNT);
	assert_int_equal(e->gc_count, 7);
	assert_int_equal(e->progress, ENGINE_PROGRESS_QUIET);
	assert_string_equal(e->monitor_dir, "mon");
	assert_true(e->monitor_interval == 0.5);
	assert_int_equal(e->monitor_time_series, 1);
	assert_string_equal(e->monitor_exe, "/bin/rm");
	assert_int_equal(e->allocation_mode, CATEGORY_MODE_MIN_WASTE);
	assert_string_equal(e->allocation_seed, "seeds");
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, "-R", "-g", "none", "--gc-size", "2G", "--progress=plain",
	                       "--allocation=throughput", NULL),
	                 CLI_DONE);
	assert_int_equal(o.engine.retries, 5);
	assert_int_equal(o.engine.gc, ENGINE_GC_ON_DEMAND); /* --gc-size turns it on */
	assert_int_equal(o.engine.gc_size, INT64_C(2) << 30);
	assert_int_equal(o.engine.progress, ENGINE_PROGRESS_PLAIN);
	assert_int_equal(o.engine.allocation_mode, CATEGORY_MODE_MAX_THROUGHPUT);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-g", "all", "--gc-size", "1M", "--progress", "auto", NULL),
	                 CLI_DONE);
	assert_int_equal(o.engine.gc, ENGINE_GC_ALL);
	assert_int_equal(o.engine.progress, ENGINE_PROGRESS_AUTO);
	makeflow_opts_clear(&o);
	/* 0 is the monitor's default, as the help says */
	assert_int_equal(parse(&o, "--monitor-interval", "0", NULL), CLI_DONE);
	assert_true(o.engine.monitor_interval == 0);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--monitor-interval", "0.01", NULL), CLI_DONE);
	assert_true(o.engine.monitor_interval == 0.01);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-g", "on_demand", NULL), CLI_DONE);
	assert_int_equal(o.engine.gc, ENGINE_GC_ON_DEMAND);
	makeflow_opts_clear(&o);
	/* -L is accepted (with a notice) and changes nothing */
	int saved = mute(STDERR_FILENO);
	int r = parse(&o, "-L", "batch.log", "--batch-log", "b2", NULL);
	unmute(STDERR_FILENO, saved);
	assert_int_equal(r, CLI_DONE);
	makeflow_opts_clear(&o);
}

static void test_batch_options(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "-T", "wq", "--batch-option", "script=x.sh", "-p", "0", "-Z",
	                       "port.txt", "-N", "proj", "-M", "proj2", "--project-name=p3", "-C",
	                       "cat:9097", "--password", "pw", "--ssl-cert", "c.pem", "--ssl-key",
	                       "k.pem", "--shared-fs", "/shared", "--port-file=pf",
	                       "--catalog-server", "c2", NULL),
	                 CLI_DONE);
	/* the last -Z wins */
	static const char *const want[] = {"script=x.sh",
	                                   "port=0",
	                                   "project=proj",
	                                   "project=proj2",
	                                   "project=p3",
	                                   "catalog=cat:9097",
	                                   "password=pw",
	                                   "ssl-cert=c.pem",
	                                   "ssl-key=k.pem",
	                                   "shared-fs=/shared",
	                                   "catalog=c2",
	                                   "port-file=pf",
	                                   NULL};
	size_t n = 0;
	for (; want[n]; n++)
		assert_string_equal(o.batch_opts[n], want[n]);
	assert_null(o.batch_opts[n]);
	assert_int_equal(o.n_batch_opts, n);
	assert_ptr_equal(o.engine.batch_opts, o.batch_opts);
	assert_null(o.local_port_file);
	makeflow_opts_clear(&o);
	/* CCTools' Work Queue keepalive and scheduling options, and --disable-cache */
	assert_int_equal(parse(&o, "-T", "wq", "-t", "40", "--wq-keepalive-interval=50", "-W",
	                       "files", "--disable-cache", "-F", "3", "--send-environment", NULL),
	                 CLI_DONE);
	assert_string_equal(o.batch_opts[0], "keepalive-timeout=40");
	assert_string_equal(o.batch_opts[1], "keepalive-interval=50");
	assert_string_equal(o.batch_opts[2], "schedule=files");
	assert_string_equal(o.batch_opts[3], "fast-abort=3");
	assert_string_equal(o.batch_opts[4], "cache=no");
	assert_null(o.batch_opts[5]);
	assert_int_equal(o.engine.send_environment, 1);
	makeflow_opts_clear(&o);
	assert_fails("-W fcfs: this option is for Work Queue and needs -T wq (the batch type is "
	             "local)",
	             "-W", "fcfs");
	/* -L: the master's transactions log with -T wq; --shared-fs with a local type: every path
	 * is shared already */
	assert_int_equal(parse(&o, "-T", "wq", "-L", "wq.log", NULL), CLI_DONE);
	assert_string_equal(o.batch_opts[0], "txlog=wq.log");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-L", "b.log", "--shared-fs", "/home", "--shared-fs", "/sw",
	                       "--seccomp", "off", NULL),
	                 CLI_DONE);
	assert_string_equal(o.batch_log, "b.log");
	assert_string_equal(o.batch_opts[0], "seccomp=off");
	assert_null(o.batch_opts[1]);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--shared-fs", "/home", NULL), CLI_DONE);
	assert_null(o.batch_opts);
	makeflow_opts_clear(&o);
	/* --disable-cache: the local types have no cache, as in CCTools */
	assert_int_equal(parse(&o, "--disable-cache", NULL), CLI_DONE);
	assert_null(o.batch_opts);
	makeflow_opts_clear(&o);
	assert_fails("--batch-option 'x': expected KEY=VALUE", "--batch-option", "x");
	/* Work Queue options without -T wq say so plainly */
	assert_fails("-N foo: this option is for Work Queue and needs -T wq (the batch type is "
	             "local)",
	             "-N", "foo");
	assert_fails("--password pw: this option is for Work Queue and needs -T wq (the batch "
	             "type is dryrun)",
	             "-T", "dryrun", "--password", "pw", "-p", "9");
	assert_int_equal(parse(&o, "-N", "foo", "-T", "wq", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
	/* --seccomp is the drivers' seccomp option (doc/seccomp.md) */
	assert_int_equal(parse(&o, "--seccomp", "nonet", NULL), CLI_DONE);
	assert_string_equal(o.batch_opts[0], "seccomp=nonet");
	assert_null(o.batch_opts[1]);
	makeflow_opts_clear(&o);
	assert_fails("--seccomp 'lax': expected default, strict, nonet or off", "--seccomp", "lax");
}

static void test_workflow_and_clean(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "--json", "--jx", "--jx-args", "a.json", "--jx-define", "X=1",
	                       "--jx-define=Y=2", NULL),
	                 CLI_DONE);
	assert_int_equal(o.src.format, WORKFLOW_JX);
	assert_string_equal(o.src.jx_args, "a.json");
	assert_string_equal(o.src.jx_defines[0], "X=1");
	assert_string_equal(o.src.jx_defines[1], "Y=2");
	assert_null(o.src.jx_defines[2]);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--json", NULL), CLI_DONE);
	assert_int_equal(o.src.format, WORKFLOW_JSON);
	makeflow_opts_clear(&o);
	/* --jx-context: the older name of --jx-args (CCTools still takes it) */
	assert_int_equal(parse(&o, "--jx", "--jx-context", "c.json", NULL), CLI_DONE);
	assert_string_equal(o.src.jx_args, "c.json");
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, "-c", NULL), CLI_DONE);
	assert_int_equal(o.clean, ENGINE_CLEAN_ALL);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--clean", "other.mf", NULL), CLI_DONE);
	assert_int_equal(o.clean, ENGINE_CLEAN_ALL);
	assert_string_equal(o.src.path, "other.mf");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--clean=outputs", NULL), CLI_DONE);
	assert_int_equal(o.clean, ENGINE_CLEAN_OUTPUTS);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--clean=intermediates", NULL), CLI_DONE);
	assert_int_equal(o.clean, ENGINE_CLEAN_INTERMEDIATES);
	makeflow_opts_clear(&o);
	/* options after the workflow are options too */
	assert_int_equal(parse(&o, "other.mf", "-j", "2", NULL), CLI_DONE);
	assert_int_equal(o.engine.max_local_jobs, 2);
	assert_string_equal(o.src.path, "other.mf");
	makeflow_opts_clear(&o);

	assert_fails("--clean=bad: expected all, outputs or intermediates", "--clean=bad");
	assert_fails("expected one workflow file, got 2 (see --help)", "a", "b");
	assert_fails("cannot read workflow nonexist: No such file or directory", "nonexist");
	/* the workflow is checked before --clean's mode */
	assert_fails("cannot read workflow nonexist: No such file or directory", "--clean=bad",
	             "nonexist");
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("option -j: '0' is not an integer >= 1", "-j", "0");
	assert_fails("option -j: 'abc' is not an integer >= 1", "--max-local=abc");
	assert_fails("option -J: '0' is not an integer >= 1", "-J", "0");
	assert_fails("option -r: '-1' is not an integer >= 0", "-r", "-1");
	assert_fails("option -G: '0' is not an integer >= 1", "-G", "0");
	assert_fails("option -j: '99999999999' is not an integer >= 1", "-j", "99999999999");
	assert_fails("-g bad: expected none, ref_cnt, on_demand or all", "-g", "bad");
	assert_fails("--gc-size x: expected a size such as 500M or 2G", "--gc-size", "x");
	assert_fails("--monitor-interval abc: expected 0 (the monitor's default, 1 s) or seconds "
	             "from 0.01 to 3600",
	             "--monitor-interval", "abc");
	assert_fails("--monitor-interval 4000: expected 0 (the monitor's default, 1 s) or seconds "
	             "from 0.01 to 3600",
	             "--monitor-interval", "4000");
	assert_fails("--monitor-interval 0.001: expected 0 (the monitor's default, 1 s) or "
	             "seconds from 0.01 to 3600",
	             "--monitor-interval", "0.001");
	assert_fails("--monitor-interval -1: expected 0 (the monitor's default, 1 s) or seconds "
	             "from 0.01 to 3600",
	             "--monitor-interval", "-1");
	assert_fails("--allocation bad: expected fixed, max, waste, throughput or warmup",
	             "--allocation", "bad");
	assert_fails("--progress bad: expected auto, plain or quiet", "--progress", "bad");
}

static void test_common_options(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "-d", "makeflow", "--debug=none", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x");
	assert_usage("--bogus");
	assert_usage("-y");
	assert_usage("-j");
	assert_usage("--max-local");
	assert_usage("--retry=3");
	int saved = mute(STDOUT_FILENO);
	int rv = parse(&o, "-j", "2", "-v", NULL);
	int rh = parse(&o, "--batch-option", "a=b", "--help", NULL);
	unmute(STDOUT_FILENO, saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
	assert_null(o.batch_opts);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	makeflow_opts_usage(m, "mf");
	fclose(m);
	assert_non_null(strstr(text, "Usage: mf [options] [WORKFLOW]   (default WORKFLOW: "
	                             "./Makeflow)\n"));
	assert_non_null(strstr(text, "  -N, -M, --project-name=P  advertise the master"));
	assert_non_null(strstr(text, debug_flags_help()));
	free(text);
}

/* The CCTools options kept with their meaning (doc/compatibility.md). */
static void test_cctools_options(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "--local-cores", "2", "--local-memory", "512", "--local-disk=2G",
	                       "--wait-for-files-upto", "30", "--storage-limit", "10G",
	                       "--storage-type", "2", "--do-not-save-failed-output", "-A",
	                       "--disable-afs-check", NULL),
	                 CLI_DONE);
	struct engine_options *e = &o.engine;
	assert_int_equal(e->local_cores, 2);
	assert_int_equal(e->local_memory_mb, 512);
	assert_int_equal(e->local_disk_mb, 2048);
	assert_int_equal(e->wait_for_files_s, 30);
	assert_int_equal(e->storage_limit, INT64_C(10) << 30);
	assert_int_equal(e->storage_type, ENGINE_STORAGE_OUTPUT);
	assert_null(o.slurm_only);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--storage-limit", "1000", "--storage-type", "off", NULL),
	                 CLI_DONE);
	assert_int_equal(o.engine.storage_type, ENGINE_STORAGE_OFF);
	makeflow_opts_clear(&o);
	assert_fails("--storage-type 1 (min): not supported here: it needs an order of rules "
	             "computed from file sizes known ahead; use 0 (max) or 2 (output), which are "
	             "measured as the workflow runs",
	             "--storage-limit", "1G", "--storage-type", "1");
	assert_fails("--storage-type 7: expected 0 (max), 1 (min), 2 (output) or 3 (off)",
	             "--storage-type", "7");
	assert_fails("--storage-limit x: expected bytes (a number) or a size such as 50G",
	             "--storage-limit", "x");
	assert_fails("--local-cores 0: expected an integer from 1 to 2147483647", "--local-cores",
	             "0");
	assert_fails("--local-memory abc: expected MB (a number) or a size such as 4G",
	             "--local-memory", "abc");
	assert_fails("--wait-for-files-upto -1: expected an integer from 0 to 86400",
	             "--wait-for-files-upto", "-1");

	/* the Slurm-only options are kept; another batch type gets a warning (main prints it) */
	assert_int_equal(
	    parse(&o, "--safe-submit-mode", "--ignore-memory-spec", "--tmp", "100", NULL),
	    CLI_DONE);
	assert_int_equal(o.engine.slurm_safe_submit, 1);
	assert_int_equal(o.engine.slurm_ignore_memory_spec, 1);
	assert_string_equal(o.engine.slurm_tmp, "100");
	assert_string_equal(o.slurm_only, "--safe-submit-mode");
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, "--file-status", "p.html", "--file-status-interval", "2", NULL),
	                 CLI_DONE);
	assert_string_equal(o.engine.file_status_path, "p.html");
	assert_int_equal(o.engine.file_status_interval_s, 2);
	makeflow_opts_clear(&o);
	assert_fails("--file-status-interval 0: expected an integer from 1 to 86400",
	             "--file-status-interval", "0");
	assert_int_equal(parse(&o, "--monitor-log-fmt", "r-%%", NULL), CLI_DONE);
	assert_string_equal(o.engine.monitor_log_fmt, "r-%%");
	makeflow_opts_clear(&o);
	assert_fails("--monitor-log-fmt 'r-%': expected a file name (no '/') with %% where the "
	             "rule's id goes, such as resource-rule-%%",
	             "--monitor-log-fmt", "r-%");
	assert_fails("--monitor-log-fmt 'a/%%': expected a file name (no '/') with %% where the "
	             "rule's id goes, such as resource-rule-%%",
	             "--monitor-log-fmt", "a/%%");
	assert_int_equal(parse(&o, "--monitor-with-opened-files", NULL), CLI_DONE);
	assert_int_equal(o.engine.monitor_opened_files, 1);
	makeflow_opts_clear(&o);
	/* --monitor-log-name: the older name of --monitor-log-fmt; --monitor-measure-dir */
	assert_int_equal(parse(&o, "--monitor-log-name", "m-%%", "--monitor-measure-dir", NULL),
	                 CLI_DONE);
	assert_string_equal(o.engine.monitor_log_fmt, "m-%%");
	assert_int_equal(o.engine.monitor_measure_dir, 1);
	makeflow_opts_clear(&o);
	assert_fails("--monitor-log-name 'm': expected a file name (no '/') with %% where the "
	             "rule's id goes, such as resource-rule-%%",
	             "--monitor-log-name", "m");
	/* --debug-rotate-max: a size; 0 never rotates */
	assert_int_equal(parse(&o, "--debug-rotate-max", "10M", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--debug-rotate-max=0", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
	assert_fails("--debug-rotate-max ten: expected bytes (a number) or a size such as 10M; 0 "
	             "never rotates",
	             "--debug-rotate-max", "ten");
	/* the Work Queue ones: driver options, and an error with another batch type */
	assert_int_equal(parse(&o, "-T", "wq", "-P", "-4", "--work-queue-preferred-connection",
	                       "by_hostname", "--wq-wait-queue-size", "3", NULL),
	                 CLI_DONE);
	assert_string_equal(o.batch_opts[0], "priority=-4");
	assert_string_equal(o.batch_opts[1], "preferred-connection=by_hostname");
	assert_string_equal(o.batch_opts[2], "wait-queue-size=3");
	assert_null(o.batch_opts[3]);
	makeflow_opts_clear(&o);
	assert_fails("--wq-wait-queue-size 3: this option is for Work Queue and needs -T wq (the "
	             "batch type is local)",
	             "--wq-wait-queue-size", "3");
	assert_fails("--wq-wait-queue-size x: expected an integer from 0 to 1000000",
	             "--wq-wait-queue-size", "x");
	assert_fails("-P/--priority 1.5: expected an integer from -2147483648 to 2147483647", "-T",
	             "wq", "--priority=1.5");
	assert_fails("--work-queue-preferred-connection by_name: expected by_ip, by_hostname or "
	             "by_apparent_ip",
	             "--work-queue-preferred-connection", "by_name");
	assert_int_equal(parse(&o, "-X", "sub", NULL), CLI_DONE);
	assert_string_equal(o.change_dir, "sub");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "--change-directory=sub2", NULL), CLI_DONE);
	assert_string_equal(o.change_dir, "sub2");
	makeflow_opts_clear(&o);

	/* -Z without Work Queue: the port file gets 0, as in CCTools */
	assert_int_equal(parse(&o, "-Z", "port.txt", NULL), CLI_DONE);
	assert_string_equal(o.local_port_file, "port.txt");
	assert_null(o.batch_opts);
	assert_null(o.wq_only);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-T", "dryrun", "--port-file=pf", NULL), CLI_DONE);
	assert_string_equal(o.local_port_file, "pf");
	makeflow_opts_clear(&o);

	/* MAKEFLOW_MAX_LOCAL_JOBS and MAKEFLOW_MAX_REMOTE_JOBS are the defaults of -j and -J */
	setenv("MAKEFLOW_MAX_LOCAL_JOBS", "3", 1);
	setenv("MAKEFLOW_MAX_REMOTE_JOBS", "7", 1);
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	assert_int_equal(o.engine.max_local_jobs, 3);
	assert_int_equal(o.engine.max_remote_jobs, 7);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, "-j", "5", NULL), CLI_DONE);
	assert_int_equal(o.engine.max_local_jobs, 5);
	makeflow_opts_clear(&o);
	setenv("MAKEFLOW_MAX_LOCAL_JOBS", "x", 1);
	assert_fails("option MAKEFLOW_MAX_LOCAL_JOBS: 'x' is not an integer >= 1", "-j", "2");
	unsetenv("MAKEFLOW_MAX_LOCAL_JOBS");
	unsetenv("MAKEFLOW_MAX_REMOTE_JOBS");
}

/* -T names: those of CCTools not built here are not "unknown". */
static void test_batch_types(void **state)
{
	(void)state;
	char want[512];
	snprintf(want, sizeof want,
	         "-T condor: batch system condor is not available in this build (yet); "
	         "available: %s",
	         batch_queue_types());
	assert_fails(want, "-T", "condor");
	snprintf(want, sizeof want,
	         "-T pbs: batch system pbs is not available in this build (yet); available: %s",
	         batch_queue_types());
	assert_fails(want, "--batch-type=pbs");
	snprintf(want, sizeof want, "-T bogus: unknown batch system 'bogus'; available: %s",
	         batch_queue_types());
	assert_fails(want, "-T", "bogus");
	setenv("MAKEFLOW_BATCH_QUEUE_TYPE", "flux", 1);
	snprintf(want, sizeof want,
	         "-T flux: batch system flux is not available in this build (yet); available: %s",
	         batch_queue_types());
	assert_fails(want, "-j", "1");
	unsetenv("MAKEFLOW_BATCH_QUEUE_TYPE");
}

/* -T k8s: --k8s-image and --k8s-namespace become the driver's image and namespace options, and
 * --shared-fs its shared-fs (the directory the pods mount). */
static void test_k8s(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "-T", "k8s", "--k8s-image", "busybox:local", "--k8s-namespace",
	                       "jobs", "--shared-fs", "/data", NULL),
	                 CLI_DONE);
	assert_non_null(o.batch_opts);
	assert_string_equal(o.batch_opts[0], "image=busybox:local");
	assert_string_equal(o.batch_opts[1], "namespace=jobs");
	assert_string_equal(o.batch_opts[2], "shared-fs=/data");
	assert_null(o.batch_opts[3]);
	makeflow_opts_clear(&o);
}

static void test_mesos(void **state)
{
	(void)state;
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "-T", "mesos", "--mesos-master", "m1:5050", NULL), CLI_DONE);
	assert_non_null(o.batch_opts);
	assert_string_equal(o.batch_opts[0], "master=m1:5050");
	assert_null(o.batch_opts[1]);
	makeflow_opts_clear(&o);
	assert_fails("-T mesos: no master given: --mesos-master HOST:PORT", "-T", "mesos");
	assert_fails("--mesos-master: this option needs -T mesos (the batch type is local)",
	             "--mesos-master", "m1:5050");
	assert_fails("--mesos-path: not supported here: -T mesos speaks the Mesos HTTP API itself "
	             "and needs no Mesos Python bindings",
	             "-T", "mesos", "--mesos-master", "m:1", "--mesos-path", "/p");
	assert_fails("--mesos-preload: not supported here: -T mesos loads no Mesos libraries (it "
	             "speaks the HTTP API)",
	             "--mesos-preload", "lib");
	/* -c needs no master: the dead run's framework file names it */
	assert_int_equal(parse(&o, "-T", "mesos", "-c", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
}

/* CCTools options refused with their reason, never taken as unknown nor ignored. */
static void test_refused(void **state)
{
	(void)state;
	assert_fails("--singularity: not available here: Singularity and Apptainer are not "
	             "packaged in Debian 12 (use --docker or CONTAINER=)",
	             "--singularity=img");
	assert_fails("--docker-opt: not supported here: containers are made through the engine's "
	             "API, not the docker command",
	             "--docker-opt", "-v /x:/x");
	/* --docker and --docker-tar are the rules' default container */
	assert_fails("--docker 'not an image': not an image name", "--docker", "not an image");
	struct makeflow_opts d;
	assert_int_equal(parse(&d, "--docker", "debian:12", "--docker-tar", "img.tar", NULL),
	                 CLI_DONE);
	assert_string_equal(d.engine.docker_image, "debian:12");
	assert_string_equal(d.engine.docker_tar, "img.tar");
	makeflow_opts_clear(&d);
	assert_fails("--umbrella-spec: not supported here (Umbrella is out of scope)",
	             "--umbrella-spec", "s.json");
	assert_fails("--amazon-config: not supported here (Amazon EC2 is out of scope)",
	             "--amazon-config", "c");
	/* -a: the workflow's record goes to the catalog under -N, with any batch type */
	assert_fails("-a/--advertise: give -N PROJECT, the name the workflow is advertised under",
	             "-a");
	assert_fails("-C a:b:c: catalog host 'a:b:c': bad port 'b:c'", "-a", "-N", "p", "-C",
	             "a:b:c");
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "-a", "-N", "proj", "-C", "cat:9097", NULL), CLI_DONE);
	assert_int_equal(o.engine.advertise, 1);
	assert_string_equal(o.engine.project, "proj");
	assert_string_equal(o.engine.catalog_hosts, "cat:9097");
	assert_null(o.batch_opts); /* not Work Queue options here */
	makeflow_opts_clear(&o);
	assert_fails("--show-output: not supported here: CCTools 9.9 lists it but gives it no "
	             "meaning (it prints its usage and exits 1); a rule's standard output is "
	             "makeflow's unless the rule redirects it",
	             "--show-output");
	assert_fails("--wq-estimate-capacity: not supported here: the master makes no capacity "
	             "estimate (CCTools keeps the option only for old command lines: its masters "
	             "always estimate)",
	             "-T", "wq", "--wq-estimate-capacity");
	assert_fails("-m/--email: not supported here: no mail is sent; -f FILE writes the summary",
	             "-m", "me@example.org");
	assert_fails("--k8s-image: this option needs -T k8s (the batch type is local)",
	             "--k8s-image", "x");
	assert_fails("--k8s-namespace: this option needs -T k8s (the batch type is wq)", "-T", "wq",
	             "--k8s-namespace", "n");
	assert_fails("--clean=cache removes what --mounts made: give the same --mounts FILE (and "
	             "--cache-dir) as the run",
	             "--clean=cache");
}

/* --argv FILE: a JSON object of options (CCTools). */
static void test_argv_file(void **state)
{
	(void)state;
	FILE *f = fopen("args.json", "w");
	assert_non_null(f);
	fputs("{\"max-local\": 3, \"retry\": true, \"zero-length-error\": false, \"jx\": null,\n"
	      " \"jx-define\": [\"A=1\", \"B=2\"], \"summary-log\": \"s.txt\",\n"
	      " \"MAKEFLOW\": \"other.mf\"}\n",
	      f);
	fclose(f);
	struct makeflow_opts o;
	assert_int_equal(parse(&o, "--argv", "args.json", "-r", "1", NULL), CLI_DONE);
	assert_int_equal(o.engine.max_local_jobs, 3);
	assert_int_equal(o.engine.retries, 1); /* the command line after --argv wins */
	assert_int_equal(o.engine.zero_length_is_missing, 0);
	assert_int_equal(o.src.format, WORKFLOW_JX); /* null: the flag is given */
	assert_string_equal(o.src.jx_defines[0], "A=1");
	assert_string_equal(o.src.jx_defines[1], "B=2");
	assert_string_equal(o.engine.summary_path, "s.txt");
	assert_string_equal(o.src.path, "other.mf");
	makeflow_opts_clear(&o);
	/* a workflow on the command line wins over MAKEFLOW */
	assert_int_equal(parse(&o, "--argv=args.json", "Makeflow", NULL), CLI_DONE);
	assert_string_equal(o.src.path, "Makeflow");
	makeflow_opts_clear(&o);

	f = fopen("args.json", "w");
	fputs("[1]", f);
	fclose(f);
	assert_fails("--argv args.json: expected a JSON object of option names and values",
	             "--argv", "args.json");
	f = fopen("args.json", "w");
	fputs("{\"max-local\": {}}", f);
	fclose(f);
	assert_fails(
	    "--argv args.json: key max-local: expected a string, a number, true, null or a "
	    "list",
	    "--argv", "args.json");
	f = fopen("args.json", "w");
	fputs("{\"max-local\": 0}", f);
	fclose(f);
	assert_fails("option -j: '0' is not an integer >= 1", "--argv", "args.json");
	assert_fails("--argv: write the option's name in full", "--arg", "args.json");
	unlink("args.json");
	assert_fails("--argv nonexist.json: unable to open nonexist.json: No such file or "
	             "directory",
	             "--argv", "nonexist.json");
	f = fopen("args.json", "w");
	fputs("{\"max-local\": 2,\n\"x\" 3}", f);
	fclose(f);
	assert_fails("--argv args.json:2: ':' expected near '3'", "--argv", "args.json");
	unlink("args.json");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),        cmocka_unit_test(test_engine_options),
	    cmocka_unit_test(test_batch_options),   cmocka_unit_test(test_workflow_and_clean),
	    cmocka_unit_test(test_bad_values),      cmocka_unit_test(test_common_options),
	    cmocka_unit_test(test_cctools_options), cmocka_unit_test(test_batch_types),
	    cmocka_unit_test(test_refused),         cmocka_unit_test(test_k8s),
	    cmocka_unit_test(test_mesos),           cmocka_unit_test(test_argv_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
