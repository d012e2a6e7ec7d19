/* wq_tls_filter.c: the TLS byte filter of a Work Queue connection. Socket bytes go through
 * wq_tls_feed()/wq_tls_read() into the frame reader, frames go through wq_tls_write() to the
 * socket; before that, the first bytes decide between TLS, a plain refusal and a plain peer
 * (protocol section 3.1). */
#include "wq_tls_filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "htc_error.h"
#include "wq_frame.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define PLAIN_BUF_SIZE (16 * 1024 + 256) /* one TLS record of plaintext */
#define PEEK_BYTES     3

enum filter_mode {
	F_FIRST,      /* server: nothing received yet */
	F_PEEK,       /* client: fewer than PEEK_BYTES received */
	F_TLS,        /* bytes go through the engine */
	F_PLAIN_PEER, /* client: the master answered in plaintext; input passes, output dropped */
	F_REFUSED,    /* server: plain peer or garbage refused; the plain error goes out as it is */
	F_FAILED      /* the engine failed; the connection is closing */
};

struct wq_tls_filter {
	struct wq_conn *c;
	struct wq_tls *t;
	enum filter_mode mode;
	uint8_t peek[PEEK_BYTES];
	size_t npeek;
	uint8_t *queue; /* plaintext frames waiting for the handshake */
	size_t queue_len;
	int handshake_logged;
	uint8_t plain[PLAIN_BUF_SIZE];
};

/* Sends all the ciphertext the engine holds. */
static int flush_cipher(struct wq_tls_filter *f)
{
	while (wq_tls_out_pending(f->t) > 0) {
		size_t len = 0;
		char *buf = wq_tls_take_all(f->t, &len);
		if (!buf)
			break;
		int rc = wq_conn_write_raw(f->c, (const uint8_t *)buf, len);
		free(buf);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void fail_text(struct wq_tls_filter *f, const char *text)
{
	if (f->mode == F_FAILED)
		return;
	f->mode = F_FAILED;
	flush_cipher(f); /* the alert tells the peer why */
	wq_conn_filter_fail(f->c, text);
}

static void fail(struct wq_tls_filter *f)
{
	const char *e = wq_tls_error(f->t);
	fail_text(f, e ? e : "TLS error");
}

static int queue_plain(struct wq_tls_filter *f, const uint8_t *bytes, size_t len)
{
	if (f->queue_len + len > WQ_CONN_QUEUE_CAP)
		return HTC_ELIMIT;
	VEC_RESIZE(f->queue, f->queue_len + len);
	memcpy(f->queue + f->queue_len, bytes, len);
	f->queue_len += len;
	return 0;
}

/* Encrypts LEN bytes and sends the ciphertext; what the engine cannot take yet (handshake under
 * way) is queued. */
static int encrypt(struct wq_tls_filter *f, const uint8_t *bytes, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = wq_tls_write(f->t, bytes + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			int rc = flush_cipher(f);
			if (rc < 0)
				return rc;
			continue;
		}
		if (n == -EAGAIN) {
			if (wq_tls_out_pending(f->t) > 0) {
				/* back-pressure: the ciphertext is taken now, then retry */
				int rc = flush_cipher(f);
				if (rc < 0)
					return rc;
				continue;
			}
			return queue_plain(f, bytes + off, len - off);
		}
		if (wq_tls_state(f->t) == WQ_TLS_FAILED) {
			fail(f);
			return 0;
		}
		return (int)n;
	}
	return 0;
}

/* Sends the frames kept during the handshake, once it is complete. */
static int flush_queue(struct wq_tls_filter *f)
{
	if (!f->queue_len || !wq_tls_handshake_done(f->t))
		return 0;
	uint8_t *q = f->queue;
	size_t len = f->queue_len;
	f->queue = NULL;
	f->queue_len = 0;
	int rc = encrypt(f, q, len);
	free(q);
	return rc;
}

/* Decrypts everything available into the frame reader. Returns the plaintext bytes delivered, or
 * -1 once the engine has failed (the connection is then closing). */
static ssize_t drain(struct wq_tls_filter *f)
{
	ssize_t total = 0;
	for (;;) {
		ssize_t n = wq_tls_read(f->t, f->plain, sizeof f->plain);
		if (n > 0) {
			wq_conn_input(f->c, f->plain, (size_t)n);
			total += n;
			continue;
		}
		if (n == -EAGAIN || n == 0)
			break;
		fail(f);
		return -1;
	}
	if (wq_tls_state(f->t) == WQ_TLS_FAILED) {
		fail(f);
		return -1;
	}
	if (wq_tls_handshake_done(f->t) && !f->handshake_logged) {
		f->handshake_logged = 1;
		debug(D_NET, "%s: TLS established: %s %s", wq_conn_label(f->c),
		      wq_tls_version(f->t), wq_tls_cipher(f->t));
	}
	if (flush_cipher(f) == 0)
		flush_queue(f); /* a write error ends the connection by itself */
	return total;
}

static void feed(struct wq_tls_filter *f, const uint8_t *bytes, size_t len)
{
	size_t off = 0;
	do {
		ssize_t n = wq_tls_feed(f->t, bytes + off, len - off);
		if (n < 0) {
			fail(f);
			return;
		}
		off += (size_t)n;
		ssize_t got = drain(f);
		if (got < 0 || f->mode == F_FAILED)
			return;
		/* The engine takes less than it is given only while WQ_TLS_IN_MAX bytes wait;
		 * draining them into the frame reader (which holds them while the connection is
		 * paused) makes room, so no progress at all means the engine is stuck. */
		if (n == 0 && got == 0 && off < len) {
			fail_text(f, "TLS error: the engine accepts no more input");
			return;
		}
	} while (off < len);
}

static int filter_in(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx)
{
	struct wq_tls_filter *f = fctx;
	(void)c;
	switch (f->mode) {
	case F_FIRST: {
		char text[WQ_FRAME_TEXT_SIZE];
		switch (wq_frame_classify_start(bytes, len, text, sizeof text)) {
		case WQ_START_MORE: return 0;
		case WQ_START_TLS:
			f->mode = F_TLS;
			feed(f, bytes, len);
			return 0;
		case WQ_START_FRAME:
			f->mode = F_REFUSED;
			wq_conn_refuse(f->c, "tls_required", WQ_TLS_REQUIRED_TEXT,
			               WQ_TLS_REQUIRED_LOG);
			return 0;
		case WQ_START_OTHER:
			f->mode = F_REFUSED;
			wq_conn_violation(f->c, "proto", "%s", text);
			return 0;
		}
		return 0;
	}
	case F_PEEK: {
		size_t take = PEEK_BYTES - f->npeek;
		if (take > len)
			take = len;
		memcpy(f->peek + f->npeek, bytes, take);
		f->npeek += take;
		enum wq_tls_peek p = wq_tls_peek(f->peek, f->npeek);
		if (p == WQ_TLS_PEEK_MORE)
			return 0; /* every byte so far is in f->peek */
		/* f->peek holds the first bytes; the rest of BYTES follows them */
		if (p == WQ_TLS_PEEK_PLAIN) {
			debug(D_NET, "%s: the master answered without TLS", wq_conn_label(f->c));
			f->mode = F_PLAIN_PEER;
			free(f->queue); /* never sent in plaintext */
			f->queue = NULL;
			f->queue_len = 0;
			wq_conn_input(f->c, f->peek, f->npeek);
			wq_conn_input(f->c, bytes + take, len - take);
			return 0;
		}
		f->mode = F_TLS; /* not TLS either: OpenSSL says why */
		feed(f, f->peek, f->npeek);
		if (f->mode == F_TLS && len > take)
			feed(f, bytes + take, len - take);
		return 0;
	}
	case F_TLS: feed(f, bytes, len); return 0;
	case F_PLAIN_PEER: wq_conn_input(f->c, bytes, len); return 0;
	case F_REFUSED:
	case F_FAILED: return 0;
	}
	return 0;
}

static int filter_out(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx)
{
	struct wq_tls_filter *f = fctx;
	switch (f->mode) {
	case F_FIRST:
		/* nothing received yet (e.g. the handshake deadline): a plain frame is the only
		 * thing a peer of either kind can recognise */
	case F_REFUSED: return wq_conn_write_raw(c, bytes, len);
	case F_PLAIN_PEER:
		debug(D_NET, "%s: not sending a %zu-byte frame to a master without TLS",
		      wq_conn_label(c), len);
		return 0;
	case F_FAILED: return 0;
	case F_PEEK: return queue_plain(f, bytes, len);
	case F_TLS:
		if (f->queue_len)
			return queue_plain(f, bytes, len); /* keep the order */
		return encrypt(f, bytes, len);
	}
	return 0;
}

static void filter_free(void *fctx)
{
	struct wq_tls_filter *f = fctx;
	if (!f)
		return;
	wq_tls_delete(f->t);
	free(f->queue);
	free(f);
}

static const struct wq_conn_filter tls_filter = {filter_in, filter_out, filter_free};

struct wq_tls_filter *wq_tls_filter_install(struct wq_conn *c, struct wq_tls_config *cfg,
                                            const char *host, char **err)
{
	struct wq_tls *t = wq_tls_create(cfg, host, err);
	if (!t)
		return NULL;
	struct wq_tls_filter *f = xcalloc(1, sizeof *f);
	f->c = c;
	f->t = t;
	/* a client engine has its ClientHello waiting at once; a server has nothing */
	int client = wq_tls_out_pending(t) > 0;
	f->mode = client ? F_PEEK : F_FIRST;
	wq_conn_set_filter(c, &tls_filter, f);
	if (client && flush_cipher(f) < 0)
		debug(D_NET, "%s: cannot send the TLS ClientHello", wq_conn_label(c));
	return f;
}

bool wq_tls_filter_is_open(const struct wq_tls_filter *f)
{
	return f->mode == F_TLS && wq_tls_handshake_done(f->t);
}

bool wq_tls_filter_plain_peer(const struct wq_tls_filter *f)
{
	return f->mode == F_PLAIN_PEER;
}

int wq_tls_filter_binding(struct wq_tls_filter *f, uint8_t out[WQ_TLS_BINDING_SIZE])
{
	if (!wq_tls_filter_is_open(f))
		return -ENOTCONN;
	return wq_tls_channel_binding(f->t, out);
}

struct wq_tls *wq_tls_filter_engine(struct wq_tls_filter *f)
{
	return f->t;
}
