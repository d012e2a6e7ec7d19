/* catalog_server.c: the catalog server (see catalog_server.h): one TCP and one UDP socket on the
 * same port; HTTP requests are read with catalog_http into whole requests under a deadline,
 * answered once and the connection closed; updates go to the catalog_store, whose expired
 * records a timer removes every second. */
#include "catalog_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "atomic_file.h"
#include "buffer.h"
#include "catalog_cctools.h"
#include "catalog_filter.h"
#include "catalog_http.h"
#include "catalog_html.h"
#include "catalog_router.h"
#include "catalog_store.h"
#include "config.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define LINGER_MS          2000
#define MAX_PENDING_OUTPUT ((size_t)256 << 20)
#define UDP_BUFFER         65536
#define WARN_PER_SECOND    10

struct server {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_udp_t udp;
	uv_timer_t expiry;
	uv_signal_t sigterm, sigint;
	struct catalog_store *store;
	int nconns;
	int max_conns;
	int64_t idle_ms;
	int64_t request_ms; /* -T: the deadline of a whole request from accept */
	size_t pending_output;
	int64_t warn_window;
	int warn_count;
	int warn_suppressed;
	char udp_buf[UDP_BUFFER];
};

struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct server *srv;
	struct catalog_http_request *req;
	char peer[INET6_ADDRSTRLEN + 8];
	char ip[INET6_ADDRSTRLEN];
	int64_t accepted_ms;
	int responded;
	int sent_continue;
	int open_handles;
	uv_write_t wr;
	uv_write_t wr_continue;
	uv_shutdown_t sh;
	char *out;
	size_t out_len;
	char rbuf[8192];
};

static const char continue_text[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* ------------------------------------------------------------------------------------------ */
/* Rate-limited warnings */

static void __attribute__((format(printf, 2, 3)))
warn_limited(struct server *s, const char *fmt, ...)
{
	int64_t now = time_monotonic_us() / 1000000;
	if (now != s->warn_window) {
		if (s->warn_suppressed)
			warn("... %d more suppressed", s->warn_suppressed);
		s->warn_window = now;
		s->warn_count = 0;
		s->warn_suppressed = 0;
	}
	if (s->warn_count >= WARN_PER_SECOND) {
		s->warn_suppressed++;
		return;
	}
	s->warn_count++;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* The text may quote what a peer sent: escape control characters. */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	warn("%s", buf);
}

/* ------------------------------------------------------------------------------------------ */
/* Connections */

static void conn_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	c->srv->nconns--;
	if (c->out)
		c->srv->pending_output -= c->out_len;
	catalog_http_request_delete(c->req);
	free(c->out);
	free(c);
}

static void conn_close(struct conn *c)
{
	if (!uv_is_closing((uv_handle_t *)&c->tcp)) {
		debug(D_NET, "%s: closed", c->peer);
		uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
		uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)status;
	conn_close(req->data);
}

static void on_written(uv_write_t *req, int status)
{
	struct conn *c = req->data;
	if (status < 0 || uv_is_closing((uv_handle_t *)&c->tcp)) {
		conn_close(c);
		return;
	}
	c->sh.data = c;
	if (uv_shutdown(&c->sh, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		conn_close(c);
}

/* Sends one whole response and then closes the connection. */
static void respond(struct conn *c, int status, const char *ctype, const char *extra,
                    const char *body, size_t body_len)
{
	if (c->responded)
		return;
	c->responded = 1;
	uv_read_stop((uv_stream_t *)&c->tcp);
	if (c->srv->pending_output + body_len > MAX_PENDING_OUTPUT) {
		status = 503;
		ctype = "text/plain";
		extra = "";
		body = "server busy: too much output waiting to be sent\n";
		body_len = strlen(body);
	}
	struct buffer b;
	buffer_init(&b, 0);
	buffer_printf(&b,
	              "HTTP/1.1 %d %s\r\nServer: catalog_server/%s\r\nContent-Type: %s\r\n"
	              "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
	              status, catalog_http_reason(status), HTC_VERSION, ctype, body_len,
	              extra ? extra : "");
	buffer_putlstring(&b, body, body_len);
	c->out = buffer_steal(&b, &c->out_len);
	c->srv->pending_output += c->out_len;
	debug(D_CATALOG, "%s %s %s -> %d %zu", c->peer, catalog_http_request_method(c->req),
	      catalog_http_request_path(c->req), status, body_len);
	uv_buf_t buf = uv_buf_init(c->out, (unsigned)c->out_len);
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &buf, 1, on_written) < 0)
		conn_close(c);
}

static void respond_text(struct conn *c, int status, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void respond_text(struct conn *c, int status, const char *extra, const char *fmt, ...)
{
	char *text;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	const char *t = text ? text : "error\n";
	respond(c, status, "text/plain; charset=utf-8", extra, t, strlen(t));
	free(text);
}

static void handle_update(struct conn *c)
{
	size_t len;
	const char *body = catalog_http_request_body(c->req, &len);
	char *key = NULL, *err = NULL;
	int rc = catalog_store_update(c->srv->store, body, len, c->ip, time_now_us(), &key, &err);
	if (rc < 0) {
		int status = rc == HTC_ELIMIT ? 503 : 400;
		warn_limited(c->srv, "update from %s refused: %s", c->peer, err);
		if (status == 503)
			respond_text(c, status, NULL, "%s\n", err);
		else
			respond_text(c, status, NULL, "bad update: %s\n", err);
	} else {
		debug(D_CATALOG, "%s record %s (HTTP from %s)",
		      rc == CATALOG_UPDATE_NEW ? "new" : "replaced", key, c->peer);
		respond_text(c, 200, NULL, "stored %s\n", key);
	}
	free(key);
	free(err);
}

static void handle_query(struct conn *c)
{
	struct catalog_filter *f = NULL;
	char *err = NULL;
	if (catalog_filter_parse(catalog_http_request_query(c->req), &f, &err) < 0) {
		warn_limited(c->srv, "query from %s refused: %s", c->peer, err);
		respond_text(c, 400, NULL, "bad query: %s\n", err);
		free(err);
		return;
	}
	json_t *a = catalog_store_query(c->srv->store, f, time_now_us());
	char *text = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	catalog_filter_delete(f);
	if (!text) {
		respond_text(c, 500, NULL, "cannot encode the records\n");
		return;
	}
	respond(c, 200, "application/json", NULL, text, strlen(text));
	free(text);
}

static const char *str_field(json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));
	return s ? s : "-";
}

/* GET /index.html, and GET / from a browser: the HTML page of the projects (catalog_html.h). */
static void route_html(void *ctx, const char *arg)
{
	(void)arg;
	struct conn *c = ctx;
	json_t *a = catalog_store_query(c->srv->store, NULL, time_now_us());
	size_t len;
	char *page = catalog_html_page(a, time_now_us(), HTC_VERSION, &len);
	respond(c, 200, "text/html; charset=utf-8", NULL, page, len);
	free(page);
	json_decref(a);
}

static void handle_listing(struct conn *c)
{
	if (catalog_http_request_accepts_html(c->req)) {
		route_html(c, "");
		return;
	}
	int64_t now = time_now_us();
	json_t *a = catalog_store_query(c->srv->store, NULL, now);
	struct buffer b;
	buffer_init(&b, 0);
	buffer_printf(&b, "catalog_server %s: %zu records\n\n%-12s %-40s %-20s %-16s %s\n",
	              HTC_VERSION, json_array_size(a), "TYPE", "NAME:PORT", "PROJECT", "ADDRESS",
	              "AGE");
	size_t i;
	json_t *rec;
	json_array_foreach(a, i, rec)
	{
		char hp[300];
		snprintf(hp, sizeof hp, "%s:%" JSON_INTEGER_FORMAT, str_field(rec, "name"),
		         json_integer_value(json_object_get(rec, "port")));
		int64_t age = now / 1000000 - json_integer_value(json_object_get(rec, "lastheard"));
		buffer_printf(&b, "%-12s %-40s %-20s %-16s %" PRId64 "s\n", str_field(rec, "type"),
		              hp, str_field(rec, "project"), str_field(rec, "address"), age);
	}
	json_decref(a);
	for (char *p = b.data; p && *p; p++) /* names may hold anything but controls */
		if ((unsigned char)*p < 0x20 && *p != '\n')
			*p = '?';
	respond(c, 200, "text/plain; charset=utf-8", NULL, buffer_tostring(&b), buffer_len(&b));
	buffer_free(&b);
}

/* GET /query/BASE64 (CCTools clients): the records matching a JX expression. */
static void handle_cctools_query(void *ctx, const char *arg)
{
	struct conn *c = ctx;
	char *err = NULL;
	struct catalog_expr *e = catalog_cctools_parse_query(arg, &err);
	if (!e) {
		warn_limited(c->srv, "query from %s refused: %s", c->peer, err);
		respond_text(c, 400, NULL, "bad query: %s\n", err);
		free(err);
		return;
	}
	json_t *all = catalog_store_query(c->srv->store, NULL, time_now_us());
	json_t *a = catalog_cctools_select(all, e);
	size_t len;
	char *text = catalog_cctools_json(a, &len);
	respond(c, 200, "text/plain", NULL, text, len);
	free(text);
	json_decref(a);
	json_decref(all);
	catalog_expr_delete(e);
}

/* GET /query.text (CCTools form): every record as "key value" lines. */
static void handle_query_text(void *ctx, const char *arg)
{
	(void)arg;
	struct conn *c = ctx;
	json_t *all = catalog_store_query(c->srv->store, NULL, time_now_us());
	json_t *a = catalog_cctools_select(all, NULL);
	size_t len;
	char *text = catalog_cctools_text(a, &len);
	respond(c, 200, "text/plain", NULL, text, len);
	free(text);
	json_decref(a);
	json_decref(all);
}

static void route_query_json(void *ctx, const char *arg)
{
	(void)arg;
	handle_query(ctx);
}

static void route_listing(void *ctx, const char *arg)
{
	(void)arg;
	handle_listing(ctx);
}

static void route_update(void *ctx, const char *arg)
{
	(void)arg;
	handle_update(ctx);
}

/* The pages of the server (doc/catalog.md, section 3); a new page is one more row. */
static const struct catalog_route routes[] = {
    {"GET", "/query.json", false, route_query_json},
    {"GET", "/query/", true, handle_cctools_query},
    {"GET", "/query.text", false, handle_query_text},
    {"GET", "/", false, route_listing},
    {"GET", "/index.html", false, route_html},
    {"POST", "/update", false, route_update},
};

static void handle_request(struct conn *c)
{
	const char *method = catalog_http_request_method(c->req);
	const char *path = catalog_http_request_path(c->req);
	if (strcmp(method, "GET") && strcmp(method, "POST")) {
		respond_text(c, 405, "Allow: GET, POST\r\n", "method %.32s not allowed\n", method);
		return;
	}
	const char *arg = "";
	int status = 404;
	char allow[64];
	const struct catalog_route *r =
	    catalog_router_find(routes, sizeof routes / sizeof routes[0], method, path, &arg,
	                        &status, allow, sizeof allow);
	if (r) {
		r->fn(c, arg);
	} else if (status == 405) {
		char extra[96];
		snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
		respond_text(c, 405, extra, "use %s for %.200s\n", allow, path);
	} else {
		respond_text(c, 404, NULL,
		             "no such path (try /query.json, /query/BASE64, /query.text)\n");
	}
}

static void conn_arm_timer(struct conn *c);

static void on_conn_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (c->responded) { /* linger over */
		conn_close(c);
		return;
	}
	debug(D_NET, "%s: request timeout", c->peer);
	warn_limited(c->srv, "%s: request not complete in time, closing", c->peer);
	respond_text(c, 408, NULL, "request timeout\n");
	uv_timer_start(&c->timer, on_conn_timer, LINGER_MS, 0);
}

static void conn_arm_timer(struct conn *c)
{
	int64_t left = c->srv->request_ms - ((int64_t)uv_now(c->srv->loop) - c->accepted_ms);
	int64_t ms = c->srv->idle_ms < left ? c->srv->idle_ms : left;
	if (ms < 1)
		ms = 1;
	uv_timer_start(&c->timer, on_conn_timer, (uint64_t)ms, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct conn *c = h->data;
	*buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = stream->data;
	if (nread < 0) {
		debug(D_NET, "%s: %s before a whole request", c->peer,
		      nread == UV_EOF ? "end of stream" : uv_strerror((int)nread));
		conn_close(c);
		return;
	}
	if (nread == 0 || c->responded)
		return;
	conn_arm_timer(c);
	int rc = catalog_http_request_feed(c->req, buf->base, (size_t)nread);
	if (rc == CATALOG_HTTP_ERROR) {
		warn_limited(c->srv, "bad request from %s: %s", c->peer,
		             catalog_http_request_error(c->req));
		respond_text(c, catalog_http_request_status(c->req), NULL, "%s\n",
		             catalog_http_request_error(c->req));
		uv_timer_start(&c->timer, on_conn_timer, LINGER_MS, 0);
		return;
	}
	if (rc == CATALOG_HTTP_MORE && catalog_http_request_expect_continue(c->req) &&
	    catalog_http_request_header_done(c->req) && !c->sent_continue) {
		c->sent_continue = 1;
		uv_buf_t b = uv_buf_init((char *)continue_text, sizeof continue_text - 1);
		if (uv_write(&c->wr_continue, stream, &b, 1, NULL) < 0) {
			conn_close(c);
			return;
		}
	}
	if (rc == CATALOG_HTTP_COMPLETE) {
		handle_request(c);
		uv_timer_start(&c->timer, on_conn_timer, LINGER_MS, 0);
	}
}

static void on_connection(uv_stream_t *server, int status)
{
	struct server *s = server->data;
	if (status < 0) {
		warn_limited(s, "accept: %s", uv_strerror(status));
		return;
	}
	struct conn *c = xcalloc(1, sizeof *c);
	c->srv = s;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->open_handles = 2;
	s->nconns++;
	snprintf(c->peer, sizeof c->peer, "?");
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c);
		return;
	}
	struct sockaddr_storage ss;
	int len = sizeof ss;
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		uv_ip4_name(sin, c->ip, sizeof c->ip);
		snprintf(c->peer, sizeof c->peer, "%s:%d", c->ip, ntohs(sin->sin_port));
	}
	if (s->nconns > s->max_conns) {
		warn_limited(s, "%s: too many connections (%d), closing", c->peer, s->max_conns);
		conn_close(c);
		return;
	}
	debug(D_NET, "%s: connected", c->peer);
	c->req = catalog_http_request_create(CATALOG_HTTP_MAX_BODY);
	c->accepted_ms = (int64_t)uv_now(s->loop);
	conn_arm_timer(c);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

/* ------------------------------------------------------------------------------------------ */
/* UDP, expiry, signals */

static void on_udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct server *s = h->data;
	*buf = uv_buf_init(s->udp_buf, sizeof s->udp_buf);
}

static void on_udp(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                   unsigned flags)
{
	struct server *s = h->data;
	if (nread < 0) {
		warn_limited(s, "UDP receive: %s", uv_strerror((int)nread));
		return;
	}
	if (!addr || addr->sa_family != AF_INET)
		return;
	char ip[INET6_ADDRSTRLEN] = "?";
	uv_ip4_name((const struct sockaddr_in *)addr, ip, sizeof ip);
	int port = ntohs(((const struct sockaddr_in *)addr)->sin_port);
	if (flags & UV_UDP_PARTIAL) {
		warn_limited(s, "UDP update from %s:%d refused: datagram over %d bytes", ip, port,
		             UDP_BUFFER);
		return;
	}
	if (nread == 0)
		return;
	char *key = NULL, *err = NULL;
	int rc =
	    catalog_store_update(s->store, buf->base, (size_t)nread, ip, time_now_us(), &key, &err);
	if (rc < 0)
		warn_limited(s, "UDP update from %s:%d refused: %s", ip, port, err);
	else
		debug(D_CATALOG, "%s record %s (UDP from %s:%d)",
		      rc == CATALOG_UPDATE_NEW ? "new" : "replaced", key, ip, port);
	free(key);
	free(err);
}

static void on_expiry(uv_timer_t *t)
{
	struct server *s = t->data;
	int n = catalog_store_expire(s->store, time_now_us());
	if (n > 0)
		debug(D_CATALOG, "expired %d record%s, %zu left", n, n == 1 ? "" : "s",
		      catalog_store_count(s->store));
}

static void on_signal(uv_signal_t *h, int signum)
{
	notice("signal %d, exiting", signum);
	uv_stop(h->loop);
}

static void close_any(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (uv_is_closing(h))
		return;
	if (h->type == UV_TCP && h->data && h->data != arg) {
		/* A connection: its struct is freed when both its handles are closed. */
		struct conn *c = h->data;
		conn_close(c);
		return;
	}
	if (h->type == UV_TIMER && h->data && h->data != arg)
		return; /* a connection's timer, closed with its TCP handle */
	uv_close(h, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Binding */

/* Binds a TCP and a UDP socket to PORT on all IPv4 addresses (PORT 0: any free number that is
 * free for both). Returns the port, or -errno. */
static int bind_both(int port, int *tcp_fd, int *udp_fd)
{
	int last = -EADDRINUSE;
	for (int attempt = 0; attempt < (port ? 1 : 50); attempt++) {
		int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (t < 0 || u < 0) {
			last = -errno;
			if (t >= 0)
				close(t);
			if (u >= 0)
				close(u);
			return last;
		}
		int one = 1;
		setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in sin;
		memset(&sin, 0, sizeof sin);
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		sin.sin_port = htons((uint16_t)port);
		socklen_t sl = sizeof sin;
		if (bind(t, (struct sockaddr *)&sin, sizeof sin) < 0 ||
		    getsockname(t, (struct sockaddr *)&sin, &sl) < 0 ||
		    bind(u, (struct sockaddr *)&sin, sizeof sin) < 0) {
			last = -errno;
			close(t);
			close(u);
			if (last != -EADDRINUSE)
				return last;
			continue;
		}
		*tcp_fd = t;
		*udp_fd = u;
		return ntohs(sin.sin_port);
	}
	return last;
}

/* ------------------------------------------------------------------------------------------ */
/* The run */

/* Takes the bound sockets into the loop's handles and starts the timer and the signals. */
static int start(struct server *s, int bound, int tcp_fd, int udp_fd, char *err, size_t errlen)
{
	uv_tcp_init(s->loop, &s->tcp);
	uv_udp_init(s->loop, &s->udp);
	s->tcp.data = s->udp.data = s;
	int rc = uv_tcp_open(&s->tcp, tcp_fd);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->tcp, 128, on_connection);
	if (rc == 0)
		rc = uv_udp_open(&s->udp, udp_fd);
	if (rc == 0)
		rc = uv_udp_recv_start(&s->udp, on_udp_alloc, on_udp);
	if (rc < 0) {
		snprintf(err, errlen, "cannot listen on port %d: %s", bound, uv_strerror(rc));
		return rc;
	}
	uv_timer_init(s->loop, &s->expiry);
	s->expiry.data = s;
	uv_timer_start(&s->expiry, on_expiry, 1000, 1000);
	uv_signal_init(s->loop, &s->sigterm);
	uv_signal_init(s->loop, &s->sigint);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	return 0;
}

int catalog_server_run(const struct catalog_server_opts *o, char *err, size_t errlen)
{
	int tcp_fd = -1, udp_fd = -1;
	int bound = bind_both(o->port, &tcp_fd, &udp_fd);
	if (bound < 0) {
		snprintf(err, errlen, "cannot bind TCP and UDP port %d: %s", o->port,
		         strerror(-bound));
		return bound;
	}
	struct server *s = xcalloc(1, sizeof *s);
	s->max_conns = o->max_connections;
	s->idle_ms = o->idle_timeout_ms;
	s->request_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 30000;
	s->loop = uv_default_loop();
	s->store = catalog_store_create(&o->store);
	int rc = start(s, bound, tcp_fd, udp_fd, err, errlen);
	if (rc == 0 && o->port_file) {
		char text[16];
		int n = snprintf(text, sizeof text, "%d\n", bound);
		rc = atomic_file_write(o->port_file, text, (size_t)n, 0644);
		if (rc < 0)
			snprintf(err, errlen, "-Z %s: %s", o->port_file, htc_strerror(rc));
	}
	if (rc == 0 && o->seccomp) {
		/* From here on the server only serves its sockets (doc/seccomp.md). */
		int se = rmon_seccomp_lockdown(1, 0);
		if (se < 0)
			warn("cannot install the seccomp filter: %s", htc_strerror(se));
		else
			debug(D_CATALOG, "seccomp: the calls a server never needs are refused");
	}
	if (rc == 0) {
		notice("listening on port %d (TCP and UDP), record lifetime %" PRId64 " s", bound,
		       o->store.lifetime_s);
		uv_run(s->loop, UV_RUN_DEFAULT);
	}
	uv_walk(s->loop, close_any, s);
	uv_run(s->loop, UV_RUN_DEFAULT);
	uv_loop_close(s->loop);
	catalog_store_delete(s->store);
	free(s);
	return rc;
}
