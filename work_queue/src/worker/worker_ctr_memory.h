/* worker_ctr_memory.h: a task's own container followed by the worker: its memory when its
 * cgroup is the engine's, not nested in the task's (--container-cgroups engine, the engine's
 * systemd driver, cgroup v2; doc/elasticity.md, "Containers outside the task's cgroup"), and its
 * CPU when the worker lends cores (--cpu-grow), nested or not. The runner writes the
 * container's id to a file of the task's sandbox once it is made; from then on the worker finds
 * the container's memory and CPU accounting groups through its first process, reads them
 * there, and changes its memory limit and CPU quota through the engine's update call. */
#ifndef HTC_WORKER_CTR_MEMORY_H
#define HTC_WORKER_CTR_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct docker_api;
struct worker_ctr_memory;

/* The variable that names the file the runner writes the container's id to (worker_runner.c),
 * set for every task of a worker with containers. The worker follows the container of a task
 * not nested in its cgroup that it may grow (memory), or that it may lend cores to (--cpu-grow),
 * and removes the container of a task whose runner was killed with it. A task not nested that
 * may grow memory waits at its container's memory limit (OomKillDisable, cgroup v1) instead of
 * being killed, as a task in its own cgroup does. */
#define WORKER_CTR_ID_ENV  "HTC_CONTAINER_ID_FILE"
#define WORKER_CTR_ID_FILE "container.id"

struct worker_ctr_memory_now {
	double usage_mb;  /* charged to the container's group now */
	int64_t limit_mb; /* its limit (-1: none) */
	bool at_limit;    /* it waits at its limit (v1: under_oom, charged to within 2%) */
	double cpu_s;     /* the CPU time of its processes, s; -1 unknown */
};

/* Follows the container whose id the runner writes to ID_FILE (copied), through API (borrowed,
 * must outlive it). ROOT is the cgroup root (NULL: /sys/fs/cgroup) and PROC the process table
 * (NULL: /proc): other values for the tests. */
struct worker_ctr_memory *worker_ctr_memory_create(struct docker_api *api, const char *id_file,
                                                   const char *root, const char *proc);
void worker_ctr_memory_delete(struct worker_ctr_memory *c);

/* Reads the container's group into *NOW: 1 when read; 0 while there is nothing to read yet (no
 * id written, the container not started); negative with *ERR (caller frees) when it cannot be
 * followed (its group is not found, or it is not the container's): the caller stops trying. */
int worker_ctr_memory_read(struct worker_ctr_memory *c, struct worker_ctr_memory_now *now,
                           char **err);
/* Sets the container's memory limit to MB through the engine (POST /containers/{id}/update).
 * 0, or negative with *ERR (caller frees). */
int worker_ctr_memory_set_limit(struct worker_ctr_memory *c, int64_t mb, char **err);
/* Sets the container's CPU quota to CORES through the engine (NanoCpus; the runner makes a
 * followed container with NanoCpus). 0, or negative with *ERR (caller frees). */
int worker_ctr_memory_set_cores(struct worker_ctr_memory *c, double cores, char **err);
/* The container waits at its limit with the kernel's OOM killer off in its group: turns it back
 * on, so the kernel ends the container (its task is given up for lack of memory). */
void worker_ctr_memory_let_kill(struct worker_ctr_memory *c);
/* Removes the container (forced: killed first) through the engine, once its task was given up:
 * its runner is gone with the task, and nothing else would remove it before the worker ends.
 * 0, or negative with *ERR (caller frees). */
int worker_ctr_memory_remove(struct worker_ctr_memory *c, char **err);
/* Removes (forced) the container whose id the runner wrote to ID_FILE, if any: for a task whose
 * runner was killed with it (a limit, a cancel), which could not remove its container itself.
 * Without holding LOOP: reads the id now, and removes the container in LOOP's thread pool
 * through its own client of the engine at SOCKET (NULL: the default); then DONE (may be NULL)
 * is called on the loop with ARG, the outcome (1: removed, or already gone; negative: not) and
 * the engine's error (freed after DONE returns). Returns 1 when the removal was queued, 0 when
 * no id was written (DONE is not called), negative with *ERR when it could not be queued
 * (caller frees). The loop runs until the removal is done. */
typedef void (*worker_ctr_left_fn)(int outcome, const char *err, void *arg);
int worker_ctr_memory_remove_left_async(uv_loop_t *loop, const char *socket, const char *id_file,
                                        worker_ctr_left_fn done, void *arg, char **err);
/* The container's id, or NULL before it is known. */
const char *worker_ctr_memory_id(const struct worker_ctr_memory *c);

#endif
