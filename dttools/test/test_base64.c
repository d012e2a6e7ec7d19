/* test_base64.c: unit tests of base64_decode: both alphabets, padding or none, blanks and
 * newlines skipped, and the refusals (a foreign character, data after the padding, three '=',
 * one character left over). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "banned.h"

static void ok(const char *in, const char *want, size_t want_len)
{
	size_t n = 99;
	char *s = base64_decode(in, strlen(in), &n);
	assert_non_null(s);
	assert_int_equal(n, want_len);
	assert_memory_equal(s, want, want_len);
	assert_int_equal(s[n], 0);
	free(s);
}

static void test_decode(void **state)
{
	(void)state;
	ok("aGVsbG8=", "hello", 5);
	ok("aGVsbG8", "hello", 5);
	ok("aGVs\nbG8=\n", "hello", 5);
	ok("", "", 0);
	ok("+/8=", "\xfb\xff", 2);
	ok("-_8", "\xfb\xff", 2); /* URL-safe */
	assert_null(base64_decode("a$b", 3, NULL));
	assert_null(base64_decode("aGVsbG8=x", 9, NULL));
	assert_null(base64_decode("aGVsbA===", 9, NULL));
	assert_null(base64_decode("aGVsb", 5, NULL));
	/* N bounds what is read */
	char *s = base64_decode("aGVsbG8=garbage$", 8, NULL);
	assert_string_equal(s, "hello");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_decode)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
