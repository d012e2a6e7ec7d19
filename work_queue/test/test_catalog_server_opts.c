/* test_catalog_server_opts.c: unit tests of catalog_server's command-line parsing: the defaults,
 * every option's value and range, and the exact error text of each bad value, missing value,
 * unknown option and extra argument. */
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

#include "catalog_server_opts.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "ts_argv.h"
#include "banned.h"

static char err[1024];

/* Parses the NULL-terminated words after "catalog_server". */
static int parse(struct catalog_server_opts *o, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, o);
	int argc = ts_argv(argv, 64, "catalog_server", ap);
	va_end(ap);
	err[0] = 0;
	return catalog_server_opts_parse(argc, argv, o, err, sizeof err);
}

/* Expects a parse error with exactly the text WANT. */
#define assert_fails(want, ...)                                                                    \
	do {                                                                                       \
		struct catalog_server_opts o_;                                                     \
		assert_int_equal(parse(&o_, __VA_ARGS__, NULL), HTC_EPARSE);                       \
		assert_string_equal(err, want);                                                    \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	struct catalog_server_opts o;
	assert_int_equal(parse(&o, NULL), CLI_DONE);
	assert_int_equal(o.port, 9097);
	assert_null(o.port_file);
	assert_int_equal(o.store.lifetime_s, CATALOG_DEFAULT_LIFETIME);
	assert_int_equal(o.store.max_records, CATALOG_DEFAULT_MAX_RECORDS);
	assert_int_equal(o.store.max_bytes, CATALOG_DEFAULT_MAX_BYTES);
	assert_int_equal(o.max_connections, 256);
	assert_int_equal(o.idle_timeout_ms, 5000);
}

static void test_options(void **state)
{
	(void)state;
	struct catalog_server_opts o;
	assert_int_equal(parse(&o, "-p", "0", "-Z", "port.txt", "-l", "60", "-T", "7", "-S",
	                       "--max-records", "5", "--max-bytes=2048", "--max-connections", "3",
	                       "--idle-timeout", "7", NULL),
	                 CLI_DONE);
	assert_int_equal(o.port, 0);
	assert_string_equal(o.port_file, "port.txt");
	assert_int_equal(o.store.lifetime_s, 60);
	assert_int_equal(o.request_timeout_ms, 7000);
	assert_int_equal(o.store.max_records, 5);
	assert_int_equal(o.store.max_bytes, 2048);
	assert_int_equal(o.max_connections, 3);
	assert_int_equal(o.idle_timeout_ms, 7000);
	assert_int_equal(parse(&o, "--port=65535", "--port-file", "p", "--lifetime=31536000", NULL),
	                 CLI_DONE);
	assert_int_equal(o.port, 65535);
	assert_int_equal(o.store.lifetime_s, 31536000);
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_fails("-p x: expected an integer between 0 and 65535", "-p", "x");
	assert_fails("-p 70000: expected an integer between 0 and 65535", "--port", "70000");
	assert_fails("-Z: empty file name", "-Z", "");
	assert_fails("-l 0: expected an integer between 1 and 31536000", "-l", "0");
	assert_fails("-T 0: expected an integer between 1 and 3600", "-T", "0");
	assert_fails("-H: a CCTools catalog_server option that is not supported here "
	             "(doc/compatibility.md)",
	             "-H", "dir");
	assert_fails("--update-host: a CCTools catalog_server option that is not supported here "
	             "(doc/compatibility.md)",
	             "--update-host", "h");
	assert_fails("-b: a CCTools catalog_server option that is not supported here "
	             "(doc/compatibility.md)",
	             "-b");
	assert_fails("--max-records 0: expected an integer between 1 and 10000000", "--max-records",
	             "0");
	assert_fails("--max-bytes 1: expected an integer between 1024 and 4611686018427387903",
	             "--max-bytes", "1");
	assert_fails("--max-connections 0: expected an integer between 1 and 100000",
	             "--max-connections", "0");
	assert_fails("--idle-timeout 0: expected an integer between 1 and 3600", "--idle-timeout",
	             "0");
	assert_fails("unexpected argument 'extra' (see --help)", "extra");
	assert_fails("unexpected argument 'extra' (see --help)", "extra", "-p", "1");
}

static void test_common_options(void **state)
{
	(void)state;
	struct catalog_server_opts o;
	assert_int_equal(parse(&o, "-d", "catalog", "--debug=none", NULL), CLI_DONE);
	char want[512];
	snprintf(want, sizeof want, "-d bogus: unknown subsystem (valid: %s)", debug_flags_help());
	assert_fails(want, "-d", "bogus");
	assert_fails("-o /nonexistent/x: No such file or directory", "-o", "/nonexistent/x");
	assert_fails("unknown option --bogus (see --help)", "--bogus");
	assert_fails("unknown option -x (see --help)", "-x");
	assert_fails("option -p needs a value (see --help)", "-p");
	assert_fails("option --max-bytes needs a value (see --help)", "--max-bytes");

	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	int null = open("/dev/null", O_WRONLY);
	dup2(null, STDOUT_FILENO);
	close(null);
	int rv = parse(&o, "-v", NULL);
	int rh = parse(&o, "--help", "extra", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rv, CLI_EXIT);
	assert_int_equal(rh, CLI_EXIT);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	catalog_server_opts_usage(m, "cs");
	fclose(m);
	assert_non_null(strstr(text, "Usage: cs [options]\n"));
	assert_non_null(strstr(text, "  -p, --port=PORT            TCP and UDP port (default 9097; "
	                             "0 = any free port)\n"));
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
