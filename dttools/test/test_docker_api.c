/* test_docker_api.c: unit tests of the Docker Engine API client (docker_api) that need no
 * daemon: a socket path that does not exist, a fake engine on a Unix socket (a forked child)
 * answering errors with a JSON message or plain text, DOCKER_HOST parsing, and the attach
 * stream's frame demultiplexing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "htc_error.h"
#include "docker_api.h"
#include "ts_fake_engine.h"
#include "ts_tmpdir.h"

#include "banned.h"

static void reap(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static void test_missing_socket(void **state)
{
	(void)state;
	char *err = NULL;
	struct docker_api *d = docker_api_create("/nonexistent/dir/docker.sock", &err);
	assert_non_null(d);
	int r = docker_api_ping(d, &err);
	assert_true(r < 0);
	assert_non_null(err);
	assert_non_null(strstr(err, "docker GET /_ping"));
	assert_non_null(
	    strstr(err, "cannot reach the Docker Engine at /nonexistent/dir/docker.sock"));
	free(err);
	/* not "no such container": the removal of a container fails when the engine is not there */
	err = NULL;
	assert_int_equal(docker_api_remove(d, "0123abcd", &err), -ECONNREFUSED);
	assert_non_null(err);
	free(err);
	docker_api_delete(d);
}

static void test_json_message(void **state)
{
	(void)state;
	char *path = ts_tmpdir_create("test_docker_api");
	char sock[256];
	snprintf(sock, sizeof sock, "%s/s", path);
	const char *resp = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
	                   "Content-Length: 38\r\nConnection: close\r\n\r\n"
	                   "{\"message\":\"No such image: nosuch:1\"}\n";
	pid_t pid = ts_fake_engine(sock, resp, 2);
	char *err = NULL;
	struct docker_api *d = docker_api_create(sock, &err);
	int r = docker_api_image_exists(d, "nosuch:1", &err);
	assert_int_equal(r, -ENOENT);
	assert_string_equal(err, "docker GET /images/nosuch:1/json: 404: No such image: nosuch:1");
	free(err);
	err = NULL;
	char *id = NULL;
	json_t *cfg = json_pack("{s:s}", "Image", "nosuch:1");
	r = docker_api_create_container(d, "x", cfg, &id, &err);
	json_decref(cfg);
	assert_int_equal(r, -ENOENT);
	assert_null(id);
	assert_non_null(strstr(err, "docker POST /containers/create?name=x: 404: No such image"));
	free(err);
	docker_api_delete(d);
	reap(pid);
	ts_tmpdir_remove(path);
}

static void test_plain_error(void **state)
{
	(void)state;
	char *path = ts_tmpdir_create("test_docker_api");
	char sock[256];
	snprintf(sock, sizeof sock, "%s/s", path);
	const char *resp = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 12\r\n"
	                   "Connection: close\r\n\r\nengine down\n";
	pid_t pid = ts_fake_engine(sock, resp, 1);
	char *err = NULL;
	struct docker_api *d = docker_api_create(sock, &err);
	int r = docker_api_ping(d, &err);
	assert_int_equal(r, -EIO);
	assert_string_equal(err, "docker GET /_ping: 500: engine down");
	free(err);
	docker_api_delete(d);
	reap(pid);
	ts_tmpdir_remove(path);
}

static void test_timeout(void **state)
{
	(void)state;
	char *path = ts_tmpdir_create("test_docker_api");
	char sock[256];
	snprintf(sock, sizeof sock, "%s/s", path);
	/* headers that promise a body that never comes */
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{";
	pid_t pid = ts_fake_engine_hold(sock, resp, 1, 5);
	char *err = NULL;
	struct docker_api *d = docker_api_create(sock, &err);
	docker_api_set_timeout(d, 300);
	int r = docker_api_ping(d, &err);
	assert_int_equal(r, -ETIMEDOUT);
	assert_non_null(strstr(err, "docker GET /_ping:"));
	free(err);
	docker_api_delete(d);
	reap(pid);
	ts_tmpdir_remove(path);
}

static void test_docker_host(void **state)
{
	(void)state;
	char *err = NULL;
	setenv("DOCKER_HOST", "tcp://1.2.3.4:2375", 1);
	assert_null(docker_api_create(NULL, &err));
	assert_non_null(strstr(err, "DOCKER_HOST=tcp://1.2.3.4:2375"));
	free(err);
	setenv("DOCKER_HOST", "unix:///run/x.sock", 1);
	struct docker_api *d = docker_api_create(NULL, &err);
	assert_string_equal(docker_api_socket(d), "/run/x.sock");
	docker_api_delete(d);
	unsetenv("DOCKER_HOST");
	d = docker_api_create(NULL, &err);
	assert_string_equal(docker_api_socket(d), DOCKER_API_DEFAULT_SOCKET);
	docker_api_delete(d);
}

static void test_bad_image_name(void **state)
{
	(void)state;
	char *err = NULL;
	struct docker_api *d = docker_api_create("/nonexistent.sock", &err);
	assert_int_equal(docker_api_image_exists(d, "a b", &err), HTC_EPARSE);
	assert_non_null(strstr(err, "image name \"a b\""));
	free(err);
	docker_api_delete(d);
}

static void test_demux(void **state)
{
	(void)state;
	int out[2], er[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(er), 0);
	struct docker_api_demux x;
	docker_api_demux_init(&x, out[1], er[1]);
	const char s[] = "\1\0\0\0\0\0\0\5hello\2\0\0\0\0\0\0\3err\1\0\0\0\0\0\0\1!";
	size_t n = sizeof s - 1;
	/* fed one byte at a time: headers and payloads cut anywhere */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(docker_api_demux_feed(&x, s + i, 1), 0);
	close(out[1]);
	close(er[1]);
	char b[64];
	ssize_t r = read(out[0], b, sizeof b - 1);
	assert_int_equal(r, 6);
	b[r] = 0;
	assert_string_equal(b, "hello!");
	r = read(er[0], b, sizeof b - 1);
	assert_int_equal(r, 3);
	b[r] = 0;
	assert_string_equal(b, "err");
	close(out[0]);
	close(er[0]);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_missing_socket), cmocka_unit_test(test_json_message),
	    cmocka_unit_test(test_plain_error),    cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_docker_host),    cmocka_unit_test(test_bad_image_name),
	    cmocka_unit_test(test_demux),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
