/* master_worker.c: one connected worker on the Work Queue master (doc/work-queue-protocol.md 7.1):
 * accept and handshake through wq_handshake, the INIT state until identity, capacity and the last
 * cache_have, then ACTIVE: its resources in the scheduler, its cache view, the dispatch of its
 * messages (task_running, task_done, task_refused, draining, bye, error) through a table of
 * handlers indexed by message id, drain, and the lost-worker procedure. The task transfers and
 * results are in master_dispatch.c and master_task_done.c. */
#include "master_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utlist.h>

#include "debug.h"
#include "htc_error.h"
#include "master_images.h"
#include "path.h"
#include "rmsummary.h"
#include "timeutil.h"
#include "wq_msg.h"
#include "wq_name.h"
#include "wq_tls_filter.h"
#include "xalloc.h"
#include "banned.h"

#define SOFTWARE "htc 0.1.0"
#define MASTER_CAPS                                                                                \
	(WQ_CAP_ZLIB | WQ_CAP_FETCH | WQ_CAP_WATCH | WQ_CAP_QUEUE | WQ_CAP_DIROUT |                \
	 WQ_CAP_CONTAINERS | WQ_CAP_SHARED_CACHE | WQ_CAP_IMAGES | WQ_CAP_GROW |                   \
	 WQ_CAP_SHARED_DIRS)
#define DISMISS_LINGER_MS 5000
#define HS_DEADLINE_MS    10000 /* accept -> end of hello and password (protocol 2.4) */

static void lost(struct mworker *w, enum master_txlog_leave why);

bool master_worker_assigned(struct mworker *w, struct mtask *m)
{
	return m && m->w == w &&
	       (m->state == MTASK_SENDING || m->state == MTASK_RUNNING ||
	        m->state == MTASK_RECEIVING);
}

struct mobject *master_worker_object_find(struct mworker *w, const char *name)
{
	struct mobject *o = NULL;
	HASH_FIND_STR(w->objects, name, o);
	return o;
}

void master_worker_object_free(struct mworker *w, struct mobject *o)
{
	HASH_DEL(w->objects, o);
	free(o->name);
	free(o->wait);
	free(o->take_source);
	free(o);
}

struct mobject *master_worker_object_add(struct mworker *w, const char *name, int64_t size)
{
	struct mobject *o = master_worker_object_find(w, name);
	if (o)
		return o;
	o = xcalloc(1, sizeof *o);
	o->name = xstrdup(name);
	o->size = size;
	o->last_use = master_queue_now();
	HASH_ADD_KEYPTR(hh, w->objects, o->name, strlen(o->name), o);
	return o;
}

void master_worker_rm_path(const char *p, bool is_dir)
{
	if (!p)
		return;
	if (is_dir)
		path_rm_rf(p);
	else
		unlink(p);
}

void master_worker_clear_recv(struct mtask *m)
{
	for (int i = 0; i < m->n_outputs; i++) {
		master_worker_rm_path(m->outs[i].tmp, m->outs[i].is_dir);
		free(m->outs[i].tmp);
		free(m->outs[i].refused);
		memset(&m->outs[i], 0, sizeof m->outs[i]);
	}
	master_worker_rm_path(m->out_stdout.tmp, false);
	free(m->out_stdout.tmp);
	memset(&m->out_stdout, 0, sizeof m->out_stdout);
	wq_task_done_free(m->pending_done);
	m->pending_done = NULL;
}

int64_t master_worker_cached_bytes(struct mworker *w, struct mtask *m)
{
	int64_t n = 0;
	for (int i = 0; i < m->n_inputs; i++) {
		if (!m->objects[i])
			continue;
		struct mobject *o = master_worker_object_find(w, m->objects[i]);
		if (o && o->present)
			n += m->obj_size[i];
	}
	return n;
}

struct work_queue_file *master_worker_nth_file(struct work_queue_file *f, int i)
{
	while (f && i-- > 0)
		f = f->next;
	return f;
}

void master_worker_list_add(struct mworker *w, struct mtask *m)
{
	master_worker_list_del(m);
	DL_APPEND2(w->assigned, m, wprev, wnext);
	m->listed = w;
	master_scalestat_listed(w->q, m, true, master_queue_now());
}

void master_worker_list_del(struct mtask *m)
{
	if (!m->listed)
		return;
	struct mworker *w = m->listed;
	DL_DELETE2(w->assigned, m, wprev, wnext);
	m->listed = NULL;
	double now = master_queue_now();
	master_scalestat_listed(w->q, m, false, now);
	if (!w->assigned)
		w->idle_since = now;
}

/* Takes M off W (its box released in the scheduler by the caller). */
void master_worker_detach(struct mworker *w, struct mtask *m)
{
	if (m->w == w && m->objects_waiting > 0) {
		/* still waiting for objects: the objects forget it */
		struct mobject *o, *tmp;
		HASH_ITER(hh, w->objects, o, tmp)
		{
			for (int k = 0; k < o->nwait; k++)
				if (o->wait[k] == m)
					o->wait[k] = NULL;
		}
		m->objects_waiting = 0;
	}
	bool release = false;
	if (m->w == w && m->unsent) {
		m->unsent = false;
		release = --w->unsent_running == 0 && w->nheld > 0 &&
		          (w->state == MW_ACTIVE || w->state == MW_DRAINING);
	}
	m->held = false;
	if (m->w == w) {
		m->w = NULL;
		master_worker_count(w, -1);
		w->ntasks--;
		master_worker_count(w, +1);
		master_worker_list_del(m);
		w->q->stats.tasks_on_workers--;
		if (m->queued) {
			m->queued = false;
			w->q->stats.tasks_queued_on_workers--;
		}
		if (m->state == MTASK_RUNNING || m->state == MTASK_RECEIVING)
			w->q->stats.tasks_running--;
	}
	if (release)
		master_dispatch_release_held(w);
}

/* M goes back to READY, same try, not counted. */
void master_worker_back_to_ready(struct mworker *w, struct mtask *m)
{
	master_worker_detach(w, m);
	master_worker_clear_recv(m);
	master_queue_task_requeue(w->q, m);
}

/* M ends for good with RESULT. */
void master_worker_finish(struct mworker *w, struct mtask *m, enum work_queue_result result)
{
	if (m->w == w) {
		master_sched_task_release(w->q->sched, m->st, master_queue_now());
		master_worker_detach(w, m);
	}
	m->t->result = result;
	master_worker_clear_recv(m);
	master_queue_task_finish(w->q, m);
}
static void set_label(struct mworker *w)
{
	if (w->host)
		snprintf(w->label, sizeof w->label, MW_LABEL_PREFIX "%s (%s, id %.8s)", w->addr,
		         w->host, w->id);
	else
		snprintf(w->label, sizeof w->label, MW_LABEL_PREFIX "%s", w->addr);
	wq_conn_set_label(w->c, w->label);
}
/* ---- messages ----------------------------------------------------------------------------- */

static int msg_task_ref(struct mworker *w, json_t *msg, enum wq_msg_id mid, struct mtask **out,
                        int64_t *try_out, bool *cancelled)
{
	const char *name = wq_msg_name(mid);
	struct wq_msg_v v = {name, NULL, NULL};
	int64_t id = 0, tr = 0;
	*cancelled = false;
	if (wq_msg_int(&v, msg, "id", WQ_REQ, 1, WQ_MAX_ID, &id) < 0 ||
	    wq_msg_int(&v, msg, "try", WQ_REQ, 1, WQ_MAX_ID, &tr) < 0) {
		wq_conn_violation(w->c, "proto", "%s", v.why);
		free(v.why);
		return -1;
	}
	struct mcancel *c = NULL;
	HASH_FIND(hh, w->cancelling, &id, sizeof id, c);
	if (c) {
		*cancelled = true;
		if (mid == WQ_MSG_TASK_CANCELLED) {
			HASH_DEL(w->cancelling, c);
			free(c);
			struct mtask *fa = master_queue_task_lookup(w->q, id);
			if (fa && fa->state == MTASK_CANCELLING)
				master_queue_task_requeue(w->q, fa);
		}
		return 0;
	}
	struct mtask *m = master_queue_task_lookup(w->q, id);
	if (!master_worker_assigned(w, m) || m->try_ != tr) {
		wq_conn_violation(
		    w->c, "proto",
		    "message \"%s\" for task %lld which is not assigned to this worker", name,
		    (long long)id);
		return -1;
	}
	*out = m;
	*try_out = tr;
	return 0;
}

static void activate(struct mworker *w)
{
	struct work_queue *q = w->q;
	struct master_sched_worker_spec spec = {0};
	spec.id = w->id;
	spec.total = w->total;
	spec.features = (const char *const *)w->labels;
	spec.n_features = w->nlabels;
	spec.queue_max = (w->caps & WQ_CAP_QUEUE) ? w->queue_max : 0;
	spec.grow_step_mb = w->grow_step;
	spec.lends_cores = w->cpu_grow;
	spec.grows_containers = w->cgroups_v1;
	spec.data = w;
	master_worker_count(w, -1);
	w->sw = master_sched_worker_add(q->sched, &spec);
	master_worker_count(w, +1);
	if (!w->sw) {
		wq_conn_violation(w->c, "proto", "unusable capacity");
		return;
	}
	if (w->disk_full)
		master_sched_worker_set_flags(q->sched, w->sw, MASTER_SCHED_FULL);
	w->state = MW_ACTIVE;
	w->was_active = true;
	w->init_counted = false;
	q->stats.workers_init--;
	q->stats.workers_connected++;
	q->stats.workers_joined++;
	w->counted = true;
	master_queue_worker_resources(q, NULL, &w->total);
	if (q->txlog) {
		struct rmsummary r;
		rmsummary_init(&r);
		r.v[RM_CORES] = w->total.cores;
		r.v[RM_MEMORY] = (double)w->total.memory;
		r.v[RM_DISK] = (double)w->total.disk;
		r.v[RM_GPUS] = (double)w->total.gpus;
		master_txlog_worker_resources(q->txlog, w->id, &r);
	}
	debug(D_WQ, "%s: active (%g cores, %lld MB memory, %lld MB disk)", MW_NAME(w),
	      w->total.cores, (long long)w->total.memory, (long long)w->total.disk);
	if (w->disk_full) /* full from the start: its cache_have is complete now */
		master_full_capacity(w, true);
	master_queue_request_pass(q);
}

static void on_identity(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct wq_identity *id = NULL;
	char *why = NULL;
	if (w->have_identity) {
		wq_conn_violation(w->c, "proto", "message \"identity\" sent twice");
		return;
	}
	if (wq_msg_identity_parse(msg, &id, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	w->have_identity = true;
	free(w->host);
	w->host = xstrdup(id->host);
	w->max_tasks = id->max_tasks;
	w->queue_max = (int)id->queue_max;
	w->grow_step = (w->caps & WQ_CAP_GROW) ? id->memory_grow_step : 0;
	w->cpu_grow = (w->caps & WQ_CAP_GROW) && id->cpu_grow;
	w->cgroups_v1 = id->cgroups == WQ_CGROUPS_V1;
	if ((w->caps & WQ_CAP_QUEUE) && w->queue_max < 1) {
		wq_identity_free(id);
		wq_conn_violation(w->c, "proto",
		                  "message \"identity\": key \"queue_max\" is required with "
		                  "capability \"queue\"");
		return;
	}
	/* the labels the worker gives, but not the master's own (those starting with @), and the
	 * feature of workers that run the containers tasks name */
	w->labels = xcalloc(id->nlabels + 2, sizeof *w->labels);
	w->nlabels = 0;
	for (size_t k = 0; k < id->nlabels; k++)
		if (id->labels[k][0] != '@')
			w->labels[w->nlabels++] = xstrdup(id->labels[k]);
	if ((w->caps & WQ_CAP_CONTAINERS) && id->docker)
		w->labels[w->nlabels++] = xstrdup(WORK_QUEUE_CONTAINERS_FEATURE);
	if ((w->caps & WQ_CAP_SHARED_CACHE) && !id->store) {
		wq_identity_free(id);
		wq_conn_violation(w->c, "proto",
		                  "message \"identity\": key \"store\" is required with "
		                  "capability \"shared_cache\"");
		return;
	}
	if (w->caps & WQ_CAP_SHARED_CACHE)
		master_shared_join(w, id->store);
	wq_identity_free(id);
	if (w->deadline)
		uv_timer_stop(w->deadline);
	set_label(w);
	double left = master_abort_blocked_for(w->q, w->host);
	if (left > 0) {
		char text[128];
		if (isinf(left))
			snprintf(text, sizeof text, "host %s is blocked by the master", w->host);
		else
			snprintf(text, sizeof text, "host %s is blocked for %.0f more seconds",
			         w->host, ceil(left));
		wq_conn_refuse(w->c, "blocked", text, text);
		return;
	}
	if (w->q->txlog)
		master_txlog_worker_connect(w->q->txlog, w->id, w->addr, w->host);
}

static void on_capacity(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct wq_capacity *c = NULL;
	char *why = NULL;
	if (!w->have_identity) {
		wq_conn_violation(w->c, "proto", "message \"capacity\" before \"identity\"");
		return;
	}
	if (wq_msg_capacity_parse(msg, &c, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	struct master_sched_box old = w->total;
	w->total.cores = c->cores.total;
	w->total.memory = (int64_t)c->memory.total;
	w->total.gpus = (int64_t)c->gpus.total;
	/* Disk: what is free for new tasks plus what running tasks hold, so that a share of the
	 * worker never asks for disk the cache already uses. */
	int64_t committed = 0;
	if (w->sw) {
		struct master_sched_box tot, fr;
		master_sched_worker_total(w->sw, &tot);
		master_sched_worker_free(w->sw, &fr);
		committed = tot.disk - fr.disk > 0 ? tot.disk - fr.disk : 0;
	}
	/* A margin of 2 % (at least 16 MB) of the free space absorbs what other processes
	 * write between this report and the next task. */
	int64_t margin = c->disk_free / 50 > 16 ? c->disk_free / 50 : 16;
	int64_t usable = c->disk_free > margin ? c->disk_free - margin : 0;
	w->total.disk = usable + committed;
	if (w->total.disk > (int64_t)c->disk.total)
		w->total.disk = (int64_t)c->disk.total;
	w->disk_free = c->disk_free;
	bool was_full = w->disk_full;
	w->disk_full = c->disk_full;
	wq_capacity_free(c);
	w->have_capacity = true;
	if (w->sw) {
		master_sched_worker_set_total(w->q->sched, w->sw, &w->total);
		unsigned fl = master_sched_worker_flags(w->sw) & ~(unsigned)MASTER_SCHED_FULL;
		if (w->disk_full)
			fl |= MASTER_SCHED_FULL; /* cleared by a capacity without disk_full */
		master_sched_worker_set_flags(w->q->sched, w->sw, fl);
		master_queue_worker_resources(w->q, &old, &w->total);
		master_queue_request_pass(w->q);
	}
	master_full_capacity(w, was_full);
}

static void on_cache_have(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct worker_cache_list *l = NULL;
	char *why = NULL;
	if (wq_msg_cache_have_parse(msg, &l, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	for (size_t k = 0; k < l->n; k++)
		master_worker_object_add(w, l->names[k], l->sizes[k])->present = true;
	bool last = l->last;
	worker_cache_list_free(l);
	if (w->state == MW_INIT && last) {
		if (!w->have_identity || !w->have_capacity) {
			wq_conn_violation(
			    w->c, "proto",
			    "message \"cache_have\" with last before \"identity\" and "
			    "\"capacity\"");
			return;
		}
		activate(w);
	} else if (last) {
		master_queue_request_pass(w->q);
	}
}

static void on_task_refused(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	struct mtask *m = NULL;
	int64_t tr;
	bool cancelled;
	if (msg_task_ref(w, msg, mid, &m, &tr, &cancelled) < 0 || cancelled)
		return;
	static const char *const codes[] = {
	    "disk_full", "overcommit", "missing_object", "bad_name", "draining", "busy", NULL};
	struct wq_msg_v v = {"task_refused", NULL, NULL};
	int code = 0;
	const char *text = "";
	if (wq_msg_enum(&v, msg, "code", WQ_REQ, codes, &code) < 0 ||
	    wq_msg_str(&v, msg, "text", 0, WQ_TEXT_RECV_MAX, &text, NULL) < 0) {
		wq_conn_violation(w->c, "proto", "%s", v.why);
		free(v.why);
		return;
	}
	debug(D_WQ, "%s: task %d refused: %s %s", MW_NAME(w), m->id, codes[code], text);
	if (m->queued && (code == 1 || code == 5) && w->sw &&
	    master_sched_worker_queue_max(w->sw) > 0) {
		/* The worker's FIFO disagrees with ours: no more prefetch there, rather than a
		 * loop of sends and refusals. */
		warn("%s: queued task %d refused (%s): no more prefetch to this worker", w->label,
		     m->id, codes[code]);
		master_sched_worker_set_queue_max(w->q->sched, w->sw, 0);
	}
	if (code == 3) { /* bad_name */
		master_worker_finish(w, m, WORK_QUEUE_RESULT_INVALID_TASK);
		return;
	}
	if (code == 2) { /* missing_object: forget the object(s) the text names */
		for (int k = 0; k < m->n_inputs; k++)
			if (m->objects[k] && strstr(text, m->objects[k])) {
				struct mobject *o = master_worker_object_find(w, m->objects[k]);
				if (o && o->present)
					master_worker_object_free(w, o);
			}
	} else if (code == 0) {
		/* The free disk shrank since the last capacity: count 5 % less on this worker
		 * (so shares of it fit again) until the next capacity says how much is free. A
		 * worker whose disk is really full says so (disk_full) and gets no task. */
		if (w->sw) {
			struct master_sched_box old = w->total;
			int64_t cut = w->total.disk / 20 > 64 ? w->total.disk / 20 : 64;
			w->total.disk = w->total.disk > cut ? w->total.disk - cut : 0;
			master_sched_worker_set_total(w->q->sched, w->sw, &w->total);
			master_queue_worker_resources(w->q, &old, &w->total);
		}
	} else if (code == 1) {
		warn("%s: task %d refused as overcommitted: bookkeeping mismatch", w->label, m->id);
	} else if (code == 4) {
		w->state = MW_DRAINING;
		if (w->sw)
			master_sched_worker_set_flags(w->q->sched, w->sw,
			                              master_sched_worker_flags(w->sw) |
			                                  MASTER_SCHED_DRAINING);
	}
	master_sched_task_release(w->q->sched, m->st, master_queue_now());
	master_worker_back_to_ready(w, m);
}

static void on_xfer_error(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	wq_xfer_out_message(w->out, msg, wq_msg_name(mid));
}

/* xfer_begin, xfer_end, xfer_abort and dir_*: the receiver's. */
static void on_xfer_in(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	wq_xfer_in_message_id(w->in, msg, mid);
}

static void on_task_running(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	struct mtask *m = NULL;
	int64_t tr;
	bool cancelled;
	if (msg_task_ref(w, msg, mid, &m, &tr, &cancelled) < 0 || cancelled)
		return;
	double now = master_queue_now();
	/* A queued task starts now: committed here too if the master still held it as queued
	 * (the worker freed room before reporting), its running time from now. */
	master_sched_task_started(w->q->sched, m->st, now);
	if (m->queued) {
		m->queued = false;
		master_scalestat_started(w->q, m, now);
		w->q->stats.tasks_queued_on_workers--;
		if (w->q->txlog)
			master_txlog_task(w->q->txlog, m->id, "RUNNING", w->id,
			                  m->t->resources_allocated);
	}
	if (m->state == MTASK_SENDING) {
		m->state = MTASK_RUNNING;
		m->running_since = now;
		master_abort_started(w->q, m);
		w->q->stats.tasks_running++;
		m->t->time_when_commit_end = time_now_us();
	}
}

/* `task_resized` (capability `grow`, protocol 5.6): the worker grew or shrank a running task;
 * its box on this worker follows, so the worker is not sent more than it has free. */
static void on_task_resized(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	struct mtask *m = NULL;
	int64_t tr;
	bool cancelled;
	if (!(w->caps & WQ_CAP_GROW)) {
		wq_conn_violation(w->c, "proto",
		                  "message \"task_resized\" needs the capability "
		                  "\"grow\"");
		return;
	}
	json_t *mem = json_object_get(msg, "memory");
	if (!json_is_integer(mem) || json_integer_value(mem) < 0) {
		wq_conn_violation(w->c, "proto",
		                  "message \"task_resized\": \"memory\" is not an integer >= 0");
		return;
	}
	if (msg_task_ref(w, msg, mid, &m, &tr, &cancelled) < 0 || cancelled)
		return;
	int64_t mb = json_integer_value(mem);
	if (master_sched_task_resize_memory(w->q->sched, m->st, mb) == 0)
		debug(D_WQ, "%s: task %d now holds %lld MB of memory", MW_NAME(w), m->id,
		      (long long)mb);
}

static void on_task_done(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	struct mtask *m = NULL;
	int64_t tr;
	bool cancelled;
	if (msg_task_ref(w, msg, mid, &m, &tr, &cancelled) < 0 || cancelled)
		return;
	if (m->pending_done) {
		wq_conn_violation(w->c, "proto",
		                  "message \"task_done\" for task %d which is not assigned to "
		                  "this worker",
		                  m->id);
		return;
	}
	struct wq_task_done *d = NULL;
	char *why = NULL;
	if (wq_msg_task_done_parse(msg, &d, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	char bad[256];
	if (master_dispatch_done_check(m, d, bad, sizeof bad) < 0) {
		/* the worker's word cannot be trusted: the connection ends and the lost-worker
		 * procedure puts the task back to READY with the same try */
		wq_task_done_free(d);
		wq_conn_violation(w->c, "proto", "%s", bad);
		return;
	}
	if (!master_dispatch_done_ready(m, d)) {
		m->pending_done = d;
		return;
	}
	master_dispatch_handle_done(w, m, d);
	wq_task_done_free(d);
}

static void on_task_cancelled(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	struct mtask *m = NULL;
	int64_t tr;
	bool cancelled;
	msg_task_ref(w, msg, mid, &m, &tr, &cancelled);
}

static void on_draining(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)msg;
	(void)mid;
	w->state = MW_DRAINING;
	if (w->sw)
		master_sched_worker_set_flags(
		    w->q->sched, w->sw, master_sched_worker_flags(w->sw) | MASTER_SCHED_DRAINING);
}

static void on_bye(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)msg;
	(void)mid;
	w->state = MW_CLOSING;
	wq_conn_close_now(w->c);
}

static void on_error(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	struct wq_error e;
	char *why = NULL;
	if (wq_msg_error_parse(msg, &e, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	char *text = wq_msg_escape(e.text, strlen(e.text), 1024, false);
	if (e.fatal) {
		warn("%s: worker error %s: %s", w->label, e.code, text);
		w->state = MW_CLOSING;
		wq_conn_close_now(w->c);
	} else {
		notice("%s: %s: %s", w->label, e.code, text);
	}
	free(text);
	wq_msg_error_free(&e);
}

static void on_cache_taken(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	master_shared_on_taken(w, msg);
}

static void on_store_have(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	master_shared_on_store_have(w, msg);
}

static void on_query(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	master_status_query(w, msg);
}

/* ping and pong reach here only while keepalive is off (wq_conn answers them otherwise). */
static void on_ping_pong(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)msg;
	debug(D_WQ, "%s: %s ignored", MW_NAME(w), wq_msg_name(mid));
}

static void on_images(struct mworker *w, json_t *msg, enum wq_msg_id mid)
{
	(void)mid;
	master_images_on_message(w, msg);
}

typedef void msg_handler(struct mworker *w, json_t *msg, enum wq_msg_id mid);

/* The messages of a worker (and of a status client) after the handshake, by id. wq_msg_check has
 * refused those from the wrong side or in the wrong state before; one without a handler here is
 * refused as not expected from a worker. */
static msg_handler *const handlers[WQ_MSG_COUNT] = {
    [WQ_MSG_IDENTITY] = on_identity,
    [WQ_MSG_CAPACITY] = on_capacity,
    [WQ_MSG_CACHE_HAVE] = on_cache_have,
    [WQ_MSG_CACHE_TAKEN] = on_cache_taken,
    [WQ_MSG_STORE_HAVE] = on_store_have,
    [WQ_MSG_IMAGES] = on_images,
    [WQ_MSG_XFER_ERROR] = on_xfer_error,
    [WQ_MSG_XFER_BEGIN] = on_xfer_in,
    [WQ_MSG_XFER_END] = on_xfer_in,
    [WQ_MSG_XFER_ABORT] = on_xfer_in,
    [WQ_MSG_DIR_BEGIN] = on_xfer_in,
    [WQ_MSG_DIR_MKDIR] = on_xfer_in,
    [WQ_MSG_DIR_END] = on_xfer_in,
    [WQ_MSG_DIR_ABORT] = on_xfer_in,
    [WQ_MSG_TASK_RUNNING] = on_task_running,
    [WQ_MSG_TASK_DONE] = on_task_done,
    [WQ_MSG_TASK_REFUSED] = on_task_refused,
    [WQ_MSG_TASK_RESIZED] = on_task_resized,
    [WQ_MSG_TASK_CANCELLED] = on_task_cancelled,
    [WQ_MSG_DRAINING] = on_draining,
    [WQ_MSG_BYE] = on_bye,
    [WQ_MSG_ERROR] = on_error,
    [WQ_MSG_QUERY] = on_query,
    [WQ_MSG_PING] = on_ping_pong,
    [WQ_MSG_PONG] = on_ping_pong,
};

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	struct mworker *w = user;
	(void)c;
	if (w->h && wq_handshake_message(w->h, msg, name, raw, len))
		return;
	if (w->state == MW_CLOSING || w->state == MW_HANDSHAKE)
		return;
	enum wq_state st = w->state == MW_INIT       ? WQ_STATE_INIT
	                   : w->state == MW_DRAINING ? WQ_STATE_DRAINING
	                                             : WQ_STATE_ACTIVE;
	enum wq_msg_id mid = wq_msg_lookup(name);
	char *why = NULL;
	if (wq_msg_check(mid, name, w->status_client ? WQ_DIR_S2M : WQ_DIR_W2M, st, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	msg_handler *handle = handlers[mid];
	if (!handle) {
		wq_conn_violation(w->c, "proto", "message \"%s\" not expected from a worker", name);
		return;
	}
	handle(w, msg, mid);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	struct mworker *w = user;
	if (w->h && wq_handshake_data(w->h, xfer))
		return;
	if (w->state == MW_CLOSING)
		return;
	if (w->state != MW_ACTIVE && w->state != MW_DRAINING) {
		wq_conn_violation(c, "proto", "data for transfer %u which is not open", xfer);
		return;
	}
	wq_xfer_in_data(w->in, xfer, b, len);
}

static void on_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct mworker *w = user;
	if (w->out)
		wq_xfer_out_writable(w->out);
}

static void timer_free(uv_handle_t *h)
{
	free(h);
}

static void worker_free_now(struct mworker *w)
{
	struct work_queue *q = w->q;
	master_admit_release(w); /* out of the admission list, if still in it */
	if (w->prev)
		w->prev->next = w->next;
	else if (q->workers == w)
		q->workers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	if (w->deadline)
		uv_close((uv_handle_t *)w->deadline, timer_free);
	wq_handshake_delete(w->h);
	wq_xfer_out_delete(w->out);
	wq_xfer_in_delete(w->in);
	q->recv_reserved -= w->recv_reserved; /* its open transfers will not end */
	w->recv_reserved = 0;
	struct mobject *o, *ot;
	HASH_ITER(hh, w->objects, o, ot)
	master_worker_object_free(w, o);
	master_images_free(w->images);
	w->images = NULL;
	struct mcancel *mc, *mt;
	HASH_ITER(hh, w->cancelling, mc, mt)
	{
		HASH_DEL(w->cancelling, mc);
		free(mc);
	}
	struct mtask *m, *mtmp;
	DL_FOREACH_SAFE2(w->assigned, m, mtmp, wnext)
	master_worker_list_del(m);
	for (int k = 0; k < w->nlabels; k++)
		free(w->labels[k]);
	free(w->labels);
	free(w->host);
	free(w->held);
	free(w);
}

/* The lost-worker procedure (7.1): assigned tasks back to READY with the same try. */
static void lost(struct mworker *w, enum master_txlog_leave why)
{
	struct work_queue *q = w->q;
	struct mtask *m, *tmp;
	DL_FOREACH_SAFE2(w->assigned, m, tmp, wnext)
	{
		q->lost_examined++;
		if (master_worker_assigned(w, m)) {
			if (q->txlog)
				master_txlog_task(q->txlog, m->id, "WAITING", "WORKER_LOST", NULL);
			master_worker_back_to_ready(w, m);
		}
	}
	master_shared_worker_lost(w); /* after its tasks: they wait for nothing of it now */
	struct mcancel *mc, *mct;
	HASH_ITER(hh, w->cancelling, mc, mct)
	{
		struct mtask *fa = master_queue_task_lookup(q, mc->id);
		if (fa && fa->state == MTASK_CANCELLING)
			master_queue_task_requeue(q, fa);
	}
	if (w->sw) {
		struct master_sched_box zero = {0, 0, 0, 0};
		master_queue_worker_resources(q, &w->total, &zero);
		master_sched_worker_remove(q->sched, w->sw);
		master_worker_count(w, -1);
		w->sw = NULL;
		master_worker_count(w, +1);
	}
	if (w->counted) {
		q->stats.workers_connected--;
		q->stats.workers_removed++;
		if (why == MASTER_TXLOG_LEAVE_LOST || why == MASTER_TXLOG_LEAVE_FAILURE)
			q->stats.workers_lost++;
		w->counted = false;
	}
	if (w->init_counted) {
		q->stats.workers_init--;
		w->init_counted = false;
	}
	master_admit_release(w);
	if (q->txlog && w->have_identity)
		master_txlog_worker_disconnect(q->txlog, w->id, why);
	master_queue_request_pass(q);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	struct mworker *w = user;
	if (w->h && !wq_handshake_finished(w->h))
		wq_handshake_closed(w->h, why, text);
	debug(D_WQ, "%s: closed (%s): %s", MW_NAME(w), wq_conn_end_name(why), text);
	enum master_txlog_leave lw = MASTER_TXLOG_LEAVE_LOST;
	if (why == WQ_CONN_END_VIOLATION || why == WQ_CONN_END_REFUSED)
		lw = MASTER_TXLOG_LEAVE_FAILURE;
	else if (why == WQ_CONN_END_LOCAL)
		lw = MASTER_TXLOG_LEAVE_EXPLICIT;
	lost(w, lw);
	wq_conn_delete(c);
	w->c = NULL;
	worker_free_now(w);
}

static const struct wq_conn_callbacks conn_cb = {on_message, on_data, on_writable, on_closed};

/* ---- handshake ---------------------------------------------------------------------------- */

static void on_deadline(uv_timer_t *t)
{
	struct mworker *w = t->data;
	if (!w->have_identity && w->c)
		wq_conn_refuse(w->c, "timeout", "no identity within the handshake deadline",
		               "handshake timeout: no identity");
}

static void hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct mworker *w = user;
	struct work_queue *q = w->q;
	(void)h;
	master_admit_release(w);
	if (r->outcome != WQ_HS_OK) {
		debug(D_WQ, "%s: handshake failed: %s %s", MW_NAME(w), r->code, r->text);
		w->state = MW_CLOSING;
		q->stats.workers_init--;
		w->init_counted = false;
		return;
	}
	if (r->peer_role == WQ_ROLE_STATUS) {
		/* a status client: straight to ACTIVE, queries only (protocol 5.11) */
		w->status_client = true;
		w->state = MW_ACTIVE;
		q->stats.workers_init--;
		w->init_counted = false;
		snprintf(w->id, sizeof w->id, "status#%d", ++q->worker_serial);
		wq_conn_set_keepalive(w->c, (uint64_t)q->keepalive_interval * 1000,
		                      (uint64_t)q->keepalive_timeout * 1000);
		wq_handshake_delete(w->h);
		w->h = NULL;
		return;
	}
	w->state = MW_INIT;
	w->caps = r->caps;
	snprintf(w->id, sizeof w->id, "%s#%d", r->peer_id, ++q->worker_serial);
	if (r->peer_host)
		w->host = xstrdup(r->peer_host);
	wq_conn_set_keepalive(w->c, (uint64_t)q->keepalive_interval * 1000,
	                      (uint64_t)q->keepalive_timeout * 1000);
	w->out = wq_xfer_out_create(q->loop, w->c, (w->caps & WQ_CAP_ZLIB) != 0,
	                            &master_worker_out_cb, w);
	w->in = wq_xfer_in_create(q->loop, w->c, true, w->caps, &master_worker_in_cb, w);
	wq_xfer_in_set_member_check(w->in, master_worker_member_check);
	uint64_t left = r->elapsed_ms < WQ_HS_DEADLINE_MS ? WQ_HS_DEADLINE_MS - r->elapsed_ms : 1;
	w->deadline = xmalloc(sizeof *w->deadline);
	uv_timer_init(q->loop, w->deadline);
	w->deadline->data = w;
	uv_timer_start(w->deadline, on_deadline, left, 0);
	wq_handshake_delete(w->h);
	w->h = NULL;
}

void master_worker_accept(struct work_queue *q, uv_tcp_t *tcp)
{
	struct sockaddr_storage ss;
	int n = sizeof ss;
	char ip[48] = "?";
	int port = 0;
	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &n) == 0) {
		if (ss.ss_family == AF_INET) {
			uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		} else {
			uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		}
	}
	if (!master_admit_room(q, ip)) {
		uv_close((uv_handle_t *)tcp, timer_free);
		return;
	}
	struct mworker *w = xcalloc(1, sizeof *w);
	w->q = q;
	w->idle_since = master_queue_now();
	snprintf(w->ip, sizeof w->ip, "%s", ip);
	snprintf(w->addr, sizeof w->addr, "%s:%d", ip, port);
	snprintf(w->label, sizeof w->label, MW_LABEL_PREFIX "%s", w->addr);
	w->c = wq_conn_create(tcp, w->label, &conn_cb, w);
	if (!w->c) {
		free(w);
		return;
	}
	struct wq_hs_config cfg = {0};
	cfg.master = true;
	cfg.key = q->key;
	cfg.tls = q->tls;
	cfg.software = SOFTWARE;
	cfg.id = q->master_id;
	cfg.project = q->project;
	cfg.caps = MASTER_CAPS;
	cfg.keepalive_interval = q->keepalive_interval;
	cfg.keepalive_timeout = q->keepalive_timeout;
	cfg.deadline_ms = HS_DEADLINE_MS;
	char *err = NULL;
	w->h = wq_handshake_start(q->loop, w->c, &cfg, hs_done, w, &err);
	if (!w->h) {
		warn("%s: cannot start the handshake: %s", w->label, err ? err : strerror(errno));
		free(err);
		wq_conn_delete(w->c);
		free(w);
		return;
	}
	w->next = q->workers;
	if (q->workers)
		q->workers->prev = w;
	q->workers = w;
	master_admit_add(w);
	q->stats.workers_init++;
	w->init_counted = true;
}

int master_worker_drain(struct work_queue *q, const char *worker)
{
	if (!q || !worker || !*worker)
		return -EINVAL;
	size_t n = strlen(worker);
	int told = 0;
	for (struct mworker *w = q->workers; w; w = w->next) {
		if (w->status_client || w->state != MW_ACTIVE)
			continue;
		/* w->id is worker_id#serial: the worker id alone names every connection of it */
		bool match = (w->host && !strcmp(w->host, worker)) || !strcmp(w->addr, worker) ||
		             !strcmp(w->id, worker) ||
		             (!strncmp(w->id, worker, n) && w->id[n] == '#');
		if (!match)
			continue;
		json_t *msg =
		    json_pack("{s:s,s:s}", "m", "drain", "reason", "drained by the master");
		wq_conn_send_msg(w->c, msg);
		json_decref(msg);
		/* No new task goes there from now on; the worker answers `draining`, finishes what
		 * it runs and says `bye`. */
		w->state = MW_DRAINING;
		if (w->sw)
			master_sched_worker_set_flags(q->sched, w->sw,
			                              master_sched_worker_flags(w->sw) |
			                                  MASTER_SCHED_DRAINING);
		notice("%s: drain sent", w->label);
		told++;
	}
	return told;
}

void master_worker_stop_scheduling(struct mworker *w)
{
	if (w->sw)
		master_sched_worker_set_flags(
		    w->q->sched, w->sw, master_sched_worker_flags(w->sw) | MASTER_SCHED_DRAINING);
}

void master_worker_end(struct mworker *w, bool shutdown, const char *reason, int retry_after)
{
	if (w->state == MW_CLOSING || !w->c)
		return;
	/* its connection closes (after a linger): no task may be sent to it meanwhile */
	master_worker_stop_scheduling(w);
	json_t *msg = shutdown ? json_pack("{s:s,s:s}", "m", "shutdown", "reason", reason)
	                       : json_pack("{s:s,s:s,s:i}", "m", "dismiss", "reason", reason,
	                                   "retry_after", retry_after);
	if (!shutdown && w->q->ending) /* the queue is being deleted: no need to come back */
		json_object_set_new(msg, "ending", json_true());
	if (w->state == MW_HANDSHAKE) {
		wq_conn_close_now(w->c);
	} else {
		wq_conn_set_linger(w->c, DISMISS_LINGER_MS);
		wq_conn_close(w->c, msg);
	}
	json_decref(msg);
	w->state = MW_CLOSING;
}

void master_worker_free(struct mworker *w)
{
	if (w->c) {
		wq_conn_delete(w->c);
		w->c = NULL;
	}
	lost(w, MASTER_TXLOG_LEAVE_EXPLICIT);
	worker_free_now(w);
}
