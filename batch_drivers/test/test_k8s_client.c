/* test_k8s_client.c: unit tests of the client's error texts and pod status reading
 * (k8s_client.h, k8s_pods.h): the call and the server's Status message quoted, non-Status
 * answers cut, status codes mapped, a pod's exit code and reason read together (Succeeded with
 * OOMKilled), and a refused connection reported with the server's address, without a hang.
 * No cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "htc_error.h"
#include "k8s_client.h"
#include "k8s_pods.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

static void test_status_message(void **state)
{
	(void)state;
	const char *body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	                   "\"status\":\"Failure\",\"message\":\"namespaces \\\"nosuch\\\" not "
	                   "found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nosuch\","
	                   "\"kind\":\"namespaces\"},\"code\":404}";
	char *t = k8s_error_text("POST", "/api/v1/namespaces/nosuch/pods", 404, body, strlen(body));
	assert_string_equal(t, "kubernetes POST /api/v1/namespaces/nosuch/pods: 404 NotFound: "
	                       "namespaces \"nosuch\" not found");
	free(t);
	body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	       "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}";
	t = k8s_error_text("GET", "/api/v1/namespaces/default/pods", 401, body, strlen(body));
	assert_string_equal(t, "kubernetes GET /api/v1/namespaces/default/pods: 401 Unauthorized: "
	                       "Unauthorized");
	free(t);
}

static void test_not_a_status(void **state)
{
	(void)state;
	char *t = k8s_error_text("GET", "/x", 502, "<html>\nbad gateway\n</html>", 27);
	assert_string_equal(t, "kubernetes GET /x: 502 HTTP error: <html> bad gateway </html>");
	free(t);
	t = k8s_error_text("GET", "/x", 503, NULL, 0);
	assert_string_equal(t, "kubernetes GET /x: 503 Service Unavailable: (an empty answer)");
	free(t);
	char big[600];
	memset(big, 'a', sizeof big);
	t = k8s_error_text("GET", "/x", 500, big, sizeof big);
	assert_true(strlen(t) < 300);
	assert_non_null(strstr(t, "..."));
	free(t);
	/* a Status without a message: the body is quoted */
	const char *b = "{\"kind\":\"Status\",\"code\":500}";
	t = k8s_error_text("DELETE", "/y", 500, b, strlen(b));
	assert_non_null(strstr(t, "kubernetes DELETE /y: 500 Internal Server Error: {"));
	free(t);
}

static void test_status_codes(void **state)
{
	(void)state;
	assert_int_equal(k8s_status_code(404), -ENOENT);
	assert_int_equal(k8s_status_code(409), -EEXIST);
	assert_int_equal(k8s_status_code(401), HTC_EAUTH);
	assert_int_equal(k8s_status_code(403), HTC_EAUTH);
	assert_int_equal(k8s_status_code(410), -ESTALE);
	assert_int_equal(k8s_status_code(422), -EINVAL);
	assert_int_equal(k8s_status_code(429), -EAGAIN);
	assert_int_equal(k8s_status_code(503), -EAGAIN);
	assert_int_equal(k8s_status_code(418), -EIO);
}

static json_t *pod(const char *json)
{
	json_error_t je;
	json_t *j = json_loads(json, 0, &je);
	if (!j)
		fail_msg("bad test JSON: %s", je.text);
	return j;
}

static void test_pod_result(void **state)
{
	(void)state;
	struct k8s_pod_result r;
	/* a child killed for memory while the main process lived on */
	json_t *p = pod("{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":"
	                "\"main\",\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":"
	                "\"OOMKilled\"}}}]}}");
	k8s_pod_result(p, "main", &r);
	assert_int_equal(r.phase, K8S_POD_SUCCEEDED);
	assert_true(r.finished);
	assert_int_equal(r.exit_code, 0);
	assert_true(r.oom);
	json_decref(p);
	p = pod("{\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"side\","
	        "\"state\":{\"running\":{}}},{\"name\":\"main\",\"state\":{\"terminated\":{"
	        "\"exitCode\":3,\"reason\":\"Error\",\"message\":\"boom\"}}}]}}");
	k8s_pod_result(p, "main", &r);
	assert_int_equal(r.phase, K8S_POD_FAILED);
	assert_false(r.stuck);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.reason, "Error");
	assert_string_equal(r.message, "boom");
	assert_false(r.oom);
	json_decref(p);
	p = pod("{\"status\":{\"phase\":\"Failed\",\"reason\":\"DeadlineExceeded\",\"message\":"
	        "\"Pod was active on the node longer than the specified deadline\"}}");
	k8s_pod_result(p, NULL, &r);
	assert_true(r.deadline);
	assert_false(r.terminated);
	assert_int_equal(r.exit_code, -1);
	assert_string_equal(r.reason, "DeadlineExceeded");
	json_decref(p);
	p = pod("{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"main\","
	        "\"state\":{\"waiting\":{\"reason\":\"ErrImageNeverPull\"}}}]}}");
	k8s_pod_result(p, NULL, &r);
	assert_false(r.finished);
	assert_string_equal(r.waiting, "ErrImageNeverPull");
	assert_true(r.stuck);
	json_decref(p);
}

/* A port on loopback that nothing listens on. */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	close(s);
	return ntohs(a.sin_port);
}

static void test_unreachable(void **state)
{
	(void)state;
	struct k8s_config *c = xcalloc(1, sizeof *c);
	c->source = xstrdup("test");
	c->server = xasprintf("https://127.0.0.1:%d", closed_port());
	c->namespace = xstrdup("default");
	c->token = xstrdup("t");
	struct k8s_client_options o = {.retry_ms = 1500};
	struct k8s_client *k = k8s_client_create(c, &o);
	char *err = NULL;
	long st = -1;
	int64_t t0 = time_monotonic_us();
	int e = k8s_call(k, "GET", "/api/v1/namespaces/default/pods", NULL, &st, NULL, &err);
	double s = (time_monotonic_us() - t0) / 1e6;
	assert_int_equal(e, -ECONNREFUSED);
	assert_int_equal(st, 0);
	char *want = xasprintf("kubernetes GET /api/v1/namespaces/default/pods: cannot reach %s:",
	                       c->server);
	if (strstr(err, want) != err || !strstr(err, "gave up after"))
		fail_msg("unexpected error: %s", err);
	assert_true(s < 10); /* retried for at most retry_ms, then gave up */
	free(want);
	free(err);
	k8s_client_delete(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_message), cmocka_unit_test(test_not_a_status),
	    cmocka_unit_test(test_status_codes),   cmocka_unit_test(test_pod_result),
	    cmocka_unit_test(test_unreachable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
