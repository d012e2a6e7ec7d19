/* catalog_client.c: catalog host lists, updates and queries. Every network exchange is one
 * "xfer" on a libuv loop (resolve with uv_getaddrinfo, then one UDP datagram, or one HTTP/1.0
 * request over a fresh TCP connection read to its end), bounded by a timer; the blocking calls
 * run the same code on a private loop. */
#include "catalog_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "buffer.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

#define SEND_TIMEOUT_MS 5000

/* ------------------------------------------------------------------------------------------ */
/* Host lists */

const char *catalog_hosts_default(void)
{
	const char *e = getenv("CATALOG_HOST");
	return e && *e ? e : CATALOG_DEFAULT_HOST;
}

static int parse_one(const char *item, struct catalog_host *h, char **err)
{
	const char *host = item, *port = NULL;
	size_t hlen;
	if (*item == '[') {
		const char *close = strchr(item, ']');
		if (!close || close == item + 1)
			goto bad;
		host = item + 1;
		hlen = (size_t)(close - host);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			goto bad;
	} else {
		const char *colon = strchr(item, ':');
		hlen = colon ? (size_t)(colon - item) : strlen(item);
		if (colon)
			port = colon + 1;
		for (size_t i = 0; i < hlen; i++)
			if (!strchr(
			        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_",
			        item[i]))
				goto bad;
	}
	if (hlen == 0 || hlen >= sizeof h->host)
		goto bad;
	memcpy(h->host, host, hlen);
	h->host[hlen] = 0;
	h->port = CATALOG_DEFAULT_PORT;
	if (port) {
		int64_t p;
		if (str_to_int64(port, &p) < 0 || p < 1 || p > 65535) {
			*err = xasprintf("catalog host '%s': bad port '%s'", item, port);
			return HTC_EPARSE;
		}
		h->port = (int)p;
	}
	return 0;
bad:
	*err = xasprintf("bad catalog host '%s' (expected HOST[:PORT] or [ADDR]:PORT)", item);
	return HTC_EPARSE;
}

int catalog_hosts_parse(const char *list, struct catalog_host *hosts, int max, int *n, char **err)
{
	*err = NULL;
	*n = 0;
	if (!list)
		list = catalog_hosts_default();
	char *copy = xstrdup(list);
	int rc = 0;
	char *p = copy;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = 0;
		char *item = str_trim(p);
		if (!*item) {
			*err = xasprintf("empty entry in catalog host list '%s'", list);
			rc = HTC_EPARSE;
			break;
		}
		if (*n >= max) {
			*err = xasprintf("too many catalog hosts in '%s' (limit %d)", list, max);
			rc = HTC_ELIMIT;
			break;
		}
		rc = parse_one(item, &hosts[*n], err);
		if (rc < 0)
			break;
		(*n)++;
		if (!comma)
			break;
		p = comma + 1;
	}
	free(copy);
	if (rc < 0)
		*n = 0;
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* One exchange with one host */

struct xfer;
typedef void (*xfer_done_fn)(struct xfer *x);

struct xfer {
	uv_loop_t *loop;
	struct catalog_host host;
	bool udp;
	char *payload;
	size_t payload_len;
	uv_getaddrinfo_t gai;
	uv_timer_t timer;
	uv_tcp_t tcp;
	uv_udp_t udph;
	uv_connect_t conn;
	uv_write_t wr;
	uv_udp_send_t us;
	bool gai_pending;
	bool have_sock;
	int handles;
	bool finished;
	struct buffer resp;
	/* Results: rc 0 or negative, the HTTP status, the body, a text for errors. */
	int rc;
	int status;
	const char *body;
	size_t body_len;
	char *detail;
	xfer_done_fn done; /* NULL once the owner has lost interest */
	void *owner;
	char rbuf[16384];
};

static void xfer_maybe_free(struct xfer *x)
{
	if (x->handles > 0 || x->gai_pending)
		return;
	buffer_free(&x->resp);
	free(x->payload);
	free(x->detail);
	free(x);
}

static void xfer_handle_closed(uv_handle_t *h)
{
	struct xfer *x = h->data;
	x->handles--;
	xfer_maybe_free(x);
}

static void xfer_close_handle(struct xfer *x, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, xfer_handle_closed);
	(void)x;
}

/* Parses "HTTP/1.x NNN ...\r\n headers \r\n\r\n body" in x->resp. */
static void parse_response(struct xfer *x)
{
	const char *r = buffer_tostring(&x->resp);
	size_t n = buffer_len(&x->resp);
	int status = 0;
	if (n < 12 || strncmp(r, "HTTP/1.", 7) || sscanf(r + 9, "%3d", &status) != 1) {
		x->rc = HTC_EPROTO;
		x->detail = xstrdup("not an HTTP response");
		return;
	}
	const char *end = strstr(r, "\r\n\r\n");
	size_t skip = 4;
	if (!end) {
		end = strstr(r, "\n\n");
		skip = 2;
	}
	if (!end) {
		x->rc = HTC_EPROTO;
		x->detail = xstrdup("truncated HTTP response");
		return;
	}
	x->status = status;
	x->body = end + skip;
	x->body_len = n - (size_t)(x->body - r);
	if (status != 200) {
		size_t l = strcspn(x->body, "\r\n");
		x->rc = HTC_EPROTO;
		x->detail = xasprintf("HTTP %d: %.*s", status, (int)(l > 200 ? 200 : l), x->body);
		return;
	}
	x->rc = 0;
}

static void xfer_finish(struct xfer *x, int rc, const char *why)
{
	if (x->finished)
		return;
	x->finished = true;
	if (rc < 0) {
		x->rc = rc;
		if (!x->detail)
			x->detail = xstrdup(why ? why : htc_strerror(rc));
	} else if (!x->udp) {
		parse_response(x);
	} else {
		x->rc = 0;
	}
	if (x->rc < 0)
		debug(D_CATALOG, "%s:%d: %s", x->host.host, x->host.port, x->detail);
	uv_timer_stop(&x->timer);
	if (x->done)
		x->done(x);
	if (x->gai_pending)
		uv_cancel((uv_req_t *)&x->gai);
	xfer_close_handle(x, (uv_handle_t *)&x->timer);
	if (x->have_sock)
		xfer_close_handle(x, x->udp ? (uv_handle_t *)&x->udph : (uv_handle_t *)&x->tcp);
}

static void on_xfer_timeout(uv_timer_t *t)
{
	xfer_finish(t->data, -ETIMEDOUT, "timed out");
}

static void on_udp_sent(uv_udp_send_t *req, int status)
{
	struct xfer *x = req->data;
	if (status < 0) {
		char *d = xasprintf("UDP send: %s", uv_strerror(status));
		xfer_finish(x, -EIO, d);
		free(d);
		return;
	}
	xfer_finish(x, 0, NULL);
}

static void on_xfer_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct xfer *x = h->data;
	*buf = uv_buf_init(x->rbuf, sizeof x->rbuf);
}

static void on_xfer_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct xfer *x = s->data;
	if (x->finished)
		return;
	if (nread == UV_EOF) {
		xfer_finish(x, 0, NULL);
	} else if (nread < 0) {
		char *d = xasprintf("read: %s", uv_strerror((int)nread));
		xfer_finish(x, -EIO, d);
		free(d);
	} else if (buffer_putlstring(&x->resp, buf->base, (size_t)nread) < 0) {
		xfer_finish(x, HTC_ETOOBIG, "response too large");
	}
}

static void on_xfer_written(uv_write_t *req, int status)
{
	struct xfer *x = req->data;
	if (status < 0 && !x->finished) {
		char *d = xasprintf("write: %s", uv_strerror(status));
		xfer_finish(x, -EIO, d);
		free(d);
	}
}

static void on_xfer_connect(uv_connect_t *req, int status)
{
	struct xfer *x = req->data;
	if (x->finished)
		return;
	if (status < 0) {
		char *d = xasprintf("connect: %s", uv_strerror(status));
		xfer_finish(x, -ECONNREFUSED, d);
		free(d);
		return;
	}
	uv_buf_t b = uv_buf_init(x->payload, (unsigned)x->payload_len);
	x->wr.data = x;
	if (uv_write(&x->wr, (uv_stream_t *)&x->tcp, &b, 1, on_xfer_written) < 0 ||
	    uv_read_start((uv_stream_t *)&x->tcp, on_xfer_alloc, on_xfer_read) < 0)
		xfer_finish(x, -EIO, "cannot start the exchange");
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct xfer *x = req->data;
	x->gai_pending = false;
	if (x->finished || status < 0) {
		if (!x->finished) {
			char *d =
			    xasprintf("cannot resolve %s: %s", x->host.host, uv_strerror(status));
			xfer_finish(x, -EHOSTUNREACH, d);
			free(d);
		}
		uv_freeaddrinfo(res);
		xfer_maybe_free(x);
		return;
	}
	struct sockaddr_in sin;
	memcpy(&sin, res->ai_addr, sizeof sin);
	sin.sin_port = htons((uint16_t)x->host.port);
	uv_freeaddrinfo(res);
	x->have_sock = true;
	x->handles++;
	int rc;
	if (x->udp) {
		uv_udp_init(x->loop, &x->udph);
		x->udph.data = x;
		x->us.data = x;
		uv_buf_t b = uv_buf_init(x->payload, (unsigned)x->payload_len);
		rc = uv_udp_send(&x->us, &x->udph, &b, 1, (struct sockaddr *)&sin, on_udp_sent);
	} else {
		uv_tcp_init(x->loop, &x->tcp);
		x->tcp.data = x;
		x->conn.data = x;
		rc = uv_tcp_connect(&x->conn, &x->tcp, (struct sockaddr *)&sin, on_xfer_connect);
	}
	if (rc < 0) {
		char *d = xasprintf("%s: %s", x->udp ? "UDP send" : "connect", uv_strerror(rc));
		xfer_finish(x, -EIO, d);
		free(d);
	}
}

/* Starts an exchange; PAYLOAD (taken) is the datagram or the whole HTTP request. */
static struct xfer *xfer_start(uv_loop_t *loop, const struct catalog_host *h, bool udp,
                               char *payload, size_t len, int64_t timeout_ms, xfer_done_fn done,
                               void *owner)
{
	struct xfer *x = xcalloc(1, sizeof *x);
	x->loop = loop;
	x->host = *h;
	x->udp = udp;
	x->payload = payload;
	x->payload_len = len;
	x->done = done;
	x->owner = owner;
	buffer_init(&x->resp, CATALOG_MAX_RESPONSE);
	uv_timer_init(loop, &x->timer);
	x->timer.data = x;
	x->handles = 1;
	uv_timer_start(&x->timer, on_xfer_timeout, (uint64_t)(timeout_ms > 1 ? timeout_ms : 1), 0);
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM;
	x->gai.data = x;
	x->gai_pending = true;
	int rc = uv_getaddrinfo(loop, &x->gai, on_resolved, h->host, NULL, &hints);
	if (rc < 0) {
		x->gai_pending = false;
		char *d = xasprintf("cannot resolve %s: %s", h->host, uv_strerror(rc));
		xfer_finish(x, -EHOSTUNREACH, d);
		free(d);
	}
	return x;
}

static char *http_request(const struct catalog_host *h, const char *method, const char *target,
                          const char *body, size_t len, size_t *out_len)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_printf(&b, "%s %s HTTP/1.0\r\nHost: %s:%d\r\nUser-Agent: htc-catalog-client\r\n",
	              method, target, h->host, h->port);
	if (body)
		buffer_printf(&b, "Content-Type: application/json\r\nContent-Length: %zu\r\n", len);
	buffer_putstring(&b, "Connection: close\r\n\r\n");
	if (body)
		buffer_putlstring(&b, body, len);
	return buffer_steal(&b, out_len);
}

/* ------------------------------------------------------------------------------------------ */
/* Updates */

struct catalog_updater {
	uv_loop_t *loop;
	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int nhosts;
	catalog_updater_cb cb;
	void *arg;
	struct xfer *inflight[CATALOG_MAX_HOSTS];
	int outstanding;
	int failed;
	int round_n;
	char *detail;
};

struct catalog_updater *catalog_updater_create(uv_loop_t *loop, const char *list,
                                               catalog_updater_cb cb, void *arg, char **err)
{
	struct catalog_updater *u = xcalloc(1, sizeof *u);
	if (catalog_hosts_parse(list, u->hosts, CATALOG_MAX_HOSTS, &u->nhosts, err) < 0) {
		free(u);
		return NULL;
	}
	u->loop = loop;
	u->cb = cb;
	u->arg = arg;
	return u;
}

static void updater_xfer_done(struct xfer *x)
{
	struct catalog_updater *u = x->owner;
	for (int i = 0; i < u->nhosts; i++)
		if (u->inflight[i] == x)
			u->inflight[i] = NULL;
	if (x->rc < 0) {
		u->failed++;
		free(u->detail);
		u->detail = xasprintf("%s:%d: %s", x->host.host, x->host.port, x->detail);
	}
	if (--u->outstanding == 0 && u->cb)
		u->cb(u->arg, u->failed, u->round_n, u->detail ? u->detail : "");
}

static int updater_send_text(struct catalog_updater *u, const char *text, size_t len,
                             enum catalog_send_mode mode, int64_t timeout_ms)
{
	if (u->outstanding > 0)
		return -EBUSY;
	bool udp =
	    mode == CATALOG_SEND_UDP || (mode == CATALOG_SEND_AUTO && len < CATALOG_UDP_THRESHOLD);
	u->failed = 0;
	u->round_n = u->nhosts;
	free(u->detail);
	u->detail = NULL;
	u->outstanding = u->nhosts;
	for (int i = 0; i < u->nhosts; i++) {
		char *payload;
		size_t plen;
		if (udp) {
			payload = xstrndup(text, len);
			plen = len;
		} else {
			payload = http_request(&u->hosts[i], "POST", "/update", text, len, &plen);
		}
		debug(D_CATALOG, "sending %zu bytes to %s:%d by %s", len, u->hosts[i].host,
		      u->hosts[i].port, udp ? "UDP" : "HTTP");
		u->inflight[i] = xfer_start(u->loop, &u->hosts[i], udp, payload, plen, timeout_ms,
		                            updater_xfer_done, u);
	}
	return 0;
}

int catalog_updater_send(struct catalog_updater *u, const json_t *record,
                         enum catalog_send_mode mode)
{
	char *text = json_dumps(record, JSON_COMPACT);
	if (!text)
		return -EINVAL;
	int rc = updater_send_text(u, text, strlen(text), mode, SEND_TIMEOUT_MS);
	free(text);
	return rc;
}

void catalog_updater_delete(struct catalog_updater *u)
{
	if (!u)
		return;
	for (int i = 0; i < u->nhosts; i++) {
		struct xfer *x = u->inflight[i];
		if (x) {
			x->done = NULL;
			xfer_finish(x, -ECANCELED, "cancelled");
		}
	}
	free(u->detail);
	free(u);
}

/* ------------------------------------------------------------------------------------------ */
/* Queries */

struct catalog_query_op {
	uv_loop_t *loop;
	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int nhosts;
	int next;
	char *target;
	int64_t deadline_us;
	catalog_query_cb cb;
	void *arg;
	struct xfer *inflight;
	struct buffer errors;
};

static void query_next(struct catalog_query_op *op);

static void query_end(struct catalog_query_op *op, json_t *records, const char *err)
{
	op->cb(op->arg, records, err);
	buffer_free(&op->errors);
	free(op->target);
	free(op);
}

static void query_xfer_done(struct xfer *x)
{
	struct catalog_query_op *op = x->owner;
	op->inflight = NULL;
	const char *why = x->detail;
	char *own = NULL;
	if (x->rc == 0) {
		json_error_t jerr;
		json_t *a = json_loadb(x->body, x->body_len, 0, &jerr);
		if (a && json_is_array(a)) {
			debug(D_CATALOG, "%s:%d answered %zu records", x->host.host, x->host.port,
			      json_array_size(a));
			query_end(op, a, NULL);
			return;
		}
		json_decref(a);
		own =
		    xasprintf("answer is not a JSON array%s%s", a ? "" : ": ", a ? "" : jerr.text);
		why = own;
		debug(D_CATALOG, "%s:%d: %s", x->host.host, x->host.port, why);
	}
	buffer_printf(&op->errors, "%s%s:%d: %s", buffer_len(&op->errors) ? "; " : "", x->host.host,
	              x->host.port, why ? why : "failed");
	free(own);
	query_next(op);
}

static void query_next(struct catalog_query_op *op)
{
	int64_t left_ms = (op->deadline_us - time_monotonic_us()) / 1000;
	if (op->next >= op->nhosts || left_ms <= 0) {
		if (op->next < op->nhosts)
			buffer_printf(&op->errors, "%stimed out",
			              buffer_len(&op->errors) ? "; " : "");
		char *err =
		    xasprintf("no catalog server answered (%s)", buffer_tostring(&op->errors));
		query_end(op, NULL, err);
		free(err);
		return;
	}
	const struct catalog_host *h = &op->hosts[op->next++];
	size_t len;
	char *req = http_request(h, "GET", op->target, NULL, 0, &len);
	op->inflight = xfer_start(op->loop, h, false, req, len, left_ms, query_xfer_done, op);
}

struct catalog_query_op *catalog_query_start(uv_loop_t *loop, const char *list,
                                             const struct catalog_filter *filter, double timeout_s,
                                             catalog_query_cb cb, void *arg, char **err)
{
	struct catalog_query_op *op = xcalloc(1, sizeof *op);
	if (catalog_hosts_parse(list, op->hosts, CATALOG_MAX_HOSTS, &op->nhosts, err) < 0) {
		free(op);
		return NULL;
	}
	op->loop = loop;
	op->cb = cb;
	op->arg = arg;
	buffer_init(&op->errors, 4096);
	char *q = catalog_filter_to_query(filter);
	op->target = xasprintf("/query.json%s%s", *q ? "?" : "", q);
	free(q);
	op->deadline_us = time_monotonic_us() + (int64_t)(timeout_s * 1e6);
	query_next(op);
	return op;
}

void catalog_query_cancel(struct catalog_query_op *op)
{
	if (!op)
		return;
	if (op->inflight) {
		op->inflight->done = NULL;
		xfer_finish(op->inflight, -ECANCELED, "cancelled");
	}
	buffer_free(&op->errors);
	free(op->target);
	free(op);
}

/* ------------------------------------------------------------------------------------------ */
/* Blocking wrappers */

struct blocking_query {
	json_t *records;
	char *err;
	bool done;
};

static void blocking_query_cb(void *arg, json_t *records, const char *err)
{
	struct blocking_query *b = arg;
	b->records = records;
	b->err = err ? xstrdup(err) : NULL;
	b->done = true;
}

json_t *catalog_query(const char *list, const struct catalog_filter *filter, double timeout_s,
                      char **err)
{
	uv_loop_t loop;
	*err = NULL;
	int rc = uv_loop_init(&loop);
	if (rc < 0) {
		*err = xasprintf("cannot create an event loop: %s", uv_strerror(rc));
		return NULL;
	}
	struct blocking_query b = {NULL, NULL, false};
	struct catalog_query_op *op =
	    catalog_query_start(&loop, list, filter, timeout_s, blocking_query_cb, &b, err);
	if (op || b.done)
		uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	if (b.err)
		*err = b.err;
	return b.records;
}

struct blocking_update {
	int failed;
	char *detail;
};

static void blocking_update_cb(void *arg, int failed, int n, const char *detail)
{
	(void)n;
	struct blocking_update *b = arg;
	b->failed = failed;
	b->detail = failed ? xstrdup(detail) : NULL;
}

int catalog_update_send(const char *list, const char *text, size_t len, enum catalog_send_mode mode,
                        double timeout_s, char **err)
{
	uv_loop_t loop;
	*err = NULL;
	int rc = uv_loop_init(&loop);
	if (rc < 0) {
		*err = xasprintf("cannot create an event loop: %s", uv_strerror(rc));
		return rc;
	}
	struct blocking_update b = {0, NULL};
	struct catalog_updater *u =
	    catalog_updater_create(&loop, list, blocking_update_cb, &b, err);
	if (!u) {
		uv_loop_close(&loop);
		return HTC_EPARSE;
	}
	updater_send_text(u, text, len, mode, (int64_t)(timeout_s * 1000));
	uv_run(&loop, UV_RUN_DEFAULT);
	catalog_updater_delete(u);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	if (b.failed) {
		*err = b.detail;
		return -EIO;
	}
	return 0;
}
