/* test_wq_foreign.c: unit tests of the recognition of CCTools peers (wq_foreign.h): a CCTools
 * worker's first line, whole or cut, and a CCTools master's status answer, whole or cut, against
 * other bytes that must not be taken for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wq_foreign.h"
#include "banned.h"

static bool worker_line(const char *s, char *text)
{
	return wq_foreign_cctools_worker((const uint8_t *)s, strlen(s), text, 300);
}

static void test_cctools_worker(void **state)
{
	(void)state;
	char text[300];
	assert_true(worker_line("workqueue 9 vm Linux x86_64 8.0.0\ninfo worker-id w-1\n", text));
	assert_non_null(strstr(text, "version 8.0.0, protocol 9, host vm"));
	assert_non_null(strstr(text, "CCTools workers cannot serve this master"));
	assert_true(worker_line("workqueue 9 v", text)); /* cut: said without details */
	assert_null(strstr(text, "version"));
	assert_true(worker_line("workqueue 9 h\x01st L a 1\n", text)); /* controls dropped */
	assert_non_null(strstr(text, "host hst"));
	assert_false(worker_line("GET / HTTP/1.1\r\n", text));
	assert_false(worker_line("workqueue", text));
	assert_false(worker_line("\xf5\x01", text));
}

static bool master_answer(const char *s, char *text)
{
	return wq_foreign_cctools_master(s, strlen(s), text, 300);
}

static void test_cctools_master(void **state)
{
	(void)state;
	char text[300];
	assert_true(
	    master_answer("[{\"project\":\"p1\",\"version\":\"7.4.0\",\"port\":9123}]\n", text));
	assert_non_null(strstr(text, "a CCTools Work Queue master (version 7.4.0, project p1)"));
	assert_true(master_answer("[{\"version\":\"8.0.0\",\"tasks", text)); /* cut */
	assert_string_equal(text, "a CCTools Work Queue master");
	assert_true(master_answer("\n[{\"project\":\"a\\nb\"}]", text));
	assert_non_null(strstr(text, "project a?b"));
	assert_false(master_answer("", text));
	assert_false(master_answer("[1,2]", text));
	assert_false(master_answer("HTTP/1.1 400 Bad Request\r\n", text));
	assert_false(master_answer("{\"version\":\"1\"}", text));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cctools_worker),
	    cmocka_unit_test(test_cctools_master),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
