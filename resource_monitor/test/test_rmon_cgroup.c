/* test_rmon_cgroup.c: unit tests for the cgroup backend (rmon_cgroup.h) and the spawner
 * (rmon_spawn.h). The v2 logic runs against a fake cgroup tree built in a temporary
 * directory (what it writes and reads is checked file by file); v1 runs for real on this
 * machine: a group is created, a child started inside it, limited, measured and removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "htc_error.h"
#include "path.h"
#include "rmon_cgroup.h"
#include "rmon_proc.h"
#include "rmon_spawn.h"
#include "test_rmon_util.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static char helper_dir[PATH_MAX];

static void put(const char *dir, const char *file, const char *text)
{
	char *p = path_join(dir, file);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static char *get(const char *dir, const char *file)
{
	char *p = path_join(dir, file);
	char buf[4096];
	ssize_t r = rmon_read_file(p, buf, sizeof buf);
	free(p);
	if (r < 0)
		return xstrdup("<missing>");
	return xstrdup(buf);
}

static void expect_file(const char *dir, const char *file, const char *want)
{
	char *got = get(dir, file);
	if (strcmp(got, want))
		fail_msg("%s/%s holds \"%s\", want \"%s\"", dir, file, got, want);
	free(got);
}

struct fake {
	char *root;
	char selfcg[PATH_MAX];
	char *own, *base, *group;
	struct rmon_cgroup *cg; /* the task group, when created by fake_v2_group() */
};

/* Root with controllers, our own cgroup /user.slice/x, htc beneath it and the task group,
 * each with the files the kernel would show. */
static void fake_v2(struct fake *f)
{
	f->root = ts_tmpdir_create("rmon-cg");
	f->cg = NULL;
	f->own = path_join(f->root, "user.slice/x");
	f->base = path_join(f->own, "htc");
	f->group = path_join(f->base, "htc.4242.1");
	assert_int_equal(path_mkdir_p(f->group, 0755), 0);
	put(f->root, "cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	put(f->root, "cgroup.subtree_control", "cpuset cpu io memory pids\n");
	put(f->own, "cgroup.controllers", "cpuset cpu io memory pids\n");
	put(f->own, "cgroup.subtree_control", "memory\n");
	put(f->base, "cgroup.controllers", "cpu io memory pids\n");
	put(f->base, "cgroup.subtree_control", "");
	static const char *const files[] = {
	    "cgroup.procs",     "memory.max",    "memory.high",  "memory.swap.max",
	    "memory.oom.group", "cpu.max",       "pids.max",     "cgroup.kill",
	    "memory.current",   "memory.peak",   "memory.stat",  "cpu.stat",
	    "io.stat",          "memory.events", "pids.current", "cgroup.events"};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		put(f->group, files[i], "");
	put(f->group, "cgroup.controllers", "cpu io memory pids\n");
	snprintf(f->selfcg, sizeof f->selfcg, "%s/self_cgroup", f->root);
	FILE *s = fopen(f->selfcg, "w");
	assert_non_null(s);
	fputs("12:memory:/ignored\n0::/user.slice/x\n", s);
	fclose(s);
}

static void fake_free(struct fake *f)
{
	rmon_cgroup_delete(f->cg);
	ts_tmpdir_remove(f->root);
	f->root = NULL;
	free(f->own);
	free(f->base);
	free(f->group);
}

/* Options that create the task group htc.4242.1 of fake F, with every optional controller. */
static struct rmon_cgroup_opts fake_opts(const struct fake *f)
{
	return (struct rmon_cgroup_opts){.root = f->root,
	                                 .proc_self_cgroup = f->selfcg,
	                                 .owner = 4242,
	                                 .name = "htc.4242.1",
	                                 .controllers = RMON_CG_WANT_ALL};
}

/* Number of descriptors this process has open. */
static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Creates a group with options O (NULL: the real hierarchy and defaults); fails the test when
 * that is not possible. */
static struct rmon_cgroup *create_ok(const struct rmon_cgroup_opts *o)
{
	int err = 0;
	struct rmon_cgroup *cg = rmon_cgroup_create(o, &err);
	if (!cg)
		fail_msg("rmon_cgroup_create: %s", htc_strerror(err));
	return cg;
}

/* Builds the fake tree of fake_v2() and creates its task group htc.4242.1 in it (also kept in
 * F->cg, deleted by fake_free()). */
static struct rmon_cgroup *fake_v2_group(struct fake *f)
{
	fake_v2(f);
	struct rmon_cgroup_opts o = fake_opts(f);
	f->cg = create_ok(&o);
	return f->cg;
}

static void test_v2_fake_limits(void **state)
{
	(void)state;
	struct fake f;
	struct rmon_cgroup *cg = fake_v2_group(&f);
	assert_int_equal(rmon_cgroup_detect(f.root), RMON_CG_V2);
	assert_int_equal(rmon_cgroup_version(cg), RMON_CG_V2);
	assert_string_equal(rmon_cgroup_path(cg), f.group);
	/* Controllers passed down: our own cgroup lacked cpu, cpuset, io, pids; htc had none. */
	expect_file(f.own, "cgroup.subtree_control", "+cpu +cpuset +io +pids");
	expect_file(f.base, "cgroup.subtree_control", "+cpu +io +memory +pids");

	assert_int_equal(rmon_cgroup_set_memory(cg, 100 << 20, 1), 0);
	expect_file(f.group, "memory.high", "104857600");
	expect_file(f.group, "memory.max", "121634816"); /* + max(5 %, 16 MB) */
	expect_file(f.group, "memory.swap.max", "0");
	expect_file(f.group, "memory.oom.group", "1");
	assert_int_equal(rmon_cgroup_set_memory(cg, 1000LL << 20, 1), 0);
	expect_file(f.group, "memory.max", "1101004800"); /* + 5 % */
	assert_int_equal(rmon_cgroup_set_memory(cg, 100 << 20, 0), 0);
	expect_file(f.group, "memory.max", "104857600");
	expect_file(f.group, "memory.high", "max");
	assert_int_equal(rmon_cgroup_set_memory(cg, -1, 1), 0);
	expect_file(f.group, "memory.max", "max");
	expect_file(f.group, "memory.swap.max", "max");

	assert_int_equal(rmon_cgroup_set_cpu(cg, 1.5), 0);
	expect_file(f.group, "cpu.max", "150000 100000");
	assert_int_equal(rmon_cgroup_set_cpu(cg, 0), 0);
	expect_file(f.group, "cpu.max", "max 100000");
	assert_int_equal(rmon_cgroup_set_pids(cg, 10), 0);
	expect_file(f.group, "pids.max", "10");
	/* No cpuset controller in this group. */
	assert_int_equal(rmon_cgroup_set_cpuset(cg, "0"), HTC_EUNSUP);

	int fds[4];
	int n = rmon_cgroup_open_procs(cg, fds, 4);
	assert_int_equal(n, 1);
	assert_int_equal(write(fds[0], "0", 1), 1);
	/* the group keeps it open: asked again, the same descriptor */
	int again;
	assert_int_equal(rmon_cgroup_open_procs(cg, &again, 1), 1);
	assert_int_equal(again, fds[0]);
	expect_file(f.group, "cgroup.procs", "0");
	fake_free(&f);
}

/* v2 reset for the pool: what cannot be reset is baselined (CPU time, memory.events), the
 * peak is reset through its descriptor, page cache is reclaimed, the limits of the last task
 * are lifted only when the next one does not set its own (rmon_cgroup_settle). */
static void test_v2_fake_reset(void **state)
{
	(void)state;
	struct fake f;
	struct rmon_cgroup *cg = fake_v2_group(&f);
	put(f.group, "memory.reclaim", "");
	put(f.group, "pids.current", "0\n");
	assert_int_equal(rmon_cgroup_set_memory(cg, 100 << 20, 1), 0);
	assert_int_equal(rmon_cgroup_set_pids(cg, 10), 0);
	/* The first task's figures, then it ends leaving 700 bytes of cache and 300 of kernel. */
	put(f.group, "memory.current", "1000\n");
	put(f.group, "memory.peak", "900000\n");
	put(f.group, "memory.stat", "anon 0\nfile 700\n");
	put(f.group, "cpu.stat", "usage_usec 2500\n");
	put(f.group, "memory.events", "low 0\nhigh 3\nmax 1\noom 2\noom_kill 1\n");
	struct rmon_cg_stats st;
	rmon_cgroup_stats(cg, &st);
	assert_int_equal(st.oom_kills, 1);
	assert_int_equal(rmon_cgroup_reset(cg), 0);
	/* so little cache is left charged (dropping it costs more than it is worth) */
	expect_file(f.group, "memory.reclaim", "");
	char *peak = get(f.group, "memory.peak");
	assert_int_equal(strncmp(peak, "reset", 5), 0);
	free(peak);
	/* What the kernel shows after the reset, then the second task's use on top. */
	put(f.group, "memory.peak", "1000\n");
	rmon_cgroup_stats(cg, &st);
	assert_int_equal(st.cpu_ns, 0);
	assert_int_equal(st.oom_kills, 0);
	assert_int_equal(st.oom_events, 0);
	assert_int_equal(st.high_events, 0);
	assert_int_equal(st.mem_peak, 700); /* the 300 kernel bytes are taken out */
	put(f.group, "memory.current", "5300\n");
	put(f.group, "memory.peak", "6300\n");
	put(f.group, "cpu.stat", "usage_usec 4500\n");
	put(f.group, "memory.events", "low 0\nhigh 3\nmax 1\noom 2\noom_kill 2\n");
	rmon_cgroup_stats(cg, &st);
	assert_int_equal(st.cpu_ns, 2000000);
	assert_int_equal(st.mem_peak, 6000);
	assert_int_equal(st.mem_current, 5000);
	assert_int_equal(st.oom_kills, 1);
	/* The next task sets only a process limit: the memory limit is lifted. */
	assert_int_equal(rmon_cgroup_set_pids(cg, 20), 0);
	assert_int_equal(rmon_cgroup_settle(cg), 0);
	expect_file(f.group, "memory.max", "max");
	expect_file(f.group, "memory.high", "max");
	expect_file(f.group, "memory.oom.group", "0");
	expect_file(f.group, "pids.max", "20");
	/* A zombie still charged: not reusable. */
	put(f.group, "pids.current", "1\n");
	assert_int_equal(rmon_cgroup_reset(cg), -EBUSY);
	/* Over 1 MiB of cache is dropped (and the zombie still refuses the group). */
	put(f.group, "memory.current", "2100000\n");
	put(f.group, "memory.stat", "anon 0\nfile 2000000\n");
	assert_int_equal(rmon_cgroup_reset(cg), -EBUSY);
	expect_file(f.group, "memory.reclaim", "2100000");
	/* Without memory.peak (before Linux 5.19) the peak cannot be reset. */
	put(f.group, "pids.current", "0\n");
	fake_free(&f);
	cg = fake_v2_group(&f);
	put(f.group, "memory.current", "0\n");
	char *p = path_join(f.group, "memory.peak");
	unlink(p);
	free(p);
	assert_int_equal(rmon_cgroup_reset(cg), HTC_EUNSUP);
	fake_free(&f);
}

static void test_v2_fake_stats(void **state)
{
	(void)state;
	struct fake f;
	int fds_before = open_fds();
	struct rmon_cgroup *cg = fake_v2_group(&f);
	put(f.group, "memory.current", "1000\n");
	put(f.group, "memory.peak", "5000\n");
	put(f.group, "memory.stat", "anon 300\nfile 700\nkernel 10\n");
	put(f.group, "memory.high", "max\n");
	put(f.group, "memory.max", "8192\n");
	put(f.group, "cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
	put(f.group, "io.stat",
	    "8:0 rbytes=100 wbytes=200 rios=1 wios=2\n8:16 rbytes=1 wbytes=2\n");
	put(f.group, "memory.events", "low 0\nhigh 3\nmax 1\noom 2\noom_kill 1\n");
	put(f.group, "pids.current", "4\n");
	struct rmon_cg_stats st;
	assert_int_equal(rmon_cgroup_stats(cg, &st), 0);
	assert_int_equal(st.mem_current, 1000);
	assert_int_equal(st.mem_peak, 5000);
	assert_int_equal(st.mem_cache, 700);
	assert_int_equal(st.mem_anon, 300);
	assert_int_equal(st.mem_limit, 8192);
	assert_int_equal(st.cpu_ns, 2500000);
	assert_int_equal(st.io_read, 101);
	assert_int_equal(st.io_write, 202);
	assert_int_equal(st.high_events, 3);
	assert_int_equal(st.oom_events, 3);
	assert_int_equal(st.oom_kills, 1);
	assert_int_equal(st.pids_current, 4);
	/* The statistics files stay open (read again with pread, new values are seen). */
	int fds_open = open_fds();
	assert_true(fds_open > fds_before);
	put(f.group, "pids.current", "5\n");
	put(f.group, "memory.stat", "anon 310\nfile 690\n");
	assert_int_equal(rmon_cgroup_stats(cg, &st), 0);
	assert_int_equal(open_fds(), fds_open);
	assert_int_equal(st.pids_current, 5);
	assert_int_equal(st.mem_cache, 690);
	assert_int_equal(st.mem_anon, 310);
	/* Only the groups of fields asked for. */
	assert_int_equal(rmon_cgroup_stats_some(cg, &st, RMON_CGS_PIDS), 0);
	assert_int_equal(st.pids_current, 5);
	assert_int_equal(st.mem_current, -1);
	assert_int_equal(st.cpu_ns, -1);
	assert_int_equal(st.io_read, -1);
	/* Without memory.peak (kernels before 5.19) the peak is the largest current seen. */
	char *peak = path_join(f.group, "memory.peak");
	unlink(peak);
	free(peak);
	put(f.group, "memory.current", "7000\n");
	rmon_cgroup_stats(cg, &st);
	put(f.group, "memory.current", "2000\n");
	rmon_cgroup_stats(cg, &st);
	assert_int_equal(st.mem_current, 2000);
	assert_int_equal(st.mem_peak, 7000);

	/* Members. Pids beyond pid_max, so that nothing real is ever signalled. */
	put(f.group, "cgroup.procs", "99999998\n99999999\n");
	pid_t *pids;
	size_t n;
	assert_int_equal(rmon_cgroup_pids(cg, &pids, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pids[0], 99999998);
	free(pids);
	assert_int_equal(rmon_cgroup_is_empty(cg), 0);
	/* cgroup.kill is used; the fake group never empties. */
	assert_int_equal(rmon_cgroup_kill_all(cg, 5), -EBUSY);
	expect_file(f.group, "cgroup.kill", "1");
	put(f.group, "cgroup.procs", "");
	assert_int_equal(rmon_cgroup_is_empty(cg), 1);
	assert_int_equal(rmon_cgroup_kill_all(cg, 5), 0);

	/* Notification: inotify on memory.events. */
	int fd = rmon_cgroup_memory_fd(cg);
	assert_true(fd >= 0);
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 0), 0);
	put(f.group, "memory.events", "low 0\nhigh 4\nmax 1\noom 2\noom_kill 1\n");
	assert_int_equal(poll(&pf, 1, 1000), 1);
	fake_free(&f);
	/* Every descriptor of the group is closed by rmon_cgroup_delete. */
	assert_int_equal(open_fds(), fds_before);
}

/* Without optional controllers, only memory and pids are passed down, and no CPU quota,
 * pinning or block I/O is available. */
static void test_v2_fake_default_controllers(void **state)
{
	(void)state;
	struct fake f;
	fake_v2(&f);
	struct rmon_cgroup_opts o = fake_opts(&f);
	o.controllers = 0;
	f.cg = create_ok(&o);
	expect_file(f.own, "cgroup.subtree_control", "+pids");
	expect_file(f.base, "cgroup.subtree_control", "+memory +pids");
	assert_int_equal(rmon_cgroup_set_cpu(f.cg, 1.0), HTC_EUNSUP);
	assert_int_equal(rmon_cgroup_set_cpuset(f.cg, "0"), HTC_EUNSUP);
	assert_int_equal(rmon_cgroup_set_pids(f.cg, 3), 0);
	put(f.group, "io.stat", "8:0 rbytes=100 wbytes=200\n");
	struct rmon_cg_stats st;
	rmon_cgroup_stats(f.cg, &st);
	assert_int_equal(st.io_read, -1);
	/* A later group that wants the CPU quota enables the cpu controller then. */
	rmon_cgroup_delete(f.cg);
	f.cg = NULL;
	o.controllers = RMON_CG_WANT_CPU;
	f.cg = create_ok(&o);
	expect_file(f.base, "cgroup.subtree_control", "+cpu");
	assert_int_equal(rmon_cgroup_set_cpu(f.cg, 1.0), 0);
	fake_free(&f);
}

/* A fake v1 layout: one hierarchy per controller under the directory returned (caller removes
 * it with ts_tmpdir_remove), our own group "/" in each. */
static char *fake_v1(char **selfcg)
{
	char *root = ts_tmpdir_create("rmon-cg1");
	static const char *const ctrl[] = {"memory", "cpu",     "cpuacct", "pids",
	                                   "cpuset", "freezer", "blkio"};
	for (size_t i = 0; i < sizeof ctrl / sizeof *ctrl; i++) {
		char *d = path_join(root, ctrl[i]);
		assert_int_equal(path_mkdir_p(d, 0755), 0);
		put(d, "cgroup.procs", "");
		if (i == 0)
			put(d, "memory.limit_in_bytes", "9223372036854771712\n");
		free(d);
	}
	*selfcg = path_join(root, "self_cgroup");
	FILE *s = fopen(*selfcg, "w");
	assert_non_null(s);
	fputs("7:blkio:/\n6:freezer:/\n5:cpuset:/\n4:pids:/\n3:cpuacct:/\n2:cpu:/\n"
	      "1:memory:/\n",
	      s);
	fclose(s);
	return root;
}

static int in_hierarchy(const char *root, const char *ctrl, const char *group)
{
	char *p = xasprintf("%s/%s/htc/%s", root, ctrl, group);
	int r = path_exists(p);
	free(p);
	return r;
}

/* v1: groups only in the hierarchies needed; the layout is discovered once, and again when a
 * parent group has vanished. */
static void test_v1_fake_layout_cache(void **state)
{
	(void)state;
	char *selfcg;
	char *root = fake_v1(&selfcg);
	struct rmon_cgroup_opts o = {
	    .root = root, .proc_self_cgroup = selfcg, .owner = 4242, .name = "htc.4242.1"};
	assert_int_equal(rmon_cgroup_detect(root), RMON_CG_V1);
	struct rmon_cgroup *cg = create_ok(&o);
	static const char *const used[] = {"memory", "cpuacct", "pids", "freezer"};
	static const char *const unused[] = {"cpu", "cpuset", "blkio"};
	for (size_t i = 0; i < 4; i++)
		if (!in_hierarchy(root, used[i], "htc.4242.1"))
			fail_msg("no group in the %s hierarchy", used[i]);
	for (size_t i = 0; i < 3; i++)
		if (in_hierarchy(root, unused[i], "htc.4242.1"))
			fail_msg("a group in the %s hierarchy, which was not asked for", unused[i]);
	assert_int_equal(rmon_cgroup_set_cpu(cg, 1.0), HTC_EUNSUP);
	assert_int_equal(rmon_cgroup_destroy(cg, 0), 0);
	rmon_cgroup_delete(cg);
	assert_false(in_hierarchy(root, "memory", "htc.4242.1"));

	/* Cached: our own group moves, the next group still goes where the layout said. */
	char *moved = path_join(root, "memory/moved");
	assert_int_equal(mkdir(moved, 0755), 0);
	FILE *s = fopen(selfcg, "w");
	assert_non_null(s);
	fputs("4:pids:/moved\n3:cpuacct:/moved\n1:memory:/moved\n", s);
	fclose(s);
	o.name = "htc.4242.2";
	o.controllers = RMON_CG_WANT_CPU;
	cg = create_ok(&o);
	assert_true(in_hierarchy(root, "memory", "htc.4242.2"));
	assert_true(in_hierarchy(root, "cpu", "htc.4242.2"));
	assert_int_equal(rmon_cgroup_set_cpu(cg, 1.0), -ENOENT); /* a directory, no kernel */
	assert_int_equal(rmon_cgroup_destroy(cg, 0), 0);
	rmon_cgroup_delete(cg);

	/* The parent vanished: the layout is discovered again (our group is /moved now). */
	char *base = path_join(root, "memory/htc");
	assert_int_equal(path_rm_rf(base), 0);
	o.name = "htc.4242.3";
	o.controllers = 0;
	cg = create_ok(&o);
	char *want = path_join(root, "memory/moved/htc/htc.4242.3");
	assert_string_equal(rmon_cgroup_path(cg), want);
	assert_int_equal(rmon_cgroup_destroy(cg, 0), 0);
	rmon_cgroup_delete(cg);
	free(want);
	free(base);
	free(moved);
	free(selfcg);
	ts_tmpdir_remove(root);
}

/* The memory group of another program's process, from its /proc/PID/cgroup text. */
static void test_memory_dir_of(void **state)
{
	(void)state;
	const char *text = "13:pids:/docker/abc\n12:cpu,memory:/docker/abc\n0::/system.slice/x\n";
	char *d = rmon_cgroup_memory_dir_of("/r", RMON_CG_V1, text);
	assert_string_equal(d, "/r/memory/docker/abc");
	free(d);
	d = rmon_cgroup_memory_dir_of(NULL, RMON_CG_V2, text);
	assert_string_equal(d, "/sys/fs/cgroup/system.slice/x");
	free(d);
	/* a word that only begins with "memory" is another controller */
	assert_null(rmon_cgroup_memory_dir_of("/r", RMON_CG_V1, "4:memoryx:/a\n"));
	assert_null(rmon_cgroup_memory_dir_of("/r", RMON_CG_V2, "4:memory:/a\n"));
	assert_null(rmon_cgroup_memory_dir_of("/r", RMON_CG_NONE, text));
	/* the CPU accounting group: the cpuacct word of a shared line, under ROOT/cpuacct */
	d = rmon_cgroup_cpu_dir_of("/r", RMON_CG_V1, "12:memory:/m\n3:cpu,cpuacct:/docker/abc\n");
	assert_string_equal(d, "/r/cpuacct/docker/abc");
	free(d);
	d = rmon_cgroup_cpu_dir_of("/r", RMON_CG_V2, text);
	assert_string_equal(d, "/r/system.slice/x");
	free(d);
	assert_null(rmon_cgroup_cpu_dir_of("/r", RMON_CG_V1, "12:cpu,memory:/docker/abc\n"));
}

static void test_v2_fake_refusals(void **state)
{
	(void)state;
	struct fake f;
	fake_v2(&f);
	struct rmon_cgroup_opts o = fake_opts(&f);
	int err = 0;
	/* The memory controller does not reach "htc": not usable. */
	put(f.base, "cgroup.controllers", "cpu pids\n");
	assert_null(rmon_cgroup_create(&o, &err));
	assert_int_equal(err, HTC_EUNSUP);
	/* No memory controller at the root: no v2; no memory hierarchy: nothing. */
	put(f.root, "cgroup.controllers", "cpu pids\n");
	assert_int_equal(rmon_cgroup_detect(f.root), RMON_CG_NONE);
	err = 0;
	assert_null(rmon_cgroup_create(&o, &err));
	assert_int_equal(err, HTC_EUNSUP);
	fake_free(&f);
}

/* Stale groups: the owner is gone, or its pid now names a later process (another start time),
 * or the name has the older form without a start time and this process's pid. */
static void test_v2_fake_stale(void **state)
{
	(void)state;
	struct fake f;
	fake_v2(&f);
	path_rm_rf(f.group); /* its owner 4242 may or may not be alive */
	unsigned long long me = rmon_proc_start_ticks(getpid());
	unsigned long long parent = rmon_proc_start_ticks(getppid());
	assert_true(me > 0 && parent > 0);
	char *gone = xasprintf("%s/htc.99999999.%llu.3", f.base, me);
	char *gone_old = path_join(f.base, "htc.99999999.4");
	char *alive = xasprintf("%s/htc.%ld.%llu.7", f.base, (long)getpid(), me);
	char *mine_old = xasprintf("%s/htc.%ld.8", f.base, (long)getpid());
	char *mine_earlier = xasprintf("%s/htc.%ld.%llu.9", f.base, (long)getpid(), me + 1);
	char *parent_alive = xasprintf("%s/htc.%ld.%llu.1", f.base, (long)getppid(), parent);
	char *parent_reused = xasprintf("%s/htc.%ld.%llu.2", f.base, (long)getppid(), parent + 7);
	char *other = path_join(f.base, "htc.notapid");
	char *other2 = path_join(f.base, "htc.12.x.3");
	char *const made[] = {gone,         gone_old,      alive, mine_old, mine_earlier,
	                      parent_alive, parent_reused, other, other2};
	for (size_t i = 0; i < sizeof made / sizeof *made; i++)
		assert_int_equal(mkdir(made[i], 0755), 0);
	struct rmon_cgroup_opts o = {.root = f.root, .proc_self_cgroup = f.selfcg};
	assert_int_equal(rmon_cgroup_cleanup_stale(&o), 5);
	assert_false(path_exists(gone));
	assert_false(path_exists(gone_old));
	assert_false(path_exists(mine_old));
	assert_false(path_exists(mine_earlier));
	assert_false(path_exists(parent_reused));
	assert_true(path_exists(alive));
	assert_true(path_exists(parent_alive));
	assert_true(path_exists(other));
	assert_true(path_exists(other2));
	for (size_t i = 0; i < sizeof made / sizeof *made; i++)
		free(made[i]);
	fake_free(&f);
}

/* ---- real v1 ----------------------------------------------------------------------------- */

static int in_group(pid_t pid, const char *name)
{
	char p[64], buf[4096];
	snprintf(p, sizeof p, "/proc/%ld/cgroup", (long)pid);
	if (rmon_read_file(p, buf, sizeof buf) < 0)
		return 0;
	return strstr(buf, name) != NULL;
}

static pid_t spawn_in(struct rmon_cgroup *cg, const char *const *argv)
{
	int fds[8];
	int n = rmon_cgroup_open_procs(cg, fds, 8);
	assert_true(n >= 1);
	struct rmon_spawn_args a = {.argv = argv,
	                            .stdin_fd = -1,
	                            .stdout_fd = -1,
	                            .stderr_fd = -1,
	                            .cgroup_fds = fds,
	                            .n_cgroup_fds = n};
	enum rmon_spawn_stage stage;
	int cerr;
	pid_t pid = rmon_spawn(&a, &stage, &cerr); /* the group keeps FDS open */
	assert_true(pid > 0);
	assert_int_equal(stage, RMON_SPAWN_OK);
	return pid;
}

/* Starts helper_alloc MB SECONDS inside CG; returns its pid. */
static pid_t spawn_alloc_in(struct rmon_cgroup *cg, const char *mb, const char *seconds)
{
	char *alloc = test_helper_path(helper_dir, "alloc");
	const char *argv[] = {alloc, mb, seconds, NULL};
	pid_t pid = spawn_in(cg, argv);
	free(alloc);
	return pid;
}

static void test_v1_real(void **state)
{
	(void)state;
	if (rmon_cgroup_detect(NULL) != RMON_CG_V1)
		fail_msg("this test needs cgroup v1 at /sys/fs/cgroup (the test machine has it)");
	struct rmon_cgroup_opts o = {.controllers = RMON_CG_WANT_CPU};
	struct rmon_cgroup *cg = create_ok(&o);
	char *dir = xstrdup(rmon_cgroup_path(cg));
	assert_true(path_exists(dir));
	assert_int_equal(rmon_cgroup_set_memory(cg, 200 << 20, 1), 0);
	expect_file(dir, "memory.limit_in_bytes", "209715200\n");
	assert_int_equal(rmon_cgroup_set_cpu(cg, 1.0), 0);
	assert_int_equal(rmon_cgroup_set_pids(cg, 50), 0);

	pid_t pid = spawn_alloc_in(cg, "50", "0.3");
	/* In the group from its first instruction. */
	assert_true(in_group(pid, rmon_cgroup_name(cg)));
	assert_int_equal(rmon_cgroup_is_empty(cg), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct rmon_cg_stats st;
	rmon_cgroup_stats(cg, &st);
	assert_true(st.mem_peak >= 50LL << 20);
#if !defined(__SANITIZE_ADDRESS__) /* a sanitized helper carries shadow memory */
	assert_true(st.mem_peak < 60LL << 20);
#endif
	assert_true(st.cpu_ns > 0);
	assert_int_equal(st.mem_limit, 200 << 20);
	assert_int_equal(rmon_cgroup_is_empty(cg), 1);
	assert_int_equal(rmon_cgroup_destroy(cg, 500), 0);
	assert_false(path_exists(dir));
	rmon_cgroup_delete(cg);
	free(dir);
}

/* The group's task runs again with its 100 MB (no longer held at the limit). */
static bool resumed_to_100mb(void *arg)
{
	struct rmon_cg_stats st;
	rmon_cgroup_stats(arg, &st);
	return st.under_oom == 0 && st.mem_current >= 100LL << 20;
}

static void test_v1_memory_pause_and_kill(void **state)
{
	(void)state;
	struct rmon_cgroup *cg = create_ok(NULL);
	assert_int_equal(rmon_cgroup_set_memory(cg, 30 << 20, 1), 0);
	int fd = rmon_cgroup_memory_fd(cg);
	assert_true(fd >= 0);
	pid_t pid = spawn_alloc_in(cg, "100", "5");
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 3000), 1);
	struct rmon_cg_stats st;
	rmon_cgroup_stats(cg, &st);
	assert_int_equal(st.under_oom, 1); /* paused at the limit, not killed */
	assert_int_equal(kill(pid, 0), 0);
	/* Raising the limit lets it go on (it then holds 100 MB for 5 s). */
	assert_int_equal(rmon_cgroup_set_memory(cg, 200 << 20, 1), 0);
	assert_true(ts_poll_until(resumed_to_100mb, cg, TS_WAIT_MS));
	assert_int_equal(rmon_cgroup_kill_all(cg, 1000), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(rmon_cgroup_destroy(cg, 500), 0);
	rmon_cgroup_delete(cg);
}

static bool three_pids(void *arg)
{
	pid_t *pids;
	size_t n = 0;
	assert_int_equal(rmon_cgroup_pids(arg, &pids, &n), 0);
	free(pids);
	return n == 3;
}

static void test_v1_kill_tree_and_stale(void **state)
{
	(void)state;
	/* The "monitor" owning the group is a child of ours; it dies just before the cleanup
	 * (until then nobody, e.g. another process running a cleanup, sees the group stale). */
	pid_t owner = fork();
	if (owner == 0) {
		pause();
		_exit(0);
	}
	struct rmon_cgroup_opts o = {.owner = owner};
	struct rmon_cgroup *cg = create_ok(&o);
	char *dir = xstrdup(rmon_cgroup_path(cg));
	/* A tree left running by the dead monitor. */
	const char *argv[] = {"sh", "-c", "sleep 30 & sleep 30 & wait", NULL};
	pid_t pid = spawn_in(cg, argv);
	assert_true(ts_poll_until(three_pids, cg, TS_WAIT_MS));
	rmon_cgroup_delete(cg); /* forget it without removing it */
	kill(owner, SIGKILL);
	assert_int_equal(waitpid(owner, NULL, 0), owner);
	int removed = rmon_cgroup_cleanup_stale(NULL);
	assert_true(removed >= 1);
	assert_false(path_exists(dir));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	free(dir);
}

static void test_spawn_errors_and_stdio(void **state)
{
	(void)state;
	enum rmon_spawn_stage stage;
	int cerr, status;
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	const char *missing[] = {"no-such-program-htc", NULL};
	struct rmon_spawn_args a = {
	    .argv = missing, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = devnull};
	pid_t pid = rmon_spawn(&a, &stage, &cerr);
	assert_true(pid > 0);
	assert_int_equal(stage, RMON_SPAWN_EXEC);
	assert_int_equal(cerr, ENOENT);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 127);
	close(devnull);

	char tmpl[] = "/tmp/rmon-spawn-XXXXXX";
	int out = mkstemp(tmpl);
	assert_true(out >= 0);
	const char *echo[] = {"sh", "-c", "echo \"$HTC_X\" $(pwd)", NULL};
	const char *env[] = {"HTC_X=hello", "PATH=/usr/bin:/bin", NULL};
	struct rmon_spawn_args b = {.argv = echo,
	                            .env = env,
	                            .cwd = "/",
	                            .stdin_fd = -1,
	                            .stdout_fd = out,
	                            .stderr_fd = -1};
	pid = rmon_spawn(&b, &stage, &cerr);
	assert_int_equal(stage, RMON_SPAWN_OK);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
	char buf[64];
	assert_true(rmon_read_file(tmpl, buf, sizeof buf) > 0);
	assert_string_equal(buf, "hello /\n");
	close(out);
	unlink(tmpl);

	char *found = rmon_spawn_lookup("sh", env);
	assert_non_null(found);
	assert_true(strcmp(found, "/usr/bin/sh") == 0 || strcmp(found, "/bin/sh") == 0);
	free(found);
	assert_null(rmon_spawn_lookup("no-such-program-htc", env));
}

/* rmon_spawn_start: the caller gets the pid at once; the child runs with copies of its
 * arguments (the caller's are freed and overwritten right after the call), joins the cgroup
 * descriptors it is given, and a failure to execute or to join is written to its stderr with
 * status 127. */
static void test_spawn_start(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/rmon-spawn-start-XXXXXX";
	int out = mkstemp(tmpl);
	assert_true(out >= 0);
	char *arg = xstrdup("echo \"$HTC_Y\" $(pwd)");
	char *var = xstrdup("HTC_Y=copied");
	const char *argv[] = {"sh", "-c", arg, NULL};
	const char *env[] = {var, "PATH=/usr/bin:/bin", NULL};
	struct rmon_spawn_args a = {.argv = argv,
	                            .env = env,
	                            .cwd = "/",
	                            .stdin_fd = -1,
	                            .stdout_fd = out,
	                            .stderr_fd = -1};
	pid_t pid = rmon_spawn_start(&a);
	assert_true(pid > 0);
	memset(arg, 'x', strlen(arg));
	memset(var, 'x', strlen(var));
	free(arg);
	free(var);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	char buf[128];
	assert_true(rmon_read_file(tmpl, buf, sizeof buf) > 0);
	assert_string_equal(buf, "copied /\n");

	/* not executable: 127 and the reason on stderr */
	assert_int_equal(ftruncate(out, 0), 0);
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	const char *bad[] = {"/nonexistent/htc-program", NULL};
	struct rmon_spawn_args b = {.argv = bad, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = out};
	pid = rmon_spawn_start(&b);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 127);
	assert_true(rmon_read_file(tmpl, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, "cannot execute '/nonexistent/htc-program'"));

	/* a cgroup.procs descriptor that refuses the write: 127, said on stderr */
	assert_int_equal(ftruncate(out, 0), 0);
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	int ro = open("/dev/null", O_RDONLY);
	assert_true(ro >= 0);
	const char *tru[] = {"true", NULL};
	struct rmon_spawn_args c = {.argv = tru,
	                            .stdin_fd = -1,
	                            .stdout_fd = -1,
	                            .stderr_fd = out,
	                            .cgroup_fds = &ro,
	                            .n_cgroup_fds = 1};
	pid = rmon_spawn_start(&c);
	assert_true(pid > 0);
	close(ro);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 127);
	assert_true(rmon_read_file(tmpl, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, "cannot move 'true' into its cgroup"));

	/* many at once: every one runs and ends */
	pid_t pids[40];
	for (int i = 0; i < 40; i++) {
		pids[i] = rmon_spawn_start(&(struct rmon_spawn_args){
		    .argv = tru, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1});
		assert_true(pids[i] > 0);
	}
	for (int i = 0; i < 40; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	close(out);
	unlink(tmpl);
}

static void put_program(const char *dir, const char *name, mode_t mode)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
	free(p);
}

/* A program found once is not searched for again until it is gone or not executable (a
 * shell's hash table); a PATH of its own is a lookup of its own. */
static void test_spawn_lookup_cache(void **state)
{
	(void)state;
	char *tmp = ts_tmpdir_create("rmon-lookup");
	char *a = path_join(tmp, "a"), *b = path_join(tmp, "b");
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	char *path_ab = xasprintf("PATH=%s:%s", a, b), *path_a = xasprintf("PATH=%s", a);
	const char *env_ab[] = {path_ab, NULL}, *env_a[] = {path_a, NULL};
	char *in_a = path_join(a, "htc-prog"), *in_b = path_join(b, "htc-prog");

	put_program(b, "htc-prog", 0755);
	char *found = rmon_spawn_lookup("htc-prog", env_ab);
	assert_string_equal(found, in_b);
	free(found);
	/* an earlier directory gets one: the one found is still used */
	put_program(a, "htc-prog", 0755);
	found = rmon_spawn_lookup("htc-prog", env_ab);
	assert_string_equal(found, in_b);
	free(found);
	/* another PATH is searched */
	found = rmon_spawn_lookup("htc-prog", env_a);
	assert_string_equal(found, in_a);
	free(found);
	/* the one found is no longer executable, then gone: searched again */
	assert_int_equal(chmod(in_a, 0644), 0);
	found = rmon_spawn_lookup("htc-prog", env_ab);
	assert_string_equal(found, in_b);
	free(found);
	assert_int_equal(unlink(in_b), 0);
	found = rmon_spawn_lookup("htc-prog", env_ab);
	assert_string_equal(found, in_a); /* not executable: the execvp fallback */
	free(found);
	assert_int_equal(unlink(in_a), 0);
	assert_null(rmon_spawn_lookup("htc-prog", env_ab));
	assert_null(rmon_spawn_lookup("htc-prog", env_a));

	free(in_a);
	free(in_b);
	free(path_ab);
	free(path_a);
	assert_int_equal(rmdir(a), 0);
	assert_int_equal(rmdir(b), 0);
	ts_tmpdir_remove(tmp);
	free(a);
	free(b);
}

int main(void)
{
	test_helper_dir(helper_dir, sizeof helper_dir);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v2_fake_limits),
	    cmocka_unit_test(test_v2_fake_stats),
	    cmocka_unit_test(test_v2_fake_reset),
	    cmocka_unit_test(test_v2_fake_refusals),
	    cmocka_unit_test(test_memory_dir_of),
	    cmocka_unit_test(test_v2_fake_default_controllers),
	    cmocka_unit_test(test_v1_fake_layout_cache),
	    cmocka_unit_test(test_v2_fake_stale),
	    cmocka_unit_test(test_v1_real),
	    cmocka_unit_test(test_v1_memory_pause_and_kill),
	    cmocka_unit_test(test_v1_kill_tree_and_stale),
	    cmocka_unit_test(test_spawn_errors_and_stdio),
	    cmocka_unit_test(test_spawn_lookup_cache),
	    cmocka_unit_test(test_spawn_start),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
