/* worker_session.c: the messages of one work_queue_worker connection after the handshake
 * (doc/work-queue-protocol.md sections 5 and 7.3): cache objects and per-task inputs received
 * through wq_xfer into the cache and the sandboxes, tasks checked, refused or started through
 * worker_task (queued ones through the FIFO of worker_queue), outputs and stdout sent back before
 * task_done, cancels, cache drops, drain, dismiss, shutdown and bye. The report (identity,
 * capacity, cache_have) is in worker_session_report.c, URL inputs fetched by the worker itself
 * (worker_fetch) in worker_session_fetch.c; worker_session_internal.h holds what they share. */
#include "worker_session.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uthash.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "stringtools.h"
#include "timeutil.h"
#include "worker_conn_internal.h"
#include "worker_fetch.h"
#include "worker_queue.h"
#include "worker_session_internal.h"
#include "worker_images.h"
#include "worker_engine.h"
#include "worker_ahead.h"
#include "worker_docker.h"
#include "worker_task.h"
#include "worker_watch.h"
#include "worker_cache.h"
#include "wq_conn.h"
#include "wq_msg.h"
#include "worker_sandbox.h"
#include "worker_shared_session.h"
#include "wq_xfer.h"
#include "xalloc.h"

#include "vec.h"
#include "banned.h"

#define TASKS_MAX           1024
#define CAPACITY_MIN_GAP_MS 5000

struct session_priv *ws_priv(struct worker_session *s)
{
	if (!s->own)
		s->own = xcalloc(1, sizeof(struct session_priv));
	return s->own;
}

static bool object_pending(struct worker_session *s, const char *name)
{
	struct pending_obj *po = NULL, *set = ws_priv(s)->pending;
	HASH_FIND_STR(set, name, po);
	return po != NULL;
}

static void pending_set(struct worker_session *s, const char *name, bool on)
{
	struct pending_obj *po = NULL, *set = ws_priv(s)->pending;
	HASH_FIND_STR(set, name, po);
	if (on && !po) {
		po = xcalloc(1, sizeof *po);
		snprintf(po->name, sizeof po->name, "%s", name);
		HASH_ADD_STR(set, name, po);
	} else if (!on && po) {
		HASH_DEL(set, po);
		free(po);
	}
	ws_priv(s)->pending = set;
}

void ws_send(struct worker_session *s, json_t *m)
{
	if (!m)
		return;
	if (!s->closing && !s->lost) {
		int r = wq_conn_send_msg(s->conn, m);
		if (r < 0)
			debug(D_WORKER, "send %s: %s", json_string_value(json_object_get(m, "m")),
			      htc_strerror(r));
	}
	json_decref(m);
}

/* ---- transfers ------------------------------------------------------------------------------ */

static struct wtask *find_task(struct worker_session *s, int64_t id)
{
	struct wtask *t = NULL;
	HASH_FIND(hh, s->tasks, &id, sizeof id, t);
	return t;
}

static void refuse_xfer(struct wq_xfer_refusal *r, enum wq_xfer_error_code code, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
static void refuse_xfer(struct wq_xfer_refusal *r, enum wq_xfer_error_code code, const char *fmt,
                        ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->code = code;
	vsnprintf(r->text, sizeof r->text, fmt, ap);
	va_end(ap);
}

static bool fits_disk(struct worker_session *s, int64_t size)
{
	struct worker_ledger *l = worker_ledger(W(s));
	worker_ledger_refresh_disk(l);
	if (worker_ledger_disk_full(l))
		return false;
	int64_t free_mb = worker_ledger_disk_free(l);
	return size <=
	       free_mb * (int64_t)1048576 - (int64_t)worker_cache_reserved(worker_conn_cache(W(s)));
}

static bool fits_task_disk(struct worker_session *s, const struct wtask *t, int64_t size)
{
	if (!t->alloc.held)
		return fits_disk(s, size);
	struct worker_ledger *l = worker_ledger(W(s));
	worker_ledger_refresh_disk(l);
	if (worker_ledger_disk_full(l))
		return false;
	int64_t mb = t->alloc.res.disk;
	return mb <= 0 || size <= mb * (int64_t)1048576;
}

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	struct worker_session *s = worker_session_of(user);
	const struct wq_target *tg = in->target;
	if (!s) {
		refuse_xfer(r, WQ_XERR_NO_TASK, "the connection is closing");
		return -1;
	}
	if (tg->kind == WQ_TARGET_OBJECT) {
		/* a cache object takes free disk, outside every task's allocation */
		if (!in->is_dir && !fits_disk(s, in->size)) {
			refuse_xfer(r, WQ_XERR_DISK_FULL, "no room for %lld bytes",
			            (long long)in->size);
			/* The master drops objects and waits for a capacity that shows the room
			 * they leave: report the free disk as it is now, or a cache that filled
			 * since the last report would leave no change to report. */
			ws_send_capacity(s);
			return -1;
		}
		struct worker_cache_partial *p = NULL;
		int e = worker_cache_begin(worker_conn_cache(W(s)), tg->object,
		                           tg->keep == WQ_KEEP_WORKER ? WORKER_CACHE_KEEP_WORKER
		                                                      : WORKER_CACHE_KEEP_RUN,
		                           in->id, in->is_dir ? 0 : (uint64_t)in->size, &p);
		if (e == HTC_EDUP) {
			/* the master's store view may wait for it: announce it (protocol 5.12) */
			if (worker_cache_has(worker_conn_cache(W(s)), tg->object, NULL))
				worker_shared_recv_end(W(s), tg->object, true);
			refuse_xfer(r, WQ_XERR_HAVE, "object %s is already here", tg->object);
			return -1;
		}
		if (e < 0) {
			refuse_xfer(r, e == -ENOSPC ? WQ_XERR_DISK_FULL : WQ_XERR_IO,
			            "object %s: %s", tg->object, htc_strerror(e));
			return -1;
		}
		dest->sink = p;
		dest->sink_ops = &worker_cache_sink_ops;
		pending_set(s, tg->object, true);
		worker_shared_recv_begin(W(s), tg->object);
		return 0;
	}
	if (tg->kind != WQ_TARGET_INPUT) {
		refuse_xfer(r, WQ_XERR_NO_TASK, "unexpected target");
		return -1;
	}
	struct wtask *t = find_task(s, tg->task);
	if (!t || t->state != WT_STAGING || t->cancelled || !t->sb) {
		refuse_xfer(r, WQ_XERR_NO_TASK, "task %lld is not staging here",
		            (long long)tg->task);
		return -1;
	}
	if (tg->index < 0 || (size_t)tg->index >= t->msg->ninputs ||
	    t->msg->inputs[tg->index].from != WQ_FROM_TASK || t->have_input[tg->index] ||
	    t->msg->inputs[tg->index].dir != in->is_dir) {
		refuse_xfer(r, WQ_XERR_NO_TASK, "task %lld has no pending per-task %s input %lld",
		            (long long)tg->task, in->is_dir ? "directory" : "file",
		            (long long)tg->index);
		return -1;
	}
	/* A per-task input lands in the task's sandbox, inside the disk its allocation already
	 * holds (the ledger counts it as used, so it is not in the free disk): it must fit that
	 * allocation. A task not yet given one (queued) needs free disk. */
	if (!in->is_dir && !fits_task_disk(s, t, in->size)) {
		refuse_xfer(r, WQ_XERR_DISK_FULL, "no room for %lld bytes", (long long)in->size);
		return -1;
	}
	int fd = in->is_dir ? worker_sandbox_tmp_mkdir(t->sb, in->id)
	                    : worker_sandbox_tmp_open(t->sb, in->id, in->exec);
	if (fd < 0) {
		refuse_xfer(r, fd == -ENOSPC ? WQ_XERR_DISK_FULL : WQ_XERR_IO, "input %lld: %s",
		            (long long)tg->index, htc_strerror(fd));
		return -1;
	}
	if (in->is_dir)
		dest->dirfd = fd;
	else
		dest->fd = fd;
	return 0;
}

static void start_task(struct wtask *t, int sandbox_err);
static void object_arrived(struct worker_session *s, const char *name, bool ok);

/* ---- the FIFO of queued tasks (protocol 5.6) -------------------------------------------- */

static struct worker_queue *fifo(struct worker_session *s)
{
	struct session_priv *sp = ws_priv(s);
	if (!sp->queue) {
		struct worker_total c;
		worker_ledger_totals(worker_ledger(W(s)), &c, NULL, NULL, NULL);
		sp->queue = worker_queue_create(worker_queue_default_max(c.total));
	}
	return sp->queue;
}

static struct worker_alloc *alloc_of(void *item, void *arg)
{
	(void)arg;
	return &((struct wtask *)item)->alloc;
}

static void committed(void *item, void *arg)
{
	struct wtask *t = item;
	(void)arg;
	t->queued = false;
	debug(D_WORKER, "task %lld.%lld committed from the queue", (long long)t->id,
	      (long long)t->try_);
	if (t->inputs_ready)
		start_task(t, 0);
}

/* Commits the queued heads that fit now; called after anything freed resources or left the
 * FIFO. Never frees a task (a start that fails ends from the loop). */
static void queue_run(struct worker_session *s)
{
	struct session_priv *sp = s->own;
	if (!sp || !sp->queue || sp->dropping || s->closing || !worker_queue_length(sp->queue))
		return;
	struct worker *w = W(s);
	worker_ledger_refresh_disk(worker_ledger(w));
	worker_ledger_set_cache(worker_ledger(w),
	                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
	worker_queue_run(sp->queue, worker_ledger(w), alloc_of, committed, s);
}

/* T waits in the FIFO with its inputs in place: when it runs in a container of its own, that
 * container is made now, while T waits (worker_ahead.h). */
static void make_ahead(struct wtask *t)
{
	struct worker *w = W(t->s);
	struct worker_docker *dk = worker_docker_of(w);
	if (!dk || t->ahead || !t->sb || !worker_docker_can_make_ahead(dk))
		return;
	bool own = false;
	char **argv = worker_task_container_argv(dk, t->msg, worker_sandbox_work_path(t->sb), &own);
	if (argv && own) {
		char *err = NULL;
		t->ahead =
		    worker_ahead_start(worker_docker_aheads(dk), worker_loop(w), argv,
		                       t->msg->resources.cores, t->msg->resources.memory, &err);
		if (!t->ahead) {
			warn("task %lld: %s", (long long)t->id, err);
			free(err);
		}
	}
	str_free_argv(argv);
}

/* Every input of T is in place (ERR 0), or cannot be (ERR): T starts, unless it still waits in
 * the FIFO; a failure ends it at once (outcome sandbox_error), queued or not. */
void ws_inputs_in_place(struct wtask *t, int err)
{
	if (t->queued) {
		if (!err) {
			t->inputs_ready = true;
			make_ahead(t);
			return;
		}
		worker_queue_remove(fifo(t->s), t);
		t->queued = false;
		queue_run(t->s); /* the next head may fit */
	}
	start_task(t, err);
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	struct worker *w = user;
	struct worker_session *s = worker_session_of(w);
	const struct wq_target *tg = in->target;
	if (in->sink) {
		/* also called after the receiver was deleted, with S gone */
		worker_cache_end(worker_conn_cache(w), in->sink, status == 0);
		worker_shared_recv_end(w, tg->object, status == 0);
		if (status != 0)
			debug(D_WORKER, "object %s not stored: %s %s", tg->object,
			      htc_strerror(status), text ? text : "");
		worker_ledger_set_cache(worker_ledger(w),
		                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
		if (s) {
			pending_set(s, tg->object, false);
			object_arrived(s, tg->object, status == 0);
		}
		return;
	}
	if (!s || tg->kind != WQ_TARGET_INPUT)
		return;
	struct wtask *t = find_task(s, tg->task);
	if (!t || t->state != WT_STAGING || t->cancelled || !t->sb || tg->index < 0 ||
	    (size_t)tg->index >= t->msg->ninputs || t->have_input[tg->index])
		return;
	if (status == HTC_EPROTO)
		return; /* the connection is closing */
	int r = status;
	if (r == 0)
		r = worker_sandbox_tmp_commit(t->sb, in->id, t->msg->inputs[tg->index].name);
	if (r != 0) {
		warn("task %lld: input %s could not be stored: %s%s%s", (long long)t->id,
		     t->msg->inputs[tg->index].name, htc_strerror(r), text && *text ? ": " : "",
		     text ? text : "");
		worker_sandbox_tmp_discard(t->sb, in->id);
		ws_inputs_in_place(t, r < 0 ? r : -EIO);
		return;
	}
	t->have_input[tg->index] = true;
	if (--t->inputs_pending == 0)
		ws_inputs_in_place(t, 0);
}

static const struct wq_xfer_in_callbacks in_cb = {recv_begin, recv_end};

/* ---- tasks ------------------------------------------------------------------------------------
 */

void ws_check_drained(struct worker_session *s)
{
	if (s->draining && s->ntasks == 0 && !s->closing)
		worker_finish_soon(W(s), WORKER_EXIT_OK, "drained"); /* maybe inside a callback */
}

/* Forgets T: releases what it holds; a running tree is killed, the sandbox removed. */
void ws_task_free(struct wtask *t)
{
	struct worker_session *s = t->s;
	struct worker *w = W(s);
	HASH_DEL(s->tasks, t);
	s->ntasks--;
	if (t->queued)
		worker_queue_remove(fifo(s), t);
	worker_ledger_release(worker_ledger(w), &t->alloc); /* the disk, or all of it */
	for (size_t i = 0; t->fetching && i < t->msg->ninputs; i++)
		if (t->fetching[i])
			worker_fetch_release(ws_priv(s)->fetch, t->msg->inputs[i].object);
	worker_ahead_release(t->ahead, true); /* never started: its container goes */
	t->ahead = NULL;
	if (t->t) {
		worker_task_delete(t->t, false);
	} else if (t->sb) {
		worker_sandbox_remove(t->sb);
		worker_sandbox_delete(t->sb);
	}
	for (size_t i = 0; i < t->ndir_refs; i++) {
		worker_cache_unref(worker_conn_cache(w), t->dir_refs[i]);
		free(t->dir_refs[i]);
	}
	free(t->dir_refs);
	wq_task_msg_free(t->msg);
	free(t->have_input);
	free(t->fetching);
	free(t->out_xfers);
	free(t->sends);
	worker_watch_delete(t->watch);
	free(t->wsends);
	free(t);
	queue_run(s);
}

void ws_task_finished(struct worker_session *s)
{
	worker_touch(W(s));
	int64_t n = worker_count_task(W(s));
	if (worker_opts_of(W(s))->exit_after_tasks == n && s->active)
		worker_session_drain(s, "--exit-after-tasks: its tasks are done");
}

static void send_cancelled(struct worker_session *s, int64_t id, int64_t try_, bool known)
{
	ws_send(s, json_pack("{s:s,s:I,s:I,s:b}", "m", "task_cancelled", "id", (json_int_t)id,
	                     "try", (json_int_t)try_, "known", known));
}

static void task_complete(struct wtask *t)
{
	struct worker_session *s = t->s;
	bool cancelled = t->cancelled;
	if (cancelled)
		send_cancelled(s, t->id, t->try_, true);
	else
		ws_send(s,
		        worker_watch_done_sizes(
		            t->watch, worker_task_done_json(t->t, t->out_xfers, t->stdout_xfer)));
	debug(D_WORKER, "task %lld.%lld %s", (long long)t->id, (long long)t->try_,
	      cancelled ? "cancelled" : "done");
	ws_task_free(t);
	if (!cancelled)
		ws_task_finished(s);
	else
		worker_touch(W(s));
	ws_check_drained(s);
}

static void sent_cb(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	(void)user;
	struct wsend *ws = r->tag;
	struct wtask *t = ws->t;
	if (ws->watch)
		worker_watch_sent(t->watch, (size_t)ws->index, r);
	if (ws->final) {
		/* the id on the wire is given when the transfer begins: task_done names it */
		int64_t id = r->outcome == WQ_XFER_SENT ? (int64_t)r->id : 0;
		if (r->outcome != WQ_XFER_SENT)
			debug(D_WORKER, "task %lld: output %lld not sent: %s", (long long)t->id,
			      (long long)ws->index, r->text);
		if (ws->index < 0)
			t->stdout_xfer = id;
		else
			t->out_xfers[ws->index] = id;
		ws->handle = 0;
	}
	if (--t->sends_pending == 0 && t->state == WT_SENDING)
		task_complete(t);
}

static void peer_error_cb(struct wq_xfer_out *o, uint32_t id, enum wq_xfer_error_code code,
                          const char *text, void *user)
{
	(void)o;
	(void)user;
	debug(D_WORKER, "master refused transfer %u (%d): %s", id, (int)code, text);
}

static const struct wq_xfer_out_callbacks out_cb = {.sent = sent_cb, .peer_error = peer_error_cb};

/* The tree has ended: send the outputs and stdout, then task_done. */
static void send_results(struct wtask *t)
{
	struct worker_session *s = t->s;
	const struct worker_task_result *res = worker_task_result(t->t);
	size_t n = t->msg->noutputs;
	t->state = WT_SENDING;
	t->out_xfers = xcalloc(n + 1, sizeof *t->out_xfers);
	t->sends = xcalloc(n + 1, sizeof *t->sends);
	int flags = (s->caps & WQ_CAP_ZLIB) ? WQ_XFER_ZLIB : 0;
	t->sends_pending++; /* held until every send is queued (increments may be in flight) */
	for (size_t i = 0; res && i < res->noutputs && i < n; i++) {
		const struct worker_task_output *out = &res->outputs[i];
		if (out->kind != WQ_DONE_XFER && out->kind != WQ_DONE_DIR)
			continue;
		t->sends[i] = (struct wsend){.t = t, .index = (int64_t)i, .final = true};
		if (out->kind == WQ_DONE_XFER && worker_watch_has(t->watch, i)) {
			uint32_t handle = 0;
			const char *why = NULL;
			t->sends[i].watch = true;
			t->out_xfers[i] =
			    -1; /* its sent callback may come before the call returns */
			if (worker_watch_final(t->watch, i, out->fd, &t->sends[i], &handle, &why) ==
			    0) {
				if (t->out_xfers[i] == -1)
					t->sends[i].handle = handle;
			} else {
				t->out_xfers[i] = 0;
				debug(D_WORKER, "task %lld: output %zu: %s", (long long)t->id, i,
				      why);
			}
			continue;
		}
		json_t *target = wq_xfer_target_output(t->id, (int64_t)i);
		int r;
		uint32_t handle = 0;
		/* Counted before the call: a small file may be sent, and sent_cb called, before it
		 * returns; sent_cb sets the id (0 if it failed), which the -1 tells apart. */
		t->sends_pending++;
		t->out_xfers[i] = -1;
		if (out->kind == WQ_DONE_XFER) {
			int fd = dup(out->fd);
			r = fd < 0 ? -errno
			           : wq_xfer_send_file(s->xout, NULL, fd, -1, target, flags,
			                               &t->sends[i], &handle);
		} else {
			char *p = path_join(worker_sandbox_work_path(worker_task_sandbox(t->t)),
			                    t->msg->outputs[i].name);
			r = wq_xfer_send_dir(s->xout, p, target, flags, &t->sends[i], &handle);
			free(p);
		}
		json_decref(target);
		if (r != 0) {
			t->out_xfers[i] = 0;
			t->sends_pending--;
		} else if (t->out_xfers[i] == -1) {
			t->sends[i].handle = handle;
		}
	}
	if (res && res->stdout_size > 0) {
		char *buf = NULL;
		size_t len = 0;
		if (worker_task_stdout_read(t->t, &buf, &len) == 0 && len > 0) {
			t->sends[n] = (struct wsend){.t = t, .index = -1, .final = true};
			json_t *target = wq_xfer_target_stdout(t->id);
			uint32_t handle = 0;
			t->sends_pending++; /* as above */
			t->stdout_xfer = -1;
			if (wq_xfer_send_buffer(s->xout, buf, len, target, 0, &t->sends[n],
			                        &handle) != 0) {
				t->stdout_xfer = 0;
				t->sends_pending--;
			} else if (t->stdout_xfer == -1) {
				t->sends[n].handle = handle;
			}
			json_decref(target);
		}
		free(buf);
	}
	if (--t->sends_pending == 0)
		task_complete(t);
}

/* The tree has ended: its cores, memory and gpus go to the queued tasks now, before its outputs
 * are checked and sent (the disk stays held until the sandbox is gone). */
static void task_ended_cb(struct worker_task *wt, void *arg)
{
	struct wtask *t = arg;
	(void)wt;
	if (!t->alloc.held || t->alloc.compute_freed)
		return;
	worker_ledger_release_compute(worker_ledger(W(t->s)), &t->alloc);
	queue_run(t->s);
}

static void task_done_cb(struct worker_task *wt, void *arg)
{
	struct wtask *t = arg;
	task_ended_cb(wt, arg); /* a task that never started; a no-op after task_ended_cb */
	const struct worker_task_result *res = worker_task_result(wt);
	struct worker_docker *dk = worker_docker_of(W(t->s));
	if (res && res->container && dk) {
		/* before task_done: the master withdraws the containers, then retries the task */
		const char *lost = worker_container_engine_lost(res->container);
		if (lost) {
			warn("task %lld.%lld: %s: it goes back to the master", (long long)t->id,
			     (long long)t->try_, lost);
			worker_engine_down(worker_engine_of(W(t->s)), lost);
		} else if (t->msg->has_container &&
		           worker_images_note(worker_docker_images(dk), t->msg->container_name,
		                              t->msg->container_image, res->container))
			worker_session_images_changed(t->s);
	}
	worker_watch_stop(t->watch);
	if (worker_task_cancelled(wt) || t->cancelled) {
		t->cancelled = true;
		t->state = WT_SENDING; /* increments in flight end first */
		if (t->sends_pending == 0)
			task_complete(t);
		return;
	}
	send_results(t);
}

/* Watched outputs (5.6) of a task that has started. */
static void start_watch(struct wtask *t)
{
	size_t n = t->msg->noutputs;
	if (!(t->s->caps & WQ_CAP_WATCH) || !n)
		return;
	t->wsends = xcalloc(n, sizeof *t->wsends);
	void **tags = xcalloc(n, sizeof *tags);
	for (size_t i = 0; i < n; i++) {
		t->wsends[i] = (struct wsend){.t = t, .index = (int64_t)i, .watch = true};
		tags[i] = &t->wsends[i];
	}
	t->watch = worker_watch_create(worker_loop(W(t->s)), t->s->xout, t->id, t->msg,
	                               worker_task_sandbox(t->t), tags, &t->sends_pending);
	free(tags);
}

/* MB (rounded up) of the cache objects linked into T's sandbox. */
static int64_t linked_mb(struct wtask *t)
{
	struct worker_cache *c = worker_conn_cache(W(t->s));
	uint64_t bytes = 0, size;
	for (size_t i = 0; i < t->msg->ninputs; i++) {
		const struct wq_task_input *in = &t->msg->inputs[i];
		if (in->from != WQ_FROM_TASK && in->object &&
		    worker_cache_has(c, in->object, &size))
			bytes += size;
	}
	return (int64_t)((bytes + 1048575) >> 20);
}

/* A running task was grown or shrunk (worker_elastic.h): the master is told its new memory
 * (`task_resized`, protocol 5.6), and a shrink may let a queued task start. */
static void task_resized_cb(void *arg, int64_t memory_mb)
{
	struct wtask *t = arg;
	struct worker_session *s = t->s;
	if (s->caps & WQ_CAP_GROW)
		ws_send(s,
		        json_pack("{s:s,s:I,s:I,s:I}", "m", "task_resized", "id", (json_int_t)t->id,
		                  "try", (json_int_t)t->try_, "memory", (json_int_t)memory_mb));
	queue_run(s);
}

static void start_task(struct wtask *t, int sandbox_err)
{
	struct worker_session *s = t->s;
	struct worker *w = W(s);
	if (sandbox_err && t->sb) {
		worker_sandbox_remove(t->sb);
		worker_sandbox_delete(t->sb);
		t->sb = NULL;
	}
	struct worker_task_params p = {
	    .loop = worker_loop(w),
	    .t_received = t->t_received,
	    .t_inputs_ready = time_now_us(),
	    .sandbox_err = sandbox_err,
	    .ended = task_ended_cb,
	    .linked_mb = sandbox_err ? 0 : linked_mb(t),
	    .docker = worker_docker_of(w),
	    .seccomp = (int)worker_opts_of(w)->seccomp,
	    .proc_events = worker_opts_of(w)->proc_events,
	    .cpus = worker_cpus_of(w),
	    .elastic = worker_elastic_of(w),
	    .charged = &t->alloc,
	    .resized = task_resized_cb,
	    .report_grown = (s->caps & WQ_CAP_GROW) != 0,
	};
	struct worker_sandbox *sb = t->sb;
	t->sb = NULL; /* owned by the task from now on */
	t->state = WT_RUNNING;
	p.ahead = t->ahead;
	t->t = worker_task_start(&p, t->msg, sb, &t->alloc, task_done_cb, t);
	/* the container made ahead now serves the task and ends with it; without a task it goes */
	worker_ahead_release(t->ahead, worker_task_pid(t->t) <= 0);
	t->ahead = NULL;
	if (worker_task_pid(t->t) > 0) {
		ws_send(s, worker_task_running_json(t->t));
		start_watch(t);
	}
	debug(D_WORKER, "task %lld.%lld started (pid %d)", (long long)t->id, (long long)t->try_,
	      (int)worker_task_pid(t->t));
}

static void refuse_task(struct worker_session *s, int64_t id, int64_t try_, const char *code,
                        const char *text)
{
	debug(D_WORKER, "task %lld.%lld refused: %s %s", (long long)id, (long long)try_, code,
	      text);
	ws_send(s, json_pack("{s:s,s:I,s:I,s:s,s:s}", "m", "task_refused", "id", (json_int_t)id,
	                     "try", (json_int_t)try_, "code", code, "text", text));
}

/* Places cache input I of T into its sandbox. 0 or -errno. */
int ws_link_cache_input(struct wtask *t, size_t i)
{
	struct worker *w = W(t->s);
	const struct wq_task_input *in = &t->msg->inputs[i];
	if (in->object[0] != 'D')
		return worker_sandbox_link_file(t->sb, worker_cache_fd(worker_conn_cache(w)),
		                                in->object, in->name);
	int err = worker_cache_ref(worker_conn_cache(w), in->object);
	if (err == 0) {
		VEC_RESIZE(t->dir_refs, t->ndir_refs + 1);
		t->dir_refs[t->ndir_refs++] = xstrdup(in->object);
		err = worker_sandbox_link_dir(t->sb, worker_cache_fd(worker_conn_cache(w)),
		                              in->object, in->name);
	}
	return err;
}

static void object_arrived(struct worker_session *s, const char *name, bool ok)
{
	struct wtask *t, *tmp;
	HASH_ITER(hh, s->tasks, t, tmp)
	{
		if (t->state != WT_STAGING || t->cancelled || !t->sb)
			continue;
		for (size_t i = 0; i < t->msg->ninputs; i++) {
			const struct wq_task_input *in = &t->msg->inputs[i];
			if (t->have_input[i] || in->from != WQ_FROM_CACHE ||
			    strcmp(in->object, name))
				continue;
			if (!ok) {
				char *text = xasprintf("object %s is not in the cache", name);
				refuse_task(s, t->id, t->try_, "missing_object", text);
				free(text);
				ws_task_free(t);
				ws_check_drained(s);
				break;
			}
			int err = ws_link_cache_input(t, i);
			if (err) {
				ws_inputs_in_place(t, err);
				break;
			}
			t->have_input[i] = true;
			if (--t->inputs_pending == 0) {
				ws_inputs_in_place(t, 0);
				break;
			}
		}
	}
}

static void on_task(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct worker *w = W(s);
	struct wq_task_msg *tm = NULL;
	char *why = NULL;
	int r = wq_msg_task_parse(msg, s->caps, &tm, &why);
	if (r == HTC_EPROTO || !tm) {
		wq_conn_violation(s->conn, "proto", "%s", why ? why : "malformed task");
		free(why);
		return;
	}
	if (find_task(s, tm->id)) {
		wq_conn_violation(s->conn, "proto", "task %lld is already on this worker",
		                  (long long)tm->id);
		goto out;
	}
	if (r == HTC_EPARSE) {
		refuse_task(s, tm->id, tm->try_, "bad_name", why);
		goto out;
	}
	if (s->draining) {
		refuse_task(s, tm->id, tm->try_, "draining", "the worker is draining");
		goto out;
	}
	if (s->ntasks >= TASKS_MAX) {
		refuse_task(s, tm->id, tm->try_, "busy", "1024 tasks already assigned");
		goto out;
	}
	for (size_t i = 0; i < tm->ninputs; i++) {
		if (tm->inputs[i].from == WQ_FROM_CACHE &&
		    !worker_cache_has(worker_conn_cache(w), tm->inputs[i].object, NULL) &&
		    !object_pending(s, tm->inputs[i].object)) {
			char *t = xasprintf("object %s is not in the cache", tm->inputs[i].object);
			refuse_task(s, tm->id, tm->try_, "missing_object", t);
			free(t);
			goto out;
		}
	}
	worker_ledger_refresh_disk(worker_ledger(w));
	worker_ledger_set_cache(worker_ledger(w),
	                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
	struct wtask *t = xcalloc(1, sizeof *t);
	char *text = NULL;
	enum worker_fit fit;
	if (tm->queued) {
		/* Queued (5.6): it must fit the totals and the FIFO; committed later, in order. */
		fit = worker_ledger_check_total(worker_ledger(w), &tm->resources, &text);
		if (fit == WORKER_FIT_OK &&
		    worker_queue_length(fifo(s)) >= (size_t)worker_queue_max(fifo(s))) {
			char *b =
			    xasprintf("%d queued tasks already held", worker_queue_max(fifo(s)));
			refuse_task(s, tm->id, tm->try_, "busy", b);
			free(b);
			free(t);
			goto out;
		}
	} else {
		fit = worker_ledger_commit(worker_ledger(w), &tm->resources, &t->alloc, &text);
	}
	if (fit != WORKER_FIT_OK) {
		refuse_task(s, tm->id, tm->try_,
		            fit == WORKER_FIT_DISK_FULL ? "disk_full" : "overcommit",
		            text ? text : "does not fit");
		free(text);
		free(t);
		if (fit == WORKER_FIT_DISK_FULL)
			ws_send_capacity(s);
		goto out;
	}
	t->id = tm->id;
	t->try_ = tm->try_;
	t->s = s;
	t->msg = tm;
	tm = NULL;
	t->t_received = time_now_us();
	t->have_input = xcalloc(t->msg->ninputs + 1, sizeof *t->have_input);
	t->fetching = xcalloc(t->msg->ninputs + 1, sizeof *t->fetching);
	HASH_ADD(hh, s->tasks, id, sizeof t->id, t);
	s->ntasks++;
	if (t->msg->queued) {
		worker_queue_push(fifo(s), t, &t->msg->resources); /* room checked above */
		t->queued = true;
	}
	worker_touch(w);
	t->sb = worker_sandbox_create(worker_workdir_fd(w), worker_workdir(w), (uint64_t)t->id,
	                              (unsigned)t->try_, BENEATH_RESOLVE_AUTO);
	int err = t->sb ? 0 : -errno;
	if (!err && t->msg->has_container && !worker_docker_of(w))
		err = -ENOTSUP; /* `containers` is offered only with an engine: not reached */
	for (size_t i = 0; !err && i < t->msg->ninputs; i++) {
		const struct wq_task_input *in = &t->msg->inputs[i];
		if (in->from == WQ_FROM_TASK ||
		    !worker_cache_has(worker_conn_cache(w), in->object, NULL)) {
			/* a transfer, an object still being stored, or a URL to fetch */
			t->inputs_pending++;
			if (in->from == WQ_FROM_URL)
				t->fetching[i] = true;
			continue;
		}
		err = ws_link_cache_input(t, i);
		if (!err)
			t->have_input[i] = true;
	}
	debug(D_WORKER, "task %lld.%lld received: %zu per-task inputs to come", (long long)t->id,
	      (long long)t->try_, t->inputs_pending);
	if (err || t->inputs_pending == 0) {
		for (size_t i = 0; i < t->msg->ninputs; i++)
			t->fetching[i] = false; /* nothing was asked for yet */
		ws_inputs_in_place(t, err);
	} else {
		ws_start_fetches(t);
	}
	queue_run(s);
out:
	free(why);
	wq_task_msg_free(tm);
}

static void on_cancel(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct wq_msg_v v = {.m = "task_cancel"};
	int64_t id = 0, try_ = 0;
	if (wq_msg_int(&v, msg, "id", WQ_REQ, 1, WQ_MAX_ID, &id) != 0 ||
	    wq_msg_int(&v, msg, "try", WQ_REQ, 1, WQ_MAX_ID, &try_) != 0) {
		wq_conn_violation(s->conn, "proto", "%s", v.why);
		free(v.why);
		return;
	}
	struct wtask *t = find_task(s, id);
	if (!t || t->try_ != try_ || t->cancelled) {
		send_cancelled(s, id, try_, false);
		return;
	}
	t->cancelled = true;
	debug(D_WORKER, "task %lld.%lld: cancel", (long long)id, (long long)try_);
	if (t->state == WT_STAGING) {
		task_complete(t);
	} else if (t->state == WT_RUNNING) {
		worker_task_cancel(t->t); /* DONE follows, cancelled */
	} else if (t->state == WT_SENDING) {
		/* Its outputs are given up (xfer_abort): task_cancelled replaces task_done once
		 * every send has reported, which the last abort may do at once and free T. */
		size_t n = t->msg->noutputs, k = 0;
		uint32_t *handles = xcalloc(n + 1, sizeof *handles);
		for (size_t i = 0; t->sends && i <= n; i++)
			if (t->sends[i].handle)
				handles[k++] = t->sends[i].handle;
		for (size_t i = 0; i < k; i++)
			wq_xfer_out_abort(s->xout, handles[i], "task cancelled");
		free(handles);
	}
}

static void empty_trash_work(uv_work_t *req)
{
	struct worker *w = req->data;
	worker_cache_empty_trash(worker_cache_fd(worker_conn_cache(w)),
	                         worker_cache_path(worker_conn_cache(w)));
}

static void empty_trash_done(uv_work_t *req, int status)
{
	(void)status;
	free(req);
}

static void on_cache_take(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	worker_shared_on_take(s, msg);
}

void ws_pending_set(struct worker_session *s, const char *name, bool on)
{
	pending_set(s, name, on);
}

void ws_object_arrived(struct worker_session *s, const char *name)
{
	object_arrived(s, name, true);
}

static void on_cache_drop(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct worker_cache_list *l = NULL;
	char *why = NULL;
	if (wq_msg_cache_drop_parse(msg, &l, &why) != 0) {
		wq_conn_violation(s->conn, "proto", "%s", why ? why : "bad cache_drop");
		free(why);
		return;
	}
	struct worker *w = W(s);
	for (size_t i = 0; i < l->n; i++)
		worker_cache_drop(worker_conn_cache(w), l->names[i]);
	worker_cache_list_free(l);
	worker_ledger_set_cache(worker_ledger(w),
	                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
	uv_work_t *req = xcalloc(1, sizeof *req);
	req->data = w;
	if (uv_queue_work(worker_loop(w), req, empty_trash_work, empty_trash_done) < 0)
		free(req);
}

static const char *str_of(json_t *msg, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(msg, key));
	return v ? v : dflt;
}

/* ---- the master's messages, by id ------------------------------------------------------------
 */

/* xfer_begin, xfer_end, xfer_abort and dir_*: the receiver's. */
static void on_xfer_in(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	wq_xfer_in_message_id(s->xin, msg, mid);
}

static void on_xfer_error(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	wq_xfer_out_message(s->xout, msg, wq_msg_name(mid));
}

static void on_drain(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	worker_session_drain(s, str_of(msg, "reason", "drain requested"));
}

static void on_dismiss(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	json_t *ra = json_object_get(msg, "retry_after");
	s->retry_after =
	    json_is_integer(ra) && json_integer_value(ra) >= 0 ? json_integer_value(ra) : 0;
	s->master_ending = json_is_true(json_object_get(msg, "ending"));
	notice("dismissed by the master: %s", str_of(msg, "reason", ""));
	worker_session_drop_tasks(s);
	json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", "dismissed");
	worker_session_close(s, bye);
	json_decref(bye);
}

static void on_shutdown(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)msg;
	(void)mid;
	worker_finish(W(s), WORKER_EXIT_OK, "shutdown requested");
}

static void on_bye(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	notice("the master said bye: %s", str_of(msg, "reason", ""));
	worker_session_drop_tasks(s);
	s->closing = true;
	wq_conn_close_now(s->conn);
}

static void on_error(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct wq_error e;
	char *why = NULL;
	if (wq_msg_error_parse(msg, &e, &why) != 0) {
		wq_conn_violation(s->conn, "proto", "%s", why);
		free(why);
		return;
	}
	char *shown = wq_msg_escape(e.text, strlen(e.text), WQ_TEXT_RECV_MAX, false);
	if (!e.fatal) {
		notice("%s: %s", wq_conn_label(s->conn), shown);
	} else {
		warn("%s: error %s: %s", wq_conn_label(s->conn), e.code, shown);
		if (e.retry_after > 0)
			s->retry_after = e.retry_after;
		worker_session_drop_tasks(s);
		s->closing = true;
		wq_conn_close_now(s->conn);
	}
	free(shown);
	wq_msg_error_free(&e);
}

/* ping reaches here only while keepalive is off (wq_conn answers it otherwise). */
static void on_ping(struct worker_session *s, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	json_t *seq = json_object_get(msg, "seq");
	ws_send(s, json_pack("{s:s,s:O}", "m", "pong", "seq", seq ? seq : json_integer(0)));
}

typedef void msg_handler(struct worker_session *s, json_t *msg, enum wq_msg_id mid);

/* The master's messages to an active session, by id. wq_msg_check has refused those the master
 * may not send, or not in this state, before; one without a handler here (pong) is ignored. */
static msg_handler *const handlers[WQ_MSG_COUNT] = {
    [WQ_MSG_XFER_BEGIN] = on_xfer_in,
    [WQ_MSG_XFER_END] = on_xfer_in,
    [WQ_MSG_XFER_ABORT] = on_xfer_in,
    [WQ_MSG_DIR_BEGIN] = on_xfer_in,
    [WQ_MSG_DIR_MKDIR] = on_xfer_in,
    [WQ_MSG_DIR_END] = on_xfer_in,
    [WQ_MSG_DIR_ABORT] = on_xfer_in,
    [WQ_MSG_XFER_ERROR] = on_xfer_error,
    [WQ_MSG_TASK] = on_task,
    [WQ_MSG_TASK_CANCEL] = on_cancel,
    [WQ_MSG_CACHE_DROP] = on_cache_drop,
    [WQ_MSG_CACHE_TAKE] = on_cache_take,
    [WQ_MSG_DRAIN] = on_drain,
    [WQ_MSG_DISMISS] = on_dismiss,
    [WQ_MSG_SHUTDOWN] = on_shutdown,
    [WQ_MSG_BYE] = on_bye,
    [WQ_MSG_ERROR] = on_error,
    [WQ_MSG_PING] = on_ping,
};

/* ---- the session ------------------------------------------------------------------------------
 */

void worker_session_begin(struct worker_session *s, const char *master_id, unsigned caps,
                          int64_t ka_interval, int64_t ka_timeout)
{
	struct worker *w = W(s);
	s->caps = caps;
	s->active = true;
	if (ka_interval <= 0)
		ka_interval = 30;
	if (ka_timeout < ka_interval)
		ka_timeout = ka_interval * 4;
	wq_conn_set_keepalive(s->conn, (uint64_t)ka_interval * 1000, (uint64_t)ka_timeout * 1000);
	int r = worker_cache_set_master(worker_conn_cache(w), master_id);
	if (r > 0)
		debug(D_WORKER, "new master %s: %d cached objects deleted", master_id, r);
	s->xin = wq_xfer_in_create(worker_loop(w), s->conn, false, caps, &in_cb, w);
	s->xout =
	    wq_xfer_out_create(worker_loop(w), s->conn, (caps & WQ_CAP_ZLIB) != 0, &out_cb, s);
	ws_send_identity(s);
	ws_send_capacity(s);
	worker_cache_foreach_batch(worker_conn_cache(w), ws_have_batch, s);
	worker_shared_announce(s);
	s->reported = true;
	worker_session_images_changed(s);
	notice("connected to %s", wq_conn_label(s->conn));
}

void worker_session_message(struct worker_session *s, json_t *msg, const char *name)
{
	enum wq_msg_id mid = wq_msg_lookup(name);
	char *why = NULL;
	if (wq_msg_check(mid, name, WQ_DIR_M2W, WQ_STATE_ACTIVE, &why) != 0) {
		wq_conn_violation(s->conn, "proto", "%s", why);
		free(why);
		return;
	}
	if (s->closing)
		return;
	msg_handler *handle = handlers[mid];
	if (!handle) {
		debug(D_WORKER, "message %s ignored", name);
		return;
	}
	handle(s, msg, mid);
}

void worker_session_data(struct worker_session *s, uint32_t xfer, const uint8_t *b, size_t len)
{
	if (s->xin && !s->closing)
		wq_xfer_in_data(s->xin, xfer, b, len);
}

void worker_session_writable(struct worker_session *s)
{
	if (s->xout)
		wq_xfer_out_writable(s->xout);
}

void worker_session_drop_tasks(struct worker_session *s)
{
	wq_xfer_out_delete(s->xout);
	s->xout = NULL;
	wq_xfer_in_delete(s->xin);
	s->xin = NULL;
	struct session_priv *sp = ws_priv(s);
	struct pending_obj *po, *ptmp, *set = sp->pending;
	HASH_ITER(hh, set, po, ptmp)
	{
		HASH_DEL(set, po);
		free(po);
	}
	sp->pending = NULL;
	sp->dropping = true;
	struct wtask *t, *tmp;
	HASH_ITER(hh, s->tasks, t, tmp)
	{
		debug(D_WORKER, "task %lld.%lld killed and forgotten", (long long)t->id,
		      (long long)t->try_);
		ws_task_free(t);
	}
	worker_queue_delete(sp->queue);
	/* Downloads still running end in the thread pool, without calling back. */
	worker_fetch_delete(sp->fetch);
	free(sp);
	s->own = NULL;
}

void worker_session_close(struct worker_session *s, json_t *last)
{
	if (s->closing)
		return;
	s->closing = true;
	if (wq_conn_close(s->conn, last) < 0)
		wq_conn_close_now(s->conn);
}

void worker_session_drain(struct worker_session *s, const char *reason)
{
	if (!s->draining) {
		s->draining = true;
		notice("draining: %s", reason);
		ws_send(s, json_pack("{s:s,s:s}", "m", "draining", "reason", reason));
	}
	ws_check_drained(s);
}

/* A queued head that can never start (5.6) is refused. */
static void queue_check(struct worker_session *s)
{
	struct session_priv *sp = s->own;
	const char *code = NULL;
	char *text = NULL;
	queue_run(s);
	struct wtask *h = sp && sp->queue
	                      ? worker_queue_stuck(sp->queue, worker_ledger(W(s)), &code, &text)
	                      : NULL;
	if (h) {
		refuse_task(s, h->id, h->try_, code, text);
		ws_task_free(h);
		ws_check_drained(s);
	}
	free(text);
}

void worker_session_tick(struct worker_session *s)
{
	ws_check_drained(s);
	if (s->closing)
		return;
	queue_check(s);
	struct worker *w = W(s);
	uint64_t now = uv_now(worker_loop(w));
	if (now - s->last_capacity_ms < CAPACITY_MIN_GAP_MS)
		return;
	struct worker_ledger *l = worker_ledger(w);
	worker_ledger_refresh_disk(l);
	bool full = worker_ledger_disk_full(l);
	int64_t df = worker_ledger_disk_free(l);
	int64_t diff = df > s->last_disk_free ? df - s->last_disk_free : s->last_disk_free - df;
	if (full != s->last_disk_full || diff * 10 > s->last_disk_free)
		ws_send_capacity(s);
}
