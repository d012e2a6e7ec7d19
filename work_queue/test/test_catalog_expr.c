/* test_catalog_expr.c: unit tests of the catalog's JX filter expressions (catalog_expr.h): the
 * expressions CCTools work_queue_status and catalog_query send, precedence, types, errors that
 * evaluate to false, and parse errors with their byte offsets and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_expr.h"
#include "xalloc.h"
#include "banned.h"

static json_t *rec(void)
{
	json_t *r = json_loads("{\"type\":\"wq_master\",\"project\":\"myproj\",\"port\":9123,"
	                       "\"load\":0.5,\"ssl\":true,\"none\":null,\"obj\":{\"a\":1},"
	                       "\"tasks_waiting\":3}",
	                       0, NULL);
	assert_non_null(r);
	return r;
}

static bool m(const char *text)
{
	json_t *r = rec();
	char *err = NULL;
	struct catalog_expr *e = catalog_expr_parse(text, strlen(text), &err);
	if (!e)
		fail_msg("'%s' does not parse: %s", text, err);
	bool ok = catalog_expr_match(e, r);
	catalog_expr_delete(e);
	json_decref(r);
	return ok;
}

static char *perr(const char *text)
{
	char *err = NULL;
	struct catalog_expr *e = catalog_expr_parse(text, strlen(text), &err);
	if (e)
		fail_msg("'%s' parsed", text);
	assert_non_null(err);
	return err;
}

static void test_cctools_clients(void **state)
{
	(void)state;
	/* what catalog_query, work_queue_status and work_queue_status -M send */
	assert_true(m("true"));
	assert_true(m("type==\"wq_master\""));
	assert_true(m("true and type==\"wq_manager\" or type==\"wq_master\""));
	assert_false(m("type==\"wq_factory\""));
	assert_true(m("type == \"wq_master\" && project == \"myproj\""));
	assert_false(m("false"));
	assert_false(m("null"));
	assert_false(m("port")); /* not a boolean */
}

static void test_precedence_and_types(void **state)
{
	(void)state;
	assert_true(m("false and false or true")); /* (false and false) or true */
	assert_false(m("false and (false or true)"));
	assert_true(m("not false and true"));
	assert_true(m("!(port < 9000)"));
	assert_true(m("port != 1"));
	assert_true(m("1 + 2 * 3 == 7"));
	assert_true(m("(1 + 2) * 3 == 9"));
	assert_true(m("port - 9000 == 123"));
	assert_true(m("-port == -9123"));
	assert_true(m("7 / 2 == 3 and 7 % 2 == 1"));
	assert_true(m("load < 1 and load >= 0.5 and port > 9122.5"));
	assert_true(m("1 == 1.0"));
	assert_true(m("project + \"!\" == \"myproj!\""));
	assert_true(m("\"a\" < \"b\""));
	assert_true(m("missing == null and none == null"));
	assert_true(m("ssl == true"));
	assert_false(m("port == \"9123\"")); /* incompatible types are unequal */
	assert_true(m("port != \"9123\""));
	assert_true(m("like(project, \"^my\")"));
	assert_false(m("like(project, \"^x\")"));
	assert_false(m("like(port, \"9\")")); /* not a string */
	assert_true(m("tasks_waiting > 0 # a comment\n"));
	assert_true(m("notes == null")); /* a field whose name starts with a keyword */
}

static void test_errors_are_false(void **state)
{
	(void)state;
	assert_false(m("port / 0 == 1"));
	assert_false(m("port % 0 == 1"));
	assert_false(m("project < 3"));
	assert_false(m("port and true"));
	assert_false(m("not port"));
	assert_false(m("obj == obj"));
	assert_false(m("9223372036854775807 + 1 > 0"));
	assert_false(m("(port / 0 == 1) or false")); /* an error on the left is not rescued */
	assert_true(m("true or port / 0 == 1"));     /* decided before the right side */
}

static void test_parse_errors(void **state)
{
	(void)state;
	char *e = perr("type = \"x\"");
	assert_non_null(strstr(e, "unexpected '='"));
	assert_non_null(strstr(e, "at byte 5"));
	free(e);
	free(perr("(true"));
	free(perr("\"open"));
	free(perr("true and"));
	free(perr("1e"));
	free(perr("99999999999999999999"));
	e = perr("len(x) > 1");
	assert_non_null(strstr(e, "len() is not supported"));
	free(e);
	char *e2 = perr("like(project)");
	free(e2);
	free(perr("like(project, x)"));
	free(perr("like(project, \"(\")"));
	/* nested intervals would make regcomp take gigabytes (found by fuzz_catalog_expr) */
	e = perr("like(project, \"((a{1,255}){1,255}){1,255}\")");
	assert_non_null(strstr(e, "may not use a {m,n} interval"));
	free(e);
	assert_true(m("like(project, \"^my\\\\{?\")")); /* an escaped brace is a brace */
	/* each "+" makes glibc copy what it repeats: nesting and stacking are bounded */
	e = perr("like(project, \"(((((((((a+)+)+)+)+)+)+)+)+)+\")");
	assert_non_null(strstr(e, "may not nest groups more than 8 deep"));
	free(e);
	assert_true(m("like(project, \"((((((((p+)+)+)+)+)+)+)+)+\")"));
	e = perr("like(project, \"a+++++++++++++++++++++++++++++++\")");
	assert_non_null(strstr(e, "may not repeat a repetition"));
	free(e);
	e = perr("like(project, \"(a)\\\\1\")");
	assert_non_null(strstr(e, "may not use a back-reference"));
	free(e);
	char pat[400] = "like(project, \"";
	memset(pat + 15, 'a', 300);
	memcpy(pat + 315, "\")", 3);
	e = perr(pat);
	assert_non_null(strstr(e, "over 256 bytes"));
	free(e);
	free(perr("@"));
	free(perr(""));
	char deep[400];
	memset(deep, '(', 200);
	memcpy(deep + 200, "true", 5);
	e = perr(deep);
	assert_non_null(strstr(e, "nested deeper"));
	free(e);
	char *big = xmalloc(CATALOG_EXPR_MAX_TEXT + 2);
	memset(big, ' ', CATALOG_EXPR_MAX_TEXT + 1);
	big[CATALOG_EXPR_MAX_TEXT + 1] = 0;
	free(perr(big));
	free(big);
	/* many terms: a long chain of "or true" is refused past the node limit */
	size_t n = 0;
	char *chain = xmalloc(CATALOG_EXPR_MAX_TEXT + 1);
	n += (size_t)snprintf(chain, 5, "true");
	while (n + 9 < CATALOG_EXPR_MAX_TEXT)
		n += (size_t)snprintf(chain + n, 9, " or 1==1");
	e = perr(chain);
	assert_non_null(strstr(e, "terms"));
	free(e);
	free(chain);
	e = NULL;
	assert_null(catalog_expr_parse("a\0b", 3, &e));
	assert_non_null(strstr(e, "NUL"));
	free(e);
	catalog_expr_delete(NULL);
	assert_true(catalog_expr_match(NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cctools_clients),
	    cmocka_unit_test(test_precedence_and_types),
	    cmocka_unit_test(test_errors_are_false),
	    cmocka_unit_test(test_parse_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
