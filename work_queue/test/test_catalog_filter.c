/* test_catalog_filter.c: unit tests of catalog query filters (catalog_filter.h): parsing of
 * query strings and their errors, matching of each JSON type, and the round trip through
 * catalog_filter_to_query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_filter.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

static json_t *rec(void)
{
	json_t *r = json_loads("{\"type\":\"wq_master\",\"project\":\"my proj\",\"port\":9123,"
	                       "\"load\":0.5,\"ssl\":true,\"none\":null,\"obj\":{\"a\":1},"
	                       "\"arr\":[1]}",
	                       0, NULL);
	assert_non_null(r);
	return r;
}

static bool matches(const char *query, const json_t *r)
{
	struct catalog_filter *f;
	char *err;
	if (catalog_filter_parse(query, &f, &err) < 0)
		fail_msg("'%s' does not parse: %s", query, err);
	bool m = catalog_filter_match(f, r);
	catalog_filter_delete(f);
	return m;
}

static void test_match(void **state)
{
	(void)state;
	json_t *r = rec();
	assert_true(matches("", r));
	assert_true(matches("project=my+proj", r));
	assert_true(matches("project=my%20proj&type=wq_master", r));
	assert_false(matches("project=my%20proj&type=wq_factory", r));
	assert_false(matches("project=my", r));
	assert_false(matches("project=my%20proj2", r));
	assert_true(matches("port=9123", r));
	assert_false(matches("port=09123", r));
	assert_false(matches("port=9124", r));
	assert_true(matches("load=0.5", r));
	assert_true(matches("ssl=true", r));
	assert_false(matches("ssl=false", r));
	assert_true(matches("none=null", r));
	assert_false(matches("obj=x", r));
	assert_false(matches("arr=1", r));
	assert_false(matches("missing=x", r));
	assert_true(matches("&&type=wq_master&", r)); /* empty terms are ignored */
	assert_true(catalog_filter_match(NULL, r));
	json_t *notobj = json_array();
	assert_false(matches("a=b", notobj));
	assert_true(matches("", notobj) == false);
	json_decref(notobj);
	json_decref(r);
}

static void expect_bad(const char *query, int code, const char *words)
{
	struct catalog_filter *f = (void *)1;
	char *err = NULL;
	assert_int_equal(catalog_filter_parse(query, &f, &err), code);
	assert_null(f);
	assert_non_null(err);
	if (!strstr(err, words))
		fail_msg("error '%s' does not mention '%s'", err, words);
	free(err);
}

static void test_errors(void **state)
{
	(void)state;
	expect_bad("project", HTC_EPARSE, "no '='");
	expect_bad("=x", HTC_EPARSE, "bad filter key");
	expect_bad("a%20b=x", HTC_EPARSE, "bad filter key");
	expect_bad("a=%zz", HTC_EPARSE, "escape");
	expect_bad("a=%00", HTC_EPARSE, "escape");
	char big[5000];
	memset(big, 'v', sizeof big);
	memcpy(big, "k=", 2);
	big[sizeof big - 1] = 0;
	expect_bad(big, HTC_ELIMIT, "too long");
	char many[400] = "";
	for (int i = 0; i < CATALOG_FILTER_MAX_TERMS + 1; i++) {
		size_t n = strlen(many);
		snprintf(many + n, sizeof many - n, "%sk%d=v", i ? "&" : "", i);
	}
	expect_bad(many, HTC_ELIMIT, "too many");
}

static void test_to_query(void **state)
{
	(void)state;
	struct catalog_filter *f = catalog_filter_create();
	char *err = NULL;
	assert_int_equal(catalog_filter_count(f), 0);
	char *q = catalog_filter_to_query(f);
	assert_string_equal(q, "");
	free(q);
	assert_int_equal(catalog_filter_add(f, "project", "a b&c=d/é", &err), 0);
	assert_int_equal(catalog_filter_add(f, "type", "wq_master", &err), 0);
	assert_int_equal(catalog_filter_add(f, "bad key", "x", &err), HTC_EPARSE);
	free(err);
	assert_int_equal(catalog_filter_count(f), 2);
	q = catalog_filter_to_query(f);
	assert_string_equal(q, "project=a%20b%26c%3Dd%2F%C3%A9&type=wq_master");
	struct catalog_filter *g;
	assert_int_equal(catalog_filter_parse(q, &g, &err), 0);
	json_t *r = json_pack("{s:s, s:s}", "project", "a b&c=d/é", "type", "wq_master");
	assert_true(catalog_filter_match(g, r));
	json_decref(r);
	catalog_filter_delete(g);
	catalog_filter_delete(f);
	free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_to_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
