/* master_images.h: the master's view of the container images each worker holds (the worker's
 * `images` message, doc/work-queue-protocol.md 5.2) and the scheduler's image hook built on it
 * and on the worker's cache view: which workers hold, or are being sent, a task's image
 * (doc/work-queue-docker.md, "Image-aware scheduling"). */
#ifndef HTC_MASTER_IMAGES_H
#define HTC_MASTER_IMAGES_H

#include <jansson.h>
#include <stdbool.h>

#include "master_sched.h"

struct mworker;
struct master_images; /* one worker's report */

/* The `images` message MSG of worker W (ACTIVE or DRAINING): replaces its report; a worker whose
 * engine does not answer loses the @containers feature in the scheduler until it answers again.
 * A bad message or one without the capability is a violation (the connection is closed). */
void master_images_on_message(struct mworker *w, json_t *msg);
/* The worker's engine answered at its last report (true before any report). */
bool master_images_engine_up(const struct mworker *w);
/* Frees a worker's report. NULL is ok. */
void master_images_free(struct master_images *im);
/* The scheduler's image hook (master_sched_set_image_fn): WORKER_DATA a struct mworker,
 * TASK_DATA a struct mtask that names an image. */
enum master_sched_image_state master_images_state(void *worker_data, void *task_data, void *arg);

#endif
