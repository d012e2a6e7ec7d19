/* test_buffer.c: unit tests for the capped growable buffer (buffer.h):
 * appends, formatting, the hard cap, rewind and steal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "htc_error.h"
#include "banned.h"

static void test_empty(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 100);
	assert_string_equal(buffer_tostring(&b), "");
	assert_int_equal(buffer_len(&b), 0);
	buffer_clear(&b);
	buffer_free(&b);
	buffer_free(NULL);
	size_t len = 99;
	buffer_init(&b, 0);
	char *s = buffer_steal(&b, &len);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
}

static void test_append(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	assert_int_equal(buffer_putstring(&b, "hello"), 0);
	assert_int_equal(buffer_putc(&b, ' '), 0);
	assert_int_equal(buffer_putlstring(&b, "world!!!", 5), 0);
	assert_int_equal(buffer_printf(&b, " %d-%s", 42, "x"), 0);
	assert_string_equal(buffer_tostring(&b), "hello world 42-x");
	assert_int_equal(buffer_len(&b), 16);
	assert_int_equal(buffer_putlstring(&b, "", 0), 0);
	assert_int_equal(buffer_len(&b), 16);
	buffer_free(&b);
	assert_string_equal(buffer_tostring(&b), "");
}

static void test_embedded_nul(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	assert_int_equal(buffer_putlstring(&b, "a\0b", 3), 0);
	assert_int_equal(buffer_len(&b), 3);
	assert_memory_equal(buffer_tostring(&b), "a\0b", 4);
	buffer_free(&b);
}

static void test_growth(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(buffer_printf(&b, "%04d", i % 10000), 0);
	assert_int_equal(buffer_len(&b), 40000);
	const char *s = buffer_tostring(&b);
	assert_memory_equal(s, "0000000100020003", 16);
	assert_memory_equal(s + 39996, "9999", 5);
	/* a single printf much larger than the current storage */
	char big[5000];
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = 0;
	buffer_clear(&b);
	assert_int_equal(buffer_printf(&b, "<%s>", big), 0);
	assert_int_equal(buffer_len(&b), 5000 + 1);
	assert_int_equal(buffer_tostring(&b)[5000], '>');
	buffer_free(&b);
}

static void test_cap(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 8);
	assert_int_equal(buffer_putstring(&b, "12345"), 0);
	assert_int_equal(buffer_putstring(&b, "6789"), HTC_ETOOBIG);
	assert_string_equal(buffer_tostring(&b), "12345");
	assert_int_equal(buffer_printf(&b, "%s", "abcd"), HTC_ETOOBIG);
	assert_string_equal(buffer_tostring(&b), "12345");
	assert_int_equal(buffer_len(&b), 5);
	assert_int_equal(buffer_printf(&b, "%d", 678), 0);
	assert_string_equal(buffer_tostring(&b), "12345678");
	assert_int_equal(buffer_putc(&b, 'x'), HTC_ETOOBIG);
	assert_int_equal(buffer_putlstring(&b, "", 0), 0);
	assert_string_equal(buffer_tostring(&b), "12345678");
	/* a huge length must not wrap around the cap check */
	assert_int_equal(buffer_putlstring(&b, "x", SIZE_MAX), HTC_ETOOBIG);
	buffer_free(&b);

	/* printf over the cap while the storage already has room */
	buffer_init(&b, 10);
	assert_int_equal(buffer_putstring(&b, "abc"), 0);
	assert_int_equal(buffer_printf(&b, "%s", "12345678"), HTC_ETOOBIG);
	assert_string_equal(buffer_tostring(&b), "abc");
	assert_int_equal(buffer_len(&b), 3);
	buffer_free(&b);
}

static void test_rewind_steal(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "abcdef");
	buffer_rewind(&b, 3);
	assert_string_equal(buffer_tostring(&b), "abc");
	buffer_rewind(&b, 100);
	assert_string_equal(buffer_tostring(&b), "abc");
	buffer_putstring(&b, "XY");
	assert_string_equal(buffer_tostring(&b), "abcXY");
	size_t len;
	char *s = buffer_steal(&b, &len);
	assert_string_equal(s, "abcXY");
	assert_int_equal(len, 5);
	assert_int_equal(buffer_len(&b), 0);
	assert_string_equal(buffer_tostring(&b), "");
	free(s);
	/* still usable after steal */
	buffer_putstring(&b, "again");
	s = buffer_steal(&b, NULL);
	assert_string_equal(s, "again");
	free(s);
	buffer_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),        cmocka_unit_test(test_append),
	    cmocka_unit_test(test_embedded_nul), cmocka_unit_test(test_growth),
	    cmocka_unit_test(test_cap),          cmocka_unit_test(test_rewind_steal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
