/* test_wq_sim.c: a real master (the C API on a free port) and the simulated workers of wq_sim.h
 * on one loop: hundreds of tasks with cached and per-task inputs and output files through tens of
 * workers, a worker that drops its connection (its tasks run elsewhere), keepalive with a hung
 * worker, cancel, the password, and the fake worker's round trip played by the simulator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master_internal.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_auth.h"
#include "wq_fake_worker.h"
#include "wq_sim.h"
#include "xalloc.h"
#include "banned.h"

static struct wq_sim *sim_start(struct work_queue *q, int n, const struct wq_sim_opts *extra)
{
	struct wq_sim_opts o = {0};
	if (extra)
		o = *extra;
	o.port = work_queue_port(q);
	o.workers = n;
	struct wq_sim *s = wq_sim_create(work_queue_loop(q), &o);
	assert_non_null(s);
	return s;
}

static void sim_end(struct work_queue *q, struct wq_sim *s)
{
	fake_queue_delete(q);
	wq_sim_delete(s);
}

/* Runs Q until its simulator S satisfies DONE, collecting finished tasks into GOT. */
struct collect {
	struct work_queue_task **got;
	int ngot, want;
};

static void run_until(struct work_queue *q, struct wq_sim *s, struct collect *c,
                      bool (*done)(struct work_queue *, struct wq_sim *, struct collect *),
                      double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	while (!done(q, s, c) && uv_hrtime() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.02);
		if (t) {
			assert_non_null(c);
			assert_true(c->ngot < c->want);
			c->got[c->ngot++] = t;
		}
	}
	assert_true(done(q, s, c));
}

static bool all_collected(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)s;
	return c->ngot == c->want;
}

/* N tasks: cat of one of 5 cached objects and a per-task buffer into its own output file. */
static void submit_many(struct fake_env *e, struct work_queue *q, int n)
{
	for (int k = 0; k < 5; k++) {
		char p[256], text[64];
		snprintf(p, sizeof p, "%s/obj%d", e->dir, k);
		snprintf(text, sizeof text, "object %d\n", k);
		ts_write_file(p, text);
	}
	for (int i = 0; i < n; i++) {
		char obj[256], out[256], buf[64];
		snprintf(obj, sizeof obj, "%s/obj%d", e->dir, i % 5);
		snprintf(out, sizeof out, "%s/out%d", e->dir, i);
		snprintf(buf, sizeof buf, "task %d\n", i);
		struct work_queue_task *t = work_queue_task_create("cat ref buf > out");
		assert_int_equal(
		    work_queue_task_specify_input_file(t, obj, "ref", WORK_QUEUE_CACHE), 0);
		assert_int_equal(
		    work_queue_task_specify_buffer(t, buf, strlen(buf), "buf", WORK_QUEUE_NOCACHE),
		    0);
		assert_int_equal(
		    work_queue_task_specify_output_file(t, out, "out", WORK_QUEUE_NOCACHE), 0);
		work_queue_task_specify_cores(t, 1);
		work_queue_task_specify_memory(t, 100);
		work_queue_task_specify_disk(t, 100);
		char tag[32];
		snprintf(tag, sizeof tag, "%d", i);
		work_queue_task_specify_tag(t, tag);
		assert_true(work_queue_submit(q, t) >= 1);
	}
}

/* Every task succeeded and its output file holds its object and its buffer. */
static void check_many(struct fake_env *e, struct collect *c)
{
	char *seen = xcalloc((size_t)c->want, 1);
	for (int k = 0; k < c->ngot; k++) {
		struct work_queue_task *t = c->got[k];
		assert_int_equal(t->result, WORK_QUEUE_RESULT_SUCCESS);
		assert_int_equal(t->return_status, 0);
		int i = atoi(t->tag);
		assert_true(i >= 0 && i < c->want);
		assert_false(seen[i]);
		seen[i] = 1;
		char out[256], want[64];
		snprintf(out, sizeof out, "%s/out%d", e->dir, i);
		snprintf(want, sizeof want, "object %d\ntask %d\n", i % 5, i);
		char *got = ts_read_file(out, NULL);
		assert_non_null(got);
		assert_string_equal(got, want);
		free(got);
		unlink(out);
		work_queue_task_delete(t);
	}
	free(seen);
}

static bool sim_all_active(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)c;
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	return st.active == st.workers;
}

static void test_many_tasks(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct wq_sim_opts o = {.dist = WQ_SIM_UNIFORM, .mean = 0.002, .addrs = 4};
	struct wq_sim *s = sim_start(q, 30, &o);
	enum { N = 500 };
	submit_many(e, q, N);
	struct collect c = {xcalloc(N, sizeof *c.got), 0, N};
	run_until(q, s, &c, all_collected, 120);
	check_many(e, &c);
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	assert_int_equal(st.tasks_done, N);
	assert_int_equal(st.errors, 0);
	assert_true(st.objects_received >= 5);
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	assert_int_equal(ws.tasks_done, N);
	assert_int_equal(ws.workers_connected, 30);
	free(c.got);
	sim_end(q, s);
}

static void test_dropped_worker(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct wq_sim *s = sim_start(q, 10, NULL);
	run_until(q, s, NULL, sim_all_active, 60);
	wq_sim_drop_after(s, 0, 2); /* gone at its second task, which it never reports */
	enum { N = 100 };
	submit_many(e, q, N);
	struct collect c = {xcalloc(N, sizeof *c.got), 0, N};
	run_until(q, s, &c, all_collected, 120);
	check_many(e, &c);
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	assert_false(wq_sim_active(s, 0));
	assert_int_equal(wq_sim_tasks_received(s, 0), 2);
	assert_int_equal(st.tasks_done, N);
	assert_true(st.tasks_received > N); /* the lost task ran again elsewhere */
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	assert_int_equal(ws.workers_connected, 9);
	free(c.got);
	sim_end(q, s);
}

struct ka {
	uint64_t b0, b1;
};
static struct ka ka_mark;

static bool hung_one_gone(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)c;
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	return ws.workers_connected == 2 && wq_sim_bytes_received(s, 0) > ka_mark.b0 &&
	       wq_sim_bytes_received(s, 1) > ka_mark.b1;
}

static void test_keepalive(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	assert_int_equal(work_queue_specify_keepalive_interval(q, 5), 0);
	assert_int_equal(work_queue_specify_keepalive_timeout(q, 10), 0);
	struct wq_sim *s = sim_start(q, 3, NULL);
	run_until(q, s, NULL, sim_all_active, 60);
	ka_mark.b0 = wq_sim_bytes_received(s, 0);
	ka_mark.b1 = wq_sim_bytes_received(s, 1);
	wq_sim_mute(s, 2);
	/* the idle workers are pinged (or answered) and stay; the hung one is timed out */
	run_until(q, s, NULL, hung_one_gone, 90);
	assert_true(fake_log_has(e, "no complete frame received"));
	assert_true(wq_sim_active(s, 0));
	assert_true(wq_sim_active(s, 1));
	enum { N = 10 };
	submit_many(e, q, N);
	struct collect c = {xcalloc(N, sizeof *c.got), 0, N};
	run_until(q, s, &c, all_collected, 60);
	check_many(e, &c);
	assert_int_equal(wq_sim_tasks_received(s, 2), 0);
	free(c.got);
	sim_end(q, s);
}

static bool one_received(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)c;
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	return st.tasks_received == 1;
}

static bool one_cancelled(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)c;
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	return st.tasks_cancelled == 1;
}

static void test_cancel(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct wq_sim_opts o = {.dist = WQ_SIM_FIXED, .mean = 3600};
	struct wq_sim *s = sim_start(q, 2, &o);
	submit_many(e, q, 1);
	run_until(q, s, NULL, one_received, 60);
	struct work_queue_task *t = work_queue_cancel_by_taskid(q, 1);
	assert_non_null(t);
	work_queue_task_delete(t);
	run_until(q, s, NULL, one_cancelled, 60);
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	assert_int_equal(ws.workers_connected, 2);
	assert_true(work_queue_empty(q));
	sim_end(q, s);
}

static bool ended_one(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)c;
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	return st.ended == 1;
}

static void test_password(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, "right password");
	struct wq_auth_key *bad = wq_auth_key_create("wrong password", 14);
	struct wq_auth_key *good = wq_auth_key_create("right password", 14);
	struct wq_sim_opts o = {.key = bad};
	struct wq_sim *s1 = sim_start(q, 1, &o);
	run_until(q, s1, NULL, ended_one, 60); /* refused for good, not retried */
	struct wq_sim_stats st;
	wq_sim_get_stats(s1, &st);
	assert_int_equal(st.ever_active, 0);
	assert_true(st.errors >= 1);
	assert_int_equal(st.retries, 0);
	o.key = good;
	struct wq_sim *s2 = sim_start(q, 3, &o);
	run_until(q, s2, NULL, sim_all_active, 60);
	enum { N = 20 };
	submit_many(e, q, N);
	struct collect c = {xcalloc(N, sizeof *c.got), 0, N};
	run_until(q, s2, &c, all_collected, 60);
	check_many(e, &c);
	free(c.got);
	wq_sim_delete(s1);
	sim_end(q, s2);
	wq_auth_key_delete(bad);
	wq_auth_key_delete(good);
}

static bool received_4(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)q;
	(void)c;
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	return st.tasks_received >= 4;
}

static bool none_connected(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)s;
	(void)c;
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	return ws.workers_connected == 0;
}

/* A lost worker's tasks go back to ready: the master walks that worker's tasks, not all. */
static void test_lost_worker_walks_its_tasks(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	enum { N = 3000 };
	for (int i = 0; i < N; i++) {
		struct work_queue_task *t = work_queue_task_create("true");
		work_queue_task_specify_cores(t, 1);
		work_queue_task_specify_memory(t, 10);
		work_queue_task_specify_disk(t, 10);
		assert_true(work_queue_submit(q, t) >= 1);
	}
	struct wq_sim_opts o = {.dist = WQ_SIM_FIXED, .mean = 3600};
	struct wq_sim *s = sim_start(q, 1, &o);
	run_until(q, s, NULL, received_4, 60);
	uint64_t before = q->lost_examined;
	wq_sim_delete(s); /* the connection drops */
	run_until(q, NULL, NULL, none_connected, 60);
	uint64_t examined = q->lost_examined - before;
	assert_true(examined >= 4);
	assert_true(examined <= 1024); /* the most one worker holds; there are 3,000 tasks */
	/* and they run elsewhere */
	s = sim_start(q, 2, NULL);
	struct collect c = {xcalloc(N, sizeof *c.got), 0, N};
	run_until(q, s, &c, all_collected, 120);
	for (int k = 0; k < N; k++) {
		assert_int_equal(c.got[k]->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(c.got[k]);
	}
	free(c.got);
	sim_end(q, s);
}

static uint64_t ticks_until;

static bool ticked(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)s;
	(void)c;
	return q->ticks >= ticks_until;
}

/* The periodic end-time check looks at tasks only while one has an end time. */
static void test_tick_without_end_times(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	for (int i = 0; i < 2000; i++)
		assert_true(work_queue_submit(q, work_queue_task_create("true")) >= 1);
	uint64_t examined = q->tick_examined;
	ticks_until = q->ticks + 2;
	run_until(q, NULL, NULL, ticked, 30);
	assert_int_equal(q->tick_examined, examined);
	/* one task with an end time already past: it ends at the next tick */
	struct work_queue_task *t = work_queue_task_create("true");
	work_queue_task_specify_end_time(t, 1.0);
	int id = work_queue_submit(q, t);
	struct work_queue_task *done = fake_wait_task(q, 30);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_TASK_TIMEOUT);
	work_queue_task_delete(done);
	/* none left: the scans stop again */
	ticks_until = q->ticks + 1;
	run_until(q, NULL, NULL, ticked, 30);
	examined = q->tick_examined;
	ticks_until = q->ticks + 2;
	run_until(q, NULL, NULL, ticked, 30);
	assert_int_equal(q->tick_examined, examined);
	fake_queue_delete(q);
}

static uv_tcp_t silent[70];
static int silent_connected;

static void silent_cb(uv_connect_t *req, int status)
{
	silent_connected += status == 0;
	free(req);
}

static bool six_lookups(struct work_queue *q, struct wq_sim *s, struct collect *c)
{
	(void)s;
	(void)c;
	return silent_connected == 70 && q->admit.silent_lookups >= 6 && q->admit.total == 64;
}

/* Admission past its limit looks for a silent connection among those in handshake only, not
 * among every worker connected. */
static void test_admission_looks_at_handshakes(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct wq_sim_opts o = {.addrs = 8};
	struct wq_sim *s = sim_start(q, 200, &o);
	run_until(q, s, NULL, sim_all_active, 60);
	/* 70 connections from 127.0.0.1 that send nothing: the limit per address is 64, so each
	 * of the last 6 evicts the oldest silent one */
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", work_queue_port(q), &a);
	silent_connected = 0;
	for (int i = 0; i < 70; i++) {
		uv_tcp_init(work_queue_loop(q), &silent[i]);
		uv_connect_t *req = xmalloc(sizeof *req);
		assert_int_equal(uv_tcp_connect(req, &silent[i], (struct sockaddr *)&a, silent_cb),
		                 0);
	}
	run_until(q, s, NULL, six_lookups, 60);
	assert_int_equal(q->admit.silent_lookups, 6);
	assert_true(q->admit.silent_examined <= 6 * 64); /* not the 200 workers each time */
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	assert_int_equal(ws.workers_connected, 200);
	for (int i = 0; i < 70; i++)
		uv_close((uv_handle_t *)&silent[i], NULL);
	sim_end(q, s);
}

/* test_work_queue.c's round trip, with the simulator in the fake worker's place. */
static void test_fake_round_trip(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char in[256], out[256], out2[256];
	snprintf(in, sizeof in, "%s/ref.fa", e->dir);
	snprintf(out, sizeof out, "%s/out1.txt", e->dir);
	snprintf(out2, sizeof out2, "%s/out2.txt", e->dir);
	ts_write_file(in, "ACGT\n");
	struct work_queue_task *t = fake_make_task(in, out);
	int id = work_queue_submit(q, t);
	struct wq_sim_opts o = {.exit_status = 3, .stdout_text = "hello\n"};
	struct wq_sim *s = sim_start(q, 1, &o);
	struct work_queue_task *done = fake_wait_task(q, 30);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->return_status, 3);
	assert_string_equal(done->output, "hello\n");
	assert_int_equal(done->try_count, 1);
	char *content = ts_read_file(out, NULL);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	assert_int_equal((int)done->resources_measured->v[RM_MEMORY], 10);
	work_queue_task_delete(done);
	struct work_queue_stats ws;
	work_queue_get_stats(q, &ws);
	assert_int_equal(ws.tasks_done, 1);
	assert_int_equal((int)ws.total_cores, 4);
	/* the same cached input again: the object is not sent twice */
	t = fake_make_task(in, out2);
	assert_true(work_queue_submit(q, t) > id);
	done = fake_wait_task(q, 30);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	content = ts_read_file(out2, NULL);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	struct wq_sim_stats st;
	wq_sim_get_stats(s, &st);
	assert_int_equal(st.objects_received, 1);
	assert_int_equal(st.tasks_received, 2);
	sim_end(q, s);
	unlink(in);
	unlink(out);
	unlink(out2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fake_round_trip),
	    cmocka_unit_test(test_password),
	    cmocka_unit_test(test_many_tasks),
	    cmocka_unit_test(test_dropped_worker),
	    cmocka_unit_test(test_cancel),
	    cmocka_unit_test(test_lost_worker_walks_its_tasks),
	    cmocka_unit_test(test_tick_without_end_times),
	    cmocka_unit_test(test_admission_looks_at_handshakes),

	    cmocka_unit_test(test_keepalive),
	};
	return cmocka_run_group_tests(tests, fake_env_setup, fake_env_teardown);
}
