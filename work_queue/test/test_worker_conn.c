/* test_worker_conn.c: unit tests of the worker's connection cycle and exit paths (worker_conn.h)
 * against the scripted fake master of wq_fake_master.h: a worker that connects by itself to a
 * listening master and ends cleanly when told to shut down, and the two termination signals
 * (drain, then kill and bye). What the worker does is observed on the wire and in its exit
 * status, and its loop must end with no handle left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "path.h"
#include "ts_loop.h"
#include "ts_net.h"
#include "ts_tmpdir.h"
#include "worker_conn.h"
#include "worker_opts.h"
#include "wq_fake_master.h"
#include "xalloc.h"
#include "banned.h"

struct fx {
	uv_loop_t loop;
	char *dir;
	struct worker_opts o;
	struct worker *w;
	uv_tcp_t *listener; /* the master's port, when the worker connects by itself */
	struct fake_master *m;
};

static void on_connection(uv_stream_t *server, int status)
{
	struct fx *f = server->data;
	assert_int_equal(status, 0);
	assert_null(f->m); /* one connection */
	uv_tcp_t *tcp = xmalloc(sizeof *tcp);
	uv_tcp_init(&f->loop, tcp);
	assert_int_equal(uv_accept(server, (uv_stream_t *)tcp), 0);
	char *mdir = path_join(f->dir, "master");
	f->m = fake_master_start(&f->loop, tcp, mdir, 0, 0, 0);
	free(mdir);
}

/* A fake master listening on a free port of 127.0.0.1, and a worker for it (2 cores, 1000 MB of
 * memory and of disk, its workdir in the test's directory), not started. */
static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = ts_tmpdir_create("test_worker_conn");
	f->listener = xmalloc(sizeof *f->listener);
	uv_tcp_init(&f->loop, f->listener);
	f->listener->data = f;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(f->listener, (struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)f->listener, 4, on_connection), 0);
	struct sockaddr_in got;
	int len = sizeof got;
	assert_int_equal(uv_tcp_getsockname(f->listener, (struct sockaddr *)&got, &len), 0);
	f->o.host = xstrdup("127.0.0.1");
	f->o.port = ntohs(got.sin_port);
	f->o.cores = 2;
	f->o.memory_mb = 1000;
	f->o.disk_mb = 1000;
	f->o.gpus = 0;
	f->o.idle_timeout = WORKER_DEFAULT_IDLE_TIMEOUT;
	f->o.connect_timeout = WORKER_DEFAULT_CONNECT_TIMEOUT;
	f->o.workdir = path_join(f->dir, "worker");
	char *err = NULL;
	f->w = worker_create(&f->loop, &f->o, &err);
	if (!f->w)
		fail_msg("worker_create: %s", err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fake_master_delete(f->m);
	if (f->listener)
		uv_close((uv_handle_t *)f->listener, (uv_close_cb)free);
	worker_delete(f->w);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	free(f->o.host);
	free(f->o.workdir);
	ts_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static bool connected(void *arg)
{
	struct fx *f = arg;
	return f->m != NULL;
}

/* The loop has nothing left to run: the worker has closed every handle of its own. */
static bool loop_idle(void *arg)
{
	return !uv_loop_alive(arg);
}

static const char *str(json_t *msg, const char *key)
{
	const char *v = json_string_value(json_object_get(msg, key));
	return v ? v : "";
}

/* The worker connects to the master's port, handshakes and reports; `shutdown` ends it: bye,
 * exit status 0, and its loop has nothing left once the master has gone too. */
static void test_connect_and_shutdown(void **state)
{
	struct fx *f = *state;
	worker_start(f->w);
	assert_true(ts_run_until(&f->loop, connected, f, TS_WAIT_MS));
	fake_master_wait_handshake(f->m);
	assert_int_equal(f->m->outcome, WQ_HS_OK);
	fake_master_wait_msg(f->m, "cache_have", 1);
	fake_master_send(f->m, json_pack("{s:s,s:s}", "m", "shutdown", "reason", "test"));
	json_t *bye = fake_master_wait_msg(f->m, "bye", 1);
	assert_string_equal(str(bye, "reason"), "shutdown requested");
	fake_master_wait_closed(f->m);
	assert_int_equal(worker_exit_status(f->w), WORKER_EXIT_OK);
	fake_master_delete(f->m);
	f->m = NULL;
	uv_close((uv_handle_t *)f->listener, (uv_close_cb)free);
	f->listener = NULL;
	assert_true(ts_run_until(&f->loop, loop_idle, &f->loop, TS_WAIT_MS));
}

/* The first termination signal with a task running drains (no more tasks; `draining`); the
 * second kills the task and says bye. */
static void test_signals(void **state)
{
	struct fx *f = *state;
	uv_close((uv_handle_t *)f->listener, (uv_close_cb)free); /* over a socketpair instead */
	f->listener = NULL;
	uv_tcp_t *wt, *mt;
	ts_socket_pair(&f->loop, &wt, &mt);
	char *mdir = path_join(f->dir, "master");
	f->m = fake_master_start(&f->loop, mt, mdir, 0, 0, 0);
	free(mdir);
	worker_start_connected(f->w, wt, "fake-master");
	fake_master_wait_msg(f->m, "cache_have", 1);
	fake_master_send(f->m, json_pack("{s:s,s:i,s:i,s:s,s:{s:i,s:i,s:i,s:i},s:[],s:[]}", "m",
	                                 "task", "id", 1, "try", 1, "command", "exec sleep 300",
	                                 "resources", "cores", 1, "memory", 100, "disk", 10, "gpus",
	                                 0, "inputs", "outputs"));
	fake_master_wait_msg(f->m, "task_running", 1);

	worker_signal(f->w, SIGTERM);
	json_t *d = fake_master_wait_msg(f->m, "draining", 1);
	assert_string_equal(str(d, "reason"), "the worker received a termination signal");
	assert_false(f->m->closed);
	/* a task offered while draining is refused */
	fake_master_send(f->m,
	                 json_pack("{s:s,s:i,s:i,s:s,s:{s:i,s:i,s:i,s:i},s:[],s:[]}", "m", "task",
	                           "id", 2, "try", 1, "command", "true", "resources", "cores", 1,
	                           "memory", 100, "disk", 10, "gpus", 0, "inputs", "outputs"));
	json_t *r = fake_master_wait_msg(f->m, "task_refused", 1);
	assert_string_equal(str(r, "code"), "draining");

	worker_signal(f->w, SIGTERM);
	json_t *bye = fake_master_wait_msg(f->m, "bye", 1);
	assert_string_equal(str(bye, "reason"), "terminated by a signal");
	fake_master_wait_closed(f->m);
	assert_int_equal(fake_master_count(f->m, "task_done"), 0); /* killed, not finished */
	assert_int_equal(worker_exit_status(f->w), WORKER_EXIT_OK);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* a write to a closed end fails with EPIPE, as in the worker */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_connect_and_shutdown, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
