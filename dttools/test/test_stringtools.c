/* test_stringtools.c: unit tests for the string helpers (stringtools.h),
 * including shell quoting checked against a real /bin/sh and strict number
 * parsing of garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

static void test_prefix_suffix(void **state)
{
	(void)state;
	assert_true(str_has_prefix("foobar", "foo"));
	assert_true(str_has_prefix("foobar", ""));
	assert_true(str_has_prefix("foo", "foo"));
	assert_false(str_has_prefix("fo", "foo"));
	assert_false(str_has_prefix("barfoo", "foo"));
	assert_true(str_has_suffix("foobar", "bar"));
	assert_true(str_has_suffix("foobar", ""));
	assert_true(str_has_suffix("", ""));
	assert_false(str_has_suffix("ar", "bar"));
	assert_false(str_has_suffix("barfoo", "bar"));
}

static void test_trim(void **state)
{
	(void)state;
	char a[] = "  \t hello world \n ";
	assert_string_equal(str_trim(a), "hello world");
	char b[] = "x";
	assert_string_equal(str_trim(b), "x");
	char c[] = "   ";
	assert_string_equal(str_trim(c), "");
	char d[] = "";
	assert_string_equal(str_trim(d), "");
	char e[] = "no-trim";
	assert_ptr_equal(str_trim(e), e);
	assert_string_equal(e, "no-trim");
}

static void test_split_ws(void **state)
{
	(void)state;
	int argc = -1;
	char **argv = str_split_ws("  cmd  -a\tb\n c  ", &argc);
	assert_int_equal(argc, 4);
	assert_string_equal(argv[0], "cmd");
	assert_string_equal(argv[1], "-a");
	assert_string_equal(argv[2], "b");
	assert_string_equal(argv[3], "c");
	assert_null(argv[4]);
	str_free_argv(argv);

	argv = str_split_ws("   ", &argc);
	assert_int_equal(argc, 0);
	assert_null(argv[0]);
	str_free_argv(argv);

	argv = str_split_ws("", NULL);
	assert_null(argv[0]);
	str_free_argv(argv);
	str_free_argv(NULL);

	/* many words force growth */
	char *many = xmalloc(2000);
	many[0] = 0;
	size_t off = 0;
	for (int i = 0; i < 300; i++)
		off += (size_t)snprintf(many + off, 2000 - off, "w%d ", i);
	argv = str_split_ws(many, &argc);
	assert_int_equal(argc, 300);
	assert_string_equal(argv[299], "w299");
	assert_null(argv[300]);
	str_free_argv(argv);
	free(many);
}

static void test_replace_all(void **state)
{
	(void)state;
	char *s = str_replace_all("a.b.c", ".", "::");
	assert_string_equal(s, "a::b::c");
	free(s);
	s = str_replace_all("aaaa", "aa", "b");
	assert_string_equal(s, "bb");
	free(s);
	s = str_replace_all("aaa", "aa", "b");
	assert_string_equal(s, "ba");
	free(s);
	s = str_replace_all("xyz", "q", "r");
	assert_string_equal(s, "xyz");
	free(s);
	s = str_replace_all("xyz", "", "r");
	assert_string_equal(s, "xyz");
	free(s);
	s = str_replace_all("$IN $IN", "$IN", "");
	assert_string_equal(s, " ");
	free(s);
	s = str_replace_all("", "a", "b");
	assert_string_equal(s, "");
	free(s);
}

/* Runs `printf %s <quoted>` through /bin/sh and checks the output is S. */
static void check_shell_roundtrip(const char *s)
{
	char *q = str_escape_shell(s);
	char *cmd = xasprintf("printf %%s %s", q);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char out[512];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	assert_int_equal(pclose(p), 0);
	assert_string_equal(out, s);
	free(cmd);
	free(q);
}

static void test_escape_shell(void **state)
{
	(void)state;
	char *q = str_escape_shell("abc");
	assert_string_equal(q, "'abc'");
	free(q);
	q = str_escape_shell("");
	assert_string_equal(q, "''");
	free(q);
	q = str_escape_shell("it's");
	assert_string_equal(q, "'it'\\''s'");
	free(q);
	check_shell_roundtrip("plain");
	check_shell_roundtrip("it's a 'test'");
	check_shell_roundtrip("$(echo pwned) `id` $HOME; rm -rf / && \"x\" \\ * ? ~ | > <");
	check_shell_roundtrip("line1\nline2\ttab");
	check_shell_roundtrip("'''");
	check_shell_roundtrip("-n");
}

static void test_join(void **state)
{
	(void)state;
	char *parts[] = {"a", "b", "c", NULL};
	char *s = str_join(parts, ", ");
	assert_string_equal(s, "a, b, c");
	free(s);
	char *one[] = {"only", NULL};
	s = str_join(one, "-");
	assert_string_equal(s, "only");
	free(s);
	char *none[] = {NULL};
	s = str_join(none, "-");
	assert_string_equal(s, "");
	free(s);
	char *empties[] = {"", "", NULL};
	s = str_join(empties, "/");
	assert_string_equal(s, "/");
	free(s);
	int argc;
	char **argv = str_split_ws(" x  y z ", &argc);
	s = str_join(argv, " ");
	assert_string_equal(s, "x y z");
	free(s);
	str_free_argv(argv);
}

static void test_to_int64(void **state)
{
	(void)state;
	int64_t v = 7;
	assert_int_equal(str_to_int64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(str_to_int64("12345", &v), 0);
	assert_int_equal(v, 12345);
	assert_int_equal(str_to_int64("-42", &v), 0);
	assert_int_equal(v, -42);
	assert_int_equal(str_to_int64("+42", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(str_to_int64("9223372036854775807", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(str_to_int64("-9223372036854775808", &v), 0);
	assert_true(v == INT64_MIN);

	v = 7;
	assert_int_equal(str_to_int64("9223372036854775808", &v), HTC_ERANGE);
	assert_int_equal(str_to_int64("-9223372036854775809", &v), HTC_ERANGE);
	assert_int_equal(str_to_int64("99999999999999999999999", &v), HTC_ERANGE);
	const char *garbage[] = {"",  " ", "abc", "12abc", "12 ", " 12",      "1.5",  "0x10",
	                         "+", "-", "--1", "+-1",   "1e3", "\xd9\xa1", "12\n", "1,000"};
	for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
		assert_int_equal(str_to_int64(garbage[i], &v), HTC_EPARSE);
	assert_int_equal(v, 7);
}

static void test_to_double(void **state)
{
	(void)state;
	double d = 7;
	assert_int_equal(str_to_double("1.5", &d), 0);
	assert_true(d == 1.5);
	assert_int_equal(str_to_double("-2", &d), 0);
	assert_true(d == -2.0);
	assert_int_equal(str_to_double("1e3", &d), 0);
	assert_true(d == 1000.0);
	assert_int_equal(str_to_double(".25", &d), 0);
	assert_true(d == 0.25);
	assert_int_equal(str_to_double("1e-400", &d), 0);
	assert_true(d >= 0 && d < 1e-300);

	d = 7;
	assert_int_equal(str_to_double("1e400", &d), HTC_ERANGE);
	assert_int_equal(str_to_double("-1e400", &d), HTC_ERANGE);
	const char *garbage[] = {"",     " 1",       "1 ",   "abc", "1.5x", "nan", "inf",
	                         "-inf", "infinity", "1..2", ".",   "e5",   "--1"};
	for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
		assert_int_equal(str_to_double(garbage[i], &d), HTC_EPARSE);
	assert_true(d == 7);
}

static void test_hex(void **state)
{
	(void)state;
	assert_int_equal(str_hex_digit('0'), 0);
	assert_int_equal(str_hex_digit('9'), 9);
	assert_int_equal(str_hex_digit('a'), 10);
	assert_int_equal(str_hex_digit('F'), 15);
	assert_int_equal(str_hex_digit('g'), -1);
	assert_int_equal(str_hex_digit(-1), -1);
	const unsigned char bytes[] = {0x00, 0x7f, 0xa5, 0xff};
	char hex[9];
	str_hex_encode(bytes, sizeof bytes, hex);
	assert_string_equal(hex, "007fa5ff");
	str_hex_encode(bytes, 0, hex);
	assert_string_equal(hex, "");
	unsigned char back[4];
	assert_int_equal(str_hex_decode("007FA5ff", back, 4), 0);
	assert_memory_equal(back, bytes, 4);
	assert_int_equal(str_hex_decode("007fa5f", back, 4), HTC_EPARSE);
	assert_int_equal(str_hex_decode("007fa5fff0", back, 4), HTC_EPARSE);
	assert_int_equal(str_hex_decode("007fa5fg", back, 4), HTC_EPARSE);
	assert_int_equal(str_hex_decode(NULL, back, 4), HTC_EPARSE);
}

/* str_dup_argv copies the array and every string; NULL and an empty array come back as such. */
static void test_dup_argv(void **state)
{
	(void)state;
	assert_null(str_dup_argv(NULL));
	const char *none[] = {NULL};
	char **e = str_dup_argv(none);
	assert_non_null(e);
	assert_null(e[0]);
	str_free_argv(e);
	char a[] = "sh", b[] = "-c";
	const char *v[] = {a, b, NULL};
	char **c = str_dup_argv(v);
	a[0] = 'X';
	b[1] = 'X';
	assert_string_equal(c[0], "sh");
	assert_string_equal(c[1], "-c");
	assert_null(c[2]);
	assert_ptr_not_equal(c[0], a);
	str_free_argv(c);
}

static void test_tail_lines(void **state)
{
	(void)state;
	const char *t = "one\ntwo\nthree\nfour\n\n";
	char *r = str_tail_lines(t, strlen(t), 2, 100);
	assert_string_equal(r, "three\nfour");
	free(r);
	r = str_tail_lines(t, strlen(t), 10, 100);
	assert_string_equal(r, "one\ntwo\nthree\nfour");
	free(r);
	/* the byte limit cuts inside "two": begins at the next line */
	r = str_tail_lines(t, strlen(t), 10, 13);
	assert_string_equal(r, "three\nfour");
	free(r);
	/* one long line: its last bytes */
	r = str_tail_lines("abcdefgh", 8, 3, 3);
	assert_string_equal(r, "fgh");
	free(r);
	/* no trailing newline, NUL bytes inside dropped */
	const char nul[] = {'a', 0, 'b', '\n', 'c'};
	r = str_tail_lines(nul, sizeof nul, 5, 100);
	assert_string_equal(r, "ab\nc");
	free(r);
	assert_null(str_tail_lines("\n\n", 2, 5, 100));
	assert_null(str_tail_lines("", 0, 5, 100));
	assert_null(str_tail_lines("x", 1, 0, 100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prefix_suffix), cmocka_unit_test(test_trim),
	    cmocka_unit_test(test_split_ws),      cmocka_unit_test(test_replace_all),
	    cmocka_unit_test(test_escape_shell),  cmocka_unit_test(test_join),
	    cmocka_unit_test(test_to_int64),      cmocka_unit_test(test_to_double),
	    cmocka_unit_test(test_hex),           cmocka_unit_test(test_dup_argv),
	    cmocka_unit_test(test_tail_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
