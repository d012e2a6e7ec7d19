/* rmon_seccomp.h: the seccomp filters a task runs under (doc/seccomp.md). A profile is an
 * allow-by-default list of refused system calls, compiled once per process with libseccomp and
 * installed once per process on the spawner threads that start its tasks (rmon_spawn), which
 * every task they clone inherits. Its user-notification listener is served by one thread of
 * the process, which answers every refused call with EPERM and records its name for the task
 * the caller belongs to (a watch). Daemons can also lock themselves down with an errno-only
 * filter. */
#ifndef HTC_RMON_SECCOMP_H
#define HTC_RMON_SECCOMP_H

#include <sys/types.h>

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

/* On a spawner thread, once: installs PROG on the calling thread only (with no_new_privs when
 * the process lacks CAP_SYS_ADMIN), so that every process it starts from now on inherits it,
 * and when PROG notifies, starts the thread that serves its listener. The thread must make
 * no call PROG refuses. 0 or -errno. */
int rmon_seccomp_install_thread(const struct rmon_seccomp_prog *prog);

/* One task's refused calls. A watch is registered before the task is started, with the name
 * of its cgroup (NULL: none); a refused call is the task's when the caller is in that cgroup
 * (or one nested in it), or descends from the task's first process (set once it is known). A
 * call that belongs to no watch is refused too, unrecorded. Thread-safe. */
struct rmon_seccomp_watch;
struct rmon_seccomp_watch *rmon_seccomp_watch_start(const struct rmon_seccomp_prog *prog,
                                                    const char *cgroup_name);
/* The task's first process. */
void rmon_seccomp_watch_set_pid(struct rmon_seccomp_watch *w, pid_t pid);
/* The names of the refused calls, each once, in the order first seen: a NULL-terminated copy
 * the caller frees (str_free_argv). */
char **rmon_seccomp_watch_denied(const struct rmon_seccomp_watch *w);
/* How many calls were refused in all. */
long rmon_seccomp_watch_count(const struct rmon_seccomp_watch *w);
/* Unregisters W and frees it. NULL is ok. */
void rmon_seccomp_watch_delete(struct rmon_seccomp_watch *w);

/* For a standalone daemon after its setup: refuses (EPERM, no report) the calls of the default
 * profile in every thread of this process and every child it makes, plus execve and execveat when
 * NO_EXEC. With TRACE_ACTION the refusal is SECCOMP_RET_TRACE instead (ENOSYS without a tracer),
 * which ranks below a task filter's notification, so that a child task's refusals stay reported. 0
 * or -errno. */
int rmon_seccomp_lockdown(int no_exec, int trace_action);

#endif
