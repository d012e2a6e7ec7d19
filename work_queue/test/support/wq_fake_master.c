/* wq_fake_master.c: the fake master of the worker's tests (see wq_fake_master.h). It forwards
 * frames to the handshake until it is done, then transfer messages and DATA to its receiver and
 * sender, and keeps every other message, in order, in one JSON array. */
#include "wq_fake_master.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "path.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "wq_conn.h"
#include "wq_msg.h"
#include "wq_xfer.h"
#include "xalloc.h"
#include "banned.h"

/* ---- transfers --------------------------------------------------------------------------- */

static char *recv_path(const struct fake_master *m, uint32_t xfer)
{
	char name[32];
	snprintf(name, sizeof name, "recv.%u", xfer);
	return path_join(m->dir, name);
}

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	(void)r;
	static char path[4096]; /* copied by the receiver */
	char *p = recv_path(user, in->id);
	snprintf(path, sizeof path, "%s", p);
	free(p);
	dest->tmp_path = path;
	return 0;
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	(void)text;
	struct fake_master *m = user;
	assert_true(m->nrecv < FAKE_MASTER_RECV_MAX);
	struct fake_master_recv *r = &m->recv[m->nrecv++];
	r->xfer = in->id;
	r->kind = in->target->kind;
	r->task = in->target->task;
	r->index = in->target->index;
	r->status = status;
	if (status == 0) {
		char *p = recv_path(m, in->id);
		r->content = ts_read_file(p, &r->len);
		free(p);
	}
}

static const struct wq_xfer_in_callbacks in_cb = {recv_begin, recv_end};

static void sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct fake_master *m = user;
	assert_int_equal(r->outcome, WQ_XFER_SENT);
	m->sends_done++;
}

static const struct wq_xfer_out_callbacks out_cb = {.sent = sent};

/* ---- the connection ---------------------------------------------------------------------- */

static void hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	(void)h;
	struct fake_master *m = user;
	m->hs_done = true;
	m->outcome = r->outcome;
	snprintf(m->hs_code, sizeof m->hs_code, "%s", r->code);
	if (r->outcome != WQ_HS_OK)
		return;
	snprintf(m->worker_id, sizeof m->worker_id, "%s", r->peer_id);
	m->caps = r->caps;
	m->in = wq_xfer_in_create(m->loop, m->c, true, r->caps, &in_cb, m);
	m->out = wq_xfer_out_create(m->loop, m->c, (r->caps & WQ_CAP_ZLIB) != 0, &out_cb, m);
}

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	(void)c;
	struct fake_master *m = user;
	if (m->h && wq_handshake_message(m->h, msg, name, raw, len))
		return;
	if (m->in && wq_xfer_in_message(m->in, msg, name))
		return;
	if (m->out && !strcmp(name, "xfer_error")) {
		wq_xfer_out_message(m->out, msg, name);
		return;
	}
	json_array_append(m->msgs, msg);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)c;
	struct fake_master *m = user;
	if (m->h && wq_handshake_data(m->h, xfer))
		return;
	if (m->in)
		wq_xfer_in_data(m->in, xfer, b, len);
}

static void on_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct fake_master *m = user;
	if (m->out)
		wq_xfer_out_writable(m->out);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	struct fake_master *m = user;
	if (m->h && !wq_handshake_finished(m->h))
		wq_handshake_closed(m->h, why, text);
	m->closed = true;
	m->why = why;
	snprintf(m->why_text, sizeof m->why_text, "%s", text);
}

static const struct wq_conn_callbacks conn_cb = {on_message, on_data, on_writable, on_closed};

struct fake_master *fake_master_start(uv_loop_t *loop, uv_tcp_t *tcp, const char *dir,
                                      unsigned caps, int64_t ka_interval, int64_t ka_timeout)
{
	struct fake_master *m = xcalloc(1, sizeof *m);
	m->loop = loop;
	m->dir = xstrdup(dir);
	assert_int_equal(mkdir(m->dir, 0755), 0);
	m->msgs = json_array();
	m->c = wq_conn_create(tcp, "wq: fake worker", &conn_cb, m);
	assert_non_null(m->c);
	wq_conn_set_linger(m->c, 100);
	struct wq_hs_config cfg = {
	    .master = true,
	    .software = "fake master 0",
	    .id = FAKE_MASTER_ID,
	    .caps = caps,
	    .keepalive_interval = ka_interval,
	    .keepalive_timeout = ka_timeout,
	};
	char *err = NULL;
	m->h = wq_handshake_start(loop, m->c, &cfg, hs_done, m, &err);
	if (!m->h)
		fail_msg("fake master: handshake: %s", err ? err : "?");
	return m;
}

void fake_master_delete(struct fake_master *m)
{
	if (!m)
		return;
	wq_xfer_in_delete(m->in);
	wq_xfer_out_delete(m->out);
	wq_handshake_delete(m->h);
	wq_conn_delete(m->c);
	for (int i = 0; i < m->nrecv; i++)
		free(m->recv[i].content);
	json_decref(m->msgs);
	free(m->dir);
	free(m);
}

void fake_master_send(struct fake_master *m, json_t *msg)
{
	assert_non_null(msg);
	assert_int_equal(wq_conn_send_msg(m->c, msg), 0);
	json_decref(msg);
}

uint32_t fake_master_send_input(struct fake_master *m, int64_t task, int64_t index,
                                const char *text)
{
	assert_non_null(m->out);
	json_t *target = wq_xfer_target_input(task, index);
	uint32_t id = 0;
	assert_int_equal(wq_xfer_send_buffer(m->out, text, strlen(text), target, 0, NULL, &id), 0);
	json_decref(target);
	return id;
}

/* ---- what arrived ------------------------------------------------------------------------ */

json_t *fake_master_msg(const struct fake_master *m, const char *name, int nth)
{
	size_t i;
	json_t *msg;
	json_array_foreach(m->msgs, i, msg)
	{
		const char *n = json_string_value(json_object_get(msg, "m"));
		if (n && !strcmp(n, name) && --nth == 0)
			return msg;
	}
	return NULL;
}

int fake_master_count(const struct fake_master *m, const char *name)
{
	int n = 0;
	while (fake_master_msg(m, name, n + 1))
		n++;
	return n;
}

int fake_master_index(const struct fake_master *m, const json_t *msg)
{
	size_t i;
	json_t *x;
	json_array_foreach(m->msgs, i, x)
	{
		if (x == msg)
			return (int)i;
	}
	return -1;
}

const struct fake_master_recv *fake_master_recv_of(const struct fake_master *m, uint32_t xfer)
{
	for (int i = 0; i < m->nrecv; i++)
		if (m->recv[i].xfer == xfer)
			return &m->recv[i];
	return NULL;
}

/* ---- waits ------------------------------------------------------------------------------- */

static bool handshake_over(void *arg)
{
	return ((struct fake_master *)arg)->hs_done;
}

void fake_master_wait_handshake(struct fake_master *m)
{
	assert_true(ts_run_until(m->loop, handshake_over, m, TS_WAIT_MS));
}

struct msg_wait {
	struct fake_master *m;
	const char *name;
	int n;
};

static bool msg_arrived(void *arg)
{
	struct msg_wait *w = arg;
	return fake_master_msg(w->m, w->name, w->n) != NULL;
}

json_t *fake_master_wait_msg(struct fake_master *m, const char *name, int n)
{
	struct msg_wait w = {m, name, n};
	if (!ts_run_until(m->loop, msg_arrived, &w, TS_WAIT_MS))
		fail_msg("no message %s (#%d) from the worker", name, n);
	return fake_master_msg(m, name, n);
}

struct recv_wait {
	struct fake_master *m;
	uint32_t xfer;
};

static bool recv_arrived(void *arg)
{
	struct recv_wait *w = arg;
	return fake_master_recv_of(w->m, w->xfer) != NULL;
}

const struct fake_master_recv *fake_master_wait_recv(struct fake_master *m, uint32_t xfer)
{
	struct recv_wait w = {m, xfer};
	if (!ts_run_until(m->loop, recv_arrived, &w, TS_WAIT_MS))
		fail_msg("transfer %u did not arrive", xfer);
	return fake_master_recv_of(m, xfer);
}

static bool closed(void *arg)
{
	return ((struct fake_master *)arg)->closed;
}

void fake_master_wait_closed(struct fake_master *m)
{
	assert_true(ts_run_until(m->loop, closed, m, TS_WAIT_MS));
}
