/* wq_fake_worker.c: the scripted fake worker and the fixture of the master library's integration
 * tests (see wq_fake_worker.h). The fake stores what it receives in its own directory, "runs" a
 * task by concatenating its inputs into output 0 and "hello\n" into stdout, and answers the
 * master's messages as its mode says. */
#include "wq_fake_worker.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "path.h"
#include "ts_tmpdir.h"
#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_msg.h"
#include "wq_sim.h"
#include "wq_tls.h"
#include "wq_xfer.h"
#include "xalloc.h"
#include "banned.h"

/* ---- the fixture ---------------------------------------------------------------------------- */

int fake_env_setup(void **state)
{
	struct fake_env *e = xcalloc(1, sizeof *e);
	e->dir = ts_tmpdir_create("test_work_queue");
	e->log = path_join(e->dir, "log");
	if (uv_loop_init(&e->loop) != 0)
		return -1;
	debug_flags_set("wq");
	*state = e;
	return debug_config_file(e->log);
}

static void close_left(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int fake_env_teardown(void **state)
{
	struct fake_env *e = *state;
	debug_config_file(NULL);
	uint64_t end = uv_hrtime() + (uint64_t)5e9;
	while (uv_loop_alive(&e->loop) && uv_hrtime() < end)
		uv_run(&e->loop, UV_RUN_ONCE);
	int left = uv_loop_alive(&e->loop);
	if (left) {
		fprintf(stderr, "teardown: handles left open by a failed test; closing them\n");
		uv_walk(&e->loop, close_left, NULL);
		uv_run(&e->loop, UV_RUN_NOWAIT);
	}
	int rc = uv_loop_close(&e->loop);
	ts_tmpdir_remove(e->dir);
	free(e->log);
	free(e);
	return rc == 0 && !left ? 0 : -1;
}

bool fake_log_has(const struct fake_env *e, const char *s)
{
	FILE *f = fopen(e->log, "r");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

/* ---- the fake worker ------------------------------------------------------------------------ */

struct fake_task *fake_task_find(struct fake *f, int64_t id)
{
	for (int i = 0; i < f->ntasks; i++)
		if (f->tasks[i].id == id && f->tasks[i].stage < 2)
			return &f->tasks[i];
	return NULL;
}

void fake_send(struct fake *f, json_t *msg)
{
	int rc = wq_conn_send_msg(f->c, msg);
	/* a worker the master dismisses (sandbox errors) may find its connection closed under
	 * any later message; that is the master's doing, not the fake's failure */
	if (f->mode != FAKE_SANDBOX_ERROR)
		assert_int_equal(rc, 0);
	json_decref(msg);
}

static void fake_task_done(struct fake *f, struct fake_task *t)
{
	uint32_t out = wq_sim_wire_id(f->wire_ids, t->out_xfer);
	uint32_t so = wq_sim_wire_id(f->wire_ids, t->stdout_xfer);
	json_t *outputs = json_pack("[{s:i,s:i}]", "index", 0, "xfer", (int)out);
	json_t *done = wq_sim_task_done_msg(t->id, t->try_, 3, 6, so, outputs, 1000000, 1500000);
	fake_send(f, done);
	t->stage = 2;
}

static void fake_sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct fake *f = user;
	struct fake_task *t = fake_task_find(f, (int64_t)(intptr_t)r->tag);
	wq_sim_wire_note(&f->wire_ids, r);
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

/* All inputs are in place: "run" it. */
static void fake_run(struct fake *f, struct fake_task *t)
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
	if (f->mode == FAKE_SANDBOX_ERROR) {
		/* the master dismisses it after three (fake_send tolerates the closed
		 * connection a later answer may meet) */
		fake_send(f,
		          json_pack("{s:s,s:I,s:I,s:s,s:s}", "m", "task_done", "id",
		                    (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome",
		                    "sandbox_error", "text", "cannot create the sandbox: ENOENT"));
		t->stage = 2;
		return;
	}
	fake_send_results(f, t);
}

void fake_send_results(struct fake *f, struct fake_task *t)
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

static void append_text(struct fake_task *t, const char *s)
{
	char *n = xasprintf("%s%s", t->input_text ? t->input_text : "", s ? s : "");
	free(t->input_text);
	t->input_text = n;
}

/* Where input I (IN) of task T is stored in F's directory. */
static void input_path(struct fake *f, struct fake_task *t, size_t i, json_t *in, char *p,
                       size_t size)
{
	const char *from = json_string_value(json_object_get(in, "from"));
	if (!strcmp(from, "task"))
		snprintf(p, size, "%s/in.%lld.%zu", f->dir, (long long)t->id, i);
	else
		snprintf(p, size, "%s/%s", f->dir,
		         json_string_value(json_object_get(in, "object")));
}

/* Runs T once every input is in place (cache objects can complete after the task message,
 * as the receiver stores them off the loop thread). */
static void fake_try_run(struct fake *f, struct fake_task *t)
{
	if (t->stage != 0 || t->queued)
		return;
	json_t *inputs = json_object_get(t->msg, "inputs");
	size_t i;
	json_t *in;
	char p[512];
	json_array_foreach(inputs, i, in)
	{
		input_path(f, t, i, in, p, sizeof p);
		if (access(p, F_OK) != 0)
			return;
	}
	json_array_foreach(inputs, i, in)
	{
		input_path(f, t, i, in, p, sizeof p);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			continue; /* a directory input adds nothing to the output */
		char *txt = ts_read_file(p, NULL);
		append_text(t, txt);
		free(txt);
	}
	fake_run(f, t);
}

/* REFUSE_MISSING: once the object of the pending task is on the disk, it "vanishes" (from
 * the disk too, so that the task waits for it to be sent again) and the task is refused. */
static void fake_refuse_missing(struct fake *f)
{
	json_t *msg = f->refuse_pending;
	if (!msg)
		return;
	json_t *inputs = json_object_get(msg, "inputs");
	size_t i;
	json_t *in;
	json_array_foreach(inputs, i, in)
	{
		const char *obj = json_string_value(json_object_get(in, "object"));
		if (!obj)
			continue;
		char gone[512];
		snprintf(gone, sizeof gone, "%s/%s", f->dir, obj);
		if (access(gone, F_OK) != 0)
			return; /* not stored yet: fake_recv_end calls again */
		unlink(gone);
		f->ncache = 0;
		char *text = xasprintf("object %s is not in the cache", obj);
		fake_send(f,
		          json_pack("{s:s,s:O,s:O,s:s,s:s}", "m", "task_refused", "id",
		                    json_object_get(msg, "id"), "try", json_object_get(msg, "try"),
		                    "code", "missing_object", "text", text));
		free(text);
		break;
	}
	f->refuse_pending = NULL;
	json_decref(msg);
}

static void fake_on_task(struct fake *f, json_t *msg)
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
			if (json_string_value(json_object_get(in, "object"))) {
				/* refused once the object is stored (it may still be on its way, as
				 * the receiver stores objects off the loop thread), so that it has
				 * truly vanished when the refusal reaches the master */
				f->refused_once = 1;
				f->refuse_pending = json_incref(msg);
				fake_refuse_missing(f);
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

static int fake_recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                           struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	(void)r;
	struct fake *f = user;
	static char tmp[512], fin[512]; /* copied by the receiver after the call */
	snprintf(tmp, sizeof tmp, "%s/.partial.%u", f->dir, in->id);
	if (in->target->kind == WQ_TARGET_OBJECT)
		snprintf(fin, sizeof fin, "%s/%s", f->dir, in->target->object);
	else
		snprintf(fin, sizeof fin, "%s/in.%lld.%lld", f->dir, (long long)in->target->task,
		         (long long)in->target->index);
	dest->final_path = fin;
	dest->tmp_path = tmp;
	return 0;
}

static void fake_recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                          const char *text, void *user)
{
	(void)i;
	(void)text;
	struct fake *f = user;
	assert_int_equal(status, 0);
	if (in->target->kind == WQ_TARGET_OBJECT) {
		f->objects_received++;
		snprintf(f->last_object, sizeof f->last_object, "%s", in->target->object);
		snprintf(f->cache[f->ncache++ % 4], 80, "%s", in->target->object);
		fake_refuse_missing(f);
	}
	for (int k = 0; k < f->ntasks; k++)
		fake_try_run(f, &f->tasks[k]);
}

static const struct wq_xfer_in_callbacks fake_in_cb = {fake_recv_begin, fake_recv_end};

void fake_capacity(struct fake *f, int full)
{
	fake_send(f, wq_sim_capacity_msg(f->cores > 0 ? f->cores : 4, 4000, 10000, full ? 50 : 9000,
	                                 full));
}

static void fake_hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct fake *f = user;
	(void)h;
	f->hs_done = 1;
	f->outcome = r->outcome;
	snprintf(f->hs_code, sizeof f->hs_code, "%s", r->code);
	if (r->outcome != WQ_HS_OK)
		return;
	f->in = wq_xfer_in_create(f->loop, f->c, false, r->caps, &fake_in_cb, f);
	f->out = wq_xfer_out_create(f->loop, f->c, false, &fake_out_cb, f);
	json_t *ident = wq_sim_identity_msg("fakehost", "fake 0", f->dir, f->queue_max);
	if (r->caps & WQ_CAP_SHARED_CACHE)
		json_object_set_new(ident, "store", json_string(f->store));
	if (f->containers)
		json_object_set_new(ident, "docker", json_true());
	fake_send(f, ident);
	fake_capacity(f, 0);
	fake_send(f, json_pack("{s:s,s:[],s:b}", "m", "cache_have", "objects", "last", 1));
}

static void fake_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                         size_t len, void *user)
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
	} else if (!strcmp(name, "cache_take")) {
		f->takes++;
		snprintf(f->last_take, sizeof f->last_take, "%s",
		         json_string_value(json_object_get(msg, "object")));
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

static void fake_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->h && wq_handshake_data(f->h, xfer))
		return;
	if (f->in)
		wq_xfer_in_data(f->in, xfer, b, len);
}

static void fake_writable(struct wq_conn *c, void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->out)
		wq_xfer_out_writable(f->out);
}

static void fake_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	struct fake *f = user;
	(void)c;
	if (f->h && !wq_handshake_finished(f->h))
		wq_handshake_closed(f->h, why, text);
	f->closed = 1;
}

static const struct wq_conn_callbacks fake_cb = {fake_message, fake_data, fake_writable,
                                                 fake_closed};

static void fake_connected(uv_connect_t *req, int status)
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
	cfg.id = FAKE_WORKER_ID;
	cfg.host = "fakehost";
	cfg.caps = (f->queue_max > 0 ? WQ_CAP_QUEUE : 0) | (f->watch ? WQ_CAP_WATCH : 0) |
	           (f->store[0] ? WQ_CAP_SHARED_CACHE : 0) |
	           (f->store[0] && f->shared_dirs ? WQ_CAP_SHARED_DIRS : 0) |
	           (f->containers ? WQ_CAP_CONTAINERS | WQ_CAP_IMAGES : 0);
	char *err = NULL;
	f->h = wq_handshake_start(f->loop, f->c, &cfg, fake_hs_done, f, &err);
	assert_non_null(f->h);
}

struct fake *fake_start_tls(struct fake_env *e, struct work_queue *q, enum fake_mode mode,
                            const char *password, bool tls)
{
	struct fake *f = xcalloc(1, sizeof *f);
	if (tls) {
		char *err = NULL;
		f->tls = wq_tls_config_client_create(WQ_TLS_VERIFY_NONE, NULL, &err);
		assert_non_null(f->tls);
	}
	f->mode = mode;
	f->loop = work_queue_loop(q);
	snprintf(f->dir, sizeof f->dir, "%s/fake%d", e->dir, ++e->serial);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	if (password)
		f->key = wq_auth_key_create(password, strlen(password));
	f->tcp = xmalloc(sizeof *f->tcp);
	uv_tcp_init(f->loop, f->tcp);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", work_queue_port(q), &a);
	f->creq.data = f;
	assert_int_equal(uv_tcp_connect(&f->creq, f->tcp, (struct sockaddr *)&a, fake_connected),
	                 0);
	return f;
}

struct fake *fake_start(struct fake_env *e, struct work_queue *q, enum fake_mode mode,
                        const char *password)
{
	return fake_start_tls(e, q, mode, password, false);
}

void fake_free(struct fake *f)
{
	wq_xfer_in_delete(f->in);
	wq_xfer_out_delete(f->out);
	json_decref(f->wire_ids);
	f->wire_ids = NULL;
	wq_handshake_delete(f->h);
	wq_conn_delete(f->c);
	for (int i = 0; i < 16; i++)
		json_decref(f->task_msgs[i]);
	json_decref(f->refuse_pending);
	for (int i = 0; i < f->ntasks; i++)
		free(f->tasks[i].input_text);
	wq_auth_key_delete(f->key);
	wq_tls_config_delete(f->tls);
	path_rm_rf(f->dir);
	free(f);
}

void fake_start_queued(struct fake *f, int64_t id)
{
	struct fake_task *t = fake_task_find(f, id);
	assert_non_null(t);
	t->queued = 0;
	fake_try_run(f, t);
}

/* ---- the queue ------------------------------------------------------------------------------ */

bool fake_queue_until(struct work_queue *q, bool (*done)(void *arg), void *arg, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	while (!done(arg) && uv_hrtime() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.02);
		assert_null(t); /* nothing finishes while we wait for something else */
	}
	return done(arg);
}

static bool flag_set(void *arg)
{
	return *(int *)arg != 0;
}

int fake_wait_flag(struct work_queue *q, int *flag, double seconds)
{
	fake_queue_until(q, flag_set, flag, seconds);
	return *flag;
}

int fake_wait_workers(struct work_queue *q, int n, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_stats s;
	do {
		work_queue_wait(q, 0.02);
		work_queue_get_stats(q, &s);
	} while (s.workers_connected < n && uv_hrtime() < end);
	return s.workers_connected >= n;
}

struct work_queue *fake_queue(struct fake_env *e, const char *password)
{
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &e->loop;
	char *pw = NULL;
	if (password) {
		pw = path_join(e->dir, "pw");
		ts_write_file(pw, password);
		chmod(pw, 0600);
		o.password_file = pw;
	}
	struct work_queue *q = work_queue_create_opts(&o);
	free(pw);
	assert_non_null(q);
	assert_true(work_queue_port(q) > 0);
	return q;
}

struct work_queue_task *fake_make_task(const char *in_path, const char *out_path)
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

struct work_queue_task *fake_wait_task(struct work_queue *q, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_task *t = NULL;
	while (!t && uv_hrtime() < end)
		t = work_queue_wait(q, 0.2);
	return t;
}

void fake_queue_delete(struct work_queue *q)
{
	uv_loop_t *loop = work_queue_loop(q);
	work_queue_delete(q);
	uv_run(loop, UV_RUN_NOWAIT);
}
