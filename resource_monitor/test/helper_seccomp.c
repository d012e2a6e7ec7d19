/* helper_seccomp.c: a test task that tries system calls a seccomp profile refuses, with
 * arguments that would fail harmlessly (or do nothing) if the call were allowed, and prints
 * "NAME: EPERM" or "NAME: allowed (WHY)" for each. `denied` tries the default profile's calls
 * and exits 0 when every one failed with EPERM; `net` opens an AF_INET and an AF_UNIX socket. */
#include <errno.h>
#include <linux/reboot.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_seccomp denied|net"

static int bad;

/* Prints what R (a syscall's return) and errno say; counts what was not EPERM. */
static void report(const char *name, long r)
{
	if (r < 0 && errno == EPERM) {
		printf("%s: EPERM\n", name);
		return;
	}
	printf("%s: allowed (%s)\n", name, r < 0 ? strerror(errno) : "succeeded");
	bad++;
}

static void try_denied(void)
{
	report("mount", syscall(SYS_mount, "none", "/nonexistent-htc", "tmpfs", 0, NULL));
	report("umount2", syscall(SYS_umount2, "/nonexistent-htc", 0));
	report("init_module", syscall(SYS_init_module, NULL, 0, ""));
	report("delete_module", syscall(SYS_delete_module, "nonexistent_htc", 04000));
	report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0xffff0000UL));
	report("setns", syscall(SYS_setns, -1, 0));
	report("unshare", syscall(SYS_unshare, CLONE_NEWUSER));
	report("bpf", syscall(SYS_bpf, -1, NULL, 0));
	report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	report("keyctl", syscall(SYS_keyctl, -1, 0, 0, 0, 0));
	report("add_key", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
	report("reboot", syscall(SYS_reboot, 0, 0, 0, NULL)); /* bad magic: EINVAL if allowed */
	report("swapon", syscall(SYS_swapon, "/nonexistent-htc", 0));
	report("settimeofday", syscall(SYS_settimeofday, NULL, NULL)); /* no-op if allowed */
	report("clock_settime", syscall(SYS_clock_settime, -1, NULL));
	report("acct", syscall(SYS_acct, "/nonexistent-htc"));
	report("syslog", syscall(SYS_syslog, 10, NULL, 0)); /* the buffer's size */
	report("userfaultfd", syscall(SYS_userfaultfd, 0));
	report("ptrace", syscall(SYS_ptrace, PTRACE_ATTACH, 0x3ffffff0, NULL, NULL));
	report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
	/* clone with a namespace flag (a child, if one is made, leaves at once). */
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	report("clone", pid);
}

static void try_net(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	report("socket(AF_INET)", s);
	if (s >= 0)
		close(s);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	printf("socket(AF_UNIX): %s\n", s >= 0 ? "ok" : strerror(errno));
	if (s < 0)
		bad++;
	else
		close(s);
}

int main(int argc, char *argv[])
{
	if (argc != 2)
		helper_usage(USAGE, "one argument expected");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[1], "denied") == 0)
		try_denied();
	else if (strcmp(argv[1], "net") == 0)
		try_net();
	else
		helper_usage(USAGE, "unknown mode");
	return bad ? 1 : 0;
}
