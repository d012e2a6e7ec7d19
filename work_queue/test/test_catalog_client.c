/* test_catalog_client.c: unit tests of the catalog client library (catalog_client.h): host list
 * parsing and the CATALOG_HOST default, and a query and an update against a closed port that
 * must fail quickly with a clear error rather than hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catalog_client.h"
#include "htc_error.h"
#include "timeutil.h"
#include "banned.h"

static void test_hosts(void **state)
{
	(void)state;
	struct catalog_host h[CATALOG_MAX_HOSTS];
	int n;
	char *err = NULL;
	assert_int_equal(catalog_hosts_parse("a.example.org:1234, b ,[::1]:5,[fe80::1]", h,
	                                     CATALOG_MAX_HOSTS, &n, &err),
	                 0);
	assert_int_equal(n, 4);
	assert_string_equal(h[0].host, "a.example.org");
	assert_int_equal(h[0].port, 1234);
	assert_string_equal(h[1].host, "b");
	assert_int_equal(h[1].port, CATALOG_DEFAULT_PORT);
	assert_string_equal(h[2].host, "::1");
	assert_int_equal(h[2].port, 5);
	assert_string_equal(h[3].host, "fe80::1");
	assert_int_equal(h[3].port, CATALOG_DEFAULT_PORT);

	const char *bad[] = {"",     "a,,b", "a:0",    "a:65536", "a:x", "a b:1",
	                     "[::1", "[]:1", "[::1]x", "a:1:2",   ",a"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err = NULL;
		int rc = catalog_hosts_parse(bad[i], h, CATALOG_MAX_HOSTS, &n, &err);
		if (rc >= 0)
			fail_msg("'%s' was accepted", bad[i]);
		assert_non_null(err);
		assert_int_equal(n, 0);
		free(err);
	}
	assert_int_equal(catalog_hosts_parse("a,b,c", h, 2, &n, &err), HTC_ELIMIT);
	free(err);

	unsetenv("CATALOG_HOST");
	assert_string_equal(catalog_hosts_default(), "localhost:9097");
	setenv("CATALOG_HOST", "", 1);
	assert_string_equal(catalog_hosts_default(), "localhost:9097");
	setenv("CATALOG_HOST", "x:1,y:2", 1);
	assert_int_equal(catalog_hosts_parse(NULL, h, CATALOG_MAX_HOSTS, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(h[1].host, "y");
	unsetenv("CATALOG_HOST");
}

/* A port on 127.0.0.1 nobody listens on (bound, then closed). */
static int dead_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sin;
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

static void test_unreachable(void **state)
{
	(void)state;
	char list[64];
	snprintf(list, sizeof list, "127.0.0.1:%d", dead_port());
	char *err = NULL;
	int64_t t0 = time_monotonic_us();
	json_t *a = catalog_query(list, NULL, 3, &err);
	assert_null(a);
	assert_non_null(err);
	if (!strstr(err, "no catalog server answered") || !strstr(err, list))
		fail_msg("unexpected error: %s", err);
	free(err);
	assert_true(time_monotonic_us() - t0 < 2000000);

	const char *rec = "{\"type\":\"x\",\"name\":\"h\",\"port\":1}";
	err = NULL;
	assert_true(catalog_update_send(list, rec, strlen(rec), CATALOG_SEND_HTTP, 3, &err) < 0);
	assert_non_null(err);
	free(err);
	/* UDP cannot tell: the datagram left. */
	err = NULL;
	assert_int_equal(catalog_update_send(list, rec, strlen(rec), CATALOG_SEND_UDP, 3, &err), 0);
	assert_null(err);
	/* An unresolvable name. */
	a = catalog_query("no-such-host.invalid:1", NULL, 3, &err);
	assert_null(a);
	assert_non_null(strstr(err, "resolve"));
	free(err);
	/* A bad list. */
	a = catalog_query("a,,b", NULL, 3, &err);
	assert_null(a);
	assert_non_null(strstr(err, "empty entry"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hosts),
	    cmocka_unit_test(test_unreachable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
