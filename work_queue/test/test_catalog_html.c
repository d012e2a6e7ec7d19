/* test_catalog_html.c: unit tests of the catalog server's HTML page: masters listed with their
 * project, address, workers and tasks (the CCTools field names too), other records apart, and
 * every text from a record escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_html.h"

#include "banned.h"

static void test_page(void **state)
{
	(void)state;
	json_t *recs = json_loads(
	    "[{\"type\": \"wq_master\", \"project\": \"p<1>\", \"name\": \"h&x\", \"port\": 9123,"
	    "  \"address\": \"10.0.0.1\", \"workers_connected\": 3, \"tasks_waiting\": 4,"
	    "  \"tasks_running\": 5, \"tasks_done\": 6, \"lastheard\": 100},"
	    " {\"type\": \"wq_master\", \"project\": \"old\", \"name\": \"o\", \"port\": 1,"
	    "  \"workers\": 7, \"tasks_on_workers\": 8, \"tasks_complete\": 9},"
	    " {\"type\": \"catalog\", \"name\": \"\\\"q\\\"\", \"port\": 9097}]",
	    0, NULL);
	assert_non_null(recs);
	size_t len;
	char *page = catalog_html_page(recs, 110 * 1000000LL, "0.1.0", &len);
	assert_int_equal(strlen(page), len);
	assert_non_null(strstr(page, "<p id=\"counts\">3 records, 2 Work Queue masters.</p>"));
	assert_non_null(strstr(page, "<td>p&lt;1&gt;</td><td>h&amp;x:9123</td><td>10.0.0.1</td>"
	                             "<td>-</td><td class=n>3</td><td class=n>4</td><td "
	                             "class=n>5</td><td class=n>6</td><td>-</td><td "
	                             "class=n>10s</td>"));
	/* the CCTools names of the counts */
	assert_non_null(strstr(page, "<td class=n>7</td><td class=n>-</td><td class=n>8</td><td "
	                             "class=n>9</td>"));
	assert_non_null(strstr(page, "<td>catalog</td><td>&quot;q&quot;</td><td>9097</td>"));
	assert_null(strstr(page, "<1>"));
	assert_null(strstr(page, "<script"));
	free(page);
	json_decref(recs);
	json_t *none = json_array();
	page = catalog_html_page(none, 0, "0.1.0", &len);
	assert_non_null(strstr(page, "(none)"));
	free(page);
	json_decref(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
