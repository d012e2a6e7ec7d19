/* test_worker_engine.c: unit tests for the watch on the worker's container engine: an engine
 * that does not answer is reported down with the client's words, one that answers is reported
 * up again, a task's report of a lost engine is taken at once and only once, the watch does not
 * keep the loop alive, and a watch deleted with a ping in flight ends cleanly. The engine is a
 * forked child answering HTTP on a Unix socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ts_fake_engine.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "worker_engine.h"
#include "xalloc.h"
#include "banned.h"

#define PONG "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nOK"

struct seen {
	int calls;
	bool up;
	char why[512];
};

static void on_change(bool up, const char *why, void *arg)
{
	struct seen *s = arg;
	s->calls++;
	s->up = up;
	snprintf(s->why, sizeof s->why, "%s", why ? why : "");
}

struct wait_for {
	struct seen *s;
	int calls;
};

static bool called(void *arg)
{
	struct wait_for *w = arg;
	return w->s->calls >= w->calls;
}

static void on_alive(uv_timer_t *t)
{
	(void)t;
}

static void test_down_then_up(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("engine");
	char *sock = xasprintf("%s/docker.sock", d);
	uv_loop_t loop;
	uv_loop_init(&loop);
	/* the worker's connection keeps its loop alive; here a timer does, while we wait */
	uv_timer_t alive;
	uv_timer_init(&loop, &alive);
	uv_timer_start(&alive, on_alive, 1000, 1000);
	struct seen s = {0};
	assert_null(worker_engine_create(&loop, sock, 0, on_change, &s));
	struct worker_engine *e = worker_engine_create(&loop, sock, 20, on_change, &s);
	assert_non_null(e);
	assert_true(worker_engine_up(e));
	/* nothing listens: down, with the client's words naming the socket */
	struct wait_for w = {&s, 1};
	assert_true(ts_run_until(&loop, called, &w, 10000));
	assert_false(s.up);
	assert_false(worker_engine_up(e));
	assert_non_null(strstr(s.why, sock));
	/* still down at the next asks: no second call */
	ts_run_for(&loop, 100);
	assert_int_equal(s.calls, 1);
	/* an engine that answers: up again */
	pid_t pid = ts_fake_engine(sock, PONG, 100000); /* every request until killed */
	w.calls = 2;
	assert_true(ts_run_until(&loop, called, &w, 10000));
	assert_true(s.up);
	assert_true(worker_engine_up(e));
	/* a task found it gone: down at once, once */
	worker_engine_down(e, "the container engine at X stopped answering");
	assert_int_equal(s.calls, 3);
	assert_false(s.up);
	assert_string_equal(s.why, "the container engine at X stopped answering");
	worker_engine_down(e, "again");
	assert_int_equal(s.calls, 3);
	/* and up again at the next ask */
	w.calls = 4;
	assert_true(ts_run_until(&loop, called, &w, 10000));
	assert_true(s.up);
	/* deleted with a ping perhaps in flight: the loop ends (the timer holds it not) */
	worker_engine_check(e);
	worker_engine_delete(e);
	worker_engine_delete(NULL);
	uv_close((uv_handle_t *)&alive, NULL);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(s.calls, 4);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	free(sock);
	ts_tmpdir_remove(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_down_then_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
