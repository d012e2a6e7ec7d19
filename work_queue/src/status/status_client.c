/* status_client.c: one status query to a Work Queue master: resolve, connect, handshake as a
 * status client, `query`, collect every `query_reply` batch, `bye`. Everything runs from libuv
 * callbacks; the record is freed once every request and handle it started has come back. */
#include "status_client.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "stringtools.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "wq_msg.h"
#include "wq_probe.h"
#include "xalloc.h"

#include "banned.h"

/* Most items accepted in one answer, whatever the master sends. */
#define STATUS_MAX_ITEMS 1000000

struct wq_status_query {
	uv_loop_t *loop;
	char *host;
	int port;
	char *what;
	char *worker; /* with what "drain" */
	wq_status_cb cb;
	void *arg;
	uv_getaddrinfo_t gai;
	uv_connect_t connect;
	uv_tcp_t *tcp; /* until the connection takes it over */
	uv_timer_t timer;
	struct wq_conn *conn;
	struct wq_handshake *hs;
	struct wq_hs_config cfg;
	char id[33];
	char hostname[256];
	json_t *items;
	int refs; /* requests and handles still to come back */
	int done, cancelled;
};

static void unref(struct wq_status_query *q)
{
	if (--q->refs > 0)
		return;
	json_decref(q->items);
	free(q->host);
	free(q->what);
	free(q->worker);
	free(q);
}

static void timer_closed(uv_handle_t *h)
{
	unref(h->data);
}

static void tcp_closed(uv_handle_t *h)
{
	struct wq_status_query *q = h->data;
	free(h);
	unref(q);
}

/* Ends the query: the callback (unless cancelled), then the teardown. */
static void finish(struct wq_status_query *q, const char *err)
{
	if (q->done)
		return;
	q->done = 1;
	if (!q->cancelled) {
		json_t *items = NULL;
		if (!err) {
			items = q->items;
			q->items = NULL;
		}
		q->cb(items, err, q->arg);
	}
	if (q->hs) {
		wq_handshake_delete(q->hs);
		q->hs = NULL;
	}
	if (q->conn) {
		if (!err) {
			json_t *bye = json_pack("{s:s, s:s}", "m", "bye", "reason", "done");
			wq_conn_close(q->conn, bye);
			json_decref(bye);
		}
		wq_conn_delete(q->conn);
		q->conn = NULL;
	}
	if (q->tcp) {
		q->tcp->data = q;
		q->refs++;
		uv_close((uv_handle_t *)q->tcp, tcp_closed);
		q->tcp = NULL;
	}
	uv_timer_stop(&q->timer);
	uv_close((uv_handle_t *)&q->timer, timer_closed);
}

static void failf(struct wq_status_query *q, const char *fmt, const char *a)
{
	char *e = xasprintf(fmt, a);
	finish(q, e);
	free(e);
}

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	(void)c;
	struct wq_status_query *q = user;
	if (q->done)
		return;
	if (q->hs && wq_handshake_message(q->hs, msg, name, raw, len))
		return;
	if (!strcmp(name, "error")) {
		const char *text = json_string_value(json_object_get(msg, "text"));
		char *safe =
		    wq_msg_escape(text ? text : "(no text)", text ? strlen(text) : 9, 1024, false);
		failf(q, "the master refused: %s", safe);
		free(safe);
		return;
	}
	if (strcmp(name, "query_reply"))
		return; /* anything else a master may add later is not for a status client */
	json_t *items = json_object_get(msg, "items");
	if (!json_is_array(items)) {
		finish(q, "the master's query_reply has no items array");
		return;
	}
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it)
	{
		if (json_array_size(q->items) >= STATUS_MAX_ITEMS) {
			finish(q, "the master sent too many items");
			return;
		}
		json_array_append(q->items, it);
	}
	if (!json_is_true(json_object_get(msg, "more")))
		finish(q, NULL);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)b;
	(void)len;
	struct wq_status_query *q = user;
	if (q->hs && wq_handshake_data(q->hs, xfer))
		return;
	wq_conn_violation(c, "proto", "data for transfer %u on a status connection", xfer);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	struct wq_status_query *q = user;
	if (q->hs && !wq_handshake_finished(q->hs))
		wq_handshake_closed(q->hs, why, text);
	if (!q->done)
		failf(q, "the connection ended: %s", text && *text ? text : "closed");
}

static void on_handshake(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	(void)h;
	struct wq_status_query *q = user;
	if (q->done)
		return;
	if (r->outcome != WQ_HS_OK) {
		failf(q, r->by_peer ? "the master refused: %s" : "%s", r->text);
		return;
	}
	json_t *m = json_pack("{s:s, s:s}", "m", "query", "what", q->what);
	if (q->worker)
		json_object_set_new(m, "worker", json_string(q->worker));
	int rc = wq_conn_send_msg(q->conn, m);
	json_decref(m);
	if (rc < 0)
		finish(q, "cannot send the query");
}

static void on_connect(uv_connect_t *req, int status)
{
	struct wq_status_query *q = req->data;
	if (q->done) {
		unref(q);
		return;
	}
	if (status < 0) {
		failf(q, "cannot connect: %s", uv_strerror(status));
		unref(q);
		return;
	}
	static const struct wq_conn_callbacks cb = {
	    .message = on_message, .data = on_data, .closed = on_closed};
	q->conn = wq_conn_create(q->tcp, "master", &cb, q);
	q->tcp = NULL;
	if (!q->conn) {
		finish(q, "cannot read from the connection");
		unref(q);
		return;
	}
	char *err = NULL;
	q->hs = wq_handshake_start(q->loop, q->conn, &q->cfg, on_handshake, q, &err);
	if (!q->hs) {
		finish(q, err ? err : "cannot start the handshake");
		free(err);
	}
	unref(q);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct wq_status_query *q = req->data;
	if (q->done || status < 0) {
		if (!q->done)
			failf(q, "cannot resolve the master's name: %s", uv_strerror(status));
		uv_freeaddrinfo(res);
		unref(q);
		return;
	}
	q->tcp = xmalloc(sizeof *q->tcp);
	uv_tcp_init(q->loop, q->tcp);
	q->connect.data = q;
	int r = uv_tcp_connect(&q->connect, q->tcp, res->ai_addr, on_connect);
	uv_freeaddrinfo(res);
	if (r < 0)
		failf(q, "cannot connect: %s", uv_strerror(r));
	else
		q->refs++;
	unref(q);
}

static void on_timeout(uv_timer_t *t)
{
	finish(t->data, "no answer in time");
}

struct wq_status_query *wq_status_query_start(uv_loop_t *loop, const char *host, int port,
                                              const char *what, const struct wq_status_opts *opts,
                                              wq_status_cb cb, void *arg, char **err)
{
	unsigned char rnd[16];
	if (RAND_bytes(rnd, sizeof rnd) != 1) {
		*err = xstrdup("cannot make a random client id");
		return NULL;
	}
	struct wq_status_query *q = xcalloc(1, sizeof *q);
	q->loop = loop;
	q->host = xstrdup(host);
	q->port = port;
	q->what = xstrdup(what);
	q->worker = opts && opts->worker ? xstrdup(opts->worker) : NULL;
	q->cb = cb;
	q->arg = arg;
	q->items = json_array();
	str_hex_encode(rnd, sizeof rnd, q->id);
	snprintf(q->hostname, sizeof q->hostname, "status");
	gethostname(q->hostname, sizeof q->hostname - 1);
	double timeout = opts && opts->timeout_s > 0 ? opts->timeout_s : 10;
	q->cfg = (struct wq_hs_config){
	    .master = false,
	    .role = WQ_ROLE_STATUS,
	    .key = opts ? opts->key : NULL,
	    .tls = opts ? opts->tls : NULL,
	    .tls_host = q->host,
	    .software = "htc " HTC_VERSION,
	    .id = q->id,
	    .host = q->hostname,
	    .deadline_ms = (uint64_t)(timeout * 1000),
	};
	uv_timer_init(loop, &q->timer);
	q->timer.data = q;
	q->refs = 1; /* the timer */
	uv_timer_start(&q->timer, on_timeout, (uint64_t)(timeout * 1000), 0);
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	char portstr[16];
	snprintf(portstr, sizeof portstr, "%d", port);
	q->gai.data = q;
	int r = uv_getaddrinfo(loop, &q->gai, on_resolved, host, portstr, &hints);
	if (r < 0) {
		*err = xasprintf("%s: %s", host, uv_strerror(r));
		q->cancelled = 1;
		finish(q, *err);
		return NULL;
	}
	q->refs++;
	return q;
}

void wq_status_query_cancel(struct wq_status_query *q)
{
	if (!q || q->done)
		return;
	q->cancelled = 1;
	finish(q, "cancelled");
}

struct run_result {
	json_t *items;
	char *err;
};

static void run_cb(json_t *items, const char *err, void *arg)
{
	struct run_result *r = arg;
	r->items = items;
	if (err)
		r->err = xstrdup(err);
}

/* True for the failures of a peer that closed or stayed silent in the handshake. */
static bool silent_master(const char *err)
{
	return strstr(err, "closed by the peer") || strstr(err, "reset by peer") ||
	       strstr(err, "handshake not completed");
}

struct probe_result {
	bool cctools;
	char text[300];
};

static void probe_cb(void *arg, bool cctools, const char *text)
{
	struct probe_result *p = arg;
	p->cctools = cctools;
	snprintf(p->text, sizeof p->text, "%s", text);
}

/* The master closed the handshake without a word: if it answers the CCTools status query, *ERR
 * (replaced) says it is a CCTools master. Runs on LOOP until the probe ends. */
static void probe_cctools(uv_loop_t *loop, const char *host, int port, char **err)
{
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	uv_getaddrinfo_t gai;
	if (uv_getaddrinfo(loop, &gai, NULL, host, ps, &hints) < 0)
		return;
	struct probe_result p = {0};
	wq_probe_start(loop, gai.addrinfo->ai_addr, 5000, probe_cb, &p);
	uv_freeaddrinfo(gai.addrinfo);
	uv_run(loop, UV_RUN_DEFAULT);
	if (!p.cctools)
		return;
	free(*err);
	*err = xasprintf("%s: use CCTools' work_queue_status for it", p.text);
}

json_t *wq_status_query_run(const char *host, int port, const char *what,
                            const struct wq_status_opts *opts, char **err)
{
	uv_loop_t loop;
	if (uv_loop_init(&loop) < 0) {
		*err = xstrdup("cannot make an event loop");
		return NULL;
	}
	struct run_result r = {0};
	if (!wq_status_query_start(&loop, host, port, what, opts, run_cb, &r, err)) {
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		return NULL;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	if (!r.items && r.err && !(opts && opts->tls) && silent_master(r.err))
		probe_cctools(&loop, host, port, &r.err);
	uv_loop_close(&loop);
	if (!r.items) {
		*err = r.err ? r.err : xstrdup("failed");
		return NULL;
	}
	free(r.err);
	return r.items;
}
