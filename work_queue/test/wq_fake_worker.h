/* wq_fake_worker.h: the fixture shared by the master library's integration tests: temporary files
 * and the debug log, a scripted fake worker built from wq_conn, wq_handshake (worker side), wq_msg
 * and wq_xfer that plays the worker's side of the protocol on the queue's own libuv loop, and the
 * setup and teardown of each test. Header-only (static inline), included by one test file each. */
#ifndef HTC_WQ_FAKE_WORKER_H
#define HTC_WQ_FAKE_WORKER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmsummary.h"
#include "category.h"
#include "work_queue.h"
#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "wq_msg.h"
#include "status_client.h"
#include "wq_tls.h"
#include "wq_xfer.h"
#include "xalloc.h"
#include "banned.h"

#define WORKER_ID "fedcba9876543210fedcba9876543210"

static char tmpdir[64], log_path[128];
static uv_loop_t loop;

/* ---- files -------------------------------------------------------------------------------- */

static inline void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static inline char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = xcalloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static inline int log_has(const char *s)
{
	FILE *f = fopen(log_path, "r");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

/* ---- the fake worker ---------------------------------------------------------------------- */

enum fake_mode {
	FAKE_RUN,            /* run tasks: output = object content + buffer content */
	FAKE_REFUSE_MISSING, /* refuse the first task with missing_object */
	FAKE_DISCONNECT,     /* close the connection when a task arrives */
	FAKE_VIOLATE,        /* answer a task with a task_done for an unknown task */
	FAKE_EXHAUST_FIRST,  /* a first try given less than 2000 MB exhausts its memory */
	FAKE_HOLD,           /* task_running, then nothing until task_cancel */
	FAKE_SIGNAL,         /* every try is killed by signal 11 */
};

struct fake_task {
	int64_t id, try_;
	json_t *msg;
	char *input_text; /* concatenation of its inputs, in arrival order */
	int stage;        /* 0 staging, 1 sending outputs, 2 done */
	int queued;       /* sent `queued`: held until the test starts it (fake_start_queued) */
	uint32_t out_xfer, stdout_xfer;
	int pending_sends;
};

struct fake {
	enum fake_mode mode;
	const char *password;
	struct wq_auth_key *key;
	struct wq_tls_config *tls;
	uv_tcp_t *tcp;
	uv_connect_t creq;
	struct wq_conn *c;
	struct wq_handshake *h;
	struct wq_xfer_in *in;
	struct wq_xfer_out *out;
	int hs_done;
	enum wq_hs_outcome outcome;
	char hs_code[64];
	int closed;
	char dir[128];
	/* what arrived */
	int objects_received;
	char last_object[80];
	int tasks_received;
	int refused_once;
	int cancels;
	int drains;
	json_t *task_msgs[16];
	struct fake_task tasks[16];
	int ntasks;
	char cache[4][80]; /* names held */
	int ncache;
	int queue_max; /* > 0: offers `queue` with this queue_max (set before the loop runs) */
	int cores;     /* capacity; 0: 4 */
	int queued_received;
	int watch;       /* offers `watch` (set before the loop runs); its sends are not asserted */
	int watch_sent;  /* sent callbacks seen while WATCH (any outcome) */
	int watch_fails; /* ... of which not WQ_XFER_SENT */
	int drop_msgs;   /* cache_drop messages received */
	char dropped[8][80]; /* the names they carried, in order (the first 8) */
	int ndropped;
	int dismissed; /* a dismiss arrived, with this reason */
	char dismiss_reason[64];
};

static inline struct fake_task *fake_task_find(struct fake *f, int64_t id)
{
	for (int i = 0; i < f->ntasks; i++)
		if (f->tasks[i].id == id && f->tasks[i].stage < 2)
			return &f->tasks[i];
	return NULL;
}

static inline void fake_send(struct fake *f, json_t *msg)
{
	assert_int_equal(wq_conn_send_msg(f->c, msg), 0);
	json_decref(msg);
}

static inline void fake_task_done(struct fake *f, struct fake_task *t)
{
	json_t *outputs = json_pack("[{s:i,s:i}]", "index", 0, "xfer", (int)t->out_xfer);
	json_t *done = json_pack(
	    "{s:s,s:I,s:I,s:s,s:i,s:{s:I,s:b,s:i},s:o,s:{s:s,s:i,s:f,s:f,s:i},s:{s:I,s:I},s:b}",
	    "m", "task_done", "id", (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome",
	    "exited", "exit_status", 3, "stdout", "size", (json_int_t)6, "truncated", 0, "xfer",
	    (int)t->stdout_xfer, "outputs", outputs, "summary", "exit_type", "normal",
	    "exit_status", 3, "wall_time", 0.5, "cores", 1.0, "memory", 10, "times", "started",
	    (json_int_t)1000000, "ended", (json_int_t)1500000, "disk_full", 0);
	fake_send(f, done);
	t->stage = 2;
}

static inline void fake_sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct fake *f = user;
	struct fake_task *t = fake_task_find(f, (int64_t)(intptr_t)r->tag);
	if (f->watch) { /* the test drives the transfers and task_done itself */
		f->watch_sent++;
		f->watch_fails += r->outcome != WQ_XFER_SENT;
		return;
	}
	assert_int_equal(r->outcome, WQ_XFER_SENT);
	if (t && --t->pending_sends == 0)
		fake_task_done(f, t);
}

static const struct wq_xfer_out_callbacks fake_out_cb = {.sent = fake_sent};

static inline void fake_send_results(struct fake *f, struct fake_task *t);

/* All inputs are in place: "run" it. */
static inline void fake_run(struct fake *f, struct fake_task *t)
{
	fake_send(f,
	          json_pack("{s:s,s:I,s:I,s:I,s:[]}", "m", "task_running", "id", (json_int_t)t->id,
	                    "try", (json_int_t)t->try_, "at", (json_int_t)1000000, "gpus"));
	json_t *res = json_object_get(t->msg, "resources");
	if (f->mode == FAKE_EXHAUST_FIRST && t->try_ == 1 &&
	    json_integer_value(json_object_get(res, "memory")) < 2000) {
		fake_send(f,
		          json_pack("{s:s,s:I,s:I,s:s,s:i,s:[s],s:{s:s,s:i,s:f}}", "m", "task_done",
		                    "id", (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome",
		                    "exhausted", "signal", 9, "exhausted", "memory", "summary",
		                    "exit_type", "limits", "memory", 900, "wall_time", 0.2));
		t->stage = 2;
		return;
	}
	if (f->mode == FAKE_HOLD)
		return;
	fake_send_results(f, t);
}

/* The rest of a run: the output and stdout, then task_done (FAKE_HOLD: called by the test). */
static inline void fake_send_results(struct fake *f, struct fake_task *t)
{
	if (f->mode == FAKE_SIGNAL) {
		fake_send(f, json_pack("{s:s,s:I,s:I,s:s,s:i}", "m", "task_done", "id",
		                       (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome",
		                       "signaled", "signal", 11));
		t->stage = 2;
		return;
	}
	t->stage = 1;
	t->pending_sends = 2;
	json_t *target = wq_xfer_target_output(t->id, 0);
	const char *txt = t->input_text ? t->input_text : "";
	assert_int_equal(wq_xfer_send_buffer(f->out, txt, strlen(txt), target, 0,
	                                     (void *)(intptr_t)t->id, &t->out_xfer),
	                 0);
	json_decref(target);
	target = wq_xfer_target_stdout(t->id);
	assert_int_equal(wq_xfer_send_buffer(f->out, "hello\n", 6, target, 0,
	                                     (void *)(intptr_t)t->id, &t->stdout_xfer),
	                 0);
	json_decref(target);
}

static inline void append_text(struct fake_task *t, const char *s)
{
	char *n = xasprintf("%s%s", t->input_text ? t->input_text : "", s ? s : "");
	free(t->input_text);
	t->input_text = n;
}

/* Runs T once every input is in place (cache objects can complete after the task message,
 * as the receiver stores them off the loop thread). */
static inline void fake_try_run(struct fake *f, struct fake_task *t)
{
	if (t->stage != 0 || t->queued)
		return;
	json_t *inputs = json_object_get(t->msg, "inputs");
	size_t i;
	json_t *in;
	json_array_foreach(inputs, i, in)
	{
		const char *from = json_string_value(json_object_get(in, "from"));
		char p[256];
		if (!strcmp(from, "task"))
			snprintf(p, sizeof p, "%s/in.%lld.%zu", f->dir, (long long)t->id, i);
		else
			snprintf(p, sizeof p, "%s/%s", f->dir,
			         json_string_value(json_object_get(in, "object")));
		if (access(p, F_OK) != 0)
			return;
	}
	json_array_foreach(inputs, i, in)
	{
		const char *from = json_string_value(json_object_get(in, "from"));
		char p[256];
		if (!strcmp(from, "task"))
			snprintf(p, sizeof p, "%s/in.%lld.%zu", f->dir, (long long)t->id, i);
		else
			snprintf(p, sizeof p, "%s/%s", f->dir,
			         json_string_value(json_object_get(in, "object")));
		char *txt = read_file(p);
		append_text(t, txt);
		free(txt);
	}
	fake_run(f, t);
}

static inline void fake_on_task(struct fake *f, json_t *msg)
{
	f->tasks_received++;
	if (f->tasks_received <= 16)
		f->task_msgs[f->tasks_received - 1] = json_incref(msg);
	int64_t id = json_integer_value(json_object_get(msg, "id"));
	int64_t tr = json_integer_value(json_object_get(msg, "try"));
	if (f->mode == FAKE_DISCONNECT) {
		wq_conn_close_now(f->c);
		return;
	}
	if (f->mode == FAKE_VIOLATE) {
		fake_send(f, json_pack("{s:s,s:i,s:i,s:i}", "m", "task_running", "id", 9999, "try",
		                       1, "at", 1));
		return;
	}
	json_t *inputs = json_object_get(msg, "inputs");
	size_t i;
	json_t *in;
	if (f->mode == FAKE_REFUSE_MISSING && !f->refused_once) {
		json_array_foreach(inputs, i, in)
		{
			const char *obj = json_string_value(json_object_get(in, "object"));
			if (obj) {
				f->refused_once = 1;
				f->ncache = 0; /* the object "vanished" */
				char *text = xasprintf("object %s is not in the cache", obj);
				fake_send(f, json_pack("{s:s,s:I,s:I,s:s,s:s}", "m", "task_refused",
				                       "id", (json_int_t)id, "try", (json_int_t)tr,
				                       "code", "missing_object", "text", text));
				free(text);
				return;
			}
		}
	}
	assert_true(f->ntasks < 16);
	struct fake_task *t = &f->tasks[f->ntasks++];
	memset(t, 0, sizeof *t);
	t->id = id;
	t->try_ = tr;
	t->msg = msg;
	t->queued = json_is_true(json_object_get(msg, "queued"));
	f->queued_received += t->queued;
	fake_try_run(f, t);
}

static inline int fake_recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                                  struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	(void)r;
	struct fake *f = user;
	static char tmp[256], fin[256];
	snprintf(tmp, sizeof tmp, "%s/.partial.%u", f->dir, in->id);
	if (in->target->kind == WQ_TARGET_OBJECT) {
		snprintf(fin, sizeof fin, "%s/%s", f->dir, in->target->object);
		dest->final_path = fin;
	} else {
		snprintf(fin, sizeof fin, "%s/in.%lld.%lld", f->dir, (long long)in->target->task,
		         (long long)in->target->index);
		dest->final_path = fin;
	}
	dest->tmp_path = tmp;
	return 0;
}

static inline void fake_recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                                 int status, const char *text, void *user)
{
	(void)i;
	(void)text;
	struct fake *f = user;
	assert_int_equal(status, 0);
	if (in->target->kind == WQ_TARGET_OBJECT) {
		f->objects_received++;
		snprintf(f->last_object, sizeof f->last_object, "%s", in->target->object);
		snprintf(f->cache[f->ncache++ % 4], 80, "%s", in->target->object);
	}
}

static inline void fake_recv_end_cb(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                                    int status, const char *text, void *user)
{
	struct fake *f = user;
	fake_recv_end(i, in, status, text, user);
	for (int k = 0; k < f->ntasks; k++)
		fake_try_run(f, &f->tasks[k]);
}

static const struct wq_xfer_in_callbacks fake_in_cb = {fake_recv_begin, fake_recv_end_cb};

/* `capacity`: 4 cores (or f->cores), 4000 MB, 9000 MB of disk free, or none with FULL. */
static inline void fake_capacity(struct fake *f, int full)
{
	fake_send(f, json_pack("{s:s,s:{s:i,s:s},s:{s:i,s:s},s:{s:i,s:s},s:{s:i,s:s},s:i,s:i,s:b}",
	                       "m", "capacity", "cores", "total", f->cores > 0 ? f->cores : 4,
	                       "source", "declared", "memory", "total", 4000, "source", "declared",
	                       "disk", "total", 10000, "source", "declared", "gpus", "total", 0,
	                       "source", "declared", "disk_free", full ? 50 : 9000, "cache", 0,
	                       "disk_full", full));
}

static inline void fake_hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct fake *f = user;
	(void)h;
	f->hs_done = 1;
	f->outcome = r->outcome;
	snprintf(f->hs_code, sizeof f->hs_code, "%s", r->code);
	if (r->outcome != WQ_HS_OK)
		return;
	f->in = wq_xfer_in_create(&loop, f->c, false, r->caps, &fake_in_cb, f);
	f->out = wq_xfer_out_create(&loop, f->c, false, &fake_out_cb, f);
	json_t *ident =
	    json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:[],s:n,s:b,s:s,s:b}", "m", "identity",
	              "host", "fakehost", "os", "Linux", "os_release", "6", "arch", "x86_64",
	              "software", "fake 0", "pid", 42, "workdir", f->dir, "labels", "end_time",
	              "docker", 0, "cgroups", "none", "single_shot", 0);
	if (f->queue_max > 0)
		json_object_set_new(ident, "queue_max", json_integer(f->queue_max));
	fake_send(f, ident);
	fake_capacity(f, 0);
	fake_send(f, json_pack("{s:s,s:[],s:b}", "m", "cache_have", "objects", "last", 1));
}

static inline void fake_message(struct wq_conn *c, json_t *msg, const char *name,
                                const uint8_t *raw, size_t len, void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->h && wq_handshake_message(f->h, msg, name, raw, len))
		return;
	if (f->in && wq_xfer_in_message(f->in, msg, name))
		return;
	if (!strcmp(name, "task")) {
		fake_on_task(f, msg);
	} else if (!strcmp(name, "task_cancel")) {
		/* a task_done that crossed the cancel, then the answer */
		json_t *id = json_object_get(msg, "id"), *tr = json_object_get(msg, "try");
		f->cancels++;
		fake_send(f,
		          json_pack("{s:s,s:O,s:O,s:s,s:i,s:[]}", "m", "task_done", "id", id, "try",
		                    tr, "outcome", "exited", "exit_status", 0, "outputs"));
		fake_send(f, json_pack("{s:s,s:O,s:O,s:b}", "m", "task_cancelled", "id", id, "try",
		                       tr, "known", 1));
	} else if (!strcmp(name, "xfer_error") && f->out)
		wq_xfer_out_message(f->out, msg, name);
	else if (!strcmp(name, "drain")) {
		f->drains++;
		fake_send(f, json_pack("{s:s,s:s}", "m", "draining", "reason", "asked"));
	} else if (!strcmp(name, "cache_drop")) {
		f->drop_msgs++;
		json_t *names = json_object_get(msg, "objects"), *x;
		size_t k;
		json_array_foreach(names, k, x)
		{
			if (f->ndropped < 8)
				snprintf(f->dropped[f->ndropped++], 80, "%s", json_string_value(x));
		}
	} else if (!strcmp(name, "dismiss") || !strcmp(name, "shutdown")) {
		if (!strcmp(name, "dismiss")) {
			f->dismissed = 1;
			snprintf(f->dismiss_reason, sizeof f->dismiss_reason, "%s",
			         json_string_value(json_object_get(msg, "reason")));
		}
		json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", "asked");
		wq_conn_close(f->c, bye);
		json_decref(bye);
	}
}

static inline void fake_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len,
                             void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->h && wq_handshake_data(f->h, xfer))
		return;
	if (f->in)
		wq_xfer_in_data(f->in, xfer, b, len);
}

static inline void fake_writable(struct wq_conn *c, void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->out)
		wq_xfer_out_writable(f->out);
}

static inline void fake_closed(struct wq_conn *c, enum wq_conn_end why, const char *text,
                               void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->h && !wq_handshake_finished(f->h))
		wq_handshake_closed(f->h, why, text);
	f->closed = 1;
}

static const struct wq_conn_callbacks fake_cb = {fake_message, fake_data, fake_writable,
                                                 fake_closed};

static inline void fake_connected(uv_connect_t *req, int status)
{
	struct fake *f = req->data;
	assert_int_equal(status, 0);
	f->c = wq_conn_create(f->tcp, "master 127.0.0.1", &fake_cb, f);
	assert_non_null(f->c);
	wq_conn_set_linger(f->c, 100);
	struct wq_hs_config cfg = {0};
	cfg.master = false;
	cfg.role = WQ_ROLE_WORKER;
	cfg.key = f->key;
	cfg.tls = f->tls;
	cfg.tls_host = "127.0.0.1";
	cfg.software = "fake 0";
	cfg.id = WORKER_ID;
	cfg.host = "fakehost";
	cfg.caps = (f->queue_max > 0 ? WQ_CAP_QUEUE : 0) | (f->watch ? WQ_CAP_WATCH : 0);
	char *err = NULL;
	f->h = wq_handshake_start(&loop, f->c, &cfg, fake_hs_done, f, &err);
	assert_non_null(f->h);
}

static inline struct fake *fake_start_tls(struct work_queue *q, enum fake_mode mode,
                                          const char *password, bool tls)
{
	struct fake *f = xcalloc(1, sizeof *f);
	if (tls) {
		char *err = NULL;
		f->tls = wq_tls_config_client_create(WQ_TLS_VERIFY_NONE, NULL, &err);
		assert_non_null(f->tls);
	}
	f->mode = mode;
	static int serial;
	snprintf(f->dir, sizeof f->dir, "%s/fake%d", tmpdir, ++serial);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	if (password)
		f->key = wq_auth_key_create(password, strlen(password));
	f->tcp = xmalloc(sizeof *f->tcp);
	uv_tcp_init(&loop, f->tcp);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", work_queue_port(q), &a);
	f->creq.data = f;
	assert_int_equal(uv_tcp_connect(&f->creq, f->tcp, (struct sockaddr *)&a, fake_connected),
	                 0);
	return f;
}

static inline struct fake *fake_start(struct work_queue *q, enum fake_mode mode,
                                      const char *password)
{
	return fake_start_tls(q, mode, password, false);
}

static inline void fake_free(struct fake *f)
{
	wq_xfer_in_delete(f->in);
	wq_xfer_out_delete(f->out);
	wq_handshake_delete(f->h);
	wq_conn_delete(f->c);
	for (int i = 0; i < 16; i++)
		json_decref(f->task_msgs[i]);
	for (int i = 0; i < f->ntasks; i++)
		free(f->tasks[i].input_text);
	wq_auth_key_delete(f->key);
	wq_tls_config_delete(f->tls);
	path_rm_rf(f->dir);
	free(f);
}

/* The worker frees room: queued task ID starts (task_running), as a real worker would. */
static inline void fake_start_queued(struct fake *f, int64_t id)
{
	struct fake_task *t = fake_task_find(f, id);
	assert_non_null(t);
	t->queued = 0;
	fake_try_run(f, t);
}

/* Runs the loop (through the queue: work_queue_wait(q, 0) with short sleeps) until *FLAG. */
static inline int run_until_flag(struct work_queue *q, int *flag, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	while (!*flag && uv_hrtime() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		assert_null(t); /* nothing finishes while we wait for a flag */
	}
	return *flag;
}

static inline int worker_active(struct work_queue *q, int n, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_stats s;
	do {
		work_queue_wait(q, 0.02);
		work_queue_get_stats(q, &s);
	} while (s.workers_connected < n && uv_hrtime() < end);
	return s.workers_connected >= n;
}

static inline struct work_queue *queue(const char *password)
{
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &loop;
	char pw[160];
	if (password) {
		snprintf(pw, sizeof pw, "%s/pw", tmpdir);
		write_file(pw, password);
		chmod(pw, 0600);
		o.password_file = pw;
	}
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	assert_true(work_queue_port(q) > 0);
	return q;
}

/* A task: cat of a cached file and a buffer into out.txt. */
static inline struct work_queue_task *make_task(const char *in_path, const char *out_path)
{
	struct work_queue_task *t = work_queue_task_create("cat ref.fa buf.txt > out.txt");
	assert_int_equal(work_queue_task_specify_input_file(t, in_path, "ref.fa", WORK_QUEUE_CACHE),
	                 0);
	assert_int_equal(
	    work_queue_task_specify_buffer(t, "BUF\n", 4, "buf.txt", WORK_QUEUE_NOCACHE), 0);
	assert_int_equal(
	    work_queue_task_specify_output_file(t, out_path, "out.txt", WORK_QUEUE_NOCACHE), 0);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_disk(t, 100);
	return t;
}

static inline struct work_queue_task *wait_task(struct work_queue *q, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_task *t = NULL;
	while (!t && uv_hrtime() < end)
		t = work_queue_wait(q, 0.2);
	return t;
}

static inline void finish(struct work_queue *q)
{
	work_queue_delete(q);
	uv_run(&loop, UV_RUN_NOWAIT);
}

static inline int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_work_queue.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(log_path, sizeof log_path, "%s/log", tmpdir);
	if (uv_loop_init(&loop) != 0)
		return -1;
	debug_flags_set("wq");
	return debug_config_file(log_path);
}

static inline void close_left(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Lets the loop finish what the test closed (lingering connections: up to 2 s). Handles still
 * open after 5 s belong to a test that failed half-way (its queue was never deleted): they are
 * closed here so that the failure is reported instead of waiting for ever. */
static inline int teardown(void **state)
{
	(void)state;
	debug_config_file(NULL);
	uint64_t end = uv_hrtime() + (uint64_t)5e9;
	while (uv_loop_alive(&loop) && uv_hrtime() < end)
		uv_run(&loop, UV_RUN_ONCE);
	int left = uv_loop_alive(&loop);
	if (left) {
		fprintf(stderr, "teardown: handles left open by a failed test; closing them\n");
		uv_walk(&loop, close_left, NULL);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	int rc = uv_loop_close(&loop);
	path_rm_rf(tmpdir);
	return rc == 0 && !left ? 0 : -1;
}

#endif
