/* test_work_queue_status_opts.c: unit tests of work_queue_status's command-line parsing: the
 * defaults, what to list, the master as HOST PORT, HOST:PORT or HOST, the credentials, and the
 * exact error text of each bad value, missing value, unknown option and extra argument. */
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
#include "work_queue_status_opts.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "work_queue_status". */
static int parse(struct work_queue_status_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "work_queue_status", ap);
	va_end(ap);
	err[0] = 0;
	return work_queue_status_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct work_queue_status_opts o_;                                                  \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.host);                                                              \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	struct work_queue_status_opts o;
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	assert_string_equal(o.what, "master");
	assert_null(o.host);
	assert_null(o.catalog);
	assert_null(o.project);
	assert_null(o.password);
	assert_null(o.ssl_fingerprint);
	assert_null(o.ssl_ca);
	assert_int_equal(o.ssl_no_verify, 0);
	assert_int_equal(o.json, 0);
	assert_true(o.timeout == 10);
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "-M", "blast", "-C", "cat:9097", "--json", "-t", "2", NULL),
	                 CLI_DONE);
	assert_string_equal(o.project, "blast");
	assert_string_equal(o.catalog, "cat:9097");
	assert_int_equal(o.json, 1);
	assert_true(o.timeout == 2);
	/* -M is a regular expression over the whole project name, as in CCTools */
	assert_true(catalog_project_match(o.project_re, "blast"));
	assert_false(catalog_project_match(o.project_re, "blast2"));
	assert_false(catalog_project_match(o.project_re, "myblast"));
	assert_string_equal(catalog_project_literal(o.project_re), "blast");
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "-M", "bla.*|x", NULL), CLI_DONE);
	assert_true(catalog_project_match(o.project_re, "blast2"));
	assert_true(catalog_project_match(o.project_re, "x"));
	assert_false(catalog_project_match(o.project_re, "xx"));
	assert_false(catalog_project_match(o.project_re, NULL));
	assert_null(catalog_project_literal(o.project_re));
	work_queue_status_opts_clear(&o);
}

static void test_master(void **state)
{
	(void)state;
	struct work_queue_status_opts o;
	assert_int_equal(parse(&o, "-W", "host.example.org", "9200", NULL), CLI_DONE);
	assert_string_equal(o.what, "workers");
	assert_string_equal(o.host, "host.example.org");
	assert_int_equal(o.port, 9200);
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "--tasks", "10.0.0.1:9300", NULL), CLI_DONE);
	assert_string_equal(o.what, "tasks");
	assert_string_equal(o.host, "10.0.0.1");
	assert_int_equal(o.port, 9300);
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "--able-workers", "h", NULL), CLI_DONE);
	assert_string_equal(o.what, "categories");
	assert_string_equal(o.host, "h");
	assert_int_equal(o.port, 9123);
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "--categories", "-T", "-P", "pw", "--ssl-fingerprint", "ab",
	                       "--ssl-ca=ca.pem", "--ssl-no-verify", "h", "1", NULL),
	                 CLI_DONE);
	assert_string_equal(o.what, "tasks");
	assert_string_equal(o.password, "pw");
	assert_string_equal(o.ssl_fingerprint, "ab");
	assert_string_equal(o.ssl_ca, "ca.pem");
	assert_int_equal(o.ssl_no_verify, 1);
	work_queue_status_opts_clear(&o);

	assert_fails("-W, -T and -A need a master: HOST PORT (see --help)", "-W");
	assert_fails("-W, -T and -A need a master: HOST PORT (see --help)", "-A", "-M", "p");
	assert_fails("unexpected argument '2' (see --help)", "h", "1", "2");
	assert_fails("port '99999': expected 1..65535", "h", "99999");
	assert_fails("port '0': expected 1..65535", "h:0");
	assert_fails("port 'x': expected 1..65535", "h", "x");
	/* options end at the first argument */
	assert_fails("unexpected argument '-t' (see --help)", "h", "1", "-t", "5");
}

/* --live and --live-interval: names CCTools does not use (its -l is long output) */
static void test_live(void **state)
{
	(void)state;
	struct work_queue_status_opts o;
	assert_int_equal(parse(&o, "h", "9", NULL), CLI_DONE);
	assert_int_equal(o.live, 0);
	assert_true(o.live_interval == 2);
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "--live", "--live-interval", "0.5", "h:9", NULL), CLI_DONE);
	assert_int_equal(o.live, 1);
	assert_true(o.live_interval == 0.5);
	assert_string_equal(o.host, "h");
	work_queue_status_opts_clear(&o);
	assert_int_equal(parse(&o, "--live", NULL), HTC_EPARSE);
	assert_string_equal(err, "--live needs a master: HOST PORT (see --help)");
	assert_int_equal(parse(&o, "--live", "-l", "h", "9", NULL), HTC_EPARSE);
	assert_string_equal(err, "--live shows tables: not with --json or -l");
	assert_int_equal(parse(&o, "--live", "--live-interval=0", "h", "9", NULL), HTC_EPARSE);
	assert_string_equal(err, "--live-interval 0: expected seconds from 0.1 to 3600");
}

static void test_cctools_options(void **state)
{
	(void)state;
	struct work_queue_status_opts o;
	assert_int_equal(parse(&o, "-Q", "-l", "-M", "p", "--where", "tasks_waiting > 0", NULL),
	                 CLI_DONE);
	assert_string_equal(o.what, "master");
	assert_int_equal(o.json, 1);
	json_t *r = json_pack("{s:i}", "tasks_waiting", 2);
	assert_true(catalog_expr_match(o.where, r));
	json_decref(r);
	work_queue_status_opts_clear(&o);
	assert_null(o.where);
	assert_fails("--where a =: expression: unexpected '=' at byte 2", "--where", "a =");
	assert_fails("--where filters the catalog's listing: not with HOST PORT", "--where", "true",
	             "h", "1");
	assert_fails("-R: a CCTools work_queue_status option that is not supported here "
	             "(doc/compatibility.md)",
	             "-R");
	assert_fails("--capacity: a CCTools work_queue_status option that is not supported here "
	             "(doc/compatibility.md)",
	             "--capacity");
	/* -O (--debug-rotate-max) takes a size, as in CCTools */
	assert_fails("-O big: expected a size such as 10M (0: never rotate)", "-O", "big");

	assert_int_equal(parse(&o, "-O", "1M", "--debug-rotate-max=0", NULL), CLI_DONE);
	work_queue_status_opts_clear(&o);
}

static void test_common_options(void **state)
{
	(void)state;
	struct work_queue_status_opts o;
	assert_fails("-t 0: expected a number of seconds in (0, 3600]", "-t", "0");
	assert_fails("-t x: expected a number of seconds in (0, 3600]", "--timeout=x", "h", "1");
	assert_int_equal(parse(&o, "-d", "wq", "--debug=none", NULL), CLI_DONE);
	work_queue_status_opts_clear(&o);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x");
	assert_fails("unknown option --bogus (see --help)", "--bogus");
	assert_fails("unknown option -x (see --help)", "-x", "h", "1");
	assert_fails("unknown option --json=yes (see --help)", "--json=yes");
	assert_fails("option -M needs a value (see --help)", "-M");
	assert_fails("-M: project name pattern \"a(b\": Unmatched ( or \\(", "-M", "a(b");
	assert_fails("option --ssl-ca needs a value (see --help)", "--ssl-ca");

	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rv = parse(&o, "--version", NULL);
	int rh = parse(&o, "-W", "-h", "h", "1", "2", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
	assert_null(o.host);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	work_queue_status_opts_usage(m, "wqs");
	fclose(m);
	assert_non_null(strstr(text, "Usage: wqs [options]                  masters known to the "
	                             "catalog\n"));
	assert_non_null(
	    strstr(text, "  -A, --able-workers, --categories  the master's categories"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),       cmocka_unit_test(test_master),
	    cmocka_unit_test(test_live),           cmocka_unit_test(test_cctools_options),
	    cmocka_unit_test(test_common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
