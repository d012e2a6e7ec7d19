/* test_worker_masters.c: unit tests of the order in which a worker given -M tries the masters
 * of its project: priority first, random among equals, and the addresses each master's
 * preferred connection names (by_ip, by_hostname, by_apparent_ip, none). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog_project.h"
#include "worker_masters.h"

#include "banned.h"

/* worker_masters_order with -M PATTERN. */
static json_t *order(const json_t *recs, const char *pattern)
{
	char *why = NULL;
	struct catalog_project *p = catalog_project_create(pattern, &why);
	assert_non_null(p);
	json_t *o = worker_masters_order(recs, p);
	catalog_project_delete(p);
	return o;
}

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s", e.text);
	return j;
}

static const char *host_at(const json_t *a, size_t i)
{
	return json_string_value(json_object_get(json_array_get(a, i), "host"));
}

static void test_priority_first(void **state)
{
	(void)state;
	json_t *recs = load("["
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"low\","
	                    "\"address\":\"10.0.0.1\",\"port\":1,\"priority\":1},"
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"high\","
	                    "\"address\":\"10.0.0.9\",\"port\":9,\"priority\":9},"
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"none\","
	                    "\"address\":\"10.0.0.5\",\"port\":5},"
	                    "{\"type\":\"wq_master\",\"project\":\"other\",\"name\":\"x\","
	                    "\"address\":\"10.0.0.7\",\"port\":7,\"priority\":99},"
	                    "{\"type\":\"wq_worker\",\"project\":\"p\",\"name\":\"w\","
	                    "\"address\":\"10.0.0.8\",\"port\":8,\"priority\":99},"
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"badport\","
	                    "\"address\":\"10.0.0.6\",\"port\":0,\"priority\":50}"
	                    "]");
	/* whatever the random order of equals, priority decides */
	for (int round = 0; round < 20; round++) {
		json_t *o = order(recs, "p");
		assert_int_equal(json_array_size(o), 3);
		assert_string_equal(host_at(o, 0), "10.0.0.9");
		assert_string_equal(host_at(o, 1), "10.0.0.1");
		assert_string_equal(host_at(o, 2), "10.0.0.5");
		assert_int_equal(json_integer_value(json_object_get(json_array_get(o, 0), "port")),
		                 9);
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(o, 0), "name")), "high");
		json_decref(o);
	}
	json_decref(recs);
}

static void test_equal_priority_shuffled(void **state)
{
	(void)state;
	json_t *recs = load("["
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"address\":\"a\","
	                    "\"port\":1},"
	                    "{\"type\":\"wq_master\",\"project\":\"p\",\"address\":\"b\","
	                    "\"port\":1}"
	                    "]");
	int a_first = 0;
	for (int round = 0; round < 200; round++) {
		json_t *o = order(recs, "p");
		assert_int_equal(json_array_size(o), 2);
		a_first += !strcmp(host_at(o, 0), "a");
		json_decref(o);
	}
	/* 200 rounds all the same way would happen once in 2^199 */
	assert_true(a_first > 0 && a_first < 200);
	json_decref(recs);
}

static void test_preferred_connection(void **state)
{
	(void)state;
	const char *ifaces = "\"network_interfaces\":[{\"interface\":\"eth0\",\"host\":"
	                     "\"192.0.2.1\",\"family\":\"AF_INET\"},{\"interface\":\"eth1\","
	                     "\"host\":\"198.51.100.1\",\"family\":\"AF_INET\"}]";
	char text[1024];
	static const struct {
		const char *pref; /* the record's field, "" none */
		const char *key;
		const char *hosts[4];
	} cases[] = {
	    {"by_hostname", "manager_preferred_connection", {"m.example", NULL}},
	    {"by_apparent_ip", "manager_preferred_connection", {"203.0.113.5", NULL}},
	    {"by_ip", "manager_preferred_connection", {"192.0.2.1", "198.51.100.1", "203.0.113.5"}},
	    {"", "", {"192.0.2.1", "198.51.100.1", "203.0.113.5"}},
	    {"by_hostname", "master_preferred_connection", {"m.example", NULL}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		char pref[128] = "";
		if (cases[c].pref[0])
			snprintf(pref, sizeof pref, "\"%s\":\"%s\",", cases[c].key, cases[c].pref);
		snprintf(text, sizeof text,
		         "[{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"m.example\","
		         "\"address\":\"203.0.113.5\",\"port\":9123,%s%s}]",
		         pref, ifaces);
		json_t *recs = load(text);
		json_t *o = order(recs, "p");
		size_t n = 0;
		while (n < 4 && cases[c].hosts[n])
			n++;
		assert_int_equal(json_array_size(o), n);
		for (size_t i = 0; i < n; i++) {
			assert_string_equal(host_at(o, i), cases[c].hosts[i]);
			/* the host name stays the name checked by TLS */
			assert_string_equal(
			    json_string_value(json_object_get(json_array_get(o, i), "name")),
			    "m.example");
		}
		json_decref(o);
		json_decref(recs);
	}
	/* by_ip with the apparent address among the interfaces: tried once */
	json_t *recs = load("[{\"type\":\"wq_master\",\"project\":\"p\",\"address\":\"192.0.2.1\","
	                    "\"port\":1,\"network_interfaces\":[{\"host\":\"192.0.2.1\"}]}]");
	json_t *o = order(recs, "p");
	assert_int_equal(json_array_size(o), 1);
	assert_string_equal(host_at(o, 0), "192.0.2.1");
	json_decref(o);
	json_decref(recs);
	/* no address, no interfaces: the name */
	recs = load("[{\"type\":\"wq_master\",\"project\":\"p\",\"name\":\"n\",\"port\":1}]");
	o = order(recs, "p");
	assert_int_equal(json_array_size(o), 1);
	assert_string_equal(host_at(o, 0), "n");
	json_decref(o);
	json_decref(recs);
}

/* -M is a regular expression over the whole project name, as in CCTools: each address carries
 * the project of its master, which the handshake then names. */
static void test_project_pattern(void **state)
{
	(void)state;
	json_t *recs =
	    load("[{\"type\":\"wq_master\",\"project\":\"myproj\",\"address\":\"192.0.2.1\","
	         "\"port\":1},"
	         "{\"type\":\"wq_master\",\"project\":\"myproj2\",\"address\":\"192.0.2.2\","
	         "\"port\":2},"
	         "{\"type\":\"wq_master\",\"project\":\"other\",\"address\":\"192.0.2.3\","
	         "\"port\":3}]");
	json_t *o = order(recs, "myproj");
	assert_int_equal(json_array_size(o), 1); /* not myproj2: the whole name */
	assert_string_equal(host_at(o, 0), "192.0.2.1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(o, 0), "project")),
	                    "myproj");
	json_decref(o);
	o = order(recs, "myproj.*");
	assert_int_equal(json_array_size(o), 2);
	json_decref(o);
	o = order(recs, "myproj2|oth.*");
	assert_int_equal(json_array_size(o), 2);
	for (size_t i = 0; i < 2; i++) {
		const char *p = json_string_value(json_object_get(json_array_get(o, i), "project"));
		assert_true(!strcmp(p, "myproj2") || !strcmp(p, "other"));
	}
	json_decref(o);
	json_decref(recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_priority_first),
	    cmocka_unit_test(test_equal_priority_shuffled),
	    cmocka_unit_test(test_preferred_connection),
	    cmocka_unit_test(test_project_pattern),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
