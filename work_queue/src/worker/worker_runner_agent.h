/* worker_runner_agent.h: the client side of the agent of a shared container
 * (htc_container_agent_main.c): a shared-mode task is handed to the process the container
 * runs, over a Unix socket in the worker's state directory, instead of being an Engine exec.
 * Used by the container runner and by the agent's own client mode (`--run`), which the worker
 * starts instead of the runner when the container is up. It uses the C library only (the
 * agent is linked statically, without the tree's libraries). See doc/work-queue-docker.md,
 * "The agent of a shared container". */
#ifndef HTC_WORKER_RUNNER_AGENT_H
#define HTC_WORKER_RUNNER_AGENT_H

#include <signal.h>
#include <sys/types.h>

/* Where the agent program is bound in a shared container. */
#define RUNNER_AGENT_IN_CONTAINER "/.htc-container-agent"

/* The agent program installed beside this executable (/proc/self/exe), or NULL when there is
 * none: shared containers then run a shell loop and tasks are execs. Caller frees. */
char *runner_agent_program(void);

/* The name of the socket of the shared container NAME, in the state directory (NAME.sock).
 * Caller frees. */
char *runner_agent_socket_name(const char *name);

/* The signal that asked the process to stop (SIGTERM or SIGINT), 0 until one did: a signal
 * handler has no other way to say it (set by runner_agent_catch_stops). */
extern volatile sig_atomic_t runner_agent_stop;

/* Makes SIGTERM and SIGINT set runner_agent_stop (without SA_RESTART, so that a blocking call
 * returns), and ignores SIGPIPE. */
void runner_agent_catch_stops(void);

/* Moves PID into the cgroups the resource monitor made for this process's task (cgroup v1:
 * memory, cpu, cpuacct, pids, cpuset, freezer, blkio; not devices), so that a task of a shared
 * container is measured, limited and grown as its own. Returns the number of hierarchies it
 * was moved in: 0 when this process is not in a task cgroup (htc.*), on cgroup v2 (where a
 * move would also take the task out of the container's device rules), or when the moves
 * failed; the task then stays in the container's cgroup. */
int runner_agent_join_cgroups(pid_t pid);

/* Runs CMD (NULL-terminated) with this process's environment, in WORKDIR, in the container
 * whose agent listens on STATE/SOCKET, with this process's stdout and stderr; the task joins
 * this process's task cgroups (runner_agent_join_cgroups) before it executes CMD. Waits up to
 * WAIT_S seconds for the agent to listen (0: one try). A STOP signal kills the task (and is
 * waited for). Returns 0 with *STATUS (the exit status, 128+N for a signal); -ECONNREFUSED
 * when no agent listens; another negative code with *ERR (caller frees; e.g. the command could
 * not be executed in the image). */
int runner_agent_run(const char *state, const char *socket, const char *workdir, char *const *cmd,
                     double wait_s, volatile sig_atomic_t *stop, int *status, char **err);

#endif
