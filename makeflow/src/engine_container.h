/* engine_container.h: the container a rule runs in (CONTAINER, CONTAINER_IMAGE_TAR and
 * CONTAINER_MODE of its scope, else --docker and --docker-tar; doc/makeflow-language.md), given
 * to a driver that runs containers itself (-T wq: the worker makes them) or, for the others,
 * wrapped around the command: the container runner of work_queue_worker runs it in a container
 * of the image, in the workflow's directory bind-mounted at the same path. */
#ifndef MAKEFLOW_ENGINE_CONTAINER_H
#define MAKEFLOW_ENGINE_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "batch_queue.h"
#include "dag.h"
#include "engine.h"

struct engine_container {
	const char *image;   /* an image the engine has, or NULL */
	const char *archive; /* a docker save archive (a file of the workflow), or NULL */
	bool shared;         /* one container per image kept by the worker (-T wq) */
};

/* The container of rule N under the options O: false when it runs without one. */
bool engine_container_of(const struct engine_options *o, const struct dag_node *n,
                         struct engine_container *c);

/* Applies C to the job about to be submitted. With DRIVER_RUNS_CONTAINERS, sets SPEC's
 * container fields and removes the archive from IN[0..*N_IN) (it travels as the container's);
 * returns NULL. Otherwise returns COMMAND wrapped in the container runner (caller frees), or
 * NULL with *ERR (caller frees) when the runner (work_queue_worker) cannot be found. LOG_PATH
 * names the directory of the runner's records (LOG_PATH.containers). */
char *engine_container_apply(const struct engine_options *o, const struct engine_container *c,
                             bool driver_runs_containers, const char *command,
                             struct batch_job_spec *spec, struct batch_file *in, size_t *n_in,
                             const char *log_path, char **err);

#endif
