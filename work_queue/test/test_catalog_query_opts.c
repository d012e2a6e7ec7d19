/* test_catalog_query_opts.c: unit tests of catalog_query's command-line parsing: the defaults,
 * the filter built from -N, --type and -w, the host list, and the exact error text of each bad
 * value, missing value, unknown option and extra argument. */
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

#include "catalog_query_opts.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "catalog_query". */
static int parse(struct catalog_query_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "catalog_query", ap);
	va_end(ap);
	err[0] = 0;
	return catalog_query_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct catalog_query_opts o_;                                                      \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
		assert_null(o_.filter);                                                            \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	struct catalog_query_opts o;
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	assert_null(o.catalog);
	assert_non_null(o.filter);
	assert_int_equal(catalog_filter_count(o.filter), 0);
	assert_int_equal(o.table, 0); /* JSON, as CCTools prints it */
	assert_null(o.where);
	assert_true(o.timeout == 10);
	catalog_query_opts_clear(&o);
	assert_null(o.filter);
}

static void test_options(void **state)
{
	(void)state;
	struct catalog_query_opts o;
	assert_int_equal(parse(&o, "-C", "c1:9097,c2", "-N", "blast", "--type", "wq_master",
	                       "--field", "owner=ann", "--field=x=a=b", "--table", "-t", "2.5",
	                       NULL),
	                 CLI_DONE);
	assert_string_equal(o.catalog, "c1:9097,c2");
	assert_int_equal(o.table, 1);
	assert_true(o.timeout == 2.5);
	char *q = catalog_filter_to_query(o.filter);
	assert_string_equal(q, "project=blast&type=wq_master&owner=ann&x=a%3Db");
	free(q);
	catalog_query_opts_clear(&o);
	assert_int_equal(parse(&o, "--project=p", "--catalog", "h", "--timeout=3600", NULL),
	                 CLI_DONE);
	assert_true(o.timeout == 3600);
	catalog_query_opts_clear(&o);
	/* CCTools: -c is the catalog, -w a JX expression (repeated: all of them) */
	assert_int_equal(
	    parse(&o, "-c", "h:1", "-w", "workers > 1", "--where=type==\"wq_master\"", NULL),
	    CLI_DONE);
	assert_string_equal(o.catalog, "h:1");
	json_t *r = json_pack("{s:i,s:s}", "workers", 2, "type", "wq_master");
	assert_true(catalog_expr_match(o.where, r));
	json_object_set_new(r, "type", json_string("wq_factory"));
	assert_false(catalog_expr_match(o.where, r));
	json_decref(r);
	catalog_query_opts_clear(&o);
	assert_null(o.where);
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("--field nokv: expected KEY=VALUE", "--field", "nokv");
	assert_fails("--where project=x: expression: unexpected '=' at byte 7", "-w", "project=x");
	assert_fails("-O: a CCTools catalog_query option that is not supported here "
	             "(doc/compatibility.md)",
	             "-O", "10M");
	assert_fails("-t 0: expected a number of seconds in (0, 3600]", "-t", "0");
	assert_fails("-t x: expected a number of seconds in (0, 3600]", "--timeout", "x");
	assert_fails("-t 3601: expected a number of seconds in (0, 3600]", "-t", "3601");
	assert_fails("unexpected argument 'extra' (see --help)", "extra");
	/* the filter and the host list say what is wrong with them */
	assert_fails("bad filter key '' (expected 1..64 of [A-Za-z0-9_.-])", "--field", "=v");
	assert_fails("catalog host 'bad:host:x': bad port 'host:x'", "-C", "bad:host:x");
}

static void test_common_options(void **state)
{
	(void)state;
	struct catalog_query_opts o;
	assert_int_equal(parse(&o, "-d", "catalog", "--debug=none", NULL), CLI_DONE);
	catalog_query_opts_clear(&o);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x");
	assert_fails("unknown option --bogus (see --help)", "--bogus");
	assert_fails("unknown option -x (see --help)", "-N", "p", "-x");
	assert_fails("unknown option --json=1 (see --help)", "--json=1");
	assert_fails("option -w needs a value (see --help)", "-w");

	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "-N", "p", "-h", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);
	assert_null(o.filter);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	catalog_query_opts_usage(m, "cq");
	fclose(m);
	assert_non_null(strstr(text, "Usage: cq [options]\nLists the records of a catalog "
	                             "server.\n"));
	assert_non_null(strstr(text, "Exit status: 0 answered"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
