/* helper_sched_bench.c: micro-benchmark of the scheduling core (master_sched). It queues 100,000
 * tasks in 3 categories for 200 workers of 2 cores, then repeats: one pass, then a random half
 * of the running tasks complete (and now and then a worker is lost and replaced). It prints
 * the cost of a pass and of one assignment around 10 % and 90 % of completion, i.e. how many
 * tasks per second the scheduler alone could sustain. Usage: helper_sched_bench [POLICY]. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "master_sched.h"
#include "category.h"
#include "debug.h"
#include "rmsummary.h"
#include "xalloc.h"
#include "banned.h"

#define N_TASKS   100000
#define N_WORKERS 200
#define BUDGET    1000

struct window {
	const char *name;
	double lo, hi; /* completed fraction */
	int64_t passes, assigned;
	double seconds;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *s >> 33;
}

/* FILES: pretend a worker caches the inputs of tasks whose number shares its residue. */
static int64_t cached(void *worker_data, void *task_data, void *arg)
{
	(void)arg;
	uintptr_t w = (uintptr_t)worker_data, t = (uintptr_t)task_data;
	return (t % 7) == (w % 7) ? 1000 : 0;
}

static struct master_sched_worker *add_worker(struct master_sched *s, int n)
{
	char id[32];
	snprintf(id, sizeof id, "worker-%d", n);
	struct master_sched_worker_spec ws = {.id = id, .total = {2, 4000, 20000, 0}};
	ws.data = (void *)(uintptr_t)n;
	struct master_sched_worker *w = master_sched_worker_add(s, &ws);
	if (!w)
		fatal("cannot add worker %s: %s", id, strerror(errno));
	return w;
}

int main(int argc, char **argv)
{
	enum master_sched_policy policy = MASTER_SCHED_FILES;
	if (argc > 1 && master_sched_policy_parse(argv[1], &policy) < 0)
		fatal("unknown policy '%s' (fcfs, files, time, worst, rand)", argv[1]);

	struct master_sched *s = master_sched_create();
	master_sched_set_cached_bytes_fn(s, cached, NULL);
	/* "align": explicit 1 core 1000 MB; "sort": 1 core, the rest a proportional share;
	 * "stats": MAX mode, category maximum 1 core 1500 MB, sized from measurements. */
	struct category *stats = master_sched_category(s, "stats");
	category_set_mode(stats, CATEGORY_MODE_MAX);
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_CORES] = 1;
	max.v[RM_MEMORY] = 1500;
	max.v[RM_DISK] = 5000;
	category_set_max(stats, &max);
	master_sched_category_set_max_concurrent(s, "sort", 150);

	struct master_sched_worker **workers = xcalloc(N_WORKERS, sizeof *workers);
	int next_worker = 0;
	for (int i = 0; i < N_WORKERS; i++)
		workers[i] = add_worker(s, next_worker++);

	uint64_t seed = 2024;
	double t0 = now_s();
	for (int i = 0; i < N_TASKS; i++) {
		struct master_sched_task_spec ts;
		master_sched_task_spec_init(&ts);
		ts.priority = (double)(rnd(&seed) % 3);
		ts.data = (void *)(uintptr_t)i;
		switch (i % 3) {
		case 0:
			ts.category = "align";
			ts.request = (struct master_sched_box){1, 1000, 100, 0};
			break;
		case 1:
			ts.category = "sort";
			ts.request.cores = 1;
			break;
		default: ts.category = "stats"; break;
		}
		if (!master_sched_task_add(s, &ts))
			fatal("cannot add task %d: %s", i, strerror(errno));
	}
	double t_submit = now_s() - t0;

	struct master_sched_assignment *out = xcalloc(BUDGET, sizeof *out);
	struct master_sched_task **running = xcalloc(N_TASKS, sizeof *running);
	size_t nrun = 0;
	int64_t done = 0, passes = 0, assigned = 0, lost = 0, put_back = 0;
	double sched_time = 0, sim = 0, worst_pass = 0;
	double full_time = 0;
	int64_t full_passes = 0;
	struct window win[2] = {{"10%", 0.05, 0.15, 0, 0, 0}, {"90%", 0.85, 0.95, 0, 0, 0}};
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	o.policy = policy;
	o.max_assignments = BUDGET;
	o.rng = &seed;

	while (done < N_TASKS) {
		sim += 1;
		o.now = sim;
		double a = now_s();
		int n = master_sched_pass(s, &o, out, BUDGET, NULL);
		double dt = now_s() - a;
		if (n < 0)
			fatal("pass failed: %d", n);
		sched_time += dt;
		if (dt > worst_pass)
			worst_pass = dt;
		passes++;
		assigned += n;
		double frac = (double)done / N_TASKS;
		for (int k = 0; k < 2; k++)
			if (frac >= win[k].lo && frac < win[k].hi) {
				win[k].passes++;
				win[k].assigned += n;
				win[k].seconds += dt;
			}
		for (int i = 0; i < n; i++)
			running[nrun++] = out[i].task;
		/* A pass right after a pass: everything is full, nothing must be scanned. */
		if (passes % 10 == 0) {
			a = now_s();
			int m = master_sched_pass(s, &o, out, BUDGET, NULL);
			full_time += now_s() - a;
			full_passes++;
			if (m != 0)
				fatal("a pass over full workers assigned %d tasks", m);
		}
		/* Now and then a worker is lost and another one joins. */
		if (passes % 25 == 0) {
			int k = (int)(rnd(&seed) % N_WORKERS);
			size_t j = 0;
			for (size_t i = 0; i < nrun; i++)
				if (master_sched_task_worker(running[i]) != workers[k])
					running[j++] = running[i];
			nrun = j;
			put_back += master_sched_worker_remove(s, workers[k]);
			workers[k] = add_worker(s, next_worker++);
			lost++;
		}
		/* A random half of the running tasks completes. */
		for (size_t i = 0; i < nrun;) {
			if (rnd(&seed) & 1) {
				i++;
				continue;
			}
			struct master_sched_task *t = running[i];
			if (master_sched_task_release(s, t, sim + 0.5) < 0)
				fatal("release failed");
			if ((uintptr_t)master_sched_task_data(t) % 3 == 2) {
				struct rmsummary m;
				rmsummary_init(&m);
				m.v[RM_CORES] = 1;
				m.v[RM_MEMORY] = 300 + (double)(rnd(&seed) % 600);
				m.v[RM_DISK] = 50;
				m.v[RM_GPUS] = 0;
				m.v[RM_WALL_TIME] = 1;
				category_accumulate(stats, &m);
			}
			master_sched_task_remove(s, t);
			running[i] = running[--nrun];
			done++;
		}
	}
	double total = now_s() - t0;

	printf("helper_sched_bench: policy %s, %d tasks in 3 categories, %d workers of 2 cores\n",
	       master_sched_policy_name(policy), N_TASKS, N_WORKERS);
	printf("  submit: %.3f s (%.2f us per task)\n", t_submit, t_submit / N_TASKS * 1e6);
	printf("  passes: %lld, assignments: %lld (%lld more after %lld lost workers put %lld "
	       "tasks back)\n",
	       (long long)passes, (long long)assigned, (long long)(assigned - N_TASKS),
	       (long long)lost, (long long)put_back);
	printf("  scheduler time: %.3f s, %.1f us per pass, %.2f us per assignment, worst pass "
	       "%.3f ms\n",
	       sched_time, sched_time / (double)passes * 1e6, sched_time / (double)assigned * 1e6,
	       worst_pass * 1e3);
	printf("  sustainable: %.0f tasks/s (scheduler alone)\n", (double)assigned / sched_time);
	for (int k = 0; k < 2; k++) {
		struct window *w = &win[k];
		if (w->passes == 0 || w->assigned == 0)
			continue;
		printf("  at %s of completion: %lld passes, %.1f us per pass, %.2f us per "
		       "assignment, %.0f tasks/s\n",
		       w->name, (long long)w->passes, w->seconds / (double)w->passes * 1e6,
		       w->seconds / (double)w->assigned * 1e6, (double)w->assigned / w->seconds);
	}
	if (full_passes)
		printf("  pass over full workers: %.2f us (%lld measured)\n",
		       full_time / (double)full_passes * 1e6, (long long)full_passes);
	printf("  wall time of the whole simulation: %.3f s\n", total);
	if (master_sched_ready_count(s) != 0 || master_sched_running_count(s) != 0)
		fatal("tasks left: %lld ready, %lld running",
		      (long long)master_sched_ready_count(s),
		      (long long)master_sched_running_count(s));
	free(out);
	free(running);
	free(workers);
	master_sched_delete(s);
	return 0;
}
