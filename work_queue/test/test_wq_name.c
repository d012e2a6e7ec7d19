/* test_wq_name.c: unit tests for the name sandboxing rules (wq_name.h): every
 * row of the section 6 table with its exact text, the length, component and
 * depth limits at their boundaries, rule 4 within a list, and cache object
 * names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_name.h"
#include "banned.h"

static void expect_bad(enum wq_name_kind kind, const char *name, const char *text)
{
	char *why = NULL;
	assert_int_equal(wq_name_check(kind, name, &why), HTC_EPARSE);
	assert_non_null(why);
	assert_string_equal(why, text);
	free(why);
}

static void expect_ok(enum wq_name_kind kind, const char *name)
{
	char *why = NULL;
	int rc = wq_name_check(kind, name, &why);
	if (rc)
		fail_msg("\"%s\" refused: %s", name, why);
	assert_null(why);
}

static void test_table(void **state)
{
	(void)state;
	expect_bad(WQ_NAME_INPUT, "/etc/passwd",
	           "input name \"/etc/passwd\": absolute names are not allowed");
	expect_bad(WQ_NAME_INPUT, "../x", "input name \"../x\": \"..\" is not allowed");
	expect_bad(WQ_NAME_INPUT, "a/../b", "input name \"a/../b\": \"..\" is not allowed");
	expect_bad(WQ_NAME_INPUT, "a//b", "input name \"a//b\": empty or \".\" component");
	expect_bad(WQ_NAME_INPUT, "a/", "input name \"a/\": empty or \".\" component");
	expect_bad(WQ_NAME_INPUT, "./a", "input name \"./a\": empty or \".\" component");
	expect_bad(WQ_NAME_INPUT, "a/./b", "input name \"a/./b\": empty or \".\" component");
	expect_bad(WQ_NAME_INPUT, "a\nb",
	           "input name \"a\\x0ab\": control characters are not allowed");
	expect_bad(WQ_NAME_INPUT, "a\x7f",
	           "input name \"a\\x7f\": control characters are not allowed");
	expect_bad(WQ_NAME_INPUT, "\x1f",
	           "input name \"\\x1f\": control characters are not allowed");
	/* the other kinds */
	expect_bad(WQ_NAME_OUTPUT, "/etc/passwd",
	           "output name \"/etc/passwd\": absolute names are not allowed");
	expect_bad(WQ_NAME_MEMBER, "../../evil",
	           "member name \"../../evil\": \"..\" is not allowed");
	expect_bad(WQ_NAME_INPUT, "", "input name \"\": empty names are not allowed");
	/* quotes and backslashes are escaped in the text */
	expect_bad(WQ_NAME_INPUT, "/a\"b\\c",
	           "input name \"/a\\\"b\\\\c\": absolute names are not allowed");
	/* good names */
	expect_ok(WQ_NAME_INPUT, "a");
	expect_ok(WQ_NAME_INPUT, "ref.fa");
	expect_ok(WQ_NAME_INPUT, "a/b/c.txt");
	expect_ok(WQ_NAME_INPUT, "...");
	expect_ok(WQ_NAME_INPUT, "..a");
	expect_ok(WQ_NAME_INPUT, "a b");
	expect_ok(WQ_NAME_INPUT, "caf\xc3\xa9");
	/* without WHY */
	assert_int_equal(wq_name_check(WQ_NAME_INPUT, "..", NULL), HTC_EPARSE);
}

static void test_component_limit(void **state)
{
	(void)state;
	char name[400];
	memset(name, 'a', 255);
	name[255] = 0;
	expect_ok(WQ_NAME_INPUT, name);
	memcpy(name + 255, "/b", 3);
	expect_ok(WQ_NAME_INPUT, name);
	memset(name, 'a', 256);
	name[256] = 0;
	char *why = NULL;
	assert_int_equal(wq_name_check(WQ_NAME_INPUT, name, &why), HTC_EPARSE);
	/* the name is shortened to 64 bytes and "…" in the text */
	char expect[200];
	snprintf(expect, sizeof expect,
	         "input name \"%.64s…\": a component is longer than 255 bytes", name);
	assert_string_equal(why, expect);
	free(why);
	/* 300-byte component, as in the table */
	memset(name, 'a', 300);
	name[300] = 0;
	assert_int_equal(wq_name_check(WQ_NAME_INPUT, name, &why), HTC_EPARSE);
	assert_string_equal(why, expect);
	free(why);
}

static void test_length_limit(void **state)
{
	(void)state;
	/* 1,024 bytes in components of 15 bytes and slashes: "aaaaaaaaaaaaaaa/..." */
	char name[1100];
	size_t n = 0;
	while (n < 1024) {
		name[n] = (n % 16 == 15) ? '/' : 'a';
		n++;
	}
	name[1023] = 'a'; /* must not end with '/' */
	name[1024] = 0;
	expect_ok(WQ_NAME_INPUT, name);
	name[1024] = 'a';
	name[1025] = 0;
	char *why = NULL;
	assert_int_equal(wq_name_check(WQ_NAME_INPUT, name, &why), HTC_EPARSE);
	assert_non_null(strstr(why, ": longer than 1024 bytes"));
	assert_non_null(strstr(why, "…\""));
	free(why);
}

static void test_depth_limit(void **state)
{
	(void)state;
	/* "a/a/.../a" with 64 components has 127 bytes */
	char name[200] = "";
	name[0] = 'a';
	for (int i = 1; i < 64; i++) {
		name[2 * i - 1] = '/';
		name[2 * i] = 'a';
	}
	name[127] = 0;
	expect_ok(WQ_NAME_INPUT, name);
	memcpy(name + 127, "/a", 3);
	char *why = NULL;
	assert_int_equal(wq_name_check(WQ_NAME_INPUT, name, &why), HTC_EPARSE);
	assert_non_null(strstr(why, ": more than 64 components"));
	free(why);
}

static void test_list(void **state)
{
	(void)state;
	char *why = NULL;
	size_t bad = 99;
	const char *ok[] = {"a", "a-b", "b/c", "b/d", "ab"};
	assert_int_equal(wq_name_check_list(WQ_NAME_INPUT, ok, 5, &why, &bad), 0);
	assert_null(why);

	const char *dup[] = {"x", "y", "x"};
	assert_int_equal(wq_name_check_list(WQ_NAME_INPUT, dup, 3, &why, &bad), HTC_EPARSE);
	assert_string_equal(why, "input name \"x\": given twice");
	free(why);

	/* "a-b" sorts between "a" and "a/b" in plain byte order */
	const char *prefix[] = {"a/b", "a-b", "a"};
	assert_int_equal(wq_name_check_list(WQ_NAME_OUTPUT, prefix, 3, &why, &bad), HTC_EPARSE);
	assert_string_equal(why, "output name \"a\": a directory prefix of \"a/b\"");
	assert_int_equal(bad, 2);
	free(why);

	const char *deep[] = {"q/r/s", "q"};
	assert_int_equal(wq_name_check_list(WQ_NAME_INPUT, deep, 2, &why, NULL), HTC_EPARSE);
	free(why);

	const char *badname[] = {"ok", "../no"};
	assert_int_equal(wq_name_check_list(WQ_NAME_INPUT, badname, 2, &why, &bad), HTC_EPARSE);
	assert_string_equal(why, "input name \"../no\": \"..\" is not allowed");
	assert_int_equal(bad, 1);
	free(why);

	assert_int_equal(wq_name_check_list(WQ_NAME_INPUT, NULL, 0, &why, NULL), 0);
}

static void test_objects(void **state)
{
	(void)state;
	const char *good = "F-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55";
	assert_true(wq_name_is_object(good));
	char s[80];
	snprintf(s, sizeof s, "%s", good);
	s[0] = 'D';
	assert_true(wq_name_is_object(s));
	s[0] = 'U';
	assert_true(wq_name_is_object(s));
	s[0] = 'X';
	assert_false(wq_name_is_object(s));
	s[0] = 'F';
	s[1] = '_';
	assert_false(wq_name_is_object(s));
	s[1] = '-';
	s[10] = 'A'; /* upper case hex */
	assert_false(wq_name_is_object(s));
	s[10] = 'g';
	assert_false(wq_name_is_object(s));
	snprintf(s, sizeof s, "%s0", good); /* 65 hex */
	assert_false(wq_name_is_object(s));
	snprintf(s, sizeof s, "%.65s", good); /* 63 hex */
	assert_false(wq_name_is_object(s));
	assert_false(wq_name_is_object(""));
	assert_false(wq_name_is_object(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),        cmocka_unit_test(test_component_limit),
	    cmocka_unit_test(test_length_limit), cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_list),         cmocka_unit_test(test_objects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
