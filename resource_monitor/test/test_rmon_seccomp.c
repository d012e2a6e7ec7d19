/* test_rmon_seccomp.c: unit tests of the seccomp profiles (rmon_seccomp.h): profile names, the
 * filters of each profile, tasks started by the spawner threads of a filter (this program run
 * again with --act) whose refused calls fail with EPERM and are recorded by their own task's
 * watch (and whose allowed calls work), and the errno lockdown of daemons. Filters are
 * installed on spawner threads and in forked children, never on the test's own thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "htc_error.h"
#include "rmon_seccomp.h"
#include "rmon_spawn.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

static void test_names(void **state)
{
	(void)state;
	static const char *const names[] = {"off", "default", "strict", "nonet"};
	for (int i = 0; i < 4; i++) {
		enum rmon_seccomp_profile p = RMON_SECCOMP_OFF;
		assert_int_equal(rmon_seccomp_parse(names[i], &p), 0);
		assert_int_equal((int)p, i);
		assert_string_equal(rmon_seccomp_name(p), names[i]);
	}
	enum rmon_seccomp_profile p = RMON_SECCOMP_STRICT;
	assert_int_equal(rmon_seccomp_parse("lax", &p), HTC_EPARSE);
	assert_int_equal(rmon_seccomp_parse("", &p), HTC_EPARSE);
	assert_int_equal(rmon_seccomp_parse(NULL, &p), HTC_EPARSE);
	assert_int_equal((int)p, RMON_SECCOMP_STRICT); /* untouched */
}

static void test_progs(void **state)
{
	(void)state;
	int err = 1;
	assert_null(rmon_seccomp_prog_get(RMON_SECCOMP_OFF, &err));
	assert_int_equal(err, 0);
	for (int p = RMON_SECCOMP_DEFAULT; p <= RMON_SECCOMP_NONET; p++) {
		const struct rmon_seccomp_prog *a = rmon_seccomp_prog_get(p, &err);
		assert_non_null(a);
		assert_int_equal(err, 0);
		/* built once: the same filter the next time */
		assert_ptr_equal(rmon_seccomp_prog_get(p, &err), a);
		assert_int_equal(rmon_seccomp_prog_notifies(a), 1);
	}
}

/* What the child of run_filtered does under its filter. */
enum act { ACT_BPF_TWICE_AND_MOUNT, ACT_NET, ACT_UNSHARE_FILES };

/* The child's exit status: 0 when every refused call failed with EPERM and every allowed one
 * worked; a different number for each way it failed. */
static int child_act(enum act a)
{
	switch (a) {
	case ACT_BPF_TWICE_AND_MOUNT:
		for (int i = 0; i < 2; i++)
			if (syscall(SYS_bpf, -1, NULL, 0) != -1 || errno != EPERM)
				return 10;
		if (syscall(SYS_mount, "none", "/nonexistent-htc", "tmpfs", 0, NULL) != -1 ||
		    errno != EPERM)
			return 11;
		if (getpid() <= 0) /* an allowed call */
			return 12;
		return 0;
	case ACT_NET: {
		int s = socket(AF_INET6, SOCK_DGRAM, 0);
		if (s != -1 || errno != EPERM)
			return 20;
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0)
			return 21;
		close(s);
		return 0;
	}
	case ACT_UNSHARE_FILES:
		/* unshare without a namespace flag is allowed by the default profile */
		return syscall(SYS_unshare, CLONE_FILES) == 0 ? 0 : 30;
	}
	return 99;
}

static char self[4096]; /* this program */

/* Starts this program with --act A under PROFILE's filter, its watch registered first as a
 * monitor does; the task's status goes to *STATUS, its watch to *W (deleted by the caller). */
static pid_t start_filtered(enum rmon_seccomp_profile profile, enum act a,
                            struct rmon_seccomp_watch **w)
{
	int err;
	const struct rmon_seccomp_prog *prog = rmon_seccomp_prog_get(profile, &err);
	assert_non_null(prog);
	char act[16];
	snprintf(act, sizeof act, "%d", (int)a);
	const char *argv[] = {self, "--act", act, NULL};
	struct rmon_spawn_args sa = {.argv = argv,
	                             .path = self,
	                             .stdin_fd = -1,
	                             .stdout_fd = -1,
	                             .stderr_fd = -1,
	                             .seccomp = prog};
	*w = rmon_seccomp_watch_start(prog, NULL);
	assert_non_null(*w);
	pid_t pid = rmon_spawn_start(&sa);
	assert_true(pid > 0);
	rmon_seccomp_watch_set_pid(*w, pid);
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int run_filtered(enum rmon_seccomp_profile profile, enum act a,
                        struct rmon_seccomp_watch **w)
{
	return wait_exit(start_filtered(profile, a, w));
}

/* The names refused for W, as one string "a,b" ("" for none). */
static char *denied(const struct rmon_seccomp_watch *w)
{
	char **names = rmon_seccomp_watch_denied(w);
	char *s = str_join(names, ",");
	str_free_argv(names);
	return s;
}

static void test_refused_calls_are_reported(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	assert_int_equal(run_filtered(RMON_SECCOMP_DEFAULT, ACT_BPF_TWICE_AND_MOUNT, &w), 0);
	char *names = denied(w);
	assert_string_equal(names, "bpf,mount");
	free(names);
	assert_int_equal(rmon_seccomp_watch_count(w), 3);
	rmon_seccomp_watch_delete(w);
}

static void test_nonet(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	assert_int_equal(run_filtered(RMON_SECCOMP_NONET, ACT_NET, &w), 0);
	char *names = denied(w);
	assert_string_equal(names, "socket");
	free(names);
	rmon_seccomp_watch_delete(w);
}

static void test_allowed_unshare(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	assert_int_equal(run_filtered(RMON_SECCOMP_DEFAULT, ACT_UNSHARE_FILES, &w), 0);
	char *names = denied(w);
	assert_string_equal(names, "");
	free(names);
	assert_int_equal(rmon_seccomp_watch_count(w), 0);
	rmon_seccomp_watch_delete(w);
}

/* Tasks running at once under one filter (one listener): each refused call is recorded for
 * the task that made it, also one made by a task's child (through sh). */
static void test_each_task_its_own(void **state)
{
	(void)state;
	enum { N = 4 };
	struct rmon_seccomp_watch *w[N];
	pid_t pid[N];
	for (int i = 0; i < N; i++)
		pid[i] = start_filtered(RMON_SECCOMP_DEFAULT,
		                        i % 2 ? ACT_UNSHARE_FILES : ACT_BPF_TWICE_AND_MOUNT, &w[i]);
	for (int i = 0; i < N; i++) {
		assert_int_equal(wait_exit(pid[i]), 0);
		char *names = denied(w[i]);
		assert_string_equal(names, i % 2 ? "" : "bpf,mount");
		free(names);
		rmon_seccomp_watch_delete(w[i]);
	}
	/* a grandchild: sh runs this program, whose calls belong to the task sh started */
	int err;
	const struct rmon_seccomp_prog *prog = rmon_seccomp_prog_get(RMON_SECCOMP_DEFAULT, &err);
	char *cmd = xasprintf("'%s' --act %d; exit $?", self, (int)ACT_BPF_TWICE_AND_MOUNT);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct rmon_spawn_args sa = {
	    .argv = argv, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1, .seccomp = prog};
	struct rmon_seccomp_watch *ws = rmon_seccomp_watch_start(prog, NULL);
	pid_t sh = rmon_spawn_start(&sa);
	assert_true(sh > 0);
	rmon_seccomp_watch_set_pid(ws, sh);
	assert_int_equal(wait_exit(sh), 0);
	char *names = denied(ws);
	assert_string_equal(names, "bpf,mount");
	free(names);
	rmon_seccomp_watch_delete(ws);
	free(cmd);
}

static void test_lockdown(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (rmon_seccomp_lockdown(1, 0) < 0)
			_exit(1);
		if (syscall(SYS_mount, "none", "/nonexistent-htc", "tmpfs", 0, NULL) != -1 ||
		    errno != EPERM)
			_exit(2);
		char *argv[] = {(char *)"true", NULL};
		char *envp[] = {NULL};
		execve("/bin/true", argv, envp);
		_exit(errno == EPERM ? 0 : 3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv)
{
	/* A task of the tests: no cleanup of ours may run under the filter (_exit). */
	if (argc == 3 && strcmp(argv[1], "--act") == 0)
		_exit(child_act((enum act)atoi(argv[2])));
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_progs),
	    cmocka_unit_test(test_refused_calls_are_reported),
	    cmocka_unit_test(test_nonet),
	    cmocka_unit_test(test_allowed_unshare),
	    cmocka_unit_test(test_each_task_its_own),
	    cmocka_unit_test(test_lockdown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
