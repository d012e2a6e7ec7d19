/* fuzz_wq_frame.c: libFuzzer target for the Work Queue frame reader (wq_frame.h). The input
 * after two control bytes is fed in slices whose sizes come from the input, and the frames (or
 * the violation) must be exactly those of feeding it whole; MSG payloads also go through
 * json_loadb as the connection decodes them. Built and run by test/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "htc_error.h"
#include "wq_frame.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint8_t type;
	uint32_t xfer, length, sum;
};

struct run {
	struct seen *frames;
	size_t n;
	int error;
	char text[WQ_FRAME_TEXT_SIZE];
};

static uint32_t checksum(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* Feeds IN (LEN bytes) in slices: SEED 0 means all at once. RAISE raises the MSG limit after the
 * first frame, as authentication does. */
static void run_reader(const uint8_t *in, size_t len, uint32_t seed, int raise, struct run *out)
{
	struct wq_frame_reader *r = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	if (!r)
		abort();
	size_t off = 0;
	uint32_t x = seed | 1;
	while (off < len && !out->error) {
		size_t slice = len - off;
		if (seed) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			size_t s = (x & 0x100) ? (x % 4) + 1 : (x % 97) + 1;
			if (s < slice)
				slice = s;
		}
		/* a private copy of exactly the slice, so any over-read is caught by ASan */
		uint8_t *copy = malloc(slice);
		if (!copy)
			abort();
		memcpy(copy, in + off, slice);
		size_t pos = 0;
		while (pos < slice) {
			size_t used = 0;
			struct wq_frame f;
			int rc = wq_frame_reader_feed(r, copy + pos, slice - pos, &used, &f);
			if (used > slice - pos)
				abort();
			pos += used;
			if (rc < 0) {
				size_t again = 1;
				if (wq_frame_reader_feed(r, copy, slice, &again, &f) != rc ||
				    again != 0)
					abort(); /* the error must stick */
				if (rc != HTC_EPROTO && rc != HTC_ETOOBIG)
					abort();
				out->error = rc;
				memcpy(out->text, wq_frame_reader_error(r), sizeof out->text);
				if (!out->text[0])
					abort();
				break;
			}
			if (rc == 0) {
				if (pos != slice)
					abort();
				continue;
			}
			size_t max =
			    f.type == WQ_FRAME_MSG ? wq_frame_reader_msg_limit(r) : WQ_MAX_DATA;
			if ((f.type != WQ_FRAME_MSG && f.type != WQ_FRAME_DATA) || f.length > max ||
			    f.length == 0 || (f.type == WQ_FRAME_MSG) != (f.xfer == 0))
				abort();
			struct seen s = {f.type, f.xfer, f.length, checksum(f.payload, f.length)};
			out->frames = realloc(out->frames, (out->n + 1) * sizeof *out->frames);
			if (!out->frames)
				abort();
			out->frames[out->n++] = s;
			if (f.type == WQ_FRAME_MSG) {
				json_error_t err;
				json_t *j = json_loadb((const char *)f.payload, f.length,
				                       JSON_REJECT_DUPLICATES, &err);
				json_decref(j);
			}
			if (raise && out->n == 1)
				wq_frame_reader_set_msg_limit(r, WQ_MAX_MSG);
		}
		free(copy);
		off += slice;
	}
	/* the buffer never outgrows the largest frame allowed */
	size_t bound = WQ_MAX_MSG > WQ_MAX_DATA ? WQ_MAX_MSG : WQ_MAX_DATA;
	if (wq_frame_reader_buffer_peak(r) > bound)
		abort();
	wq_frame_reader_delete(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	int raise = data[0] & 1;
	uint32_t seed = ((uint32_t)data[0] << 8 | data[1]) + 1;
	struct run whole = {0}, sliced = {0};
	run_reader(data + 2, size - 2, 0, raise, &whole);
	run_reader(data + 2, size - 2, seed, raise, &sliced);
	if (whole.n != sliced.n || whole.error != sliced.error ||
	    strcmp(whole.text, sliced.text) != 0)
		abort();
	for (size_t i = 0; i < whole.n; i++) {
		const struct seen *a = &whole.frames[i], *b = &sliced.frames[i];
		if (a->type != b->type || a->xfer != b->xfer || a->length != b->length ||
		    a->sum != b->sum)
			abort();
	}
	free(whole.frames);
	free(sliced.frames);
	return 0;
}
