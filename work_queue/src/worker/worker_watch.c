/* worker_watch.c: the worker's side of watched outputs (protocol 5.6): a per-task libuv timer
 * looks at each watched file and sends the bytes it gained as a range transfer, one increment
 * in flight per output, and the final transfer sends the rest after the command ends. Files
 * are never read into memory here: the transfer engine reads the range in its threads. */
#include "worker_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

struct watch_out {
	bool watched;
	bool in_flight; /* an increment is queued or open */
	bool broken;    /* an increment was not sent: the output cannot be completed */
	int64_t sent;   /* bytes announced so far (offset of the next transfer) */
	int64_t total;  /* the final transfer was queued: the output's size; else -1 */
};

struct worker_watch {
	uv_timer_t *timer;
	struct wq_xfer_out *o;
	int64_t task;
	const struct wq_task_msg *msg;
	struct worker_sandbox *sb;
	void **tags;
	int *pending;
	struct watch_out *outs;
	size_t nouts;
};

uint64_t worker_watch_interval_ms(void)
{
	const char *e = getenv(WORKER_WATCH_ENV);
	if (e && *e) {
		char *end = NULL;
		errno = 0;
		unsigned long long v = strtoull(e, &end, 10);
		if (!errno && end && !*end && v >= 50 && v <= 3600000)
			return v;
		warn("%s=%s is not a number of milliseconds in 50 .. 3600000: using %d",
		     WORKER_WATCH_ENV, e, WORKER_WATCH_INTERVAL_MS);
	}
	return WORKER_WATCH_INTERVAL_MS;
}

static void on_timer(uv_timer_t *h)
{
	worker_watch_poll(h->data);
}

struct worker_watch *worker_watch_create(uv_loop_t *loop, struct wq_xfer_out *o, int64_t task,
                                         const struct wq_task_msg *msg, struct worker_sandbox *sb,
                                         void **tags, int *pending)
{
	size_t n = 0;
	for (size_t i = 0; i < msg->noutputs; i++)
		if (msg->outputs[i].watch && !msg->outputs[i].dir)
			n++;
	if (!n || !o || !sb)
		return NULL;
	struct worker_watch *ww = xcalloc(1, sizeof *ww);
	ww->o = o;
	ww->task = task;
	ww->msg = msg;
	ww->sb = sb;
	ww->tags = xcalloc(msg->noutputs, sizeof *ww->tags);
	for (size_t i = 0; i < msg->noutputs; i++)
		ww->tags[i] = tags[i];
	ww->pending = pending;
	ww->nouts = msg->noutputs;
	ww->outs = xcalloc(msg->noutputs, sizeof *ww->outs);
	for (size_t i = 0; i < msg->noutputs; i++) {
		ww->outs[i].watched = msg->outputs[i].watch && !msg->outputs[i].dir;
		ww->outs[i].total = -1;
	}
	ww->timer = xmalloc(sizeof *ww->timer);
	uv_timer_init(loop, ww->timer);
	ww->timer->data = ww;
	uint64_t ms = worker_watch_interval_ms();
	uv_timer_start(ww->timer, on_timer, ms, ms);
	return ww;
}

/* Queues [from, from + len) of FD (owned) as a transfer of output I, with TAG. */
static int send_range(struct worker_watch *ww, size_t i, int fd, int64_t from, int64_t len,
                      void *tag, uint32_t *handle)
{
	json_t *target = wq_xfer_target_output(ww->task, (int64_t)i);
	json_object_set_new(target, "offset", json_integer(from));
	/* Counted before the call: a small range may be sent, and worker_watch_sent called,
	 * before it returns. */
	int64_t sent = ww->outs[i].sent;
	ww->outs[i].sent = from + len;
	ww->outs[i].in_flight = true;
	(*ww->pending)++;
	int r = wq_xfer_send_file_range(ww->o, fd, from, len, target, 0, tag, handle);
	json_decref(target);
	if (r < 0) {
		close(fd);
		ww->outs[i].sent = sent;
		ww->outs[i].in_flight = false;
		(*ww->pending)--;
		return r;
	}
	return 0;
}

void worker_watch_poll(struct worker_watch *ww)
{
	if (!ww)
		return;
	for (size_t i = 0; i < ww->nouts; i++) {
		struct watch_out *w = &ww->outs[i];
		if (!w->watched || w->in_flight || w->broken)
			continue;
		int fd = -1;
		char *missing = NULL;
		if (worker_sandbox_check_output(ww->sb, ww->msg->outputs[i].name, false, &fd,
		                                &missing) < 0) {
			free(missing); /* not there yet (or not a file yet): looked at next time */
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_size <= w->sent) {
			close(fd);
			continue;
		}
		int64_t len = (int64_t)st.st_size - w->sent;
		debug(D_WORKER, "task %lld: output %zu grew to %lld bytes: sending %lld",
		      (long long)ww->task, i, (long long)st.st_size, (long long)len);
		if (send_range(ww, i, fd, w->sent, len, ww->tags[i], NULL) < 0)
			w->broken = true;
	}
}

void worker_watch_stop(struct worker_watch *ww)
{
	if (ww && ww->timer)
		uv_timer_stop(ww->timer);
}

bool worker_watch_has(const struct worker_watch *ww, size_t index)
{
	return ww && index < ww->nouts && ww->outs[index].watched;
}

void worker_watch_sent(struct worker_watch *ww, size_t index, const struct wq_xfer_sent *r)
{
	if (!ww || index >= ww->nouts)
		return;
	struct watch_out *w = &ww->outs[index];
	w->in_flight = false;
	if (r->outcome != WQ_XFER_SENT) {
		debug(D_WORKER, "task %lld: part of output %zu not sent: %s", (long long)ww->task,
		      index, r->text);
		w->broken = true;
	}
}

int worker_watch_final(struct worker_watch *ww, size_t index, int fd, void *tag, uint32_t *handle,
                       const char **why)
{
	if (!worker_watch_has(ww, index)) {
		*why = "is not watched";
		return -EINVAL;
	}
	struct watch_out *w = &ww->outs[index];
	struct stat st;
	if (w->broken) {
		*why = "a part of the watched output could not be sent";
		return -EIO;
	}
	if (fstat(fd, &st) < 0 || st.st_size < w->sent) {
		*why = "the watched output shrank after parts of it were sent";
		return -EIO;
	}
	int dfd = dup(fd);
	if (dfd < 0) {
		*why = "cannot duplicate the output's descriptor";
		return -errno;
	}
	int64_t from = w->sent;
	int r = send_range(ww, index, dfd, from, (int64_t)st.st_size - from, tag, handle);
	if (r < 0) {
		*why = "the final part could not be queued";
		return r;
	}
	w->total = (int64_t)st.st_size;
	return 0;
}

json_t *worker_watch_done_sizes(const struct worker_watch *ww, json_t *done)
{
	json_t *outs = json_object_get(done, "outputs");
	for (size_t i = 0; ww && i < json_array_size(outs) && i < ww->nouts; i++) {
		json_t *e = json_array_get(outs, i);
		if (ww->outs[i].total >= 0 && json_object_get(e, "xfer"))
			json_object_set_new(e, "size", json_integer(ww->outs[i].total));
	}
	return done;
}

static void on_close(uv_handle_t *h)
{
	free(h);
}

void worker_watch_delete(struct worker_watch *ww)
{
	if (!ww)
		return;
	if (ww->timer) {
		uv_timer_stop(ww->timer);
		ww->timer->data = NULL;
		uv_close((uv_handle_t *)ww->timer, on_close);
	}
	free(ww->outs);
	free(ww->tags);
	free(ww);
}
