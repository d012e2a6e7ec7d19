/* test_rmon_pool.c: unit tests for the pool of reusable cgroups (rmon_cgroup_pool.c) through
 * the monitor (rmonitor.h), on this machine's real cgroup v1 hierarchies: a reused group must
 * measure and limit the next task as a fresh one would (memory, CPU time, memory and process
 * limits), groups left in a bad state are not reused, and draining removes every group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "rmon_cgroup.h"
#include "rmonitor.h"
#include "test_rmon_util.h"
#include "xalloc.h"
#include "banned.h"

static char helper_dir[PATH_MAX];
static int fresh; /* run_cmd(): a fresh group (spec.no_pool) */

/* The figures of a task are compared with those of the same task in a fresh group; a
 * sanitized helper's vary too much from run to run for that (its RSS, which the monitor
 * takes when larger than the group's figure), only the 200 MB of an earlier task show. */
#if defined(__SANITIZE_ADDRESS__)
#define SMALL_MB 200 /* 24 to 121 MB for 10 MB, fresh or not (/proc RSS); 238 for 200 MB */
#define NEAR_MB  1000
#else
#define SMALL_MB 40
#define NEAR_MB  8
#endif

struct run {
	struct rmsummary s;
	int done;
	char name[128]; /* the task's cgroup */
	int reused;
};

static void on_done(struct rmonitor *m, const struct rmsummary *s, void *arg)
{
	(void)m;
	struct run *r = arg;
	r->done++;
	rmsummary_copy(&r->s, s);
}

/* Runs SPEC to the end on a fresh loop into R (freed by the caller with rmsummary_clear). */
static void run(struct rmonitor_spec *spec, struct run *r)
{
	memset(r, 0, sizeof *r);
	rmsummary_init(&r->s);
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	int err = 0;
	struct rmonitor *m = rmonitor_start(&loop, spec, on_done, r, &err);
	if (!m)
		fail_msg("rmonitor_start: %s", htc_strerror(err));
	assert_true(rmonitor_uses_cgroups(m));
	snprintf(r->name, sizeof r->name, "%s", rmonitor_cgroup_name(m));
	r->reused = rmonitor_cgroup_reused(m);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(r->done, 1);
	assert_null(rmonitor_cgroup_name(m)); /* released before DONE */
	rmonitor_delete(m);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Runs ARGV (NULL-terminated words) with cgroups required, memory limit MEM_MB and process
 * limit PROCS (< 0: none). */
static void run_cmd(struct run *r, double mem_mb, double procs, const char *a0, const char *a1,
                    const char *a2)
{
	const char *argv[] = {a0, a1, a2, NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	spec.limits.v[RM_MEMORY] = mem_mb;
	spec.limits.v[RM_MAX_CONCURRENT_PROCESSES] = procs;
	spec.limits.v[RM_WALL_TIME] = 10; /* a limit left from an earlier task must not hang */
	spec.no_pool = fresh;
	run(&spec, r);
}

/* helper_NAME A1 A2 under the given limits. */
static void run_helper(struct run *r, double mem_mb, const char *name, const char *a1,
                       const char *a2)
{
	char *prog = test_helper_path(helper_dir, name);
	run_cmd(r, mem_mb, -1, prog, a1, a2);
	free(prog);
}

/* 1 when the group NAME exists in the memory hierarchy. */
static int group_exists(const char *name)
{
	char own[2048];
	test_own_group("memory", own, sizeof own);
	char *dir = xasprintf("/sys/fs/cgroup/memory%s/htc/%s", strcmp(own, "/") ? own : "", name);
	DIR *d = opendir(dir);
	free(dir);
	if (d)
		closedir(d);
	return d != NULL;
}

static int setup(void **state)
{
	(void)state;
	if (rmon_cgroup_detect(NULL) != RMON_CG_V1)
		fail_msg("these tests need cgroup v1 at /sys/fs/cgroup (the test machine has it)");
	unsetenv("HTC_RMON_POOL");
	rmonitor_pool_drain();
	return 0;
}

/* The memory of helper_alloc 10 in a fresh group. */
static double fresh_10mb(void)
{
	struct run r;
	fresh = 1;
	run_helper(&r, -1, "alloc", "10", "0.1");
	fresh = 0;
	double mb = r.s.v[RM_MEMORY];
	rmsummary_clear(&r.s);
	return mb;
}

/* Memory: a 200 MB task, then a 10 MB one in the same group. */
static void test_memory_after_big_task(void **state)
{
	(void)state;
	struct run r1, r2;
	double want = fresh_10mb();
	run_helper(&r1, -1, "alloc", "200", "0.1");
	assert_int_equal(r1.s.exit_status, 0);
	assert_true(r1.s.v[RM_MEMORY] >= 195);
	assert_int_equal(rmonitor_pool_size(), 1);
	run_helper(&r2, -1, "alloc", "10", "0.1");
	print_message("200 MB then 10 MB in %s (reused %d): %.1f MB, %.1f MB (fresh %.1f MB)\n",
	              r2.name, r2.reused, r1.s.v[RM_MEMORY], r2.s.v[RM_MEMORY], want);
	assert_string_equal(r1.name, r2.name);
	assert_int_equal(r2.reused, 1);
	assert_int_equal(r2.s.exit_status, 0);
	assert_true(r2.s.v[RM_MEMORY] >= 9.5 && r2.s.v[RM_MEMORY] < SMALL_MB);
	assert_true(fabs(r2.s.v[RM_MEMORY] - want) < NEAR_MB);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);
}

/* Page cache: task 1 writes a 100 MB file (cache charged to the group), task 2 is small. */
static void test_cache_not_inherited(void **state)
{
	(void)state;
	struct run r1, r2;
	double want = fresh_10mb();
	char file[] = "/tmp/rmon-pool-cache-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	close(fd);
	char *cmd = xasprintf("dd if=/dev/zero of=%s bs=1M count=100 2>/dev/null", file);
	run_cmd(&r1, -1, -1, "sh", "-c", cmd);
	free(cmd);
	run_helper(&r2, -1, "alloc", "10", "0.1");
	unlink(file);
	print_message("cache of 100 MB, then 10 MB: %.1f MB (fresh %.1f MB)\n", r2.s.v[RM_MEMORY],
	              want);
	assert_string_equal(r1.name, r2.name);
	assert_true(r2.s.v[RM_MEMORY] >= 9.5 && r2.s.v[RM_MEMORY] < SMALL_MB);
	assert_true(fabs(r2.s.v[RM_MEMORY] - want) < NEAR_MB);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);
}

/* CPU time: 0.4 s of busy loop, then a sleep. */
static void test_cpu_after_busy_task(void **state)
{
	(void)state;
	struct run r1, r2;
	run_helper(&r1, -1, "burn", "1", "0.4");
	run_cmd(&r2, -1, -1, "sleep", "0.1", NULL);
	print_message("burn 0.4 s then sleep (reused %d): %.3f s, %.3f s\n", r2.reused,
	              r1.s.v[RM_CPU_TIME], r2.s.v[RM_CPU_TIME]);
	assert_string_equal(r1.name, r2.name);
	assert_true(r1.s.v[RM_CPU_TIME] >= 0.1); /* 2 cores shared with other work */
	assert_true(r2.s.v[RM_CPU_TIME] < 0.05);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);
}

/* Memory limits: smaller than the last task's use, then larger, then none. */
static void test_memory_limits(void **state)
{
	(void)state;
	struct run r;
	run_helper(&r, -1, "alloc", "200", "0.1");
	char name[128];
	snprintf(name, sizeof name, "%s", r.name);
	rmsummary_clear(&r.s);

	run_helper(&r, 100, "alloc", "200", "2");
	assert_string_equal(r.name, name);
	assert_int_equal(r.s.exit_type, RM_EXIT_LIMITS);
	assert_true(r.s.limits_exceeded[RM_MEMORY] == 100);
	rmsummary_clear(&r.s);

	/* Larger after smaller (and after a task that hit its limit: not reported again). */
	run_helper(&r, 300, "alloc", "150", "0.1");
	assert_string_equal(r.name, name);
	assert_int_equal(r.s.exit_type, RM_EXIT_NORMAL);
	assert_int_equal(r.s.exit_status, 0);
	assert_true(r.s.v[RM_MEMORY] >= 145);
	rmsummary_clear(&r.s);

	/* A 60 MB limit after 300 MB, then none at all: 250 MB must pass. */
	run_helper(&r, 60, "alloc", "100", "2");
	assert_string_equal(r.name, name);
	assert_int_equal(r.s.exit_type, RM_EXIT_LIMITS);
	rmsummary_clear(&r.s);
	run_helper(&r, -1, "alloc", "250", "0.1");
	assert_string_equal(r.name, name);
	assert_int_equal(r.s.exit_type, RM_EXIT_NORMAL);
	assert_int_equal(r.s.exit_status, 0);
	assert_true(r.s.v[RM_MEMORY] >= 240);
	rmsummary_clear(&r.s);
}

/* The process limit applies to a reused group, and is lifted for the next task. A tree of
 * 4 children under a limit of 3 processes cannot fork the third (and waits for the others:
 * an orphan left as a zombie would keep the group out of the pool). */
static void test_pids_limit(void **state)
{
	(void)state;
	char *tree = test_helper_path(helper_dir, "tree");
	struct run r1, r2, r3;
	run_cmd(&r1, -1, -1, "true", NULL, NULL);
	const char *argv[] = {tree, "4", "1", "0.3", NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	FILE *devnull = fopen("/dev/null", "w");
	spec.stderr_fd = fileno(devnull);
	spec.limits.v[RM_MAX_CONCURRENT_PROCESSES] = 3;
	run(&spec, &r2);
	spec.limits.v[RM_MAX_CONCURRENT_PROCESSES] = -1;
	run(&spec, &r3);
	fclose(devnull);
	free(tree);
	print_message("processes: limit 3 -> %g (exit %d), no limit -> %g (exit %d)\n",
	              r2.s.v[RM_MAX_CONCURRENT_PROCESSES], r2.s.exit_status,
	              r3.s.v[RM_MAX_CONCURRENT_PROCESSES], r3.s.exit_status);
	assert_string_equal(r1.name, r2.name);
	assert_string_equal(r2.name, r3.name);
	assert_int_equal(r2.s.exit_status, 1);
	assert_true(r2.s.v[RM_MAX_CONCURRENT_PROCESSES] <= 3);
	assert_int_equal(r3.s.exit_status, 0);
	assert_true(r3.s.v[RM_MAX_CONCURRENT_PROCESSES] >= 5);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);
	rmsummary_clear(&r3.s);
}

/* Groups left in a state a fresh group is not in are removed, not pooled: a nested group
 * made by the task, and a zombie still charged to the group (an orphan reparented to us,
 * a subreaper, that we have not reaped). */
static void test_not_pooled(void **state)
{
	(void)state;
	rmonitor_pool_drain();
	struct run r;
	run_cmd(&r, -1, -1, "sh", "-c",
	        "d=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup); "
	        "mkdir $d/nested");
	assert_int_equal(r.s.exit_status, 0);
	assert_int_equal(rmonitor_pool_size(), 0);
	assert_false(group_exists(r.name));
	rmsummary_clear(&r.s);
	/* the same in another hierarchy only (the memory group has none) */
	run_cmd(&r, -1, -1, "sh", "-c",
	        "d=/sys/fs/cgroup/freezer$(sed -n 's/^[0-9]*:freezer://p' /proc/self/cgroup); "
	        "mkdir $d/nested");
	assert_int_equal(r.s.exit_status, 0);
	assert_int_equal(rmonitor_pool_size(), 0);
	assert_false(group_exists(r.name));
	rmsummary_clear(&r.s);

	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	run_cmd(&r, -1, -1, "sh", "-c", "sleep 0.05 & exit 0");
	assert_int_equal(r.s.exit_status, 0);
	assert_int_equal(rmonitor_pool_size(), 0);
	int st;
	while (waitpid(-1, &st, WNOHANG) > 0)
		;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	rmsummary_clear(&r.s);

	/* A clean task after them is pooled again. */
	run_cmd(&r, -1, -1, "true", NULL, NULL);
	assert_int_equal(rmonitor_pool_size(), 1);
	rmsummary_clear(&r.s);
}

/* Turned off by the spec or the environment: a fresh group each time. */
static void test_pool_off(void **state)
{
	(void)state;
	rmonitor_pool_drain();
	const char *argv[] = {"true", NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	spec.no_pool = 1;
	struct run r1, r2;
	run(&spec, &r1);
	run(&spec, &r2);
	assert_string_not_equal(r1.name, r2.name);
	assert_int_equal(r2.reused, 0);
	assert_int_equal(rmonitor_pool_size(), 0);
	assert_int_equal(test_our_groups("memory"), 0);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);

	setenv("HTC_RMON_POOL", "0", 1);
	spec.no_pool = 0;
	run(&spec, &r1);
	run(&spec, &r2);
	unsetenv("HTC_RMON_POOL");
	assert_string_not_equal(r1.name, r2.name);
	assert_int_equal(rmonitor_pool_size(), 0);
	rmsummary_clear(&r1.s);
	rmsummary_clear(&r2.s);
}

/* Draining removes every pooled group from every hierarchy (a CPU quota adds the cpu one),
 * and groups of another kind (with a quota) are not mixed with the others. */
static void test_drain(void **state)
{
	(void)state;
	rmonitor_pool_drain();
	const char *argv[] = {"true", NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.cgroups = RMONITOR_CGROUPS_REQUIRED;
	struct run plain, quota;
	run(&spec, &plain);
	spec.limits.v[RM_CORES] = 1;
	run(&spec, &quota);
	assert_string_not_equal(plain.name, quota.name);
	assert_int_equal(quota.reused, 0);
	assert_int_equal(rmonitor_pool_size(), 2);
	static const char *const ctrls[] = {"memory", "cpu", "cpuacct", "pids", "freezer"};
	for (size_t i = 0; i < sizeof ctrls / sizeof *ctrls; i++)
		assert_true(test_our_groups(ctrls[i]) >= 1);
	assert_int_equal(rmonitor_pool_drain(), 2);
	assert_int_equal(rmonitor_pool_size(), 0);
	for (size_t i = 0; i < sizeof ctrls / sizeof *ctrls; i++)
		if (test_our_groups(ctrls[i]) != 0)
			fail_msg("%d groups of ours left in %s", test_our_groups(ctrls[i]),
			         ctrls[i]);
	rmsummary_clear(&plain.s);
	rmsummary_clear(&quota.s);
}

int main(void)
{
	test_helper_dir(helper_dir, sizeof helper_dir);
	if (getenv("TEST_DEBUG"))
		debug_flags_set("rmon");
#if defined(__SANITIZE_ADDRESS__)
	/* Not for this process (read at its start): the helpers then have no LeakSanitizer
	 * process at exit, which /proc sampling counts with their memory a second time. */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_memory_after_big_task, setup),
	    cmocka_unit_test_setup(test_cache_not_inherited, setup),
	    cmocka_unit_test_setup(test_cpu_after_busy_task, setup),
	    cmocka_unit_test_setup(test_memory_limits, setup),
	    cmocka_unit_test_setup(test_pids_limit, setup),
	    cmocka_unit_test_setup(test_not_pooled, setup),
	    cmocka_unit_test_setup(test_pool_off, setup),
	    cmocka_unit_test_setup(test_drain, setup),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	rmonitor_pool_drain();
	return r;
}
