/* worker_runner_image.h: the images of tasks that name their own container (protocol
 * `containers`), as the container runner prepares them: an image archive from the worker's cache
 * loaded into the engine once per worker (keyed by its cache object name, under a lock, so that
 * runners of the same image wait for one load), and the shared container of an image, made at
 * its first use and kept for the worker. Both add what they did and its cost in seconds to REC
 * (the runner's record: "image", "load_s", "shared_start_s"). See doc/work-queue-docker.md. */
#ifndef HTC_WORKER_RUNNER_IMAGE_H
#define HTC_WORKER_RUNNER_IMAGE_H

#include <jansson.h>
#include <signal.h>

#include "docker_api.h"
#include "worker_runner_opts.h"

/* The image named by O: O->image, or the image loaded from O->load (loaded now unless the record
 * in O->state names an image the engine still has). *REF gets it (caller frees). 0, or a
 * negative code with *ERR naming the archive and the engine's words. A STOP signal that arrives
 * while waiting for another runner's load gives -EINTR. */
int runner_image_ready(struct docker_api *api, const struct worker_runner_opts *o,
                       volatile sig_atomic_t *stop, char **ref, char **err, json_t *rec);

/* The name of the worker OWNER's shared container of IMAGE. Caller frees. */
char *runner_image_shared_name(const char *owner, const char *image);

/* The worker's shared container of IMAGE (O->shared_image): found by its name, made and started
 * when missing (binds O->binds, working directory O->workdir, labelled with O->owner so that it
 * goes with its worker). With AGENT (the agent program, worker_runner_agent.h) a new container
 * runs it, bound read-only at RUNNER_AGENT_IN_CONTAINER, listening in O->state; without, a
 * shell loop. *ID gets its id (caller frees). 0, or a negative code with *ERR. */
int runner_image_shared(struct docker_api *api, const struct worker_runner_opts *o,
                        const char *image, const char *agent, volatile sig_atomic_t *stop,
                        char **id, char **err, json_t *rec);

#endif
