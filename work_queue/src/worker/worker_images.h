/* worker_images.h: the container images a work_queue_worker holds for tasks that name theirs
 * (protocol `containers`): the images named by tasks that ran in the engine, the archives whose
 * image is loaded, the report sent to the master (`images`, doc/work-queue-protocol.md 5.2), and
 * the removal of an archive's image from the engine when the archive leaves the cache, never
 * of an image that was in the engine before the worker started (doc/work-queue-docker.md). */
#ifndef HTC_WORKER_IMAGES_H
#define HTC_WORKER_IMAGES_H

#include <jansson.h>
#include <stdbool.h>

#include "docker_api.h"

struct worker_images;

/* The images of a worker whose engine is API (borrowed) and whose runners record the image loaded
 * from each archive in STATE_DIR/<object>.image. The ids of the images the engine has now are
 * kept: those are never removed. Never NULL. */
struct worker_images *worker_images_create(struct docker_api *api, const char *state_dir);
/* Removes the images whose removal waited (an image a shared container used; the caller has
 * removed the shared containers first), with DROP_LOADED also those loaded from archives (the
 * worker's cache goes with its workspace; not with --keep-cache), and frees IM. NULL is ok. */
void worker_images_delete(struct worker_images *im, bool drop_loaded);

/* A task ended: NAME (the image it named, or NULL) or KEY (the cache object of its archive, or
 * NULL) and REC (the runner's record, doc/work-queue-docker.md "Costs"). A named image counts as
 * held when its container ran (REC has run_s); an archive when its image was loaded (REC has
 * image). True when the report changed. */
bool worker_images_note(struct worker_images *im, const char *name, const char *key,
                        const json_t *rec);
/* NAME is an image the engine has (the worker's own --docker image, checked at start): reported
 * as held. True when the report changed. */
bool worker_images_have(struct worker_images *im, const char *name);
/* The cache object KEY left the cache (no task uses it any more): when an image was loaded from
 * it, the image is removed from the engine (DELETE /images/{ref}) unless it was there before the
 * worker started; an image a container still uses is removed when the worker exits. True when
 * the report changed. */
bool worker_images_archive_removed(struct worker_images *im, const char *key);
/* The engine answers (UP) or not: true when that changed. */
bool worker_images_set_engine(struct worker_images *im, bool up);
bool worker_images_engine_up(const struct worker_images *im);
/* The `images` message (a new reference). */
json_t *worker_images_message(const struct worker_images *im);

#endif
