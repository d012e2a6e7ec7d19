/* test_worker_session.c: unit tests of a worker's session with a master (worker_conn.h,
 * worker_session.c): a real worker on one end of a socketpair(AF_UNIX) and the scripted fake
 * master of wq_fake_master.h on the other. Everything is observed on the wire: the handshake and
 * the report after it, a task with a per-task input and an output, a cancel, a keepalive ping,
 * and protocol violations that end the connection with their text. */
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
#include "wq_msg.h"
#include "xalloc.h"
#include "banned.h"

struct fx {
	uv_loop_t loop;
	char *dir;
	struct worker_opts o;
	struct worker *w;
	struct fake_master *m;
};

/* A worker with declared resources (2 cores, 1000 MB of memory and of disk) in DIR/worker, whose
 * only master is the fake one at the other end of a socketpair; after a lost session it would
 * try 127.0.0.1:1, where nobody listens. */
static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = ts_tmpdir_create("test_worker_session");
	f->o.host = xstrdup("127.0.0.1");
	f->o.port = 1;
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
	uv_tcp_t *wt, *mt;
	ts_socket_pair(&f->loop, &wt, &mt);
	char *mdir = path_join(f->dir, "master");
	f->m = fake_master_start(&f->loop, mt, mdir, WQ_CAP_WATCH | WQ_CAP_QUEUE, 0, 0);
	free(mdir);
	worker_start_connected(f->w, wt, "fake-master");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fake_master_delete(f->m);
	worker_delete(f->w); /* runs the loop until the worker's handles are closed */
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	free(f->o.host);
	free(f->o.workdir);
	ts_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static const char *str(json_t *msg, const char *key)
{
	const char *v = json_string_value(json_object_get(msg, key));
	return v ? v : "";
}

static int64_t num(json_t *msg, const char *key)
{
	return json_integer_value(json_object_get(msg, key));
}

/* The handshake is over and the worker has reported (identity, capacity, cache_have). */
static void wait_reported(struct fx *f)
{
	fake_master_wait_handshake(f->m);
	assert_int_equal(f->m->outcome, WQ_HS_OK);
	fake_master_wait_msg(f->m, "cache_have", 1);
}

/* A task message: ID, try 1, COMMAND, 1 core, 100 MB, 10 MB of disk. */
static json_t *task_msg(int64_t id, const char *command)
{
	return json_pack("{s:s,s:I,s:i,s:s,s:{s:i,s:i,s:i,s:i},s:[],s:[]}", "m", "task", "id",
	                 (json_int_t)id, "try", 1, "command", command, "resources", "cores", 1,
	                 "memory", 100, "disk", 10, "gpus", 0, "inputs", "outputs");
}

/* The N-th message NAME about task ID, waiting for it. */
static json_t *wait_task_msg(struct fx *f, const char *name, int64_t id)
{
	for (int n = 1;; n++) {
		json_t *m = fake_master_wait_msg(f->m, name, n);
		if (num(m, "id") == id)
			return m;
	}
}

/* The fatal `error` the worker sent before closing, and the close. */
static void expect_violation(struct fx *f, const char *text)
{
	json_t *e = fake_master_wait_msg(f->m, "error", 1);
	assert_string_equal(str(e, "code"), "proto");
	assert_string_equal(str(e, "text"), text);
	assert_true(json_is_true(json_object_get(e, "fatal")));
	fake_master_wait_closed(f->m);
	assert_int_equal(f->m->why, WQ_CONN_END_EOF);
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* The handshake, then identity, capacity and the (empty) cache, in that order. */
static void test_handshake_and_report(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	assert_int_equal(strlen(f->m->worker_id), 32);
	/* the capabilities both sides have */
	assert_int_equal(f->m->caps, WQ_CAP_WATCH | WQ_CAP_QUEUE);
	json_t *ident = fake_master_msg(f->m, "identity", 1);
	json_t *cap = fake_master_msg(f->m, "capacity", 1);
	json_t *have = fake_master_msg(f->m, "cache_have", 1);
	assert_non_null(ident);
	assert_non_null(cap);
	assert_int_equal(fake_master_index(f->m, ident), 0);
	assert_int_equal(fake_master_index(f->m, cap), 1);
	assert_int_equal(fake_master_index(f->m, have), 2);
	/* -s DIR: the workspace of this worker under DIR, as CCTools makes it */
	char *ws = xasprintf("%s/worker-%ld-%ld", f->o.workdir, (long)getuid(), (long)getpid());
	assert_string_equal(str(ident, "workdir"), ws);
	free(ws);
	assert_true(num(ident, "queue_max") > 0); /* queue was agreed */
	struct wq_capacity *c = NULL;
	char *why = NULL;
	if (wq_msg_capacity_parse(cap, &c, &why) != 0)
		fail_msg("capacity refused: %s", why);
	assert_true(c->cores.total == 2 && c->cores.declared);
	assert_true(c->memory.total == 1000 && c->memory.declared);
	assert_true(c->disk.total == 1000 && c->disk.declared);
	wq_capacity_free(c);
	assert_int_equal(json_array_size(json_object_get(have, "objects")), 0);
	assert_true(json_is_true(json_object_get(have, "last")));
}

/* A task with a per-task input: task_running, its output and stdout sent back, then task_done
 * naming both transfers. */
static void test_task_with_input_and_output(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	json_t *t = task_msg(1, "cat in.txt > out.txt; echo done");
	json_array_append_new(json_object_get(t, "inputs"),
	                      json_pack("{s:s,s:s}", "name", "in.txt", "from", "task"));
	json_array_append_new(json_object_get(t, "outputs"),
	                      json_pack("{s:s,s:s}", "name", "out.txt", "when", "always"));
	fake_master_send(f->m, t);
	fake_master_send_input(f->m, 1, 0, "hello worker\n");

	json_t *running = wait_task_msg(f, "task_running", 1);
	json_t *done = wait_task_msg(f, "task_done", 1);
	assert_true(fake_master_index(f->m, running) < fake_master_index(f->m, done));
	assert_int_equal(num(done, "try"), 1);
	assert_string_equal(str(done, "outcome"), "exited");
	assert_int_equal(num(done, "exit_status"), 0);
	json_t *out0 = json_array_get(json_object_get(done, "outputs"), 0);
	assert_int_equal(num(out0, "index"), 0);
	uint32_t ox = (uint32_t)num(out0, "xfer");
	json_t *so = json_object_get(done, "stdout");
	uint32_t sx = (uint32_t)num(so, "xfer");
	assert_int_equal(num(so, "size"), 5);
	assert_true(ox > 0 && sx > 0 && ox != sx);
	/* the transfers were sent before task_done; the receiver may store them after it */
	const struct fake_master_recv *r = fake_master_wait_recv(f->m, ox);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->kind, WQ_TARGET_OUTPUT);
	assert_int_equal(r->task, 1);
	assert_string_equal(r->content, "hello worker\n");
	r = fake_master_wait_recv(f->m, sx);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->kind, WQ_TARGET_STDOUT);
	assert_string_equal(r->content, "done\n");
	assert_int_equal(f->m->sends_done, 1); /* the input */
	assert_false(f->m->closed);
}

/* A task given the worker's whole disk still receives its per-task inputs: they land in its
 * own sandbox, inside that allocation (they were checked against the free disk, which the
 * allocation had used up, and refused as disk_full: the task never started). */
static void test_input_of_task_with_whole_disk(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	json_t *t = task_msg(3, "cat in.txt > out.txt");
	json_object_set_new(json_object_get(t, "resources"), "disk", json_integer(1000));
	json_array_append_new(json_object_get(t, "inputs"),
	                      json_pack("{s:s,s:s}", "name", "in.txt", "from", "task"));
	json_array_append_new(json_object_get(t, "outputs"),
	                      json_pack("{s:s,s:s}", "name", "out.txt", "when", "always"));
	fake_master_send(f->m, t);
	fake_master_send_input(f->m, 3, 0, "whole disk\n");
	json_t *done = wait_task_msg(f, "task_done", 3);
	assert_string_equal(str(done, "outcome"), "exited");
	assert_int_equal(num(done, "exit_status"), 0);
	uint32_t ox = (uint32_t)num(json_array_get(json_object_get(done, "outputs"), 0), "xfer");
	const struct fake_master_recv *r = fake_master_wait_recv(f->m, ox);
	assert_string_equal(r->content, "whole disk\n");
	assert_false(f->m->closed);
}

/* A running task is cancelled: task_cancelled (known), never a task_done; a cancel for a task
 * the worker does not have is answered known: false. */
static void test_cancel(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	fake_master_send(f->m, task_msg(2, "exec sleep 300"));
	wait_task_msg(f, "task_running", 2);
	fake_master_send(f->m, json_pack("{s:s,s:i,s:i}", "m", "task_cancel", "id", 2, "try", 1));
	json_t *c = wait_task_msg(f, "task_cancelled", 2);
	assert_int_equal(num(c, "try"), 1);
	assert_true(json_is_true(json_object_get(c, "known")));
	assert_int_equal(fake_master_count(f->m, "task_done"), 0);

	fake_master_send(f->m, json_pack("{s:s,s:i,s:i}", "m", "task_cancel", "id", 9, "try", 1));
	c = wait_task_msg(f, "task_cancelled", 9);
	assert_false(json_is_true(json_object_get(c, "known")));
	assert_false(f->m->closed);
}

/* A ping from the master is answered with a pong carrying its seq. */
static void test_keepalive(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	fake_master_send(f->m, json_pack("{s:s,s:i}", "m", "ping", "seq", 42));
	json_t *pong = fake_master_wait_msg(f->m, "pong", 1);
	assert_int_equal(num(pong, "seq"), 42);
	fake_master_send(f->m, json_pack("{s:s,s:i}", "m", "ping", "seq", 43));
	pong = fake_master_wait_msg(f->m, "pong", 2);
	assert_int_equal(num(pong, "seq"), 43);
	assert_false(f->m->closed);
}

/* A message only a worker may send: a violation, the fatal error, and the connection ends. */
static void test_violation_wrong_direction(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	fake_master_send(f->m, json_pack("{s:s,s:i,s:i,s:s}", "m", "task_done", "id", 1, "try", 1,
	                                 "outcome", "exited"));
	expect_violation(f, "message \"task_done\" not allowed from the master");
}

/* A second task with the id of one the worker holds: a violation; the running one is killed
 * with the session. */
static void test_violation_duplicate_task(void **state)
{
	struct fx *f = *state;
	wait_reported(f);
	fake_master_send(f->m, task_msg(3, "exec sleep 300"));
	wait_task_msg(f, "task_running", 3);
	fake_master_send(f->m, task_msg(3, "true"));
	expect_violation(f, "task 3 is already on this worker");
	assert_int_equal(fake_master_count(f->m, "task_done"), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* a write to a closed end fails with EPIPE, as in the worker */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_handshake_and_report, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_task_with_input_and_output, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_input_of_task_with_whole_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_violation_wrong_direction, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_violation_duplicate_task, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
