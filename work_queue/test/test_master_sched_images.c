/* test_master_sched_images.c: unit tests for image-aware scheduling in the Work Queue scheduling
 * core: a worker holding a task's image comes first (before cached bytes), an image archive held
 * nowhere goes to one worker while the other tasks of that image wait for its transfer (in the
 * pass and in prefetch), a failed first transfer lets another worker try, named images and other
 * tasks are not held back, and a worker's labels can be replaced (an engine that went away). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "master_sched.h"
#include "banned.h"

#define MAXA   64
#define NW     4
#define NIMG   3
#define NTASKS 32

/* The world the hook sees: the state of each image on each worker. Worker data is its index;
 * task data points at a struct ttask. */
struct world {
	enum master_sched_image_state st[NW][NIMG];
	int calls;
};
struct ttask {
	int image;
};

static enum master_sched_image_state image_fn(void *worker_data, void *task_data, void *arg)
{
	struct world *wo = arg;
	wo->calls++;
	const struct ttask *t = task_data;
	return wo->st[(intptr_t)worker_data][t->image];
}

static int64_t bytes_fn(void *worker_data, void *task_data, void *arg)
{
	(void)task_data;
	(void)arg;
	return (intptr_t)worker_data == 0 ? 1000000 : 0; /* worker 0 has the most bytes */
}

static struct master_sched_worker *W[NW];
static struct ttask T[NTASKS];

static struct master_sched *setup(struct world *wo, double cores, int qmax)
{
	memset(wo, 0, sizeof *wo);
	struct master_sched *s = master_sched_create();
	master_sched_set_image_fn(s, image_fn, wo);
	master_sched_set_cached_bytes_fn(s, bytes_fn, NULL);
	const char *ids[NW] = {"w0", "w1", "w2", "w3"};
	for (int i = 0; i < NW; i++) {
		struct master_sched_worker_spec ws = {.id = ids[i],
		                                      .total = {cores, 4000, 4000, 0},
		                                      .queue_max = qmax,
		                                      .data = (void *)(intptr_t)i};
		W[i] = master_sched_worker_add(s, &ws);
		assert_non_null(W[i]);
	}
	return s;
}

/* Task K of IMAGE (index into NAMES; -1: none), TRAVELS: an archive. 1 core. */
static struct master_sched_task *task(struct master_sched *s, int k, int image, int travels,
                                      const char *cat)
{
	static const char *const names[NIMG] = {"/data/a.tar", "/data/b.tar", "busybox:1"};
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.request = (struct master_sched_box){1, 100, 100, -1};
	ts.category = cat;
	T[k].image = image < 0 ? 0 : image;
	ts.image = image < 0 ? NULL : names[image];
	ts.image_travels = travels;
	ts.data = &T[k];
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	return t;
}

static int pass(struct master_sched *s, struct master_sched_assignment *out)
{
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	int n = master_sched_pass(s, &o, out, MAXA, NULL);
	assert_true(n >= 0);
	return n;
}

static int worker_index(const struct master_sched_worker *w)
{
	for (int i = 0; i < NW; i++)
		if (W[i] == w)
			return i;
	return -1;
}

/* FILES: a worker holding the image beats one with more cached bytes; one it is coming to beats
 * one without it; without the hook the bytes decide. */
static void test_holder_first(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 4, 0);
	struct master_sched_assignment out[MAXA];
	wo.st[2][2] = MASTER_SCHED_IMAGE_HELD;
	task(s, 0, 2, 0, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), 2);
	/* an archive held on w3, coming to w1 */
	wo.st[3][0] = MASTER_SCHED_IMAGE_HELD;
	wo.st[1][0] = MASTER_SCHED_IMAGE_COMING;
	task(s, 1, 0, 1, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), 3);
	wo.st[3][0] = MASTER_SCHED_IMAGE_ABSENT;
	task(s, 2, 0, 1, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), 1);
	/* a task without an image: the cached bytes */
	task(s, 3, -1, 0, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), 0);
	master_sched_delete(s);

	/* no hook: the bytes decide for an image task too */
	s = setup(&wo, 4, 0);
	master_sched_set_image_fn(s, NULL, NULL);
	wo.st[2][2] = MASTER_SCHED_IMAGE_HELD;
	task(s, 0, 2, 0, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), 0);
	assert_int_equal(wo.calls, 0);
	master_sched_delete(s);
}

/* A burst of tasks of an archive held nowhere: one task to one worker; the others wait while it
 * is on its way there (only that worker may take more), and go everywhere once it is held. */
static void test_first_fetch(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 2, 0);
	struct master_sched_assignment out[MAXA];
	for (int k = 0; k < 8; k++)
		task(s, k, 0, 1, NULL);
	/* both cores of one worker (the most bytes, all else equal), none elsewhere */
	assert_int_equal(pass(s, out), 2);
	int first = worker_index(out[0].worker);
	assert_int_equal(first, 0);
	assert_int_equal(worker_index(out[1].worker), first);
	assert_int_equal(master_sched_ready_count(s), 6);
	/* the master sends the archive there: the others still wait */
	wo.st[first][0] = MASTER_SCHED_IMAGE_COMING;
	assert_int_equal(pass(s, out), 0);
	/* a core frees on the first worker: it takes one more */
	assert_int_equal(master_sched_task_release(s, out[1].task, 1), 0);
	assert_int_equal(pass(s, out), 1);
	assert_int_equal(worker_index(out[0].worker), first);
	assert_int_equal(master_sched_ready_count(s), 5);
	/* held: the other three workers take the rest */
	wo.st[first][0] = MASTER_SCHED_IMAGE_HELD;
	assert_int_equal(pass(s, out), 5);
	for (int i = 0; i < 5; i++)
		assert_int_not_equal(worker_index(out[i].worker), first);
	master_sched_delete(s);
}

/* The first transfer failed (the object is gone from the master's view): another try, on one
 * worker again. */
static void test_first_fetch_lost(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 1, 0);
	struct master_sched_assignment out[MAXA];
	struct master_sched_task *a = task(s, 0, 0, 1, NULL);
	for (int k = 1; k < 4; k++)
		task(s, k, 0, 1, NULL);
	assert_int_equal(pass(s, out), 1);
	assert_ptr_equal(out[0].task, a);
	wo.st[0][0] = MASTER_SCHED_IMAGE_COMING;
	assert_int_equal(pass(s, out), 0);
	/* the transfer failed: the task is back, the object forgotten */
	assert_int_equal(master_sched_task_requeue(s, a, CATEGORY_LEVEL_FIRST), 0);
	wo.st[0][0] = MASTER_SCHED_IMAGE_ABSENT;
	assert_int_equal(pass(s, out), 1);
	assert_ptr_equal(out[0].task, a);
	master_sched_delete(s);
}

/* A named image (nothing travels) is never held back; tasks of another archive or without an
 * image go on while an archive's tasks wait. */
static void test_others_not_held(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 2, 0);
	struct master_sched_assignment out[MAXA];
	for (int k = 0; k < 4; k++)
		task(s, k, 2, 0, "same");
	assert_int_equal(pass(s, out), 4);
	for (int k = 4; k < 8; k++)
		task(s, k, 0, 1, "same");
	task(s, 8, 1, 1, "same");
	task(s, 9, -1, 0, "same");
	/* two of archive a (on one worker), one of archive b, the task without an image */
	assert_int_equal(pass(s, out), 4);
	int n_a = 0, w_a = -1;
	for (int i = 0; i < 4; i++) {
		const struct ttask *t = master_sched_task_data(out[i].task);
		if (t < &T[4] || t > &T[7])
			continue;
		n_a++;
		assert_true(w_a < 0 || w_a == worker_index(out[i].worker));
		w_a = worker_index(out[i].worker);
	}
	assert_int_equal(n_a, 2);
	assert_int_equal(master_sched_ready_count(s), 2);
	master_sched_delete(s);
}

/* Prefetch follows the rule: queued tasks of an archive on its way go only where it is coming. */
static void test_prefetch_waits(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 1, 4);
	master_sched_category_record_time(s, "short", 0.1);
	struct master_sched_assignment out[MAXA];
	for (int k = 0; k < 8; k++)
		task(s, k, 0, 1, "short");
	assert_int_equal(pass(s, out), 1);
	int first = worker_index(out[0].worker);
	wo.st[first][0] = MASTER_SCHED_IMAGE_COMING;
	assert_int_equal(pass(s, out), 0);
	struct master_sched_prefetch_opts po;
	master_sched_prefetch_opts_init(&po);
	int n = master_sched_prefetch(s, &po, out, MAXA);
	assert_int_equal(n, 4);
	for (int i = 0; i < n; i++)
		assert_int_equal(worker_index(out[i].worker), first);
	/* held: the three others take queued tasks too */
	wo.st[first][0] = MASTER_SCHED_IMAGE_HELD;
	assert_int_equal(pass(s, out), 3);
	master_sched_delete(s);
}

/* A worker's labels replaced: a task requiring one it lost waits; it runs when it is back. */
static void test_set_features(void **state)
{
	(void)state;
	struct world wo;
	struct master_sched *s = setup(&wo, 1, 0);
	struct master_sched_assignment out[MAXA];
	const char *with[] = {"@containers"};
	for (int i = 1; i < NW; i++)
		master_sched_worker_set_flags(s, W[i], MASTER_SCHED_DRAINING);
	assert_int_equal(master_sched_worker_set_features(s, W[0], with, 1), 0);
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.features = with;
	ts.n_features = 1;
	ts.data = &T[0];
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	assert_int_equal(master_sched_worker_set_features(s, W[0], NULL, 0), 0);
	assert_int_equal(pass(s, out), 0);
	const char *bad[] = {""};
	assert_int_equal(master_sched_worker_set_features(s, W[0], bad, 1), -EINVAL);
	assert_int_equal(master_sched_worker_set_features(s, W[0], with, 1), 0);
	assert_int_equal(pass(s, out), 1);
	assert_ptr_equal(out[0].task, t);
	master_sched_delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_holder_first),     cmocka_unit_test(test_first_fetch),
	    cmocka_unit_test(test_first_fetch_lost), cmocka_unit_test(test_others_not_held),
	    cmocka_unit_test(test_prefetch_waits),   cmocka_unit_test(test_set_features),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
