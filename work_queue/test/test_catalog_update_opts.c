/* test_catalog_update_opts.c: unit tests of catalog_update's command-line parsing: the
 * defaults, the send mode, the timeout, the one FILE argument and the host list, and the exact
 * error text of each bad value, missing value and unknown option. */
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

#include "catalog_update_opts.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "catalog_update". */
static int parse(struct catalog_update_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "catalog_update", ap);
	va_end(ap);
	err[0] = 0;
	return catalog_update_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct catalog_update_opts o_;                                                     \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
	} while (0)

static void test_defaults_and_options(void **state)
{
	(void)state;
	struct catalog_update_opts o;
	assert_int_equal(parse(&o, "rec.json", NULL), CLI_DONE);
	assert_null(o.catalog);
	assert_int_equal(o.mode, CATALOG_SEND_AUTO);
	assert_true(o.timeout == 5);
	assert_string_equal(o.path, "rec.json");
	assert_int_equal(parse(&o, "-C", "c1,c2:9000", "--udp", "-t", "0.5", "-", NULL), CLI_DONE);
	assert_string_equal(o.catalog, "c1,c2:9000");
	assert_int_equal(o.mode, CATALOG_SEND_UDP);
	assert_true(o.timeout == 0.5);
	assert_string_equal(o.path, "-");
	assert_int_equal(parse(&o, "--udp", "--http", "--catalog=h", "--timeout=9", "f", NULL),
	                 CLI_DONE);
	assert_int_equal(o.mode, CATALOG_SEND_HTTP);
	assert_true(o.timeout == 9);
	/* options after the file are options too */
	assert_int_equal(parse(&o, "f", "--udp", NULL), CLI_DONE);
	assert_int_equal(o.mode, CATALOG_SEND_UDP);
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("-t 0: expected a number of seconds in (0, 3600]", "-t", "0", "-");
	assert_fails("-t x: expected a number of seconds in (0, 3600]", "--timeout=x", "-");
	assert_fails("expected one FILE (or - for standard input); see --help", "--udp");
	assert_fails("expected one FILE (or - for standard input); see --help", "a", "b");
	assert_fails("-f FILE and a FILE argument: give one record", "-f", "a", "b");
	/* the CCTools form: -c CATALOG -f FILE */
	struct catalog_update_opts o;
	assert_int_equal(parse(&o, "-c", "h:9", "-f", "rec.json", NULL), CLI_DONE);
	assert_string_equal(o.catalog, "h:9");
	assert_string_equal(o.path, "rec.json");
	assert_int_equal(parse(&o, "--file=r2.json", NULL), CLI_DONE);
	assert_string_equal(o.path, "r2.json");
	assert_fails("catalog host 'bad:x:y': bad port 'x:y'", "-C", "bad:x:y", "f");
}

static void test_common_options(void **state)
{
	(void)state;
	struct catalog_update_opts o;
	assert_int_equal(parse(&o, "-d", "catalog", "--debug=none", "f", NULL), CLI_DONE);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus", "f");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x", "f");
	assert_fails("unknown option --bogus (see --help)", "--bogus", "f");
	assert_fails("unknown option -x (see --help)", "-x", "f");
	assert_fails("option -C needs a value (see --help)", "f", "-C");
	assert_fails("option --timeout needs a value (see --help)", "--timeout");

	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "a", "b", "--help", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	catalog_update_opts_usage(m, "cu");
	fclose(m);
	assert_non_null(strstr(text, "Usage: cu [options] FILE|-\n"));
	assert_non_null(strstr(text, "(default: UDP below 1200 bytes, else HTTP)"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_and_options),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
