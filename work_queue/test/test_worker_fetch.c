/* test_worker_fetch.c: unit tests of the worker's URL fetcher (worker_fetch) and of the master's
 * validator and object naming (master_url), against a tiny HTTP server running on the test's own
 * libuv loop: a file, a 404, a refused connection, redirects (followed, looping, to file://),
 * bodies over the size limit with and without Content-Length, schemes other than http(s),
 * concurrent users of one object sharing one GET, cancels, deletion during a download, the
 * low-speed timeout, and two workers' fetchers on one shared store fetching an object once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "worker_fetch.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "worker_cache.h"
#include "worker_sandbox.h"
#include "worker_shared_cache.h"
#include "master_url.h"
#include "xalloc.h"
#include "banned.h"

#define BIG 100000

/* ---- the HTTP server ------------------------------------------------------------------------ */

struct sconn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct server *s;
	char buf[4096];
	size_t len;
	bool responded, keep_open, head, closing;
	int handles; /* open handles: freed at 0 */
	struct sconn *next;
};

struct server {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	int port;
	int requests; /* every request line */
	int gets_file, gets_delayed, gets_loop;
	int heads;
	struct sconn *conns;
};

static void conn_closed(uv_handle_t *h)
{
	struct sconn *c = h->data;
	if (--c->handles > 0)
		return;
	struct sconn **pp = &c->s->conns;
	while (*pp && *pp != c)
		pp = &(*pp)->next;
	if (*pp)
		*pp = c->next;
	free(c);
}

static void conn_close(struct sconn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->timer, conn_closed);
	uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

struct wreq {
	uv_write_t w;
	char *data;
	struct sconn *c;
};

static void written(uv_write_t *w, int status)
{
	(void)status;
	struct wreq *r = (struct wreq *)w;
	if (!r->c->keep_open)
		conn_close(r->c);
	free(r->data);
	free(r);
}

/* Sends HEADERS (and BODY of LEN bytes unless the request is a HEAD). */
static void reply(struct sconn *c, const char *headers, const char *body, size_t len)
{
	size_t hl = strlen(headers);
	if (c->head)
		len = 0;
	struct wreq *r = xcalloc(1, sizeof *r);
	r->data = xmalloc(hl + len + 1);
	memcpy(r->data, headers, hl);
	if (len)
		memcpy(r->data + hl, body, len);
	r->c = c;
	uv_buf_t b = uv_buf_init(r->data, (unsigned)(hl + len));
	if (uv_write(&r->w, (uv_stream_t *)&c->tcp, &b, 1, written) < 0) {
		free(r->data);
		free(r);
		conn_close(c);
	}
}

static const char *const LM = "Wed, 21 Oct 2015 07:28:00 GMT";

static void send_file(struct sconn *c, const char *body)
{
	char *h = xasprintf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nLast-Modified: %s\r\n"
	                    "Connection: close\r\n\r\n",
	                    strlen(body), LM);
	reply(c, h, body, strlen(body));
	free(h);
}

static void on_delay(uv_timer_t *t)
{
	send_file(t->data, "delayed!\n");
}

static void redirect(struct sconn *c, const char *to)
{
	char *h = xasprintf("HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n"
	                    "Connection: close\r\n\r\n",
	                    to);
	reply(c, h, NULL, 0);
	free(h);
}

static void respond(struct sconn *c, const char *method, const char *path)
{
	struct server *s = c->s;
	s->requests++;
	c->head = !strcmp(method, "HEAD");
	if (c->head)
		s->heads++;
	if (!strcmp(path, "/file")) {
		if (!c->head)
			s->gets_file++;
		send_file(c, "hello url\n");
	} else if (!strcmp(path, "/etag")) {
		reply(c,
		      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nETag: \"abc\"\r\nLast-Modified: "
		      "Wed, 21 Oct 2015 07:28:00 GMT\r\nConnection: close\r\n\r\n",
		      "etag body\n", 10);
	} else if (!strcmp(path, "/redirect")) {
		redirect(c, "/file");
	} else if (!strcmp(path, "/head-redirect")) {
		redirect(c, "/etag");
	} else if (!strcmp(path, "/loop")) {
		s->gets_loop++;
		redirect(c, "/loop");
	} else if (!strcmp(path, "/tofile")) {
		redirect(c, "file:///etc/passwd");
	} else if (!strcmp(path, "/big") || !strcmp(path, "/bigclose")) {
		char *body = xmalloc(BIG);
		memset(body, 'x', BIG);
		if (!strcmp(path, "/big"))
			reply(c,
			      "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: "
			      "close\r\n\r\n",
			      body, BIG);
		else
			reply(c, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n", body, BIG);
		free(body);
	} else if (!strcmp(path, "/hang")) {
		c->keep_open = true;
		reply(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", "start", 5);
	} else if (!strcmp(path, "/delayed")) {
		s->gets_delayed++;
		c->timer.data = c;
		uv_timer_start(&c->timer, on_delay, 300, 0);
	} else {
		reply(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\n",
		      "not found", 9);
	}
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	(void)hint;
	struct sconn *c = h->data;
	b->base = c->buf + c->len;
	b->len = sizeof c->buf - 1 - c->len;
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	struct sconn *c = st->data;
	if (n < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = 0;
	if (c->responded || !strstr(c->buf, "\r\n\r\n")) {
		if (c->len >= sizeof c->buf - 1)
			conn_close(c);
		return;
	}
	c->responded = true;
	char method[16], path[256];
	if (sscanf(c->buf, "%15s %255s", method, path) != 2) {
		conn_close(c);
		return;
	}
	char *q = strchr(path, '?');
	if (q)
		*q = 0;
	respond(c, method, path);
}

static void on_conn(uv_stream_t *l, int status)
{
	struct server *s = l->data;
	if (status < 0)
		return;
	struct sconn *c = xcalloc(1, sizeof *c);
	c->s = s;
	c->handles = 2;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->next = s->conns;
	s->conns = c;
	if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0 ||
	    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0)
		conn_close(c);
}

static void server_start(struct server *s, uv_loop_t *loop)
{
	memset(s, 0, sizeof *s);
	s->loop = loop;
	uv_tcp_init(loop, &s->tcp);
	s->tcp.data = s;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(&s->tcp, (struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&s->tcp, 64, on_conn), 0);
	struct sockaddr_in got;
	int len = sizeof got;
	uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
	s->port = ntohs(got.sin_port);
}

static void server_stop(struct server *s)
{
	for (struct sconn *c = s->conns; c; c = c->next)
		conn_close(c);
	uv_close((uv_handle_t *)&s->tcp, NULL);
}

/* ---- fixture ------------------------------------------------------------------------------- */

struct result {
	char object[80];
	int status;
	uint64_t size;
	char text[1024];
};

struct fx {
	uv_loop_t loop;
	struct server srv;
	char *dir;
	struct worker_cache *cache;
	struct worker_fetch *f;
	struct result res[16];
	int nres;
	char url[256];
	char name[MASTER_URL_OBJECT_SIZE];
};

static void done_cb(const char *object, int status, uint64_t size, const char *text, void *arg)
{
	struct fx *x = arg;
	assert_true(x->nres < 16);
	struct result *r = &x->res[x->nres++];
	snprintf(r->object, sizeof r->object, "%s", object);
	r->status = status;
	r->size = size;
	snprintf(r->text, sizeof r->text, "%s", text ? text : "");
}

static int setup_opts(void **state, const struct worker_fetch_opts *o)
{
	struct fx *x = xcalloc(1, sizeof *x);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	server_start(&x->srv, &x->loop);
	x->dir = ts_tmpdir_create("test_worker_fetch");
	x->cache = worker_cache_create(x->dir);
	assert_non_null(x->cache);
	x->f = worker_fetch_create(&x->loop, x->cache, o, done_cb, x);
	*state = x;
	return 0;
}

static int setup(void **state)
{
	return setup_opts(state, NULL);
}

static int setup_slow(void **state)
{
	struct worker_fetch_opts o = {.low_speed_time_s = 1, .low_speed_limit = 100};
	return setup_opts(state, &o);
}

static int teardown(void **state)
{
	struct fx *x = *state;
	worker_fetch_delete(x->f);
	server_stop(&x->srv);
	/* Every download still in the thread pool ends, every handle closes. */
	uv_run(&x->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	worker_cache_delete(x->cache);
	ts_tmpdir_remove(x->dir);
	free(x);
	return 0;
}

static bool one_result(void *arg)
{
	struct fx *x = arg;
	return x->nres >= 1;
}

static bool five_results(void *arg)
{
	struct fx *x = arg;
	return x->nres >= 5;
}

static bool partial_empty(void *arg)
{
	struct fx *x = arg;
	char *p = path_join(worker_cache_path(x->cache), ".partial");
	DIR *d = opendir(p);
	free(p);
	if (!d)
		return false;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

/* Sets x->url to the server's PATH and x->name to its object name (empty validator). */
static void url_of(struct fx *x, const char *path)
{
	snprintf(x->url, sizeof x->url, "http://127.0.0.1:%d%s", x->srv.port, path);
	assert_int_equal(master_url_object_name(x->url, "", x->name), 0);
}

/* The first bytes of object NAME in CACHE, or NULL. Caller frees. */
static char *content_in(struct worker_cache *cache, const char *name)
{
	char *p = path_join(worker_cache_path(cache), name);
	FILE *fp = fopen(p, "r");
	free(p);
	if (!fp)
		return NULL;
	char buf[256];
	size_t n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = 0;
	return xstrdup(buf);
}

static char *cached_content(struct fx *x, const char *name)
{
	return content_in(x->cache, name);
}

/* ---- fetcher tests ------------------------------------------------------------------------- */

static void test_fetch_file(void **state)
{
	struct fx *x = *state;
	url_of(x, "/file");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(worker_fetch_busy(x->f, x->name));
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	assert_string_equal(x->res[0].object, x->name);
	assert_int_equal(x->res[0].size, 10);
	uint64_t size = 0;
	assert_true(worker_cache_has(x->cache, x->name, &size));
	assert_int_equal(size, 10);
	char *got = cached_content(x, x->name);
	assert_non_null(got);
	assert_string_equal(got, "hello url\n");
	free(got);
	assert_true(partial_empty(x));
	assert_int_equal(worker_fetch_count(x->f), 0);
	assert_int_equal(x->srv.gets_file, 1);
}

static void test_404(void **state)
{
	struct fx *x = *state;
	url_of(x, "/nothing-here");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_true(x->res[0].status < 0);
	char *want = xasprintf("HTTP 404 for %s", x->url);
	assert_string_equal(x->res[0].text, want);
	free(want);
	assert_false(worker_cache_has(x->cache, x->name, NULL));
	assert_true(partial_empty(x));
}

static void test_refused(void **state)
{
	struct fx *x = *state;
	/* a port that was just free: bind, read its number, close */
	uv_tcp_t t;
	uv_tcp_init(&x->loop, &t);
	struct sockaddr_in a, got;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(&t, (struct sockaddr *)&a, 0), 0);
	int len = sizeof got;
	uv_tcp_getsockname(&t, (struct sockaddr *)&got, &len);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	snprintf(x->url, sizeof x->url, "http://127.0.0.1:%d/file", ntohs(got.sin_port));
	assert_int_equal(master_url_object_name(x->url, "", x->name), 0);
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, -EIO);
	assert_non_null(strstr(x->res[0].text, x->url));
	assert_non_null(strstr(x->res[0].text, "onnect")); /* curl: "Failed to connect ..." */
	assert_false(worker_cache_has(x->cache, x->name, NULL));
	assert_true(partial_empty(x));
}

static void test_redirect(void **state)
{
	struct fx *x = *state;
	url_of(x, "/redirect");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	char *got = cached_content(x, x->name);
	assert_string_equal(got, "hello url\n");
	free(got);
	assert_int_equal(x->srv.gets_file, 1);
}

static void test_redirect_loop(void **state)
{
	struct fx *x = *state;
	url_of(x, "/loop");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_true(x->res[0].status < 0);
	assert_non_null(strstr(x->res[0].text, "redirect"));
	/* the first request and WORKER_FETCH_MAX_REDIRECTS redirects followed, no more */
	assert_int_equal(x->srv.gets_loop, 1 + WORKER_FETCH_MAX_REDIRECTS);
	assert_false(worker_cache_has(x->cache, x->name, NULL));
}

static void test_redirect_to_file(void **state)
{
	struct fx *x = *state;
	url_of(x, "/tofile");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_true(x->res[0].status < 0);
	assert_false(worker_cache_has(x->cache, x->name, NULL));
	assert_true(partial_empty(x));
}

static void test_schemes(void **state)
{
	struct fx *x = *state;
	const char *urls[] = {"file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://a/b"};
	for (int i = 0; i < 3; i++) {
		char name[MASTER_URL_OBJECT_SIZE];
		assert_int_equal(master_url_object_name(urls[i], "", name), 0);
		assert_int_equal(worker_fetch_want(x->f, urls[i], name, 1 << 20), 0);
		x->nres = 0;
		assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
		assert_int_equal(x->res[0].status, HTC_EUNSUP);
		assert_non_null(strstr(x->res[0].text, "only http and https"));
		assert_false(worker_cache_has(x->cache, name, NULL));
	}
	assert_int_equal(x->srv.requests, 0);
	/* a bad object name or an empty URL is refused at once */
	assert_int_equal(worker_fetch_want(x->f, "http://a/", "F-00", 10), -EINVAL);
	assert_int_equal(worker_fetch_want(x->f, "", x->name, 10), -EINVAL);
}

static void too_big(struct fx *x, const char *path)
{
	url_of(x, path);
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1000), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, HTC_ETOOBIG);
	assert_non_null(strstr(x->res[0].text, "larger than the 1000 bytes free"));
	assert_false(worker_cache_has(x->cache, x->name, NULL));
	assert_true(partial_empty(x));
}

static void test_too_big(void **state)
{
	too_big(*state, "/big"); /* Content-Length says so */
}

static void test_too_big_unknown_length(void **state)
{
	too_big(*state, "/bigclose"); /* no Content-Length: stopped while writing */
}

static void test_big_fits(void **state)
{
	struct fx *x = *state;
	url_of(x, "/bigclose");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, BIG), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	assert_int_equal(x->res[0].size, BIG);
	assert_true(partial_empty(x));
}

static void test_no_room(void **state)
{
	struct fx *x = *state;
	url_of(x, "/file");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 0), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, HTC_ETOOBIG);
	assert_int_equal(x->srv.requests, 0);
}

static void test_shared(void **state)
{
	struct fx *x = *state;
	url_of(x, "/delayed");
	for (int i = 0; i < 3; i++)
		assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_int_equal(worker_fetch_count(x->f), 1);
	/* one user leaves: the others still get it */
	worker_fetch_release(x->f, x->name);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	ts_run_for(&x->loop, 200); /* a second callback would come now */
	assert_int_equal(x->nres, 1);
	assert_int_equal(x->res[0].status, 0);
	assert_int_equal(x->srv.gets_delayed, 1);
	char *got = cached_content(x, x->name);
	assert_string_equal(got, "delayed!\n");
	free(got);
}

static void test_queue_limit(void **state)
{
	struct fx *x = *state;
	/* more distinct downloads than WORKER_FETCH_MAX_ACTIVE: all complete */
	char names[5][MASTER_URL_OBJECT_SIZE];
	for (int i = 0; i < 5; i++) {
		snprintf(x->url, sizeof x->url, "http://127.0.0.1:%d/file?%d", x->srv.port, i);
		assert_int_equal(master_url_object_name(x->url, "", names[i]), 0);
		assert_int_equal(worker_fetch_want(x->f, x->url, names[i], 1 << 20), 0);
	}
	assert_int_equal(worker_fetch_count(x->f), 5);
	assert_true(ts_run_until(&x->loop, five_results, x, TS_WAIT_MS));
	assert_int_equal(x->nres, 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(x->res[i].status, 0);
		assert_true(worker_cache_has(x->cache, names[i], NULL));
	}
}

static bool hang_seen(void *arg)
{
	struct fx *x = arg;
	return x->srv.requests >= 1;
}

static void test_cancel(void **state)
{
	struct fx *x = *state;
	url_of(x, "/hang");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, hang_seen, x, TS_WAIT_MS));
	ts_run_for(&x->loop, 100); /* the first bytes are in the spool */
	worker_fetch_release(x->f, x->name);
	assert_false(worker_fetch_busy(x->f, x->name));
	assert_int_equal(worker_fetch_count(x->f), 0);
	/* the transfer notices within about a second; its spool goes */
	assert_true(ts_run_until(&x->loop, partial_empty, x, TS_WAIT_MS));
	ts_run_for(&x->loop, 300);
	assert_int_equal(x->nres, 0);
	assert_false(worker_cache_has(x->cache, x->name, NULL));
	/* the same object can be wanted again afterwards */
	url_of(x, "/file");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
}

static void test_cancel_queued(void **state)
{
	struct fx *x = *state;
	char names[4][MASTER_URL_OBJECT_SIZE];
	for (int i = 0; i < 4; i++) {
		snprintf(x->url, sizeof x->url, "http://127.0.0.1:%d/hang?%d", x->srv.port, i);
		assert_int_equal(master_url_object_name(x->url, "", names[i]), 0);
		assert_int_equal(worker_fetch_want(x->f, x->url, names[i], 1 << 20), 0);
	}
	/* two run, two wait; releasing the waiting ones never starts them */
	worker_fetch_release(x->f, names[3]);
	worker_fetch_release(x->f, names[2]);
	worker_fetch_release(x->f, names[1]);
	worker_fetch_release(x->f, names[0]);
	assert_int_equal(worker_fetch_count(x->f), 0);
	ts_run_for(&x->loop, 1500);
	assert_true(x->srv.requests <= 2);
	assert_true(ts_run_until(&x->loop, partial_empty, x, TS_WAIT_MS));
	assert_int_equal(x->nres, 0);
}

static void test_delete_while_running(void **state)
{
	struct fx *x = *state;
	url_of(x, "/hang");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, hang_seen, x, TS_WAIT_MS));
	worker_fetch_delete(x->f);
	x->f = NULL;
	/* the detached download ends on its own and removes its spool, with no callback */
	assert_true(ts_run_until(&x->loop, partial_empty, x, TS_WAIT_MS));
	assert_int_equal(x->nres, 0);
	/* teardown checks that the loop closes: nothing is left in the thread pool */
}

static void test_low_speed(void **state)
{
	struct fx *x = *state;
	url_of(x, "/hang");
	assert_int_equal(worker_fetch_want(x->f, x->url, x->name, 1 << 20), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, -ETIMEDOUT);
	assert_non_null(strstr(x->res[0].text, x->url));
	assert_true(partial_empty(x));
}

/* ---- two workers on one shared store -------------------------------------------------------- */

/* The second worker of a store: its own cache (and workspace) and fetcher. */
struct peer {
	char *dir;
	struct worker_cache *cache;
	struct fx *rx; /* its results (done_cb's) */
	struct worker_fetch *f;
};

static struct worker_shared_cache *open_store(struct fx *x)
{
	char *d = path_join(x->dir, "store");
	char *why = NULL;
	struct worker_shared_cache *st = worker_shared_cache_open(d, 0, 0, &why);
	if (!st)
		fail_msg("%s", why);
	free(d);
	return st;
}

static void peer_start(struct peer *p, struct fx *x, struct worker_shared_cache *st)
{
	p->dir = path_join(x->dir, "peer");
	p->cache = worker_cache_create(p->dir);
	assert_non_null(p->cache);
	p->rx = xcalloc(1, sizeof *p->rx);
	p->f = worker_fetch_create(&x->loop, p->cache, NULL, done_cb, p->rx);
	worker_fetch_set_store(p->f, st);
}

static void peer_stop(struct peer *p, struct fx *x)
{
	worker_fetch_delete(p->f);
	ts_run_for(&x->loop, 50);
	worker_cache_delete(p->cache);
	free(p->rx);
	free(p->dir);
}

static char *peer_content(struct peer *p, const char *name)
{
	return content_in(p->cache, name);
}

static bool peer_result(void *arg)
{
	struct peer *p = arg;
	return p->rx->nres >= 1;
}

/* The first worker (x->f, on store ST) fetches /file: one GET, and the store then holds it
 * (its stat in *SB). */
static void first_fetch(struct fx *x, struct worker_shared_cache *st, struct stat *sb)
{
	worker_fetch_set_store(x->f, st);
	url_of(x, "/file");
	assert_int_equal(worker_fetch_want_shared(x->f, x->url, x->name, 1 << 20, true), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	assert_int_equal(x->srv.gets_file, 1);
	assert_int_equal(fstatat(worker_shared_cache_objects_fd(st), x->name, sb, 0), 0);
	assert_int_equal(sb->st_size, 10);
}

/* The second worker P then wants it: taken from the store, with no second request. */
static void peer_takes(struct fx *x, struct peer *p)
{
	assert_int_equal(worker_fetch_want_shared(p->f, x->url, x->name, 1 << 20, true), 0);
	assert_true(ts_run_until(&x->loop, peer_result, p, TS_WAIT_MS));
	assert_int_equal(p->rx->res[0].status, 0);
	assert_int_equal(p->rx->res[0].size, 10);
	assert_int_equal(x->srv.gets_file, 1);
	char *got = peer_content(p, x->name);
	assert_non_null(got);
	assert_string_equal(got, "hello url\n");
	free(got);
}

static void test_store_taken(void **state)
{
	struct fx *x = *state;
	struct worker_shared_cache *st = open_store(x);
	struct stat sb;
	first_fetch(x, st, &sb); /* published: a hard link of the first worker's copy */
	struct peer p;
	peer_start(&p, x, st);
	peer_takes(x, &p);
	/* one file on disk: the store, the first cache and the second cache link it */
	assert_int_equal(worker_shared_cache_users(st, x->name), 2);

	/* larger than the second worker's room: refused without a request */
	worker_cache_drop(p.cache, x->name);
	assert_int_equal(worker_fetch_want_shared(p.f, x->url, x->name, 5, true), 0);
	p.rx->nres = 0;
	assert_true(ts_run_until(&x->loop, peer_result, &p, TS_WAIT_MS));
	assert_int_equal(p.rx->res[0].status, HTC_ETOOBIG);
	assert_int_equal(x->srv.gets_file, 1);
	peer_stop(&p, x);
	worker_fetch_set_store(x->f, NULL);
	worker_shared_cache_close(st);
}

/* The store on another file system than the caches (tmpfs): the fetched object is copied into
 * the store, and copied (and hashed) from it into the second cache. */
static void test_store_other_fs(void **state)
{
	struct fx *x = *state;
	struct stat a, b;
	if (stat("/dev/shm", &b) < 0 || stat(x->dir, &a) < 0 || a.st_dev == b.st_dev)
		skip();
	char *sdir = ts_tmpdir_create_in("/dev/shm", "test_worker_fetch");
	char *why = NULL;
	struct worker_shared_cache *st = worker_shared_cache_open(sdir, 0, 0, &why);
	assert_non_null(st);
	struct stat sb;
	first_fetch(x, st, &sb);
	assert_int_equal(sb.st_nlink, 1); /* a copy, not a link */
	struct peer p;
	peer_start(&p, x, st);
	peer_takes(x, &p);
	peer_stop(&p, x);
	worker_fetch_set_store(x->f, NULL);
	worker_shared_cache_close(st);
	ts_tmpdir_remove(sdir);
}

/* Another worker of the store holds the object's lock (it is fetching it) and then dies or
 * fails without publishing: the download waits for the lock, then fetches the object itself. */
static void test_store_holder_fails(void **state)
{
	struct fx *x = *state;
	struct worker_shared_cache *st = open_store(x);
	worker_fetch_set_store(x->f, st);
	url_of(x, "/file");
	int held = worker_shared_cache_lock(st, x->name, false);
	assert_true(held >= 0);
	assert_int_equal(worker_fetch_want_shared(x->f, x->url, x->name, 1 << 20, true), 0);
	ts_run_for(&x->loop, 300);
	assert_int_equal(x->nres, 0); /* waiting for the lock */
	assert_int_equal(x->srv.gets_file, 0);
	worker_shared_cache_unlock(st, held);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	assert_int_equal(x->srv.gets_file, 1);
	struct stat sb;
	assert_int_equal(fstatat(worker_shared_cache_objects_fd(st), x->name, &sb, 0), 0);
	worker_fetch_set_store(x->f, NULL);
	worker_shared_cache_close(st);
}

/* A URL cached under its URL alone (no validator: not shared) neither enters the store nor is
 * taken from it. */
static void test_store_not_shared(void **state)
{
	struct fx *x = *state;
	struct worker_shared_cache *st = open_store(x);
	worker_fetch_set_store(x->f, st);
	url_of(x, "/file");
	assert_int_equal(worker_fetch_want_shared(x->f, x->url, x->name, 1 << 20, false), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	struct stat sb;
	assert_int_equal(fstatat(worker_shared_cache_objects_fd(st), x->name, &sb, 0), -1);
	struct peer p;
	peer_start(&p, x, st);
	assert_int_equal(worker_fetch_want_shared(p.f, x->url, x->name, 1 << 20, false), 0);
	assert_true(ts_run_until(&x->loop, peer_result, &p, TS_WAIT_MS));
	assert_int_equal(p.rx->res[0].status, 0);
	assert_int_equal(x->srv.gets_file, 2);
	peer_stop(&p, x);
	worker_fetch_set_store(x->f, NULL);
	worker_shared_cache_close(st);
}

static void test_store_concurrent(void **state)
{
	struct fx *x = *state;
	struct worker_shared_cache *st = open_store(x);
	worker_fetch_set_store(x->f, st);
	struct peer p;
	peer_start(&p, x, st);
	url_of(x, "/delayed");
	/* both workers want it at once: one fetches, the other waits for the lock and takes it */
	assert_int_equal(worker_fetch_want_shared(x->f, x->url, x->name, 1 << 20, true), 0);
	assert_int_equal(worker_fetch_want_shared(p.f, x->url, x->name, 1 << 20, true), 0);
	assert_true(ts_run_until(&x->loop, one_result, x, TS_WAIT_MS));
	assert_true(ts_run_until(&x->loop, peer_result, &p, TS_WAIT_MS));
	assert_int_equal(x->res[0].status, 0);
	assert_int_equal(p.rx->res[0].status, 0);
	assert_int_equal(x->srv.gets_delayed, 1);
	char *got = peer_content(&p, x->name);
	assert_non_null(got);
	assert_string_equal(got, "delayed!\n");
	free(got);
	got = cached_content(x, x->name);
	assert_string_equal(got, "delayed!\n");
	free(got);
	peer_stop(&p, x);
	worker_fetch_set_store(x->f, NULL);
	worker_shared_cache_close(st);
}

/* ---- master_url (the master's HEAD request), run in a thread so the server can answer ----------
 */

struct head_job {
	uv_work_t req;
	char url[256];
	char *validator;
	bool done;
};

static void head_work(uv_work_t *r)
{
	struct head_job *h = r->data;
	h->validator = master_url_validator(h->url, 2000);
}

static void head_after(uv_work_t *r, int status)
{
	(void)status;
	((struct head_job *)r->data)->done = true;
}

static struct head_job *cur_head;
static bool head_done(void *arg)
{
	(void)arg;
	return cur_head->done;
}

static char *validator_of(struct fx *x, const char *path)
{
	struct head_job h = {0};
	h.req.data = &h;
	snprintf(h.url, sizeof h.url, "http://127.0.0.1:%d%s", x->srv.port, path);
	cur_head = &h;
	assert_int_equal(uv_queue_work(&x->loop, &h.req, head_work, head_after), 0);
	assert_true(ts_run_until(&x->loop, head_done, x, TS_WAIT_MS));
	assert_non_null(h.validator);
	return h.validator;
}

static void test_validator(void **state)
{
	struct fx *x = *state;
	char *v = validator_of(x, "/file");
	char *want = xasprintf("lm:%s;10", LM);
	assert_string_equal(v, want);
	free(want);
	free(v);
	v = validator_of(x, "/etag");
	assert_string_equal(v, "etag:\"abc\"");
	free(v);
	v = validator_of(x, "/head-redirect"); /* the last response's headers */
	assert_string_equal(v, "etag:\"abc\"");
	free(v);
	v = validator_of(x, "/missing");
	assert_string_equal(v, "");
	free(v);
	assert_int_equal(x->srv.gets_file, 0); /* HEAD only */
	assert_true(x->srv.heads >= 4);
	v = master_url_validator("file:///etc/passwd", 1000);
	assert_string_equal(v, "");
	free(v);
}

static void test_object_name(void **state)
{
	(void)state;
	char name[MASTER_URL_OBJECT_SIZE], name2[MASTER_URL_OBJECT_SIZE], hex[SHA256_HEX_SIZE];
	const char *u = "http://example.org/a.txt";
	assert_int_equal(master_url_object_name(u, "etag:\"x\"", name), 0);
	const char *text = "http://example.org/a.txt\netag:\"x\"";
	assert_int_equal(sha256_buffer(text, strlen(text), hex), 0);
	assert_int_equal(strlen(name), 66);
	assert_memory_equal(name, "U-", 2);
	assert_string_equal(name + 2, hex);
	assert_true(worker_cache_name_valid(name));
	assert_int_equal(master_url_object_name(u, "etag:\"y\"", name2), 0);
	assert_string_not_equal(name, name2);
	assert_int_equal(master_url_object_name(u, NULL, name), 0);
	assert_int_equal(master_url_object_name(u, "", name2), 0);
	assert_string_equal(name, name2);
	assert_int_equal(sha256_buffer("http://example.org/a.txt\n", 25, hex), 0);
	assert_string_equal(name + 2, hex);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fetch_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_404, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_redirect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_redirect_loop, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_redirect_to_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_schemes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_too_big, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_too_big_unknown_length, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_big_fits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shared, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel_queued, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_delete_while_running, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_low_speed, setup_slow, teardown),
	    cmocka_unit_test_setup_teardown(test_store_taken, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_holder_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_not_shared, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_concurrent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_other_fs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_validator, setup, teardown),
	    cmocka_unit_test(test_object_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
