/* test_wq_msg_images.c: unit tests for the validator of the worker's `images` message
 * (doc/work-queue-protocol.md 5.2): a good report, the required keys, bad names and objects,
 * the cap on each list, and the message table (a worker's message, not in INIT). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_msg.h"
#include "banned.h"

#define OBJ "F-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int parse(const char *text, struct wq_images **im, char **why)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	assert_non_null(j);
	int r = wq_msg_images_parse(j, im, why);
	json_decref(j);
	return r;
}

static void test_good(void **state)
{
	(void)state;
	struct wq_images *im = NULL;
	char *why = NULL;
	assert_int_equal(parse("{\"m\":\"images\",\"engine\":false,\"names\":[\"busybox:1\","
	                       "\"reg.example/a/b@sha256:00\"],\"archives\":[\"" OBJ "\"]}",
	                       &im, &why),
	                 0);
	assert_false(im->engine);
	assert_int_equal(im->nnames, 2);
	assert_string_equal(im->names[1], "reg.example/a/b@sha256:00");
	assert_int_equal(im->narchives, 1);
	assert_string_equal(im->archives[0], OBJ);
	wq_images_free(im);
	wq_images_free(NULL);
}

static void expect_bad(const char *text, const char *needle)
{
	struct wq_images *im = NULL;
	char *why = NULL;
	assert_int_equal(parse(text, &im, &why), HTC_EPROTO);
	assert_null(im);
	assert_non_null(why);
	if (!strstr(why, needle))
		fail_msg("\"%s\" does not say \"%s\"", why, needle);
	free(why);
}

static void test_bad(void **state)
{
	(void)state;
	expect_bad("{\"m\":\"images\",\"names\":[],\"archives\":[]}", "engine");
	expect_bad("{\"m\":\"images\",\"engine\":true,\"archives\":[]}", "names");
	expect_bad("{\"m\":\"images\",\"engine\":true,\"names\":[]}", "archives");
	expect_bad("{\"m\":\"images\",\"engine\":true,\"names\":[\"-x y\"],\"archives\":[]}",
	           "names[0]");
	expect_bad("{\"m\":\"images\",\"engine\":true,\"names\":[7],\"archives\":[]}", "names[0]");
	/* a directory object is no archive */
	expect_bad("{\"m\":\"images\",\"engine\":true,\"names\":[],\"archives\":[\"D-0123456789"
	           "abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"]}",
	           "archives[0]");
}

static void test_cap(void **state)
{
	(void)state;
	json_t *names = json_array();
	for (int i = 0; i <= WQ_OBJECTS_MAX; i++)
		json_array_append_new(names, json_string("a:1"));
	json_t *j =
	    json_pack("{s:s,s:b,s:o,s:[]}", "m", "images", "engine", 1, "names", names, "archives");
	struct wq_images *im = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_images_parse(j, &im, &why), HTC_EPROTO);
	free(why);
	json_array_remove(names, 0);
	assert_int_equal(wq_msg_images_parse(j, &im, &why), 0);
	assert_int_equal(im->nnames, WQ_OBJECTS_MAX);
	wq_images_free(im);
	json_decref(j);
}

static void test_table(void **state)
{
	(void)state;
	char *why = NULL;
	enum wq_msg_id id = wq_msg_lookup("images");
	assert_int_equal(id, WQ_MSG_IMAGES);
	assert_int_equal(wq_msg_check(id, "images", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why), 0);
	assert_int_not_equal(wq_msg_check(id, "images", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why), 0);
	free(why);
	why = NULL;
	assert_int_not_equal(wq_msg_check(id, "images", WQ_DIR_W2M, WQ_STATE_INIT, &why), 0);
	free(why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
