/* wq_sim.c: the simulated workers of wq_sim.h. Each worker is a wq_conn with the worker side of
 * wq_handshake, a transfer receiver whose sink keeps inputs in memory, a sender for outputs, a
 * resource ledger with the FIFO of queued tasks, and a hash of its tasks; one timer over a heap
 * ends every task, spreads the connects and paces the retries of all N workers. */
#include "wq_sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "heap.h"
#include "htc_error.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "wq_msg.h"
#include "wq_xfer.h"
#include "xalloc.h"
#include "banned.h"

#define SIM_BUF_MAX  (64u << 20) /* bytes one input may have */
#define SIM_ASSIGNED 1024        /* tasks one worker holds (section 2.4) */
#define SIM_SOFTWARE "htc-sim 0"

/* ---- the worker's messages -------------------------------------------------------------- */

json_t *wq_sim_identity_msg(const char *host, const char *software, const char *workdir,
                            int queue_max)
{
	json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:[],s:n,s:b,s:s}", "m", "identity",
	                      "host", host, "os", "Linux", "os_release", "6", "arch", "x86_64",
	                      "software", software, "pid", 42, "workdir", workdir, "labels",
	                      "end_time", "docker", 0, "cgroups", "none");
	if (queue_max > 0)
		json_object_set_new(m, "queue_max", json_integer(queue_max));
	return m;
}

json_t *wq_sim_capacity_msg(int cores, int64_t memory, int64_t disk, int64_t disk_free,
                            bool disk_full)
{
	return json_pack("{s:s,s:{s:i,s:s},s:{s:I,s:s},s:{s:I,s:s},s:{s:i,s:s},s:I,s:i,s:b}", "m",
	                 "capacity", "cores", "total", cores, "source", "declared", "memory",
	                 "total", (json_int_t)memory, "source", "declared", "disk", "total",
	                 (json_int_t)disk, "source", "declared", "gpus", "total", 0, "source",
	                 "declared", "disk_free", (json_int_t)disk_free, "cache", 0, "disk_full",
	                 disk_full);
}

void wq_sim_wire_note(json_t **map, const struct wq_xfer_sent *r)
{
	if (!*map)
		*map = json_object();
	char k[16];
	snprintf(k, sizeof k, "%u", r->handle);
	json_object_set_new(*map, k, json_integer(r->outcome == WQ_XFER_SENT ? r->id : 0));
}

uint32_t wq_sim_wire_id(json_t *map, uint32_t handle)
{
	char k[16];
	snprintf(k, sizeof k, "%u", handle);
	uint32_t id = (uint32_t)json_integer_value(json_object_get(map, k));
	json_object_del(map, k);
	return id;
}

json_t *wq_sim_task_done_msg(int64_t id, int64_t try_, int exit_status, int64_t stdout_size,
                             uint32_t stdout_xfer, json_t *outputs, int64_t started_us,
                             int64_t ended_us)
{
	double wall = (double)(ended_us - started_us) / 1e6;
	return json_pack(
	    "{s:s,s:I,s:I,s:s,s:i,s:{s:I,s:b,s:i},s:o,s:{s:s,s:i,s:f,s:f,s:i},s:{s:I,s:I},s:b}",
	    "m", "task_done", "id", (json_int_t)id, "try", (json_int_t)try_, "outcome", "exited",
	    "exit_status", exit_status, "stdout", "size", (json_int_t)stdout_size, "truncated", 0,
	    "xfer", (int)stdout_xfer, "outputs", outputs, "summary", "exit_type", "normal",
	    "exit_status", exit_status, "wall_time", wall, "cores", 1.0, "memory", 10, "times",
	    "started", (json_int_t)started_us, "ended", (json_int_t)ended_us, "disk_full", 0);
}

/* ---- state ------------------------------------------------------------------------------- */

enum ev_kind { EV_TASK, EV_CONNECT };
enum sim_state { S_IDLE, S_CONNECTING, S_HANDSHAKE, S_ACTIVE, S_ENDED };

/* An input received, in memory: filled by the receiver's thread, read on the loop once ended. */
struct sim_buf {
	struct sim_worker *w; /* NULL once the worker's connection is gone */
	char *data;
	size_t len, cap;
	bool failed;
	struct sim_buf *prev, *next; /* the worker's transfers in flight */
};

struct sim_obj {
	char *name;
	char *data;
	size_t len;
	UT_hash_handle hh;
};

struct sim_task {
	enum ev_kind kind;    /* EV_TASK: first, as in every heap value */
	struct sim_worker *w; /* NULL: ended while its heap entry waits (freed when popped) */
	int64_t id, try_;
	struct wq_task_msg *tm;
	struct sim_buf **inputs; /* per-task inputs by index */
	int64_t cores_m, memory, disk, gpus;
	bool committed, started, finished, in_heap;
	int pending_sends;
	uint32_t stdout_xfer;
	json_t *outputs;
	int64_t started_us;
	struct sim_task *next; /* the FIFO of queued tasks */
	UT_hash_handle hh;
};

struct sim_worker {
	enum ev_kind kind; /* EV_CONNECT */
	struct wq_sim *s;
	int index;
	enum sim_state state;
	uv_tcp_t *tcp;           /* until the connection owns it */
	struct connect_req *req; /* a connect in flight */
	struct wq_conn *c;
	struct wq_handshake *h;
	struct wq_xfer_in *in;
	struct wq_xfer_out *out;
	json_t *wire_ids; /* wq_sim_wire_note */
	unsigned caps;
	bool refused_for_good, closing_asked, draining, muted, in_heap, ever;
	char id[33], host[32];
	int64_t free_cores_m, free_memory, free_disk;
	int queued, assigned;
	struct sim_task *tasks; /* by id */
	struct sim_task *fifo_head, *fifo_tail;
	struct sim_obj *cache;
	struct sim_buf *open_bufs;
	int drop_after; /* > 0: drop at that many more tasks */
	double backoff; /* seconds before the next attempt after a failure (doubles to 60) */
	uint64_t tasks_received;
};

struct connect_req {
	uv_connect_t req;
	struct sim_worker *w; /* NULL once the worker gave the attempt up */
};

struct wq_sim {
	uv_loop_t *loop;
	struct wq_sim_opts o;
	char *stdout_text;
	struct sim_worker *w;
	struct heap *events; /* key: µs on the loop's clock */
	uv_timer_t timer;
	int64_t armed_us; /* when the timer fires; INT64_MAX: not armed */
	uint64_t rng;
	int64_t start_us;
	bool stopping;
	struct wq_sim_stats st;
};

static int64_t now_us(const struct wq_sim *s)
{
	(void)s;
	return (int64_t)(uv_hrtime() / 1000);
}

static double sim_random(struct wq_sim *s) /* [0, 1) */
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (double)(s->rng >> 11) / 9007199254740992.0;
}

static double draw_duration(struct wq_sim *s)
{
	switch (s->o.dist) {
	case WQ_SIM_UNIFORM: return 2 * s->o.mean * sim_random(s);
	case WQ_SIM_EXP: return -s->o.mean * log(1 - sim_random(s));
	default: return s->o.mean;
	}
}

/* ---- the event heap ------------------------------------------------------------------------ */

static void on_timer(uv_timer_t *t);

static void arm(struct wq_sim *s, int64_t at)
{
	if (at >= s->armed_us)
		return;
	int64_t now = now_us(s);
	uint64_t ms = at > now ? (uint64_t)((at - now + 999) / 1000) : 0;
	s->armed_us = at;
	uv_timer_start(&s->timer, on_timer, ms, 0);
}

static void push_event(struct wq_sim *s, int64_t at, void *ev)
{
	heap_push(s->events, at, ev);
	arm(s, at);
}

/* ---- tasks ----------------------------------------------------------------------------- */

static void worker_connect(struct sim_worker *w);
static void task_finish(struct sim_task *t);

static void send_msg(struct sim_worker *w, json_t *m)
{
	if (w->c)
		wq_conn_send_msg(w->c, m);
	json_decref(m);
}

static void buf_free(struct sim_buf *b)
{
	if (!b)
		return;
	free(b->data);
	free(b);
}

static void task_free(struct sim_task *t)
{
	if (t->tm)
		for (size_t i = 0; i < t->tm->ninputs; i++)
			buf_free(t->inputs[i]);
	free(t->inputs);
	json_decref(t->outputs);
	wq_task_msg_free(t->tm);
	free(t);
}

/* Forgets T on its worker: out of the hash and the FIFO; freed now or when its event pops. */
static void task_forget(struct sim_worker *w, struct sim_task *t)
{
	HASH_DEL(w->tasks, t);
	if (!t->committed) {
		struct sim_task **p = &w->fifo_head, *prev = NULL;
		while (*p && *p != t) {
			prev = *p;
			p = &(*p)->next;
		}
		if (*p) {
			*p = t->next;
			if (w->fifo_tail == t)
				w->fifo_tail = prev;
			w->queued--;
		}
	}
	w->assigned--;
	t->w = NULL;
	if (!t->in_heap)
		task_free(t);
}

static bool fits(const struct sim_worker *w, const struct sim_task *t)
{
	return t->cores_m <= w->free_cores_m && t->memory <= w->free_memory &&
	       t->disk <= w->free_disk && t->gpus == 0;
}

static void take(struct sim_worker *w, struct sim_task *t)
{
	w->free_cores_m -= t->cores_m;
	w->free_memory -= t->memory;
	w->free_disk -= t->disk;
	t->committed = true;
}

static bool inputs_ready(struct sim_worker *w, struct sim_task *t)
{
	for (size_t i = 0; i < t->tm->ninputs; i++) {
		const struct wq_task_input *in = &t->tm->inputs[i];
		if (in->from == WQ_FROM_TASK && !t->inputs[i])
			return false;
		if (in->from == WQ_FROM_CACHE) {
			struct sim_obj *o = NULL;
			HASH_FIND_STR(w->cache, in->object, o);
			if (!o)
				return false;
		}
	}
	return true;
}

/* Starts T if it is committed and every input is in place: task_running, then its end on the
 * heap (a duration of 0 ends at the next loop turn, never inside this call). */
static void task_try_start(struct sim_worker *w, struct sim_task *t)
{
	if (!t->committed || t->started || !inputs_ready(w, t))
		return;
	t->started = true;
	t->started_us = now_us(w->s);
	send_msg(w,
	         json_pack("{s:s,s:I,s:I,s:I,s:[]}", "m", "task_running", "id", (json_int_t)t->id,
	                   "try", (json_int_t)t->try_, "at", (json_int_t)t->started_us, "gpus"));
	double d = draw_duration(w->s);
	t->in_heap = true;
	push_event(w->s, t->started_us + (int64_t)(d * 1e6), t);
}

/* Commits queued tasks from the head of the FIFO while they fit (head-of-line). */
static void commit_heads(struct sim_worker *w)
{
	while (w->fifo_head && fits(w, w->fifo_head)) {
		struct sim_task *t = w->fifo_head;
		w->fifo_head = t->next;
		if (!w->fifo_head)
			w->fifo_tail = NULL;
		t->next = NULL;
		w->queued--;
		take(w, t);
		task_try_start(w, t);
	}
}

static void maybe_drained(struct sim_worker *w)
{
	if (w->draining && !w->tasks && w->c && !w->closing_asked) {
		w->closing_asked = true;
		json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", "drained");
		wq_conn_close(w->c, bye);
		json_decref(bye);
	}
}

static void task_send_done(struct sim_worker *w, struct sim_task *t)
{
	json_t *outputs = t->outputs;
	t->outputs = NULL;
	size_t i;
	json_t *o;
	json_array_foreach(outputs, i, o)
	{
		json_t *x = json_object_get(o, "xfer");
		if (x)
			json_integer_set(
			    x, wq_sim_wire_id(w->wire_ids, (uint32_t)json_integer_value(x)));
	}
	if (t->stdout_xfer)
		t->stdout_xfer = wq_sim_wire_id(w->wire_ids, t->stdout_xfer);
	size_t so = w->s->stdout_text ? strlen(w->s->stdout_text) : 0;
	send_msg(w, wq_sim_task_done_msg(t->id, t->try_, w->s->o.exit_status, (int64_t)so,
	                                 t->stdout_xfer, outputs, t->started_us, now_us(w->s)));
	w->s->st.tasks_done++;
	w->free_disk += t->disk;
	task_forget(w, t);
	commit_heads(w);
	maybe_drained(w);
}

/* The concatenation of T's inputs in order (caller frees), its length in *LEN. */
static char *task_content(struct sim_worker *w, struct sim_task *t, size_t *len)
{
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		char *out = pass ? xmalloc(n + 1) : NULL;
		size_t at = 0;
		for (size_t i = 0; i < t->tm->ninputs; i++) {
			const char *d = NULL;
			size_t l = 0;
			if (t->inputs[i]) {
				d = t->inputs[i]->data;
				l = t->inputs[i]->len;
			} else if (t->tm->inputs[i].object) {
				struct sim_obj *o = NULL;
				HASH_FIND_STR(w->cache, t->tm->inputs[i].object, o);
				if (o) {
					d = o->data;
					l = o->len;
				}
			}
			if (pass && l)
				memcpy(out + at, d, l);
			at += l;
		}
		if (pass) {
			out[at] = 0;
			*len = at;
			return out;
		}
		n = at;
	}
	return NULL;
}

/* The "process" ended: cores and memory are free; outputs and stdout go out, then task_done. */
static void task_finish(struct sim_task *t)
{
	struct sim_worker *w = t->w;
	struct wq_sim *s = w->s;
	t->finished = true;
	w->free_cores_m += t->cores_m;
	w->free_memory += t->memory;
	t->outputs = json_array();
	bool success = s->o.exit_status == 0;
	size_t len = 0;
	char *content = t->tm->noutputs ? task_content(w, t, &len) : NULL;
	for (size_t i = 0; i < t->tm->noutputs; i++) {
		const struct wq_task_output *o = &t->tm->outputs[i];
		if ((o->when == WQ_WHEN_SUCCESS && !success) ||
		    (o->when == WQ_WHEN_FAILURE && success)) {
			json_array_append_new(
			    t->outputs, json_pack("{s:i,s:b}", "index", (int)i, "skipped", 1));
			continue;
		}
		if (o->dir) {
			json_array_append_new(t->outputs,
			                      json_pack("{s:i,s:s}", "index", (int)i, "missing",
			                                "the simulated worker makes no directory"));
			continue;
		}
		json_t *target = wq_xfer_target_output(t->id, (int64_t)i);
		uint32_t xid = 0;
		wq_xfer_send_buffer(w->out, content, len, target, 0, (void *)(intptr_t)t->id, &xid);
		json_decref(target);
		t->pending_sends++;
		json_array_append_new(t->outputs,
		                      json_pack("{s:i,s:i}", "index", (int)i, "xfer", (int)xid));
	}
	free(content);
	if (s->stdout_text) {
		json_t *target = wq_xfer_target_stdout(t->id);
		wq_xfer_send_buffer(w->out, s->stdout_text, strlen(s->stdout_text), target, 0,
		                    (void *)(intptr_t)t->id, &t->stdout_xfer);
		json_decref(target);
		t->pending_sends++;
	}
	commit_heads(w);
	if (t->pending_sends == 0)
		task_send_done(w, t);
}

static void refuse(struct sim_worker *w, int64_t id, int64_t try_, const char *code,
                   const char *text)
{
	w->s->st.tasks_refused++;
	send_msg(w, json_pack("{s:s,s:I,s:I,s:s,s:s}", "m", "task_refused", "id", (json_int_t)id,
	                      "try", (json_int_t)try_, "code", code, "text", text));
}

static void worker_drop(struct sim_worker *w);

static void on_task(struct sim_worker *w, json_t *msg)
{
	struct wq_task_msg *tm = NULL;
	char *why = NULL;
	int r = wq_msg_task_parse(msg, w->caps, &tm, &why);
	if (r == HTC_EPROTO) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	w->s->st.tasks_received++;
	w->tasks_received++;
	if (w->drop_after > 0 && --w->drop_after == 0) {
		wq_task_msg_free(tm);
		free(why);
		worker_drop(w);
		return;
	}
	if (r == HTC_EPARSE) {
		refuse(w, tm->id, tm->try_, "bad_name", why);
		goto out;
	}
	if (w->draining) {
		refuse(w, tm->id, tm->try_, "draining", "the worker is draining");
		goto out;
	}
	struct sim_task *t = xcalloc(1, sizeof *t);
	t->kind = EV_TASK;
	t->w = w;
	t->id = tm->id;
	t->try_ = tm->try_;
	t->cores_m = llround(tm->resources.cores * 1000);
	t->memory = tm->resources.memory;
	t->disk = tm->resources.disk;
	t->gpus = tm->resources.gpus;
	struct sim_task *dup = NULL;
	HASH_FIND(hh, w->tasks, &t->id, sizeof t->id, dup);
	const struct wq_sim_opts *o = &w->s->o;
	const char *code = NULL;
	if (dup || w->assigned >= SIM_ASSIGNED || (tm->queued && w->queued >= o->queue_max))
		code = "busy";
	else if (t->cores_m > o->cores * 1000 || t->memory > o->memory || t->disk > o->disk ||
	         t->gpus > 0 || (!tm->queued && !fits(w, t)))
		code = "overcommit";
	if (code) {
		refuse(w, tm->id, tm->try_, code, "the task does not fit");
		free(t);
		goto out;
	}
	t->tm = tm;
	tm = NULL;
	t->inputs = xcalloc(t->tm->ninputs + 1, sizeof *t->inputs);
	HASH_ADD(hh, w->tasks, id, sizeof t->id, t);
	w->assigned++;
	for (size_t i = 0; i < t->tm->ninputs; i++)
		if (t->tm->inputs[i].from == WQ_FROM_URL) {
			send_msg(w,
			         json_pack("{s:s,s:I,s:I,s:s,s:{s:i,s:s}}", "m", "task_done", "id",
			                   (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome",
			                   "input_missing", "missing", "input", (int)i, "text",
			                   "the simulated worker fetches no URL"));
			task_forget(w, t);
			goto out;
		}
	if (t->tm->queued) {
		w->queued++;
		if (w->fifo_tail)
			w->fifo_tail->next = t;
		else
			w->fifo_head = t;
		w->fifo_tail = t;
		commit_heads(w);
	} else {
		take(w, t);
		task_try_start(w, t);
	}
out:
	wq_task_msg_free(tm);
	free(why);
}

static void on_cancel(struct sim_worker *w, json_t *msg)
{
	int64_t id = json_integer_value(json_object_get(msg, "id"));
	int64_t tr = json_integer_value(json_object_get(msg, "try"));
	struct sim_task *t = NULL;
	HASH_FIND(hh, w->tasks, &id, sizeof id, t);
	bool known = t && t->try_ == tr;
	if (known) {
		if (t->committed && !t->finished) {
			w->free_cores_m += t->cores_m;
			w->free_memory += t->memory;
		}
		if (t->committed)
			w->free_disk += t->disk;
		task_forget(w, t);
		w->s->st.tasks_cancelled++;
	}
	send_msg(w, json_pack("{s:s,s:I,s:I,s:b}", "m", "task_cancelled", "id", (json_int_t)id,
	                      "try", (json_int_t)tr, "known", known));
	commit_heads(w);
	maybe_drained(w);
}

/* ---- transfers --------------------------------------------------------------------------- */

static int sink_store(void *obj, const void *data, size_t len)
{
	struct sim_buf *b = obj;
	if (b->len + len > SIM_BUF_MAX)
		return -ENOSPC;
	if (b->len + len + 1 > b->cap) {
		size_t n = b->cap ? b->cap : 256;
		while (n < b->len + len + 1)
			n *= 2;
		b->data = xrealloc(b->data, n);
		b->cap = n;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
	return 0;
}

static int sink_finish_file(void *obj, const char *hex, const char *want)
{
	(void)obj;
	return strcmp(hex, want) ? HTC_ECORRUPT : 0;
}

static int sink_dirfd(const void *obj)
{
	(void)obj;
	return -1;
}

static int sink_finish_dir(void *obj, struct wq_listing *l, uint64_t entries, const char *want)
{
	(void)obj;
	(void)l;
	(void)entries;
	(void)want;
	return -EINVAL;
}

static int sink_abort(void *obj)
{
	struct sim_buf *b = obj;
	b->failed = true;
	return 0;
}

static const struct wq_xfer_sink_ops sim_sink = {sink_store, sink_finish_file, sink_dirfd,
                                                 sink_finish_dir, sink_abort};

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	struct sim_worker *w = user;
	if (in->is_dir) {
		r->code = WQ_XERR_IO;
		snprintf(r->text, sizeof r->text, "the simulated worker takes no directory");
		return -1;
	}
	struct sim_buf *b = xcalloc(1, sizeof *b);
	b->w = w;
	DL_APPEND(w->open_bufs, b);
	dest->sink = b;
	dest->sink_ops = &sim_sink;
	return 0;
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	(void)text;
	(void)user; /* may be gone: the buffer says whether its worker still listens */
	struct sim_buf *b = in->sink;
	if (!b)
		return;
	struct sim_worker *w = b->w;
	if (!w) {
		buf_free(b);
		return;
	}
	DL_DELETE(w->open_bufs, b);
	if (status != 0 || b->failed) {
		buf_free(b);
		return;
	}
	if (in->target->kind == WQ_TARGET_OBJECT) {
		struct sim_obj *o = NULL;
		HASH_FIND_STR(w->cache, in->target->object, o);
		if (!o) {
			o = xcalloc(1, sizeof *o);
			o->name = xstrdup(in->target->object);
			HASH_ADD_KEYPTR(hh, w->cache, o->name, strlen(o->name), o);
		}
		free(o->data);
		o->data = b->data;
		o->len = b->len;
		b->data = NULL;
		buf_free(b);
		w->s->st.objects_received++;
		struct sim_task *t, *tmp;
		HASH_ITER(hh, w->tasks, t, tmp)
		task_try_start(w, t);
		return;
	}
	struct sim_task *t = NULL;
	int64_t id = in->target->task;
	HASH_FIND(hh, w->tasks, &id, sizeof id, t);
	if (!t || in->target->kind != WQ_TARGET_INPUT || in->target->index < 0 ||
	    (size_t)in->target->index >= t->tm->ninputs || t->inputs[in->target->index]) {
		buf_free(b);
		return;
	}
	t->inputs[in->target->index] = b;
	task_try_start(w, t);
}

static const struct wq_xfer_in_callbacks sim_in_cb = {recv_begin, recv_end};

static void out_sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct sim_worker *w = user;
	int64_t id = (int64_t)(intptr_t)r->tag;
	wq_sim_wire_note(&w->wire_ids, r);
	struct sim_task *t = NULL;
	HASH_FIND(hh, w->tasks, &id, sizeof id, t);
	if (!t || !t->finished)
		return;
	if (--t->pending_sends == 0)
		task_send_done(w, t);
}

static const struct wq_xfer_out_callbacks sim_out_cb = {.sent = out_sent};

/* ---- connections --------------------------------------------------------------------------- */

/* Lets go of everything the connection held; tasks not reported are the master's to re-run. */
static void worker_release(struct sim_worker *w)
{
	struct sim_task *t, *tmp;
	HASH_ITER(hh, w->tasks, t, tmp)
	{
		t->committed = true; /* not in the FIFO any more: it is emptied below */
		task_forget(w, t);
	}
	w->fifo_head = w->fifo_tail = NULL;
	w->queued = w->assigned = 0;
	struct sim_buf *b, *btmp;
	DL_FOREACH_SAFE(w->open_bufs, b, btmp)
	{
		DL_DELETE(w->open_bufs, b);
		b->w = NULL; /* freed by recv_end */
	}
	struct sim_obj *o, *otmp;
	HASH_ITER(hh, w->cache, o, otmp)
	{
		HASH_DEL(w->cache, o);
		free(o->name);
		free(o->data);
		free(o);
	}
	wq_xfer_in_delete(w->in);
	wq_xfer_out_delete(w->out);
	json_decref(w->wire_ids);
	w->wire_ids = NULL;
	wq_handshake_delete(w->h);
	wq_conn_delete(w->c);
	w->in = NULL;
	w->out = NULL;
	w->h = NULL;
	w->c = NULL;
	if (w->state == S_ACTIVE)
		w->s->st.active--;
}

static void worker_retry_or_end(struct sim_worker *w, bool failed)
{
	struct wq_sim *s = w->s;
	if (failed && !w->refused_for_good && !s->stopping && s->o.retry >= 0) {
		w->state = S_IDLE;
		s->st.retries++;
		w->in_heap = true;
		/* as the real worker: the backoff doubles up to 60 s, +-25 % */
		if (w->backoff < s->o.retry)
			w->backoff = s->o.retry;
		double d = w->backoff * (0.75 + 0.5 * sim_random(s));
		w->backoff = w->backoff * 2 > 60 ? 60 : w->backoff * 2;
		push_event(s, now_us(s) + (int64_t)(d * 1e6), w);
		return;
	}
	w->state = S_ENDED;
	s->st.ended++;
}

static void worker_drop(struct sim_worker *w)
{
	worker_release(w);
	w->state = S_ENDED;
	w->s->st.ended++;
}

static void hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	(void)h;
	struct sim_worker *w = user;
	struct wq_sim *s = w->s;
	if (r->outcome != WQ_HS_OK) {
		s->st.errors++;
		w->refused_for_good = r->outcome == WQ_HS_PERMANENT;
		return; /* the connection is closing: its closed callback ends or retries */
	}
	w->caps = r->caps;
	w->state = S_ACTIVE;
	w->backoff = 0;
	s->st.active++;
	if (!w->ever) {
		w->ever = true;
		s->st.ever_active++;
	}
	wq_handshake_delete(w->h); /* safe inside its own callback */
	w->h = NULL;
	int64_t ki = r->keepalive_interval > 0 ? r->keepalive_interval : 30;
	int64_t kt = r->keepalive_timeout >= ki ? r->keepalive_timeout : ki * 4;
	wq_conn_set_keepalive(w->c, (uint64_t)ki * 1000, (uint64_t)kt * 1000);
	w->in = wq_xfer_in_create(s->loop, w->c, false, r->caps, &sim_in_cb, w);
	w->out = wq_xfer_out_create(s->loop, w->c, (r->caps & WQ_CAP_ZLIB) != 0, &sim_out_cb, w);
	w->free_cores_m = (int64_t)s->o.cores * 1000;
	w->free_memory = s->o.memory;
	w->free_disk = s->o.disk;
	send_msg(w, wq_sim_identity_msg(w->host, SIM_SOFTWARE, "/sim",
	                                (r->caps & WQ_CAP_QUEUE) ? s->o.queue_max : 0));
	send_msg(w, wq_sim_capacity_msg(s->o.cores, s->o.memory, s->o.disk, s->o.disk, false));
	send_msg(w, json_pack("{s:s,s:[],s:b}", "m", "cache_have", "objects", "last", 1));
	if (s->st.active == s->o.workers && s->st.all_active_s < 0)
		s->st.all_active_s = (double)(now_us(s) - s->start_us) / 1e6;
}

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	(void)c;
	struct sim_worker *w = user;
	if (w->h && !wq_handshake_finished(w->h)) {
		wq_handshake_message(w->h, msg, name, raw, len);
		return;
	}
	if (w->in && wq_xfer_in_message(w->in, msg, name))
		return;
	if (!strcmp(name, "task")) {
		on_task(w, msg);
	} else if (!strcmp(name, "task_cancel")) {
		on_cancel(w, msg);
	} else if (!strcmp(name, "xfer_error")) {
		if (w->out)
			wq_xfer_out_message(w->out, msg, name);
	} else if (!strcmp(name, "cache_drop")) {
		json_t *names = json_object_get(msg, "objects"), *x;
		size_t k;
		json_array_foreach(names, k, x)
		{
			struct sim_obj *o = NULL;
			const char *n = json_string_value(x);
			if (n)
				HASH_FIND_STR(w->cache, n, o);
			if (o) {
				HASH_DEL(w->cache, o);
				free(o->name);
				free(o->data);
				free(o);
			}
		}
	} else if (!strcmp(name, "drain")) {
		w->draining = true;
		send_msg(w, json_pack("{s:s,s:s}", "m", "draining", "reason", "asked"));
		maybe_drained(w);
	} else if (!strcmp(name, "dismiss") || !strcmp(name, "shutdown")) {
		w->closing_asked = true;
		json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", "asked");
		wq_conn_close(w->c, bye);
		json_decref(bye);
	} else if (!strcmp(name, "bye")) {
		w->closing_asked = true;
		wq_conn_close_now(w->c);
	}
	/* capacity-free masters send nothing else a worker must answer; `error` notices are
	 * ignored (a fatal one closes the connection) */
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)c;
	struct sim_worker *w = user;
	if (w->h && !wq_handshake_finished(w->h)) {
		wq_handshake_data(w->h, xfer);
		return;
	}
	if (w->in)
		wq_xfer_in_data(w->in, xfer, b, len);
}

static void on_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct sim_worker *w = user;
	if (w->out)
		wq_xfer_out_writable(w->out);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	(void)text;
	struct sim_worker *w = user;
	if (w->h && !wq_handshake_finished(w->h))
		wq_handshake_closed(w->h, why, text);
	bool was_active = w->state == S_ACTIVE;
	bool asked = w->closing_asked || w->s->stopping;
	if (!asked && was_active)
		w->s->st.errors++; /* lost the master, a timeout or a violation */
	worker_release(w);
	worker_retry_or_end(w, !was_active);
}

static const struct wq_conn_callbacks sim_conn_cb = {on_message, on_data, on_writable, on_closed};

static void close_free(uv_handle_t *h)
{
	free(h);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct connect_req *cr = (struct connect_req *)req;
	struct sim_worker *w = cr->w;
	free(cr);
	if (!w)
		return; /* given up: the handle is closing */
	w->req = NULL;
	uv_tcp_t *tcp = w->tcp;
	w->tcp = NULL;
	struct wq_sim *s = w->s;
	if (status < 0) {
		s->st.errors++;
		uv_close((uv_handle_t *)tcp, close_free);
		worker_retry_or_end(w, true);
		return;
	}
	char label[64];
	snprintf(label, sizeof label, "sim %d", w->index);
	w->c = wq_conn_create(tcp, label, &sim_conn_cb, w);
	if (!w->c) {
		s->st.errors++;
		worker_retry_or_end(w, true);
		return;
	}
	w->state = S_HANDSHAKE;
	w->closing_asked = false;
	w->draining = false;
	w->muted = false;
	struct wq_hs_config cfg = {0};
	cfg.master = false;
	cfg.role = WQ_ROLE_WORKER;
	cfg.key = s->o.key;
	cfg.software = SIM_SOFTWARE;
	cfg.id = w->id;
	cfg.host = w->host;
	cfg.caps = WQ_CAPS_ALL & ~(unsigned)(WQ_CAP_FETCH | WQ_CAP_WATCH);
	if (s->o.queue_max > 0)
		cfg.caps |= WQ_CAP_QUEUE;
	char *err = NULL;
	w->h = wq_handshake_start(s->loop, w->c, &cfg, hs_done, w, &err);
	if (!w->h) {
		free(err);
		s->st.errors++;
		wq_conn_delete(w->c);
		w->c = NULL;
		worker_retry_or_end(w, false);
	}
}

static void worker_connect(struct sim_worker *w)
{
	struct wq_sim *s = w->s;
	w->state = S_CONNECTING;
	w->tcp = xmalloc(sizeof *w->tcp);
	uv_tcp_init(s->loop, w->tcp);
	int r = 0;
	if (s->o.addrs > 1) {
		struct sockaddr_in src;
		char ip[32];
		snprintf(ip, sizeof ip, "127.0.0.%d", 1 + w->index % s->o.addrs);
		uv_ip4_addr(ip, 0, &src);
		r = uv_tcp_bind(w->tcp, (struct sockaddr *)&src, 0);
	}
	struct sockaddr_in a;
	if (r == 0)
		r = uv_ip4_addr(s->o.host ? s->o.host : "127.0.0.1", s->o.port, &a);
	struct connect_req *cr = xcalloc(1, sizeof *cr);
	cr->w = w;
	if (r == 0)
		r = uv_tcp_connect(&cr->req, w->tcp, (struct sockaddr *)&a, on_connect);
	if (r < 0) {
		free(cr);
		s->st.errors++;
		uv_close((uv_handle_t *)w->tcp, close_free);
		w->tcp = NULL;
		worker_retry_or_end(w, true);
		return;
	}
	w->req = cr;
}

static void on_timer(uv_timer_t *timer)
{
	struct wq_sim *s = timer->data;
	s->armed_us = INT64_MAX;
	int64_t now = now_us(s), at;
	while (heap_size(s->events) && heap_peek(s->events, &at) && at <= now) {
		void *ev = heap_pop(s->events, NULL);
		if (*(enum ev_kind *)ev == EV_TASK) {
			struct sim_task *t = ev;
			t->in_heap = false;
			if (!t->w)
				task_free(t);
			else
				task_finish(t);
		} else {
			struct sim_worker *w = ev;
			w->in_heap = false;
			if (!s->stopping)
				worker_connect(w);
			else if (w->state == S_IDLE) {
				w->state = S_ENDED;
				s->st.ended++;
			}
		}
	}
	if (heap_size(s->events) && heap_peek(s->events, &at))
		arm(s, at);
}

/* ---- the simulator ----------------------------------------------------------------------- */

struct wq_sim *wq_sim_create(uv_loop_t *loop, const struct wq_sim_opts *o)
{
	if (!loop || !o || o->workers < 1 || o->port <= 0 || o->port > 65535 || o->mean < 0) {
		errno = EINVAL;
		return NULL;
	}
	struct wq_sim *s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->o = *o;
	if (s->o.cores <= 0)
		s->o.cores = 4;
	if (s->o.memory <= 0)
		s->o.memory = 1000 * (int64_t)s->o.cores;
	if (s->o.disk <= 0)
		s->o.disk = 100000;
	if (s->o.queue_max == 0)
		s->o.queue_max = 2 * s->o.cores > WQ_QUEUE_MAX ? WQ_QUEUE_MAX : 2 * s->o.cores;
	if (s->o.retry == 0)
		s->o.retry = 1;
	s->rng = o->seed ? o->seed : 1;
	if (o->stdout_text && o->stdout_text[0])
		s->stdout_text = xstrdup(o->stdout_text);
	s->o.stdout_text = NULL;
	s->events = heap_create((size_t)o->workers * 2);
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	s->armed_us = INT64_MAX;
	s->st.workers = o->workers;
	s->st.all_active_s = -1;
	s->start_us = now_us(s);
	s->w = xcalloc((size_t)o->workers, sizeof *s->w);
	for (int i = 0; i < o->workers; i++) {
		struct sim_worker *w = &s->w[i];
		w->kind = EV_CONNECT;
		w->s = s;
		w->index = i;
		snprintf(w->id, sizeof w->id, "%08x%08x%016llx", (unsigned)i, 0x51u,
		         (unsigned long long)s->rng);
		snprintf(w->host, sizeof w->host, "sim%d", i);
		w->in_heap = true;
		double at = o->connect_window > 0 ? o->connect_window * i / o->workers : 0;
		push_event(s, s->start_us + (int64_t)(at * 1e6), w);
	}
	return s;
}

void wq_sim_stop(struct wq_sim *s)
{
	s->stopping = true;
	for (int i = 0; i < s->o.workers; i++) {
		struct sim_worker *w = &s->w[i];
		if (w->c && !w->closing_asked) {
			w->closing_asked = true;
			json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", "stopped");
			wq_conn_close(w->c, bye);
			json_decref(bye);
		}
	}
}

static void timer_free(uv_handle_t *h)
{
	struct wq_sim *s = h->data;
	free(s);
}

void wq_sim_delete(struct wq_sim *s)
{
	if (!s)
		return;
	s->stopping = true;
	for (int i = 0; i < s->o.workers; i++) {
		struct sim_worker *w = &s->w[i];
		if (w->req) {
			w->req->w = NULL;
			uv_close((uv_handle_t *)w->tcp, close_free);
			w->tcp = NULL;
			w->req = NULL;
		}
		worker_release(w);
	}
	while (heap_size(s->events)) {
		void *ev = heap_pop(s->events, NULL);
		if (*(enum ev_kind *)ev == EV_TASK)
			task_free(ev);
	}
	heap_delete(s->events);
	free(s->w);
	free(s->stdout_text);
	uv_close((uv_handle_t *)&s->timer, timer_free);
}

void wq_sim_get_stats(const struct wq_sim *s, struct wq_sim_stats *st)
{
	*st = s->st;
}

char *wq_sim_stats_json(const struct wq_sim *s)
{
	const struct wq_sim_stats *st = &s->st;
	json_t *j = json_pack("{s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "workers",
	                      st->workers, "active", st->active, "ever_active", st->ever_active,
	                      "ended", st->ended, "tasks_received", (json_int_t)st->tasks_received,
	                      "tasks_done", (json_int_t)st->tasks_done, "tasks_cancelled",
	                      (json_int_t)st->tasks_cancelled, "tasks_refused",
	                      (json_int_t)st->tasks_refused, "objects_received",
	                      (json_int_t)st->objects_received, "errors", (json_int_t)st->errors,
	                      "retries", (json_int_t)st->retries, "all_active_s", st->all_active_s);
	char *out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return out;
}

void wq_sim_drop_after(struct wq_sim *s, int i, int k)
{
	if (i >= 0 && i < s->o.workers)
		s->w[i].drop_after = k;
}

void wq_sim_mute(struct wq_sim *s, int i)
{
	if (i < 0 || i >= s->o.workers || !s->w[i].c)
		return;
	s->w[i].muted = true;
	wq_conn_set_keepalive(s->w[i].c, 0, 0);
	wq_conn_pause_reading(s->w[i].c);
}

uint64_t wq_sim_bytes_received(const struct wq_sim *s, int i)
{
	return i >= 0 && i < s->o.workers && s->w[i].c ? wq_conn_bytes_received(s->w[i].c) : 0;
}

bool wq_sim_active(const struct wq_sim *s, int i)
{
	return i >= 0 && i < s->o.workers && s->w[i].state == S_ACTIVE;
}

uint64_t wq_sim_tasks_received(const struct wq_sim *s, int i)
{
	return i >= 0 && i < s->o.workers ? s->w[i].tasks_received : 0;
}
