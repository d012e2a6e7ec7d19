/* test_catalog_router.c: unit tests of the catalog server's route table (catalog_router.h):
 * exact paths and prefixes, 404 against 405 and the Allow list, the argument after a prefix;
 * and of the CCTools answer forms (catalog_cctools.h): base64 queries and their errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_cctools.h"
#include "catalog_router.h"
#include "banned.h"

static void h1(void *ctx, const char *arg)
{
	(void)ctx;
	(void)arg;
}

static void h2(void *ctx, const char *arg)
{
	(void)ctx;
	(void)arg;
}

static const struct catalog_route routes[] = {
    {"GET", "/query.json", false, h1}, {"GET", "/query/", true, h2},  {"GET", "/", false, h1},
    {"POST", "/update", false, h2},    {"PUT", "/update", false, h1},
};

static const struct catalog_route *find(const char *method, const char *path, const char **arg,
                                        int *status, char *allow)
{
	return catalog_router_find(routes, sizeof routes / sizeof routes[0], method, path, arg,
	                           status, allow, 64);
}

static void test_router(void **state)
{
	(void)state;
	const char *arg = NULL;
	int status = 0;
	char allow[64];
	const struct catalog_route *r = find("GET", "/query/dHJ1ZQ==", &arg, &status, allow);
	assert_ptr_equal(r, &routes[1]);
	assert_string_equal(arg, "dHJ1ZQ==");
	r = find("GET", "/query.json", &arg, &status, allow);
	assert_ptr_equal(r, &routes[0]);
	assert_string_equal(arg, "");
	r = find("GET", "/", &arg, &status, allow);
	assert_ptr_equal(r, &routes[2]);
	assert_null(find("GET", "/query", &arg, &status, allow));
	assert_int_equal(status, 404);
	assert_string_equal(allow, "");
	assert_null(find("GET", "/update", &arg, &status, allow));
	assert_int_equal(status, 405);
	assert_string_equal(allow, "POST, PUT");
	assert_null(find("POST", "/query/x", &arg, &status, allow));
	assert_int_equal(status, 405);
	assert_string_equal(allow, "GET");
	/* a tiny Allow buffer is cut, never overrun */
	char small[4];
	assert_null(
	    catalog_router_find(routes, 5, "GET", "/update", &arg, &status, small, sizeof small));
	assert_true(strlen(small) < sizeof small);
}

static void test_cctools_query(void **state)
{
	(void)state;
	char *err = NULL;
	json_t *recs = json_loads("[{\"type\":\"wq_master\",\"lastheard\":5,\"name\":\"a\\nb\","
	                          "\"tasks_done\":4},"
	                          "{\"type\":\"other\"}]",
	                          0, NULL);
	/* type=="wq_master", standard base64 with and without padding, and %-escaped */
	const char *forms[] = {"dHlwZT09IndxX21hc3RlciI=", "dHlwZT09IndxX21hc3RlciI",
	                       "dHlwZT09IndxX21hc3RlciI%3D"};
	for (int i = 0; i < 3; i++) {
		struct catalog_expr *e = catalog_cctools_parse_query(forms[i], &err);
		assert_non_null(e);
		json_t *a = catalog_cctools_select(recs, e);
		assert_int_equal(json_array_size(a), 1);
		assert_int_equal(
		    json_integer_value(json_object_get(json_array_get(a, 0), "lastheardfrom")), 5);
		json_decref(a);
		catalog_expr_delete(e);
	}
	/* "1+1==2": '+' in base64 ("MSsxPT0y") survives URL decoding */
	struct catalog_expr *e = catalog_cctools_parse_query("MSsxPT0y", &err);
	assert_non_null(e);
	catalog_expr_delete(e);
	assert_null(catalog_cctools_parse_query("@@@@", &err));
	assert_non_null(strstr(err, "base64"));
	free(err);
	assert_null(catalog_cctools_parse_query("%zz", &err));
	free(err);
	assert_null(catalog_cctools_parse_query("dHlwZT0=", &err)); /* "type=" */
	assert_non_null(strstr(err, "expression"));
	free(err);

	size_t len;
	json_t *all = catalog_cctools_select(recs, NULL);
	char *t = catalog_cctools_json(all, &len);
	assert_int_equal(strncmp(t, "[\n{", 3), 0);
	assert_non_null(strstr(t, "},\n{"));
	assert_string_equal(t + len - 4, "}\n]\n");
	free(t);
	t = catalog_cctools_text(all, &len);
	assert_non_null(
	    strstr(t, "type wq_master\nlastheard 5\nname a?b\ntasks_done 4\nlastheardfrom 5\n"
	              "tasks_complete 4\n\n"));
	assert_non_null(strstr(t, "type other\n\n"));
	free(t);
	json_decref(all);
	json_t *none = json_array();
	t = catalog_cctools_json(none, &len);
	assert_string_equal(t, "[\n\n]\n");
	free(t);
	json_decref(none);
	json_decref(recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_router),
	    cmocka_unit_test(test_cctools_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
