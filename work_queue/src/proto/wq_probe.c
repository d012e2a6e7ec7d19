/* wq_probe.c: the probe of a silent peer (see wq_probe.h): connect, write the CCTools
 * status query, read until the peer closes (at most WQ_FOREIGN_PROBE_MAX bytes) or the timeout,
 * then let wq_foreign judge the answer. */
#include "wq_probe.h"

#include <stdlib.h>
#include <string.h>

#include "wq_foreign.h"
#include "xalloc.h"

#include "banned.h"

struct wq_probe {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_connect_t creq;
	uv_write_t wreq;
	int open_handles;
	bool done;
	wq_probe_cb cb;
	void *arg;
	size_t len;
	char buf[WQ_FOREIGN_PROBE_MAX + 1];
};

static void on_closed(uv_handle_t *h)
{
	struct wq_probe *p = h->data;
	if (--p->open_handles == 0)
		free(p);
}

/* Ends P: reports (unless cancelled) and closes its handles. */
static void finish(struct wq_probe *p, bool report)
{
	if (p->done)
		return;
	p->done = true;
	if (report) {
		char text[300] = "";
		bool cc = wq_foreign_cctools_master(p->buf, p->len, text, sizeof text);
		p->cb(p->arg, cc, cc ? text : "");
	}
	uv_close((uv_handle_t *)&p->timer, on_closed);
	if (!uv_is_closing((uv_handle_t *)&p->tcp))
		uv_close((uv_handle_t *)&p->tcp, on_closed);
}

static void on_timer(uv_timer_t *t)
{
	finish(t->data, true);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct wq_probe *p = h->data;
	*buf = uv_buf_init(p->buf + p->len, (unsigned)(WQ_FOREIGN_PROBE_MAX - p->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void)buf;
	struct wq_probe *p = s->data;
	if (n > 0)
		p->len += (size_t)n;
	if (n < 0 || p->len >= WQ_FOREIGN_PROBE_MAX)
		finish(p, true);
}

static void on_written(uv_write_t *req, int status)
{
	(void)req;
	(void)status; /* a failed write shows as an end of reading */
}

static void on_connect(uv_connect_t *req, int status)
{
	struct wq_probe *p = req->data;
	if (p->done)
		return;
	if (status < 0) {
		finish(p, true);
		return;
	}
	uv_buf_t b = uv_buf_init((char *)WQ_FOREIGN_CCTOOLS_PROBE,
	                         (unsigned)strlen(WQ_FOREIGN_CCTOOLS_PROBE));
	if (uv_write(&p->wreq, (uv_stream_t *)&p->tcp, &b, 1, on_written) < 0 ||
	    uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read) < 0)
		finish(p, true);
}

struct wq_probe *wq_probe_start(uv_loop_t *loop, const struct sockaddr *addr, uint64_t timeout_ms,
                                wq_probe_cb cb, void *arg)
{
	struct wq_probe *p = xcalloc(1, sizeof *p);
	p->cb = cb;
	p->arg = arg;
	uv_tcp_init(loop, &p->tcp);
	uv_timer_init(loop, &p->timer);
	p->open_handles = 2;
	p->tcp.data = p;
	p->timer.data = p;
	p->creq.data = p;
	uv_timer_start(&p->timer, on_timer, timeout_ms, 0);
	if (uv_tcp_connect(&p->creq, &p->tcp, addr, on_connect) < 0)
		uv_close((uv_handle_t *)&p->tcp, on_closed); /* the timer reports */
	return p;
}

void wq_probe_cancel(struct wq_probe *p)
{
	if (p)
		finish(p, false);
}
