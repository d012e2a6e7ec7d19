/* wq_frame.c: the Work Queue frame header and the incremental frame reader. Header fields are
 * checked one by one as their bytes arrive, so a bad peer is refused before any allocation, and
 * the payload buffer grows only with the bytes actually received. */
#include "wq_frame.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* The smallest payload buffer allocated; later growth doubles, up to the frame's length. */
#define WQ_FRAME_MIN_ALLOC 1024

struct wq_frame_reader {
	uint8_t hdr[WQ_FRAME_HEADER_SIZE];
	size_t hgot; /* header bytes received */
	uint8_t type;
	uint32_t xfer;
	uint32_t length;
	uint8_t *buf; /* payload buffer (NULL until a payload is split across feeds) */
	size_t cap;
	size_t got;   /* payload bytes received into buf */
	size_t peak;  /* largest cap ever */
	int returned; /* the last call returned a frame: start a new one at the next call */
	size_t msg_limit;
	int pieces, pieces_next; /* DATA in pieces: for the current frame, from the next one */
	int error;
	char text[WQ_FRAME_TEXT_SIZE];
};

static uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void wq_frame_pack_header(uint8_t out[WQ_FRAME_HEADER_SIZE], uint8_t type, uint32_t xfer,
                          uint32_t length)
{
	out[0] = WQ_FRAME_MAGIC0;
	out[1] = WQ_FRAME_MAGIC1;
	out[2] = type;
	out[3] = 0;
	put_be32(out + 4, xfer);
	put_be32(out + 8, length);
}

struct wq_frame_reader *wq_frame_reader_create(size_t msg_limit)
{
	if (msg_limit < WQ_MIN_MSG || msg_limit > WQ_MAX_MSG) {
		errno = EINVAL;
		return NULL;
	}
	struct wq_frame_reader *r = xcalloc(1, sizeof *r);
	r->msg_limit = msg_limit;
	return r;
}

void wq_frame_reader_delete(struct wq_frame_reader *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

int wq_frame_reader_set_msg_limit(struct wq_frame_reader *r, size_t msg_limit)
{
	if (msg_limit < WQ_MIN_MSG || msg_limit > WQ_MAX_MSG)
		return -EINVAL;
	r->msg_limit = msg_limit;
	return 0;
}

size_t wq_frame_reader_msg_limit(const struct wq_frame_reader *r)
{
	return r->msg_limit;
}

const char *wq_frame_reader_error(const struct wq_frame_reader *r)
{
	return r->error ? r->text : "";
}

const char *wq_frame_error_code(int rc)
{
	return rc == HTC_ETOOBIG ? "too_big" : "proto";
}

void wq_frame_reader_set_data_pieces(struct wq_frame_reader *r, int on)
{
	r->pieces_next = on != 0;
	if (r->hgot == 0)
		r->pieces = r->pieces_next;
}

size_t wq_frame_reader_buffer_size(const struct wq_frame_reader *r)
{
	return r->cap;
}

size_t wq_frame_reader_buffer_peak(const struct wq_frame_reader *r)
{
	return r->peak;
}

static int fail(struct wq_frame_reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct wq_frame_reader *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->text, sizeof r->text, fmt, ap);
	va_end(ap);
	r->error = code;
	return code;
}

/* Checks the header field that the byte at index HGOT-1 completed. */
static int check_field(struct wq_frame_reader *r)
{
	const uint8_t *h = r->hdr;
	switch (r->hgot) {
	case 2:
		if (h[0] != WQ_FRAME_MAGIC0 || h[1] != WQ_FRAME_MAGIC1)
			return fail(r, HTC_EPROTO,
			            "bad magic %02x %02x (not the work queue protocol)", h[0],
			            h[1]);
		break;
	case 3:
		if (h[2] != WQ_FRAME_MSG && h[2] != WQ_FRAME_DATA)
			return fail(r, HTC_EPROTO, "unknown frame type %u", h[2]);
		r->type = h[2];
		break;
	case 4:
		if (h[3] != 0)
			return fail(r, HTC_EPROTO, "frame flags 0x%02x are not allowed", h[3]);
		break;
	case 8:
		r->xfer = get_be32(h + 4);
		if (r->type == WQ_FRAME_MSG && r->xfer != 0)
			return fail(r, HTC_EPROTO, "message frame with transfer id %u (must be 0)",
			            r->xfer);
		if (r->type == WQ_FRAME_DATA && r->xfer == 0)
			return fail(r, HTC_EPROTO,
			            "data frame with transfer id 0 (must be 1 or more)");
		break;
	case WQ_FRAME_HEADER_SIZE: {
		r->length = get_be32(h + 8);
		size_t max = r->type == WQ_FRAME_MSG ? r->msg_limit : WQ_MAX_DATA;
		size_t min = r->type == WQ_FRAME_MSG ? WQ_MIN_MSG : WQ_MIN_DATA;
		if (r->length > max)
			return fail(r, HTC_ETOOBIG,
			            "frame of %u bytes exceeds the limit of %zu bytes", r->length,
			            max);
		if (r->length < min && r->type == WQ_FRAME_DATA)
			return fail(r, HTC_EPROTO, "empty data frame for transfer %u", r->xfer);
		if (r->length < min)
			return fail(
			    r, HTC_EPROTO,
			    "message frame of %u bytes is shorter than the minimum of %zu bytes",
			    r->length, min);
		break;
	}
	default: break;
	}
	return 0;
}

/* Makes room for NEED payload bytes in total (NEED <= the frame's checked length). */
static void reserve(struct wq_frame_reader *r, size_t need)
{
	if (need <= r->cap)
		return;
	(void)VEC_RESERVE_MAX(r->buf, r->cap, need, WQ_FRAME_MIN_ALLOC, r->length);
	if (r->cap > r->peak)
		r->peak = r->cap;
}

int wq_frame_reader_feed(struct wq_frame_reader *r, const void *data, size_t len, size_t *used,
                         struct wq_frame *f)
{
	const uint8_t *start = data, *p = data, *end = p + len;
	*used = 0;
	if (r->error)
		return r->error;
	if (r->returned) {
		r->returned = 0;
		r->hgot = 0;
		r->got = 0;
		/* Do not keep a large message's buffer for the life of the connection. */
		if (r->cap > WQ_MAX_DATA) {
			free(r->buf);
			r->buf = NULL;
			r->cap = 0;
		}
	}
	if (r->hgot == 0)
		r->pieces = r->pieces_next;
	while (r->hgot < WQ_FRAME_HEADER_SIZE && p < end) {
		r->hdr[r->hgot++] = *p++;
		int rc = check_field(r);
		if (rc < 0) {
			*used = (size_t)(p - start);
			return rc;
		}
	}
	if (r->hgot < WQ_FRAME_HEADER_SIZE) {
		*used = len;
		return 0;
	}
	size_t avail = (size_t)(end - p);
	size_t missing = r->length - r->got;
	f->type = r->type;
	f->xfer = r->xfer;
	f->length = r->length;
	f->piece = r->length;
	f->last = 1;
	if (r->pieces && r->type == WQ_FRAME_DATA) {
		size_t n = avail < missing ? avail : missing;
		*used = (size_t)(p - start) + n;
		if (n == 0)
			return 0;
		f->payload = p;
		f->piece = (uint32_t)n;
		r->got += n;
		f->last = r->got == r->length;
		r->returned = f->last;
		return 1;
	}
	if (r->got == 0 && avail >= missing) {
		/* the whole payload is in DATA: no copy */
		f->payload = p;
		*used = (size_t)(p - start) + missing;
		r->returned = 1;
		return 1;
	}
	size_t take = avail < missing ? avail : missing;
	if (take > 0) {
		reserve(r, r->got + take);
		memcpy(r->buf + r->got, p, take);
		r->got += take;
		p += take;
	}
	*used = (size_t)(p - start);
	if (r->got < r->length)
		return 0;
	f->payload = r->buf;
	r->returned = 1;
	return 1;
}

enum wq_frame_start wq_frame_classify_start(const void *data, size_t len, char *text, size_t size)
{
	const uint8_t *p = data;
	if (len == 0)
		return WQ_START_MORE;
	if (p[0] == WQ_FRAME_MAGIC0)
		return WQ_START_FRAME;
	if (p[0] == WQ_FRAME_TLS_BYTE)
		return WQ_START_TLS;
	if (text && size > 0) {
		char hex[16] = "";
		size_t n = len < 4 ? len : 4, off = 0;
		for (size_t i = 0; i < n; i++)
			off += (size_t)snprintf(hex + off, sizeof hex - off, "%s%02x", i ? " " : "",
			                        p[i]);
		snprintf(text, size, "not the work queue protocol (first bytes %s)", hex);
	}
	return WQ_START_OTHER;
}
