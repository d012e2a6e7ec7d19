/* test_batch_cgroups.c: unit tests of the "cgroups" batch driver with real cgroups on this
 * machine: exit status, the allocation seen in the environment and the cpuset, memory
 * exhaustion, memory growth and throttling, wall time, measured memory, and that no cgroup of
 * this process is left after jobs end or after the queue is deleted with jobs running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "batch_queue.h"
#include "htc_error.h"
#include "rmon_proc.h"
#include "rmonitor.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "banned.h"

#define NRES 16

struct outcome {
	int64_t id;
	struct batch_result r; /* error pointer cleared */
	char tail[256];        /* the start of r.stderr_tail ("" when NULL) */
};

static struct {
	uv_loop_t loop;
	int n;
	struct outcome out[NRES];
	char *tmp;
	char home[PATH_MAX];
	char alloc[PATH_MAX]; /* helper_alloc, or "" to use python3 */
} T;

static void completed(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	(void)arg;
	if (T.n < NRES) {
		T.out[T.n].id = id;
		T.out[T.n].r = *r;
		T.out[T.n].r.error = NULL;
		snprintf(T.out[T.n].tail, sizeof T.out[T.n].tail, "%s",
		         r->stderr_tail ? r->stderr_tail : "");
		T.out[T.n].r.stderr_tail = NULL;
	}
	T.n++;
}

static const struct batch_result *outcome(int64_t id)
{
	for (int i = 0; i < T.n && i < NRES; i++)
		if (T.out[i].id == id)
			return &T.out[i].r;
	fail_msg("job %lld has not completed", (long long)id);
	return NULL;
}

/* What job ID's result had as its stderr_tail ("" for none). */
static const char *tail_of(int64_t id)
{
	for (int i = 0; i < T.n && i < NRES; i++)
		if (T.out[i].id == id)
			return T.out[i].tail;
	fail_msg("job %lld has not completed", (long long)id);
	return NULL;
}

static bool jobs_done(void *arg)
{
	return T.n >= *(int *)arg;
}

/* Runs the loop until N jobs have completed. */
static void wait_jobs(int n)
{
	ts_run_until(&T.loop, jobs_done, &n, TS_WAIT_MS);
	assert_int_equal(T.n, n);
}

/* How many cgroups named htc.<our pid>.<our start time>.* exist in any hierarchy under
 * /sys/fs/cgroup (other programs on this machine may have their own, and an earlier process
 * with our pid may have left some: the start time tells them apart). */
static int our_cgroups_in(const char *dir, int depth)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "htc.%d.%llu.", (int)getpid(),
	         rmon_proc_start_ticks(getpid()));
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
		char sub[PATH_MAX];
		if (depth < 4 &&
		    snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
			n += our_cgroups_in(sub, depth + 1);
	}
	closedir(d);
	return n;
}

static int our_cgroups(void)
{
	return our_cgroups_in("/sys/fs/cgroup", 0);
}

/* Groups of ours left after the jobs ended, once the monitor's pool of empty groups kept for
 * reuse (doc/resource-monitor.md) is emptied: any other group is a leak. */
static int left_cgroups(void)
{
	rmonitor_pool_drain();
	return our_cgroups();
}

/* Whether the process *ARG has ended (gone, or a zombie its new parent has not reaped yet). */
static bool ended(void *arg)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", *(int *)arg);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	bool zombie = false;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "State:", 6))
			zombie = strchr(line, 'Z') != NULL;
	fclose(f);
	return zombie;
}

/* Waits until PID has ended. */
static int dead(int pid)
{
	return ts_poll_until(ended, &pid, TS_WAIT_MS);
}

static int setup(void **state)
{
	(void)state;
	memset(&T, 0, sizeof T);
	assert_non_null(getcwd(T.home, sizeof T.home));
	/* helper_alloc is built next to this binary's component */
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(len > 0);
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	int n =
	    snprintf(T.alloc, sizeof T.alloc, "%s/../../resource_monitor/test/helper_alloc", self);
	if (n < 0 || (size_t)n >= sizeof T.alloc || access(T.alloc, X_OK) != 0)
		T.alloc[0] = '\0';
	T.tmp = ts_tmpdir_create("test_batch_cgroups");
	assert_int_equal(chdir(T.tmp), 0);
	assert_int_equal(uv_loop_init(&T.loop), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&T.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&T.loop), 0);
	assert_int_equal(chdir(T.home), 0);
	ts_tmpdir_remove(T.tmp);
	T.tmp = NULL;
	return 0;
}

static struct batch_queue *queue(const char *type)
{
	struct batch_queue *q = batch_queue_create(&T.loop, type, completed, NULL);
	assert_non_null(q);
	return q;
}

/* A spec with nothing declared. */
static struct batch_job_spec job(const char *command)
{
	struct batch_job_spec s = {.command = command};
	s.resources = (struct batch_resources){-1, -1, -1, -1, -1};
	s.max_resources = (struct batch_resources){-1, -1, -1, -1, -1};
	return s;
}

/* A command that makes MB megabytes resident and holds them for SECS. */
static const char *alloc_cmd(char *buf, size_t size, int mb, const char *secs)
{
	if (T.alloc[0])
		snprintf(buf, size, "%s %d %s", T.alloc, mb, secs);
	else
		snprintf(buf, size, "python3 -c 'import time; b=bytearray(%d<<20); time.sleep(%s)'",
		         mb, secs);
	return buf;
}

/* Submits S to Q, runs the loop until it completes and returns its result. */
static const struct batch_result *run_one(struct batch_queue *q, const struct batch_job_spec *s)
{
	int64_t id = batch_queue_submit(q, s);
	assert_true(id > 0);
	wait_jobs(T.n + 1);
	return outcome(id);
}

static void assert_succeeded(const struct batch_result *r)
{
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 0);
	assert_int_equal(r->exhausted, 0);
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void test_create_and_options(void **state)
{
	(void)state;
	assert_non_null(strstr(batch_queue_types(), "cgroups"));
	struct batch_queue *q = queue("cgroups");
	assert_string_equal(batch_queue_type(q), "cgroups");
	unsigned f = batch_queue_features(q);
	assert_true(f & BATCH_FEATURE_LOCAL_EXECUTION);
	assert_true(f & BATCH_FEATURE_ADMISSION);
	assert_true(f & BATCH_FEATURE_WALL_TIME);
	assert_true(f & BATCH_FEATURE_MEMORY_LIMIT);
	assert_true(f & BATCH_FEATURE_MEASURE);
	assert_int_equal(batch_queue_set_option(q, "memory-grow", "maybe"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "memory-throttle-rate", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "pids-max", "x"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "no-such", "1"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "cores", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "memory-grow", "off"), 0);
	assert_int_equal(batch_queue_set_option(q, "memory-throttle", "on"), 0);
	assert_int_equal(batch_queue_set_option(q, "memory-throttle-rate", "500"), 0);
	assert_int_equal(batch_queue_set_option(q, "pids-max", "100"), 0);
	assert_int_equal(batch_queue_set_option(q, "memory", "100"), 0);
	/* more memory than the queue has: rejected at once */
	struct batch_job_spec s = job("true");
	s.resources.memory_mb = 101;
	assert_int_equal(batch_queue_submit(q, &s), HTC_ELIMIT);
	batch_queue_delete(q);
}

static void test_exit_status(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	struct batch_job_spec s = job("true");
	int64_t ok = batch_queue_submit(q, &s);
	s = job("echo out > out.txt; echo why it failed >&2; exit 1");
	int64_t bad = batch_queue_submit(q, &s);
	s = job("kill -TERM $$");
	int64_t sig = batch_queue_submit(q, &s);
	assert_true(ok > 0 && bad > 0 && sig > 0);
	wait_jobs(3);
	const struct batch_result *r = outcome(ok);
	assert_succeeded(r);
	assert_true(r->start_us > 0 && r->end_us >= r->start_us);
	r = outcome(bad);
	assert_true(r->exited_normally);
	assert_int_equal(r->exit_code, 1);
	assert_int_equal(r->exhausted, 0);
	assert_string_equal(slurp("out.txt"), "out\n");
	assert_string_equal(tail_of(bad), "why it failed");
	assert_string_equal(tail_of(ok), "");
	r = outcome(sig);
	assert_false(r->exited_normally);
	assert_int_equal(r->signal, SIGTERM);
	assert_int_equal(r->exhausted, 0);
	assert_int_equal(left_cgroups(), 0);
	batch_queue_delete(q);
}

/* The job sees its allocation: CORES and thread counts, MEMORY; its own env wins for thread
 * counts. Checked for the local driver too. */
static void check_env(const char *type)
{
	struct batch_queue *q = queue(type);
	const char *env[] = {"NUMEXPR_NUM_THREADS=7", "CORES=99", NULL};
	struct batch_job_spec s =
	    job("echo $CORES $OMP_NUM_THREADS $MKL_NUM_THREADS "
	        "$OPENBLAS_NUM_THREADS $NUMEXPR_NUM_THREADS $MEMORY > env.txt");
	s.env = env;
	s.resources.cores = 1;
	s.resources.memory_mb = 50;
	assert_succeeded(run_one(q, &s));
	assert_string_equal(slurp("env.txt"), "1 1 1 1 7 50\n");
	batch_queue_delete(q);
}

static void test_env(void **state)
{
	(void)state;
	check_env("cgroups");
	T.n = 0; /* job ids start again at 1 in the new queue */
	check_env("local");
}

static void test_memory_exhausted(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	char cmd[PATH_MAX + 64];
	struct batch_job_spec s = job(alloc_cmd(cmd, sizeof cmd, 300, "0.2"));
	s.resources.memory_mb = 100;
	s.max_resources.memory_mb = 400; /* growth is off: the maximum does not matter */
	assert_int_equal(batch_queue_set_option(q, "memory-grow", "off"), 0);
	const struct batch_result *r = run_one(q, &s);
	assert_true(r->exhausted & BATCH_EXHAUSTED_MEMORY);
	assert_false(r->exited_normally);
	assert_int_equal(r->limit_raises, 0);
	assert_true(r->measured.memory_mb >= 90 && r->measured.memory_mb <= 110);
	assert_int_equal(left_cgroups(), 0);
	batch_queue_delete(q);
}

static void test_memory_grow(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	char cmd[PATH_MAX + 64];
	struct batch_job_spec s = job(alloc_cmd(cmd, sizeof cmd, 300, "0.2"));
	s.resources.memory_mb = 100;
	s.max_resources.memory_mb = 400;
	int64_t grows = batch_queue_submit(q, &s);
	/* the same job with no maximum: not grown, exhausted */
	s.max_resources.memory_mb = -1;
	int64_t capped = batch_queue_submit(q, &s);
	assert_true(grows > 0 && capped > 0);
	wait_jobs(2);
	const struct batch_result *r = outcome(grows);
	assert_succeeded(r);
	assert_true(r->limit_raises > 0);
	assert_true(r->measured.memory_mb >= 290 && r->measured.memory_mb <= 400);
	r = outcome(capped);
	assert_true(r->exhausted & BATCH_EXHAUSTED_MEMORY);
	assert_int_equal(r->limit_raises, 0);
	assert_int_equal(left_cgroups(), 0);
	batch_queue_delete(q);
}

static void test_measured_memory(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	char cmd[PATH_MAX + 64];
	struct batch_job_spec s = job(alloc_cmd(cmd, sizeof cmd, 200, "1.2"));
	const struct batch_result *r = run_one(q, &s);
	assert_succeeded(r);
	print_message("200 MB touched: %lld MB measured\n", (long long)r->measured.memory_mb);
	/* The helper is built with the tests' flags. Under ASan its allocator and shadow memory
	 * add to what it touches, and about one run in four (in the build before the tree was
	 * restructured too) measures about twice the usual 239 MB, which is not explained yet
	 * (doc/resource-monitor.md): the upper bound is checked without ASan only. */
#if defined(__SANITIZE_ADDRESS__)
	const int64_t most = INT64_MAX;
#else
	const int64_t most = 260;
#endif
	assert_true(r->measured.memory_mb >= 195 && r->measured.memory_mb <= most);
	assert_true(r->measured.wall_time_s >= 1 && r->measured.wall_time_s <= 30);
	assert_true(r->measured.cores >= 0);
	batch_queue_delete(q);
}

static void test_wall_time(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	struct batch_job_spec s = job("sleep 20");
	s.resources.wall_time_s = 1;
	const struct batch_result *r = run_one(q, &s);
	assert_true(r->exhausted & BATCH_EXHAUSTED_WALL_TIME);
	assert_false(r->exited_normally);
	assert_true(r->end_us - r->start_us < 15000000); /* the limit ended it, not the 20 s */
	assert_int_equal(left_cgroups(), 0);
	batch_queue_delete(q);
}

/* Two one-core jobs running at once are pinned to different cpus. */
static void test_cpuset(void **state)
{
	(void)state;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct batch_queue *q = queue("cgroups");
	struct batch_job_spec s =
	    job("grep Cpus_allowed_list /proc/self/status > cpus.1; sleep 0.5");
	s.resources.cores = 1;
	int64_t a = batch_queue_submit(q, &s);
	s.command = "grep Cpus_allowed_list /proc/self/status > cpus.2; sleep 0.5";
	int64_t b = batch_queue_submit(q, &s);
	assert_true(a > 0 && b > 0);
	wait_jobs(2);
	assert_int_equal(outcome(a)->exit_code, 0);
	assert_int_equal(outcome(b)->exit_code, 0);
	assert_non_null(slurp("cpus.1"));
	char *one = strdup(slurp("cpus.1"));
	assert_non_null(slurp("cpus.2"));
	char *two = strdup(slurp("cpus.2"));
	/* each is one cpu ("Cpus_allowed_list:\tN") */
	assert_null(strchr(one, ','));
	assert_null(strchr(one, '-'));
	if (ncpu >= 2)
		assert_string_not_equal(one, two);
	free(one);
	free(two);
	batch_queue_delete(q);
}

/* Memory grows fast (about 300 MB/s) while the queue's memory is short (a queue of 640 MB): the job
 * is throttled near its usage, before it reaches 900 MB; without throttling it finishes. */
static void test_throttle(void **state)
{
	(void)state;
	const char *grow = "python3 -c 'import time\nl=[]\nfor i in range(18):\n"
	                   "    l.append(bytearray(50<<20)); time.sleep(0.15)'";
	for (int on = 1; on >= 0; on--) {
		T.n = 0; /* job ids start again at 1 in the new queue */
		struct batch_queue *q = queue("cgroups");
		assert_int_equal(batch_queue_set_option(q, "memory", "640"), 0);
		assert_int_equal(batch_queue_set_option(q, "memory-throttle-rate", "100"), 0);
		assert_int_equal(batch_queue_set_option(q, "memory-throttle", on ? "on" : "off"),
		                 0);
		struct batch_job_spec s = job(grow);
		s.resources.wall_time_s = on ? 8 : -1;
		const struct batch_result *r = run_one(q, &s);
		if (on) {
			/* stopped while growing: it waits at its pinned limit until its wall time
			 * ends, or, with a monitor that cannot keep it waiting, is ended as
			 * memory-exhausted */
			assert_false(r->exited_normally);
			assert_true(r->exhausted &
			            (BATCH_EXHAUSTED_WALL_TIME | BATCH_EXHAUSTED_MEMORY));
			assert_true(r->measured.memory_mb < 880);
		} else {
			assert_succeeded(r);
			assert_true(r->measured.memory_mb >= 880);
		}
		batch_queue_delete(q);
	}
	assert_int_equal(left_cgroups(), 0);
}

static bool child_written(void *arg)
{
	(void)arg;
	const char *c = slurp("child");
	return c && atoi(c) > 0;
}

static bool no_cgroup_left(void *arg)
{
	(void)arg;
	return left_cgroups() == 0;
}

static void test_delete_running(void **state)
{
	(void)state;
	struct batch_queue *q = queue("cgroups");
	struct batch_job_spec s = job("sleep 30 & echo $! > child; wait");
	assert_true(batch_queue_submit(q, &s) > 0);
	s.command = "sleep 30";
	assert_true(batch_queue_submit(q, &s) > 0);
	assert_true(ts_run_until(&T.loop, child_written, NULL, TS_WAIT_MS));
	int child = atoi(slurp("child"));
	assert_true(child > 0);
	assert_true(our_cgroups() >= 2);
	batch_queue_delete(q);
	assert_true(ts_run_until(&T.loop, no_cgroup_left, NULL, TS_WAIT_MS));
	assert_true(dead(child));
	assert_int_equal(T.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create_and_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_exhausted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_grow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_measured_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wall_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpuset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_throttle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_running, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
