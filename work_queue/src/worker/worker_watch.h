/* worker_watch.h: watched outputs on work_queue_worker (doc/work-queue-protocol.md 5.6). While a
 * task runs, a timer stats each output the master marked `watch` and sends what the file gained
 * since the last look as one transfer with target {task, output, offset}; after the command the
 * final transfer carries the rest and task_done names it with the total size. */
#ifndef HTC_WORKER_WATCH_H
#define HTC_WORKER_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "wq_msg.h"
#include "worker_sandbox.h"
#include "wq_xfer.h"

#define WORKER_WATCH_INTERVAL_MS 5000 /* protocol 5.6: at most every 5 s */
/* Testing knob: the interval in milliseconds (50 .. 3,600,000) instead of 5 s. */
#define WORKER_WATCH_ENV "WQ_WATCH_INTERVAL_MS"

struct worker_watch;

/* Starts watching the outputs of MSG (borrowed, must outlive the watch) with `watch: true` in
 * sandbox SB (borrowed) of task TASK; increments go out on O (borrowed) with TAGS[i] (the array is
 * copied) as the tag of output i's transfers, and each increment queued adds 1 to *PENDING (the
 * caller takes 1 off when its sent callback comes). Returns NULL when no output is watched. */
struct worker_watch *worker_watch_create(uv_loop_t *loop, struct wq_xfer_out *o, int64_t task,
                                         const struct wq_task_msg *msg, struct worker_sandbox *sb,
                                         void **tags, int *pending);
/* The interval in ms: WORKER_WATCH_ENV when set and valid, else WORKER_WATCH_INTERVAL_MS. */
uint64_t worker_watch_interval_ms(void);
/* Looks at every watched file once now (the timer calls this). */
void worker_watch_poll(struct worker_watch *ww);
/* Stops the timer (the command ended or was cancelled). NULL is accepted. */
void worker_watch_stop(struct worker_watch *ww);
/* Output INDEX is watched by WW (false for NULL). */
bool worker_watch_has(const struct worker_watch *ww, size_t index);
/* The sent callback of an increment, or of the final transfer, of output INDEX. */
void worker_watch_sent(struct worker_watch *ww, size_t index, const struct wq_xfer_sent *r);
/* After the command: sends the rest of output INDEX from FD (borrowed; the final size is taken
 * from it) as its final transfer, with TAG (its sent callback gives the id on the wire). 0 with
 * *HANDLE set (wq_xfer_out_abort), or a negative code with *WHY (static text) when the output
 * cannot be completed (an increment failed, or it shrank). */
int worker_watch_final(struct worker_watch *ww, size_t index, int fd, void *tag, uint32_t *handle,
                       const char **why);
/* Adds `size` (the total) to the task_done entries {index, xfer} of the watched outputs whose
 * final transfer was queued. Returns DONE (may be NULL; WW may be NULL). */
json_t *worker_watch_done_sizes(const struct worker_watch *ww, json_t *done);
/* Stops and frees WW (the timer handle is closed from the loop). NULL is accepted. */
void worker_watch_delete(struct worker_watch *ww);

#endif
