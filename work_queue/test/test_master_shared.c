/* test_master_shared.c: unit tests of the master's routing of objects for workers that share a
 * store (master_shared.c, protocol 5.12), with two fake workers of one store and one task each
 * needing the same cached file: the file is sent to one, the other waits for it and takes it
 * after `store_have`; when the first is lost, fails to publish, or the take fails, the other
 * gets the file itself. A cached directory goes the same way between workers that offer
 * `shared_dirs`, and to each worker that does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "sha256.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_listing.h"
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

/* A task reading the cached directory DIR (as "ref.d") and a buffer, writing OUT. */
static struct work_queue_task *dir_task(const char *dir, const char *out)
{
	struct work_queue_task *t = work_queue_task_create("cat ref.d/* buf.txt > out.txt");
	assert_int_equal(work_queue_task_specify_directory(t, dir, "ref.d", WORK_QUEUE_INPUT,
	                                                   WORK_QUEUE_CACHE, 1),
	                 0);
	assert_int_equal(
	    work_queue_task_specify_buffer(t, "BUF\n", 4, "buf.txt", WORK_QUEUE_NOCACHE), 0);
	assert_int_equal(work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE),
	                 0);
	work_queue_task_specify_cores(t, 1);
	return t;
}

/* The D- name of directory DIR, into OBJ. */
static void dir_object(const char *dir, char *obj, size_t size)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct wq_listing *l = NULL;
	char *why = NULL;
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), 0);
	close(fd);
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(l, hex), 0);
	wq_listing_delete(l);
	snprintf(obj, size, "D-%s", hex);
}

/* Two fakes of one store (1 core each), offering `shared_dirs` when DIRS; two tasks needing the
 * same cached input, a file, or a directory (holding the file) when DIR. Returns once the input
 * has reached one of them (t->sender), unless it reached both at once (without DIRS). */
static void start_two_of(struct fake_env *e, struct two *t, bool dir, bool dirs)
{
	memset(t, 0, sizeof *t);
	t->e = e;
	t->q = fake_queue(e, NULL);
	for (int k = 0; k < 2; k++) {
		t->w[k] = fake_start(e, t->q, FAKE_RUN, NULL);
		t->w[k]->cores = 1;
		t->w[k]->shared_dirs = dirs;
		snprintf(t->w[k]->store, sizeof t->w[k]->store, "%s",
		         "0123456789abcdef0123456789abcdef");
	}
	assert_true(fake_wait_workers(t->q, 2, 10));
	if (dir) {
		snprintf(t->in, sizeof t->in, "%s/ref.d", e->dir);
		assert_int_equal(mkdir(t->in, 0755), 0);
		char *p = xasprintf("%s/ref.fa", t->in);
		ts_write_file(p, ref);
		free(p);
		dir_object(t->in, t->obj, sizeof t->obj);
	} else {
		snprintf(t->in, sizeof t->in, "%s/ref.fa", e->dir);
		ts_write_file(t->in, ref);
		char h[SHA256_HEX_SIZE];
		assert_int_equal(sha256_buffer(ref, strlen(ref), h), 0);
		snprintf(t->obj, sizeof t->obj, "F-%s", h);
	}
	for (int k = 0; k < 2; k++) {
		snprintf(t->out[k], sizeof t->out[k], "%s/out.%d", e->dir, k);
		assert_true(work_queue_submit(t->q, dir ? dir_task(t->in, t->out[k])
		                                        : fake_make_task(t->in, t->out[k])) >= 1);
	}
	if (dir && !dirs)
		return;
	/* the task of the worker the file reached may end at once */
	run_until(t, one_received, t);
	assert_true(one_received(t));
	t->sender = t->w[0]->objects_received ? 0 : 1;
	/* the other waits: no transfer, no take before the first says it is in the store */
	assert_int_equal(t->w[!t->sender]->objects_received, 0);
	assert_int_equal(t->w[!t->sender]->takes, 0);
}

static void start_two(struct fake_env *e, struct two *t)
{
	start_two_of(e, t, false, false);
}

/* Both tasks end well, each output WANT. */
static void both_done_with(struct two *t, const char *want)
{
	for (int n = t->done; n < 2; n++) {
		struct work_queue_task *r = fake_wait_task(t->q, 10);
		assert_non_null(r);
		assert_int_equal(r->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(r);
	}
	for (int k = 0; k < 2; k++) {
		char *o = ts_read_file(t->out[k], NULL);
		assert_string_equal(o, want);
		free(o);
	}
}

/* Both tasks end well, each output the file and the buffer. */
static void both_done(struct two *t)
{
	both_done_with(t, ">ref\nACGT\nBUF\n");
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
		if (obj[0] == 'D')
			assert_int_equal(mkdir(p, 0755), 0); /* the fake reads nothing of a tree */
		else
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

/* The input reached one fake of T: it says it is in the store, the other is told to take it
 * and does, and both tasks end with WANT; the input crossed once. */
static void sent_once_then_taken(struct two *t, const char *want)
{
	struct fake *o = t->w[!t->sender];
	store_have(t->w[t->sender], t->obj, false);
	run_until(t, flag_set, &o->takes);
	assert_int_equal(o->takes, 1);
	assert_string_equal(o->last_take, t->obj);
	answer_take(o, t->obj, true);
	both_done_with(t, want);
	assert_int_equal(t->w[0]->objects_received + t->w[1]->objects_received, 1);
	struct work_queue_stats s;
	work_queue_get_stats(t->q, &s);
	assert_int_equal(s.objects_taken, 1);
	finish(t);
}

static void test_sent_once_then_taken(void **state)
{
	struct two t;
	start_two(*state, &t);
	sent_once_then_taken(&t, ">ref\nACGT\nBUF\n");
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

static void test_directory_sent_once_then_taken(void **state)
{
	struct two t;
	start_two_of(*state, &t, true, true);
	sent_once_then_taken(&t, "BUF\n"); /* the fake reads nothing of a directory */
}

static bool both_received(void *arg)
{
	struct two *t = arg;
	return t->w[0]->objects_received + t->w[1]->objects_received >= 2;
}

/* Workers without `shared_dirs`: each receives the directory, nobody is told to take it. */
static void test_directory_without_capability(void **state)
{
	struct two t;
	start_two_of(*state, &t, true, false);
	run_until(&t, both_received, &t);
	both_done_with(&t, "BUF\n");
	assert_int_equal(t.w[0]->objects_received, 1);
	assert_int_equal(t.w[1]->objects_received, 1);
	assert_int_equal(t.w[0]->takes + t.w[1]->takes, 0);
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
	    cmocka_unit_test_setup_teardown(test_directory_sent_once_then_taken, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_directory_without_capability, fake_env_setup,
	                                    fake_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
