/* worker_runner_ahead.h: the container runner's --ahead mode (worker_ahead.h): the task's own
 * container, made before the task starts, runs the agent for one task (`htc_container_agent
 * --once`) listening in the directory --ahead names; the runner waits until the container ends
 * (the task done, or a stop signal: then it is killed) and removes it. See
 * doc/work-queue-docker.md, "Containers made ahead". */
#ifndef HTC_WORKER_RUNNER_AHEAD_H
#define HTC_WORKER_RUNNER_AHEAD_H

#include <jansson.h>

#include "docker_api.h"
#include "worker_runner_opts.h"

/* The name of the agent's socket in the --ahead directory. */
#define RUNNER_AHEAD_SOCKET "agent.sock"

/* The record of the container made ahead, beside the task's work directory (read with the
 * task's own record, WORKER_CONTAINER_RECORD, which it completes). */
#define RUNNER_AHEAD_RECORD "container-ahead.json"

/* Makes the worker's end send this process SIGTERM (as early as possible: a worker gone
 * before is seen only as a parent that changed). 0, or -ESRCH when the worker is gone. */
int runner_ahead_bind_to_worker(void);

/* Makes and starts the container of IMAGE for the task O describes, with the HostConfig HC
 * (taken; binds for O->ahead and the agent are added), writes REC with its cost (create_s)
 * beside O->workdir, waits until it ends and removes it. 0, or a negative code with *ERR. */
int runner_ahead(struct docker_api *api, const struct worker_runner_opts *o, const char *image,
                 json_t *hc, json_t *rec, char **err);

#endif
