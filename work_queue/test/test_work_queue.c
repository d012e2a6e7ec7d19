/* test_work_queue.c: integration tests of the Work Queue master library (work_queue.h) over real
 * loopback TCP. A scripted fake worker built from wq_conn, wq_handshake (worker side), wq_msg and
 * wq_xfer runs on the same libuv loop as the queue and plays the worker's side of the protocol:
 * cache objects, per-task inputs, outputs, refusals, disconnections, violations and exhaustion. */
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
#include "wq_status_client.h"
#include "wq_tls.h"
#include "wq_xfer.h"
#include "xalloc.h"
#include "banned.h"

#define WORKER_ID "fedcba9876543210fedcba9876543210"

static char tmpdir[64], log_path[128];
static uv_loop_t loop;

/* ---- files -------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *path)
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

static int log_has(const char *s)
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
	json_t *task_msgs[16];
	struct fake_task tasks[16];
	int ntasks;
	char cache[4][80]; /* names held */
	int ncache;
};

static struct fake_task *fake_task_find(struct fake *f, int64_t id)
{
	for (int i = 0; i < f->ntasks; i++)
		if (f->tasks[i].id == id && f->tasks[i].stage < 2)
			return &f->tasks[i];
	return NULL;
}

static void fake_send(struct fake *f, json_t *msg)
{
	assert_int_equal(wq_conn_send_msg(f->c, msg), 0);
	json_decref(msg);
}

static void fake_task_done(struct fake *f, struct fake_task *t)
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

static void fake_sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct fake *f = user;
	struct fake_task *t = fake_task_find(f, (int64_t)(intptr_t)r->tag);
	assert_int_equal(r->outcome, WQ_XFER_SENT);
	if (t && --t->pending_sends == 0)
		fake_task_done(f, t);
}

static const struct wq_xfer_out_callbacks fake_out_cb = {fake_sent, NULL};

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

/* Runs T once every input is in place (cache objects can complete after the task message,
 * as the receiver stores them off the loop thread). */
static void fake_try_run(struct fake *f, struct fake_task *t)
{
	if (t->stage != 0)
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
	fake_try_run(f, t);
}

static int fake_recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
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
	}
}

static void fake_recv_end_cb(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                             const char *text, void *user)
{
	struct fake *f = user;
	fake_recv_end(i, in, status, text, user);
	for (int k = 0; k < f->ntasks; k++)
		fake_try_run(f, &f->tasks[k]);
}

static const struct wq_xfer_in_callbacks fake_in_cb = {fake_recv_begin, fake_recv_end_cb};

static void fake_hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
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
	fake_send(f, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:[],s:n,s:b,s:s,s:b}", "m",
	                       "identity", "host", "fakehost", "os", "Linux", "os_release", "6",
	                       "arch", "x86_64", "software", "fake 0", "pid", 42, "workdir", f->dir,
	                       "labels", "end_time", "docker", 0, "cgroups", "none", "single_shot",
	                       0));
	fake_send(f, json_pack("{s:s,s:{s:i,s:s},s:{s:i,s:s},s:{s:i,s:s},s:{s:i,s:s},s:i,s:i,s:b}",
	                       "m", "capacity", "cores", "total", 4, "source", "declared", "memory",
	                       "total", 4000, "source", "declared", "disk", "total", 10000,
	                       "source", "declared", "gpus", "total", 0, "source", "declared",
	                       "disk_free", 9000, "cache", 0, "disk_full", 0));
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
	else if (!strcmp(name, "dismiss") || !strcmp(name, "shutdown")) {
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
	cfg.id = WORKER_ID;
	cfg.host = "fakehost";
	cfg.caps = 0;
	char *err = NULL;
	f->h = wq_handshake_start(&loop, f->c, &cfg, fake_hs_done, f, &err);
	assert_non_null(f->h);
}

static struct fake *fake_start_tls(struct work_queue *q, enum fake_mode mode, const char *password,
                                   bool tls)
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

static struct fake *fake_start(struct work_queue *q, enum fake_mode mode, const char *password)
{
	return fake_start_tls(q, mode, password, false);
}

static void fake_free(struct fake *f)
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

/* Runs the loop (through the queue: work_queue_wait(q, 0) with short sleeps) until *FLAG. */
static int run_until_flag(struct work_queue *q, int *flag, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	while (!*flag && uv_hrtime() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		assert_null(t); /* nothing finishes while we wait for a flag */
	}
	return *flag;
}

static int worker_active(struct work_queue *q, int n, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_stats s;
	do {
		work_queue_wait(q, 0.02);
		work_queue_get_stats(q, &s);
	} while (s.workers_connected < n && uv_hrtime() < end);
	return s.workers_connected >= n;
}

static struct work_queue *queue(const char *password)
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
static struct work_queue_task *make_task(const char *in_path, const char *out_path)
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

static struct work_queue_task *wait_task(struct work_queue *q, double seconds)
{
	uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
	struct work_queue_task *t = NULL;
	while (!t && uv_hrtime() < end)
		t = work_queue_wait(q, 0.2);
	return t;
}

static void finish(struct work_queue *q)
{
	work_queue_delete(q);
	uv_run(&loop, UV_RUN_NOWAIT);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_task_round_trip(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char in[128], out[128], out2[128];
	snprintf(in, sizeof in, "%s/ref.fa", tmpdir);
	snprintf(out, sizeof out, "%s/out1.txt", tmpdir);
	snprintf(out2, sizeof out2, "%s/out2.txt", tmpdir);
	write_file(in, "ACGT\n");
	struct work_queue_task *t = make_task(in, out);
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_false(work_queue_empty(q));
	assert_int_equal(work_queue_hungry(q), 9); /* 10 with no worker, minus 1 waiting */

	struct fake *f = fake_start(q, FAKE_RUN, NULL);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->return_status, 3);
	assert_string_equal(done->output, "hello\n");
	assert_int_equal(done->try_count, 1);
	char *content = read_file(out);
	assert_non_null(content);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	assert_int_equal(f->objects_received, 1);
	assert_string_equal(f->last_object,
	                    "F-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55");
	/* the task message carried the allocation and the inputs in order */
	json_t *tm = f->task_msgs[0];
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(tm, "resources"), "memory")), 100);
	json_t *ins = json_object_get(tm, "inputs");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 0), "from")),
	                    "cache");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 1), "from")),
	                    "task");
	assert_true(done->resources_measured != NULL);
	assert_int_equal((int)done->resources_measured->v[RM_MEMORY], 10);
	assert_int_equal(done->time_workers_execute_last, 500000);

	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_submitted, 1);
	assert_int_equal(s.tasks_done, 1);
	assert_int_equal(s.tasks_dispatched, 1);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.workers_connected, 1);
	assert_int_equal(s.workers_idle, 1);
	assert_int_equal((int)s.total_cores, 4);
	assert_int_equal(s.total_memory, 4000);
	assert_true(s.bytes_sent >= 9);
	assert_true(s.bytes_received >= 15);
	assert_true(work_queue_empty(q));
	assert_int_equal(work_queue_hungry(q), 8); /* 2 x 4 free cores, nothing waiting */
	work_queue_task_delete(done);

	/* a second task using the same cached input: the object is not sent again */
	t = make_task(in, out2);
	assert_true(work_queue_submit(q, t) > id);
	done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f->objects_received, 1);
	assert_int_equal(f->tasks_received, 2);
	content = read_file(out2);
	assert_string_equal(content, "ACGT\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	/* no temporary file is left beside the outputs */
	char tmpname[160];
	snprintf(tmpname, sizeof tmpname, "%s/.out2.txt.wq-%d-1.tmp", tmpdir, (int)getpid());
	assert_int_equal(access(tmpname, F_OK), -1);
	finish(q);
	assert_true(f->closed); /* dismissed */
	fake_free(f);
	unlink(in);
	unlink(out);
	unlink(out2);
}

static void test_missing_object_resent(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref2.fa", tmpdir);
	snprintf(out, sizeof out, "%s/out3.txt", tmpdir);
	write_file(in, "GGGG\n");
	struct fake *f = fake_start(q, FAKE_REFUSE_MISSING, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(f->refused_once, 1);
	assert_int_equal(f->objects_received, 2); /* sent again after the refusal */
	assert_int_equal(f->tasks_received, 2);
	assert_int_equal(done->try_count, 1); /* a refusal is not a try */
	char *content = read_file(out);
	assert_string_equal(content, "GGGG\nBUF\n");
	free(content);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.tasks_dispatched, 2);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
	unlink(in);
	unlink(out);
}

static void test_lost_worker_requeues(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref3.fa", tmpdir);
	snprintf(out, sizeof out, "%s/out4.txt", tmpdir);
	write_file(in, "TTTT\n");
	struct fake *f1 = fake_start(q, FAKE_DISCONNECT, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	assert_true(run_until_flag(q, &f1->closed, 5));
	/* the master notices, the task is waiting again */
	struct work_queue_stats s;
	for (int i = 0; i < 50; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == 0)
			break;
		assert_null(work_queue_wait(q, 0.02));
	}
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.workers_lost, 1);
	assert_int_equal(s.tasks_waiting, 1);
	assert_int_equal(s.tasks_on_workers, 0);
	assert_false(work_queue_empty(q));
	struct fake *f2 = fake_start(q, FAKE_RUN, NULL);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1); /* same try */
	assert_int_equal(f2->tasks_received, 1);
	assert_int_equal(json_integer_value(json_object_get(f2->task_msgs[0], "try")), 1);
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 0);
	assert_int_equal(s.tasks_done, 1);
	char *content = read_file(out);
	assert_string_equal(content, "TTTT\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f1);
	fake_free(f2);
	unlink(in);
	unlink(out);
}

static void test_violation_drops_worker(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	char in[128], out[128];
	snprintf(in, sizeof in, "%s/ref4.fa", tmpdir);
	snprintf(out, sizeof out, "%s/out5.txt", tmpdir);
	write_file(in, "CCCC\n");
	struct fake *f1 = fake_start(q, FAKE_VIOLATE, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	assert_true(run_until_flag(q, &f1->closed, 5));
	assert_true(log_has("protocol violation: message \"task_running\" for task 9999 which is "
	                    "not assigned to this worker"));
	/* the master is still up and runs the task on another worker */
	struct fake *f2 = fake_start(q, FAKE_RUN, NULL);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_removed, 1);
	assert_int_equal(s.tasks_failed, 0);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f1);
	fake_free(f2);
	unlink(in);
	unlink(out);
}

static void test_wrong_password(void **state)
{
	(void)state;
	struct work_queue *q = queue("right password");
	struct fake *bad = fake_start(q, FAKE_RUN, "wrong password");
	assert_true(run_until_flag(q, &bad->hs_done, 5));
	assert_int_equal(bad->outcome, WQ_HS_PERMANENT);
	assert_string_equal(bad->hs_code, "auth");
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.workers_init, 0);
	struct fake *good = fake_start(q, FAKE_RUN, "right password");
	assert_true(worker_active(q, 1, 5));
	assert_int_equal(good->outcome, WQ_HS_OK);
	finish(q);
	fake_free(bad);
	fake_free(good);
}

static void test_exhaustion_retried_at_max(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	assert_int_equal(work_queue_specify_category_mode(q, "big", CATEGORY_MODE_MAX), 0);
	assert_int_equal(work_queue_specify_category_update_interval(q, "big", 1), 0);
	struct rmsummary max;
	rmsummary_init(&max);
	max.v[RM_MEMORY] = 2000;
	max.v[RM_CORES] = 2;
	max.v[RM_DISK] = 500;
	assert_int_equal(work_queue_specify_category_max_resources(q, "big", &max), 0);
	char out[128];
	snprintf(out, sizeof out, "%s/out6.txt", tmpdir);
	struct fake *f = fake_start(q, FAKE_EXHAUST_FIRST, NULL);
	assert_true(worker_active(q, 1, 5));
	/* The first task runs at the maximum (nothing measured yet) and measures 10 MB. */
	struct work_queue_task *t = work_queue_task_create("grow");
	work_queue_task_specify_category(t, "big");
	work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 0);
	assert_int_equal(json_integer_value(json_object_get(
	                     json_object_get(f->task_msgs[0], "resources"), "memory")),
	                 2000);
	work_queue_task_delete(done);
	/* The second gets the measured first allocation, exhausts it, and is retried at the
	 * maximum with try 2. */
	t = work_queue_task_create("grow");
	work_queue_task_specify_category(t, "big");
	work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
	assert_true(work_queue_submit(q, t) >= 1);
	done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 1);
	assert_int_equal(done->try_count, 2);
	assert_int_equal(f->tasks_received, 3);
	json_t *r1 = json_object_get(f->task_msgs[1], "resources");
	assert_true(json_integer_value(json_object_get(r1, "memory")) < 2000);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[1], "try")), 1);
	json_t *r2 = json_object_get(f->task_msgs[2], "resources");
	assert_int_equal(json_integer_value(json_object_get(r2, "memory")), 2000);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[2], "try")), 2);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_exhausted_attempts, 1);
	assert_int_equal(s.tasks_failed, 0);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
	unlink(out);
}

static void test_submit_errors(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	struct work_queue_task *t = work_queue_task_create("true");
	char missing[128];
	snprintf(missing, sizeof missing, "%s/does-not-exist", tmpdir);
	work_queue_task_specify_input_file(t, missing, "x", WORK_QUEUE_CACHE);
	assert_int_equal(work_queue_submit(q, t), -ENOENT);
	work_queue_task_delete(t);
	t = work_queue_task_create(NULL);
	assert_int_equal(work_queue_submit(q, t), -EINVAL);
	work_queue_task_delete(t);
	/* cancel a waiting task */
	t = work_queue_task_create("true");
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(t->result, WORK_QUEUE_RESULT_CANCELLED);
	assert_null(work_queue_cancel_by_taskid(q, id));
	assert_true(work_queue_empty(q));
	assert_null(work_queue_wait(q, WORK_QUEUE_WAITFORTASK)); /* empty: at once */
	work_queue_task_delete(t);
	/* by tag */
	struct work_queue_task *a = work_queue_task_create("true");
	struct work_queue_task *b = work_queue_task_create("true");
	work_queue_task_specify_tag(a, "alpha");
	work_queue_task_specify_tag(b, "beta");
	assert_true(work_queue_submit(q, a) >= 1);
	assert_true(work_queue_submit(q, b) >= 1);
	assert_null(work_queue_wait_for_tag(q, "beta", 0));
	assert_null(work_queue_cancel_by_tasktag(q, "gamma"));
	assert_ptr_equal(work_queue_cancel_by_tasktag(q, "beta"), b);
	assert_false(work_queue_empty(q));
	assert_ptr_equal(work_queue_cancel_by_tasktag(q, "alpha"), a);
	assert_true(work_queue_empty(q));
	work_queue_task_delete(a);
	work_queue_task_delete(b);
	finish(q);
}

static void test_cancel_running(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	struct fake *f = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_tag(t, "slow");
	int id = work_queue_submit(q, t);
	struct work_queue_stats s;
	for (int i = 0; i < 100; i++) {
		assert_null(work_queue_wait(q, 0.02));
		work_queue_get_stats(q, &s);
		if (s.tasks_running == 1)
			break;
	}
	assert_int_equal(s.tasks_running, 1);
	assert_int_equal(s.workers_busy, 1);
	assert_true(s.committed_cores > 0.99 && s.committed_cores < 1.01);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(t->result, WORK_QUEUE_RESULT_CANCELLED);
	assert_true(work_queue_empty(q));
	/* the crossing task_done and the task_cancelled are taken quietly */
	assert_true(run_until_flag(q, &f->cancels, 5));
	for (int i = 0; i < 10; i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_false(f->closed);
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_cancelled, 1);
	assert_int_equal(s.tasks_running, 0);
	assert_int_equal(s.workers_idle, 1);
	assert_int_equal(s.workers_connected, 1);
	assert_false(log_has("for task 1 which is not assigned"));
	work_queue_task_delete(t);
	finish(q);
	fake_free(f);
}

static void test_max_retries(void **state)
{
	(void)state;
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &loop;
	char txlog[160];
	snprintf(txlog, sizeof txlog, "%s/tx.log", tmpdir);
	o.txlog = txlog;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	struct fake *f = fake_start(q, FAKE_SIGNAL, NULL);
	struct work_queue_task *t = work_queue_task_create("kill -SEGV $$");
	work_queue_task_specify_max_retries(t, 2);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_MAX_RETRIES);
	assert_int_equal(f->tasks_received, 3); /* max_retries + 1 tries */
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[2], "try")), 3);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.tasks_failed, 1);
	assert_int_equal(s.tasks_done, 0);
	work_queue_task_delete(done);
	/* without retries a signal is SIGNAL at once */
	t = work_queue_task_create("kill -SEGV $$");
	assert_true(work_queue_submit(q, t) >= 1);
	done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SIGNAL);
	assert_int_equal(done->return_status, 11);
	work_queue_task_delete(done);
	finish(q);
	fake_free(f);
	char *tx = read_file(txlog);
	assert_non_null(tx);
	assert_non_null(strstr(tx, "MASTER START"));
	assert_non_null(strstr(tx, "TASK 1 DONE MAX_RETRIES"));
	assert_non_null(strstr(tx, "TASK 2 DONE SIGNAL 11"));
	assert_non_null(strstr(tx, "MASTER END"));
	free(tx);
}

/* A self-signed certificate and its key in PEM files. */
static void make_cert(const char *cert, const char *key)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	assert_non_null(k);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 42);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1,
	                           -1, 0);
	X509_set_issuer_name(x, n);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	FILE *f = fopen(cert, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	chmod(key, 0600);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void test_tls(void **state)
{
	(void)state;
	char cert[160], key[160], in[128], out[128];
	snprintf(cert, sizeof cert, "%s/cert.pem", tmpdir);
	snprintf(key, sizeof key, "%s/key.pem", tmpdir);
	snprintf(in, sizeof in, "%s/tls.in", tmpdir);
	snprintf(out, sizeof out, "%s/tls.out", tmpdir);
	make_cert(cert, key);
	write_file(in, "TLS\n");
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &loop;
	o.ssl_cert = cert;
	o.ssl_key = key;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	/* a plain worker is refused */
	struct fake *plain = fake_start(q, FAKE_RUN, NULL);
	assert_true(run_until_flag(q, &plain->hs_done, 5));
	assert_int_equal(plain->outcome, WQ_HS_PERMANENT);
	assert_string_equal(plain->hs_code, "tls_required");
	/* a TLS worker runs a task */
	struct fake *f = fake_start_tls(q, FAKE_RUN, NULL, true);
	struct work_queue_task *t = make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	char *content = read_file(out);
	assert_string_equal(content, "TLS\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	finish(q);
	fake_free(plain);
	fake_free(f);
	/* a file that is not a certificate fails the creation with ENOENT-like errno and a message
	 */
	o.ssl_cert = in; /* not a certificate */
	assert_null(work_queue_create_opts(&o));
	unlink(cert);
	unlink(key);
	unlink(in);
	unlink(out);
}

static void test_catalog_and_port_file(void **state)
{
	(void)state;
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	char port_file[160];
	snprintf(port_file, sizeof port_file, "%s/port", tmpdir);
	o.port = 0;
	o.loop = &loop;
	o.project = "unit-test";
	o.catalog_hosts = "127.0.0.1:9";
	o.port_file = port_file;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	char *text = read_file(port_file);
	assert_non_null(text);
	assert_int_equal(atoi(text), work_queue_port(q));
	free(text);
	assert_null(work_queue_wait(q, 0.1));
	assert_int_equal(work_queue_specify_name(q, "renamed"), 0);
	assert_int_equal(work_queue_specify_catalog_servers(q, "127.0.0.1:9,localhost:9"), 0);
	assert_int_equal(work_queue_specify_name(q, ""), -EINVAL);
	assert_ptr_equal(work_queue_loop(q), &loop);
	json_t *m = work_queue_status(q, "master");
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "project")),
	                    "renamed");
	json_decref(m);
	assert_null(work_queue_wait(q, 0.1));
	/* the same port again is refused with EADDRINUSE */
	o.port = work_queue_port(q);
	o.project = NULL;
	o.port_file = NULL;
	errno = 0;
	assert_null(work_queue_create_opts(&o));
	assert_int_equal(errno, EADDRINUSE);
	finish(q);
	unlink(port_file);
}

struct query_result {
	int done;
	json_t *items;
	char err[256];
};

static void on_query(json_t *items, const char *err, void *arg)
{
	struct query_result *r = arg;
	r->done = 1;
	r->items = items;
	snprintf(r->err, sizeof r->err, "%s", err ? err : "");
}

static void test_status_query(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	struct fake *f = fake_start(q, FAKE_HOLD, NULL);
	assert_true(worker_active(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_tag(t, "held");
	int id = work_queue_submit(q, t);
	struct work_queue_task *t2 = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t2, 8); /* never fits the 4-core fake */
	assert_true(work_queue_submit(q, t2) >= 1);
	struct query_result r = {0};
	struct wq_status_opts so = {NULL, NULL, 5};
	char *err = NULL;
	assert_non_null(wq_status_query_start(&loop, "127.0.0.1", work_queue_port(q), "master", &so,
	                                      on_query, &r, &err));
	assert_true(run_until_flag(q, &r.done, 5));
	assert_string_equal(r.err, "");
	assert_int_equal(json_array_size(r.items), 1);
	json_t *m = json_array_get(r.items, 0);
	assert_int_equal(json_integer_value(json_object_get(m, "workers_connected")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "tasks_waiting")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "tasks_submitted")), 2);
	assert_int_equal(json_integer_value(json_object_get(m, "port")), work_queue_port(q));
	json_decref(r.items);
	/* the status client is not counted as a worker */
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_connected, 1);
	/* tasks, through the library call */
	json_t *tasks = work_queue_status(q, "tasks");
	assert_int_equal(json_array_size(tasks), 2);
	int running = 0;
	for (size_t i = 0; i < 2; i++) {
		json_t *o = json_array_get(tasks, i);
		if (json_integer_value(json_object_get(o, "id")) == id) {
			assert_string_equal(json_string_value(json_object_get(o, "tag")), "held");
			assert_non_null(json_object_get(o, "worker"));
			running = 1;
		}
	}
	assert_true(running);
	json_decref(tasks);
	assert_null(work_queue_status(q, "nonsense"));
	finish(q);
	fake_free(f);
}

static void wait_workers(struct work_queue *q, int n)
{
	struct work_queue_stats s;
	for (int i = 0; i < 250; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == n)
			return;
		assert_null(work_queue_wait(q, 0.02));
	}
	fail_msg("%d workers connected, %d expected", s.workers_connected, n);
}

static void test_fast_abort(void **state)
{
	(void)state;
	struct work_queue *q = queue(NULL);
	assert_int_equal(work_queue_activate_fast_abort_category(q, "fa", 1.0), 0);
	/* ten completed tasks of 0.5 s each (the fake's reported times) */
	struct fake *a = fake_start(q, FAKE_RUN, NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/fa.out", tmpdir);
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = work_queue_task_create("quick");
		work_queue_task_specify_category(t, "fa");
		work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
		assert_true(work_queue_submit(q, t) >= 1);
	}
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = wait_task(q, 5);
		assert_non_null(t);
		assert_int_equal(t->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(t);
	}
	wq_conn_close_now(a->c);
	wait_workers(q, 0);
	/* a slow worker: the task is aborted twice, the worker dismissed, its host blocked */
	struct fake *b = fake_start(q, FAKE_HOLD, NULL);
	struct work_queue_task *t = work_queue_task_create("slow");
	work_queue_task_specify_category(t, "fa");
	int id = work_queue_submit(q, t);
	assert_true(run_until_flag(q, &b->closed, 8));
	assert_int_equal(b->cancels, 2);
	assert_int_equal(b->tasks_received, 2);
	assert_int_equal(t->fast_aborts, 2);
	assert_true(log_has("fast-aborted"));
	struct fake *c = fake_start(q, FAKE_RUN, NULL);
	assert_true(run_until_flag(q, &c->closed, 5));
	assert_true(log_has("host fakehost is blocked for"));
	assert_int_equal(c->tasks_received, 0);
	/* unblocked, a good worker finishes it; it is not aborted a third time */
	assert_int_equal(work_queue_unblock_host(q, "fakehost"), 0);
	assert_int_equal(work_queue_unblock_host(q, "fakehost"), -ENOENT);
	struct fake *d = fake_start(q, FAKE_RUN, NULL);
	struct work_queue_task *done = wait_task(q, 5);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1);
	work_queue_task_delete(done);
	finish(q);
	fake_free(a);
	fake_free(b);
	fake_free(c);
	fake_free(d);
	unlink(out);
}

static int setup(void **state)
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

static int teardown(void **state)
{
	(void)state;
	debug_config_file(NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	int rc = uv_loop_close(&loop);
	path_rm_rf(tmpdir);
	return rc == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_task_round_trip),
	    cmocka_unit_test(test_missing_object_resent),
	    cmocka_unit_test(test_lost_worker_requeues),
	    cmocka_unit_test(test_violation_drops_worker),
	    cmocka_unit_test(test_wrong_password),
	    cmocka_unit_test(test_exhaustion_retried_at_max),
	    cmocka_unit_test(test_submit_errors),
	    cmocka_unit_test(test_cancel_running),
	    cmocka_unit_test(test_max_retries),
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_catalog_and_port_file),
	    cmocka_unit_test(test_status_query),
	    cmocka_unit_test(test_fast_abort),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
