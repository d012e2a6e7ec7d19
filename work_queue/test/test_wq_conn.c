/* test_wq_conn.c: unit tests for the Work Queue connection (wq_conn.h) over real loopback TCP in
 * one libuv loop: messages both ways, a 64 MiB DATA stream under flow control, violations seen by
 * a raw socket peer, keepalive and its timeout, a peer that never reads, small writes gathered
 * per loop iteration, and closing or deleting a connection from inside its own callbacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <jansson.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "wq_conn.h"
#include "wq_frame.h"
#include "path.h"
#include "timeutil.h"
#include "ts_clock.h"
#include "ts_loop.h"
#include "ts_net.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

/* ---- a loop and connected socket pairs (ts_net.h), run through ts_loop.h ---------- */

struct env {
	uv_loop_t loop;
};

static void env_init(struct env *e)
{
	memset(e, 0, sizeof *e);
	assert_int_equal(uv_loop_init(&e->loop), 0);
}

/* Makes a connected pair: *CLIENT connected to *SERVER (accepted), both malloc'd. */
static void env_pair(struct env *e, uv_tcp_t **client, uv_tcp_t **server)
{
	ts_tcp_pair(&e->loop, client, server);
}

static void env_done(struct env *e)
{
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

/* ---- a wq_conn side that records what happens ------------------------------- */

struct side {
	struct wq_conn *c;
	int nmsg;
	char name[64];
	json_t *last;
	char raw[256];
	size_t raw_len;
	uint64_t data_bytes;
	uint64_t nframes;
	int data_bad;
	int closed;
	enum wq_conn_end why;
	char text[1100];
	int writable;
	/* behaviours */
	int delete_on_msg, close_on_msg, delete_on_closed;
	int violate_on_name; /* raise a violation for a message named "frobnicate" */
	int pause_every;     /* pause reading after every N-th DATA frame, resume 1 ms later */
	int pieces;          /* DATA comes in pieces (wq_conn_set_data_pieces): checked by byte */
	uv_timer_t *resume_timer;
	struct side *peer;
};

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	struct side *s = user;
	assert_ptr_equal(c, s->c);
	assert_int_equal(s->closed, 0);
	s->nmsg++;
	snprintf(s->name, sizeof s->name, "%s", name);
	json_decref(s->last);
	s->last = json_incref(msg);
	s->raw_len = len < sizeof s->raw ? len : sizeof s->raw;
	memcpy(s->raw, raw, s->raw_len);
	if (s->violate_on_name && !strcmp(name, "frobnicate"))
		wq_conn_violation(c, "proto", "unknown message \"%s\"", name);
	if (s->close_on_msg)
		wq_conn_close_now(c);
	if (s->delete_on_msg) {
		wq_conn_delete(c);
		s->c = NULL;
	}
}

static void resume_cb(uv_timer_t *t)
{
	struct side *s = t->data;
	if (s->c)
		wq_conn_resume_reading(s->c);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *bytes, size_t len, void *user)
{
	struct side *s = user;
	assert_int_equal(s->closed, 0);
	if (s->pieces) {
		/* frame K is K's 8 bytes, zeros, and (uint8_t)K last: check every byte */
		for (size_t j = 0; j < len; j++) {
			uint64_t g = s->data_bytes + j, k = g / WQ_MAX_DATA, off = g % WQ_MAX_DATA;
			uint8_t want = off < 8                  ? ((const uint8_t *)&k)[off]
			               : off == WQ_MAX_DATA - 1 ? (uint8_t)k
			                                        : 0;
			if (bytes[j] != want || xfer != 1) {
				s->data_bad++;
				break;
			}
		}
		s->data_bytes += len;
		s->nframes = s->data_bytes / WQ_MAX_DATA;
		return;
	}
	/* every chunk starts with its index, so order and completeness are checked */
	uint64_t idx;
	memcpy(&idx, bytes, sizeof idx);
	if (xfer != 1 || idx != s->nframes || bytes[len - 1] != (uint8_t)idx)
		s->data_bad++;
	s->nframes++;
	s->data_bytes += len;
	if (s->pause_every && s->nframes % (uint64_t)s->pause_every == 0) {
		wq_conn_pause_reading(c);
		uv_timer_start(s->resume_timer, resume_cb, 1, 0);
	}
}

static void on_writable(struct wq_conn *c, void *user)
{
	struct side *s = user;
	(void)c;
	s->writable++;
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	struct side *s = user;
	assert_int_equal(s->closed, 0);
	s->closed++;
	s->why = why;
	snprintf(s->text, sizeof s->text, "%s", text);
	if (s->delete_on_closed) {
		wq_conn_delete(c);
		s->c = NULL;
	}
}

static const struct wq_conn_callbacks callbacks = {on_message, on_data, on_writable, on_closed};

static void side_open(struct side *s, uv_tcp_t *tcp, const char *label)
{
	s->c = wq_conn_create(tcp, label, &callbacks, s);
	assert_non_null(s->c);
}

static void side_free(struct side *s)
{
	if (s->c)
		wq_conn_delete(s->c);
	s->c = NULL;
	json_decref(s->last);
	s->last = NULL;
}

static bool is_closed(void *arg)
{
	return ((struct side *)arg)->closed > 0;
}

static bool has_msg(void *arg)
{
	return ((struct side *)arg)->nmsg > 0;
}

/* ---- a raw socket peer ------------------------------------------------------ */

struct raw {
	uv_tcp_t *tcp;
	uint8_t *buf;
	size_t len, cap;
	int eof;
};

static void raw_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	(void)h;
	b->base = xmalloc(suggested);
	b->len = suggested;
}

static void raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct raw *r = s->data;
	if (n < 0) {
		r->eof = 1;
		uv_read_stop(s);
	} else if (n > 0) {
		if (r->len + (size_t)n > r->cap) {
			r->cap = (r->len + (size_t)n) * 2;
			r->buf = xrealloc(r->buf, r->cap);
		}
		memcpy(r->buf + r->len, b->base, (size_t)n);
		r->len += (size_t)n;
	}
	free(b->base);
}

static void raw_start(struct raw *r, uv_tcp_t *tcp, int reading)
{
	memset(r, 0, sizeof *r);
	r->tcp = tcp;
	tcp->data = r;
	if (reading)
		assert_int_equal(uv_read_start((uv_stream_t *)tcp, raw_alloc, raw_read), 0);
}

static void raw_written(uv_write_t *req, int status)
{
	(void)status;
	free(req);
}

static void raw_write(struct raw *r, const void *bytes, size_t n)
{
	uv_write_t *req = xmalloc(sizeof *req + n);
	memcpy(req + 1, bytes, n);
	uv_buf_t b = uv_buf_init((char *)(req + 1), (unsigned)n);
	assert_int_equal(uv_write(req, (uv_stream_t *)r->tcp, &b, 1, raw_written), 0);
}

static void raw_write_msg(struct raw *r, const char *json)
{
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(h, WQ_FRAME_MSG, 0, (uint32_t)strlen(json));
	raw_write(r, h, sizeof h);
	raw_write(r, json, strlen(json));
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void raw_close(struct raw *r)
{
	uv_close((uv_handle_t *)r->tcp, free_handle);
	free(r->buf);
	r->buf = NULL;
}

static bool raw_eof(void *arg)
{
	return ((struct raw *)arg)->eof;
}

/* Decodes the frames the raw peer received; returns how many, the last MSG decoded in *LAST
 * (caller decrefs), the number of messages named NAME in *COUNT, and, when ALL is not NULL,
 * every message in order appended to the array ALL. */
static int raw_frames_all(struct raw *r, json_t **last, const char *name, int *count, json_t *all)
{
	struct wq_frame_reader *fr = wq_frame_reader_create(WQ_MAX_MSG);
	size_t off = 0;
	int n = 0;
	*last = NULL;
	if (count)
		*count = 0;
	while (off < r->len) {
		size_t used;
		struct wq_frame f;
		int rc = wq_frame_reader_feed(fr, r->buf + off, r->len - off, &used, &f);
		assert_true(rc >= 0);
		off += used;
		if (rc == 1) {
			n++;
			assert_int_equal(f.type, WQ_FRAME_MSG);
			json_decref(*last);
			*last = json_loadb((const char *)f.payload, f.length, 0, NULL);
			assert_non_null(*last);
			if (all)
				json_array_append(all, *last);
			const char *m = json_string_value(json_object_get(*last, "m"));
			if (count && name && m && !strcmp(m, name))
				(*count)++;
		}
	}
	wq_frame_reader_delete(fr);
	return n;
}

static int raw_frames(struct raw *r, json_t **last, const char *name, int *count)
{
	return raw_frames_all(r, last, name, count, NULL);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_messages(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0}, sb = {0};
	side_open(&sa, a, "test: a");
	side_open(&sb, b, "test: b");

	json_t *hello = json_pack("{s:s, s:[i,i], s:s}", "m", "hello", "proto", 1, 0, "x", "é");
	assert_int_equal(wq_conn_send_msg(sa.c, hello), 0);
	assert_true(ts_run_until(&e.loop, has_msg, &sb, 2000));
	assert_string_equal(sb.name, "hello");
	const char *want = "{\"m\":\"hello\",\"proto\":[1,0],\"x\":\"é\"}";
	assert_int_equal(sb.raw_len, strlen(want));
	assert_memory_equal(sb.raw, want, strlen(want));
	assert_true(json_equal(sb.last, hello));
	json_decref(hello);

	/* the other way, with pre-encoded bytes */
	const char *reply = "{\"m\":\"hello\",\"role\":\"master\"}";
	assert_int_equal(wq_conn_send_msg_bytes(sb.c, reply, strlen(reply)), 0);
	assert_true(ts_run_until(&e.loop, has_msg, &sa, 2000));
	assert_memory_equal(sa.raw, reply, strlen(reply));

	/* the limit before authentication: too big is refused and nothing is sent */
	char *big = xmalloc(20000);
	memset(big, 'a', 19999);
	big[19999] = 0;
	json_t *m = json_pack("{s:s, s:s}", "m", "task", "command", big);
	assert_int_equal(wq_conn_send_msg(sa.c, m), HTC_ETOOBIG);
	assert_int_equal(wq_conn_write_queue_size(sa.c), 0);
	assert_int_equal(wq_conn_send_msg_bytes(sa.c, "{", 1), -EINVAL);
	assert_int_equal(wq_conn_send_data(sa.c, 0, "x", 1), -EINVAL);
	assert_int_equal(wq_conn_send_data(sa.c, 1, "x", 0), -EINVAL);
	assert_int_equal(wq_conn_set_msg_limit(sa.c, WQ_MAX_MSG), 0);
	assert_int_equal(wq_conn_set_msg_limit(sb.c, WQ_MAX_MSG), 0);
	assert_int_equal(wq_conn_set_msg_limit(sb.c, WQ_MAX_MSG + 1), -EINVAL);
	sb.nmsg = 0;
	assert_int_equal(wq_conn_send_msg(sa.c, m), 0);
	assert_true(ts_run_until(&e.loop, has_msg, &sb, 2000));
	assert_string_equal(sb.name, "task");
	assert_string_equal(json_string_value(json_object_get(sb.last, "command")), big);
	json_decref(m);
	free(big);

	/* clean close with a final bye: the peer gets the bye, then EOF */
	sb.nmsg = 0;
	json_t *bye = json_pack("{s:s, s:s}", "m", "bye", "reason", "done");
	assert_int_equal(wq_conn_close(sa.c, bye), 0);
	assert_int_equal(wq_conn_close(sa.c, bye), -ENOTCONN);
	assert_int_equal(wq_conn_send_msg(sa.c, bye), -ENOTCONN);
	json_decref(bye);
	assert_true(ts_run_until(&e.loop, is_closed, &sb, 2000));
	assert_string_equal(sb.name, "bye");
	assert_int_equal(sb.why, WQ_CONN_END_EOF);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	assert_int_equal(sa.why, WQ_CONN_END_LOCAL);
	ts_run_for(&e.loop, 20);
	assert_int_equal(sa.closed, 1);
	assert_int_equal(sb.closed, 1);
	side_free(&sa);
	side_free(&sb);
	env_done(&e);
}

/* ---- 64 MiB of DATA under flow control ---- */

#define STREAM_TOTAL (64u << 20)

struct sender {
	struct side s;
	uint64_t sent, chunks;
	size_t max_queue;
	int send_errors;
	int zero_copy; /* every other chunk through wq_conn_send_data_buffer */
	uint8_t chunk[WQ_MAX_DATA];
};

static void pump(struct sender *p)
{
	while (p->sent < STREAM_TOTAL && !wq_conn_write_blocked(p->s.c)) {
		memcpy(p->chunk, &p->chunks, sizeof p->chunks);
		p->chunk[WQ_MAX_DATA - 1] = (uint8_t)p->chunks;
		int rc;
		if (p->zero_copy && p->chunks % 2) {
			uint8_t *b = wq_conn_data_buffer_new();
			memcpy(b, p->chunk, WQ_MAX_DATA);
			rc = wq_conn_send_data_buffer(p->s.c, 1, b, WQ_MAX_DATA);
		} else {
			rc = wq_conn_send_data(p->s.c, 1, p->chunk, WQ_MAX_DATA);
		}
		if (rc != 0) {
			p->send_errors++;
			return;
		}
		p->chunks++;
		p->sent += WQ_MAX_DATA;
		size_t q = wq_conn_write_queue_size(p->s.c);
		if (q > p->max_queue)
			p->max_queue = q;
	}
}

static void sender_writable(struct wq_conn *c, void *user)
{
	struct sender *p = user;
	on_writable(c, &p->s);
	pump(p);
}

static bool got_all(void *arg)
{
	struct side *s = arg;
	return s->data_bytes >= STREAM_TOTAL || s->data_bad || s->closed;
}

/* PIECES: zero-copy buffers for every other chunk on the sender, DATA pieces on the receiver. */
static void stream(int pieces)
{
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct sender *p = xcalloc(1, sizeof *p);
	struct side sb = {0};
	struct wq_conn_callbacks scb = callbacks;
	scb.writable = sender_writable;
	/* the struct side is the first member, so the common callbacks work on it too */
	p->s.c = wq_conn_create(a, "test: sender", &scb, p);
	assert_non_null(p->s.c);
	p->zero_copy = pieces;
	side_open(&sb, b, "test: receiver");
	sb.pieces = pieces;
	if (pieces)
		wq_conn_set_data_pieces(sb.c, true);
	uv_timer_t resume;
	uv_timer_init(&e.loop, &resume);
	resume.data = &sb;
	sb.resume_timer = &resume;
	sb.pause_every = 37; /* receive backpressure on the way */
	pump(p);
	assert_true(wq_conn_write_blocked(p->s.c)); /* 64 MiB do not fit the socket buffers */
	assert_true(ts_run_until(&e.loop, got_all, &sb, 20000));
	assert_int_equal(sb.data_bad, 0);
	assert_int_equal(sb.closed, 0);
	assert_int_equal(sb.data_bytes, STREAM_TOTAL);
	assert_int_equal(sb.nframes, STREAM_TOTAL / WQ_MAX_DATA);
	assert_int_equal(p->send_errors, 0);
	assert_true(p->s.writable > 0);
	/* bounded: the sender stops above 4 MiB, so the queue never nears the 16 MiB cap */
	assert_true(p->max_queue <= WQ_CONN_QUEUE_HIGH + WQ_FRAME_HEADER_SIZE + WQ_MAX_DATA);
	assert_true(p->max_queue < WQ_CONN_QUEUE_CAP);
	print_message("64 MiB streamed: max write queue %zu bytes, %d writable callbacks\n",
	              p->max_queue, p->s.writable);
	uv_close((uv_handle_t *)&resume, NULL);
	wq_conn_close_now(p->s.c);
	assert_true(ts_run_until(&e.loop, is_closed, &sb, 2000));
	assert_int_equal(sb.why, WQ_CONN_END_EOF);
	assert_int_equal(p->s.closed, 1);
	assert_int_equal(p->s.why, WQ_CONN_END_LOCAL);
	side_free(&p->s);
	side_free(&sb);
	env_done(&e);
	free(p);
}

static void test_stream(void **state)
{
	(void)state;
	stream(0);
}

static void test_stream_pieces(void **state)
{
	(void)state;
	stream(1);
	/* a buffer not sent is given back (no leak under ASan) */
	uint8_t *b = wq_conn_data_buffer_new();
	wq_conn_data_buffer_free(b);
	wq_conn_data_buffer_free(NULL);
}

/* ---- violations seen from a raw peer ---- */

/* The raw peer sends BYTES (N); the conn must report WHY/TEXT and the raw peer must read a fatal
 * error frame with CODE and TEXT before EOF. */
static void raw_violation(const void *bytes, size_t n, int check_first, enum wq_conn_end why,
                          const char *code, const char *text)
{
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	sa.violate_on_name = 1;
	side_open(&sa, a, "test: raw peer");
	if (check_first)
		wq_conn_check_first_bytes(sa.c);
	struct raw r;
	raw_start(&r, b, 1);
	raw_write(&r, bytes, n);
	assert_true(ts_run_until(&e.loop, raw_eof, &r, 3000));
	assert_int_equal(sa.closed, 0); /* still lingering: the raw peer has not closed */
	json_t *last;
	int frames = raw_frames(&r, &last, NULL, NULL);
	raw_close(&r);
	assert_true(ts_run_until(&e.loop, is_closed, &sa,
	                         1000)); /* at the raw peer's EOF, not the linger */
	assert_int_equal(sa.why, why);
	if (text[strlen(text) - 1] == '*')
		assert_memory_equal(sa.text, text, strlen(text) - 1);
	else
		assert_string_equal(sa.text, text);
	assert_int_equal(frames, 1);
	assert_string_equal(json_string_value(json_object_get(last, "m")), "error");
	assert_string_equal(json_string_value(json_object_get(last, "code")), code);
	assert_string_equal(json_string_value(json_object_get(last, "text")), sa.text);
	assert_true(json_is_true(json_object_get(last, "fatal")));
	json_decref(last);
	side_free(&sa);
	env_done(&e);
}

static void test_raw_violations(void **state)
{
	(void)state;
	raw_violation("GET / HTTP/1.0\r\n\r\n", 18, 1, WQ_CONN_END_VIOLATION, "proto",
	              "not the work queue protocol (first bytes 47 45 54 20)");
	raw_violation("\x16\x03\x01\x02\x00", 5, 1, WQ_CONN_END_REFUSED, "tls_unexpected",
	              "this master does not use TLS: start the worker without --ssl");
	/* without the first-byte check, the frame reader finds it */
	raw_violation("GET / HTTP/1.0\r\n\r\n", 18, 0, WQ_CONN_END_VIOLATION, "proto",
	              "bad magic 47 45 (not the work queue protocol)");
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(h, WQ_FRAME_MSG, 0, 0xffffffffu);
	raw_violation(h, sizeof h, 1, WQ_CONN_END_VIOLATION, "too_big",
	              "frame of 4294967295 bytes exceeds the limit of 8192 bytes");
	uint8_t t7[] = {0xf5, 0x71, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 2};
	raw_violation(t7, sizeof t7, 1, WQ_CONN_END_VIOLATION, "proto", "unknown frame type 7");
	uint8_t fl[] = {0xf5, 0x71, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0, 2};
	raw_violation(fl, sizeof fl, 1, WQ_CONN_END_VIOLATION, "proto",
	              "frame flags 0x80 are not allowed");
	uint8_t bad[64];
	wq_frame_pack_header(bad, WQ_FRAME_MSG, 0, 5);
	memcpy(bad + 12, "{\"m\":", 5);
	raw_violation(bad, 17, 1, WQ_CONN_END_VIOLATION, "proto", "malformed message: *");
	wq_frame_pack_header(bad, WQ_FRAME_MSG, 0, 15);
	memcpy(bad + 12, "{\"m\":1,\"m\":\"a\"}", 15);
	raw_violation(bad, 27, 1, WQ_CONN_END_VIOLATION, "proto", "malformed message: *");
	wq_frame_pack_header(bad, WQ_FRAME_MSG, 0, 7);
	memcpy(bad + 12, "{\"x\":1}", 7);
	raw_violation(bad, 19, 1, WQ_CONN_END_VIOLATION, "proto",
	              "malformed message: no string \"m\"");
	wq_frame_pack_header(bad, WQ_FRAME_MSG, 0, 18);
	memcpy(bad + 12, "{\"m\":\"frobnicate\"}", 18);
	raw_violation(bad, 30, 1, WQ_CONN_END_VIOLATION, "proto", "unknown message \"frobnicate\"");
}

/* ---- keepalive ---- */

static bool either_closed(void *arg)
{
	struct side **s = arg;
	return s[0]->closed || s[1]->closed;
}

static void test_keepalive_pair(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0}, sb = {0};
	side_open(&sa, a, "test: a");
	side_open(&sb, b, "test: b");
	assert_int_equal(wq_conn_set_keepalive(sa.c, 100, 50), -EINVAL);
	assert_int_equal(wq_conn_set_keepalive(sa.c, 40, 120), 0);
	assert_int_equal(wq_conn_set_keepalive(sb.c, 40, 120), 0);
	/* idle for more than 8 timeouts: pings keep both alive */
	struct side *both[] = {&sa, &sb};
	assert_false(ts_run_until(&e.loop, either_closed, both, 1000));
	assert_int_equal(sa.nmsg, 0); /* pings and pongs stay inside */
	assert_int_equal(sb.nmsg, 0);
	/* now b stops answering (keepalive off: its pings go to the callback, unanswered) */
	assert_int_equal(wq_conn_set_keepalive(sb.c, 0, 0), 0);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 2000));
	assert_int_equal(sa.why, WQ_CONN_END_TIMEOUT);
	assert_string_equal(sa.text, "no complete frame received for 0.12 s");
	assert_true(sb.nmsg >= 1);
	assert_string_equal(sb.name, "error"); /* the best-effort error timeout */
	assert_string_equal(json_string_value(json_object_get(sb.last, "code")), "timeout");
	assert_true(ts_run_until(&e.loop, is_closed, &sb, 2000));
	assert_int_equal(sb.why, WQ_CONN_END_EOF);
	side_free(&sa);
	side_free(&sb);
	env_done(&e);
}

/* A header and part of a payload, then silence: lost after the timeout, even though the peer is
 * "active" at the TCP level. Also: a pong with a wrong seq is ignored, a ping is answered. */
static void test_slowloris(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: slow");
	wq_conn_set_linger(sa.c, 300);
	assert_int_equal(wq_conn_set_keepalive(sa.c, 100, 400), 0);
	struct raw r;
	raw_start(&r, b, 1);
	raw_write_msg(&r, "{\"m\":\"ping\",\"seq\":7}");
	/* wait for the pong and for the conn's own ping */
	ts_run_for(&e.loop, 250);
	json_t *last;
	int pings;
	assert_int_equal(raw_frames(&r, &last, "ping", &pings), 2);
	assert_int_equal(pings, 1);
	json_decref(last);
	/* the pong answered seq 7; the ping has seq 1: answer it wrongly */
	raw_write_msg(&r, "{\"m\":\"pong\",\"seq\":99}");
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(h, WQ_FRAME_MSG, 0, 100);
	raw_write(&r, h, sizeof h);
	raw_write(&r, "{\"m\":\"x\"", 8);
	uv_update_time(&e.loop);
	uint64_t t0 = uv_now(&e.loop);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	uint64_t dt = uv_now(&e.loop) - t0;
	assert_int_equal(sa.why, WQ_CONN_END_TIMEOUT);
	assert_string_equal(sa.text, "no complete frame received for 0.4 s");
	assert_true(dt >= 300 && dt < 1500);
	assert_int_equal(sa.nmsg, 0);
	assert_true(r.eof);
	/* pong 7, ping 1 (still outstanding: no second ping), then the error */
	assert_int_equal(raw_frames(&r, &last, "ping", &pings), 3);
	assert_int_equal(pings, 1);
	assert_string_equal(json_string_value(json_object_get(last, "code")), "timeout");
	json_decref(last);
	assert_int_equal(raw_frames(&r, &last, "pong", &pings), 3);
	assert_int_equal(pings, 1);
	json_decref(last);
	raw_close(&r);
	side_free(&sa);
	env_done(&e);
}

/* ---- a peer that never reads ---- */

static void test_not_reading(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: deaf");
	wq_conn_set_linger(sa.c, 200);
	struct raw r;
	raw_start(&r, b, 0); /* never reads */
	uint8_t *chunk = xcalloc(1, WQ_MAX_DATA);
	int rc = 0;
	size_t max_queue = 0;
	for (int i = 0; i < 2000 && rc == 0; i++) {
		rc = wq_conn_send_data(sa.c, 1, chunk, WQ_MAX_DATA);
		size_t q = wq_conn_write_queue_size(sa.c);
		if (rc == 0 && q > max_queue)
			max_queue = q;
		if (i % 16 == 0)
			uv_run(&e.loop, UV_RUN_NOWAIT);
	}
	free(chunk);
	assert_int_equal(rc, HTC_ELIMIT);
	assert_true(max_queue <= WQ_CONN_QUEUE_CAP);
	assert_true(max_queue > WQ_CONN_QUEUE_CAP - WQ_MAX_DATA - 2 * WQ_FRAME_HEADER_SIZE);
	assert_int_equal(wq_conn_send_data(sa.c, 1, "x", 1), -ENOTCONN);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	assert_int_equal(sa.why, WQ_CONN_END_VIOLATION);
	assert_string_equal(sa.text, "peer is not reading (16 MiB waiting to be sent)");
	raw_close(&r);
	side_free(&sa);
	env_done(&e);
}

/* ---- small writes gathered per loop iteration ---- */

/* Bytes waiting in the socket of R (read without taking them). */
static size_t raw_waiting(struct raw *r)
{
	uv_os_fd_t fd;
	assert_int_equal(uv_fileno((uv_handle_t *)r->tcp, &fd), 0);
	static uint8_t buf[1 << 20];
	ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
	return n > 0 ? (size_t)n : 0;
}

struct want_bytes {
	struct raw *r;
	size_t n;
};

static bool has_bytes(void *arg)
{
	struct want_bytes *w = arg;
	return raw_waiting(w->r) >= w->n;
}

/* Takes what waits in R's socket into R's buffer. */
static void raw_take(struct raw *r)
{
	uv_os_fd_t fd;
	assert_int_equal(uv_fileno((uv_handle_t *)r->tcp, &fd), 0);
	uint8_t buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
		r->buf = xrealloc(r->buf, r->len + (size_t)n);
		memcpy(r->buf + r->len, buf, (size_t)n);
		r->len += (size_t)n;
	}
}

/* Takes what waits in R's socket; true once only the peer's EOF is left. */
static bool raw_taken_to_eof(void *arg)
{
	struct raw *r = arg;
	uv_os_fd_t fd;
	uv_fileno((uv_handle_t *)r->tcp, &fd);
	char c;
	if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
		return true;
	raw_take(r);
	return false;
}

static json_t *small_msg(int i)
{
	return json_pack("{s:s, s:i}", "m", "note", "i", i);
}

static void send_small(struct wq_conn *c, int i, size_t *bytes)
{
	json_t *m = small_msg(i);
	size_t before = wq_conn_write_queue_size(c);
	assert_int_equal(wq_conn_send_msg(c, m), 0);
	*bytes += wq_conn_write_queue_size(c) - before;
	json_decref(m);
}

static void test_cork(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: cork");
	assert_int_equal(wq_conn_set_msg_limit(sa.c, WQ_MAX_MSG), 0);
	struct raw r;
	raw_start(&r, b, 0); /* read by hand, with recv */

	/* three small messages: none is written before the loop's iteration ends, then all are */
	size_t bytes = 0;
	for (int i = 0; i < 3; i++)
		send_small(sa.c, i, &bytes);
	assert_true(bytes > 0);
	assert_int_equal(wq_conn_write_queue_size(sa.c), bytes);
	assert_int_equal(raw_waiting(&r), 0);
	struct want_bytes w = {&r, bytes};
	assert_true(ts_run_until(&e.loop, has_bytes, &w, 2000));
	assert_int_equal(wq_conn_write_queue_size(sa.c), 0);

	/* a large message is written at once, after the small ones gathered before it; a small one
	 * after it waits for the end of the iteration */
	send_small(sa.c, 3, &bytes);
	char *text = xmalloc(40001);
	memset(text, 'b', 40000);
	text[40000] = 0;
	json_t *big = json_pack("{s:s, s:s}", "m", "big", "text", text);
	free(text);
	size_t before = wq_conn_write_queue_size(sa.c);
	assert_int_equal(wq_conn_send_msg(sa.c, big), 0);
	size_t big_bytes = wq_conn_write_queue_size(sa.c) - before;
	json_decref(big);
	assert_true(big_bytes > 40000);
	bytes += big_bytes;
	w.n = bytes;
	assert_true(
	    ts_run_until(&e.loop, has_bytes, &w, 2000)); /* written without the loop's flush */
	size_t so_far = bytes;
	send_small(sa.c, 4, &bytes);
	assert_int_equal(raw_waiting(&r), so_far);
	w.n = bytes;
	assert_true(ts_run_until(&e.loop, has_bytes, &w, 2000));

	/* gathered messages go out before a clean close, then the bye and EOF */
	send_small(sa.c, 5, &bytes);
	json_t *bye = json_pack("{s:s}", "m", "bye");
	assert_int_equal(wq_conn_close(sa.c, bye), 0);
	json_decref(bye);
	assert_true(ts_run_until(&e.loop, raw_taken_to_eof, &r, TS_WAIT_MS));
	raw_take(&r);
	json_t *last = NULL, *all = json_array();
	int notes = 0;
	int n = raw_frames_all(&r, &last, "note", &notes, all);
	assert_int_equal(n, 8); /* notes 0..5, big, bye */
	assert_int_equal(notes, 6);
	json_decref(last);
	/* in the order sent */
	const char *order[] = {"note", "note", "note", "note", "big", "note", "note", "bye"};
	for (int k = 0; k < 8; k++) {
		json_t *m = json_array_get(all, (size_t)k);
		assert_string_equal(json_string_value(json_object_get(m, "m")), order[k]);
		if (!strcmp(order[k], "note"))
			assert_int_equal(json_integer_value(json_object_get(m, "i")),
			                 k < 4 ? k : k - 1);
	}
	json_decref(all);
	raw_close(&r);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	side_free(&sa);
	env_done(&e);
}

/* Messages of every size in one iteration, each encoded into the gathered bytes when it fits
 * and in a buffer of its own when not: all arrive whole and in order. */
static void test_cork_sizes(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: cork sizes");
	assert_int_equal(wq_conn_set_msg_limit(sa.c, WQ_MAX_MSG), 0);
	struct raw r;
	raw_start(&r, b, 0);
	static const size_t sizes[] = {10, 1500, 1500, 3, 9000, 16000, 20000, 100, 60000, 7, 2030};
	enum { N = sizeof sizes / sizeof sizes[0] };
	for (int round = 0; round < 3; round++) {
		for (int k = 0; k < N; k++) {
			char *text = xmalloc(sizes[k] + 1);
			memset(text, 'a' + k, sizes[k]);
			text[sizes[k]] = 0;
			json_t *m = json_pack("{s:s, s:i, s:s}", "m", "note", "i", round * N + k,
			                      "text", text);
			free(text);
			assert_int_equal(wq_conn_send_msg(sa.c, m), 0);
			json_decref(m);
		}
		ts_run_for(&e.loop, 5); /* the next round starts a new gathering */
	}
	json_t *bye = json_pack("{s:s}", "m", "bye");
	assert_int_equal(wq_conn_close(sa.c, bye), 0);
	json_decref(bye);
	assert_true(ts_run_until(&e.loop, raw_taken_to_eof, &r, TS_WAIT_MS));
	raw_take(&r);
	json_t *last = NULL, *all = json_array();
	int notes = 0;
	assert_int_equal(raw_frames_all(&r, &last, "note", &notes, all), 3 * N + 1);
	assert_int_equal(notes, 3 * N);
	json_decref(last);
	for (int k = 0; k < 3 * N; k++) {
		json_t *m = json_array_get(all, (size_t)k);
		assert_int_equal(json_integer_value(json_object_get(m, "i")), k);
		const char *text = json_string_value(json_object_get(m, "text"));
		assert_int_equal(strlen(text), sizes[k % N]);
		assert_int_equal(text[0], 'a' + k % N);
		assert_int_equal(text[sizes[k % N] - 1], 'a' + k % N);
	}
	json_decref(all);
	raw_close(&r);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	side_free(&sa);
	env_done(&e);
}

/* ---- closing and deleting from inside callbacks ---- */

static void close_in_callback(int delete_on_msg, int close_on_msg)
{
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0}, sb = {0};
	side_open(&sa, a, "test: a");
	side_open(&sb, b, "test: b");
	sb.delete_on_msg = delete_on_msg;
	sb.close_on_msg = close_on_msg;
	sb.delete_on_closed = 1;
	/* several frames arrive in one read: nothing may be delivered after the close */
	json_t *m = json_pack("{s:s}", "m", "x");
	for (int i = 0; i < 5; i++)
		assert_int_equal(wq_conn_send_msg(sa.c, m), 0);
	assert_int_equal(wq_conn_send_data(sa.c, 1, "\0\0\0\0\0\0\0\0\0", 9), 0);
	json_decref(m);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 3000));
	/* EOF, or a reset if frames were still unread when b closed */
	assert_true(sa.why == WQ_CONN_END_EOF || sa.why == WQ_CONN_END_ERROR);
	ts_run_for(&e.loop, 20);
	assert_int_equal(sb.nmsg, 1);
	assert_int_equal(sb.nframes, 0);
	assert_int_equal(sb.closed, close_on_msg && !delete_on_msg ? 1 : 0);
	assert_null(sb.c);
	side_free(&sa);
	side_free(&sb);
	env_done(&e);
}

static void test_close_in_callback(void **state)
{
	(void)state;
	close_in_callback(1, 0); /* delete: no closed callback */
	close_in_callback(0, 1); /* close_now: closed callback, which deletes */
	close_in_callback(1, 1); /* both */
}

/* ---- a byte filter (XOR) between the socket and the frames ---- */

static int xor_in(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx)
{
	(void)fctx;
	uint8_t *p = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		p[i] = bytes[i] ^ 0x5a;
	wq_conn_input(c, p, len);
	free(p);
	return 0;
}

static int xor_out(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx)
{
	(void)fctx;
	uint8_t *p = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		p[i] = bytes[i] ^ 0x5a;
	int rc = wq_conn_write_raw(c, p, len);
	free(p);
	return rc;
}

static int freed_fctx;
static void xor_free(void *fctx)
{
	(void)fctx;
	freed_fctx++;
}

static void test_filter(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: filtered");
	static const struct wq_conn_filter xf = {xor_in, xor_out, xor_free};
	wq_conn_set_filter(sa.c, &xf, NULL);
	struct raw r;
	raw_start(&r, b, 1);
	/* the raw peer speaks XOR-ed frames */
	uint8_t buf[64];
	const char *m = "{\"m\":\"hi\"}";
	wq_frame_pack_header(buf, WQ_FRAME_MSG, 0, (uint32_t)strlen(m));
	memcpy(buf + 12, m, strlen(m));
	for (size_t i = 0; i < 12 + strlen(m); i++)
		buf[i] ^= 0x5a;
	raw_write(&r, buf, 12 + strlen(m));
	assert_true(ts_run_until(&e.loop, has_msg, &sa, 2000));
	assert_string_equal(sa.name, "hi");
	json_t *ok = json_pack("{s:s}", "m", "ok");
	assert_int_equal(wq_conn_send_msg(sa.c, ok), 0);
	json_decref(ok);
	ts_run_for(&e.loop, 50);
	assert_int_equal(r.len, 12 + 10);
	for (size_t i = 0; i < r.len; i++)
		r.buf[i] ^= 0x5a;
	assert_memory_equal(r.buf + 12, "{\"m\":\"ok\"}", 10);
	raw_close(&r);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 2000));
	side_free(&sa);
	env_done(&e);
	assert_int_equal(freed_fctx, 1);
}

/* A filter that fails on its first input with its own text, after queuing a last raw message
 * (as a TLS engine sends its alert): the peer gets those bytes, then EOF. */
static int failing_in(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx)
{
	(void)bytes;
	(void)len;
	(void)fctx;
	assert_int_equal(wq_conn_write_raw(c, (const uint8_t *)"ALERT", 5), 0);
	wq_conn_filter_fail(c, "TLS handshake failed: test reason");
	wq_conn_filter_fail(c, "ignored second failure");
	return 0;
}

static void test_filter_fail(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	uv_tcp_t *a, *b;
	env_pair(&e, &a, &b);
	struct side sa = {0};
	side_open(&sa, a, "test: failing");
	wq_conn_set_linger(sa.c, 300); /* the raw peer does not close: the linger ends it */
	static const struct wq_conn_filter ff = {failing_in, xor_out, NULL};
	wq_conn_set_filter(sa.c, &ff, NULL);
	struct raw r;
	raw_start(&r, b, 1);
	raw_write(&r, "\x16\x03\x01", 3);
	assert_true(ts_run_until(&e.loop, raw_eof, &r, 2000));
	assert_int_equal(r.len, 5);
	assert_memory_equal(r.buf, "ALERT", 5);
	assert_true(ts_run_until(&e.loop, is_closed, &sa, 2000));
	assert_int_equal(sa.why, WQ_CONN_END_ERROR);
	assert_string_equal(sa.text, "TLS handshake failed: test reason");
	assert_int_equal(sa.nmsg, 0);
	/* a failed connection refuses new frames */
	json_t *m = json_pack("{s:s}", "m", "late");
	assert_int_equal(wq_conn_send_msg(sa.c, m), -ENOTCONN);
	json_decref(m);
	raw_close(&r);
	side_free(&sa);
	env_done(&e);
}

/* ---- the log rate limit ---- */

/* How many lines of the log at PATH contain S. */
static int lines_with(const char *path, const char *s)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, s) != NULL;
	fclose(f);
	return n;
}

/* At most 10 violation lines per second, then one line counting the rest; the second is
 * measured on the clock the caller or the connection gives (a test clock here: no sleeping). */
static void test_log_rate(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_wq_conn");
	char *path = path_join(dir, "log");
	assert_int_equal(debug_config_file(path), 0);
	/* 10 s ahead of the real clock: a new one-second window, whatever earlier tests logged */
	struct ts_clock clk;
	ts_clock_init(&clk, time_monotonic_us() + 10000000);
	struct env e;
	env_init(&e);
	uv_tcp_t *a1, *b1, *a2, *b2;
	ts_socket_pair(&e.loop, &a1, &b1);
	ts_socket_pair(&e.loop, &a2, &b2);
	struct side s1 = {0}, s2 = {0};
	side_open(&s1, a1, "test: one");
	side_open(&s2, a2, "test: two");
	wq_conn_set_clock(s1.c, &clk.clock);
	wq_conn_set_clock(s2.c, &clk.clock);
	struct raw r1, r2;
	raw_start(&r1, b1, 1);
	raw_start(&r2, b2, 1);

	for (int i = 0; i < 25; i++)
		wq_conn_warn_limited(&clk.clock, "wq: 1.2.3.4:5", "protocol violation: test \x01");
	/* half a second later on the connections' clock: the same window, suppressed (a
	 * connection reading the real clock, 10 s behind, would have started a new one) */
	ts_clock_advance(&clk, 500000);
	wq_conn_violation(s1.c, "proto", "within the second");
	/* 1.1 s after the window began: the count of the suppressed, then the line */
	ts_clock_advance(&clk, 600000);
	wq_conn_violation(s2.c, "proto", "after the second");
	debug_config_file(NULL);
	assert_int_equal(lines_with(path, "wq: 1.2.3.4:5: protocol violation: test \\x01"), 10);
	assert_int_equal(lines_with(path, "within the second"), 0);
	assert_int_equal(lines_with(path, "... 16 more suppressed"), 1);
	assert_int_equal(lines_with(path, "test: two: protocol violation: after the second"), 1);

	/* both connections still end as violations */
	raw_close(&r1);
	raw_close(&r2);
	assert_true(ts_run_until(&e.loop, is_closed, &s1, TS_WAIT_MS));
	assert_true(ts_run_until(&e.loop, is_closed, &s2, TS_WAIT_MS));
	assert_int_equal(s1.why, WQ_CONN_END_VIOLATION);
	assert_string_equal(s1.text, "within the second");
	side_free(&s1);
	side_free(&s2);
	env_done(&e);
	free(path);
	ts_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_messages),       cmocka_unit_test(test_stream),
	    cmocka_unit_test(test_stream_pieces),  cmocka_unit_test(test_raw_violations),
	    cmocka_unit_test(test_keepalive_pair), cmocka_unit_test(test_slowloris),
	    cmocka_unit_test(test_not_reading),    cmocka_unit_test(test_close_in_callback),
	    cmocka_unit_test(test_filter),         cmocka_unit_test(test_filter_fail),
	    cmocka_unit_test(test_log_rate),       cmocka_unit_test(test_cork),
	    cmocka_unit_test(test_cork_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
