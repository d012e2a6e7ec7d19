/* test_catalog_store.c: unit tests of the catalog record table (catalog_store.h) with an
 * injected clock: validation of updates, identity and replacement, server-set keys, expiry by
 * -T and by a record's own lifetime, the record and byte caps, and filtered queries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_store.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

#define SEC 1000000LL
#define T0  (1700000000LL * SEC)

static int put(struct catalog_store *s, const char *text, const char *addr, int64_t now, char **key)
{
	char *err = NULL;
	int rc = catalog_store_update(s, text, strlen(text), addr, now, key, &err);
	if (rc < 0) {
		assert_non_null(err);
		free(err);
	} else {
		assert_null(err);
	}
	return rc;
}

static void expect_refused(struct catalog_store *s, const char *text, int code, const char *words)
{
	char *err = NULL;
	char *key = (char *)1;
	assert_int_equal(catalog_store_update(s, text, strlen(text), "1.2.3.4", T0, &key, &err),
	                 code);
	assert_null(key);
	if (!err || !strstr(err, words))
		fail_msg("update %s: error '%s' does not mention '%s'", text, err ? err : "(none)",
		         words);
	free(err);
}

static void test_validation(void **state)
{
	(void)state;
	struct catalog_store *s = catalog_store_create(NULL);
	expect_refused(s, "{", HTC_EPARSE, "invalid JSON");
	expect_refused(s, "\x01\x02garbage", HTC_EPARSE, "invalid JSON");
	expect_refused(s, "[1,2]", HTC_EPARSE, "not a JSON object");
	expect_refused(s, "{\"name\":\"h\",\"port\":1}", HTC_EPARSE, "\"type\"");
	expect_refused(s, "{\"type\":\"a b\",\"name\":\"h\",\"port\":1}", HTC_EPARSE, "\"type\"");
	expect_refused(s, "{\"type\":\"x\",\"port\":1}", HTC_EPARSE, "\"name\"");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"\",\"port\":1}", HTC_EPARSE, "1..255");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"a\\nb\",\"port\":1}", HTC_EPARSE,
	               "character");
	expect_refused(s, "{\"type\":\"x\",\"name\":7,\"port\":1}", HTC_EPARSE, "string");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\"}", HTC_EPARSE, "\"port\"");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\",\"port\":\"1\"}", HTC_EPARSE, "0..65535");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\",\"port\":65536}", HTC_EPARSE, "0..65535");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\",\"port\":-1}", HTC_EPARSE, "0..65535");
	expect_refused(s, "{\"type\":\"wq_master\",\"name\":\"h\",\"port\":1}", HTC_EPARSE,
	               "\"project\"");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\",\"port\":1,\"lifetime\":0}", HTC_EPARSE,
	               "lifetime");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\",\"port\":1,\"type\":\"y\"}", HTC_EPARSE,
	               "duplicate");
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h\\u0000\",\"port\":1}", HTC_EPARSE,
	               "invalid JSON");
	assert_int_equal(catalog_store_count(s), 0);
	assert_int_equal(catalog_store_bytes(s), 0);
	catalog_store_delete(s);
	catalog_store_delete(NULL);
}

static void test_identity(void **state)
{
	(void)state;
	struct catalog_store *s = catalog_store_create(NULL);
	char *key;
	const char *a = "{\"type\":\"wq_master\",\"name\":\"h\",\"port\":9123,\"project\":\"p\","
	                "\"address\":\"9.9.9.9\",\"lastheard\":1,\"n\":1}";
	assert_int_equal(put(s, a, "10.0.0.1", T0 + SEC / 2, &key), CATALOG_UPDATE_NEW);
	assert_string_equal(key, "wq_master|10.0.0.1|h|9123");
	free(key);
	json_t *q = catalog_store_query(s, NULL, T0 + SEC);
	assert_int_equal(json_array_size(q), 1);
	json_t *r = json_array_get(q, 0);
	assert_string_equal(json_string_value(json_object_get(r, "address")), "10.0.0.1");
	assert_int_equal(json_integer_value(json_object_get(r, "lastheard")), T0 / SEC);
	json_decref(q);
	/* Same identity, another project: replaced, keys not repeated are dropped. */
	const char *b = "{\"type\":\"wq_master\",\"name\":\"h\",\"port\":9123,\"project\":\"p2\"}";
	assert_int_equal(put(s, b, "10.0.0.1", T0 + 10 * SEC, NULL), CATALOG_UPDATE_REPLACED);
	assert_int_equal(catalog_store_count(s), 1);
	assert_int_equal(catalog_store_bytes(s), strlen(b));
	q = catalog_store_query(s, NULL, T0 + 10 * SEC);
	r = json_array_get(q, 0);
	assert_string_equal(json_string_value(json_object_get(r, "project")), "p2");
	assert_null(json_object_get(r, "n"));
	assert_int_equal(json_integer_value(json_object_get(r, "lastheard")), T0 / SEC + 10);
	json_decref(q);
	/* Another address, port, name or type: new records. */
	assert_int_equal(put(s, b, "10.0.0.2", T0, NULL), CATALOG_UPDATE_NEW);
	assert_int_equal(put(s,
	                     "{\"type\":\"wq_master\",\"name\":\"h\",\"port\":9124,\"project\":"
	                     "\"p2\"}",
	                     "10.0.0.1", T0, NULL),
	                 CATALOG_UPDATE_NEW);
	assert_int_equal(put(s,
	                     "{\"type\":\"wq_master\",\"name\":\"h2\",\"port\":9123,\"project\":"
	                     "\"p2\"}",
	                     "10.0.0.1", T0, NULL),
	                 CATALOG_UPDATE_NEW);
	assert_int_equal(
	    put(s, "{\"type\":\"wq_factory\",\"name\":\"h\",\"port\":9123}", "10.0.0.1", T0, NULL),
	    CATALOG_UPDATE_NEW);
	assert_int_equal(catalog_store_count(s), 5);
	/* Filters. */
	struct catalog_filter *f;
	char *err;
	assert_int_equal(catalog_filter_parse("type=wq_master&port=9123", &f, &err), 0);
	q = catalog_store_query(s, f, T0 + SEC);
	assert_int_equal(json_array_size(q), 3);
	json_decref(q);
	catalog_filter_delete(f);
	catalog_store_delete(s);
}

static void test_expiry(void **state)
{
	(void)state;
	struct catalog_store_limits l = {10, 100, 1 << 20};
	struct catalog_store *s = catalog_store_create(&l);
	assert_int_equal(catalog_store_next_expiry(s), INT64_MAX);
	assert_int_equal(put(s, "{\"type\":\"x\",\"name\":\"long\",\"port\":1,\"lifetime\":100}",
	                     "1.1.1.1", T0, NULL),
	                 CATALOG_UPDATE_NEW);
	assert_int_equal(put(s, "{\"type\":\"x\",\"name\":\"short\",\"port\":1,\"lifetime\":3}",
	                     "1.1.1.1", T0, NULL),
	                 CATALOG_UPDATE_NEW);
	assert_int_equal(catalog_store_next_expiry(s), T0 + 3 * SEC);
	json_t *q = catalog_store_query(s, NULL, T0 + 3 * SEC - 1);
	assert_int_equal(json_array_size(q), 2);
	json_decref(q);
	/* Expired records are not returned even before expire() runs. */
	q = catalog_store_query(s, NULL, T0 + 3 * SEC);
	assert_int_equal(json_array_size(q), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(q, 0), "name")),
	                    "long");
	json_decref(q);
	assert_int_equal(catalog_store_expire(s, T0 + 3 * SEC - 1), 0);
	assert_int_equal(catalog_store_expire(s, T0 + 3 * SEC), 1);
	assert_int_equal(catalog_store_count(s), 1);
	/* lifetime 100 is capped by -T 10; a refresh restarts it. */
	assert_int_equal(put(s, "{\"type\":\"x\",\"name\":\"long\",\"port\":1,\"lifetime\":100}",
	                     "1.1.1.1", T0 + 5 * SEC, NULL),
	                 CATALOG_UPDATE_REPLACED);
	assert_int_equal(catalog_store_expire(s, T0 + 14 * SEC), 0);
	assert_int_equal(catalog_store_expire(s, T0 + 15 * SEC), 1);
	assert_int_equal(catalog_store_count(s), 0);
	assert_int_equal(catalog_store_bytes(s), 0);
	/* An update of an expired, not yet removed record counts as new. */
	assert_int_equal(put(s, "{\"type\":\"x\",\"name\":\"a\",\"port\":1}", "1.1.1.1", T0, NULL),
	                 CATALOG_UPDATE_NEW);
	assert_int_equal(
	    put(s, "{\"type\":\"x\",\"name\":\"a\",\"port\":1}", "1.1.1.1", T0 + 11 * SEC, NULL),
	    CATALOG_UPDATE_NEW);
	assert_int_equal(catalog_store_count(s), 1);
	catalog_store_delete(s);
}

static void test_caps(void **state)
{
	(void)state;
	struct catalog_store_limits l = {100, 3, 200};
	struct catalog_store *s = catalog_store_create(&l);
	char text[100];
	for (int i = 0; i < 3; i++) {
		snprintf(text, sizeof text, "{\"type\":\"x\",\"name\":\"h%d\",\"port\":1}", i);
		assert_int_equal(put(s, text, "1.1.1.1", T0, NULL), CATALOG_UPDATE_NEW);
	}
	expect_refused(s, "{\"type\":\"x\",\"name\":\"h9\",\"port\":1}", HTC_ELIMIT, "records");
	/* Existing identities may still be updated. */
	assert_int_equal(put(s, "{\"type\":\"x\",\"name\":\"h1\",\"port\":1}", "1.1.1.1", T0, NULL),
	                 CATALOG_UPDATE_REPLACED);
	/* Byte cap: growing one record past 200 bytes in total is refused. */
	char big[300];
	snprintf(big, sizeof big, "{\"type\":\"x\",\"name\":\"h0\",\"port\":1,\"pad\":\"%0150d\"}",
	         0);
	char *err = NULL;
	assert_int_equal(catalog_store_update(s, big, strlen(big), "1.1.1.1", T0, NULL, &err),
	                 HTC_ELIMIT);
	assert_non_null(strstr(err, "bytes"));
	free(err);
	assert_int_equal(catalog_store_count(s), 3);
	/* After expiry there is room again. */
	assert_int_equal(catalog_store_expire(s, T0 + 100 * SEC), 3);
	assert_int_equal(
	    put(s, "{\"type\":\"x\",\"name\":\"h9\",\"port\":1}", "1.1.1.1", T0 + 100 * SEC, NULL),
	    CATALOG_UPDATE_NEW);
	catalog_store_delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_validation),
	    cmocka_unit_test(test_identity),
	    cmocka_unit_test(test_expiry),
	    cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
