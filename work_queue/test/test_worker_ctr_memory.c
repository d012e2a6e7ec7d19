/* test_worker_ctr_memory.c: unit tests of the worker's follower of a container outside its
 * task's cgroup (worker_ctr_memory.h), on a fake engine (ts_fake_engine.h), a fake cgroup v1
 * root and a fake process table: nothing before the runner writes the id or while the container
 * has no process, its group's figures once found, at its limit only when it waits there charged
 * to its limit, a group that is not the container's refused, its CPU time (none when its
 * accounting group is not found), the update calls (memory, cores) and their errors, and the OOM
 * killer turned back on, the removal of a killed runner's container; and a cgroup v2 tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "docker_api.h"
#include "path.h"
#include "ts_fake_engine.h"
#include "ts_tmpdir.h"
#include "worker_ctr_memory.h"
#include "xalloc.h"

#include "banned.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define OK_JSON(body)                                                                              \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"               \
	"Content-Length: " #body "\r\n\r\n"

struct fx {
	char *dir, *sock, *root, *proc, *id_file, *group, *cpu_group;
	struct docker_api *api;
	struct worker_ctr_memory *c;
	pid_t engine;
};

static char *joined(const char *a, const char *b)
{
	return path_join(a, b);
}

static void put(const char *dir, const char *file, const char *text)
{
	char *p = joined(dir, file);
	ts_write_file(p, text);
	free(p);
}

static void mkdirs(const char *p)
{
	char *q = xstrdup(p);
	for (char *s = q + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(q, 0755);
			*s = '/';
		}
	mkdir(q, 0755);
	free(q);
}

/* The group's figures: USAGE and LIMIT in MB, UNDER_OOM. */
static void group(struct fx *f, int usage, int limit, int under_oom)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%lld\n", (long long)usage << 20);
	put(f->group, "memory.usage_in_bytes", buf);
	snprintf(buf, sizeof buf, "%lld\n", (long long)limit << 20);
	put(f->group, "memory.limit_in_bytes", buf);
	snprintf(buf, sizeof buf, "oom_kill_disable 1\nunder_oom %d\noom_kill 0\n", under_oom);
	put(f->group, "memory.oom_control", buf);
}

static void engine(struct fx *f, const char *response, int n)
{
	if (f->engine > 0) {
		int st;
		kill(f->engine, SIGKILL);
		waitpid(f->engine, &st, 0);
	}
	f->engine = ts_fake_engine(f->sock, response, n);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->dir = ts_tmpdir_create("test_worker_ctr_memory");
	f->sock = joined(f->dir, "docker.sock");
	f->root = joined(f->dir, "cgroup");
	f->proc = joined(f->dir, "proc");
	f->id_file = joined(f->dir, WORKER_CTR_ID_FILE);
	f->group = joined(f->root, "memory/docker/" ID);
	mkdirs(f->group);
	f->cpu_group = joined(f->root, "cpuacct/docker/" ID);
	mkdirs(f->cpu_group);
	put(f->cpu_group, "cpuacct.usage", "2500000000\n");
	mkdirs(f->proc);
	char *pd = joined(f->proc, "4242");
	mkdirs(pd);
	put(pd, "cgroup",
	    "13:pids:/docker/" ID "\n12:memory:/docker/" ID "\n3:cpu,cpuacct:/docker/" ID
	    "\n0::/\n");
	free(pd);
	char *top = joined(f->root, "memory");
	put(top, "memory.limit_in_bytes", "9223372036854771712\n");
	free(top);
	group(f, 100, 200, 0);
	char *err = NULL;
	f->api = docker_api_create(f->sock, &err);
	assert_non_null(f->api);
	f->c = worker_ctr_memory_create(f->api, f->id_file, f->root, f->proc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->engine > 0) {
		int st;
		kill(f->engine, SIGKILL);
		waitpid(f->engine, &st, 0);
	}
	worker_ctr_memory_delete(f->c);
	docker_api_delete(f->api);
	ts_tmpdir_remove(f->dir);
	free(f->sock);
	free(f->root);
	free(f->proc);
	free(f->id_file);
	free(f->group);
	free(f->cpu_group);
	free(f);
	return 0;
}

static const char *const RUNNING = OK_JSON(22) "{\"State\":{\"Pid\":4242}}";

static void test_found_and_read(void **state)
{
	struct fx *f = *state;
	struct worker_ctr_memory_now now;
	char *err = NULL;
	/* no id yet: nothing asked of the engine */
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 0);
	assert_null(worker_ctr_memory_id(f->c));
	/* made, not started */
	ts_write_file(f->id_file, ID);
	engine(f, OK_JSON(19) "{\"State\":{\"Pid\":0}}", 1);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 0);
	assert_string_equal(worker_ctr_memory_id(f->c), ID);
	/* running: read in its group */
	engine(f, RUNNING, 1);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 1);
	assert_null(err);
	assert_true(now.usage_mb > 99.9 && now.usage_mb < 100.1);
	assert_int_equal(now.limit_mb, 200);
	assert_false(now.at_limit);
	assert_true(now.cpu_s > 2.49 && now.cpu_s < 2.51);
	/* found once: no more requests (the fake engine has none left to answer) */
	group(f, 199, 200, 1);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 1);
	assert_true(now.at_limit);
	/* under_oom lingers after a raise, the waiters not yet woken: not at its limit */
	group(f, 150, 456, 1);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 1);
	assert_false(now.at_limit);
	assert_int_equal(now.limit_mb, 456);
	/* its CPU time unreadable: unknown, the memory still read */
	char *cu = joined(f->cpu_group, "cpuacct.usage");
	unlink(cu);
	free(cu);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 1);
	assert_true(now.cpu_s < 0);
	/* its group gone (the container ended): nothing to read, no error */
	char *u = joined(f->group, "memory.usage_in_bytes");
	unlink(u);
	free(u);
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 0);
	assert_null(err);
}

static void test_not_its_group(void **state)
{
	struct fx *f = *state;
	char *pd = joined(f->proc, "4242");
	put(pd, "cgroup", "12:memory:/user.slice\n0::/\n");
	free(pd);
	ts_write_file(f->id_file, ID "\n");
	engine(f, RUNNING, 1);
	struct worker_ctr_memory_now now;
	char *err = NULL;
	assert_true(worker_ctr_memory_read(f->c, &now, &err) < 0);
	assert_non_null(err);
	assert_non_null(strstr(err,
	                       "container 0123456789ab: its process 4242 is in no memory group "
	                       "of its own here"));
	free(err);
}

static void test_bad_id_file(void **state)
{
	struct fx *f = *state;
	struct worker_ctr_memory_now now;
	char *err = NULL;
	ts_write_file(f->id_file, "not an id; rm -rf /");
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 0);
	assert_null(worker_ctr_memory_id(f->c));
	ts_write_file(f->id_file, "01234"); /* too short */
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 0);
	assert_null(worker_ctr_memory_id(f->c));
}

static void test_update_and_let_kill(void **state)
{
	struct fx *f = *state;
	char *err = NULL;
	/* before its id is known there is nothing to update */
	assert_true(worker_ctr_memory_set_limit(f->c, 456, &err) < 0);
	free(err);
	err = NULL;
	assert_true(worker_ctr_memory_set_cores(f->c, 1.5, &err) < 0);
	free(err);
	err = NULL;
	ts_write_file(f->id_file, ID);
	engine(f, RUNNING, 1);
	struct worker_ctr_memory_now now;
	assert_int_equal(worker_ctr_memory_read(f->c, &now, &err), 1);
	engine(f, OK_JSON(15) "{\"Warnings\":[]}", 1);
	assert_int_equal(worker_ctr_memory_set_limit(f->c, 456, &err), 0);
	assert_null(err);
	engine(f, OK_JSON(15) "{\"Warnings\":[]}", 1);
	assert_int_equal(worker_ctr_memory_set_cores(f->c, 1.5, &err), 0);
	assert_null(err);
	engine(f,
	       "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n"
	       "Content-Length: 31\r\n\r\n{\"message\":\"No such container\"}",
	       1);
	assert_int_equal(worker_ctr_memory_set_limit(f->c, 712, &err), -ENOENT);
	assert_non_null(err);
	assert_non_null(
	    strstr(err, "docker POST /containers/" ID "/update: 404: No such container"));
	free(err);
	worker_ctr_memory_let_kill(f->c);
	char *p = joined(f->group, "memory.oom_control");
	char *text = ts_read_file(p, NULL);
	assert_string_equal(text, "0");
	free(text);
	free(p);
}

struct left_seen {
	int calls, outcome;
	char *err;
};

static void left_seen(int outcome, const char *err, void *arg)
{
	struct left_seen *s = arg;
	s->calls++;
	s->outcome = outcome;
	free(s->err);
	s->err = err ? xstrdup(err) : NULL;
}

/* The container of a killed runner, removed in the thread pool: nothing queued without an id;
 * the outcome, on the loop, once the engine answered; the engine's 404 for one already gone is
 * no error; the engine's refusal and an engine not there reported to the callback. */
static void test_remove_left_async(void **state)
{
	struct fx *f = *state;
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct left_seen seen = {0};
	char *err = NULL;
	assert_int_equal(
	    worker_ctr_memory_remove_left_async(&loop, f->sock, f->id_file, left_seen, &seen, &err),
	    0);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(seen.calls, 0);
	ts_write_file(f->id_file, ID);
	engine(f, "HTTP/1.1 204 No Content\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 1);
	assert_int_equal(
	    worker_ctr_memory_remove_left_async(&loop, f->sock, f->id_file, left_seen, &seen, &err),
	    1);
	assert_int_equal(seen.calls, 0); /* not before the loop runs */
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.outcome, 1);
	assert_null(seen.err);
	engine(f,
	       "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n"
	       "Content-Length: 31\r\n\r\n{\"message\":\"No such container\"}",
	       1);
	assert_int_equal(
	    worker_ctr_memory_remove_left_async(&loop, f->sock, f->id_file, left_seen, &seen, &err),
	    1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(seen.calls, 2);
	assert_int_equal(seen.outcome, 1);
	assert_null(seen.err);
	engine(f,
	       "HTTP/1.1 500 Server Error\r\nContent-Type: application/json\r\nConnection: "
	       "close\r\nContent-Length: 20\r\n\r\n{\"message\":\"broken\"}",
	       1);
	assert_int_equal(
	    worker_ctr_memory_remove_left_async(&loop, f->sock, f->id_file, left_seen, &seen, &err),
	    1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(seen.calls, 3);
	assert_true(seen.outcome < 0);
	assert_non_null(seen.err);
	assert_non_null(strstr(seen.err, "broken"));
	char *gone = joined(f->dir, "no-engine.sock");
	assert_int_equal(
	    worker_ctr_memory_remove_left_async(&loop, gone, f->id_file, left_seen, &seen, &err),
	    1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(seen.calls, 4);
	assert_true(seen.outcome < 0);
	assert_non_null(seen.err);
	assert_non_null(strstr(seen.err, "cannot reach the Docker Engine"));
	free(gone);
	free(seen.err);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* cgroup v2: the unified line names the group; memory.current and memory.max are read; a v2
 * group never waits at its limit (there is no OOM killer to turn off), so never at_limit. */
static void test_v2(void **state)
{
	struct fx *f = *state;
	char *v2 = joined(f->dir, "cg2");
	char *grp = joined(v2, "system.slice/docker-" ID ".scope");
	mkdirs(grp);
	put(v2, "cgroup.controllers", "cpuset cpu io memory pids\n");
	put(grp, "memory.current", "209715200\n");
	put(grp, "memory.max", "max\n");
	put(grp, "cpu.stat", "usage_usec 1250000\nuser_usec 1000000\nsystem_usec 250000\n");
	char *pd = joined(f->proc, "4242");
	put(pd, "cgroup", "0::/system.slice/docker-" ID ".scope\n");
	free(pd);
	struct worker_ctr_memory *c = worker_ctr_memory_create(f->api, f->id_file, v2, f->proc);
	ts_write_file(f->id_file, ID);
	engine(f, RUNNING, 1);
	struct worker_ctr_memory_now now;
	char *err = NULL;
	assert_int_equal(worker_ctr_memory_read(c, &now, &err), 1);
	assert_true(now.usage_mb > 199.9 && now.usage_mb < 200.1);
	assert_int_equal(now.limit_mb, -1);
	assert_false(now.at_limit);
	assert_true(now.cpu_s > 1.249 && now.cpu_s < 1.251);
	put(grp, "memory.max", "209715200\n");
	assert_int_equal(worker_ctr_memory_read(c, &now, &err), 1);
	assert_int_equal(now.limit_mb, 200);
	assert_false(now.at_limit);
	/* nothing to turn back on */
	worker_ctr_memory_let_kill(c);
	worker_ctr_memory_delete(c);
	free(grp);
	free(v2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_found_and_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_its_group, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_id_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_update_and_let_kill, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_left_async, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
