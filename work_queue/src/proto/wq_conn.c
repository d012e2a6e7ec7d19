/* wq_conn.c: a Work Queue connection on one libuv TCP stream. Bytes from the socket go through
 * conn_bytes_in() to the frame reader, frames out go through conn_bytes_out(), so a TLS filter can
 * sit between them; everything else (keepalive, flow control, violations, the close sequence) is
 * driven by libuv callbacks and never blocks the loop. */
#include "wq_conn.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "htc_error.h"
#include "timeutil.h"
#include "wq_foreign.h"
#include "xalloc.h"
#include "banned.h"

#define READ_BUFFER_SIZE (64 * 1024) /* first size of the read buffer ... */
#define READ_BUFFER_MAX  (1u << 20)  /* ... doubled up to this while reads fill it */
#define DATA_POOL_LIMIT  32          /* idle zero-copy DATA buffers kept (8 MiB) */
#define WQ_TEXT_SEND_MAX 1024        /* error texts are sent truncated to this many bytes */
#define LOG_RATE_LINES   10          /* violation lines per second per process */
#define CORK_FRAME_MAX   (16 * 1024) /* writes up to this size wait for the end of the iteration */
#define CORK_CAP         (64 * 1024) /* ... gathered into one buffer of at most this many bytes */
#define CORK_FIRST       2048        /* first size of that buffer */

enum conn_state {
	ST_OPEN,    /* frames flow */
	ST_CLOSING, /* last frame queued, half-close and linger under way; input discarded */
	ST_CLOSED,  /* uv_close called on every handle */
	ST_FINISHED /* every handle closed; closed callback done */
};

/* One queued write: the request and the bytes it sends, in one allocation. */
struct wreq {
	uv_write_t req;
	struct wq_conn *c;
	size_t size;
	size_t cap;             /* bytes allocated after the header of the struct */
	struct wreq *next_free; /* in the pool of DATA buffers */
	bool pooled;            /* a DATA buffer of WQ_MAX_DATA bytes: back to the pool */
	uint8_t bytes[];
};

struct wq_conn {
	uv_tcp_t *tcp;
	uv_timer_t ka_timer;  /* keepalive */
	uv_timer_t aux_timer; /* OPEN: deferred resume of reading; CLOSING: linger */
	uv_shutdown_t shutdown_req;
	int handles_open;
	char *label;
	struct wq_conn_callbacks cb;
	void *user;
	enum conn_state state;
	int deleted; /* the user called wq_conn_delete: no more callbacks */
	int busy;    /* depth of user callbacks under way */
	enum wq_conn_end why;
	char *why_text;

	struct wq_frame_reader *reader;
	size_t msg_limit;
	uint8_t *rbuf;
	size_t rcap;      /* size of rbuf */
	int rgrow;        /* the last read filled rbuf: double it at the next allocation */
	uint8_t *pending; /* frames read but not delivered while paused */
	size_t pending_len, pending_off;
	int paused, reading, check_first;

	size_t queued; /* bytes queued (gathered or handed to uv_write) and not yet written */
	int blocked;
	/* Small writes of one loop iteration, gathered and written at once (one write(2), one
	 * wakeup of the peer) by the check handle (after the poll phase) or the prepare handle
	 * (before the loop blocks), whichever runs first. */
	struct wreq *cork;
	size_t cork_cap;
	struct wreq *spare; /* a written gathering buffer of CORK_FIRST bytes, for the next one */
	uv_prepare_t cork_prepare;
	uv_check_t cork_check;

	uint64_t ka_interval, ka_timeout, last_rx, linger;
	uint64_t rx_bytes; /* socket bytes received, before any filter */
	bool quiet;        /* fatal closes logged at debug level only (wq_conn_set_quiet) */
	int ping_out;
	int64_t ping_seq;

	struct wq_conn_filter filter;
	void *fctx;
	int has_filter;

	const struct htc_clock *clock; /* of the log rate limit; NULL: the monotonic clock */
};

static void final_close(struct wq_conn *c);
static void cork_drop(struct wq_conn *c);
static void fatal_close(struct wq_conn *c, enum wq_conn_end why, const char *code,
                        const char *peer_text, const char *log_text);
static void ka_schedule(struct wq_conn *c);

const char *wq_conn_end_name(enum wq_conn_end why)
{
	switch (why) {
	case WQ_CONN_END_LOCAL: return "local";
	case WQ_CONN_END_EOF: return "eof";
	case WQ_CONN_END_ERROR: return "error";
	case WQ_CONN_END_TIMEOUT: return "timeout";
	case WQ_CONN_END_VIOLATION: return "violation";
	case WQ_CONN_END_REFUSED: return "refused";
	}
	return "unknown";
}

/* ---- logging ------------------------------------------------------------ */

/* Copies S into OUT (SIZE bytes) with control characters written as \xNN. */
static void escape_controls(const char *s, char *out, size_t size)
{
	size_t o = 0;
	for (; *s && o + 5 < size; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = 0;
}

/* The process-wide limit of violation lines: lines logged in the current window and those
 * suppressed, summed up when the window ends (at the next line, or wq_conn_warn_flush). */
static struct {
	uint64_t window_start;
	unsigned lines, suppressed;
} warn_limit;

void wq_conn_warn_flush(const struct htc_clock *clock)
{
	uint64_t now = (uint64_t)(htc_clock_now_us(clock) / 1000);
	if (now - warn_limit.window_start < 1000)
		return;
	if (warn_limit.suppressed)
		warn("... %u more suppressed", warn_limit.suppressed);
	warn_limit.window_start = now;
	warn_limit.lines = 0;
	warn_limit.suppressed = 0;
}

void wq_conn_warn_limited(const struct htc_clock *clock, const char *label, const char *text)
{
	wq_conn_warn_flush(clock);
	if (warn_limit.lines >= LOG_RATE_LINES) {
		warn_limit.suppressed++;
		return;
	}
	warn_limit.lines++;
	char esc[2048];
	escape_controls(text, esc, sizeof esc);
	warn("%s: %s", label, esc);
}

/* ---- handles and the end of a connection --------------------------------- */

static void free_conn(struct wq_conn *c)
{
	if (c->has_filter && c->filter.free)
		c->filter.free(c->fctx);
	wq_frame_reader_delete(c->reader);
	free(c->spare);
	free(c->rbuf);
	free(c->pending);
	free(c->label);
	free(c->why_text);
	free(c->tcp);
	free(c);
}

static void set_why(struct wq_conn *c, enum wq_conn_end why, const char *text)
{
	if (c->why_text)
		return;
	c->why = why;
	c->why_text = xstrdup(text);
}

static void handle_closed(uv_handle_t *h)
{
	struct wq_conn *c = h->data;
	if (--c->handles_open > 0)
		return;
	c->state = ST_FINISHED;
	if (!c->deleted && c->cb.closed) {
		c->busy++;
		c->cb.closed(c, c->why, c->why_text, c->user);
		c->busy--;
	}
	if (c->deleted)
		free_conn(c);
}

static void final_close(struct wq_conn *c)
{
	if (c->state >= ST_CLOSED)
		return;
	set_why(c, WQ_CONN_END_LOCAL, "closed by this side");
	c->state = ST_CLOSED;
	uv_timer_stop(&c->ka_timer);
	uv_timer_stop(&c->aux_timer);
	cork_drop(c);
	uv_close((uv_handle_t *)c->tcp, handle_closed);
	uv_close((uv_handle_t *)&c->ka_timer, handle_closed);
	uv_close((uv_handle_t *)&c->aux_timer, handle_closed);
	uv_close((uv_handle_t *)&c->cork_prepare, handle_closed);
	uv_close((uv_handle_t *)&c->cork_check, handle_closed);
}

/* Ends at once (EOF, socket error, close_now), keeping an earlier reason. */
static void conn_end(struct wq_conn *c, enum wq_conn_end why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void conn_end(struct wq_conn *c, enum wq_conn_end why, const char *fmt, ...)
{
	if (c->state >= ST_CLOSED)
		return;
	if (c->state == ST_OPEN) {
		char text[256];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(text, sizeof text, fmt, ap);
		va_end(ap);
		debug(D_NET, "%s: connection ends: %s", c->label, text);
		set_why(c, why, text);
	}
	final_close(c);
}

/* ---- writing -------------------------------------------------------------- */

static pthread_mutex_t data_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wreq *data_pool;
static size_t data_pool_n;

static void wreq_free(struct wreq *w)
{
	if (w && w->pooled) {
		pthread_mutex_lock(&data_pool_lock);
		if (data_pool_n < DATA_POOL_LIMIT) {
			w->next_free = data_pool;
			data_pool = w;
			data_pool_n++;
			w = NULL;
		}
		pthread_mutex_unlock(&data_pool_lock);
	}
	free(w);
}

static void write_done(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct wq_conn *c = w->c;
	c->queued -= w->size;
	if (!w->pooled && w->cap == CORK_FIRST && !c->spare && c->state < ST_CLOSED)
		c->spare = w; /* the next gathering buffer, without a malloc */
	else
		wreq_free(w);
	if (status < 0) {
		if (c->state <= ST_CLOSING)
			conn_end(c, WQ_CONN_END_ERROR, "write error: %s", uv_strerror(status));
		return;
	}
	if (c->blocked && c->queued < WQ_CONN_QUEUE_LOW) {
		c->blocked = 0;
		if (c->state == ST_OPEN && !c->deleted && c->cb.writable) {
			c->busy++;
			c->cb.writable(c, c->user);
			c->busy--;
		}
	}
}

/* Hands W (filled, counted in c->queued) to libuv; takes W. */
static int write_now(struct wq_conn *c, struct wreq *w)
{
	w->c = c;
	uv_buf_t b = uv_buf_init((char *)w->bytes, (unsigned)w->size);
	int rc = uv_write(&w->req, (uv_stream_t *)c->tcp, &b, 1, write_done);
	if (rc < 0) {
		c->queued -= w->size;
		wreq_free(w);
		conn_end(c, WQ_CONN_END_ERROR, "write error: %s", uv_strerror(rc));
		return rc;
	}
	return 0;
}

static void cork_stop(struct wq_conn *c)
{
	uv_prepare_stop(&c->cork_prepare);
	uv_check_stop(&c->cork_check);
}

/* Writes the gathered bytes, if any. */
static int cork_flush(struct wq_conn *c)
{
	struct wreq *w = c->cork;
	if (!w)
		return 0;
	c->cork = NULL;
	cork_stop(c);
	if (w->size == 0) {
		if (!c->spare && w->cap == CORK_FIRST)
			c->spare = w;
		else
			wreq_free(w);
		return 0;
	}
	return write_now(c, w);
}

/* At the final close: what was gathered is written if the socket takes it at once (as a write
 * made straight away would have been), else dropped like any write still queued. */
static void cork_drop(struct wq_conn *c)
{
	struct wreq *w = c->cork;
	if (!w)
		return;
	c->cork = NULL;
	cork_stop(c);
	if (uv_stream_get_write_queue_size((uv_stream_t *)c->tcp) == 0) {
		uv_buf_t b = uv_buf_init((char *)w->bytes, (unsigned)w->size);
		(void)uv_try_write((uv_stream_t *)c->tcp, &b, 1);
	}
	c->queued -= w->size;
	wreq_free(w);
}

static void cork_prepare_cb(uv_prepare_t *h)
{
	cork_flush(h->data);
}

static void cork_check_cb(uv_check_t *h)
{
	cork_flush(h->data);
}

static struct wreq *wreq_new(size_t size);

/* Starts gathering in a buffer of CAP bytes (the spare one for CORK_FIRST). */
static void cork_open(struct wq_conn *c, size_t cap)
{
	if (cap == CORK_FIRST && c->spare) {
		c->cork = c->spare;
		c->spare = NULL;
	} else {
		c->cork = wreq_new(cap);
	}
	c->cork->size = 0;
	c->cork_cap = cap;
	uv_prepare_start(&c->cork_prepare, cork_prepare_cb);
	uv_check_start(&c->cork_check, cork_check_cb);
}

/* Queues W (filled) on the socket; takes W. A small frame joins the bytes gathered in this loop
 * iteration; a large one is written after them. */
static int submit_write(struct wq_conn *c, struct wreq *w)
{
	c->queued += w->size;
	if (c->queued > WQ_CONN_QUEUE_HIGH)
		c->blocked = 1;
	if (w->size > CORK_FRAME_MAX) {
		int rc = cork_flush(c);
		if (rc < 0) {
			c->queued -= w->size;
			wreq_free(w);
			return rc;
		}
		return write_now(c, w);
	}
	if (c->cork && c->cork->size + w->size > CORK_CAP) {
		int rc = cork_flush(c);
		if (rc < 0) {
			c->queued -= w->size;
			wreq_free(w);
			return rc;
		}
	}
	if (!c->cork) {
		cork_open(c, w->size > CORK_FIRST ? CORK_CAP : CORK_FIRST);
	} else if (c->cork->size + w->size > c->cork_cap) {
		c->cork_cap = CORK_CAP;
		c->cork = xrealloc(c->cork, sizeof *c->cork + c->cork_cap);
		c->cork->cap = CORK_CAP;
	}
	memcpy(c->cork->bytes + c->cork->size, w->bytes, w->size);
	c->cork->size += w->size;
	wreq_free(w);
	return 0;
}

static struct wreq *wreq_new(size_t size)
{
	struct wreq *w = xmalloc(sizeof *w + size);
	w->size = size;
	w->cap = size;
	w->pooled = false;
	return w;
}

int wq_conn_write_raw(struct wq_conn *c, const uint8_t *bytes, size_t len)
{
	if (c->state >= ST_CLOSED)
		return -ENOTCONN;
	if (len == 0)
		return 0;
	struct wreq *w = wreq_new(len);
	memcpy(w->bytes, bytes, len);
	return submit_write(c, w);
}

/* The one place frames leave: straight to the socket, or through the filter. Takes W. */
static int conn_bytes_out(struct wq_conn *c, struct wreq *w)
{
	if (!c->has_filter)
		return submit_write(c, w);
	int rc = c->filter.out(c, w->bytes, w->size, c->fctx);
	wreq_free(w);
	if (rc < 0)
		conn_end(c, WQ_CONN_END_ERROR, "filter: %s", htc_strerror(rc));
	return rc;
}

/* Checks the state and the hard cap for a frame of SIZE bytes. FORCE (the last frame of a close)
 * skips both. */
static int can_queue(struct wq_conn *c, size_t size, int force)
{
	if (force)
		return 0;
	if (c->state != ST_OPEN)
		return -ENOTCONN;
	if (c->queued + size > WQ_CONN_QUEUE_CAP) {
		wq_conn_violation(c, "proto", "peer is not reading (%u MiB waiting to be sent)",
		                  WQ_CONN_QUEUE_CAP >> 20);
		return HTC_ELIMIT;
	}
	return 0;
}

static int send_payload(struct wq_conn *c, const void *payload, size_t len, int force)
{
	if (len < WQ_MIN_MSG)
		return -EINVAL;
	if (len > c->msg_limit)
		return HTC_ETOOBIG;
	int rc = can_queue(c, WQ_FRAME_HEADER_SIZE + len, force);
	if (rc < 0)
		return rc;
	struct wreq *w = wreq_new(WQ_FRAME_HEADER_SIZE + len);
	wq_frame_pack_header(w->bytes, WQ_FRAME_MSG, 0, (uint32_t)len);
	memcpy(w->bytes + WQ_FRAME_HEADER_SIZE, payload, len);
	return conn_bytes_out(c, w);
}

/* The common case of a small message on a plain connection: MSG is encoded straight into the
 * bytes gathered for this loop iteration (no buffer of its own, one encoding). Returns 1 when it
 * was queued, 0 when it did not fit in the room left (*LEN then holds its encoded size), or a
 * negative code. */
static int send_json_corked(struct wq_conn *c, json_t *msg, size_t *len)
{
	if (c->state != ST_OPEN)
		return -ENOTCONN;
	if (!c->cork)
		cork_open(c, CORK_FIRST);
	size_t room = c->cork_cap - c->cork->size;
	if (room <= WQ_FRAME_HEADER_SIZE) {
		*len = json_dumpb(msg, NULL, 0, JSON_COMPACT);
		return *len ? 0 : -EINVAL;
	}
	uint8_t *at = c->cork->bytes + c->cork->size;
	room -= WQ_FRAME_HEADER_SIZE;
	if (room > CORK_FRAME_MAX - WQ_FRAME_HEADER_SIZE)
		room =
		    CORK_FRAME_MAX - WQ_FRAME_HEADER_SIZE; /* larger frames are written at once */
	*len = json_dumpb(msg, (char *)at + WQ_FRAME_HEADER_SIZE, room, JSON_COMPACT);
	if (*len == 0)
		return -EINVAL;
	if (*len > room)
		return 0; /* not written: the bytes past the gathered ones are left as they were */
	if (*len > c->msg_limit)
		return HTC_ETOOBIG;
	int rc = can_queue(c, WQ_FRAME_HEADER_SIZE + *len, 0);
	if (rc < 0)
		return rc;
	wq_frame_pack_header(at, WQ_FRAME_MSG, 0, (uint32_t)*len);
	c->cork->size += WQ_FRAME_HEADER_SIZE + *len;
	c->queued += WQ_FRAME_HEADER_SIZE + *len;
	if (c->queued > WQ_CONN_QUEUE_HIGH)
		c->blocked = 1;
	return 1;
}

static int send_json(struct wq_conn *c, json_t *msg, int force)
{
	if (!json_is_object(msg))
		return -EINVAL;
	size_t len = 0;
	if (!force && !c->has_filter) {
		int rc = send_json_corked(c, msg, &len);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	} else {
		len = json_dumpb(msg, NULL, 0, JSON_COMPACT);
	}
	if (len == 0)
		return -EINVAL;
	if (len > c->msg_limit)
		return HTC_ETOOBIG;
	int rc = can_queue(c, WQ_FRAME_HEADER_SIZE + len, force);
	if (rc < 0)
		return rc;
	struct wreq *w = wreq_new(WQ_FRAME_HEADER_SIZE + len);
	if (json_dumpb(msg, (char *)w->bytes + WQ_FRAME_HEADER_SIZE, len, JSON_COMPACT) != len) {
		free(w);
		return -EINVAL;
	}
	wq_frame_pack_header(w->bytes, WQ_FRAME_MSG, 0, (uint32_t)len);
	return conn_bytes_out(c, w);
}

int wq_conn_send_msg(struct wq_conn *c, json_t *msg)
{
	return send_json(c, msg, 0);
}

int wq_conn_send_msg_bytes(struct wq_conn *c, const void *payload, size_t len)
{
	return send_payload(c, payload, len, 0);
}

int wq_conn_send_data(struct wq_conn *c, uint32_t xfer, const void *bytes, size_t len)
{
	if (xfer == 0 || len < WQ_MIN_DATA || len > WQ_MAX_DATA)
		return -EINVAL;
	int rc = can_queue(c, WQ_FRAME_HEADER_SIZE + len, 0);
	if (rc < 0)
		return rc;
	struct wreq *w = wreq_new(WQ_FRAME_HEADER_SIZE + len);
	wq_frame_pack_header(w->bytes, WQ_FRAME_DATA, xfer, (uint32_t)len);
	memcpy(w->bytes + WQ_FRAME_HEADER_SIZE, bytes, len);
	return conn_bytes_out(c, w);
}

void wq_conn_set_data_pieces(struct wq_conn *c, bool on)
{
	wq_frame_reader_set_data_pieces(c->reader, on);
}

uint8_t *wq_conn_data_buffer_new(void)
{
	pthread_mutex_lock(&data_pool_lock);
	struct wreq *w = data_pool;
	if (w) {
		data_pool = w->next_free;
		data_pool_n--;
	}
	pthread_mutex_unlock(&data_pool_lock);
	if (!w) {
		w = wreq_new(WQ_FRAME_HEADER_SIZE + WQ_MAX_DATA);
		w->pooled = true;
	}
	return w->bytes + WQ_FRAME_HEADER_SIZE;
}

static struct wreq *wreq_of_payload(uint8_t *payload)
{
	return (struct wreq *)(payload - WQ_FRAME_HEADER_SIZE - offsetof(struct wreq, bytes));
}

void wq_conn_data_buffer_free(uint8_t *payload)
{
	if (payload)
		wreq_free(wreq_of_payload(payload));
}

int wq_conn_send_data_buffer(struct wq_conn *c, uint32_t xfer, uint8_t *payload, size_t len)
{
	struct wreq *w = wreq_of_payload(payload);
	int rc = xfer == 0 || len < WQ_MIN_DATA || len > WQ_MAX_DATA ? -EINVAL : 0;
	if (rc == 0)
		rc = can_queue(c, WQ_FRAME_HEADER_SIZE + len, 0);
	if (rc < 0) {
		wreq_free(w);
		return rc;
	}
	w->size = WQ_FRAME_HEADER_SIZE + len;
	wq_frame_pack_header(w->bytes, WQ_FRAME_DATA, xfer, (uint32_t)len);
	return conn_bytes_out(c, w);
}

size_t wq_conn_write_queue_size(const struct wq_conn *c)
{
	return c->queued;
}

int wq_conn_write_blocked(const struct wq_conn *c)
{
	return c->blocked;
}

/* ---- the close sequence ----------------------------------------------------- */

static void linger_expired(uv_timer_t *t)
{
	struct wq_conn *c = t->data;
	debug(D_NET, "%s: linger expired; closing", c->label);
	final_close(c);
}

static void alloc_read(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct wq_conn *c = h->data;
	(void)suggested;
	if (c->rgrow && c->rcap < READ_BUFFER_MAX) {
		/* reads fill the buffer (a bulk transfer): fewer, larger reads */
		free(c->rbuf);
		c->rbuf = NULL;
		c->rcap *= 2;
	}
	c->rgrow = 0;
	if (!c->rbuf) {
		if (!c->rcap)
			c->rcap = READ_BUFFER_SIZE;
		c->rbuf = xmalloc(c->rcap);
	}
	*buf = uv_buf_init((char *)c->rbuf, (unsigned)c->rcap);
}

static void read_done(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void shutdown_done(uv_shutdown_t *req, int status)
{
	struct wq_conn *c = req->data;
	if (c->state != ST_CLOSING)
		return;
	/* Everything is written. Read (and discard) until the peer's EOF so that closing does not
	 * reset the connection before the peer has read our last frame; the linger bounds it. */
	if (status < 0 || uv_read_start((uv_stream_t *)c->tcp, alloc_read, read_done) < 0)
		final_close(c);
	else
		c->reading = 1;
}

/* Stops reading and delivering, half-closes after the queued frames, lingers. */
static void begin_closing(struct wq_conn *c)
{
	c->state = ST_CLOSING;
	if (c->reading)
		uv_read_stop((uv_stream_t *)c->tcp);
	c->reading = 0;
	free(c->pending);
	c->pending = NULL;
	c->pending_len = c->pending_off = 0;
	uv_timer_stop(&c->ka_timer);
	uv_timer_stop(&c->aux_timer);
	if (cork_flush(c) < 0)
		return; /* the write failed: the connection has ended */
	c->shutdown_req.data = c;
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)c->tcp, shutdown_done) < 0) {
		final_close(c);
		return;
	}
	uv_timer_start(&c->aux_timer, linger_expired, c->linger, 0);
}

/* Copies at most WQ_TEXT_SEND_MAX bytes of TEXT, cut at a UTF-8 boundary, as a JSON string. */
static json_t *send_text(const char *text)
{
	size_t n = strlen(text);
	if (n > WQ_TEXT_SEND_MAX) {
		n = WQ_TEXT_SEND_MAX;
		while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--;
	}
	json_t *s = json_stringn(text, n);
	if (!s) {
		/* not valid UTF-8: keep the ASCII */
		char *copy = xstrndup(text, n);
		for (char *p = copy; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
		s = json_string(copy);
		free(copy);
	}
	return s;
}

static void fatal_close(struct wq_conn *c, enum wq_conn_end why, const char *code,
                        const char *peer_text, const char *log_text)
{
	if (c->state != ST_OPEN)
		return;
	if (c->quiet)
		debug(D_WQ, "%s: %s", wq_conn_name(c), log_text);
	else
		wq_conn_warn_limited(c->clock, c->label, log_text);
	set_why(c, why, peer_text);
	json_t *e = json_pack("{s:s, s:s, s:o, s:b}", "m", "error", "code", code, "text",
	                      send_text(peer_text), "fatal", 1);
	c->state = ST_CLOSING; /* refuse any other frame from here on */
	if (e) {
		send_json(c, e, 1);
		json_decref(e);
	}
	if (c->state == ST_CLOSING)
		begin_closing(c);
}

void wq_conn_violation(struct wq_conn *c, const char *code, const char *fmt, ...)
{
	if (c->state != ST_OPEN)
		return;
	char text[WQ_TEXT_SEND_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	char *line = xasprintf("protocol violation: %s", text);
	fatal_close(c, WQ_CONN_END_VIOLATION, code, text, line);
	free(line);
}

void wq_conn_refuse(struct wq_conn *c, const char *code, const char *peer_text,
                    const char *log_text)
{
	fatal_close(c, WQ_CONN_END_REFUSED, code, peer_text, log_text);
}

int wq_conn_close(struct wq_conn *c, json_t *last)
{
	if (c->state != ST_OPEN)
		return -ENOTCONN;
	if (last) {
		int rc = send_json(c, last, 0);
		if (rc < 0 && rc != -ENOTCONN)
			return rc;
		if (c->state != ST_OPEN)
			return 0; /* the send itself ended the connection */
	}
	set_why(c, WQ_CONN_END_LOCAL, "closed by this side");
	begin_closing(c);
	return 0;
}

void wq_conn_filter_fail(struct wq_conn *c, const char *text)
{
	if (c->state != ST_OPEN)
		return;
	wq_conn_warn_limited(c->clock, c->label, text);
	set_why(c, WQ_CONN_END_ERROR, text);
	begin_closing(c);
}

void wq_conn_set_quiet(struct wq_conn *c, bool quiet)
{
	c->quiet = quiet;
}

uint64_t wq_conn_bytes_received(const struct wq_conn *c)
{
	return c->rx_bytes;
}

void wq_conn_close_now(struct wq_conn *c)
{
	conn_end(c, WQ_CONN_END_LOCAL, "closed by this side");
}

/* ---- reading ---------------------------------------------------------------- */

static void handle_ping_pong(struct wq_conn *c, json_t *msg, const char *name)
{
	json_t *seq = json_object_get(msg, "seq");
	json_int_t v = json_is_integer(seq) ? json_integer_value(seq) : -1;
	if (v < 0 || v > (((json_int_t)1 << 53) - 1)) {
		wq_conn_violation(c, "proto",
		                  "message \"%s\": \"seq\" must be an integer from 0 to 2^53-1",
		                  name);
		return;
	}
	if (!strcmp(name, "ping")) {
		json_t *pong = json_pack("{s:s, s:I}", "m", "pong", "seq", v);
		if (pong) {
			wq_conn_send_msg(c, pong);
			json_decref(pong);
		}
		return;
	}
	if (c->ping_out && v == c->ping_seq) {
		c->ping_out = 0;
		ka_schedule(c);
	} else {
		debug(D_NET, "%s: ignoring pong %lld (outstanding: %s %lld)", c->label,
		      (long long)v, c->ping_out ? "yes" : "no", (long long)c->ping_seq);
	}
}

static void deliver_msg(struct wq_conn *c, const struct wq_frame *f)
{
	json_error_t err;
	json_t *msg = json_loadb((const char *)f->payload, f->length, JSON_REJECT_DUPLICATES, &err);
	if (!msg) {
		wq_conn_violation(c, "proto", "malformed message: %s at byte %d", err.text,
		                  err.position);
		return;
	}
	json_t *m = json_object_get(msg, "m");
	if (!json_is_object(msg)) {
		wq_conn_violation(c, "proto", "malformed message: not a JSON object");
	} else if (!json_is_string(m)) {
		wq_conn_violation(c, "proto", "malformed message: no string \"m\"");
	} else {
		const char *name = json_string_value(m);
		if (c->ka_interval && (!strcmp(name, "ping") || !strcmp(name, "pong"))) {
			handle_ping_pong(c, msg, name);
		} else if (!c->deleted && c->cb.message) {
			c->cb.message(c, msg, name, f->payload, f->length, c->user);
		}
	}
	json_decref(msg);
}

/* Feeds LEN bytes to the frame reader and delivers the frames, until the bytes run out or the
 * connection pauses or ends. Returns the number of bytes consumed. */
static size_t process(struct wq_conn *c, const uint8_t *data, size_t len)
{
	size_t off = 0;
	c->busy++;
	while (off < len && c->state == ST_OPEN && !c->paused) {
		size_t used;
		struct wq_frame f;
		int rc = wq_frame_reader_feed(c->reader, data + off, len - off, &used, &f);
		off += used;
		if (rc < 0) {
			const char *text = wq_frame_reader_error(c->reader);
			wq_conn_violation(c, wq_frame_error_code(rc), "%s", text);
			break;
		}
		if (rc == 0)
			continue;
		if (f.last)
			c->last_rx = uv_now(c->tcp->loop);
		if (f.type == WQ_FRAME_MSG)
			deliver_msg(c, &f);
		else if (!c->deleted && c->cb.data)
			c->cb.data(c, f.xfer, f.payload, f.piece, c->user);
	}
	c->busy--;
	return off;
}

static void pending_append(struct wq_conn *c, const uint8_t *data, size_t len)
{
	size_t keep = c->pending_len - c->pending_off;
	uint8_t *p = xmalloc(keep + len);
	if (keep)
		memcpy(p, c->pending + c->pending_off, keep);
	memcpy(p + keep, data, len);
	free(c->pending);
	c->pending = p;
	c->pending_len = keep + len;
	c->pending_off = 0;
}

void wq_conn_input(struct wq_conn *c, const uint8_t *bytes, size_t len)
{
	if (c->state != ST_OPEN || len == 0)
		return;
	if (c->check_first) {
		char text[WQ_FRAME_TEXT_SIZE + 192]; /* room for the line about a CCTools worker */
		switch (wq_frame_classify_start(bytes, len, text, sizeof text)) {
		case WQ_START_TLS:
			wq_conn_refuse(
			    c, "tls_unexpected",
			    "this master does not use TLS: start the worker without --ssl",
			    "refused: TLS connection to a master without TLS");
			return;
		case WQ_START_OTHER:
			if (wq_foreign_cctools_worker(bytes, len, text, sizeof text)) {
				/* it stops coming back on this line, and ignores the error frame */
				wq_conn_write_raw(c, (const uint8_t *)WQ_FOREIGN_CCTOOLS_EXIT,
				                  strlen(WQ_FOREIGN_CCTOOLS_EXIT));
				wq_conn_refuse(c, "cctools", text, text);
				return;
			}
			wq_conn_violation(c, "proto", "%s", text);
			return;
		default: c->check_first = 0; break;
		}
	}
	if (c->paused || c->pending) {
		pending_append(c, bytes, len);
		return;
	}
	size_t used = process(c, bytes, len);
	if (used < len && c->state == ST_OPEN)
		pending_append(c, bytes + used, len - used);
}

/* The one place socket bytes come in: to the frame reader, or through the filter. */
static void conn_bytes_in(struct wq_conn *c, const uint8_t *bytes, size_t len)
{
	if (!c->has_filter) {
		wq_conn_input(c, bytes, len);
		return;
	}
	int rc = c->filter.in(c, bytes, len, c->fctx);
	if (rc < 0)
		conn_end(c, WQ_CONN_END_ERROR, "filter: %s", htc_strerror(rc));
}

static void read_done(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct wq_conn *c = s->data;
	(void)buf;
	if (nread == 0)
		return;
	if (c->state == ST_CLOSING) {
		/* discarding until EOF after our half-close */
		if (nread < 0)
			final_close(c);
		return;
	}
	if (c->state != ST_OPEN)
		return;
	if (nread == UV_EOF) {
		conn_end(c, WQ_CONN_END_EOF, "connection closed by the peer");
		return;
	}
	if (nread < 0) {
		conn_end(c, WQ_CONN_END_ERROR, "read error: %s", uv_strerror((int)nread));
		return;
	}
	if ((size_t)nread == c->rcap)
		c->rgrow = 1;
	c->rx_bytes += (uint64_t)nread;
	conn_bytes_in(c, c->rbuf, (size_t)nread);
}

static void start_reading(struct wq_conn *c)
{
	if (c->reading || c->state != ST_OPEN || c->paused)
		return;
	int rc = uv_read_start((uv_stream_t *)c->tcp, alloc_read, read_done);
	if (rc < 0) {
		conn_end(c, WQ_CONN_END_ERROR, "read error: %s", uv_strerror(rc));
		return;
	}
	c->reading = 1;
}

/* Delivers frames held while paused, from the loop. */
static void resume_pending(uv_timer_t *t)
{
	struct wq_conn *c = t->data;
	if (c->state != ST_OPEN || c->paused)
		return;
	if (c->pending) {
		c->pending_off +=
		    process(c, c->pending + c->pending_off, c->pending_len - c->pending_off);
		if (c->state != ST_OPEN || c->paused)
			return;
		free(c->pending);
		c->pending = NULL;
		c->pending_len = c->pending_off = 0;
	}
	start_reading(c);
}

void wq_conn_pause_reading(struct wq_conn *c)
{
	if (c->state != ST_OPEN || c->paused)
		return;
	c->paused = 1;
	uv_timer_stop(&c->aux_timer);
	if (c->reading)
		uv_read_stop((uv_stream_t *)c->tcp);
	c->reading = 0;
}

void wq_conn_resume_reading(struct wq_conn *c)
{
	if (c->state != ST_OPEN || !c->paused)
		return;
	c->paused = 0;
	if (c->pending)
		uv_timer_start(&c->aux_timer, resume_pending, 0, 0);
	else
		start_reading(c);
}

/* ---- keepalive -------------------------------------------------------------- */

static void ka_fire(uv_timer_t *t)
{
	struct wq_conn *c = t->data;
	if (c->state != ST_OPEN || !c->ka_interval)
		return;
	uint64_t idle = uv_now(c->tcp->loop) - c->last_rx;
	if (idle >= c->ka_timeout) {
		char text[128];
		snprintf(text, sizeof text, "no complete frame received for %g s",
		         (double)c->ka_timeout / 1000.0);
		fatal_close(c, WQ_CONN_END_TIMEOUT, "timeout", text, text);
		return;
	}
	if (!c->ping_out && idle >= c->ka_interval) {
		json_t *ping =
		    json_pack("{s:s, s:I}", "m", "ping", "seq", (json_int_t)(c->ping_seq + 1));
		int rc = ping ? wq_conn_send_msg(c, ping) : -ENOMEM;
		json_decref(ping);
		if (rc < 0)
			return;
		c->ping_seq++;
		c->ping_out = 1;
	}
	ka_schedule(c);
}

static void ka_schedule(struct wq_conn *c)
{
	if (c->state != ST_OPEN || !c->ka_interval)
		return;
	uint64_t now = uv_now(c->tcp->loop);
	uint64_t idle = now - c->last_rx;
	uint64_t next = idle < c->ka_timeout ? c->ka_timeout - idle : 0;
	if (!c->ping_out) {
		uint64_t to_ping = idle < c->ka_interval ? c->ka_interval - idle : 0;
		if (to_ping < next)
			next = to_ping;
	}
	uv_timer_start(&c->ka_timer, ka_fire, next, 0);
}

int wq_conn_set_keepalive(struct wq_conn *c, uint64_t interval_ms, uint64_t timeout_ms)
{
	if (interval_ms && timeout_ms < interval_ms)
		return -EINVAL;
	c->ka_interval = interval_ms;
	c->ka_timeout = timeout_ms;
	c->ping_out = 0;
	if (interval_ms)
		ka_schedule(c);
	else
		uv_timer_stop(&c->ka_timer);
	return 0;
}

/* ---- set-up and settings ---------------------------------------------------- */

struct wq_conn *wq_conn_create(uv_tcp_t *tcp, const char *label, const struct wq_conn_callbacks *cb,
                               void *user)
{
	struct wq_conn *c = xcalloc(1, sizeof *c);
	uv_loop_t *loop = tcp->loop;
	c->tcp = tcp;
	tcp->data = c;
	c->label = xstrdup(label ? label : "peer");
	if (cb)
		c->cb = *cb;
	c->user = user;
	c->msg_limit = WQ_MAX_MSG_PREAUTH;
	c->reader = wq_frame_reader_create(c->msg_limit);
	c->linger = WQ_CONN_LINGER_MS;
	c->state = ST_OPEN;
	uv_timer_init(loop, &c->ka_timer);
	uv_timer_init(loop, &c->aux_timer);
	uv_prepare_init(loop, &c->cork_prepare);
	uv_check_init(loop, &c->cork_check);
	c->ka_timer.data = c;
	c->aux_timer.data = c;
	c->cork_prepare.data = c;
	c->cork_check.data = c;
	c->handles_open = 5;
	c->last_rx = uv_now(loop);
	int rc = uv_tcp_nodelay(tcp, 1);
	if (rc == 0)
		rc = uv_tcp_keepalive(tcp, 1, 60);
	if (rc < 0)
		debug(D_NET, "%s: socket options: %s", c->label, uv_strerror(rc));
	start_reading(c);
	if (c->state != ST_OPEN) {
		c->deleted = 1; /* freed when the handles are closed */
		errno = c->why == WQ_CONN_END_ERROR ? ENOTCONN : EINVAL;
		return NULL;
	}
	debug(D_NET, "%s: connection open", c->label);
	return c;
}

void wq_conn_delete(struct wq_conn *c)
{
	if (!c)
		return;
	c->deleted = 1;
	if (c->state == ST_OPEN)
		final_close(c);
	else if (c->state == ST_FINISHED && c->busy == 0)
		free_conn(c);
}

void wq_conn_set_label(struct wq_conn *c, const char *label)
{
	free(c->label);
	c->label = xstrdup(label ? label : "peer");
}

const char *wq_conn_label(const struct wq_conn *c)
{
	return c->label;
}

const char *wq_conn_name(const struct wq_conn *c)
{
	return c->label + (strncmp(c->label, "wq: ", 4) ? 0 : 4);
}

int wq_conn_set_msg_limit(struct wq_conn *c, size_t limit)
{
	int rc = wq_frame_reader_set_msg_limit(c->reader, limit);
	if (rc == 0)
		c->msg_limit = limit;
	return rc;
}

void wq_conn_set_linger(struct wq_conn *c, uint64_t linger_ms)
{
	c->linger = linger_ms;
}

void wq_conn_set_clock(struct wq_conn *c, const struct htc_clock *clock)
{
	c->clock = clock;
}

void wq_conn_check_first_bytes(struct wq_conn *c)
{
	c->check_first = 1;
}

void wq_conn_set_filter(struct wq_conn *c, const struct wq_conn_filter *f, void *fctx)
{
	if (c->has_filter && c->filter.free)
		c->filter.free(c->fctx);
	c->has_filter = f != NULL;
	if (f)
		c->filter = *f;
	c->fctx = fctx;
}
