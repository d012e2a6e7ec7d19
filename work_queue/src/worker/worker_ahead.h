/* worker_ahead.h: a task's own container made ahead of the task (doc/work-queue-docker.md,
 * "Containers made ahead"). While a task of a per-task container waits in the worker's queue
 * with its inputs in place, the worker starts the container runner in its --ahead mode: it
 * makes the task's container (the task's binds, its limits) running the agent for one task,
 * then waits until the container ends and removes it. When the task starts, its process (the
 * agent's client, worker_docker_ahead_argv) hands the command to that agent; creating and
 * starting the container, and removing it, are then off the task's path. A container that
 * could not be made costs nothing but the try: the client becomes the usual runner. */
#ifndef HTC_WORKER_AHEAD_H
#define HTC_WORKER_AHEAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

struct worker_ahead;
/* The containers one worker makes ahead, and their directories' numbering. */
struct worker_aheads;

/* For a worker whose state directory is STATE (<workdir>/containers). */
struct worker_aheads *worker_aheads_create(const char *state);
/* Frees S; every process it started must have ended (the loop has run them out). */
void worker_aheads_delete(struct worker_aheads *s);

/* Starts making the container of the task whose runner argv is RUNNER (worker_docker_argv or
 * worker_docker_argv_spec, a task's own container; copied), its agent to listen in a new
 * directory of S's state (made by the runner, removed with the container). CORES and MEMORY
 * (MB; <= 0: none) are the task's allocation, the container's own limits. NULL with *ERR
 * (caller frees) when the process cannot start. */
struct worker_ahead *worker_ahead_start(struct worker_aheads *s, uv_loop_t *loop,
                                        char *const *runner, double cores, int64_t memory,
                                        char **err);

/* Whether the process making A still runs (its container may serve the task). */
bool worker_ahead_alive(const struct worker_ahead *a);
pid_t worker_ahead_pid(const struct worker_ahead *a);
const char *worker_ahead_dir(const struct worker_ahead *a);

/* The task no longer holds A. With CANCEL the task will not use the container (it ended before
 * it started): the process is asked to stop (SIGTERM), which removes the container. Without,
 * the container serves the task and ends with it. A is freed when its process has ended. */
void worker_ahead_release(struct worker_ahead *a, bool cancel);

/* Asks every process of S still making or holding a container to stop (the worker is
 * ending). NULL is accepted. */
void worker_aheads_stop_all(struct worker_aheads *s);

#endif
