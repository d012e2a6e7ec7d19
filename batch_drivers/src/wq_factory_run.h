/* wq_factory_run.h: what the work_queue_factory program does once its options are parsed: it
 * keeps Work Queue workers running on a batch system for one master or for the masters of a
 * project, within the limits of its options (doc/work-queue-factory.md), until a signal. */
#ifndef HTC_WQ_FACTORY_RUN_H
#define HTC_WQ_FACTORY_RUN_H

#include <stddef.h>

#include "work_queue_factory_opts.h"

/* Runs the factory on the default libuv loop until SIGINT or SIGTERM, then removes the workers
 * it started. Returns 0, or a negative code with a message in ERR when it cannot start (the
 * password file cannot be read, an unknown batch type or batch option). */
int wq_factory_run(const struct work_queue_factory_opts *o, char *err, size_t errlen);

#endif
