/* test_master_sched.c: unit tests for master_sched, the Work Queue scheduling core: ready order
 * (priority, submission, put-back), boxes (explicit, category modes, proportional share, whole
 * worker), fit, features and worker flags, the five policies, max-concurrent, exact release
 * over many cycles, lost workers, exhaustion retries, bad input, the cost bounds of a pass, and
 * prefetch (measurement and threshold, queue room, priority, promotion in order, lost workers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master_sched.h"
#include "category.h"
#include "rmsummary.h"
#include "xalloc.h"
#include "banned.h"

#define MAXA 4096

static struct master_sched_worker *worker(struct master_sched *s, const char *id, double cores,
                                          int64_t mem, int64_t disk, int64_t gpus, void *data)
{
	struct master_sched_worker_spec ws = {
	    .id = id, .total = {cores, mem, disk, gpus}, .data = data};
	struct master_sched_worker *w = master_sched_worker_add(s, &ws);
	assert_non_null(w);
	return w;
}

static struct master_sched_task *task(struct master_sched *s, double prio, const char *cat,
                                      double cores, int64_t mem, int64_t disk, int64_t gpus,
                                      intptr_t id)
{
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.priority = prio;
	ts.category = cat;
	ts.request = (struct master_sched_box){cores, mem, disk, gpus};
	ts.data = (void *)id;
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	return t;
}

static int run_pass(struct master_sched *s, enum master_sched_policy p, int budget,
                    struct master_sched_assignment *out, struct master_sched_pass_stats *st)
{
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	o.policy = p;
	o.max_assignments = budget;
	int n = master_sched_pass(s, &o, out, MAXA, st);
	assert_true(n >= 0);
	return n;
}

static intptr_t id_of(const struct master_sched_assignment *a)
{
	return (intptr_t)master_sched_task_data(a->task);
}

static void test_order(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	worker(s, "w", 100, 100000, 100000, 0, NULL);
	/* Two categories and two request shapes: the heads of several heaps must merge. */
	task(s, 0, "a", 1, 10, 10, -1, 1);
	task(s, 5, "b", 2, -1, -1, -1, 2);
	task(s, 0, "b", 1, 20, -1, -1, 3);
	task(s, 5, "a", 1, 10, 10, -1, 4);
	task(s, 10, NULL, 1, 10, 10, -1, 5);
	task(s, 0, "a", 1, 10, 10, -1, 6);
	task(s, -1, "a", 1, 10, 10, -1, 7);
	task(s, 5, "a", 1, 10, 10, -1, 8);
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	int n = run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL);
	intptr_t want[] = {5, 2, 4, 8, 1, 3, 6, 7};
	assert_int_equal(n, 8);
	for (int i = 0; i < n; i++)
		assert_int_equal(id_of(&out[i]), want[i]);
	assert_int_equal(master_sched_ready_count(s), 0);
	assert_int_equal(master_sched_running_count(s), 8);
	free(out);
	master_sched_delete(s);
}

static void test_putback_and_cancel(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = worker(s, "w", 2, 1000, 1000, 0, NULL);
	struct master_sched_task *t[7];
	for (int i = 1; i <= 6; i++)
		t[i] = task(s, 0, "a", 1, 100, 100, -1, i);
	struct master_sched_assignment out[8];
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 2);
	assert_int_equal(id_of(&out[0]), 1);
	assert_int_equal(id_of(&out[1]), 2);
	/* t2 finishes and is put back (e.g. a transfer failure): it goes before t3. */
	assert_int_equal(master_sched_task_release(s, t[2], 10), 0);
	assert_int_equal(master_sched_task_state(t[2]), MASTER_SCHED_TASK_IDLE);
	assert_int_equal(master_sched_task_requeue(s, t[2], CATEGORY_LEVEL_FIRST), 0);
	assert_int_equal(master_sched_task_requeue(s, t[2], CATEGORY_LEVEL_FIRST), -EINVAL);
	/* t3 is cancelled while ready. */
	assert_ptr_equal(master_sched_task_remove(s, t[3]), (void *)3);
	assert_int_equal(master_sched_ready_count(s), 4);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(id_of(&out[0]), 2);
	/* The worker is lost: t1 and t2 go back in their places, ahead of t4. */
	assert_int_equal(master_sched_worker_remove(s, w), 2);
	assert_int_equal(master_sched_running_count(s), 0);
	assert_int_equal(master_sched_ready_count(s), 5);
	worker(s, "w2", 10, 10000, 10000, 0, NULL);
	int n = run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL);
	intptr_t want[] = {1, 2, 4, 5, 6};
	assert_int_equal(n, 5);
	for (int i = 0; i < n; i++)
		assert_int_equal(id_of(&out[i]), want[i]);
	master_sched_delete(s);
}

static void test_lost_worker_order(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *a = worker(s, "a", 2, 1000, 1000, 0, NULL);
	worker(s, "b", 2, 1000, 1000, 0, NULL);
	for (int i = 1; i <= 8; i++)
		task(s, i <= 2 ? 0 : 1, "c", 1, 100, 100, -1, i);
	struct master_sched_assignment out[8];
	/* priority 1 first (3, 4, 5, 6), FCFS fills a first */
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 4);
	intptr_t want1[] = {3, 4, 5, 6};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(id_of(&out[i]), want1[i]);
		assert_true((out[i].worker == a) == (i < 2));
	}
	assert_int_equal(master_sched_worker_remove(s, a), 2);
	assert_null(master_sched_worker_lookup(s, "a"));
	/* 3 and 4 come back with their priority, ahead of 7 and 8 and of 1 and 2 */
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0); /* b is full */
	worker(s, "c", 3, 1000, 1000, 0, NULL);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 3);
	intptr_t want2[] = {3, 4, 7};
	for (int i = 0; i < 3; i++)
		assert_int_equal(id_of(&out[i]), want2[i]);
	master_sched_delete(s);
}

static void box_of(struct master_sched *s, struct master_sched_task *t,
                   struct master_sched_worker *w, double cores, int64_t mem, int64_t disk,
                   int64_t gpus)
{
	struct master_sched_box b;
	assert_true(master_sched_box_for(s, t, w, &b) >= 0);
	if (fabs(b.cores - cores) > 1e-9 || b.memory != mem || b.disk != disk || b.gpus != gpus)
		fail_msg("box %g/%lld/%lld/%lld, expected %g/%lld/%lld/%lld", b.cores,
		         (long long)b.memory, (long long)b.disk, (long long)b.gpus, cores,
		         (long long)mem, (long long)disk, (long long)gpus);
}

static void test_boxes_plain(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = worker(s, "w", 4, 8000, 1000, 2, NULL);
	/* explicit */
	box_of(s, task(s, 0, NULL, 1, 100, 50, 0, 1), w, 1, 100, 50, 0);
	box_of(s, task(s, 0, NULL, 0.5, 100, 50, 1, 2), w, 0.5, 100, 50, 1);
	/* only cores: the same fraction of memory and disk, no gpu */
	box_of(s, task(s, 0, NULL, 1, -1, -1, -1, 3), w, 1, 2000, 250, 0);
	box_of(s, task(s, 0, NULL, 2, -1, -1, -1, 4), w, 2, 4000, 500, 0);
	/* only memory: a quarter of the worker, cores rounded up to whole cores */
	box_of(s, task(s, 0, NULL, -1, 2000, -1, -1, 5), w, 1, 2000, 250, 0);
	box_of(s, task(s, 0, NULL, -1, 5000, -1, -1, 6), w, 3, 5000, 625, 0);
	/* the largest fraction decides */
	box_of(s, task(s, 0, NULL, 1, -1, 500, -1, 7), w, 1, 4000, 500, 0);
	box_of(s, task(s, 0, NULL, -1, -1, 500, -1, 13), w, 2, 4000, 500, 0);
	/* nothing: the whole worker */
	box_of(s, task(s, 0, NULL, -1, -1, -1, -1, 8), w, 4, 8000, 1000, 2);
	/* larger than the worker: no box */
	struct master_sched_box b;
	assert_int_equal(master_sched_box_for(s, task(s, 0, NULL, -1, 9000, -1, -1, 9), w, &b), 0);
	assert_int_equal(master_sched_box_for(s, task(s, 0, NULL, 8, -1, -1, -1, 10), w, &b), 0);
	/* FIXED category with a maximum: the maximum for what the task leaves open */
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 1000;
	category_set_max(master_sched_category(s, "fx"), &max);
	box_of(s, task(s, 0, "fx", -1, -1, -1, -1, 11), w, 1, 1000, 125, 0);
	box_of(s, task(s, 0, "fx", 2, 300, -1, -1, 12), w, 2, 300, 500, 0);
	master_sched_delete(s);
}

static void measure(struct category *c, double cores, double mem, double disk, double wall)
{
	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_CORES] = cores;
	m.v[RM_MEMORY] = mem;
	m.v[RM_DISK] = disk;
	m.v[RM_GPUS] = 0;
	m.v[RM_WALL_TIME] = wall;
	category_accumulate(c, &m);
}

static void test_boxes_category(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = worker(s, "w", 4, 8000, 4000, 1, NULL);
	struct category *mw = master_sched_category(s, "mw");
	category_set_mode(mw, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(mw, 10);
	struct master_sched_task *t1 = task(s, 0, "mw", -1, -1, -1, -1, 1);
	struct master_sched_task *t2 = task(s, 0, "mw", 2, -1, -1, -1, 2);
	/* measuring phase: the whole worker (except what the task fixes itself) */
	box_of(s, t1, w, 4, 8000, 4000, 1);
	box_of(s, t2, w, 2, 8000, 4000, 1);
	/* the worked example of doc/allocation.md: MIN_WASTE memory 750 */
	measure(mw, 1, 1900, 100, 30);
	for (int i = 0; i < 3; i++)
		measure(mw, 1, 600, 100, 20);
	for (int i = 0; i < 6; i++)
		measure(mw, 1, 200, 100, 10);
	box_of(s, t1, w, 1, 750, 250, 0);
	box_of(s, t2, w, 2, 750, 250, 0);
	/* MAX_THROUGHPUT on the same measurements: 250 MB */
	category_set_mode(mw, CATEGORY_MODE_MAX_THROUGHPUT);
	box_of(s, t1, w, 1, 250, 250, 0);
	/* MAX: the largest seen plus a third of a bucket */
	category_set_mode(mw, CATEGORY_MODE_MAX);
	box_of(s, t1, w, 2, 2000, 250, 0);
	/* the pass uses the same box and commits it */
	struct master_sched_assignment out[4];
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 2);
	struct master_sched_box f;
	master_sched_worker_free(w, &f);
	assert_true(fabs(f.cores - 0) < 1e-9);
	assert_int_equal(f.memory, 8000 - 2000 - 2000);
	assert_int_equal(f.disk, 4000 - 500);
	master_sched_delete(s);
}

static void test_fit_features_flags(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = worker(s, "plain", 4, 4000, 4000, 0, NULL);
	struct master_sched_assignment out[8];
	struct master_sched_pass_stats st;
	/* too big: nothing, and the pass stops that heap at its head */
	for (int i = 0; i < 1000; i++)
		task(s, 0, "big", 1, 5000, -1, -1, i);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, &st), 0);
	assert_int_equal(st.heads_tried, 1);
	assert_int_equal(st.classes_blocked, 1);
	/* a feature the worker lacks */
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	const char *need[] = {"cuda", "avx"};
	ts.request.cores = 1;
	ts.features = need;
	ts.n_features = 2;
	ts.data = (void *)7;
	struct master_sched_task *ft = master_sched_task_add(s, &ts);
	assert_non_null(ft);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	const char *has1[] = {"cuda"};
	struct master_sched_worker_spec ws = {.id = "cuda-only", .total = {4, 4000, 4000, 0}};
	ws.features = has1;
	ws.n_features = 1;
	assert_non_null(master_sched_worker_add(s, &ws));
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	const char *has2[] = {"x", "avx", "cuda"};
	ws.id = "both";
	ws.features = has2;
	ws.n_features = 3;
	struct master_sched_worker *both = master_sched_worker_add(s, &ws);
	assert_non_null(both);
	/* blocked, draining and full workers get nothing */
	unsigned flags[] = {MASTER_SCHED_BLOCKED, MASTER_SCHED_DRAINING, MASTER_SCHED_FULL};
	for (int i = 0; i < 3; i++) {
		master_sched_worker_set_flags(s, both, flags[i]);
		assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	}
	master_sched_worker_set_flags(s, both, 0);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_ptr_equal(out[0].worker, both);
	assert_ptr_equal(master_sched_task_worker(ft), both);
	/* a plain task on a blocked worker */
	master_sched_worker_set_flags(s, w, MASTER_SCHED_BLOCKED);
	task(s, 0, "small", 1, 100, 100, -1, 8);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_ptr_not_equal(out[0].worker, w);
	master_sched_delete(s);
}

static int64_t bytes_fn(void *worker_data, void *task_data, void *arg)
{
	(void)task_data;
	(void)arg;
	return (int64_t)(intptr_t)worker_data;
}

/* Three workers; returns which one a single 1-core task goes to under P. */
static intptr_t pick(enum master_sched_policy p, const double cores[3], const int64_t bytes[3],
                     const double times[3])
{
	struct master_sched *s = master_sched_create();
	master_sched_set_cached_bytes_fn(s, bytes_fn, NULL);
	struct master_sched_worker *w[3];
	char id[16];
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "w%d", i);
		w[i] = worker(s, id, cores[i], 10000, 10000, 0, (void *)(intptr_t)bytes[i]);
		if (times[i] >= 0) {
			master_sched_worker_record_time(w[i], times[i]);
			master_sched_worker_record_time(w[i], times[i] * 3);
		}
	}
	task(s, 0, NULL, 1, 100, 100, -1, 1);
	struct master_sched_assignment out[2];
	assert_int_equal(run_pass(s, p, 0, out, NULL), 1);
	intptr_t r = -1;
	for (int i = 0; i < 3; i++)
		if (out[0].worker == w[i])
			r = i;
	master_sched_delete(s);
	return r;
}

static void test_policies(void **state)
{
	(void)state;
	const double cores[3] = {2, 4, 3};
	const int64_t bytes[3] = {10, 500, 900};
	const double none[3] = {-1, -1, -1};
	const double times[3] = {10, -1, 2};
	const int64_t nobytes[3] = {0, 0, 0};
	/* FCFS: the first worker added, though others have more room (and are seen first) */
	assert_int_equal(pick(MASTER_SCHED_FCFS, cores, bytes, times), 0);
	/* FILES: most cached bytes; without any, first fit */
	assert_int_equal(pick(MASTER_SCHED_FILES, cores, bytes, none), 2);
	assert_int_equal(pick(MASTER_SCHED_FILES, cores, nobytes, none), 0);
	/* TIME: the fastest known history beats the unknown one */
	assert_int_equal(pick(MASTER_SCHED_TIME, cores, bytes, times), 2);
	const double times2[3] = {1, -1, 2};
	assert_int_equal(pick(MASTER_SCHED_TIME, cores, bytes, times2), 0);
	assert_int_equal(pick(MASTER_SCHED_TIME, cores, bytes, none), 0);
	/* WORST: most free cores left */
	assert_int_equal(pick(MASTER_SCHED_WORST, cores, bytes, times), 1);

	/* RAND: every worker gets picked, and a seed gives the same picks again */
	int seq[2][300];
	for (int run = 0; run < 2; run++) {
		struct master_sched *s = master_sched_create();
		struct master_sched_worker *w[3];
		w[0] = worker(s, "r0", 1, 1000, 1000, 0, NULL);
		w[1] = worker(s, "r1", 1, 1000, 1000, 0, NULL);
		w[2] = worker(s, "r2", 1, 1000, 1000, 0, NULL);
		int count[3] = {0, 0, 0};
		uint64_t rng = 42;
		struct master_sched_pass_opts o;
		master_sched_pass_opts_init(&o);
		o.policy = MASTER_SCHED_RAND;
		o.rng = &rng;
		struct master_sched_assignment out[2];
		for (int i = 0; i < 300; i++) {
			struct master_sched_task *t = task(s, 0, NULL, 1, 10, 10, -1, i);
			assert_int_equal(master_sched_pass(s, &o, out, 2, NULL), 1);
			seq[run][i] = -1;
			for (int k = 0; k < 3; k++)
				if (out[0].worker == w[k]) {
					count[k]++;
					seq[run][i] = k;
				}
			assert_int_equal(master_sched_task_release(s, t, 1), 0);
			master_sched_task_remove(s, t);
		}
		for (int k = 0; k < 3; k++)
			assert_true(count[k] > 60);
		master_sched_delete(s);
	}
	assert_memory_equal(seq[0], seq[1], sizeof seq[0]);
}

static void test_max_concurrent_budget(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	worker(s, "w", 100, 100000, 100000, 0, NULL);
	master_sched_category_set_max_concurrent(s, "lim", 2);
	struct master_sched_task *t[10];
	for (int i = 0; i < 10; i++)
		t[i] = task(s, 0, "lim", 1, 10, 10, -1, i);
	for (int i = 0; i < 5; i++)
		task(s, 0, "free", 1, 10, 10, -1, 100 + i);
	struct master_sched_assignment out[32];
	struct master_sched_pass_stats st;
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, &st), 7);
	assert_int_equal(master_sched_category_running(s, "lim"), 2);
	assert_int_equal(master_sched_category_running(s, "free"), 5);
	assert_int_equal(st.categories_full, 1);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	assert_int_equal(master_sched_task_release(s, t[0], 5), 0);
	assert_int_equal(master_sched_task_release(s, t[0], 5), -EINVAL);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(id_of(&out[0]), 2);
	/* budget */
	master_sched_category_set_max_concurrent(s, "lim", -1);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 3, out, NULL), 3);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 4);
	assert_int_equal(master_sched_ready_count(s), 0);
	master_sched_delete(s);
}

static void test_no_drift(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w[5];
	char id[16];
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "w%d", i);
		w[i] = worker(s, id, 3 + i, 7777 + i, 3333, i % 2, NULL);
	}
	const double shapes[][4] = {{0.3, -1, -1, -1}, {1.0 / 3, 123, 45, -1}, {0.25, -1, 100, -1},
	                            {-1, 999, -1, -1}, {1, -1, -1, 1},         {0.7, 10, 10, 0}};
	uint64_t r = 12345;
	struct master_sched_task *running[64];
	int nrun = 0;
	struct master_sched_assignment out[64];
	int64_t cycles = 0;
	intptr_t next = 0;
	while (cycles < 10000) {
		while (master_sched_ready_count(s) < 20) {
			const double *sh = shapes[next % 6];
			task(s, (double)(next % 3), next % 2 ? "x" : "y", sh[0], (int64_t)sh[1],
			     (int64_t)sh[2], (int64_t)sh[3], next);
			next++;
		}
		int n = run_pass(s, MASTER_SCHED_WORST, 16, out, NULL);
		for (int i = 0; i < n && nrun < 64; i++)
			running[nrun++] = out[i].task;
		for (int k = 0; k < 5; k++) {
			struct master_sched_box f;
			master_sched_worker_free(w[k], &f);
			assert_true(f.cores > -1e-9 && f.memory >= 0 && f.disk >= 0 && f.gpus >= 0);
		}
		/* release a random half, in random order */
		for (int i = 0; i < nrun;) {
			r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			if ((r >> 33) & 1) {
				assert_int_equal(master_sched_task_release(s, running[i], 1), 0);
				master_sched_task_remove(s, running[i]);
				running[i] = running[--nrun];
				cycles++;
			} else {
				i++;
			}
		}
	}
	for (int i = 0; i < nrun; i++)
		assert_int_equal(master_sched_task_release(s, running[i], 1), 0);
	assert_int_equal(master_sched_running_count(s), 0);
	for (int k = 0; k < 5; k++) {
		struct master_sched_box f, t;
		master_sched_worker_free(w[k], &f);
		master_sched_worker_total(w[k], &t);
		assert_true(f.cores == t.cores);
		assert_int_equal(f.memory, t.memory);
		assert_int_equal(f.disk, t.disk);
		assert_int_equal(f.gpus, t.gpus);
		assert_int_equal(master_sched_worker_running(w[k]), 0);
	}
	master_sched_delete(s);
}

static void test_exhaustion(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = worker(s, "w", 4, 8000, 4000, 0, NULL);
	struct category *c = master_sched_category(s, "mw");
	category_set_mode(c, CATEGORY_MODE_MIN_WASTE);
	category_set_update_interval(c, 10);
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 6000;
	category_set_max(c, &max);
	for (int i = 0; i < 10; i++)
		measure(c, 1, 200, 100, 10);
	struct master_sched_task *t = task(s, 0, "mw", -1, -1, -1, -1, 1);
	struct master_sched_task *e = task(s, 0, "mw", -1, 500, -1, -1, 2);
	struct master_sched_assignment out[4];
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 2);
	assert_int_equal(out[0].box.memory, 250);
	assert_int_equal(master_sched_task_level(t), CATEGORY_LEVEL_FIRST);
	/* an explicit value exhausted: fails, and its box is free again */
	assert_int_equal(master_sched_task_exhausted(s, e, UINT64_C(1) << RM_MEMORY, 30), 0);
	assert_int_equal(master_sched_task_state(e), MASTER_SCHED_TASK_IDLE);
	/* over its memory: back at the maximum, in its place */
	assert_int_equal(master_sched_task_exhausted(s, t, UINT64_C(1) << RM_MEMORY, 20), 1);
	assert_int_equal(master_sched_task_state(t), MASTER_SCHED_TASK_READY);
	assert_int_equal(master_sched_task_level(t), CATEGORY_LEVEL_MAX);
	struct master_sched_box f;
	master_sched_worker_free(w, &f);
	assert_true(f.cores == 4);
	assert_int_equal(f.memory, 8000);
	/* at the maximum: the category maximum for memory, the whole worker for the rest */
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_ptr_equal(out[0].task, t);
	assert_true(out[0].box.cores == 4);
	assert_int_equal(out[0].box.memory, 6000);
	assert_int_equal(out[0].box.disk, 4000);
	/* exhausted at the maximum: fails */
	assert_int_equal(master_sched_task_exhausted(s, t, UINT64_C(1) << RM_MEMORY, 30), 0);
	assert_int_equal(master_sched_task_state(t), MASTER_SCHED_TASK_IDLE);
	master_sched_worker_free(w, &f);
	assert_int_equal(f.memory, 8000);
	assert_int_equal(master_sched_task_exhausted(s, t, 1, 0), 0);
	/* a task that had the whole worker while measuring cannot be given more */
	category_set_mode(master_sched_category(s, "meas"), CATEGORY_MODE_MAX_THROUGHPUT);
	struct master_sched_task *m = task(s, 0, "meas", -1, -1, -1, -1, 3);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(out[0].box.memory, 8000);
	assert_int_equal(master_sched_task_exhausted(s, m, UINT64_C(1) << RM_MEMORY, 1), 0);
	/* FIXED: fails */
	struct master_sched_task *x = task(s, 0, "fixed", 1, -1, -1, -1, 4);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(master_sched_task_exhausted(s, x, UINT64_C(1) << RM_MEMORY, 1), 0);
	assert_int_equal(master_sched_task_exhausted(s, x, UINT64_C(1) << RM_MEMORY, 1), 0);
	assert_int_equal(master_sched_task_requeue(s, x, CATEGORY_LEVEL_FIRST), 0);
	assert_int_equal(master_sched_task_exhausted(s, x, UINT64_C(1) << RM_MEMORY, 1), -EINVAL);
	assert_int_equal(master_sched_task_requeue(s, t, CATEGORY_LEVEL_ERROR), -EINVAL);
	master_sched_delete(s);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.priority = NAN;
	errno = 0;
	assert_null(master_sched_task_add(s, &ts));
	assert_int_equal(errno, EINVAL);
	master_sched_task_spec_init(&ts);
	ts.request.cores = -2;
	assert_null(master_sched_task_add(s, &ts));
	master_sched_task_spec_init(&ts);
	ts.request.memory = -5;
	assert_null(master_sched_task_add(s, &ts));
	master_sched_task_spec_init(&ts);
	ts.request.cores = INFINITY;
	assert_null(master_sched_task_add(s, &ts));
	const char *bad[] = {""};
	master_sched_task_spec_init(&ts);
	ts.features = bad;
	ts.n_features = 1;
	assert_null(master_sched_task_add(s, &ts));
	assert_int_equal(master_sched_task_spec_check(&ts), -EINVAL);
	ts.features = NULL;
	assert_null(master_sched_task_add(s, &ts));
	assert_int_equal(master_sched_ready_count(s), 0);
	/* the check alone agrees with add, and adds nothing */
	master_sched_task_spec_init(&ts);
	ts.request.memory = -5;
	assert_int_equal(master_sched_task_spec_check(&ts), -EINVAL);
	ts.request.memory = 5;
	assert_int_equal(master_sched_task_spec_check(&ts), 0);
	assert_int_equal(master_sched_ready_count(s), 0);

	struct master_sched_worker_spec ws = {.id = "w", .total = {2, 100, 100, 0}};
	assert_non_null(master_sched_worker_add(s, &ws));
	errno = 0;
	assert_null(master_sched_worker_add(s, &ws));
	assert_int_equal(errno, EEXIST);
	ws.id = "v";
	ws.total.memory = -1;
	errno = 0;
	assert_null(master_sched_worker_add(s, &ws));
	assert_int_equal(errno, EINVAL);
	ws.id = "";
	ws.total.memory = 1;
	assert_null(master_sched_worker_add(s, &ws));
	struct master_sched_box nb = {NAN, 1, 1, 1};
	assert_int_equal(master_sched_worker_set_total(s, master_sched_worker_lookup(s, "w"), &nb),
	                 -EINVAL);

	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	o.policy = (enum master_sched_policy)17;
	struct master_sched_assignment out[2];
	assert_int_equal(master_sched_pass(s, &o, out, 2, NULL), -EINVAL);
	assert_int_equal(master_sched_pass(s, NULL, out, 2, NULL), -EINVAL);
	enum master_sched_policy p;
	assert_int_equal(master_sched_policy_parse("WORST", &p), 0);
	assert_int_equal(p, MASTER_SCHED_WORST);
	assert_int_equal(master_sched_policy_parse("best", &p), -EINVAL);
	assert_string_equal(master_sched_policy_name(MASTER_SCHED_FILES), "files");
	master_sched_delete(s);
}

static void test_from_task(void **state)
{
	(void)state;
	struct work_queue_task *wt = work_queue_task_create("true");
	assert_int_equal(work_queue_task_specify_cores(wt, 2), 0);
	assert_int_equal(work_queue_task_specify_category(wt, "cat"), 0);
	assert_int_equal(work_queue_task_specify_priority(wt, 3), 0);
	assert_int_equal(work_queue_task_specify_feature(wt, "gpu"), 0);
	struct master_sched_task_spec ts;
	master_sched_task_spec_from_task(&ts, wt);
	assert_true(ts.request.cores == 2);
	assert_int_equal(ts.request.memory, -1);
	assert_string_equal(ts.category, "cat");
	assert_true(ts.priority == 3);
	assert_int_equal(ts.n_features, 1);
	assert_ptr_equal(ts.data, wt);
	struct master_sched *s = master_sched_create();
	struct master_sched_task *t = master_sched_task_add(s, &ts);
	assert_non_null(t);
	const char *f[] = {"gpu"};
	struct master_sched_worker_spec ws = {.id = "w", .total = {4, 4000, 4000, 0}};
	ws.features = f;
	ws.n_features = 1;
	assert_non_null(master_sched_worker_add(s, &ws));
	struct master_sched_assignment out[2];
	assert_int_equal(run_pass(s, MASTER_SCHED_FILES, 0, out, NULL), 1);
	assert_int_equal(out[0].box.memory, 2000);
	assert_ptr_equal(master_sched_task_remove(s, t), wt);
	master_sched_delete(s);
	work_queue_task_delete(wt);
}

/* The cost bounds of section 6: heads tried per heap, 64 candidates, no scan when full. */
static void test_pass_cost(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w[200];
	char id[16];
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		w[i] = worker(s, id, 2, 4000, 4000, 0, NULL);
	}
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	struct master_sched_pass_stats st;
	task(s, 0, "a", 1, 100, 100, -1, 0);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, &st), 1);
	assert_ptr_equal(out[0].worker, w[0]);
	assert_true(st.workers_examined <= 64);
	const char *cats[] = {"a", "b", "c"};
	for (int i = 0; i < 30000; i++)
		task(s, 0, cats[i % 3], 1, 100, 100, -1, i + 1);
	assert_int_equal(run_pass(s, MASTER_SCHED_FILES, 0, out, &st), 399);
	assert_true(st.workers_examined <= 399 * 64);
	for (int k = 0; k < 200; k++) {
		struct master_sched_box f;
		master_sched_worker_free(w[k], &f);
		assert_true(f.cores == 0);
	}
	/* every worker is full: the next pass looks at nothing */
	assert_int_equal(run_pass(s, MASTER_SCHED_FILES, 0, out, &st), 0);
	assert_int_equal(st.heads_tried, 0);
	assert_int_equal(st.workers_examined, 0);
	master_sched_delete(s);
	free(out);
}

static void test_pass_cost_blocked(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	char id[16];
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		worker(s, id, 2, 4000, 4000, 0, NULL);
	}
	const char *cats[] = {"a", "b", "c"};
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	struct master_sched_pass_stats st;
	/* one 1-core task per worker first */
	for (int i = 0; i < 200; i++)
		task(s, 5, cats[i % 3], 1, 100, 100, -1, i);
	assert_int_equal(run_pass(s, MASTER_SCHED_WORST, 0, out, &st), 200);
	for (int k = 0; k < 200; k++) {
		struct master_sched_box f;
		master_sched_worker_free(
		    master_sched_worker_lookup(s, (snprintf(id, sizeof id, "w%d", k), id)), &f);
		assert_true(f.cores == 1);
	}
	/* 30,000 tasks needing two cores: one head per heap, no worker even looked at */
	for (int i = 0; i < 30000; i++)
		task(s, 0, cats[i % 3], 2, 100, 100, -1, 1000 + i);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, &st), 0);
	assert_int_equal(st.heads_tried, 3);
	assert_int_equal(st.classes_blocked, 3);
	assert_int_equal(st.workers_examined, 0);
	free(out);
	master_sched_delete(s);
}

/* ---- prefetch ---- */

static struct master_sched_worker *qworker(struct master_sched *s, const char *id, double cores,
                                           int qmax)
{
	struct master_sched_worker_spec ws = {
	    .id = id, .total = {cores, 1000, 1000, 0}, .queue_max = qmax, .data = (void *)id};
	struct master_sched_worker *w = master_sched_worker_add(s, &ws);
	assert_non_null(w);
	return w;
}

static int run_prefetch(struct master_sched *s, int per_worker, double max_s,
                        struct master_sched_assignment *out)
{
	struct master_sched_prefetch_opts o;
	master_sched_prefetch_opts_init(&o);
	o.per_worker = per_worker;
	o.max_task_seconds = max_s;
	int n = master_sched_prefetch(s, &o, out, MAXA);
	assert_true(n >= 0);
	return n;
}

/* Prefetching looks at the workers with room, not at every worker for every task. */
static void test_prefetch_no_scan(void **state)
{
	(void)state;
	enum { W = 2000 };
	struct master_sched *s = master_sched_create();
	char ids[W][16];
	for (int i = 0; i < W; i++) {
		snprintf(ids[i], sizeof ids[i], "w%d", i);
		qworker(s, ids[i], 1, 2);
	}
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	master_sched_category_record_time(s, "c", 0.1);
	for (int i = 0; i < 3 * W + 10; i++)
		task(s, 0, "c", 1, 10, 10, 0, i + 1);
	int running = 0; /* every core busy first */
	for (int n; (n = run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL)) > 0;)
		running += n;
	assert_int_equal(running, W);
	int64_t queued = 0;
	for (int round = 0; round < 8 && queued < 2 * W; round++) {
		int64_t before = master_sched_prefetch_examined(s);
		int n = run_prefetch(s, -1, 1.0, out);
		assert_true(n > 0);
		queued += n;
		/* about one worker per task (and the room check) */
		assert_true(master_sched_prefetch_examined(s) - before <= 2 * (int64_t)n + 2);
	}
	assert_int_equal(queued, 2 * W);
	/* the fewest queued first: every worker holds 2 */
	for (int i = 0; i < W; i++)
		assert_int_equal(master_sched_worker_queued(master_sched_worker_lookup(s, ids[i])),
		                 2);
	/* every queue full: nothing is looked at */
	int64_t before = master_sched_prefetch_examined(s);
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 0);
	assert_true(master_sched_prefetch_examined(s) - before <= 2);
	free(out);
	master_sched_delete(s);
}

static void test_prefetch_measure(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = qworker(s, "w", 1, 4);
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	task(s, 0, "short", 1, 10, 10, 0, 1);
	struct master_sched_task *a2 = task(s, 0, "short", 1, 10, 10, 0, 2);
	struct master_sched_task *b1 = task(s, 0, "long", 1, 10, 10, 0, 3);
	struct master_sched_task *c1 = task(s, 0, "new", 1, 10, 10, 0, 4);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(id_of(&out[0]), 1);
	/* Nothing measured yet: nothing is queued. */
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 0);
	assert_int_equal(master_sched_category_mean_time(s, "short"), -1);
	master_sched_category_record_time(s, "long", 4.0);
	master_sched_category_record_time(s, "long", 6.0);
	master_sched_category_record_time(s, "short", 0.02);
	assert_true(fabs(master_sched_category_mean_time(s, "long") - 5.0) < 1e-9);
	/* Only the short category goes ahead. */
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 1);
	assert_ptr_equal(out[0].task, a2);
	assert_ptr_equal(out[0].worker, w);
	assert_int_equal(master_sched_task_state(a2), MASTER_SCHED_TASK_QUEUED);
	assert_ptr_equal(master_sched_task_worker(a2), w);
	assert_int_equal(master_sched_worker_queued(w), 1);
	assert_int_equal(master_sched_queued_count(s), 1);
	assert_int_equal(master_sched_ready_count(s), 2);
	assert_int_equal(master_sched_task_state(b1), MASTER_SCHED_TASK_READY);
	/* A higher threshold lets the long one through; the unmeasured one never. */
	assert_int_equal(run_prefetch(s, -1, 10.0, out), 1);
	assert_ptr_equal(out[0].task, b1);
	assert_int_equal(master_sched_task_state(c1), MASTER_SCHED_TASK_READY);
	/* Off. */
	master_sched_category_record_time(s, "new", 0.01);
	assert_int_equal(run_prefetch(s, 0, 10.0, out), 0);
	assert_int_equal(master_sched_task_state(c1), MASTER_SCHED_TASK_READY);
	free(out);
	master_sched_delete(s);
}

/* Tasks in a container of their own go ahead up to container_task_seconds (their worker makes
 * the container while they wait); the same category's other tasks keep the general limit. */
static void test_prefetch_own_container(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = qworker(s, "w", 1, 4);
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	task(s, 0, "sim", 1, 10, 10, 0, 1); /* runs */
	struct master_sched_task *plain = task(s, 0, "sim", 1, 10, 10, 0, 2);
	struct master_sched_task_spec ts;
	master_sched_task_spec_init(&ts);
	ts.category = "sim";
	ts.request = (struct master_sched_box){1, 10, 10, 0};
	ts.image = "busybox:1";
	ts.own_container = 1;
	ts.data = (void *)3;
	struct master_sched_task *own = master_sched_task_add(s, &ts);
	assert_non_null(own);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	master_sched_category_record_time(s, "sim", 5.0);
	/* 5 s: above the general 1 s, below the default 10 s for own containers */
	struct master_sched_prefetch_opts o;
	master_sched_prefetch_opts_init(&o);
	assert_true(o.container_task_seconds == MASTER_SCHED_CONTAINER_PREFETCH_S);
	o.container_task_seconds = 4.0;
	assert_int_equal(master_sched_prefetch(s, &o, out, MAXA), 0);
	o.container_task_seconds = 6.0;
	assert_int_equal(master_sched_prefetch(s, &o, out, MAXA), 1);
	assert_ptr_equal(out[0].task, own);
	assert_ptr_equal(out[0].worker, w);
	assert_int_equal(master_sched_task_state(plain), MASTER_SCHED_TASK_READY);
	/* a negative or NaN limit is refused */
	o.container_task_seconds = -1;
	assert_int_equal(master_sched_prefetch(s, &o, out, MAXA), -EINVAL);
	o.container_task_seconds = NAN;
	assert_int_equal(master_sched_prefetch(s, &o, out, MAXA), -EINVAL);
	free(out);
	master_sched_delete(s);
}

static void test_prefetch_room_priority(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w1 = qworker(s, "w1", 1, 1);
	struct master_sched_worker *w2 = qworker(s, "w2", 1, 3);
	struct master_sched_worker *w3 = qworker(s, "w3", 1, 0);     /* no `queue` */
	struct master_sched_worker *big = qworker(s, "big", 0.5, 4); /* its total never fits */
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	master_sched_category_record_time(s, "c", 0.1);
	static const double prio[] = {0, 0, 5, 0, 9, 1, 0, 2, 0, 0};
	for (int i = 0; i < 10; i++)
		task(s, prio[i], "c", 1, 10, 10, 0, i + 1);
	/* The pass takes the three highest priorities (9, 5, 2). */
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 3);
	/* Then, in priority order (1, then submission order), the fewest queued first. */
	int n = run_prefetch(s, -1, 1.0, out);
	assert_int_equal(n, 4);
	static const intptr_t want_id[] = {6, 1, 2, 4};
	struct master_sched_worker *want_w[] = {w1, w2, w2, w2};
	for (int i = 0; i < n; i++) {
		assert_int_equal(id_of(&out[i]), want_id[i]);
		assert_ptr_equal(out[i].worker, want_w[i]);
		assert_true(out[i].worker != w3 && out[i].worker != big);
	}
	assert_int_equal(master_sched_worker_queued(w1), 1);
	assert_int_equal(master_sched_worker_queued(w2), 3);
	assert_int_equal(master_sched_worker_queued(w3), 0);
	/* Queues full: nothing more. */
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 0);
	free(out);
	master_sched_delete(s);

	/* The master's own limit (per_worker) caps what the worker offers. */
	s = master_sched_create();
	w2 = qworker(s, "w2", 1, 3);
	out = xcalloc(MAXA, sizeof *out);
	master_sched_category_record_time(s, "c", 0.1);
	for (int i = 0; i < 5; i++)
		task(s, 0, "c", 1, 10, 10, 0, i + 1);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(run_prefetch(s, 1, 1.0, out), 1);
	assert_int_equal(master_sched_worker_queued(w2), 1);
	free(out);
	master_sched_delete(s);
}

static void test_prefetch_promotion(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = qworker(s, "w", 2, 4);
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	master_sched_category_record_time(s, "c", 0.1);
	struct master_sched_task *r1 = task(s, 0, "c", 1, 10, 10, 0, 1);
	struct master_sched_task *r2 = task(s, 0, "c", 1, 10, 10, 0, 2);
	struct master_sched_task *q1 = task(s, 0, "c", 2, 10, 10, 0, 3);
	struct master_sched_task *q2 = task(s, 0, "c", 1, 10, 10, 0, 4);
	struct master_sched_task *q3 = task(s, 0, "c", 1, 10, 10, 0, 5);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 2);
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 3);
	assert_int_equal(master_sched_worker_queued(w), 3);
	struct master_sched_task *t4 = task(s, 0, "c", 1, 10, 10, 0, 6);
	/* One core frees: the head needs two, so nothing is committed, not even q2 (in order). */
	assert_int_equal(master_sched_task_release(s, r1, 1.0), 0);
	assert_int_equal(master_sched_task_state(q1), MASTER_SCHED_TASK_QUEUED);
	assert_int_equal(master_sched_task_state(q2), MASTER_SCHED_TASK_QUEUED);
	/* ... and a worker with queued tasks gets nothing from the normal pass. */
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	assert_int_equal(master_sched_task_state(t4), MASTER_SCHED_TASK_READY);
	/* Two cores free: q1 only. */
	assert_int_equal(master_sched_task_release(s, r2, 2.0), 0);
	assert_int_equal(master_sched_task_state(q1), MASTER_SCHED_TASK_RUNNING);
	assert_int_equal(master_sched_task_state(q2), MASTER_SCHED_TASK_QUEUED);
	assert_int_equal(master_sched_worker_running(w), 1);
	struct master_sched_box fr;
	master_sched_worker_free(w, &fr);
	assert_true(fabs(fr.cores) < 1e-9);
	/* q1 ends: exactly q2 and q3 are committed, in order, and the queue is empty. */
	assert_int_equal(master_sched_task_started(s, q1, 2.5), 0);
	assert_int_equal(master_sched_task_release(s, q1, 3.0), 0);
	assert_int_equal(master_sched_task_state(q2), MASTER_SCHED_TASK_RUNNING);
	assert_int_equal(master_sched_task_state(q3), MASTER_SCHED_TASK_RUNNING);
	assert_int_equal(master_sched_worker_queued(w), 0);
	assert_int_equal(master_sched_queued_count(s), 0);
	assert_int_equal(master_sched_worker_running(w), 2);
	/* The worker ran ahead: task_running for a task still queued commits it and those
	 * before it; removing a queued task promotes behind it. */
	master_sched_task_release(s, q2, 4.0);
	master_sched_task_release(s, q3, 4.0);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1); /* normal pass again */
	assert_int_equal(master_sched_task_state(t4), MASTER_SCHED_TASK_RUNNING);
	master_sched_task_release(s, t4, 4.5);
	task(s, 0, "c", 2, 10, 10, 0, 10);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	struct master_sched_task *a = task(s, 0, "c", 2, 10, 10, 0, 7);
	struct master_sched_task *b = task(s, 0, "c", 1, 10, 10, 0, 8);
	struct master_sched_task *c = task(s, 0, "c", 1, 10, 10, 0, 9);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 0);
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 3);
	assert_int_equal(master_sched_task_started(s, b, 5.0), 2);
	assert_int_equal(master_sched_task_state(a), MASTER_SCHED_TASK_RUNNING);
	assert_int_equal(master_sched_task_state(b), MASTER_SCHED_TASK_RUNNING);
	assert_int_equal(master_sched_task_state(c), MASTER_SCHED_TASK_QUEUED);
	master_sched_task_remove(s, c);
	assert_int_equal(master_sched_worker_queued(w), 0);
	free(out);
	master_sched_delete(s);
}

static void test_prefetch_worker_lost(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_worker *w = qworker(s, "w", 1, 3);
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	master_sched_category_record_time(s, "c", 0.1);
	for (int i = 0; i < 5; i++)
		task(s, 0, "c", 1, 10, 10, 0, i + 1);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 1);
	assert_int_equal(run_prefetch(s, -1, 1.0, out), 3);
	assert_int_equal(master_sched_ready_count(s), 1);
	assert_int_equal(master_sched_worker_remove(s, w), 4);
	assert_int_equal(master_sched_ready_count(s), 5);
	assert_int_equal(master_sched_queued_count(s), 0);
	/* Back in their original place: a new worker gets them in submission order. */
	qworker(s, "w2", 10, 0);
	assert_int_equal(run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL), 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(id_of(&out[i]), i + 1);
	free(out);
	master_sched_delete(s);
}

/* The sums the master's status and hungry read (master_sched_sums) equal a walk of every
 * worker after any sequence of adds, passes, prefetches, releases, removals, resizes, flag,
 * total, queue and cap changes. */
static void check_sums(struct master_sched *s, struct master_sched_worker **ws, int nw, int cap)
{
	double used_cores = 0, free_cores = 0;
	int64_t used_mem = 0, room = 0;
	for (int i = 0; i < nw; i++) {
		struct master_sched_box tot, fr;
		master_sched_worker_total(ws[i], &tot);
		master_sched_worker_free(ws[i], &fr);
		used_cores += tot.cores - fr.cores;
		used_mem += tot.memory - fr.memory;
		if (fr.cores > 0)
			free_cores += fr.cores;
		int64_t lim = master_sched_worker_queue_max(ws[i]);
		if (master_sched_worker_flags(ws[i]) || lim <= 0 || cap == 0)
			continue;
		if (cap > 0 && cap < lim)
			lim = cap;
		if (lim > master_sched_worker_queued(ws[i]))
			room += lim - master_sched_worker_queued(ws[i]);
	}
	struct master_sched_box c;
	double f = -1;
	int64_t r = -1;
	master_sched_sums(s, &c, &f, &r);
	assert_true(fabs(c.cores - used_cores) < 1e-6);
	assert_int_equal(c.memory, used_mem);
	assert_true(fabs(f - free_cores) < 1e-6);
	assert_int_equal(r, room);
}

static void test_sums_follow_changes(void **state)
{
	(void)state;
	struct master_sched *s = master_sched_create();
	struct master_sched_assignment *out = xcalloc(MAXA, sizeof *out);
	struct master_sched_worker *ws[64];
	struct master_sched_task *ts[512];
	char id[16];
	int nw = 0, nt = 0, serial = 0, cap = -1;
	unsigned seed = 7;
	master_sched_category_record_time(s, "c", 0.1);
	for (int step = 0; step < 3000; step++) {
		int op = rand_r(&seed) % 11;
		if (op == 0 && nw < 64) {
			snprintf(id, sizeof id, "w%d", serial++);
			struct master_sched_worker_spec sp = {
			    .id = id,
			    .total = {1 + rand_r(&seed) % 4, 1000, 1000, 0},
			    .queue_max = rand_r(&seed) % 3};
			ws[nw] = master_sched_worker_add(s, &sp);
			assert_non_null(ws[nw]);
			nw++;
		} else if (op == 1 && nt < 512) {
			ts[nt] = task(s, 0, "c", 1 + rand_r(&seed) % 2, 10, 10, 0, nt);
			nt++;
		} else if (op == 2) {
			run_pass(s, MASTER_SCHED_FCFS, 0, out, NULL);
		} else if (op == 3) {
			run_prefetch(s, cap, 1.0, out);
		} else if (op == 4 && nt > 0) {
			master_sched_task_release(s, ts[rand_r(&seed) % nt], step);
		} else if (op == 5 && nt > 0) {
			int i = rand_r(&seed) % nt;
			master_sched_task_remove(s, ts[i]);
			ts[i] = ts[--nt];
		} else if (op == 6 && nw > 0) {
			int i = rand_r(&seed) % nw;
			master_sched_worker_remove(s, ws[i]);
			ws[i] = ws[--nw];
		} else if (op == 7 && nw > 0) {
			master_sched_worker_set_flags(s, ws[rand_r(&seed) % nw],
			                              rand_r(&seed) % 2 ? MASTER_SCHED_FULL : 0);
		} else if (op == 8 && nw > 0) {
			struct master_sched_box b = {1 + rand_r(&seed) % 4, 1000, 1000, 0};
			master_sched_worker_set_total(s, ws[rand_r(&seed) % nw], &b);
		} else if (op == 9 && nw > 0) {
			master_sched_worker_set_queue_max(s, ws[rand_r(&seed) % nw],
			                                  rand_r(&seed) % 3);
		} else if (op == 10) {
			cap = (int)(rand_r(&seed) % 4) - 1;
			master_sched_set_room_cap(s, cap);
		}
		check_sums(s, ws, nw, cap);
	}
	free(out);
	master_sched_delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_putback_and_cancel),
	    cmocka_unit_test(test_lost_worker_order),
	    cmocka_unit_test(test_boxes_plain),
	    cmocka_unit_test(test_boxes_category),
	    cmocka_unit_test(test_fit_features_flags),
	    cmocka_unit_test(test_policies),
	    cmocka_unit_test(test_max_concurrent_budget),
	    cmocka_unit_test(test_no_drift),
	    cmocka_unit_test(test_exhaustion),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_from_task),
	    cmocka_unit_test(test_pass_cost),
	    cmocka_unit_test(test_pass_cost_blocked),
	    cmocka_unit_test(test_prefetch_measure),
	    cmocka_unit_test(test_prefetch_own_container),
	    cmocka_unit_test(test_prefetch_no_scan),
	    cmocka_unit_test(test_prefetch_room_priority),
	    cmocka_unit_test(test_prefetch_promotion),
	    cmocka_unit_test(test_prefetch_worker_lost),
	    cmocka_unit_test(test_sums_follow_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
