/* test_worker_task.c: unit tests of the worker's task runner: real tasks run under the resource
 * monitor in temporary sandboxes (exit statuses, outside signals, the environment, stdout capture
 * and truncation, memory and wall-time limits, outputs by their `when`, symbolic links, cancel
 * of a whole tree, sandbox failures), the resource ledger (fit, GPUs, disk reserve, early release)
 * and the FIFO of queued tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "worker_task.h"
#include "worker_queue.h"
#include "htc_error.h"
#include "path.h"
#include "stringtools.h"
#include "timeutil.h"
#include "ts_clock.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

struct fx {
	uv_loop_t loop;
	char *root;
	int root_fd;
	char *helpers; /* resource_monitor/test in the build directory */
	struct worker_task *t;
	int done_calls;
	int ended_calls, done_calls_at_ended;
	bool with_ended; /* start() passes on_ended */
	int64_t done_at;
	bool sandbox_gone_at_done;
	char *sandbox_path;
	const struct htc_clock *clock; /* the tasks' wall-time clock; NULL: the real one */
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->root = ts_tmpdir_create("test_worker_task");
	f->root_fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->root_fd >= 0);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = 0;
	char *dir = path_dirname(exe); /* B/work_queue/test */
	f->helpers = xasprintf("%s/../../resource_monitor/test", dir);
	free(dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->t)
		worker_task_delete(f->t, false);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	close(f->root_fd);
	ts_tmpdir_remove(f->root);
	free(f->helpers);
	free(f->sandbox_path);
	free(f);
	return 0;
}

static void on_done(struct worker_task *t, void *arg)
{
	struct fx *f = arg;
	assert_ptr_equal(t, f->t);
	f->done_calls++;
	f->done_at = time_monotonic_us();
	f->sandbox_gone_at_done = f->sandbox_path && !path_exists(f->sandbox_path);
}

static void on_ended(struct worker_task *t, void *arg)
{
	struct fx *f = arg;
	assert_ptr_equal(t, f->t);
	f->ended_calls++;
	f->done_calls_at_ended = f->done_calls;
}

/* A task message: id ID, COMMAND, resources {cores 1, memory 0, disk 0, gpus 0}, and the keys
 * of EXTRA (taken) on top. */
static struct wq_task_msg *make_msg(int64_t id, const char *command, json_t *extra)
{
	json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:{s:i,s:i,s:i,s:i}}", "m", "task", "id",
	                      (json_int_t)id, "try", (json_int_t)1, "command", command, "resources",
	                      "cores", 1, "memory", 0, "disk", 0, "gpus", 0);
	assert_non_null(o);
	if (extra) {
		assert_int_equal(json_object_update(o, extra), 0);
		json_decref(extra);
	}
	struct wq_task_msg *m = NULL;
	char *why = NULL;
	int rc = wq_msg_task_parse(o, 0, &m, &why);
	if (rc != 0)
		fail_msg("task message refused: %s", why);
	json_decref(o);
	return m;
}

static bool done_called(void *arg)
{
	return ((struct fx *)arg)->done_calls > 0;
}

/* Runs the loop until the task's DONE came (once). */
static void run_until_done(struct fx *f)
{
	assert_true(ts_run_until(&f->loop, done_called, f, TS_WAIT_MS));
	assert_int_equal(f->done_calls, 1);
}

/* Starts MSG in a new sandbox with ALLOC (NULL: the message's resources). */
static void start(struct fx *f, struct wq_task_msg *m, const struct worker_alloc *alloc,
                  const char *const *base_env)
{
	struct worker_sandbox *sb =
	    worker_sandbox_create(f->root_fd, f->root, (uint64_t)m->id, 1, BENEATH_RESOLVE_AUTO);
	assert_non_null(sb);
	free(f->sandbox_path);
	f->sandbox_path = xstrdup(worker_sandbox_path(sb));
	struct worker_alloc a = {0};
	if (alloc)
		a = *alloc;
	else
		a.res = m->resources;
	struct worker_task_params p = {
	    .loop = &f->loop, .base_env = base_env, .interval_s = 0.1, .clock = f->clock};
	if (f->with_ended)
		p.ended = on_ended;
	f->t = worker_task_start(&p, m, sb, &a, on_done, f);
	assert_non_null(f->t);
	assert_int_equal(f->done_calls, 0);
}

/* Runs COMMAND to its end; returns its result. */
static const struct worker_task_result *run(struct fx *f, int64_t id, const char *command,
                                            json_t *extra)
{
	struct wq_task_msg *m = make_msg(id, command, extra);
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_non_null(r);
	return r;
}

/* task_done of the task through the protocol's own parser. */
static struct wq_task_done *done_parsed(struct fx *f, const int64_t *xfers, int64_t stdout_xfer)
{
	json_t *j = worker_task_done_json(f->t, xfers, stdout_xfer);
	assert_non_null(j);
	struct wq_task_done *d = NULL;
	char *why = NULL;
	if (wq_msg_task_done_parse(j, &d, &why) != 0)
		fail_msg("task_done refused: %s", why);
	json_decref(j);
	return d;
}

/* TEXT has the line LINE. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == 0))
			return true;
	return false;
}

static void test_exit_zero(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r =
	    run(f, 1, "echo hello; echo err >&2; pwd > where; exit 0", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 0);
	assert_true(r->has_summary);
	assert_int_equal(r->summary.exit_type, RM_EXIT_NORMAL);
	assert_int_equal(r->stdout_size, 10);
	assert_false(r->stdout_truncated);
	char *buf;
	size_t len;
	assert_int_equal(worker_task_stdout_read(f->t, &buf, &len), 0);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "hello\nerr\n");
	free(buf);
	/* the capture is outside work/, the cwd is work/ */
	char *expect = path_join(f->sandbox_path, "stdout");
	assert_string_equal(worker_task_stdout_path(f->t), expect);
	free(expect);
	char *where_path = path_join(worker_sandbox_work_path(worker_task_sandbox(f->t)), "where");
	char *where = ts_read_file(where_path, NULL);
	assert_non_null(where);
	char *want = xasprintf("%s\n", worker_sandbox_work_path(worker_task_sandbox(f->t)));
	assert_string_equal(where, want);
	free(where);
	free(want);
	free(where_path);
	assert_true(r->t_started >= r->t_received && r->t_ended >= r->t_started);

	struct wq_task_done *d = done_parsed(f, NULL, 7);
	assert_int_equal(d->id, 1);
	assert_int_equal(d->try_, 1);
	assert_int_equal(d->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(d->exit_status, 0);
	assert_int_equal(d->stdout_size, 10);
	assert_int_equal(d->stdout_xfer, 7);
	assert_false(d->stdout_truncated);
	assert_non_null(d->summary);
	assert_string_equal(json_string_value(json_object_get(d->summary, "exit_type")), "normal");
	assert_true(d->t_started > 0 && d->t_ended >= d->t_started && d->t_reported >= d->t_ended);
	wq_task_done_free(d);

	json_t *running = worker_task_running_json(f->t);
	assert_string_equal(json_string_value(json_object_get(running, "m")), "task_running");
	assert_int_equal(json_integer_value(json_object_get(running, "id")), 1);
	assert_int_equal(json_array_size(json_object_get(running, "gpus")), 0);
	json_decref(running);

	/* delete removes the sandbox */
	worker_task_delete(f->t, false);
	f->t = NULL;
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_false(path_exists(f->sandbox_path));
}

static void test_exit_three(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r = run(f, 2, "exit 3", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 3);
	struct wq_task_done *d = done_parsed(f, NULL, 0);
	assert_int_equal(d->exit_status, 3);
	assert_int_equal(d->stdout_size, 0);
	assert_int_equal(d->stdout_xfer, 0);
	wq_task_done_free(d);
}

/* Ends the fixture's task so that another can run in the same test. */
static void next_task(struct fx *f)
{
	worker_task_delete(f->t, false);
	f->t = NULL;
	f->done_calls = 0;
}

/* Plain-word commands are exec'd without the shell: same results, including a program that
 * is not found (the shell's 127) and arguments passed as they are. */
static void test_plain_words(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r = run(f, 3, "no-such-program-htc-test arg", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 127);
	next_task(f);
	r = run(f, 4, "false", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 1);
	next_task(f);
	r = run(f, 5, "printf %s%s a b", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 0);
	struct wq_task_done *d = done_parsed(f, NULL, 0);
	assert_int_equal(d->stdout_size, 2); /* "ab" */
	wq_task_done_free(d);
}

static void test_outside_signal(void **state)
{
	struct fx *f = *state;
	struct wq_task_msg *m = make_msg(3, "exec sleep 20", NULL);
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	assert_true(worker_task_pid(f->t) > 0);
	assert_int_equal(kill(worker_task_pid(f->t), SIGTERM), 0);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_non_null(r);
	assert_int_equal(r->outcome, WQ_OUTCOME_SIGNALED);
	assert_int_equal(r->signal, SIGTERM);
	struct wq_task_done *d = done_parsed(f, NULL, 0);
	assert_int_equal(d->outcome, WQ_OUTCOME_SIGNALED);
	assert_int_equal(d->signal, SIGTERM);
	wq_task_done_free(d);
}

static void test_env_builder(void **state)
{
	(void)state;
	const char *base[] = {"PATH=/bin", "CORES=99", "KEEP=a=b", "GONE=1", "noequals", NULL};
	struct worker_alloc a = {.res = {.cores = 1.5, .memory = 300, .disk = 40, .gpus = 2},
	                         .gpu_ids = {1, 3},
	                         .ngpus = 2};
	struct wq_env_var env[] = {{"GONE", NULL}, {"DISK", "9"}, {"NEW", "x"}, {"NOPE", NULL}};
	char **e = worker_task_env(base, &a, "/sb/tmp", env, 4);
	char *all = str_join(e, ";");
	/* no duplicates, the allocation replaces the base, the task's values win */
	assert_string_equal(all, "PATH=/bin;CORES=1.5;KEEP=a=b;MEMORY=300;DISK=9;GPUS=2;"
	                         "OMP_NUM_THREADS=2;CUDA_VISIBLE_DEVICES=1,3;TMPDIR=/sb/tmp;NEW=x");
	free(all);
	worker_task_env_free(e);

	struct worker_alloc b = {.res = {.cores = 2, .memory = 1, .disk = 1, .gpus = 0}};
	e = worker_task_env(base, &b, NULL, NULL, 0);
	all = str_join(e, ";");
	assert_non_null(strstr(all, "CORES=2;"));
	assert_non_null(strstr(all, "OMP_NUM_THREADS=2;"));
	assert_non_null(strstr(all, "CUDA_VISIBLE_DEVICES="));
	assert_null(strstr(all, "TMPDIR"));
	free(all);
	worker_task_env_free(e);
}

static void test_env_seen_by_task(void **state)
{
	struct fx *f = *state;
	struct worker_ledger *l = worker_ledger_create(4, 4000, 4000, 2, f->root);
	worker_ledger_set_fs(l, 100000, 90000);
	struct worker_alloc a;
	struct wq_resources want = {.cores = 2, .memory = 500, .disk = 100, .gpus = 1};
	assert_int_equal(worker_ledger_commit(l, &want, &a, NULL), WORKER_FIT_OK);

	struct wq_task_msg *m =
	    make_msg(4,
	             "env > ../env.txt; echo data > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"; "
	             "stat -c %a \"$TMPDIR\"",
	             json_pack("{s:{s:s,s:s}}", "env", "MEMORY", "7", "TASKVAR", "tv"));
	/* a NULL value (not expressible on the wire) removes a variable of the worker's */
	struct wq_env_var *saved = m->env;
	size_t nsaved = m->nenv;
	struct wq_env_var env[3] = {saved[0], saved[1], {"DROPME", NULL}};
	m->env = env;
	m->nenv = 3;
	const char *base[] = {"PATH=/usr/bin:/bin", "KEEP=1", "DROPME=x", "CORES=99", NULL};
	start(f, m, &a, base);
	m->env = saved;
	m->nenv = nsaved;
	wq_task_msg_free(m);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 0);

	char *envpath = path_join(f->sandbox_path, "env.txt");
	char *text = ts_read_file(envpath, NULL);
	assert_non_null(text);
	free(envpath);
	assert_true(has_line(text, "CORES=2"));
	assert_non_null(strstr(text, "MEMORY=7\n"));
	assert_null(strstr(text, "MEMORY=500"));
	assert_non_null(strstr(text, "DISK=100\n"));
	assert_non_null(strstr(text, "GPUS=1\n"));
	assert_non_null(strstr(text, "OMP_NUM_THREADS=2\n"));
	assert_non_null(strstr(text, "CUDA_VISIBLE_DEVICES=0\n"));
	assert_non_null(strstr(text, "TASKVAR=tv\n"));
	assert_non_null(strstr(text, "KEEP=1\n"));
	assert_null(strstr(text, "DROPME"));
	assert_null(strstr(text, "CORES=99"));
	char *tmp = xasprintf("TMPDIR=%s\n", worker_sandbox_tmp_path(worker_task_sandbox(f->t)));
	assert_non_null(strstr(text, tmp));
	free(tmp);
	free(text);
	/* TMPDIR is private (0700) and writable */
	char *buf;
	size_t len;
	assert_int_equal(worker_task_stdout_read(f->t, &buf, &len), 0);
	assert_string_equal(buf, "data\n700\n");
	free(buf);

	json_t *running = worker_task_running_json(f->t);
	json_t *gpus = json_object_get(running, "gpus");
	assert_int_equal(json_array_size(gpus), 1);
	assert_int_equal(json_integer_value(json_array_get(gpus, 0)), 0);
	json_decref(running);
	worker_ledger_release(l, &a);
	worker_ledger_delete(l);
}

static void test_stdout_truncated(void **state)
{
	struct fx *f = *state;
	/* 500 lines of 10 bytes: 0000000000 ... 0000000499 */
	const struct worker_task_result *r =
	    run(f, 5, "i=0; while [ $i -lt 500 ]; do printf '%09d\\n' $i; i=$((i+1)); done",
	        json_pack("{s:i}", "stdout_max", 1000));
	assert_int_equal(r->stdout_size, 5000);
	assert_true(r->stdout_truncated);
	assert_int_equal(r->stdout_tail, 500);
	assert_int_equal(r->stdout_head, 500);
	assert_int_equal(r->stdout_omitted, 4000);
	char *buf;
	size_t len;
	assert_int_equal(worker_task_stdout_read(f->t, &buf, &len), 0);
	assert_int_equal(len, 1000);
	assert_memory_equal(buf, "000000000\n000000001\n", 20);
	assert_memory_equal(buf + 490, "000000049\n000000450\n", 20);
	assert_memory_equal(buf + 990, "000000499\n", 10);
	free(buf);
	struct wq_task_done *d = done_parsed(f, NULL, 3);
	assert_true(d->stdout_truncated);
	assert_int_equal(d->stdout_size, 5000);
	assert_int_equal(d->stdout_head, 500);
	wq_task_done_free(d);
}

static void test_stdout_small_max(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r =
	    run(f, 6, "printf abcdefghij", json_pack("{s:i}", "stdout_max", 5));
	assert_int_equal(r->stdout_size, 10);
	assert_true(r->stdout_truncated);
	assert_int_equal(r->stdout_head, 3);
	assert_int_equal(r->stdout_tail, 2);
	char *buf;
	size_t len;
	assert_int_equal(worker_task_stdout_read(f->t, &buf, &len), 0);
	assert_string_equal(buf, "abcij");
	free(buf);
}

static void test_memory_limit(void **state)
{
	struct fx *f = *state;
	char *cmd = xasprintf("exec %s/helper_alloc 300 5", f->helpers);
	struct wq_task_msg *m = make_msg(7, cmd,
	                                 json_pack("{s:{s:i,s:i,s:i,s:i}}", "resources", "cores", 1,
	                                           "memory", 50, "disk", 0, "gpus", 0));
	free(cmd);
	int64_t t0 = time_monotonic_us();
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	run_until_done(f);
	double took = (double)(f->done_at - t0) / 1e6;
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXHAUSTED);
	assert_int_equal(r->signal, SIGKILL);
	assert_int_equal(r->nexhausted, 1);
	assert_string_equal(r->exhausted[0], "memory");
	print_message("memory limit 50 MB: ended after %.3f s\n", took);
	assert_true(took < 1.0);
	struct wq_task_done *d = done_parsed(f, NULL, 0);
	assert_int_equal(d->outcome, WQ_OUTCOME_EXHAUSTED);
	assert_int_equal(d->signal, 9);
	assert_int_equal(d->nexhausted, 1);
	assert_string_equal(d->exhausted[0], "memory");
	assert_non_null(json_object_get(d->summary, "limits_exceeded"));
	wq_task_done_free(d);
}

/* The wall time is measured on the clock given to the task: 100 s pass on a test clock, and the
 * monitor's next sample ends the task (its real-time timer would wait for 100 s). The timer
 * itself is tested with real time in test_rmonitor. */
static void test_wall_time(void **state)
{
	struct fx *f = *state;
	struct ts_clock clk;
	ts_clock_init(&clk, 1000000);
	f->clock = &clk.clock;
	struct wq_task_msg *m = make_msg(8, "exec sleep 300", json_pack("{s:i}", "wall_time", 100));
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	ts_clock_advance(&clk, 100 * 1000000 + 1000);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_non_null(r);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXHAUSTED);
	assert_int_equal(r->nexhausted, 1);
	assert_string_equal(r->exhausted[0], "wall_time");
	f->clock = NULL;
}

static json_t *outputs_json(void)
{
	return json_pack("{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s,s:b}]}",
	                 "outputs", "name", "ok.txt", "when", "always", "name", "link.txt", "when",
	                 "always", "name", "nothere", "when", "always", "name", "s.txt", "when",
	                 "success", "name", "f.txt", "when", "failure", "name", "d", "when",
	                 "always", "dir", 1);
}

static void test_outputs_success(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r =
	    run(f, 9,
	        "echo a > ok.txt; ln -s /etc/passwd link.txt; echo s > s.txt; echo f > f.txt; "
	        "mkdir d; echo x > d/x",
	        outputs_json());
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->noutputs, 6);
	assert_int_equal(r->outputs[0].kind, WQ_DONE_XFER);
	assert_true(r->outputs[0].fd >= 0);
	char buf[8] = {0};
	assert_int_equal(pread(r->outputs[0].fd, buf, sizeof buf - 1, 0), 2);
	assert_string_equal(buf, "a\n");
	assert_int_equal(r->outputs[1].kind, WQ_DONE_MISSING);
	assert_string_equal(r->outputs[1].missing, "is a symbolic link: link.txt");
	assert_int_equal(r->outputs[1].fd, -1);
	assert_int_equal(r->outputs[2].kind, WQ_DONE_MISSING);
	assert_string_equal(r->outputs[2].missing, "does not exist: nothere");
	assert_int_equal(r->outputs[3].kind, WQ_DONE_XFER);
	assert_int_equal(r->outputs[4].kind, WQ_DONE_SKIPPED);
	assert_int_equal(r->outputs[5].kind, WQ_DONE_DIR);

	int64_t xfers[6] = {11, 0, 0, 0, 0, 12};
	struct wq_task_done *d = done_parsed(f, xfers, 0);
	assert_int_equal(d->noutputs, 6);
	assert_int_equal(d->outputs[0].kind, WQ_DONE_XFER);
	assert_int_equal(d->outputs[0].xfer, 11);
	assert_int_equal(d->outputs[1].kind, WQ_DONE_MISSING);
	assert_string_equal(d->outputs[1].text, "is a symbolic link: link.txt");
	assert_int_equal(d->outputs[2].kind, WQ_DONE_MISSING);
	/* present but not sent (id 0): missing */
	assert_int_equal(d->outputs[3].kind, WQ_DONE_MISSING);
	assert_string_equal(d->outputs[3].text, "could not be sent: s.txt");
	assert_int_equal(d->outputs[4].kind, WQ_DONE_SKIPPED);
	assert_int_equal(d->outputs[5].kind, WQ_DONE_DIR);
	assert_int_equal(d->outputs[5].xfer, 12);
	for (size_t i = 0; i < d->noutputs; i++)
		assert_int_equal(d->outputs[i].index, (int64_t)i);
	wq_task_done_free(d);
}

static void test_outputs_failure(void **state)
{
	struct fx *f = *state;
	const struct worker_task_result *r =
	    run(f, 10, "echo s > s.txt; echo f > f.txt; mkdir d; ln -s /etc d/e; exit 1",
	        outputs_json());
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(r->exit_status, 1);
	assert_int_equal(r->outputs[0].kind, WQ_DONE_MISSING);
	assert_string_equal(r->outputs[0].missing, "does not exist: ok.txt");
	assert_int_equal(r->outputs[3].kind, WQ_DONE_SKIPPED); /* success only */
	assert_int_equal(r->outputs[4].kind, WQ_DONE_XFER);    /* failure only */
	assert_int_equal(r->outputs[5].kind, WQ_DONE_MISSING); /* a link inside */
	assert_string_equal(r->outputs[5].missing, "is a symbolic link: d/e");
}

static bool process_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* A pid that a task writes into a file of its sandbox. */
struct pid_file {
	char *path;
	pid_t pid;
};

static bool pid_written(void *arg)
{
	struct pid_file *pf = arg;
	char *t = ts_read_file(pf->path, NULL);
	pf->pid = t ? (pid_t)atoi(t) : 0;
	free(t);
	return pf->pid > 0;
}

static void test_cancel_tree(void **state)
{
	struct fx *f = *state;
	struct wq_task_msg *m =
	    make_msg(11, "sleep 30 & echo $! > bg.pid; sh -c 'sleep 30' & sleep 30", NULL);
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	struct pid_file pf = {
	    .path = path_join(worker_sandbox_work_path(worker_task_sandbox(f->t)), "bg.pid")};
	assert_true(ts_run_until(&f->loop, pid_written, &pf, TS_WAIT_MS));
	free(pf.path);
	pid_t bg = pf.pid;
	assert_true(process_alive(bg));
	pid_t sh = worker_task_pid(f->t);
	assert_int_equal(worker_task_cancel(f->t), 0);
	int64_t t0 = time_monotonic_us();
	run_until_done(f);
	print_message("cancel: tree gone after %.3f s\n", (double)(f->done_at - t0) / 1e6);
	assert_true(worker_task_cancelled(f->t));
	assert_null(worker_task_result(f->t));
	assert_null(worker_task_done_json(f->t, NULL, 0));
	assert_true(f->sandbox_gone_at_done);
	assert_false(process_alive(bg));
	assert_false(process_alive(sh));
	/* a second cancel after the end does nothing */
	assert_int_equal(worker_task_cancel(f->t), -ESRCH);
}

static void test_delete_running(void **state)
{
	struct fx *f = *state;
	struct wq_task_msg *m = make_msg(12, "exec sleep 30", NULL);
	start(f, m, NULL, NULL);
	wq_task_msg_free(m);
	pid_t pid = worker_task_pid(f->t);
	assert_true(process_alive(pid));
	worker_task_delete(f->t, false);
	f->t = NULL;
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(f->done_calls, 0);
	assert_false(process_alive(pid));
	assert_false(path_exists(f->sandbox_path));
}

static void test_sandbox_error(void **state)
{
	struct fx *f = *state;
	struct wq_task_msg *m = make_msg(13, "true", NULL);
	struct worker_alloc a = {.res = m->resources};
	struct worker_task_params p = {.loop = &f->loop, .sandbox_err = -ENOSPC};
	f->t = worker_task_start(&p, m, NULL, &a, on_done, f);
	wq_task_msg_free(m);
	assert_non_null(f->t);
	assert_int_equal(f->done_calls, 0); /* never from inside start */
	assert_int_equal(worker_task_pid(f->t), -1);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_int_equal(r->outcome, WQ_OUTCOME_SANDBOX_ERROR);
	assert_non_null(strstr(r->text, strerror(ENOSPC)));
	assert_int_equal(worker_task_cancel(f->t), -ESRCH);
	struct wq_task_done *d = done_parsed(f, NULL, 0);
	assert_int_equal(d->outcome, WQ_OUTCOME_SANDBOX_ERROR);
	assert_non_null(strstr(d->text, strerror(ENOSPC)));
	assert_null(d->summary);
	wq_task_done_free(d);
}

static void test_sandbox_gone(void **state)
{
	struct fx *f = *state;
	/* the sandbox disappeared before the start: the capture file cannot be made */
	struct wq_task_msg *m = make_msg(14, "true", NULL);
	struct worker_sandbox *sb =
	    worker_sandbox_create(f->root_fd, f->root, 14, 1, BENEATH_RESOLVE_AUTO);
	assert_non_null(sb);
	assert_int_equal(worker_sandbox_remove(sb), 0);
	struct worker_alloc a = {.res = m->resources};
	struct worker_task_params p = {.loop = &f->loop};
	f->t = worker_task_start(&p, m, sb, &a, on_done, f);
	wq_task_msg_free(m);
	run_until_done(f);
	const struct worker_task_result *r = worker_task_result(f->t);
	assert_int_equal(r->outcome, WQ_OUTCOME_SANDBOX_ERROR);
	assert_non_null(strstr(r->text, "stdout"));
}

/* A running task grown or shrunk (--memory-grow): its memory in the ledger follows, a growth
 * only into memory no other task holds, and its release gives back the grown size. */
static void test_ledger_resize_memory(void **state)
{
	struct fx *f = *state;
	struct worker_ledger *l = worker_ledger_create(2, 1000, 5000, 0, f->root);
	worker_ledger_set_fs(l, 100000, 50000);
	struct worker_alloc a, b;
	struct wq_resources r = {.cores = 1, .memory = 400, .disk = 10};
	assert_int_equal(worker_ledger_commit(l, &r, &a, NULL), WORKER_FIT_OK);
	assert_int_equal(worker_ledger_commit(l, &r, &b, NULL), WORKER_FIT_OK);
	assert_int_equal(worker_ledger_memory_free(l), 200);
	assert_int_equal(worker_ledger_resize_memory(l, &a, 656), -ENOSPC);
	assert_int_equal(worker_ledger_resize_memory(l, &a, 600), 0);
	assert_int_equal(a.res.memory, 600);
	assert_int_equal(worker_ledger_memory_free(l), 0);
	struct wq_resources one = {.cores = 0, .memory = 1};
	assert_int_equal(worker_ledger_check(l, &one, NULL), WORKER_FIT_OVERCOMMIT);
	assert_int_equal(worker_ledger_resize_memory(l, &a, 472), 0); /* a shrink */
	assert_int_equal(worker_ledger_memory_free(l), 128);
	worker_ledger_release(l, &a);
	assert_int_equal(worker_ledger_memory_free(l), 600);
	assert_int_equal(worker_ledger_resize_memory(l, &a, 500), -EINVAL); /* not held */
	worker_ledger_release(l, &b);
	assert_true(worker_ledger_idle(l));
	worker_ledger_delete(l);
}

static void test_ledger_fit_and_gpus(void **state)
{
	struct fx *f = *state;
	struct worker_ledger *l = worker_ledger_create(4, 1000, 5000, 3, f->root);
	worker_ledger_set_fs(l, 100000, 50000); /* reserve 1000 MB */
	assert_int_equal(worker_ledger_disk_free(l), 5000);
	struct worker_alloc a, b, c;
	char *text = NULL;
	struct wq_resources r1 = {.cores = 2, .memory = 500, .disk = 1000, .gpus = 2};
	assert_int_equal(worker_ledger_commit(l, &r1, &a, &text), WORKER_FIT_OK);
	assert_null(text);
	assert_int_equal(a.ngpus, 2);
	assert_int_equal(a.gpu_ids[0], 0);
	assert_int_equal(a.gpu_ids[1], 1);
	struct wq_resources r2 = {.cores = 1.5, .memory = 400, .disk = 1000, .gpus = 1};
	assert_int_equal(worker_ledger_commit(l, &r2, &b, NULL), WORKER_FIT_OK);
	assert_int_equal(b.ngpus, 1);
	assert_int_equal(b.gpu_ids[0], 2);
	assert_int_equal(worker_ledger_disk_free(l), 3000);

	struct wq_resources r3 = {.cores = 0.75, .memory = 10, .disk = 1, .gpus = 0};
	assert_int_equal(worker_ledger_check(l, &r3, &text), WORKER_FIT_OVERCOMMIT);
	assert_string_equal(text, "needs 0.75 cores, 0.5 of 4 free");
	free(text);
	r3.cores = 0.5;
	assert_int_equal(worker_ledger_check(l, &r3, NULL), WORKER_FIT_OK);
	r3.memory = 101;
	assert_int_equal(worker_ledger_check(l, &r3, &text), WORKER_FIT_OVERCOMMIT);
	assert_non_null(strstr(text, "memory"));
	free(text);
	r3.memory = 100;
	r3.gpus = 1;
	assert_int_equal(worker_ledger_commit(l, &r3, &c, &text), WORKER_FIT_OVERCOMMIT);
	assert_non_null(strstr(text, "gpus"));
	free(text);
	r3.gpus = 0;
	r3.disk = 3001;
	assert_int_equal(worker_ledger_check(l, &r3, &text), WORKER_FIT_DISK_FULL);
	assert_string_equal(text, "needs 3001 MB of disk, 3000 MB free");
	free(text);

	/* releasing gives the GPU indices back; the lowest free ones are assigned next */
	worker_ledger_release(l, &a);
	worker_ledger_release(l, &a); /* twice: ignored */
	struct wq_resources used;
	worker_ledger_used(l, &used);
	assert_true(used.cores > 1.49 && used.cores < 1.51);
	assert_int_equal(used.memory, 400);
	assert_int_equal(used.gpus, 1);
	struct wq_resources r4 = {.cores = 1, .memory = 100, .disk = 100, .gpus = 2};
	assert_int_equal(worker_ledger_commit(l, &r4, &c, NULL), WORKER_FIT_OK);
	assert_int_equal(c.gpu_ids[0], 0);
	assert_int_equal(c.gpu_ids[1], 1);
	worker_ledger_release(l, &b);
	worker_ledger_release(l, &c);
	worker_ledger_used(l, &used);
	assert_true(used.cores == 0 && used.memory == 0 && used.disk == 0 && used.gpus == 0);
	worker_ledger_delete(l);
}

static void test_ledger_disk(void **state)
{
	struct fx *f = *state;
	assert_int_equal(worker_disk_reserve_mb(0), 100);
	assert_int_equal(worker_disk_reserve_mb(5000), 100);
	assert_int_equal(worker_disk_reserve_mb(10000), 100);
	assert_int_equal(worker_disk_reserve_mb(10001), 101);
	assert_int_equal(worker_disk_reserve_mb(100000), 1000);

	struct worker_ledger *l = worker_ledger_create(2, 1000, 100000, 0, f->root);
	/* the file system's figures are read again only once they are WORKER_DISK_FRESH_US old,
	 * on the ledger's clock */
	struct ts_clock clk;
	ts_clock_init(&clk, 1000000);
	worker_ledger_set_clock(l, &clk.clock);
	worker_ledger_set_fs(l, 100000, 50);
	assert_int_equal(worker_ledger_refresh_disk(l), 0);
	assert_true(worker_ledger_disk_full(l)); /* just read at creation: not read again */
	ts_clock_advance(&clk, WORKER_DISK_FRESH_US - 1);
	assert_int_equal(worker_ledger_refresh_disk(l), 0);
	assert_true(worker_ledger_disk_full(l)); /* still fresh */
	ts_clock_advance(&clk, 1);
	assert_int_equal(worker_ledger_refresh_disk(l), 0);
	struct statvfs vfs;
	assert_int_equal(statvfs(f->root, &vfs), 0);
	int64_t size_mb = (int64_t)((double)vfs.f_blocks * (double)vfs.f_frsize / 1048576.0);
	int64_t free_mb = (int64_t)((double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0);
	/* read again now: the real figures replaced the 50 MB set above */
	assert_int_equal(worker_ledger_disk_full(l), free_mb < worker_disk_reserve_mb(size_mb));
	assert_true(free_mb >= worker_disk_reserve_mb(size_mb)); /* else it could not tell */
	worker_ledger_set_cache(l, 200);
	worker_ledger_set_fs(l, 100000, 1500); /* reserve 1000: 500 usable */
	assert_false(worker_ledger_disk_full(l));
	assert_int_equal(worker_ledger_disk_free(l), 500);
	struct wq_resources r = {.cores = 1, .memory = 10, .disk = 500, .gpus = 0};
	assert_int_equal(worker_ledger_check(l, &r, NULL), WORKER_FIT_OK);
	r.disk = 501;
	assert_int_equal(worker_ledger_check(l, &r, NULL), WORKER_FIT_DISK_FULL);
	/* at the reserve exactly: not full; one MB below: full, and everything is refused */
	worker_ledger_set_fs(l, 100000, 1000);
	assert_false(worker_ledger_disk_full(l));
	assert_int_equal(worker_ledger_disk_free(l), 0);
	worker_ledger_set_fs(l, 100000, 999);
	assert_true(worker_ledger_disk_full(l));
	r.disk = 0;
	char *text = NULL;
	assert_int_equal(worker_ledger_check(l, &r, &text), WORKER_FIT_DISK_FULL);
	assert_non_null(strstr(text, "full"));
	free(text);

	json_t *cap = worker_ledger_capacity_json(l);
	struct wq_capacity *c = NULL;
	char *why = NULL;
	if (wq_msg_capacity_parse(cap, &c, &why) != 0)
		fail_msg("capacity refused: %s", why);
	assert_string_equal(json_string_value(json_object_get(cap, "m")), "capacity");
	assert_true(c->cores.total == 2 && c->cores.declared);
	assert_true(c->disk.total == 100000 && c->disk.declared);
	assert_int_equal(c->disk_free, 0);
	assert_int_equal(c->cache, 200);
	assert_true(c->disk_full);
	wq_capacity_free(c);
	json_decref(cap);

	/* the disk total minus cache and running tasks bounds disk_free too */
	worker_ledger_set_fs(l, 1000000, 900000);
	worker_ledger_set_cache(l, 99000);
	assert_int_equal(worker_ledger_disk_free(l), 1000);
	worker_ledger_delete(l);

	/* measured totals */
	l = worker_ledger_create(-1, -1, -1, -1, f->root);
	struct worker_total cores, mem, disk, gpus;
	worker_ledger_totals(l, &cores, &mem, &disk, &gpus);
	assert_false(cores.declared || mem.declared || disk.declared || gpus.declared);
	assert_true(cores.total >= 1);
	assert_true(mem.total > 0);
	assert_true(disk.total >= 0);
	cap = worker_ledger_capacity_json(l);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cap, "memory"), "source")),
	    "measured");
	json_decref(cap);
	worker_ledger_delete(l);
}

/* The FIFO of queued tasks (protocol 5.6) and the release of cores, memory and gpus when the
 * tree ends, before the disk. */
static struct worker_alloc qalloc[8];

static struct worker_alloc *q_alloc(void *item, void *arg)
{
	(void)arg;
	return &qalloc[(intptr_t)item];
}

static void q_committed(void *item, void *arg)
{
	int *order = arg;
	order[++order[0]] = (int)(intptr_t)item;
}

static void test_queue_fifo(void **state)
{
	struct fx *f = *state;
	memset(qalloc, 0, sizeof qalloc);
	assert_int_equal(worker_queue_default_max(1), 2);
	assert_int_equal(worker_queue_default_max(0.5), 1);
	assert_int_equal(worker_queue_default_max(1000), WQ_QUEUE_MAX);
	struct worker_ledger *l = worker_ledger_create(2, 1000, 1000, 0, f->root);
	worker_ledger_set_fs(l, 100000, 90000);
	struct wq_resources one = {.cores = 1, .memory = 10, .disk = 10, .gpus = 0};
	struct wq_resources two = {.cores = 2, .memory = 10, .disk = 10, .gpus = 0};
	/* two tasks hold both cores; then 2 cores, 1 core, 1 core are queued */
	assert_int_equal(worker_ledger_commit(l, &one, &qalloc[1], NULL), WORKER_FIT_OK);
	assert_int_equal(worker_ledger_commit(l, &one, &qalloc[2], NULL), WORKER_FIT_OK);
	struct worker_queue *q = worker_queue_create(3);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)3, &two), 0);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)4, &one), 0);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)5, &one), 0);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)6, &one), -EBUSY);
	int order[8] = {0};
	assert_int_equal(worker_queue_run(q, l, q_alloc, q_committed, order), 0);
	/* task 1's tree ends: one core frees, its disk stays held; the head needs two: nothing,
	 * and not task 4 either (head-of-line) */
	worker_ledger_release_compute(l, &qalloc[1]);
	worker_ledger_release_compute(l, &qalloc[1]); /* once only */
	struct wq_resources used;
	worker_ledger_used(l, &used);
	assert_true(used.cores > 0.99 && used.cores < 1.01);
	assert_int_equal(used.disk, 20);
	assert_int_equal(worker_queue_run(q, l, q_alloc, q_committed, order), 0);
	worker_ledger_release(l, &qalloc[1]);
	worker_ledger_used(l, &used);
	assert_int_equal(used.disk, 10);
	/* task 2 ends too: the head (2 cores) is committed, and only it */
	worker_ledger_release_compute(l, &qalloc[2]);
	assert_int_equal(worker_queue_run(q, l, q_alloc, q_committed, order), 1);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 3);
	assert_int_equal(worker_queue_length(q), 2);
	worker_ledger_release(l, &qalloc[2]);
	worker_ledger_release(l, &qalloc[3]);
	/* both remaining fit, in order */
	assert_int_equal(worker_queue_run(q, l, q_alloc, q_committed, order), 2);
	assert_int_equal(order[2], 4);
	assert_int_equal(order[3], 5);
	assert_null(worker_queue_head(q, NULL));
	worker_ledger_release(l, &qalloc[4]);
	worker_ledger_release(l, &qalloc[5]);
	assert_true(worker_ledger_idle(l));
	/* a head that can never fit while nothing is held is reported stuck; removal works */
	struct wq_resources huge = {.cores = 1, .memory = 10, .disk = 999999, .gpus = 0};
	assert_int_equal(worker_ledger_check_total(l, &huge, NULL), WORKER_FIT_OVERCOMMIT);
	assert_int_equal(worker_ledger_check_total(l, &one, NULL), WORKER_FIT_OK);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)6, &huge), 0);
	assert_int_equal(worker_queue_push(q, (void *)(intptr_t)7, &one), 0);
	const char *code = NULL;
	char *text = NULL;
	assert_int_equal((intptr_t)worker_queue_stuck(q, l, &code, &text), 6);
	assert_string_equal(code, "disk_full");
	assert_non_null(text);
	free(text);
	assert_true(worker_queue_remove(q, (void *)(intptr_t)6));
	assert_false(worker_queue_remove(q, (void *)(intptr_t)6));
	assert_null(worker_queue_stuck(q, l, &code, &text));
	worker_queue_delete(q);
	worker_ledger_delete(l);
}

/* ENDED comes once, before DONE, with few outputs (checked on the loop) and with many (checked
 * in the thread pool). */
static void test_ended_before_done(void **state)
{
	struct fx *f = *state;
	f->with_ended = true;
	const struct worker_task_result *r = run(f, 30, "true", NULL);
	assert_int_equal(r->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(f->ended_calls, 1);
	assert_int_equal(f->done_calls_at_ended, 0);

	worker_task_delete(f->t, false);
	f->t = NULL;
	uv_run(&f->loop, UV_RUN_DEFAULT);
	f->done_calls = f->ended_calls = 0;
	json_t *outs = json_array();
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof name, "o%d", i);
		json_array_append_new(outs, json_pack("{s:s}", "name", name));
	}
	r = run(f, 31, "echo x > o19", json_pack("{s:o}", "outputs", outs));
	assert_int_equal(r->noutputs, 20);
	assert_int_equal(r->outputs[19].kind, WQ_DONE_XFER);
	assert_int_equal(f->ended_calls, 1);
	assert_int_equal(f->done_calls_at_ended, 0);
}

/* Holds the thread pool's only thread (main sets UV_THREADPOOL_SIZE=1) until released. */
static uv_sem_t pool_release;

static void hold_pool(uv_work_t *w)
{
	(void)w;
	uv_sem_wait(&pool_release);
}

static void hold_pool_done(uv_work_t *w, int status)
{
	(void)w;
	(void)status;
}

/* A small sandbox is emptied for reuse by worker_task_delete itself; one with more entries than
 * the loop may remove is finished in the thread pool (held here, so that the check is not a
 * race). Either way it ends up pooled. */
static void test_recycle_small_here(void **state)
{
	struct fx *f = *state;
	run(f, 32, "touch a b c", NULL);
	char *p = xstrdup(f->sandbox_path);
	worker_task_delete(f->t, false);
	f->t = NULL;
	assert_false(path_exists(p)); /* renamed to tasks/.free.N before the loop ran again */
	uv_run(&f->loop, UV_RUN_DEFAULT);
	free(p);

	f->done_calls = 0;
	run(f, 33, "i=0; while [ $i -lt 40 ]; do touch f$i; i=$((i+1)); done", NULL);
	p = xstrdup(f->sandbox_path);
	uv_work_t hold;
	assert_int_equal(uv_sem_init(&pool_release, 0), 0);
	assert_int_equal(uv_queue_work(&f->loop, &hold, hold_pool, hold_pool_done), 0);
	worker_task_delete(f->t, false);
	f->t = NULL;
	bool there = path_exists(p); /* 40 entries: left to the pool */
	uv_sem_post(&pool_release);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	uv_sem_destroy(&pool_release);
	assert_true(there);
	assert_false(path_exists(p));
	free(p);
}

int main(void)
{
	setenv("UV_THREADPOOL_SIZE", "1", 1); /* test_recycle_small_here holds the one thread */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exit_zero, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ledger_resize_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_three, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_plain_words, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_outside_signal, setup, teardown),
	    cmocka_unit_test(test_env_builder),
	    cmocka_unit_test_setup_teardown(test_env_seen_by_task, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stdout_truncated, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stdout_small_max, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wall_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_outputs_success, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_outputs_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ended_before_done, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recycle_small_here, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel_tree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_running, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sandbox_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sandbox_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ledger_fit_and_gpus, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ledger_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_fifo, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
