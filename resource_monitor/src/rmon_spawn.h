/* rmon_spawn.h: starts a task's first process for the resource monitor (internal). The child
 * joins its cgroup (by writing "0" into pre-opened cgroup.procs descriptors) before it
 * executes anything, so even a fork in the first instruction of the program is measured. */
#ifndef HTC_RMON_SPAWN_H
#define HTC_RMON_SPAWN_H

#include <sys/types.h>

#include "rmon_seccomp.h"

struct rmon_spawn_args {
	const char *const *argv; /* argv[0] looked up in PATH (of env, else ours) here... */
	const char *path;        /* ...unless its executable is given here (no search) */
	const char *const *env;  /* NULL = our environment */
	const char *cwd;         /* NULL = ours */
	int stdin_fd, stdout_fd, stderr_fd; /* -1 = inherit */
	int new_session;
	const int *cgroup_fds; /* cgroup.procs descriptors to write "0" into */
	int n_cgroup_fds;
	int say_cgroup_error; /* a failure to join is also written to the child's stderr */
	/* The seccomp filter the child runs under (NULL = none): the child is cloned by a spawner
	 * thread that has it installed (rmon_seccomp.h). When it cannot be installed there, no
	 * child is made (-errno). */
	const struct rmon_seccomp_prog *seccomp;
};

/* Where the child failed before running the program. */
enum rmon_spawn_stage {
	RMON_SPAWN_OK = 0,
	RMON_SPAWN_CGROUP, /* could not join the cgroup: the child exited with 127 */
	RMON_SPAWN_SETUP,  /* setsid/dup2/chdir failed: exited with 127 */
	RMON_SPAWN_EXEC,   /* the program could not be executed: exited with 127 */
};

/* Starts the child (with a seccomp filter, through rmon_spawn_filtered). Returns its pid (> 0)
 * or -errno when no process could be created. When the child failed before the program ran,
 * *STAGE and *CHILD_ERR (errno) say why; the child then has exited with status 127 and must
 * still be reaped by the caller. */
pid_t rmon_spawn(const struct rmon_spawn_args *a, enum rmon_spawn_stage *stage, int *child_err);

/* rmon_spawn, and with PTID non-NULL the child's pid is also stored at *PTID as soon as the
 * child exists (CLONE_PARENT_SETTID), while this call still waits for its exec. */
pid_t rmon_spawn_settid(const struct rmon_spawn_args *a, pid_t *ptid, enum rmon_spawn_stage *stage,
                        int *child_err);

/* Starts the child as rmon_spawn does, but the clone is made by this process's spawner thread:
 * the caller waits only until the child exists (its pid is known and our descriptors are
 * copied into it), not for its cgroup join, setup and exec, which may take a while (moving a
 * process between cgroups may wait for an RCU grace period). A (and what it points to) is
 * copied. A failure before the program runs is written to the child's stderr (the cgroup's
 * too, as say_cgroup_error), and the child exits with 127, as from a shell. Returns the pid,
 * or -errno when no process could be created. */
pid_t rmon_spawn_start(const struct rmon_spawn_args *a);

/* rmon_spawn made by the spawner threads of A's seccomp filter, waiting for the child's exec
 * as rmon_spawn does. */
pid_t rmon_spawn_filtered(const struct rmon_spawn_args *a, enum rmon_spawn_stage *stage,
                          int *child_err);

/* The executable rmon_spawn would run for NAME under ENV (execvp rules), or NULL when none
 * is found. Caller frees. What was found is remembered (per process, thread-safe) and
 * searched for again only once that file is gone or no longer executable, as a shell's hash
 * table does: a program installed later in an earlier PATH directory is not seen until then. */
char *rmon_spawn_lookup(const char *name, const char *const *env);

#endif
