/* test_scaler.c: unit tests of work_queue_factory's scaler policies (scaler.h) on hand-made
 * inputs: the --scaler names, the queue rule, the HPA formula with its tolerance and
 * scale-down window, HTA's warm-up, scale-up when tasks would still wait after one latency, the
 * run time of a category not measured yet, no action when they fit, draining of idle workers when
 * nothing waits, the gap of one latency between actions, the limits, the status document read into
 * an input, and the hook's answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaler.h"
#include "scaler_hook.h"
#include "scaler_model.h"
#include "xalloc.h"

#include "banned.h"

static char err[256];

/* An input with the factory's state: limits 0..10, 5 per cycle, workers of 4 cores, latency
 * 10 s, no action yet. */
static void base(struct scaler_input *in)
{
	memset(in, 0, sizeof *in);
	in->now = 1000;
	in->max_workers = 10;
	in->per_cycle = 5;
	in->worker_size = (struct scaler_vec){{4, 8000, 10000}};
	in->latency = 10;
	in->last_action = -1;
	in->last_start = -1;
	in->period = 1;
}

static struct scaler_category *add_cat(struct scaler_input *in, const char *name, int64_t waiting,
                                       int64_t running, double cores, int64_t done, double mean)
{
	in->cats = xrealloc(in->cats, (in->n_cats + 1) * sizeof *in->cats);
	struct scaler_category *c = &in->cats[in->n_cats++];
	memset(c, 0, sizeof *c);
	c->name = xstrdup(name);
	c->waiting = waiting;
	c->running = running;
	c->size = (struct scaler_vec){{cores, 100, 100}};
	c->cores_avg = -1;
	c->done = done;
	c->rt_mean = done ? mean : -1;
	c->rt_sd = -1;
	in->tasks_waiting += waiting;
	in->tasks_running += running;
	return c;
}

static struct scaler_worker *add_worker(struct scaler_input *in, const char *id, double free_cores,
                                        int tasks, double idle_s, bool ours)
{
	in->workers = xrealloc(in->workers, (in->n_workers + 1) * sizeof *in->workers);
	struct scaler_worker *w = &in->workers[in->n_workers++];
	memset(w, 0, sizeof *w);
	w->id = xstrdup(id);
	w->total = (struct scaler_vec){{4, 8000, 10000}};
	w->free = (struct scaler_vec){{free_cores, 8000, 10000}};
	w->tasks = tasks;
	w->idle_s = idle_s;
	w->ours = ours;
	in->workers_active++;
	if (ours)
		in->pool++;
	return w;
}

static void decide(const char *spec, struct scaler_input *in, struct scaler_decision *d)
{
	struct scaler_policy p;
	assert_int_equal(scaler_parse(spec, &p, err, sizeof err), 0);
	scaler_decide(&p, in, d);
}

static void test_parse(void **state)
{
	(void)state;
	struct scaler_policy p;
	assert_int_equal(scaler_parse("hta", &p, err, sizeof err), 0);
	assert_int_equal(p.kind, SCALER_HTA);
	assert_int_equal(scaler_parse("queue", &p, err, sizeof err), 0);
	assert_int_equal(p.kind, SCALER_QUEUE);
	assert_int_equal(scaler_parse("hpa:20", &p, err, sizeof err), 0);
	assert_int_equal(p.kind, SCALER_HPA);
	assert_true(p.hpa_target == 0.2 && p.hpa_window == 300);
	assert_int_equal(scaler_parse("hpa:50:30", &p, err, sizeof err), 0);
	assert_true(p.hpa_target == 0.5 && p.hpa_window == 30);
	assert_true(scaler_parse("hpa:", &p, err, sizeof err) < 0);
	assert_true(scaler_parse("hpa:101", &p, err, sizeof err) < 0);
	assert_true(scaler_parse("hpa:20:x", &p, err, sizeof err) < 0);
	assert_true(scaler_parse("HTA", &p, err, sizeof err) < 0);
	assert_string_equal(err, "--scaler HTA: expected hta, queue or hpa:TARGET");
}

static void test_queue(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	add_cat(&in, "a", 30, 2, 1, 5, 10);
	struct scaler_decision d;
	decide("queue", &in, &d);
	assert_int_equal(d.start, 5); /* 32 tasks / 4 cores = 8 workers, 5 per cycle */
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	in.per_cycle = 100;
	decide("queue", &in, &d);
	assert_int_equal(d.start, 8);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_hpa(void **state)
{
	(void)state;
	struct scaler_policy p;
	assert_int_equal(scaler_parse("hpa:20:60", &p, err, sizeof err), 0);
	struct scaler_input in;
	base(&in);
	struct scaler_category *c = add_cat(&in, "a", 100, 8, 1, 5, 10);
	c->cores_avg = 0.9; /* 8 x 0.9 cores busy on 2 x 4 cores: load 0.9 */
	add_worker(&in, "w1", 0, 4, 0, true);
	add_worker(&in, "w2", 0, 4, 0, true);
	struct scaler_decision d;
	scaler_decide(&p, &in, &d);
	/* desired = ceil(2 x 0.9 / 0.2) = 9: start 7 */
	assert_int_equal(d.start, 5); /* held to --workers-per-cycle */
	scaler_decision_clear(&d);
	/* an I/O-bound load of 0.05 on the same workers: desired 1, but the window holds 9 */
	c->cores_avg = 0.05;
	in.now += 10;
	scaler_decide(&p, &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	/* after the window, one worker is drained (the idle one first) */
	in.workers[1].tasks = 0;
	in.now += 100;
	scaler_decide(&p, &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 1);
	assert_string_equal(d.drain[0], "w2");
	scaler_decision_clear(&d);
	/* within the 10 % tolerance: no change */
	struct scaler_policy p2;
	assert_int_equal(scaler_parse("hpa:50", &p2, err, sizeof err), 0);
	c->cores_avg = 0.52;
	in.workers[1].tasks = 4;
	scaler_decide(&p2, &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_hta_warm_up(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	/* two categories never measured, many tasks each: one worker per category */
	add_cat(&in, "a", 200, 0, 1, 0, 0);
	add_cat(&in, "b", 50, 0, 1, 0, 0);
	struct scaler_decision d;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 2);
	scaler_decision_clear(&d);
	/* a category that declares its cores needs no warm-up: 200 + 50 tasks of 1 core, 4 per
	 * worker, held to the 10 workers of the limit */
	in.cats[0].declared = in.cats[1].declared = true;
	in.per_cycle = 100;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 10);
	scaler_decision_clear(&d);
	/* while the first task of a runs, a asks for nothing more */
	scaler_input_clear(&in);
	base(&in);
	add_cat(&in, "a", 199, 1, 1, 0, 0);
	add_worker(&in, "w1", 0, 1, 0, true);
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_hta_scale_up_and_fit(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	/* 20 waiting tasks of 2 cores, 60 s each; one 4-core worker busy until long after L */
	add_cat(&in, "a", 20, 2, 2, 10, 60);
	add_worker(&in, "w1", 0, 2, 0, true);
	struct scaler_decision d;
	decide("hta", &in, &d);
	/* 20 tasks, 2 per worker: 10 workers, within the limit of 10 in the pool (1 + 9), 5 per
	 * cycle */
	assert_int_equal(d.start, 5);
	scaler_decision_clear(&d);
	in.per_cycle = 100;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 9);
	scaler_decision_clear(&d);
	/* the running tasks end within L (mean 5 s): the 2 waiting fit on the worker then */
	scaler_input_clear(&in);
	base(&in);
	add_cat(&in, "a", 2, 2, 2, 10, 5);
	add_worker(&in, "w1", 0, 2, 0, true);
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	/* the requested workers count: 4 pending 4-core workers take 8 tasks of 2 cores */
	scaler_input_clear(&in);
	base(&in);
	add_cat(&in, "a", 8, 0, 2, 10, 60);
	in.pool = in.pending = 4;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	scaler_decision_clear(&d);
	/* vectors: 8 tasks of 1 core and 6000 MB: one per 8000 MB worker, not four */
	scaler_input_clear(&in);
	base(&in);
	struct scaler_category *c = add_cat(&in, "m", 8, 0, 1, 10, 60);
	c->size.v[SC_MEMORY] = 6000;
	in.per_cycle = 100;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 8);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_hta_waves_within_latency(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	/* 41 waiting tasks of 1 core, 6 s each; six idle 4-core workers: 24 run now and end at
	 * 6 s, the other 17 start then, before a worker requested now (L = 10 s) could arrive */
	add_cat(&in, "s", 41, 0, 1, 10, 6);
	for (int i = 0; i < 6; i++) {
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		add_worker(&in, id, 4, 0, 0, true);
	}
	struct scaler_decision d;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	/* with a latency shorter than the run time, the 17 still wait when new workers arrive:
	 * 5 workers (17 / 4, rounded up; the pool may reach 20) */
	in.latency = 5;
	in.per_cycle = 100;
	in.max_workers = 20;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 5);
	scaler_decision_clear(&d);
	/* many short waves: 1 s tasks on one worker, 4 at a time, 11 moments up to L = 10 s: 40
	 * fit, 45 do not (one more worker) */
	scaler_input_clear(&in);
	base(&in);
	add_cat(&in, "q", 40, 0, 1, 10, 1);
	add_worker(&in, "w", 4, 0, 0, true);
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	scaler_decision_clear(&d);
	in.cats[0].waiting = 48;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 1);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

/* A category that declares its size and has not finished a task: its run time is taken to be
 * twice its running tasks' mean age (at least one period). */
static void test_hta_unmeasured_run_time(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	in.latency = 5;
	in.per_cycle = 100;
	in.max_workers = 20;
	/* 41 tasks of 1 core arrive on five full 4-core workers: 20 run, 21 wait */
	struct scaler_category *c = add_cat(&in, "s3", 21, 20, 1, 0, 0);
	c->declared = true;
	for (int i = 0; i < 5; i++) {
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		add_worker(&in, id, 0, 4, 0, true);
	}
	struct scaler_decision d;
	/* just started (0.2 s): taken as one period, so the waves end well within L */
	c->running_mean_age = 0.2;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	scaler_decision_clear(&d);
	/* 2 s old: taken as 4 s; the 20 end at 2 s, 20 more start then and end at 6 s, after L:
	 * one task still waits, one worker */
	c->running_mean_age = 2;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 1);
	scaler_decision_clear(&d);
	/* 6 s old: taken as 12 s; nothing ends within L, all 21 wait: 6 workers */
	c->running_mean_age = 6;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 6);
	scaler_decision_clear(&d);
	/* none running yet: nothing to go by, the tasks hold their cores through L; 20 fit on the
	 * idle workers, one more worker for the 21st */
	scaler_input_clear(&in);
	base(&in);
	in.latency = 5;
	c = add_cat(&in, "s3", 21, 0, 1, 0, 0);
	c->declared = true;
	for (int i = 0; i < 5; i++) {
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		add_worker(&in, id, 4, 0, 0, true);
	}
	decide("hta", &in, &d);
	assert_int_equal(d.start, 1);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_hta_drain_and_gap(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	/* nothing waits: our idle workers are drained, the busy one and a foreign one are not */
	add_cat(&in, "a", 0, 1, 1, 10, 60);
	add_worker(&in, "busy", 3, 1, 0, true);
	add_worker(&in, "idle1", 4, 0, 30, true);
	add_worker(&in, "idle2", 4, 0, 30, true);
	add_worker(&in, "theirs", 4, 0, 30, false);
	struct scaler_decision d;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	assert_int_equal(d.n_drain, 2);
	assert_string_equal(d.drain[0], "idle1");
	assert_string_equal(d.drain[1], "idle2");
	scaler_decision_clear(&d);
	/* --min-workers 2 keeps one of them */
	in.min_workers = 2;
	decide("hta", &in, &d);
	assert_int_equal(d.n_drain, 1);
	scaler_decision_clear(&d);
	in.min_workers = 0;
	/* within one latency of the last start, nothing is drained */
	in.last_action = in.last_start = in.now - 3;
	decide("hta", &in, &d);
	assert_int_equal(d.n_drain, 0);
	assert_true(d.next_in > 6.9 && d.next_in < 7.1);
	scaler_decision_clear(&d);
	/* within one latency of a drain, more idle workers are drained */
	in.last_start = in.now - 30;
	decide("hta", &in, &d);
	assert_int_equal(d.n_drain, 2);
	scaler_decision_clear(&d);
	/* but workers are not started within one latency of a drain */
	in.cats[0].waiting = 40;
	in.tasks_waiting = 40;
	decide("hta", &in, &d);
	assert_int_equal(d.start, 0);
	assert_true(d.next_in > 6.9 && d.next_in < 7.1);
	scaler_decision_clear(&d);
	in.cats[0].waiting = 0;
	in.tasks_waiting = 0;
	/* a task waits (but fits on the idle workers): nothing is drained */
	in.last_action = -1;
	in.cats[0].waiting = 1;
	in.tasks_waiting = 1;
	decide("hta", &in, &d);
	assert_int_equal(d.n_drain, 0);
	assert_int_equal(d.start, 0);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_status_input(void **state)
{
	(void)state;
	json_error_t je;
	json_t *st = json_loads(
	    "{\"tasks_waiting\": 5, \"tasks_running\": 1, \"scaler\": {"
	    "\"categories\": [{\"name\": \"a\", \"waiting\": 5, \"running\": {\"count\": 1, "
	    "\"mean_age\": 4.0}, \"declared\": {\"cores\": -1, \"memory\": 500, \"disk\": -1}, "
	    "\"first_allocation\": {\"cores\": 2, \"memory\": 900, \"disk\": -1}, \"measured\": "
	    "{\"cores\": 1, \"memory\": 100, \"disk\": 20, \"cores_avg\": 0.5}, \"run_time\": "
	    "{\"count\": 3, \"mean\": 12.5, \"stddev\": 1.5}}],"
	    "\"workers_summary\": {\"active\": 2},"
	    "\"worker_rows\": [{\"id\": \"x#1\", \"state\": \"ACTIVE\", \"total\": {\"cores\": 4}, "
	    "\"free\": {\"cores\": 3}, \"tasks\": 1, \"idle_s\": 0, \"labels\": [\"gpu\", "
	    "\"wqf-r-1\"]}, {\"id\": \"y#2\", \"state\": \"DRAINING\", \"labels\": []}]}}",
	    0, &je);
	assert_non_null(st);
	struct scaler_input in;
	base(&in);
	assert_int_equal(scaler_input_add_status(&in, st, "wqf-r-"), 0);
	assert_int_equal(in.tasks_waiting, 5);
	assert_int_equal(in.workers_active, 2);
	assert_int_equal(in.n_cats, 1);
	/* declared memory, else the first allocation, else the measured size */
	assert_true(in.cats[0].size.v[SC_CORES] == 2);
	assert_true(in.cats[0].size.v[SC_MEMORY] == 500);
	assert_true(in.cats[0].size.v[SC_DISK] == 20);
	assert_true(in.cats[0].rt_mean == 12.5 && in.cats[0].cores_avg == 0.5);
	assert_int_equal(in.n_workers, 2);
	assert_true(in.workers[0].ours);
	assert_string_equal(in.workers[0].token, "wqf-r-1");
	assert_false(in.workers[1].ours);
	assert_true(in.workers[1].draining);
	/* load: 1 running x 0.5 cores over 4 cores (the second row has no cores) */
	assert_true(scaler_cpu_load(&in) == 0.125);
	json_t *doc = scaler_input_json(&in);
	assert_int_equal(json_array_size(json_object_get(doc, "categories")), 1);
	assert_non_null(json_object_get(json_object_get(doc, "factory"), "latency"));
	json_decref(doc);
	json_t *not_a_status = json_array();
	assert_true(scaler_input_add_status(&in, not_a_status, NULL) < 0);
	json_decref(not_a_status);
	json_decref(st);
	scaler_input_clear(&in);
}

static void test_hook_answers(void **state)
{
	(void)state;
	struct scaler_input in;
	base(&in);
	add_worker(&in, "busy", 0, 2, 0, true);
	add_worker(&in, "idle", 4, 0, 9, true);
	struct scaler_decision d;
	assert_int_equal(
	    scaler_hook_parse("{\"workers\": 5, \"next_in\": 30}", &in, &d, err, sizeof err), 0);
	assert_int_equal(d.start, 3);
	assert_true(d.next_in == 30);
	scaler_decision_clear(&d);
	/* fewer: the idle worker goes first */
	assert_int_equal(scaler_hook_parse("{\"workers\": 1}", &in, &d, err, sizeof err), 0);
	assert_int_equal(d.n_drain, 1);
	assert_string_equal(d.drain[0], "idle");
	scaler_decision_clear(&d);
	assert_int_equal(
	    scaler_hook_parse("{\"start\": 2, \"drain\": [\"busy\"]}", &in, &d, err, sizeof err),
	    0);
	assert_int_equal(d.start, 2);
	assert_string_equal(d.drain[0], "busy");
	scaler_decision_clear(&d);
	static const char *const bad[][2] = {
	    {"hello", "the answer is not JSON: line 1: '[' or '{' expected near 'hello'"},
	    {"[1]", "the answer is not a JSON object"},
	    {"{}", "expected \"workers\" or \"start\"/\"drain\""},
	    {"{\"workers\": -1}", "\"workers\" must be an integer in 0..100000"},
	    {"{\"workers\": 1, \"start\": 1}",
	     "give either \"workers\" or \"start\"/\"drain\", not both"},
	    {"{\"drain\": \"w\"}", "\"drain\" must be an array of worker ids"},
	    {"{\"drain\": [3]}", "\"drain\" must be an array of worker ids"},
	    {"{\"workers\": 1, \"next_in\": -2}", "\"next_in\" must be seconds in 0..86400"},
	    {"{\"wrokers\": 1}",
	     "unknown key \"wrokers\" (expected workers, or start and drain, and next_in)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(scaler_hook_parse(bad[i][0], &in, &d, err, sizeof err), -EINVAL);
		assert_string_equal(err, bad[i][1]);
		assert_int_equal(d.start, 0);
		assert_int_equal(d.n_drain, 0);
	}
	/* the limits: a hook cannot drain a worker that is not ours, nor start past the max */
	add_worker(&in, "theirs", 4, 0, 9, false);
	assert_int_equal(
	    scaler_hook_parse("{\"start\": 50, \"drain\": [\"theirs\"]}", &in, &d, err, sizeof err),
	    0);
	scaler_apply_limits(&in, &d);
	assert_int_equal(d.start, 5);
	assert_int_equal(d.n_drain, 0);
	scaler_decision_clear(&d);
	scaler_input_clear(&in);
}

static void test_modelled_load(void **state)
{
	(void)state;
	char path[] = "/tmp/test_scaler_model.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "# category fraction\nblast 0.9\n\nio 0.05 # dd\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct scaler_model *m = scaler_model_load(path, err, sizeof err);
	assert_non_null(m);
	struct scaler_input in;
	base(&in);
	add_cat(&in, "blast", 0, 4, 2, 1, 10);
	add_cat(&in, "io", 0, 4, 1, 1, 10);
	add_cat(&in, "other", 0, 4, 1, 1, 10);
	add_worker(&in, "w", 0, 8, 0, true);
	add_worker(&in, "v", 0, 4, 0, true);
	scaler_model_apply(m, &in);
	assert_true(in.cats[0].cores_avg == 1.8);
	assert_true(in.cats[1].cores_avg == 0.05);
	assert_true(in.cats[2].cores_avg == -1);
	/* (4 x 1.8 + 4 x 0.05) / 8 cores */
	double load = scaler_cpu_load(&in);
	assert_true(load > 0.9249 && load < 0.9251);
	scaler_model_delete(m);
	scaler_input_clear(&in);
	FILE *f = fopen(path, "w");
	fputs("blast 0.9\nio lots\n", f);
	fclose(f);
	assert_null(scaler_model_load(path, err, sizeof err));
	char want[256];
	snprintf(want, sizeof want, "--modelled-load %s, line 2: expected CATEGORY FRACTION (0..1)",
	         path);
	assert_string_equal(err, want);
	unlink(path);
	assert_null(scaler_model_load(path, err, sizeof err));
	assert_non_null(strstr(err, "No such file or directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_queue),
	    cmocka_unit_test(test_hpa),
	    cmocka_unit_test(test_hta_warm_up),
	    cmocka_unit_test(test_hta_scale_up_and_fit),
	    cmocka_unit_test(test_hta_waves_within_latency),
	    cmocka_unit_test(test_hta_unmeasured_run_time),
	    cmocka_unit_test(test_hta_drain_and_gap),
	    cmocka_unit_test(test_status_input),
	    cmocka_unit_test(test_hook_answers),
	    cmocka_unit_test(test_modelled_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
