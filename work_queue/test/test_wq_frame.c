/* test_wq_frame.c: unit tests for the Work Queue frame reader (wq_frame.h): reassembly from
 * one-byte slices and from many frames in one slice, every header limit at its boundary, the
 * violation texts, the sticky error state and the first-bytes classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_frame.h"
#include "xalloc.h"
#include "banned.h"

/* Appends a frame to BUF at *LEN; returns the payload offset. */
static size_t put_frame(uint8_t *buf, size_t *len, uint8_t type, uint32_t xfer, const void *p,
                        size_t n)
{
	wq_frame_pack_header(buf + *len, type, xfer, (uint32_t)n);
	*len += WQ_FRAME_HEADER_SIZE;
	size_t off = *len;
	memcpy(buf + *len, p, n);
	*len += n;
	return off;
}

/* Feeds all of DATA in slices of SLICE bytes; returns the number of frames, each checked against
 * the expected list. */
struct expect {
	uint8_t type;
	uint32_t xfer;
	const char *payload;
	size_t len;
};

static int feed_all(struct wq_frame_reader *r, const uint8_t *data, size_t len, size_t slice,
                    const struct expect *ex, int nex)
{
	int n = 0;
	size_t off = 0;
	while (off < len) {
		size_t chunk = len - off < slice ? len - off : slice;
		const uint8_t *p = data + off;
		while (chunk > 0) {
			size_t used;
			struct wq_frame f;
			int rc = wq_frame_reader_feed(r, p, chunk, &used, &f);
			assert_true(rc >= 0);
			assert_true(used <= chunk);
			p += used;
			chunk -= used;
			off += used;
			if (rc == 1) {
				assert_true(n < nex);
				assert_int_equal(f.type, ex[n].type);
				assert_int_equal(f.xfer, ex[n].xfer);
				assert_int_equal(f.length, ex[n].len);
				assert_memory_equal(f.payload, ex[n].payload, ex[n].len);
				n++;
			} else {
				assert_int_equal(chunk, 0);
			}
		}
	}
	return n;
}

static void test_pack_header(void **state)
{
	(void)state;
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	/* frame 1 of the worked example (section 8) */
	const uint8_t want[] = {0xf5, 0x71, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x01, 0x03};
	wq_frame_pack_header(h, WQ_FRAME_MSG, 0, 259);
	assert_memory_equal(h, want, sizeof want);
	const uint8_t want9[] = {0xf5, 0x71, 0x02, 0x00, 0, 0, 0, 1, 0, 0, 0, 5};
	wq_frame_pack_header(h, WQ_FRAME_DATA, 1, 5);
	assert_memory_equal(h, want9, sizeof want9);
}

static void test_slices(void **state)
{
	(void)state;
	uint8_t buf[4096];
	size_t len = 0;
	const char *m1 = "{\"m\":\"hello\"}";
	const char *m2 = "{}";
	put_frame(buf, &len, WQ_FRAME_MSG, 0, m1, strlen(m1));
	put_frame(buf, &len, WQ_FRAME_DATA, 1, "ACGT\n", 5);
	put_frame(buf, &len, WQ_FRAME_MSG, 0, m2, 2);
	put_frame(buf, &len, WQ_FRAME_DATA, 0xffffffffu, "x", 1);
	struct expect ex[] = {{WQ_FRAME_MSG, 0, m1, strlen(m1)},
	                      {WQ_FRAME_DATA, 1, "ACGT\n", 5},
	                      {WQ_FRAME_MSG, 0, m2, 2},
	                      {WQ_FRAME_DATA, 0xffffffffu, "x", 1}};
	size_t slices[] = {1, 2, 3, 5, 7, 11, 12, 13, 64, 4096};
	for (size_t i = 0; i < sizeof slices / sizeof *slices; i++) {
		struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
		assert_int_equal(feed_all(r, buf, len, slices[i], ex, 4), 4);
		assert_string_equal(wq_frame_reader_error(r), "");
		wq_frame_reader_delete(r);
	}
	wq_frame_reader_delete(NULL);
}

/* A stream of many frames given at once; every payload comes back intact. */
static void test_many_at_once(void **state)
{
	(void)state;
	enum { N = 1000 };
	size_t cap = N * (WQ_FRAME_HEADER_SIZE + 64);
	uint8_t *buf = xmalloc(cap);
	size_t len = 0;
	struct expect *ex = xcalloc(N, sizeof *ex);
	char(*texts)[64] = xcalloc(N, 64);
	for (int i = 0; i < N; i++) {
		int n = snprintf(texts[i], 64, "{\"m\":\"n\",\"i\":%d}", i);
		uint8_t type = i % 3 ? WQ_FRAME_MSG : WQ_FRAME_DATA;
		put_frame(buf, &len, type, type == WQ_FRAME_DATA ? (uint32_t)i + 1 : 0, texts[i],
		          (size_t)n);
		ex[i] = (struct expect){type, type == WQ_FRAME_DATA ? (uint32_t)i + 1 : 0, texts[i],
		                        (size_t)n};
	}
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	assert_int_equal(feed_all(r, buf, len, len, ex, N), N);
	/* frames given whole are not copied */
	assert_int_equal(wq_frame_reader_buffer_peak(r), 0);
	wq_frame_reader_delete(r);
	r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	assert_int_equal(feed_all(r, buf, len, 1000, ex, N), N);
	wq_frame_reader_delete(r);
	free(texts);
	free(ex);
	free(buf);
}

/* Feeds a header (and optionally a payload of LEN bytes); returns the final feed code. */
static int feed_frame(struct wq_frame_reader *r, uint8_t type, uint32_t xfer, uint32_t length,
                      int with_payload)
{
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(h, type, xfer, length);
	size_t used;
	struct wq_frame f;
	int rc = wq_frame_reader_feed(r, h, sizeof h, &used, &f);
	if (rc < 0 || !with_payload)
		return rc;
	assert_int_equal(rc, 0);
	assert_int_equal(used, sizeof h);
	uint8_t *p = xcalloc(1, length);
	p[0] = '{';
	/* in two halves, so that the payload is buffered */
	size_t half = length / 2;
	rc = wq_frame_reader_feed(r, p, half, &used, &f);
	if (rc == 0)
		rc = wq_frame_reader_feed(r, p + half, length - half, &used, &f);
	if (rc == 1) {
		assert_int_equal(f.length, length);
		assert_memory_equal(f.payload, p, length);
	}
	free(p);
	return rc;
}

static void expect_violation(uint8_t type, uint32_t xfer, uint32_t length, size_t limit, int code,
                             const char *text)
{
	struct wq_frame_reader *r = wq_frame_reader_create(limit);
	assert_int_equal(feed_frame(r, type, xfer, length, 0), code);
	assert_string_equal(wq_frame_reader_error(r), text);
	/* sticky */
	size_t used = 99;
	struct wq_frame f;
	uint8_t ok[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(ok, WQ_FRAME_MSG, 0, 2);
	assert_int_equal(wq_frame_reader_feed(r, ok, sizeof ok, &used, &f), code);
	assert_int_equal(used, 0);
	assert_int_equal(wq_frame_reader_buffer_peak(r), 0); /* nothing allocated */
	wq_frame_reader_delete(r);
}

static void test_limits(void **state)
{
	(void)state;
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	/* exact limits pass */
	assert_int_equal(feed_frame(r, WQ_FRAME_MSG, 0, WQ_MAX_MSG_PREAUTH, 1), 1);
	assert_true(wq_frame_reader_buffer_peak(r) <= WQ_MAX_MSG_PREAUTH);
	assert_int_equal(feed_frame(r, WQ_FRAME_MSG, 0, 2, 1), 1);
	assert_int_equal(feed_frame(r, WQ_FRAME_DATA, 1, 1, 1), 1);
	assert_int_equal(feed_frame(r, WQ_FRAME_DATA, 7, WQ_MAX_DATA, 1), 1);
	assert_true(wq_frame_reader_buffer_peak(r) <= WQ_MAX_DATA);
	/* raised after authentication */
	assert_int_equal(wq_frame_reader_set_msg_limit(r, WQ_MAX_MSG), 0);
	assert_int_equal(wq_frame_reader_msg_limit(r), WQ_MAX_MSG);
	assert_int_equal(feed_frame(r, WQ_FRAME_MSG, 0, WQ_MAX_MSG, 1), 1);
	assert_int_equal(wq_frame_reader_buffer_peak(r), WQ_MAX_MSG);
	/* a large buffer is released after its frame */
	assert_int_equal(feed_frame(r, WQ_FRAME_MSG, 0, 2, 1), 1);
	assert_true(wq_frame_reader_buffer_size(r) <= WQ_MAX_DATA);
	assert_int_equal(wq_frame_reader_set_msg_limit(r, WQ_MAX_MSG + 1), -EINVAL);
	assert_int_equal(wq_frame_reader_set_msg_limit(r, 1), -EINVAL);
	wq_frame_reader_delete(r);
	assert_null(wq_frame_reader_create(1));
	assert_null(wq_frame_reader_create(WQ_MAX_MSG + 1));

	/* limit + 1 fails, with the section 9 texts */
	expect_violation(WQ_FRAME_MSG, 0, WQ_MAX_MSG_PREAUTH + 1, WQ_MAX_MSG_PREAUTH, HTC_ETOOBIG,
	                 "frame of 8193 bytes exceeds the limit of 8192 bytes");
	expect_violation(WQ_FRAME_MSG, 0, 0xffffffffu, WQ_MAX_MSG_PREAUTH, HTC_ETOOBIG,
	                 "frame of 4294967295 bytes exceeds the limit of 8192 bytes");
	expect_violation(WQ_FRAME_MSG, 0, WQ_MAX_MSG + 1, WQ_MAX_MSG, HTC_ETOOBIG,
	                 "frame of 4194305 bytes exceeds the limit of 4194304 bytes");
	expect_violation(WQ_FRAME_DATA, 3, WQ_MAX_DATA + 1, WQ_MAX_MSG, HTC_ETOOBIG,
	                 "frame of 262145 bytes exceeds the limit of 262144 bytes");
	expect_violation(WQ_FRAME_MSG, 0, 1, WQ_MAX_MSG_PREAUTH, HTC_EPROTO,
	                 "message frame of 1 bytes is shorter than the minimum of 2 bytes");
	expect_violation(WQ_FRAME_DATA, 4, 0, WQ_MAX_MSG_PREAUTH, HTC_EPROTO,
	                 "empty data frame for transfer 4");
	expect_violation(WQ_FRAME_MSG, 5, 10, WQ_MAX_MSG_PREAUTH, HTC_EPROTO,
	                 "message frame with transfer id 5 (must be 0)");
	expect_violation(WQ_FRAME_DATA, 0, 10, WQ_MAX_MSG_PREAUTH, HTC_EPROTO,
	                 "data frame with transfer id 0 (must be 1 or more)");
	expect_violation(7, 0, 10, WQ_MAX_MSG_PREAUTH, HTC_EPROTO, "unknown frame type 7");
	expect_violation(0, 0, 10, WQ_MAX_MSG_PREAUTH, HTC_EPROTO, "unknown frame type 0");
	assert_string_equal(wq_frame_error_code(HTC_ETOOBIG), "too_big");
	assert_string_equal(wq_frame_error_code(HTC_EPROTO), "proto");
}

static void expect_bytes_violation(const uint8_t *bytes, size_t n, size_t want_used,
                                   const char *text)
{
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	size_t used;
	struct wq_frame f;
	assert_int_equal(wq_frame_reader_feed(r, bytes, n, &used, &f), HTC_EPROTO);
	assert_int_equal(used, want_used);
	assert_string_equal(wq_frame_reader_error(r), text);
	wq_frame_reader_delete(r);
}

static void test_header_fields(void **state)
{
	(void)state;
	/* checked as soon as the field is in: no need to wait for 12 bytes */
	expect_bytes_violation((const uint8_t *)"GET / HTTP/1.0\r\n", 16, 2,
	                       "bad magic 47 45 (not the work queue protocol)");
	const uint8_t half_magic[] = {0xf5, 0x00};
	expect_bytes_violation(half_magic, 2, 2, "bad magic f5 00 (not the work queue protocol)");
	const uint8_t flags[] = {0xf5, 0x71, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0, 2};
	expect_bytes_violation(flags, sizeof flags, 4, "frame flags 0x80 are not allowed");
	const uint8_t flags1[] = {0xf5, 0x71, 0x02, 0x01};
	expect_bytes_violation(flags1, sizeof flags1, 4, "frame flags 0x01 are not allowed");
	const uint8_t type7[] = {0xf5, 0x71, 0x07, 0x00, 0x12, 0x34};
	expect_bytes_violation(type7, sizeof type7, 3, "unknown frame type 7");

	/* a frame then a bad one in the same slice: the first is delivered */
	uint8_t buf[64];
	size_t len = 0;
	put_frame(buf, &len, WQ_FRAME_MSG, 0, "{}", 2);
	memcpy(buf + len, "\x16\x03\x01\x00", 4);
	len += 4;
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	size_t used;
	struct wq_frame f;
	assert_int_equal(wq_frame_reader_feed(r, buf, len, &used, &f), 1);
	assert_int_equal(used, 14);
	assert_int_equal(wq_frame_reader_feed(r, buf + used, len - used, &used, &f), HTC_EPROTO);
	assert_string_equal(wq_frame_reader_error(r),
	                    "bad magic 16 03 (not the work queue protocol)");
	wq_frame_reader_delete(r);
}

/* The payload buffer grows with what arrives: a huge announced frame costs nothing until its
 * bytes come. */
static void test_growth_bounded(void **state)
{
	(void)state;
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG);
	uint8_t h[WQ_FRAME_HEADER_SIZE];
	wq_frame_pack_header(h, WQ_FRAME_MSG, 0, WQ_MAX_MSG);
	size_t used;
	struct wq_frame f;
	assert_int_equal(wq_frame_reader_feed(r, h, sizeof h, &used, &f), 0);
	assert_int_equal(wq_frame_reader_buffer_peak(r), 0);
	uint8_t chunk[100] = {0};
	assert_int_equal(wq_frame_reader_feed(r, chunk, sizeof chunk, &used, &f), 0);
	assert_true(wq_frame_reader_buffer_size(r) <= 1024);
	wq_frame_reader_delete(r);
}

static void test_classify(void **state)
{
	(void)state;
	char text[WQ_FRAME_TEXT_SIZE];
	assert_int_equal(wq_frame_classify_start("", 0, text, sizeof text), WQ_START_MORE);
	assert_int_equal(wq_frame_classify_start("\xf5\x71", 2, text, sizeof text), WQ_START_FRAME);
	assert_int_equal(wq_frame_classify_start("\x16\x03\x01", 3, text, sizeof text),
	                 WQ_START_TLS);
	assert_int_equal(wq_frame_classify_start("GET / HTTP/1.0\r\n\r\n", 18, text, sizeof text),
	                 WQ_START_OTHER);
	assert_string_equal(text, "not the work queue protocol (first bytes 47 45 54 20)");
	assert_int_equal(wq_frame_classify_start("\xff\x00", 2, text, sizeof text), WQ_START_OTHER);
	assert_string_equal(text, "not the work queue protocol (first bytes ff 00)");
	assert_int_equal(wq_frame_classify_start("A", 1, NULL, 0), WQ_START_OTHER);
}

/* Pieces mode: DATA payloads come back as they arrive, in order, never buffered, with LAST on the
 * piece that ends the frame; MSG frames stay whole; a header violation is still found first. */
static void test_data_pieces(void **state)
{
	(void)state;
	static uint8_t buf[3 * WQ_MAX_DATA];
	static uint8_t data[WQ_MAX_DATA];
	for (size_t k = 0; k < sizeof data; k++)
		data[k] = (uint8_t)(k * 7 + 3);
	size_t len = 0;
	put_frame(buf, &len, WQ_FRAME_DATA, 5, data, sizeof data);
	put_frame(buf, &len, WQ_FRAME_MSG, 0, "{\"m\":\"x\"}", 9);
	put_frame(buf, &len, WQ_FRAME_DATA, 6, data, 100);
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG);
	wq_frame_reader_set_data_pieces(r, 1);
	static const size_t slices[] = {1, 1000, 65536, 3 * WQ_MAX_DATA};
	for (size_t si = 0; si < sizeof slices / sizeof *slices; si++) {
		size_t off = 0, got5 = 0, got6 = 0;
		int msgs = 0, last5 = 0, last6 = 0;
		while (off < len) {
			size_t n = len - off < slices[si] ? len - off : slices[si];
			size_t used;
			struct wq_frame f;
			int rc = wq_frame_reader_feed(r, buf + off, n, &used, &f);
			assert_true(rc >= 0);
			off += used;
			if (rc != 1)
				continue;
			if (f.type == WQ_FRAME_MSG) {
				assert_int_equal(f.piece, 9);
				assert_memory_equal(f.payload, "{\"m\":\"x\"}", 9);
				assert_true(f.last);
				msgs++;
			} else if (f.xfer == 5) {
				assert_int_equal(f.length, WQ_MAX_DATA);
				assert_true(f.piece >= 1 && got5 + f.piece <= WQ_MAX_DATA);
				assert_memory_equal(f.payload, data + got5, f.piece);
				got5 += f.piece;
				assert_int_equal(f.last, got5 == WQ_MAX_DATA);
				last5 += f.last;
			} else {
				assert_int_equal(f.xfer, 6);
				assert_memory_equal(f.payload, data + got6, f.piece);
				got6 += f.piece;
				last6 += f.last;
			}
		}
		assert_int_equal(got5, WQ_MAX_DATA);
		assert_int_equal(got6, 100);
		assert_int_equal(msgs, 1);
		assert_int_equal(last5, 1);
		assert_int_equal(last6, 1);
		/* only the small MSG was ever gathered (one-byte slices split every payload) */
		assert_true(wq_frame_reader_buffer_peak(r) <= 1024);
	}
	/* an oversized DATA length is refused before any piece */
	uint8_t bad[WQ_FRAME_HEADER_SIZE + 4];
	wq_frame_pack_header(bad, WQ_FRAME_DATA, 1, WQ_MAX_DATA + 1);
	size_t used;
	struct wq_frame f;
	assert_int_equal(wq_frame_reader_feed(r, bad, sizeof bad, &used, &f), HTC_ETOOBIG);
	wq_frame_reader_delete(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pack_header),   cmocka_unit_test(test_slices),
	    cmocka_unit_test(test_many_at_once),  cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_header_fields), cmocka_unit_test(test_growth_bounded),
	    cmocka_unit_test(test_classify),      cmocka_unit_test(test_data_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
