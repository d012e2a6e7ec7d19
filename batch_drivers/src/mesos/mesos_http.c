/* mesos_http.c: libcurl's multi interface on a libuv loop (mesos_http.h). curl says which
 * sockets to watch (one uv_poll_t each) and when to wake it (one uv_timer_t); finished
 * transfers are collected after every socket action and their callbacks run from there. */
#include "mesos_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "buffer.h"
#include "config.h"
#include "curl_init.h"
#include "debug.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

struct mesos_http {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	struct mesos_http_req *reqs; /* every request not yet ended */
	int open_handles;            /* polls and the timer not yet closed */
	int deleted;
	int dispatching;       /* inside check_done */
	char *user, *password; /* HTTP basic authentication, or NULL */
};

struct mesos_http_req {
	struct mesos_http *h;
	CURL *c;
	struct curl_slist *hdrs;
	char *body;
	struct buffer reply;
	char stream_id[MESOS_HTTP_HEADER_MAX];
	char location[MESOS_HTTP_HEADER_MAX];
	mesos_http_data_fn data;
	mesos_http_done_fn done;
	void *arg;
	int stopped; /* the data callback asked to end */
	int cancelled;
	char errbuf[CURL_ERROR_SIZE];
	struct mesos_http_req *next;
};

struct sock {
	uv_poll_t poll; /* first: the handle is the struct */
	curl_socket_t fd;
	struct mesos_http *h;
};

static void maybe_free(struct mesos_http *h)
{
	if (h->deleted && h->open_handles == 0 && !h->dispatching) {
		free(h->user);
		free(h->password);
		free(h);
	}
}

static void on_closed(uv_handle_t *hd)
{
	struct mesos_http *h = hd->data;
	h->open_handles--;
	if (hd->type == UV_POLL)
		free((struct sock *)(void *)hd);
	maybe_free(h);
}

static void req_free(struct mesos_http_req *r)
{
	struct mesos_http *h = r->h;
	for (struct mesos_http_req **p = &h->reqs; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	curl_multi_remove_handle(h->multi, r->c);
	curl_easy_cleanup(r->c);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	buffer_free(&r->reply);
	free(r);
}

static void check_done(struct mesos_http *h)
{
	CURLMsg *m;
	int left;
	h->dispatching++;
	while (!h->deleted && (m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct mesos_http_req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		CURLcode cc = m->data.result;
		if (!r)
			continue;
		struct mesos_http_reply rep = {0};
		curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &rep.status);
		rep.curl_code = (int)cc;
		rep.curl_error = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
		rep.body = buffer_tostring(&r->reply);
		rep.body_len = buffer_len(&r->reply);
		rep.stream_id = r->stream_id;
		rep.location = r->location;
		int call = !r->stopped && !r->cancelled && r->done;
		mesos_http_done_fn done = r->done;
		void *arg = r->arg;
		/* the callback may start requests or cancel others: this one is gone first, but
		 * its answer is read before */
		char *keep_body = xstrndup(rep.body, rep.body_len);
		char *keep_err = xstrdup(rep.curl_error);
		char keep_sid[MESOS_HTTP_HEADER_MAX], keep_loc[MESOS_HTTP_HEADER_MAX];
		snprintf(keep_sid, sizeof keep_sid, "%s", r->stream_id);
		snprintf(keep_loc, sizeof keep_loc, "%s", r->location);
		req_free(r);
		rep.body = keep_body;
		rep.curl_error = keep_err;
		rep.stream_id = keep_sid;
		rep.location = keep_loc;
		if (call)
			done(&rep, arg);
		free(keep_body);
		free(keep_err);
	}
	h->dispatching--;
	maybe_free(h);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *s = (struct sock *)(void *)p;
	struct mesos_http *h = s->h;
	int flags = 0;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	int running;
	curl_multi_socket_action(h->multi, s->fd, flags, &running);
	check_done(h);
}

static void on_timer(uv_timer_t *t)
{
	struct mesos_http *h = t->data;
	int running;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(h);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)e;
	struct mesos_http *h = userp;
	struct sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, on_closed);
			curl_multi_assign(h->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = xcalloc(1, sizeof *s);
		s->fd = fd;
		s->h = h;
		if (uv_poll_init_socket(h->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->poll.data = h;
		h->open_handles++;
		curl_multi_assign(h->multi, fd, s);
	}
	int ev = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= UV_WRITABLE;
	uv_poll_start(&s->poll, ev, on_poll);
	return 0;
}

static int on_timeout(CURLM *m, long ms, void *userp)
{
	(void)m;
	struct mesos_http *h = userp;
	if (ms < 0)
		uv_timer_stop(&h->timer);
	else
		uv_timer_start(&h->timer, on_timer, (uint64_t)ms, 0);
	return 0;
}

struct mesos_http *mesos_http_new(uv_loop_t *loop)
{
	curl_init_once();
	struct mesos_http *h = xcalloc(1, sizeof *h);
	h->loop = loop;
	h->multi = curl_multi_init();
	if (!h->multi) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timeout);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	h->open_handles = 1;
	return h;
}

void mesos_http_delete(struct mesos_http *h)
{
	if (!h || h->deleted)
		return;
	h->deleted = 1;
	while (h->reqs)
		req_free(h->reqs);
	curl_multi_cleanup(h->multi); /* may call on_socket with REMOVE */
	h->multi = NULL;
	uv_timer_stop(&h->timer);
	uv_close((uv_handle_t *)&h->timer, on_closed);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct mesos_http_req *r = arg;
	size_t len = size * n;
	if (r->data) {
		long st = 0;
		curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &st);
		if (st >= 200 && st < 300) {
			if (r->data(r, p, len, r->arg)) {
				r->stopped = 1;
				return 0;
			}
			return len;
		}
	}
	/* an answer longer than the cap is cut (it is only quoted) */
	size_t room = MESOS_HTTP_BODY_MAX - buffer_len(&r->reply);
	buffer_putlstring(&r->reply, p, len < room ? len : room);
	return len;
}

/* When header line P (LEN bytes) is NAME (lower case, with its colon), its trimmed value
 * (cut to MESOS_HTTP_HEADER_MAX - 1 bytes) into OUT. */
static void header_value(const char *p, size_t len, const char *name, char *out)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(p, name, nl) != 0)
		return;
	size_t vl = len - nl;
	if (vl >= MESOS_HTTP_HEADER_MAX)
		vl = MESOS_HTTP_HEADER_MAX - 1;
	char *v = xstrndup(p + nl, vl);
	snprintf(out, MESOS_HTTP_HEADER_MAX, "%s", str_trim(v));
	free(v);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct mesos_http_req *r = arg;
	size_t len = size * n;
	header_value(p, len, "mesos-stream-id:", r->stream_id);
	header_value(p, len, "location:", r->location);
	return len;
}

void mesos_http_set_auth(struct mesos_http *h, const char *user, const char *password)
{
	free(h->user);
	free(h->password);
	h->user = user ? xstrdup(user) : NULL;
	h->password = user ? xstrdup(password ? password : "") : NULL;
}

struct mesos_http_req *mesos_http_post(struct mesos_http *h, const char *url, const char *body,
                                       const char *stream_id, long timeout_ms,
                                       mesos_http_data_fn data, mesos_http_done_fn done, void *arg)
{
	if (h->deleted)
		return NULL;
	struct mesos_http_req *r = xcalloc(1, sizeof *r);
	r->h = h;
	r->data = data;
	r->done = done;
	r->arg = arg;
	buffer_init(&r->reply, MESOS_HTTP_BODY_MAX);
	r->body = xstrdup(body);
	r->c = curl_easy_init();
	if (!r->c) {
		buffer_free(&r->reply);
		free(r->body);
		free(r);
		return NULL;
	}
	CURL *c = r->c;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)MESOS_HTTP_CONNECT_MS);
	if (!data && timeout_ms > 0)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "htc-mesos/" HTC_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(c, CURLOPT_PRIVATE, (char *)r);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
	r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
	r->hdrs = curl_slist_append(r->hdrs, "Accept: application/json");
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	if (stream_id) {
		char *hd = xasprintf("Mesos-Stream-Id: %s", stream_id);
		r->hdrs = curl_slist_append(r->hdrs, hd);
		free(hd);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->hdrs);
	if (h->user) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, h->user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, h->password);
	}
	if (getenv("HTC_MESOS_CURL_VERBOSE"))
		curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
	if (curl_multi_add_handle(h->multi, c) != CURLM_OK) {
		curl_easy_cleanup(c);
		curl_slist_free_all(r->hdrs);
		buffer_free(&r->reply);
		free(r->body);
		free(r);
		return NULL;
	}
	r->next = h->reqs;
	h->reqs = r;
	return r;
}

const char *mesos_http_stream_id(const struct mesos_http_req *req)
{
	return req->stream_id;
}

void mesos_http_cancel(struct mesos_http_req *req)
{
	if (!req)
		return;
	/* never from a curl callback (mesos_http.h): curl is not inside this transfer */
	req->cancelled = 1;
	req_free(req);
}

char *mesos_http_resolve(const char *base, const char *location)
{
	const char *sep = strstr(base, "://");
	if (!*location || strchr(location, ' ') || !sep)
		return NULL;
	if (strstr(location, "://")) {
		if (strncmp(location, "http://", 7) != 0 && strncmp(location, "https://", 8) != 0)
			return NULL;
		return xstrdup(location);
	}
	if (location[0] == '/' && location[1] == '/') /* //host:port/path: the base's scheme */
		return xasprintf("%.*s:%s", (int)(sep - base), base, location);
	if (location[0] == '/') { /* /path: the base's scheme, host and port */
		const char *path = strchr(sep + 3, '/');
		int n = path ? (int)(path - base) : (int)strlen(base);
		return xasprintf("%.*s%s", n, base, location);
	}
	return NULL;
}

char *mesos_http_authority(const char *url)
{
	const char *sep = strstr(url, "://");
	const char *a = sep ? sep + 3 : url;
	return xstrndup(a, strcspn(a, "/"));
}
