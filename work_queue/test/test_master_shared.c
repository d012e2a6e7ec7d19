/* test_master_shared.c: unit tests of the master's routing of objects for workers that share a
 * store (master_shared.c, protocol 5.12), with two fake workers of one store and one task each
 * needing the same cached file: the file is sent to one, the other waits for it and takes it
 * after `store_have`; when the first is lost, fails to publish, or the take fails, the other
 * gets the file itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "sha256.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_fake_worker.h"
#include "xalloc.h"
#include "banned.h"

static const char ref[] = ">ref\nACGT\n";

struct two {
	struct fake_env *e;
	struct work_queue *q;
	struct fake *w[2];
	char in[256], out[2][256];
	char obj[80];
	int sender; /* index of the fake the file was sent to */
	int done;   /* tasks ended already */
};

static bool one_received(void *arg)
{
	struct two *t = arg;
	return t->w[0]->objects_received + t->w[1]->objects_received >= 1;
}

/* Runs the queue until DONE(ARG) (at most 10 s); tasks that end meanwhile must have succeeded
 * and are counted in T->done. */
static void run_until(struct two *t, bool (*done)(void *), void *arg)
{
	uint64_t end = uv_hrtime() + 10 * (uint64_t)1000000000;
	while (!done(arg) && uv_hrtime() < end) {
		struct work_queue_task *r = work_queue_wait(t->q, 0.02);
		if (r) {
			assert_int_equal(r->result, WORK_QUEUE_RESULT_SUCCESS);
			work_queue_task_delete(r);
			t->done++;
		}
	}
	assert_true(done(arg));
}

static bool flag_set(void *arg)
{
	return *(int *)arg != 0;
}

/* Two fakes of one store (1 core each), two tasks needing the same cached file; returns once
 * the file has reached one of them (t->sender). */
static void start_two(struct fake_env *e, struct two *t)
{
	memset(t, 0, sizeof *t);
	t->e = e;
	t->q = fake_queue(e, NULL);
	for (int k = 0; k < 2; k++) {
		t->w[k] = fake_start(e, t->q, FAKE_RUN, NULL);
		t->w[k]->cores = 1;
		snprintf(t->w[k]->store, sizeof t->w[k]->store, "%s",
		         "0123456789abcdef0123456789abcdef");
	}
	assert_true(fake_wait_workers(t->q, 2, 10));
	snprintf(t->in, sizeof t->in, "%s/ref.fa", e->dir);
	ts_write_file(t->in, ref);
	char h[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(ref, strlen(ref), h), 0);
	snprintf(t->obj, sizeof t->obj, "F-%s", h);
	for (int k = 0; k < 2; k++) {
		snprintf(t->out[k], sizeof t->out[k], "%s/out.%d", e->dir, k);
		assert_true(work_queue_submit(t->q, fake_make_task(t->in, t->out[k])) >= 1);
	}
	/* the task of the worker the file reached may end at once */
	run_until(t, one_received, t);
	assert_true(one_received(t));
	t->sender = t->w[0]->objects_received ? 0 : 1;
	/* the other waits: no transfer, no take before the first says it is in the store */
	assert_int_equal(t->w[!t->sender]->objects_received, 0);
	assert_int_equal(t->w[!t->sender]->takes, 0);
}

/* Both tasks end well, each output the file and the buffer. */
static void both_done(struct two *t)
{
	for (int n = t->done; n < 2; n++) {
		struct work_queue_task *r = fake_wait_task(t->q, 10);
		assert_non_null(r);
		assert_int_equal(r->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(r);
	}
	for (int k = 0; k < 2; k++) {
		char *o = ts_read_file(t->out[k], NULL);
		assert_string_equal(o, ">ref\nACGT\nBUF\n");
		free(o);
	}
}

static void store_have(struct fake *f, const char *obj, bool failed)
{
	json_t *m = failed ? json_pack("{s:s,s:[],s:b,s:[s]}", "m", "store_have", "objects", "last",
	                               1, "failed", obj)
	                   : json_pack("{s:s,s:[[s,i]],s:b}", "m", "store_have", "objects", obj,
	                               (int)strlen(ref), "last", 1);
	fake_send(f, m);
}

/* The fake F takes OBJ from "the store": its file appears where the fake keeps objects. */
static void answer_take(struct fake *f, const char *obj, bool ok)
{
	if (ok) {
		char *p = xasprintf("%s/%s", f->dir, obj);
		ts_write_file(p, ref);
		free(p);
	}
	fake_send(f, json_pack("{s:s,s:s,s:b,s:i}", "m", "cache_taken", "object", obj, "ok", ok,
	                       "size", (int)strlen(ref)));
}

static void finish(struct two *t)
{
	fake_free(t->w[0]);
	fake_free(t->w[1]);
	fake_queue_delete(t->q);
}

static void test_sent_once_then_taken(void **state)
{
	struct two t;
	start_two(*state, &t);
	struct fake *o = t.w[!t.sender];
	store_have(t.w[t.sender], t.obj, false);
	run_until(&t, flag_set, &o->takes);
	assert_int_equal(o->takes, 1);
	assert_string_equal(o->last_take, t.obj);
	answer_take(o, t.obj, true);
	both_done(&t);
	assert_int_equal(t.w[0]->objects_received + t.w[1]->objects_received, 1);
	struct work_queue_stats s;
	work_queue_get_stats(t.q, &s);
	assert_int_equal(s.objects_taken, 1);
	finish(&t);
}

static void test_receiver_lost(void **state)
{
	struct two t;
	start_two(*state, &t);
	struct fake *o = t.w[!t.sender];
	fake_free(t.w[t.sender]); /* gone before it published the file */
	t.w[t.sender] = NULL;
	run_until(&t, flag_set, &o->objects_received);
	assert_int_equal(o->objects_received, 1);
	assert_int_equal(o->takes, 0);
	/* both tasks run on the one left, one after the other (unless the lost one's ended) */
	for (int n = t.done; n < 2; n++) {
		struct work_queue_task *r = fake_wait_task(t.q, 10);
		assert_non_null(r);
		assert_int_equal(r->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(r);
	}
	fake_free(o);
	fake_queue_delete(t.q);
}

static void test_publication_failed(void **state)
{
	struct two t;
	start_two(*state, &t);
	struct fake *o = t.w[!t.sender];
	store_have(t.w[t.sender], t.obj, true);
	run_until(&t, flag_set, &o->objects_received);
	assert_int_equal(o->objects_received, 1);
	assert_int_equal(o->takes, 0);
	both_done(&t);
	finish(&t);
}

static void test_take_failed(void **state)
{
	struct two t;
	start_two(*state, &t);
	struct fake *o = t.w[!t.sender];
	store_have(t.w[t.sender], t.obj, false);
	run_until(&t, flag_set, &o->takes);
	assert_int_equal(o->takes, 1);
	answer_take(o, t.obj, false); /* deleted from the store meanwhile */
	run_until(&t, flag_set, &o->objects_received);
	assert_int_equal(o->objects_received, 1);
	both_done(&t);
	struct work_queue_stats s;
	work_queue_get_stats(t.q, &s);
	assert_int_equal(s.objects_taken, 0);
	finish(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sent_once_then_taken, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_receiver_lost, fake_env_setup, fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_publication_failed, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_take_failed, fake_env_setup, fake_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
