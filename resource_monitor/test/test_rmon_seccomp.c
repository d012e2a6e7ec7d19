/* test_rmon_seccomp.c: unit tests of the seccomp profiles (rmon_seccomp.h): profile names, the
 * filters of each profile, a forked child under a filter whose refused calls fail with EPERM
 * and are recorded by a watch on a libuv loop (and whose allowed calls work), and the errno
 * lockdown of daemons. Each filter is installed in a forked child, never in the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "htc_error.h"
#include "rmon_seccomp.h"
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

struct run {
	struct rmon_seccomp_watch *w;
	uv_loop_t loop;
	pid_t pid;
	int status;
	uv_timer_t timer;
};

/* Reaps the child from a timer (the test has no SIGCHLD handle), so that the loop keeps
 * answering the child's notifications until it has ended. */
static void on_timer(uv_timer_t *t)
{
	struct run *r = t->data;
	if (waitpid(r->pid, &r->status, WNOHANG) == r->pid)
		uv_timer_stop(t);
}

/* Forks a child that installs PROFILE's filter and does ACT; returns its exit status, with the
 * refused calls in the watch (*W on LOOP, deleted with watch_done). */
static int run_filtered(uv_loop_t *loop, enum rmon_seccomp_profile profile, enum act a,
                        struct rmon_seccomp_watch **w)
{
	int err;
	const struct rmon_seccomp_prog *prog = rmon_seccomp_prog_get(profile, &err);
	assert_non_null(prog);
	int fds[2];
	assert_int_equal(rmon_seccomp_socketpair(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		if (rmon_seccomp_install_child(prog, fds[1]) < 0)
			_exit(98);
		close(fds[1]);
		_exit(child_act(a));
	}
	close(fds[1]);
	uv_loop_init(loop);
	struct run r = {.pid = pid, .status = -1};
	r.w = rmon_seccomp_watch_start(loop, fds[0]);
	assert_non_null(r.w);
	uv_timer_init(loop, &r.timer);
	r.timer.data = &r;
	uv_timer_start(&r.timer, on_timer, 5, 5);
	while (r.status == -1)
		uv_run(loop, UV_RUN_ONCE);
	rmon_seccomp_watch_poll(r.w);
	*w = r.w;
	uv_close((uv_handle_t *)&r.timer, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_true(WIFEXITED(r.status));
	return WEXITSTATUS(r.status);
}

/* Deletes W and closes LOOP, which then has nothing left on it. */
static void watch_done(uv_loop_t *loop, struct rmon_seccomp_watch *w)
{
	rmon_seccomp_watch_delete(w);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

static void test_refused_calls_are_reported(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	uv_loop_t loop;
	assert_int_equal(run_filtered(&loop, RMON_SECCOMP_DEFAULT, ACT_BPF_TWICE_AND_MOUNT, &w), 0);
	const char *const *names = rmon_seccomp_watch_denied(w);
	assert_non_null(names[0]);
	assert_string_equal(names[0], "bpf");
	assert_non_null(names[1]);
	assert_string_equal(names[1], "mount");
	assert_null(names[2]);
	assert_int_equal(rmon_seccomp_watch_count(w), 3);
	watch_done(&loop, w);
}

static void test_nonet(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	uv_loop_t loop;
	assert_int_equal(run_filtered(&loop, RMON_SECCOMP_NONET, ACT_NET, &w), 0);
	const char *const *names = rmon_seccomp_watch_denied(w);
	assert_non_null(names[0]);
	assert_string_equal(names[0], "socket");
	assert_null(names[1]);
	watch_done(&loop, w);
}

static void test_allowed_unshare(void **state)
{
	(void)state;
	struct rmon_seccomp_watch *w;
	uv_loop_t loop;
	assert_int_equal(run_filtered(&loop, RMON_SECCOMP_DEFAULT, ACT_UNSHARE_FILES, &w), 0);
	assert_null(rmon_seccomp_watch_denied(w)[0]);
	assert_int_equal(rmon_seccomp_watch_count(w), 0);
	watch_done(&loop, w);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_progs),
	    cmocka_unit_test(test_refused_calls_are_reported),
	    cmocka_unit_test(test_nonet),
	    cmocka_unit_test(test_allowed_unshare),
	    cmocka_unit_test(test_lockdown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
