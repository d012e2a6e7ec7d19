/* master_dispatch.c: the task side of a connected worker on the Work Queue master: the `task`
 * message and the transfers that go with it (missing cache objects first, then per-task inputs),
 * and the outputs and stdout received into temporary files (doc/work-queue-protocol.md 5.6);
 * master_task_done.c turns task_done into a result. */
#include "master_internal.h"
#include "master_images.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmsummary.h"
#include "timeutil.h"
#include "wq_msg.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* Tags of the transfers this side sends. */
enum xtag_kind { XTAG_OBJECT, XTAG_INPUT };
struct xtag {
	enum xtag_kind kind;
	char *object;
	int64_t task; /* the task whose input it is, or (objects) the first task needing it */
	int try_;
	double start; /* master_queue_now() when queued, for the transactions log */
};

/* Tags of the transfers this side receives. */
struct rtag {
	int64_t task;
	int try_;
	int index;        /* -1: stdout */
	bool watch;       /* an increment of a watched output (appended at the final path) */
	int64_t reserved; /* bytes of the master's disk counted for it until its end */
	int64_t members;  /* directories: bytes its members announced so far */
	int64_t dir_room; /* directories: room_of its file system at its first member, or -1 */
};

/* ---- small helpers ------------------------------------------------------------------------ */
/* ---- sending ------------------------------------------------------------------------------ */

static void send_task(struct mworker *w, struct mtask *m);

/* The `task` of every queued task held behind tasks to run, in the order they were held. */
void master_dispatch_release_held(struct mworker *w)
{
	int *ids = w->held;
	int n = w->nheld;
	w->held = NULL;
	w->nheld = w->held_cap = 0;
	for (int k = 0; k < n; k++) {
		struct mtask *m = master_queue_task_lookup(w->q, ids[k]);
		if (!m || !m->held || !master_worker_assigned(w, m) || m->state != MTASK_SENDING)
			continue;
		m->held = false;
		send_task(w, m);
	}
	free(ids);
}

static void send_task(struct mworker *w, struct mtask *m)
{
	if (m->queued && w->unsent_running > 0) {
		VEC_PUSH(w->held, w->nheld, w->held_cap, m->id);
		m->held = true;
		return;
	}
	struct master_sched_box box;
	master_sched_task_box(m->st, &box);
	json_t *msg = master_task_message(w, m, &box);
	int rc = wq_conn_send_msg(w->c, msg);
	json_decref(msg);
	if (rc < 0) {
		warn("%s: cannot send task %d: %s", w->label, m->id, htc_strerror(rc));
		/* the connection cannot carry more: no other task goes to it (it would fail
		 * the same way, again and again) until it is gone */
		master_worker_stop_scheduling(w);
		master_sched_task_release(w->q->sched, m->st, master_queue_now());
		master_worker_back_to_ready(w, m); /* its detach releases the held ones */
		return;
	}
	/* The last task to run is on the wire: the queued ones held behind it may follow. */
	if (m->unsent) {
		m->unsent = false;
		if (--w->unsent_running == 0 && w->nheld > 0)
			master_dispatch_release_held(w);
		if (!master_worker_assigned(w, m) || m->state != MTASK_SENDING)
			return; /* a held task's send ended the connection */
	}
	int i = 0;
	for (struct work_queue_file *f = m->t->inputs; f; f = f->next, i++) {
		if (m->objects[i] || f->kind == WORK_QUEUE_FILE_URL)
			continue;
		struct xtag *x = xcalloc(1, sizeof *x);
		x->kind = XTAG_INPUT;
		x->object = xstrdup(f->remote); /* its name, for the transactions log */
		x->task = m->id;
		x->try_ = m->try_;
		x->start = master_queue_now();
		json_t *target = wq_xfer_target_input(m->id, i);
		int flags = (w->caps & WQ_CAP_ZLIB) ? WQ_XFER_ZLIB : 0;
		if (f->kind == WORK_QUEUE_FILE_BUFFER) {
			rc =
			    wq_xfer_send_buffer(w->out, f->data, f->length, target, flags, x, NULL);
		} else if (f->kind == WORK_QUEUE_FILE_DIRECTORY) {
			rc = wq_xfer_send_dir(w->out, f->source, target,
			                      flags | WQ_XFER_FOLLOW_LINKS, x, NULL);
		} else {
			struct stat st;
			if (stat(f->source, &st) == 0 && (st.st_mode & S_IXUSR))
				flags |= WQ_XFER_EXEC;
			rc = wq_xfer_send_file(w->out, f->source, -1, -1, target, flags, x, NULL);
		}
		json_decref(target);
		if (rc < 0) {
			free(x->object);
			free(x);
			warn("%s: cannot send input %d of task %d: %s", w->label, i, m->id,
			     htc_strerror(rc));
		}
	}
	/* A queued task is logged RUNNING at its task_running (its real start). */
	if (w->q->txlog && !m->queued)
		master_txlog_task(w->q->txlog, m->id, "RUNNING", w->id, m->t->resources_allocated);
}

int master_dispatch_send_object(struct mworker *w, struct mobject *o, const char *source,
                                bool is_dir, int64_t task)
{
	struct xtag *x = xcalloc(1, sizeof *x);
	x->kind = XTAG_OBJECT;
	x->object = xstrdup(o->name);
	x->task = task;
	x->start = master_queue_now();
	json_t *target = wq_xfer_target_object(o->name, WQ_KEEP_RUN);
	int flags = (w->caps & WQ_CAP_ZLIB) ? WQ_XFER_ZLIB : 0;
	int rc;
	if (is_dir)
		rc =
		    wq_xfer_send_dir(w->out, source, target, flags | WQ_XFER_FOLLOW_LINKS, x, NULL);
	else
		rc = wq_xfer_send_file(w->out, source, -1, -1, target, flags, x, NULL);
	json_decref(target);
	if (rc < 0) {
		free(x->object);
		free(x);
	}
	return rc;
}

void master_dispatch_task(struct mworker *w, struct mtask *m, const struct master_sched_box *box)
{
	struct work_queue_task *t = m->t;
	struct work_queue *q = w->q;
	m->w = w;
	m->state = MTASK_SENDING;
	m->objects_waiting = 0;
	m->dispatched_at = master_queue_now();
	m->unsent = !m->queued;
	m->held = false;
	w->unsent_running += m->unsent;
	master_worker_count(w, -1);
	w->ntasks++;
	master_worker_count(w, +1);
	master_worker_list_add(w, m);
	q->stats.tasks_on_workers++;
	q->stats.tasks_dispatched++;
	if (m->queued)
		q->stats.tasks_queued_on_workers++;
	t->try_count = m->try_;
	t->time_when_commit_start = time_now_us();
	free(t->host);
	t->host = xstrdup(w->addr);
	free(t->hostname);
	t->hostname = xstrdup(w->host ? w->host : "");
	free(t->worker_id);
	t->worker_id = xstrdup(w->id);
	if (!t->resources_allocated) {
		t->resources_allocated = xmalloc(sizeof *t->resources_allocated);
		rmsummary_init(t->resources_allocated);
	}
	t->resources_allocated->v[RM_CORES] = box->cores;
	t->resources_allocated->v[RM_MEMORY] = (double)box->memory;
	t->resources_allocated->v[RM_DISK] = (double)box->disk;
	t->resources_allocated->v[RM_GPUS] = (double)box->gpus;
	/* computed: chosen by the category at its first level, not declared, not a whole worker */
	t->allocation_computed = master_sched_task_level(m->st) == CATEGORY_LEVEL_FIRST &&
	                         t->resources_requested->v[RM_MEMORY] < 0 &&
	                         !(master_sched_task_chosen(m->st) & (UINT64_C(1) << RM_MEMORY)) &&
	                         category_get_stats(master_sched_category(q->sched, t->category))
	                                 ->first_alloc.v[RM_MEMORY] >= 0;

	if (w->max_tasks > 0 && ++w->tasks_sent >= w->max_tasks && w->sw) /* its last task */
		master_sched_worker_set_flags(
		    q->sched, w->sw, master_sched_worker_flags(w->sw) | MASTER_SCHED_DRAINING);
	/* One count held during the loop, so that a sender reporting at once cannot send the
	 * task before every missing object is queued. */
	m->objects_waiting = 1;
	int i = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next, i++) {
		if (!m->objects[i] || f->kind == WORK_QUEUE_FILE_URL)
			continue;
		struct mobject *o = master_worker_object_find(w, m->objects[i]);
		if (o)
			o->last_use = m->dispatched_at;
		if (o && o->present)
			continue;
		bool fresh = !o;
		if (fresh)
			o = master_worker_object_add(w, m->objects[i], m->obj_size[i]);
		VEC_RESIZE(o->wait, (size_t)o->nwait + 1);
		o->wait[o->nwait++] = m;
		m->objects_waiting++;
		if (!fresh)
			continue;
		bool is_dir = f->kind == WORK_QUEUE_FILE_DIRECTORY;
		if (master_shared_route(w, o, f->source, is_dir, m->id))
			continue; /* taken from its shared store, or after another worker of it */
		int rc = master_dispatch_send_object(w, o, f->source, is_dir, m->id);
		if (rc < 0) {
			master_shared_send_failed(w, o->name);
			master_worker_object_free(w, o);
			warn("%s: cannot send %s: %s", w->label, f->source, htc_strerror(rc));
			master_worker_finish(w, m, WORK_QUEUE_RESULT_INPUT_MISSING);
			return;
		}
		if (!master_worker_assigned(w, m) || m->state != MTASK_SENDING)
			return; /* the send failed at once and ended the task */
	}
	if (--m->objects_waiting == 0)
		send_task(w, m);
}

void master_dispatch_cancel(struct mworker *w, struct mtask *m, const char *reason)
{
	if (m->w != w)
		return;
	json_t *msg = json_pack("{s:s,s:i,s:i,s:s}", "m", "task_cancel", "id", m->id, "try",
	                        m->try_, "reason", reason);
	wq_conn_send_msg(w->c, msg);
	json_decref(msg);
	struct mcancel *c = xcalloc(1, sizeof *c);
	c->id = m->id;
	HASH_ADD(hh, w->cancelling, id, sizeof c->id, c);
	master_worker_detach(w, m);
	master_worker_clear_recv(m);
}

void master_dispatch_object_done(struct mworker *w, struct mobject *o, int how, bool no_room)
{
	struct work_queue *q = w->q;
	struct mtask **wait = o->wait;
	int nwait = o->nwait;
	o->wait = NULL;
	o->nwait = 0;
	/* tasks of an image archive wait for its first transfer (master_sched.h) */
	master_queue_request_pass(q);
	if (how > 0) {
		o->present = true;
	} else {
		if (no_room) {
			/* no room for the object: no task here until the next capacity, which
			 * the objects dropped now bring (the worker reports a change of its free
			 * disk) */
			debug(D_WQ, "%s: no room for %s", MW_NAME(w), o->name);
			if (w->sw)
				master_sched_worker_set_flags(q->sched, w->sw,
				                              master_sched_worker_flags(w->sw) |
				                                  MASTER_SCHED_FULL);
		}
		master_worker_object_free(w, o);
		if (no_room)
			master_full_no_room(w);
	}
	for (int k = 0; k < nwait; k++) {
		struct mtask *m = wait[k];
		if (!m || !master_worker_assigned(w, m) || m->state != MTASK_SENDING)
			continue;
		if (how > 0) {
			if (--m->objects_waiting == 0)
				send_task(w, m);
		} else if (how == 0) {
			master_sched_task_release(q->sched, m->st, master_queue_now());
			master_worker_back_to_ready(w, m);
		} else {
			master_worker_finish(w, m, WORK_QUEUE_RESULT_INPUT_MISSING);
		}
	}
	free(wait);
}

/* Called by the sender when a transfer ends. */
static void on_sent(struct wq_xfer_out *out, const struct wq_xfer_sent *r, void *user)
{
	(void)out;
	struct mworker *w = user;
	struct xtag *x = r->tag;
	struct work_queue *q = w->q;
	q->stats.bytes_sent += (int64_t)r->wire_bytes;
	if (x->kind == XTAG_OBJECT) {
		struct mobject *o = master_worker_object_find(w, x->object);
		bool ok = r->outcome == WQ_XFER_SENT ||
		          (r->outcome == WQ_XFER_REFUSED && r->code == WQ_XERR_HAVE);
		if (!ok)
			debug(D_WQ, "%s: object %s not sent: %s", MW_NAME(w), x->object, r->text);
		if (o && !ok)
			master_shared_send_failed(w, x->object);
		if (o)
			master_dispatch_object_done(w, o,
			                            ok                              ? 1
			                            : r->outcome == WQ_XFER_REFUSED ? 0
			                                                            : -1,
			                            r->outcome == WQ_XFER_REFUSED &&
			                                r->code == WQ_XERR_DISK_FULL);
		if (ok && q->txlog)
			master_txlog_transfer(q->txlog, 0, x->task, x->object, (int64_t)r->bytes,
			                      master_queue_now() - x->start, 1);
		free(x->object);
	} else {
		struct mtask *m = master_queue_task_lookup(q, x->task);
		if (m && master_worker_assigned(w, m) && m->try_ == x->try_) {
			m->t->bytes_sent += (int64_t)r->bytes;
			if (r->outcome == WQ_XFER_FAILED || r->outcome == WQ_XFER_ABORTED) {
				warn("%s: input of task %d could not be sent: %s", w->label, m->id,
				     r->text);
				master_sched_task_release(q->sched, m->st, master_queue_now());
				master_dispatch_cancel(w, m, "input missing");
				m->t->result = WORK_QUEUE_RESULT_INPUT_MISSING;
				master_queue_task_finish(q, m);
			}
		}
		if (r->outcome == WQ_XFER_SENT && q->txlog)
			master_txlog_transfer(q->txlog, 0, x->task, x->object, (int64_t)r->bytes,
			                      master_queue_now() - x->start, 0);
		free(x->object);
	}
	free(x);
}

static void on_peer_error(struct wq_xfer_out *out, uint32_t id, enum wq_xfer_error_code code,
                          const char *text, void *user)
{
	(void)out;
	struct mworker *w = user;
	debug(D_WQ, "%s: transfer %u refused after its end (%d): %s", MW_NAME(w), id, (int)code,
	      text);
}

/* The connection was closed with the send still queued or open: its tag is freed here. */
static void on_dropped(struct wq_xfer_out *out, void *tag, void *user)
{
	(void)out;
	(void)user;
	struct xtag *x = tag;
	free(x->object);
	free(x);
}

const struct wq_xfer_out_callbacks master_worker_out_cb = {
    .sent = on_sent,
    .peer_error = on_peer_error,
    .dropped = on_dropped,
};

/* ---- receiving ---------------------------------------------------------------------------- */

/* The margin of the master's disk that outputs never take: 1 % of the file system, at least
 * 32 MiB and at most 1 GiB (the application's own files, a makeflow log, need room too). */
static uint64_t space_margin(uint64_t fs_bytes)
{
	uint64_t m = fs_bytes / 100;
	if (m > (UINT64_C(1) << 30))
		m = UINT64_C(1) << 30;
	if (m < (UINT64_C(32) << 20))
		m = UINT64_C(32) << 20;
	return m;
}

/* The room for outputs on the file system SV describes: its free space less the margin and what
 * the open output transfers of every worker announced. */
static uint64_t room_of(const struct work_queue *q, const struct statvfs *sv, uint64_t *avail,
                        uint64_t *keep, uint64_t *held)
{
	uint64_t bs = sv->f_frsize ? (uint64_t)sv->f_frsize : (uint64_t)sv->f_bsize;
	*avail = (uint64_t)sv->f_bavail * bs;
	*keep = space_margin((uint64_t)sv->f_blocks * bs);
	*held = q->recv_reserved > 0 ? (uint64_t)q->recv_reserved : 0;
	return *avail > *keep + *held ? *avail - *keep - *held : 0;
}

/* Protocol 5.4: the receiver checks that an announced SIZE fits its disk before it writes
 * anything. SIZE (of WHAT) must fit room_of the file system holding DIR (or open as DIRFD when
 * DIR is NULL). 0, or -1 with R filled (disk_full). A file system that cannot be asked is not
 * refused here: the write reports its own errors. */
static int space_check(struct work_queue *q, const char *dir, int dirfd, const char *what,
                       int64_t size, struct wq_xfer_refusal *r)
{
	struct statvfs sv;
	if (size <= 0 || (dir ? statvfs(dir, &sv) : fstatvfs(dirfd, &sv)) < 0)
		return 0;
	uint64_t avail, keep, held;
	uint64_t room = room_of(q, &sv, &avail, &keep, &held);
	if ((uint64_t)size <= room)
		return 0;
	r->code = WQ_XERR_DISK_FULL;
	snprintf(r->text, sizeof r->text,
	         "%s: %lld bytes announced, the master's disk%s%s has %llu MB free (%llu MB kept "
	         "free, %llu MB announced by other transfers)",
	         what, (long long)size, dir ? " at " : "", dir ? dir : "",
	         (unsigned long long)(avail >> 20), (unsigned long long)(keep >> 20),
	         (unsigned long long)(held >> 20));
	return -1;
}

/* The refusal R of transfer IN, for output slot SLOT of M: its begin is remembered (task_done may
 * name it) and the output is missing, for the reason R gives. */
static void slot_refused(struct mworker *w, struct mtask *m, struct mtask_recv *slot,
                         const struct wq_xfer_incoming *in, const struct wq_xfer_refusal *r)
{
	warn("%s: task %d: transfer %u refused: %s", w->label, m->id, in->id, r->text);
	if (slot->tmp) {
		master_worker_rm_path(slot->tmp, slot->is_dir);
		free(slot->tmp);
		slot->tmp = NULL;
	}
	slot->xfer = in->id;
	slot->ok = false;
	slot->finished = true;
	slot->is_dir = in->is_dir;
	free(slot->refused);
	slot->refused = xstrdup(r->text);
}

/* Counts SIZE bytes of transfer RT against the master's disk until its end. */
static void reserve(struct mworker *w, struct rtag *rt, int64_t size)
{
	rt->reserved = size > 0 ? size : 0;
	w->recv_reserved += rt->reserved;
	w->q->recv_reserved += rt->reserved;
}

/* An increment of watched output F (slot SLOT) of M: its offset must be the bytes announced so
 * far in this try (otherwise a violation); the bytes go straight to the final path, which the
 * first increment of the try truncates (protocol 5.6). */
static int watch_begin(struct mworker *w, struct mtask *m, struct work_queue_file *f,
                       struct mtask_recv *slot, const struct wq_xfer_incoming *in,
                       struct wq_xfer_dest *dest, struct wq_xfer_refusal *r)
{
	const struct wq_target *tg = in->target;
	if (!(w->caps & WQ_CAP_WATCH) || !(f->flags & WORK_QUEUE_WATCH) || in->is_dir) {
		wq_conn_violation(w->c, "proto",
		                  "transfer %u: output %lld of task %d is not watched", in->id,
		                  (long long)tg->index, m->id);
		r->code = WQ_XERR_NO_TASK;
		snprintf(r->text, sizeof r->text, "output %lld is not watched",
		         (long long)tg->index);
		return -1;
	}
	if (tg->offset != slot->watch_next) {
		wq_conn_violation(
		    w->c, "proto",
		    "transfer %u: offset %lld of output %lld of task %d, expected %lld", in->id,
		    (long long)tg->offset, (long long)tg->index, m->id,
		    (long long)slot->watch_next);
		r->code = WQ_XERR_IO; /* refused; the connection is closing anyway */
		snprintf(r->text, sizeof r->text, "offset %lld, expected %lld",
		         (long long)tg->offset, (long long)slot->watch_next);
		return -1;
	}
	if (slot->watch_broken) {
		r->code = WQ_XERR_IO;
		snprintf(r->text, sizeof r->text, "an earlier part of output %lld failed",
		         (long long)tg->index);
		return -1;
	}
	char *wdir = path_dirname(f->source);
	int sc = space_check(w->q, wdir, -1, f->source, in->size, r);
	free(wdir);
	if (sc < 0) {
		warn("%s: task %d: transfer %u refused: %s", w->label, m->id, in->id, r->text);
		slot->watch_broken = true;
		free(slot->refused);
		slot->refused = xstrdup(r->text);
		return -1;
	}
	int fl = O_WRONLY | O_CREAT | O_CLOEXEC | (slot->watching ? 0 : O_TRUNC);
	int fd = open(f->source, fl, in->exec ? 0755 : 0644);
	if (fd < 0 || lseek(fd, (off_t)tg->offset, SEEK_SET) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		slot->watch_broken = true;
		r->code = e == ENOSPC || e == EDQUOT ? WQ_XERR_DISK_FULL : WQ_XERR_IO;
		snprintf(r->text, sizeof r->text, "%s: %s", f->source, strerror(e));
		return -1;
	}
	if (slot->tmp) { /* a whole-file transfer of this try came first: it is replaced */
		master_worker_rm_path(slot->tmp, slot->is_dir);
		free(slot->tmp);
		slot->tmp = NULL;
	}
	slot->watching = true;
	slot->watch_next += in->size;
	slot->watch_inflight++;
	slot->xfer = in->id;
	slot->ok = false;
	slot->finished = false;
	slot->is_dir = false;
	debug(D_WQ, "%s: task %d output %s: %lld bytes at %lld", MW_NAME(w), m->id, f->remote,
	      (long long)in->size, (long long)tg->offset);
	struct rtag *rt = xcalloc(1, sizeof *rt);
	rt->task = m->id;
	rt->try_ = m->try_;
	rt->index = (int)tg->index;
	rt->watch = true;
	reserve(w, rt, in->size);
	dest->fd = fd;
	dest->fsync = w->q->sync_outputs;
	dest->tag = rt;
	return 0;
}

/* The end of increment IN of M's watched output (tag RT). */
static void watch_end(struct mworker *w, struct mtask *m, const struct rtag *rt,
                      const struct wq_xfer_incoming *in, int status, const char *text)
{
	struct mtask_recv *slot = &m->outs[rt->index];
	if (slot->watch_inflight > 0)
		slot->watch_inflight--;
	if (status == 0) {
		slot->watch_done += in->size;
	} else {
		slot->watch_broken = true;
		debug(D_WQ, "%s: part of output %d of task %d not stored: %s", MW_NAME(w),
		      rt->index, m->id, text ? text : htc_strerror(status));
	}
	if (slot->xfer == in->id) {
		slot->ok = status == 0;
		slot->finished = true;
	}
}

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	struct mworker *w = user;
	const struct wq_target *tg = in->target;
	struct mtask *m = master_queue_task_lookup(w->q, tg->task);
	if ((tg->kind != WQ_TARGET_OUTPUT && tg->kind != WQ_TARGET_STDOUT) ||
	    !master_worker_assigned(w, m)) {
		r->code = WQ_XERR_NO_TASK;
		snprintf(r->text, sizeof r->text, "task %lld is not running here",
		         (long long)tg->task);
		return -1;
	}
	struct mtask_recv *slot;
	char *tmp;
	int index = -1;
	if (tg->kind == WQ_TARGET_STDOUT) {
		const char *dir = master_queue_tmpdir(w->q);
		if (!dir) {
			r->code = WQ_XERR_IO;
			snprintf(r->text, sizeof r->text, "the master has no temporary directory");
			return -1;
		}
		slot = &m->out_stdout;
		if (space_check(w->q, dir, -1, "stdout", in->size, r) < 0) {
			slot_refused(w, m, &m->out_stdout, in, r);
			return -1;
		}
		tmp = xasprintf("%s/stdout.%d.%s.%u", dir, m->id, w->id, in->id);
	} else {
		struct work_queue_file *f = master_worker_nth_file(m->t->outputs, (int)tg->index);
		/* a directory for a file output only under `dirout`, never for a watched one */
		bool declared_dir = f && f->kind == WORK_QUEUE_FILE_DIRECTORY;
		bool dir_ok = declared_dir ||
		              (f && (w->caps & WQ_CAP_DIROUT) && !(f->flags & WORK_QUEUE_WATCH));
		if (!f || tg->index < 0 || (in->is_dir && !dir_ok) ||
		    (!in->is_dir && declared_dir)) {
			r->code = WQ_XERR_NO_TASK;
			snprintf(r->text, sizeof r->text, "task %d has no such output %lld", m->id,
			         (long long)tg->index);
			return -1;
		}
		index = (int)tg->index;
		slot = &m->outs[index];
		if (tg->offset >= 0)
			return watch_begin(w, m, f, slot, in, dest, r);
		char *dir = path_dirname(f->source);
		if (!in->is_dir && space_check(w->q, dir, -1, f->source, in->size, r) < 0) {
			free(dir);
			slot_refused(w, m, slot, in, r);
			return -1;
		}
		free(dir);
		tmp = master_partial_name(w->q->partial_tag, f->source, in->id);
	}
	if (slot->tmp) {
		master_worker_rm_path(slot->tmp, slot->is_dir);
		free(slot->tmp);
	}
	slot->tmp = tmp;
	slot->xfer = in->id;
	slot->ok = false;
	slot->finished = false;
	slot->is_dir = in->is_dir;
	if (m->state == MTASK_RUNNING || m->state == MTASK_SENDING) {
		if (m->state == MTASK_SENDING)
			w->q->stats.tasks_running++;
		m->state = MTASK_RECEIVING;
	}
	struct rtag *rt = xcalloc(1, sizeof *rt);
	rt->task = m->id;
	rt->try_ = m->try_;
	rt->index = index;
	rt->dir_room = -1;
	if (!in->is_dir)
		reserve(w, rt, in->size);
	dest->tmp_path = tmp;
	dest->fsync = w->q->sync_outputs;
	dest->tag = rt;
	return 0;
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	struct mworker *w = user;
	struct rtag *rt = in->tag;
	if (!rt)
		return;
	struct mtask *m = master_queue_task_lookup(w->q, rt->task);
	w->recv_reserved -= rt->reserved;
	w->q->recv_reserved -= rt->reserved;
	w->q->stats.bytes_received += in->size > 0 ? in->size : 0;
	if (m && master_worker_assigned(w, m) && m->try_ == rt->try_) {
		struct mtask_recv *slot = rt->index < 0 ? &m->out_stdout : &m->outs[rt->index];
		m->t->bytes_received += in->size > 0 ? in->size : 0;
		if (rt->watch) {
			watch_end(w, m, rt, in, status, text);
		} else if (slot->xfer == in->id) {
			slot->ok = status == 0;
			slot->finished = true;
			if (status != 0) {
				debug(D_WQ, "%s: output of task %d not stored: %s", MW_NAME(w),
				      m->id, text ? text : htc_strerror(status));
				free(slot->tmp);
				slot->tmp = NULL;
			}
		}
		free(rt);
		if (m->pending_done && master_dispatch_done_ready(m, m->pending_done)) {
			struct wq_task_done *d = m->pending_done;
			m->pending_done = NULL;
			master_dispatch_handle_done(w, m, d);
			wq_task_done_free(d);
		}
		return;
	} else if (status == 0 && in->tmp_path && !rt->watch) {
		master_worker_rm_path(in->tmp_path, in->is_dir);
	}
	free(rt);
}

/* A member of SIZE bytes of an output directory (tag RT): each must fit the master's disk now,
 * and all of them together too (a directory is not reserved whole: its size is unknown at
 * dir_begin). */
static int member_begin(struct wq_xfer_in *i, void *dir_tag, int dirfd, int64_t size,
                        struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	struct mworker *w = user;
	struct rtag *rt = dir_tag;
	if (!rt || size <= 0)
		return 0;
	struct statvfs sv;
	if (rt->members == 0 && fstatvfs(dirfd, &sv) == 0) {
		uint64_t avail, keep, held;
		uint64_t room = room_of(w->q, &sv, &avail, &keep, &held);
		rt->dir_room = room > INT64_MAX ? INT64_MAX : (int64_t)room;
	}
	rt->members += size;
	struct mtask *m = master_queue_task_lookup(w->q, rt->task);
	struct work_queue_file *f =
	    m && rt->index >= 0 ? master_worker_nth_file(m->t->outputs, rt->index) : NULL;
	const char *what = f ? f->source : "output directory";
	/* the members written so far are no longer free space: the total is compared with the
	 * room there was at the first one */
	bool refused = space_check(w->q, NULL, dirfd, what, size, r) < 0;
	if (!refused && rt->dir_room >= 0 && rt->members > rt->dir_room) {
		r->code = WQ_XERR_DISK_FULL;
		snprintf(r->text, sizeof r->text,
		         "%s: its members announced %lld bytes in all, the master's disk had room "
		         "for %lld",
		         what, (long long)rt->members, (long long)rt->dir_room);
		refused = true;
	}
	if (!refused)
		return 0;
	warn("%s: task %lld: a member of an output directory refused: %s", w->label,
	     (long long)rt->task, r->text);
	if (m && f && master_worker_assigned(w, m) && m->try_ == rt->try_) {
		free(m->outs[rt->index].refused);
		m->outs[rt->index].refused = xstrdup(r->text);
	}
	return -1;
}

const struct wq_xfer_in_callbacks master_worker_in_cb = {recv_begin, recv_end};
wq_xfer_member_fn *const master_worker_member_check = member_begin;
