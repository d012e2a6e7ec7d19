/* rmon_seccomp.h: the seccomp filters a task runs under (doc/seccomp.md). A profile is an
 * allow-by-default list of refused system calls, compiled once per process with libseccomp; the
 * task's first process installs it just before its exec with a user-notification listener,
 * which it hands back over a socket, so the monitor answers every refused call with EPERM
 * and records its name. Daemons can also lock themselves down with an errno-only filter. */
#ifndef HTC_RMON_SECCOMP_H
#define HTC_RMON_SECCOMP_H

#include <uv.h>

enum rmon_seccomp_profile {
	RMON_SECCOMP_OFF = 0,
	RMON_SECCOMP_DEFAULT, /* kernel modules, kexec, mounts, namespaces, bpf, perf, ... */
	RMON_SECCOMP_STRICT,  /* the default and ptrace, chroot, io_uring, mknod, ... */
	RMON_SECCOMP_NONET,   /* the default and socket(AF_INET/AF_INET6/AF_PACKET) */
};

/* "default", "strict", "nonet" or "off" into *OUT: 0, or HTC_EPARSE for another name. */
int rmon_seccomp_parse(const char *name, enum rmon_seccomp_profile *out);
/* The name of P ("off" for an unknown value). */
const char *rmon_seccomp_name(enum rmon_seccomp_profile p);

/* A compiled filter (BPF), immutable once built. */
struct rmon_seccomp_prog;

/* The filter of profile P for tasks, built on first use (thread-safe) and kept for the
 * process's life. NULL for RMON_SECCOMP_OFF, or with *ERR (-errno) when it cannot be built. */
const struct rmon_seccomp_prog *rmon_seccomp_prog_get(enum rmon_seccomp_profile p, int *err);

/* 1 when refused calls of PROG are reported through a listener (the kernel supports
 * SECCOMP_RET_USER_NOTIF), 0 when they fail with EPERM without a trace. */
int rmon_seccomp_prog_notifies(const struct rmon_seccomp_prog *prog);

/* In a task's child just before its exec: installs PROG (with no_new_privs when the process
 * lacks CAP_SYS_ADMIN) and, when it notifies, sends its listener over the Unix socket SOCK and
 * closes it here. Allocates nothing (safe in a vfork child). 0 or -errno. */
int rmon_seccomp_install_child(const struct rmon_seccomp_prog *prog, int sock);

/* Makes a socket pair for the listener: FDS[0] is the monitor's end, FDS[1] the child's (both
 * close-on-exec). 0 or -errno. */
int rmon_seccomp_socketpair(int fds[2]);

/* The monitor's side of one task's filter: it waits for the listener on SOCK (taken: closed
 * by the watch), answers every notification with EPERM and records the call. On LOOP. */
struct rmon_seccomp_watch;
struct rmon_seccomp_watch *rmon_seccomp_watch_start(uv_loop_t *loop, int sock);
/* Answers what is pending now (without waiting). */
void rmon_seccomp_watch_poll(struct rmon_seccomp_watch *w);
/* The names of the refused calls, each once, in the order first seen; NULL-terminated; valid
 * until the next poll or delete. */
const char *const *rmon_seccomp_watch_denied(const struct rmon_seccomp_watch *w);
/* How many calls were refused in all. */
long rmon_seccomp_watch_count(const struct rmon_seccomp_watch *w);
/* Stops watching (a pending call then fails with ENOSYS) and frees W once its handles are
 * closed. NULL is ok. */
void rmon_seccomp_watch_delete(struct rmon_seccomp_watch *w);

/* For a standalone daemon after its setup: refuses (EPERM, no report) the calls of the default
 * profile in every thread of this process and every child it makes, plus execve and execveat when
 * NO_EXEC. With TRACE_ACTION the refusal is SECCOMP_RET_TRACE instead (ENOSYS without a tracer),
 * which ranks below a task filter's notification, so that a child task's refusals stay reported. 0
 * or -errno. */
int rmon_seccomp_lockdown(int no_exec, int trace_action);

#endif
