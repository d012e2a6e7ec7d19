/* test_k8s_factory.c: the driver options work_queue_factory -T k8s gives (image, mounted
 * binary, host network, owner, size) and the quantities of node sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_factory.h"
#include "k8s_run.h"
#include "banned.h"

static int has(char **opts, const char *kv)
{
	for (size_t i = 0; opts && opts[i]; i++)
		if (!strcmp(opts[i], kv))
			return 1;
	return 0;
}

static const char *value(char **opts, const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; opts && opts[i]; i++)
		if (!strncmp(opts[i], key, n) && opts[i][n] == '=')
			return opts[i] + n + 1;
	return NULL;
}

static void test_default_image(void **state)
{
	(void)state;
	char err[256] = "";
	struct k8s_factory_out o;
	struct k8s_factory_in in = {
	    .binary = "/x/work_queue_worker", .master = "h:9123", .size = ""};
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), 0);
	assert_true(has(o.opts, "image=" K8S_FACTORY_DEFAULT_IMAGE));
	assert_true(has(o.opts, "host-network=yes"));
	assert_true(has(o.opts, "whole-node=yes"));
	assert_null(value(o.opts, "mount"));
	assert_string_equal(o.binary, "work_queue_worker");
	assert_string_equal(o.size, " --cores \"$CORES\" --memory \"$MEMORY\"");
	/* the owner names the master: the same master gives the same owner */
	const char *owner = value(o.opts, "owner");
	assert_non_null(owner);
	assert_int_equal(strlen(owner), 4 + 16);
	char first[32];
	strncpy(first, owner, sizeof first - 1);
	first[sizeof first - 1] = 0;
	k8s_factory_out_clear(&o);
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), 0);
	assert_string_equal(value(o.opts, "owner"), first);
	k8s_factory_out_clear(&o);
	in.master = "h:9124";
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), 0);
	assert_string_not_equal(value(o.opts, "owner"), first);
	k8s_factory_out_clear(&o);
}

static void test_sized_worker_image(void **state)
{
	(void)state;
	char err[256] = "";
	struct k8s_factory_out o;
	struct k8s_factory_in in = {.worker_image = "w:1",
	                            .binary = "/x/work_queue_worker",
	                            .given_binary = "/opt/wq/bin/work_queue_worker",
	                            .master = "project:p",
	                            .size = " --cores 2 --memory 512"};
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), 0);
	assert_true(has(o.opts, "image=w:1"));
	assert_true(has(o.opts, "default-cores=2"));
	assert_true(has(o.opts, "default-memory=512"));
	assert_false(has(o.opts, "whole-node=yes"));
	assert_string_equal(o.binary, "/opt/wq/bin/work_queue_worker");
	assert_string_equal(o.size, " --cores 2 --memory 512");
	k8s_factory_out_clear(&o);
}

static void test_mounted_binary(void **state)
{
	(void)state;
	char err[256] = "";
	struct k8s_factory_out o;
	struct k8s_factory_in in = {
	    .image = "i:1", .binary = "/bin/sh", .master = "h:1", .size = ""};
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), 0);
	assert_true(has(o.opts, "image=i:1"));
	const char *m = value(o.opts, "mount");
	assert_non_null(m);
	assert_string_equal(m, o.binary);
	assert_true(o.binary[0] == '/');
	k8s_factory_out_clear(&o);
	in.binary = "/nonexistent/work_queue_worker";
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "/nonexistent/work_queue_worker"));
	in.binary = "/bin/sh";
	in.worker_image = "w:1";
	assert_int_equal(k8s_factory_setup(&in, &o, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "--k8s-worker-image"));
}

static void test_quantities(void **state)
{
	(void)state;
	assert_int_equal(k8s_quantity_millicores("2"), 2000);
	assert_int_equal(k8s_quantity_millicores("1500m"), 1500);
	assert_int_equal(k8s_quantity_millicores("0.5"), 500);
	assert_int_equal(k8s_quantity_millicores("2Ki"), -1);
	assert_int_equal(k8s_quantity_millicores("x"), -1);
	assert_int_equal(k8s_quantity_millicores(NULL), -1);
	assert_int_equal(k8s_quantity_bytes("8041232Ki"), 8041232LL * 1024);
	assert_int_equal(k8s_quantity_bytes("512Mi"), 512LL * 1024 * 1024);
	assert_int_equal(k8s_quantity_bytes("1G"), 1000000000LL);
	assert_int_equal(k8s_quantity_bytes("1e3"), 1000);
	assert_int_equal(k8s_quantity_bytes("123"), 123);
	assert_int_equal(k8s_quantity_bytes("1E"), 1000000000000000000LL);
	assert_int_equal(k8s_quantity_bytes("12Q"), -1);
	assert_int_equal(k8s_quantity_bytes("-1"), -1);
	assert_int_equal(k8s_quantity_bytes("inf"), -1);
	assert_int_equal(k8s_quantity_bytes(""), -1);
}

static void test_pod_times(void **state)
{
	(void)state;
	json_t *pod = json_loads(
	    "{\"metadata\":{\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
	    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
	    "\"lastTransitionTime\":\"x\"},{\"type\":\"PodScheduled\",\"status\":\"True\","
	    "\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}],\"containerStatuses\":[{\"state\":"
	    "{\"terminated\":{\"startedAt\":\"2026-01-01T00:00:03Z\"}}}]}}",
	    0, NULL);
	assert_non_null(pod);
	struct k8s_pod_times t;
	k8s_pod_times(pod, &t);
	assert_string_equal(t.created, "2026-01-01T00:00:00Z");
	assert_string_equal(t.scheduled, "2026-01-01T00:00:01Z");
	assert_string_equal(t.running, "2026-01-01T00:00:03Z");
	json_decref(pod);
	pod = json_loads("{\"metadata\":{}}", 0, NULL);
	k8s_pod_times(pod, &t);
	assert_string_equal(t.created, "");
	assert_string_equal(t.scheduled, "");
	assert_string_equal(t.running, "");
	json_decref(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_image),  cmocka_unit_test(test_sized_worker_image),
	    cmocka_unit_test(test_mounted_binary), cmocka_unit_test(test_quantities),
	    cmocka_unit_test(test_pod_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
