/* test_worker_opts.c: unit tests of work_queue_worker's command-line parsing: defaults, every
 * option's value forms and units, the master given as HOST PORT, HOST:PORT or -M, and the
 * error text for each kind of bad value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog_project.h"
#include "cli.h"
#include "htc_error.h"
#include "worker_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[256];

/* Parses the NULL-terminated words after "work_queue_worker". */
static int parse(struct worker_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "work_queue_worker", ap);
	va_end(ap);
	err[0] = 0;
	return worker_opts_parse(argc, argv, o, err, sizeof err);
}

static void test_defaults_host_port(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "master.example.org", "9200", NULL), CLI_DONE);
	assert_string_equal(o.host, "master.example.org");
	assert_int_equal(o.port, 9200);
	assert_null(o.project);
	assert_true(o.cores < 0);
	assert_int_equal(o.memory_mb, -1);
	assert_int_equal(o.disk_mb, -1);
	assert_int_equal(o.gpus, -1);
	assert_int_equal(o.idle_timeout, 900);
	assert_int_equal(o.connect_timeout, 900);
	assert_int_equal(o.wall_time, 0);
	assert_false(o.ssl);
	assert_false(o.single_shot);
	assert_int_equal(o.seccomp, RMON_SECCOMP_DEFAULT);
	worker_opts_clear(&o);
	static const char *const profiles[] = {"off", "default", "strict", "nonet"};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(parse(&o, "--seccomp", profiles[i], "h", "9", NULL), CLI_DONE);
		assert_int_equal((int)o.seccomp, i);
		worker_opts_clear(&o);
	}
	assert_int_equal(parse(&o, "--seccomp", "lax", "h", "9", NULL), HTC_EPARSE);
	assert_string_equal(err,
	                    "--seccomp: \"lax\" is not a profile (default, strict, nonet, off)");

	/* no port (an empty $(cat port)), an empty or a bad one: refused, never a default */
	assert_int_equal(parse(&o, "localhost", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "no port given after \"localhost\""));
	assert_int_equal(parse(&o, "localhost", "", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "port \"\": must be 1..65535"));
	assert_int_equal(parse(&o, "localhost", "0", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "localhost", "12ab", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "localhost:", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "10.0.0.5:9300", NULL), CLI_DONE);
	assert_string_equal(o.host, "10.0.0.5");
	assert_int_equal(o.port, 9300);
	worker_opts_clear(&o);
}

static void test_project(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "-M", "blast", "-C", "cat1:9097,cat2:9097", NULL), CLI_DONE);
	assert_string_equal(o.project, "blast");
	assert_string_equal(o.catalog_hosts, "cat1:9097,cat2:9097");
	assert_null(o.host);
	/* a regular expression over the whole project name, as in CCTools */
	assert_true(catalog_project_match(o.project_re, "blast"));
	assert_false(catalog_project_match(o.project_re, "blast2"));
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "-M", "bla(st|ck)[0-9]*", NULL), CLI_DONE);
	assert_true(catalog_project_match(o.project_re, "black42"));
	assert_false(catalog_project_match(o.project_re, "xblack"));
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "-M", "a[", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "-M: project name pattern \"a[\""));
	assert_int_equal(parse(&o, "--master-name=blast", "host", "9123", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "not both"));
	assert_null(o.project); /* cleared on error */
}

static void test_resources_and_units(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "--cores", "2.5", "--memory", "4G", "--disk=10000", "--gpus",
	                       "1", "h", "1", NULL),
	                 CLI_DONE);
	assert_true(o.cores == 2.5);
	assert_int_equal(o.memory_mb, 4096);
	assert_int_equal(o.disk_mb, 10000);
	assert_int_equal(o.gpus, 1);
	worker_opts_clear(&o);

	assert_int_equal(parse(&o, "--memory", "lots", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "--memory: \"lots\" is not a size (e.g. 4000, 4G)");
	assert_int_equal(parse(&o, "--cores=0", "h", "9123", NULL), CLI_DONE);
	assert_true(o.cores == -1); /* 0 measures, as in CCTools */
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--cores=-1", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "--cores: \"-1\" is not a number of cores (0: measure)");
	assert_int_equal(parse(&o, "--gpus", "-1", "h", "9123", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "--disk", "-5", "h", "9123", NULL), HTC_EPARSE);
}

static void test_durations(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "-t", "15m", "--connect-timeout", "1h", "--wall-time", "2d", "h",
	                       "9123", NULL),
	                 CLI_DONE);
	assert_int_equal(o.idle_timeout, 900);
	assert_int_equal(o.connect_timeout, 3600);
	assert_int_equal(o.wall_time, 172800);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "-t60", "h", "9123", NULL), CLI_DONE);
	assert_int_equal(o.idle_timeout, 60);
	assert_int_equal(o.connect_timeout, 60); /* -t sets both, as in CCTools */
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--idle-timeout", "70", "h", "9123", NULL), CLI_DONE);
	assert_int_equal(o.idle_timeout, 70);
	assert_int_equal(o.connect_timeout, WORKER_DEFAULT_CONNECT_TIMEOUT);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "-tsoon", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "-t: \"soon\" is not a duration (e.g. 900, 15m, 2h)");
	assert_int_equal(parse(&o, "--timeout", "0", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "--timeout: the duration must be above 0");
}

static void test_tls_options(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(
	    parse(&o, "--ssl-fingerprint",
	          "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:"
	          "89:AB:CD:EF:01:23:45:67:89",
	          "h", "9123", NULL),
	    CLI_DONE);
	assert_true(o.ssl);
	assert_string_equal(o.ssl_fingerprint,
	                    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--ssl-fingerprint", "abcd", "h", "9123", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "64 hex digits"));
	assert_int_equal(parse(&o, "--ssl-no-verify", "--ssl-ca", "ca.pem", "h", "9123", NULL),
	                 HTC_EPARSE);
	assert_int_equal(parse(&o, "--ssl-ca", "ca.pem", "-P", "pw", "h", "9123", NULL), CLI_DONE);
	assert_true(o.ssl);
	assert_string_equal(o.ssl_ca, "ca.pem");
	assert_string_equal(o.password_file, "pw");
	worker_opts_clear(&o);
}

static void test_features_docker_debug(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "--feature", "gpu", "--feature", "big-mem", "--docker-preserve",
	                       "debian:12", "-d", "worker", "-d", "net", "-o", "w.log",
	                       "--single-shot", "--keep-cache", "-s", "/tmp/w", "h", "9123", NULL),
	                 CLI_DONE);
	assert_int_equal(o.feature_count, 2);
	assert_string_equal(o.features[1], "big-mem");
	assert_string_equal(o.docker_image, "debian:12");
	assert_true(o.docker_preserve);
	assert_string_equal(o.debug_flags, "worker,net");
	assert_string_equal(o.debug_file, "w.log");
	assert_true(o.single_shot);
	assert_int_equal(o.exit_after_tasks, 0);
	assert_true(o.keep_cache);
	assert_false(o.pin_cores);
	assert_false(o.proc_events);
	assert_string_equal(o.workdir, "/tmp/w");
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--pin-cores", "--proc-events", "h", "9123", NULL), CLI_DONE);
	assert_true(o.pin_cores);
	assert_true(o.proc_events);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--exit-after-tasks", "3", "h", "9123", NULL), CLI_DONE);
	assert_int_equal(o.exit_after_tasks, 3);
	assert_false(o.single_shot);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--exit-after-tasks", "0", "h", "9123", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "--exit-after-tasks"));
	assert_int_equal(parse(&o, "--feature", "a b", "h", "9123", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "is not a label"));
}

static void test_cctools_options(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "-N", "proj", "--parent-death", NULL), CLI_DONE);
	assert_string_equal(o.project, "proj");
	assert_true(o.parent_death);
	worker_opts_clear(&o);
	/* several masters in one argument, as in CCTools: tried in turn */
	assert_int_equal(parse(&o, "h1:1;h2:2;;", NULL), CLI_DONE);
	assert_int_equal(o.nlist, 2);
	assert_string_equal(o.list_hosts[0], "h1");
	assert_int_equal(o.list_ports[0], 1);
	assert_string_equal(o.list_hosts[1], "h2");
	assert_int_equal(o.list_ports[1], 2);
	assert_string_equal(o.host, "h1");
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "h1:1;h2", NULL), HTC_EPARSE);
	assert_string_equal(err, "\"h2\" in \"h1:1;h2\": expected HOST:PORT (port 1..65535)");
	assert_int_equal(parse(&o, "h1:1;h2:0", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, ";;", NULL), HTC_EPARSE);
	assert_string_equal(err, "\";;\": no HOST:PORT in it");
	assert_int_equal(parse(&o, "--manager-name=p2", NULL), CLI_DONE);
	assert_string_equal(o.project, "p2");
	worker_opts_clear(&o);
	const char *refused[][2] = {
	    {"--foreman", NULL},
	    {"-f", "x"},
	    {"-Z", "pf"},
	    {"-F", "3"},
	    {"-w", "64k"},
	    {"-i", "1"},
	    {"-b", "60"},
	    {"-A", "arm"},
	    {"-O", "os"},
	    {"--tlq", "1"},
	    {"--disable-symlinks", NULL},
	    {"--bandwidth", "1M"},
	    {"--volatility", "0.1"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		int r = refused[i][1] ? parse(&o, refused[i][0], refused[i][1], "h", "1", NULL)
		                      : parse(&o, refused[i][0], "h", "1", NULL);
		assert_int_equal(r, HTC_EPARSE);
		assert_non_null(strstr(err, "a CCTools work_queue_worker option that is not "
		                            "supported here"));
	}
}

/* --debug-rotate-max: CCTools' meaning and default (10M; 0 never rotates). */
static void test_debug_rotate_max(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "h", "1", NULL), CLI_DONE);
	assert_int_equal(o.debug_rotate_max, 10 * 1024 * 1024);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--debug-rotate-max", "0", "h", "1", NULL), CLI_DONE);
	assert_int_equal(o.debug_rotate_max, 0);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--debug-rotate-max=2M", "h", "1", NULL), CLI_DONE);
	assert_int_equal(o.debug_rotate_max, 2 * 1024 * 1024);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--debug-rotate-max", "lots", "h", "1", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "--debug-rotate-max lots: expected a size"));
}

/* Elasticity: defaults (growth and throttle off, +256 / -128 MB, 10 s, 1024 MB/s), values and
 * the error of each bad value. */
static void test_elasticity(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "h", "1", NULL), CLI_DONE);
	assert_false(o.memory_grow);
	assert_false(o.memory_throttle);
	assert_int_equal(o.grow_step_up_mb, 256);
	assert_int_equal(o.grow_step_down_mb, 128);
	assert_int_equal(o.shrink_cooldown_s, 10);
	assert_int_equal(o.throttle_rate_mbps, 1024);
	assert_false(o.cpu_grow);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--memory-grow", "on", "--grow-step-up", "1G",
	                       "--grow-step-down", "0", "--shrink-cooldown", "1m",
	                       "--memory-throttle=yes", "--memory-throttle-rate", "200",
	                       "--cpu-grow", "on", "h", "1", NULL),
	                 CLI_DONE);
	assert_true(o.memory_grow);
	assert_true(o.memory_throttle);
	assert_int_equal(o.grow_step_up_mb, 1024);
	assert_int_equal(o.grow_step_down_mb, 0);
	assert_int_equal(o.shrink_cooldown_s, 60);
	assert_int_equal(o.throttle_rate_mbps, 200);
	assert_true(o.cpu_grow);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--memory-grow", "maybe", "h", "1", NULL), HTC_EPARSE);
	assert_string_equal(err, "--memory-grow: \"maybe\" is neither on nor off");
	assert_int_equal(parse(&o, "--grow-step-up", "0", "h", "1", NULL), HTC_EPARSE);
	assert_string_equal(err, "--grow-step-up: \"0\" is not a size in MB above 0");
	assert_int_equal(parse(&o, "--grow-step-down", "-5", "h", "1", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "--shrink-cooldown", "soon", "h", "1", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "--memory-throttle-rate", "0", "h", "1", NULL), HTC_EPARSE);
	assert_string_equal(err, "--memory-throttle-rate: \"0\" is not a rate in MB/s above 0");
	/* where a task's own container's cgroup is */
	assert_int_equal(parse(&o, "h", "1", NULL), CLI_DONE);
	assert_false(o.container_cgroups_engine);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--container-cgroups", "engine", "h", "1", NULL), CLI_DONE);
	assert_true(o.container_cgroups_engine);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--container-cgroups", "task", "h", "1", NULL), CLI_DONE);
	assert_false(o.container_cgroups_engine);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--container-cgroups", "docker", "h", "1", NULL), HTC_EPARSE);
	assert_string_equal(err, "--container-cgroups: \"docker\" is neither task nor engine");
}

static void test_command_line_errors(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, NULL), HTC_EPARSE);
	assert_string_equal(err, "no master given: use HOST PORT or -M PROJECT (see --help)");
	assert_int_equal(parse(&o, "h", "99999", NULL), HTC_EPARSE);
	assert_string_equal(err, "port \"99999\": must be 1..65535");
	assert_int_equal(parse(&o, "h:0", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "h", "1", "extra", NULL), HTC_EPARSE);
	assert_string_equal(err, "unexpected argument \"extra\" after HOST PORT");
	assert_int_equal(parse(&o, "--bogus", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "unknown option --bogus (see --help)");
	assert_int_equal(parse(&o, "-x", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "unknown option -x (see --help)");
	assert_int_equal(parse(&o, "h", "-t", NULL), HTC_EPARSE);
	assert_int_equal(parse(&o, "-t", NULL), HTC_EPARSE);
	assert_string_equal(err, "option -t needs a value (see --help)");
	/* a long option without a value given one is named as given */
	assert_int_equal(parse(&o, "--ssl=x", "h", "9123", NULL), HTC_EPARSE);
	assert_string_equal(err, "unknown option --ssl=x (see --help)");
	assert_int_equal(parse(&o, "--connect-timeout", NULL), HTC_EPARSE);
	assert_string_equal(err, "option --connect-timeout needs a value (see --help)");
	/* help and the version are printed by cli.h (away from the report here) */
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rh = parse(&o, "--help", NULL);
	int rv = parse(&o, "-M", "p", "-v", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rh, CLI_EXIT);
	assert_int_equal(rv, CLI_EXIT);
	assert_null(o.project);
	assert_non_null(strstr(worker_opts_usage(), "--single-shot"));
}

static void test_shared_cache(void **state)
{
	(void)state;
	struct worker_opts o;
	assert_int_equal(parse(&o, "h", "9", NULL), CLI_DONE);
	assert_null(o.shared_cache);
	assert_int_equal(o.shared_cache_limit, 0);
	worker_opts_clear(&o);
	assert_int_equal(
	    parse(&o, "--shared-cache", "/scratch/wq", "--shared-cache-size", "2G", "h", "9", NULL),
	    CLI_DONE);
	assert_string_equal(o.shared_cache, "/scratch/wq");
	assert_int_equal(o.shared_cache_limit, 2048);
	worker_opts_clear(&o);
	assert_int_equal(parse(&o, "--shared-cache", "", "h", "9", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "--shared-cache: the directory is empty"));
	assert_int_equal(
	    parse(&o, "--shared-cache", "d", "--shared-cache-size", "lots", "h", "9", NULL),
	    HTC_EPARSE);
	assert_non_null(strstr(err, "\"lots\" is not a size"));
	assert_int_equal(parse(&o, "--shared-cache-size", "10", "h", "9", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "--shared-cache-size needs --shared-cache DIR"));
	/* lease locks (the NFS way) */
	assert_int_equal(
	    parse(&o, "--shared-cache", "/s", "--shared-cache-leases", "20", "h", "9", NULL),
	    CLI_DONE);
	assert_true(o.shared_cache_leases == 20);
	worker_opts_clear(&o);
	assert_int_equal(
	    parse(&o, "--shared-cache", "/s", "--shared-cache-leases", "0.5", "h", "9", NULL),
	    HTC_EPARSE);
	assert_non_null(strstr(err, "\"0.5\" is not a number of seconds (1 .. 3600)"));
	assert_int_equal(parse(&o, "--shared-cache-leases", "30", "h", "9", NULL), HTC_EPARSE);
	assert_non_null(strstr(err, "--shared-cache-leases needs --shared-cache DIR"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_host_port),
	    cmocka_unit_test(test_project),
	    cmocka_unit_test(test_resources_and_units),
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_tls_options),
	    cmocka_unit_test(test_features_docker_debug),
	    cmocka_unit_test(test_cctools_options),
	    cmocka_unit_test(test_debug_rotate_max),
	    cmocka_unit_test(test_elasticity),
	    cmocka_unit_test(test_command_line_errors),
	    cmocka_unit_test(test_shared_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
