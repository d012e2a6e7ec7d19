/* test_batch_local.c: unit tests for the generic batch queue and the "local" driver, with real
 * processes on a real libuv loop: exit status, signals, environment, max-jobs, resource
 * admission, wall-time kills, removal and deletion. Each test runs in a fresh temporary
 * directory. */
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
#include <unistd.h>
#include <uv.h>

#include "batch_queue.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "banned.h"

#define MAX_RESULTS 64

struct done {
	int64_t id;
	struct batch_result r; /* error pointer not kept */
	char *tail;            /* copy of r.stderr_tail, or NULL */
	int64_t at_us;         /* monotonic time of the callback */
};

struct ctx {
	uv_loop_t loop;
	int in_submit; /* set around submit: the callback must never see it */
	int reentered;
	int n_done;
	struct done done[MAX_RESULTS];
	char *dir;
	char old_cwd[4096];
};

static struct ctx C;
/* The seccomp_denied text of the last completion that had one (valid only in the callback). */
static char last_seccomp[512];

static void on_complete(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	struct ctx *c = arg;
	if (c->in_submit)
		c->reentered = 1;
	if (c->n_done < MAX_RESULTS) {
		c->done[c->n_done].id = id;
		c->done[c->n_done].r = *r;
		c->done[c->n_done].r.error = NULL;
		c->done[c->n_done].at_us = time_monotonic_us();
		c->done[c->n_done].r.seccomp_denied = NULL;
		c->done[c->n_done].r.stderr_tail = NULL;
		c->done[c->n_done].tail = r->stderr_tail ? strdup(r->stderr_tail) : NULL;
	}
	if (r->seccomp_denied)
		snprintf(last_seccomp, sizeof last_seccomp, "%s", r->seccomp_denied);
	c->n_done++;
}

static const struct done *done_of(int64_t id)
{
	for (int i = 0; i < C.n_done && i < MAX_RESULTS; i++)
		if (C.done[i].id == id)
			return &C.done[i];
	return NULL;
}

static const struct batch_result *result_of(int64_t id)
{
	for (int i = 0; i < C.n_done && i < MAX_RESULTS; i++)
		if (C.done[i].id == id)
			return &C.done[i].r;
	return NULL;
}

static bool n_done_reached(void *arg)
{
	return C.n_done >= *(int *)arg;
}

/* Runs the loop until N completions have arrived. */
static void run_until_done(int n)
{
	assert_true(ts_run_until(&C.loop, n_done_reached, &n, TS_WAIT_MS));
}

static int setup(void **state)
{
	(void)state;
	memset(&C, 0, sizeof C);
	assert_non_null(getcwd(C.old_cwd, sizeof C.old_cwd));
	C.dir = ts_tmpdir_create("test_batch_local");
	assert_int_equal(chdir(C.dir), 0);
	assert_int_equal(uv_loop_init(&C.loop), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&C.loop, UV_RUN_DEFAULT);
	for (int i = 0; i < C.n_done && i < MAX_RESULTS; i++)
		free(C.done[i].tail);
	/* every handle of the queue has been closed and freed */
	assert_int_equal(uv_loop_close(&C.loop), 0);
	assert_int_equal(chdir(C.old_cwd), 0);
	ts_tmpdir_remove(C.dir);
	C.dir = NULL;
	return 0;
}

static struct batch_queue *make_queue(void)
{
	struct batch_queue *q = batch_queue_create(&C.loop, "local", on_complete, &C);
	assert_non_null(q);
	return q;
}

static struct batch_job_spec spec_of(const char *command)
{
	struct batch_job_spec s = {.command = command};
	s.resources = (struct batch_resources){-1, -1, -1, -1, -1};
	return s;
}

static int64_t submit(struct batch_queue *q, const struct batch_job_spec *s)
{
	C.in_submit = 1;
	int64_t id = batch_queue_submit(q, s);
	C.in_submit = 0;
	return id;
}

static int64_t submit_cmd(struct batch_queue *q, const char *command)
{
	struct batch_job_spec s = spec_of(command);
	return submit(q, &s);
}

/* Reads two nanosecond stamps "START END" that a job wrote to PATH. */
static void read_span(const char *path, long long *start, long long *end)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lld %lld", start, end), 2);
	fclose(f);
}

/* A job that records its start and end times (ns) in span.NAME around sleeping SECS. */
static char *span_cmd(char *buf, size_t size, const char *name, const char *secs)
{
	snprintf(buf, size, "s=$(date +%%s%%N); sleep %s; echo $s $(date +%%s%%N) > span.%s", secs,
	         name);
	return buf;
}

/* Whether PID is gone (or only a zombie nobody has reaped yet). */
static int process_gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static bool gone(void *arg)
{
	return process_gone(*(pid_t *)arg);
}

static int wait_gone(pid_t pid)
{
	return ts_poll_until(gone, &pid, TS_WAIT_MS);
}

static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int pid = -1;
	if (fscanf(f, "%d", &pid) != 1)
		pid = -1;
	fclose(f);
	return pid;
}

static void test_types_and_create(void **state)
{
	(void)state;
	assert_non_null(strstr(batch_queue_types(), "local"));
	assert_non_null(strstr(batch_queue_types(), "dryrun"));
	errno = 0;
	assert_null(batch_queue_create(&C.loop, "no-such-driver", on_complete, &C));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(batch_queue_create(&C.loop, "local", NULL, &C));
	assert_int_equal(errno, EINVAL);
	struct batch_queue *q = make_queue();
	assert_string_equal(batch_queue_type(q), "local");
	unsigned f = batch_queue_features(q);
	assert_true(f & BATCH_FEATURE_LOCAL_EXECUTION);
	assert_true(f & BATCH_FEATURE_WALL_TIME);
	assert_true(f & BATCH_FEATURE_ADMISSION);
	assert_false(f & BATCH_FEATURE_VIRTUAL_OUTPUTS);
	assert_false(f & BATCH_FEATURE_REMOTE_RENAME);
	batch_queue_delete(q);
	batch_queue_delete(NULL);
}

static void test_options(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "no-such-option", "1"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "two"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "memory", "-5"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "memory", ""), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "4"), 0);
	assert_int_equal(batch_queue_set_option(q, "cores", "4"), 0);
	assert_int_equal(batch_queue_set_option(q, "memory", "100"), 0);
	assert_int_equal(batch_queue_set_option(q, "disk", "100"), 0);
	assert_int_equal(batch_queue_set_option(q, "gpus", "0"), 0);
	assert_true(submit_cmd(q, "true") > 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "2"), -EBUSY);
	run_until_done(1);
	batch_queue_delete(q);
}

/* Option seccomp: the job runs under the profile and its refused calls are in the result. */
static void test_seccomp(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "seccomp", "lax"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "seccomp", "default"), 0);
	last_seccomp[0] = 0;
	int64_t id = submit_cmd(q, "unshare -U true 2>/dev/null; echo ran > s.out");
	assert_true(id > 0);
	run_until_done(1);
	const struct batch_result *r = result_of(id);
	assert_non_null(r);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(last_seccomp, "unshare");
	assert_int_equal(access("s.out", F_OK), 0);
	batch_queue_delete(q);
}

static void test_bad_specs(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_submit(q, NULL), -EINVAL);
	struct batch_job_spec s = spec_of(NULL);
	assert_int_equal(batch_queue_submit(q, &s), -EINVAL);
	s = spec_of("true");
	const char *bad_env[] = {"1X=y", NULL};
	s.env = bad_env;
	assert_int_equal(batch_queue_submit(q, &s), -EINVAL);
	const char *bad_env2[] = {"NOEQUALS", NULL};
	s.env = bad_env2;
	assert_int_equal(batch_queue_submit(q, &s), -EINVAL);
	s = spec_of("true");
	struct batch_file renamed = {"a.txt", "b.txt"};
	s.inputs = &renamed;
	s.n_inputs = 1;
	assert_int_equal(batch_queue_submit(q, &s), HTC_EUNSUP);
	/* sizing by the driver: the local driver has no CATEGORY_SIZING */
	s = spec_of("true");
	s.driver_sizes = 1;
	assert_int_equal(batch_queue_submit(q, &s), HTC_EUNSUP);
	s = spec_of("true");
	struct batch_file same = {"/etc/hostname", "/etc/hostname"};
	s.inputs = &same;
	s.n_inputs = 1;
	assert_true(batch_queue_submit(q, &s) > 0);
	run_until_done(1);
	batch_queue_delete(q);
}

static void test_exit_codes_and_signals(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	int64_t ok = submit_cmd(q, "true");
	int64_t three = submit_cmd(q, "exit 3");
	int64_t term = submit_cmd(q, "kill -TERM $$");
	int64_t stdin_null = submit_cmd(q, "! read line");
	assert_true(ok > 0 && three > ok && term > three && stdin_null > term);
	assert_int_equal(C.n_done, 0);
	run_until_done(4);
	assert_false(C.reentered);
	const struct batch_result *r = result_of(ok);
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 0);
	assert_int_equal(r->signal, 0);
	assert_int_equal(r->exhausted, 0);
	assert_int_equal(r->removed, 0);
	assert_true(r->submit_us > 0 && r->start_us >= r->submit_us && r->end_us >= r->start_us);
	assert_true(r->measured.wall_time_s >= 0);
	assert_int_equal(r->measured.memory_mb, -1);
	r = result_of(three);
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 3);
	r = result_of(term);
	assert_false(r->exited_normally);
	assert_int_equal(r->signal, SIGTERM);
	assert_int_equal(r->exhausted, 0);
	r = result_of(stdin_null);
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 0);
	assert_int_equal(batch_queue_running(q), 0);
	assert_int_equal(batch_queue_waiting(q), 0);
	batch_queue_delete(q);
}

static void test_env(void **state)
{
	(void)state;
	setenv("HTC_TEST_INHERITED", "kept", 1);
	setenv("HTC_TEST_REPLACED", "old", 1);
	struct batch_queue *q = make_queue();
	const char *env[] = {"HTC_TEST_A=hello world 'quoted' $x", "HTC_TEST_REPLACED=new", NULL};
	struct batch_job_spec s = spec_of("test \"$HTC_TEST_A\" = \"hello world 'quoted' \\$x\" && "
	                                  "test \"$HTC_TEST_REPLACED\" = new && "
	                                  "test \"$HTC_TEST_INHERITED\" = kept && "
	                                  "test $(env | grep -c ^HTC_TEST_REPLACED=) = 1");
	s.env = env;
	int64_t id = submit(q, &s);
	assert_true(id > 0);
	run_until_done(1);
	const struct batch_result *r = result_of(id);
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 0);
	batch_queue_delete(q);
	unsetenv("HTC_TEST_INHERITED");
	unsetenv("HTC_TEST_REPLACED");
}

/* Largest number of [start, end) spans that overlap. */
static int max_overlap(long long (*span)[2], int n)
{
	int best = 0;
	for (int i = 0; i < n; i++) {
		int k = 0;
		for (int j = 0; j < n; j++)
			if (span[j][0] <= span[i][0] && span[i][0] < span[j][1])
				k++;
		if (k > best)
			best = k;
	}
	return best;
}

static void test_max_jobs(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "cores", "16"), 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "3"), 0);
	char cmd[256], name[32];
	enum { N = 8 };
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "%d", i);
		assert_true(submit_cmd(q, span_cmd(cmd, sizeof cmd, name, "0.3")) > 0);
	}
	assert_int_equal(batch_queue_running(q), 3);
	assert_int_equal(batch_queue_waiting(q), N - 3);
	run_until_done(N);
	long long span[N][2];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "span.%d", i);
		read_span(name, &span[i][0], &span[i][1]);
	}
	int m = max_overlap(span, N);
	assert_true(m <= 3);
	assert_true(m >= 2);
	batch_queue_delete(q);
}

static void test_cores_admission(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "cores", "4"), 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "10"), 0);
	struct batch_job_spec s = spec_of("sleep 0.2");
	s.resources.cores = 5;
	assert_int_equal(batch_queue_submit(q, &s), HTC_ELIMIT);
	s.resources.cores = 3;
	assert_true(submit(q, &s) > 0);
	assert_true(submit(q, &s) > 0);
	/* unset cores count as 1: this one fits beside the first */
	assert_true(submit_cmd(q, "true") > 0);
	assert_int_equal(batch_queue_running(q), 2);
	assert_int_equal(batch_queue_waiting(q), 1);
	run_until_done(3);
	batch_queue_delete(q);
}

static void test_memory_admission(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "memory", "8000"), 0);
	assert_int_equal(batch_queue_set_option(q, "cores", "4"), 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "4"), 0);
	char cmd[256];
	struct batch_job_spec big = spec_of(NULL);
	big.resources.memory_mb = 9000;
	big.command = "true";
	assert_int_equal(batch_queue_submit(q, &big), HTC_ELIMIT);
	big.resources.memory_mb = 6000;
	big.command = span_cmd(cmd, sizeof cmd, "a", "0.3");
	int64_t a = submit(q, &big);
	big.command = span_cmd(cmd, sizeof cmd, "b", "0.3");
	int64_t b = submit(q, &big);
	/* a small job behind the blocked one is backfilled beside the first */
	struct batch_job_spec small = spec_of(span_cmd(cmd, sizeof cmd, "c", "0.1"));
	small.resources.memory_mb = 1000;
	int64_t c = submit(q, &small);
	assert_true(a > 0 && b > 0 && c > 0);
	assert_int_equal(batch_queue_running(q), 2);
	assert_int_equal(batch_queue_waiting(q), 1);
	run_until_done(3);
	long long sa, ea, sb, eb, sc, ec;
	read_span("span.a", &sa, &ea);
	read_span("span.b", &sb, &eb);
	read_span("span.c", &sc, &ec);
	assert_true(sb >= ea); /* the two 6000 MB jobs never overlap */
	assert_true(sc < ea);  /* the small one ran beside the first */
	assert_true(result_of(b)->start_us >= result_of(a)->end_us);
	batch_queue_delete(q);
}

static void test_wall_time(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	struct batch_job_spec s = spec_of("sleep 30 & echo $! > bg.pid; sleep 30; true");
	s.resources.wall_time_s = 1;
	/* The limit's timer counts from the loop's clock, milliseconds at its last update, which
	 * may be older than the job's start: from before an update, it cannot end the job in less
	 * than 999 ms. */
	int64_t t0 = time_monotonic_us();
	uv_update_time(&C.loop);
	int64_t id = submit(q, &s);
	struct batch_job_spec quick = spec_of("sleep 0.1");
	quick.resources.wall_time_s = 5;
	int64_t quick_id = submit(q, &quick);
	assert_true(id > 0 && quick_id > 0);
	run_until_done(2);
	const struct batch_result *r = result_of(id);
	assert_false(r->exited_normally);
	assert_int_equal(r->signal, SIGKILL);
	assert_true(r->exhausted & BATCH_EXHAUSTED_WALL_TIME);
	assert_true(done_of(id)->at_us - t0 >= 999000);
	int64_t ran = r->end_us - r->start_us;
	assert_true(ran < 1150000);
	assert_int_equal(r->measured.wall_time_s, 1);
	/* the background child in the job's process group was killed too */
	pid_t bg = read_pid("bg.pid");
	assert_true(bg > 0);
	assert_true(wait_gone(bg));
	r = result_of(quick_id);
	assert_true(r->exited_normally);
	assert_int_equal(r->exhausted, 0);
	batch_queue_delete(q);
}

static void test_remove(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "1"), 0);
	int64_t running = submit_cmd(q, "sleep 30; true");
	int64_t waiting = submit_cmd(q, "sleep 30; true");
	assert_int_equal(batch_queue_running(q), 1);
	assert_int_equal(batch_queue_waiting(q), 1);
	assert_int_equal(batch_queue_remove(q, 12345), -ENOENT);
	int64_t t0 = time_now_us();
	assert_int_equal(batch_queue_remove(q, waiting), 0);
	assert_int_equal(C.n_done, 0); /* delivered from the loop, not from remove() */
	assert_int_equal(batch_queue_remove(q, waiting), -ENOENT);
	assert_int_equal(batch_queue_remove(q, running), 0);
	run_until_done(2);
	assert_true(time_now_us() - t0 < 2000000);
	const struct batch_result *r = result_of(waiting);
	assert_true(r->removed);
	assert_int_equal(r->signal, SIGKILL);
	assert_int_equal(r->start_us, 0);
	r = result_of(running);
	assert_true(r->removed);
	assert_false(r->exited_normally);
	assert_int_equal(r->signal, SIGKILL);
	assert_int_equal(r->exhausted, 0);
	assert_int_equal(batch_queue_remove(q, running), -ENOENT);
	/* remove_waiting: the one running job goes on, the two waiting are removed unstarted */
	int64_t keep = submit_cmd(q, "exit 0");
	int64_t w1 = submit_cmd(q, "true"), w2 = submit_cmd(q, "true");
	assert_int_equal(batch_queue_waiting(q), 2);
	assert_int_equal(batch_queue_remove_waiting(q), 2);
	run_until_done(5);
	assert_true(result_of(keep)->exited_normally);
	assert_false(result_of(keep)->removed);
	assert_true(result_of(w1)->removed);
	assert_true(result_of(w2)->removed);
	assert_int_equal(result_of(w1)->start_us, 0);
	assert_int_equal(batch_queue_remove_waiting(q), 0);
	/* remove_all */
	for (int i = 0; i < 3; i++)
		assert_true(submit_cmd(q, "sleep 30; true") > 0);
	assert_int_equal(batch_queue_remove_all(q), 3);
	run_until_done(8);
	for (int i = 5; i < 8; i++)
		assert_true(C.done[i].r.removed);
	assert_int_equal(batch_queue_running(q), 0);
	assert_int_equal(batch_queue_waiting(q), 0);
	ts_run_for(&C.loop, 50);
	assert_int_equal(C.n_done, 8); /* exactly one callback per job */
	batch_queue_delete(q);
}

/* The pids that the two running jobs of test_delete_kills write are all in ARG (pid_t[4]). */
static bool four_pids(void *arg)
{
	pid_t *pids = arg;
	pids[0] = read_pid("child.1");
	pids[1] = read_pid("sh.1");
	pids[2] = read_pid("child.2");
	pids[3] = read_pid("sh.2");
	return pids[0] > 0 && pids[1] > 0 && pids[2] > 0 && pids[3] > 0;
}

static void test_delete_kills(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "cores", "4"), 0);
	assert_int_equal(batch_queue_set_option(q, "max-jobs", "2"), 0);
	assert_true(submit_cmd(q, "sleep 30 & echo $! > child.1; echo $$ > sh.1; wait") > 0);
	assert_true(submit_cmd(q, "sleep 30 & echo $! > child.2; echo $$ > sh.2; wait") > 0);
	assert_true(submit_cmd(q, "echo never > waiting.ran") > 0);
	pid_t pids[4] = {-1, -1, -1, -1};
	assert_true(ts_run_until(&C.loop, four_pids, pids, TS_WAIT_MS));
	for (int i = 0; i < 4; i++)
		assert_true(pids[i] > 0);
	batch_queue_delete(q);
	for (int i = 0; i < 4; i++)
		assert_true(wait_gone(pids[i]));
	/* the shells were reaped by the driver: no zombie is left behind */
	assert_int_equal(kill(pids[1], 0), -1);
	assert_int_equal(kill(pids[3], 0), -1);
	ts_run_for(&C.loop, 50);
	assert_int_equal(C.n_done, 0);
	assert_int_equal(access("waiting.ran", F_OK), -1);
}

static struct batch_queue *deleting_q;
static int deleting_calls;

static void delete_on_first(struct batch_queue *q, int64_t id, const struct batch_result *r,
                            void *arg)
{
	(void)id;
	(void)r;
	(void)arg;
	assert_ptr_equal(q, deleting_q);
	deleting_calls++;
	batch_queue_delete(q);
}

static bool deleting_called(void *arg)
{
	(void)arg;
	return deleting_calls > 0;
}

static void test_delete_from_callback(void **state)
{
	(void)state;
	deleting_calls = 0;
	deleting_q = batch_queue_create(&C.loop, "local", delete_on_first, NULL);
	assert_non_null(deleting_q);
	assert_true(batch_queue_submit(deleting_q, &(struct batch_job_spec){.command = "true"}) >
	            0);
	assert_true(batch_queue_submit(deleting_q, &(struct batch_job_spec){.command = "true"}) >
	            0);
	assert_true(batch_queue_submit(deleting_q,
	                               &(struct batch_job_spec){.command = "sleep 30; true"}) > 0);
	assert_true(ts_run_until(&C.loop, deleting_called, NULL, TS_WAIT_MS));
	ts_run_for(&C.loop, 200);
	assert_int_equal(deleting_calls, 1);
}

static const char *tail_of(int64_t id)
{
	for (int i = 0; i < C.n_done && i < MAX_RESULTS; i++)
		if (C.done[i].id == id)
			return C.done[i].tail;
	return NULL;
}

/* Sends this process's stderr to FILE; returns the fd to give stderr_back(). */
static int stderr_to(const char *file)
{
	fflush(stderr);
	int saved = dup(2);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	return saved;
}

static void stderr_back(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

static size_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A failed job's last stderr lines come back in stderr_tail, and every byte still reaches this
 * process's stderr; a job that writes more than a pipe holds is not held up; a job that
 * succeeds, or writes nothing, has no tail; a leftover process holding the pipe does not hold
 * up the completion. */
static void test_stderr_tail(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	int saved = stderr_to("err.out");
	/* 200,000 bytes of noise (3 pipe buffers), then the lines that matter */
	int64_t big = submit_cmd(q, "head -c 200000 /dev/zero | tr '\\0' x >&2; echo >&2; "
	                            "for i in $(seq 1 30); do echo line $i >&2; done; exit 2");
	int64_t ok = submit_cmd(q, "echo only a warning >&2");
	int64_t silent = submit_cmd(q, "echo to stdout; exit 1");
	int64_t left = submit_cmd(q, "setsid sleep 3 & echo the last word >&2; exit 4");
	run_until_done(4);
	stderr_back(saved);
	const struct batch_result *r = result_of(big);
	assert_int_equal(r->exit_code, 2);
	const char *t = tail_of(big);
	assert_non_null(t);
	assert_true(str_has_prefix(t, "line 11\n"));
	assert_true(str_has_suffix(t, "\nline 30"));
	assert_null(tail_of(ok));
	assert_null(tail_of(silent));
	assert_int_equal(result_of(left)->exit_code, 4);
	assert_string_equal(tail_of(left), "the last word");
	assert_true(file_size("err.out") > 200000);
	char *text = ts_read_file("err.out", NULL);
	assert_non_null(strstr(text, "only a warning\n"));
	assert_non_null(strstr(text, "line 30\n"));
	free(text);
	batch_queue_delete(q);
	/* option stderr-tail=no: the job's stderr is this process's, nothing is kept */
	q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "stderr-tail", "no"), 0);
	assert_int_equal(batch_queue_set_option(q, "stderr-tail", "maybe"), -EINVAL);
	saved = stderr_to("err2.out");
	int64_t direct = submit_cmd(q, "echo straight through >&2; exit 1");
	run_until_done(5);
	stderr_back(saved);
	assert_int_equal(C.done[4].id, direct); /* ids start again in a new queue */
	assert_int_equal(C.done[4].r.exit_code, 1);
	assert_null(C.done[4].tail);
	text = ts_read_file("err2.out", NULL);
	assert_non_null(strstr(text, "straight through"));
	free(text);
	batch_queue_delete(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_types_and_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seccomp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_specs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_codes_and_signals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stderr_tail, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_jobs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cores_admission, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_admission, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wall_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_kills, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_from_callback, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
