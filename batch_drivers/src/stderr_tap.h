/* stderr_tap.h: a pipe between a local job's stderr and this process's, which passes every byte
 * on as it comes and keeps the last BATCH_TAIL_BYTES, so that a job that fails can report the
 * last lines it wrote (result.stderr_tail). Internal to the batch_drivers component. */
#ifndef HTC_STDERR_TAP_H
#define HTC_STDERR_TAP_H

#include <uv.h>

struct batch_job;
struct stderr_tap;

/* Opens a tap on LOOP. *CHILD_FD is the pipe's write end (close-on-exec) for the job's fd 2;
 * the caller closes it once the job is spawned. NULL with errno set when no pipe can be made. */
struct stderr_tap *stderr_tap_open(uv_loop_t *loop, int *child_fd);

/* The job has ended: reads what is left in the pipe (without waiting for processes of the job
 * that still hold it), passes it on, sets JOB's stderr_tail when JOB is not NULL, and closes the
 * tap, which frees itself. */
void stderr_tap_finish(struct stderr_tap *t, struct batch_job *job);

#endif
