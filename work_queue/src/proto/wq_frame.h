/* wq_frame.h: the frame layer of the Work Queue protocol (doc/work-queue-protocol.md section 2):
 * header constants and limits, header packing, and an incremental frame reader that is fed
 * socket bytes in slices of any size. Pure code: no I/O, no logging. */
#ifndef HTC_WQ_FRAME_H
#define HTC_WQ_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define WQ_FRAME_HEADER_SIZE 12
#define WQ_FRAME_MAGIC0      0xF5
#define WQ_FRAME_MAGIC1      0x71
#define WQ_FRAME_MSG         1 /* a control message (one JSON object) */
#define WQ_FRAME_DATA        2 /* file bytes of an open transfer */
#define WQ_FRAME_TLS_BYTE    0x16

/* Limits of section 2.4. Fuzz builds lower WQ_MAX_MSG and WQ_MAX_DATA with -D. */
#define WQ_MAX_MSG_PREAUTH 8192 /* MSG payload before authentication */
#ifndef WQ_MAX_MSG
#define WQ_MAX_MSG 4194304 /* MSG payload after authentication (4 MiB) */
#endif
#ifndef WQ_MAX_DATA
#define WQ_MAX_DATA 262144 /* DATA payload (256 KiB); also the sender's chunk size */
#endif
#define WQ_MIN_MSG  2 /* the shortest JSON object, "{}" */
#define WQ_MIN_DATA 1

/* Size of the buffer that holds any violation text of the reader. */
#define WQ_FRAME_TEXT_SIZE 128

/* Writes a frame header for TYPE (WQ_FRAME_MSG or WQ_FRAME_DATA), transfer id XFER and payload
 * length LENGTH into OUT, big-endian. No checks: the caller passes valid values. */
void wq_frame_pack_header(uint8_t out[WQ_FRAME_HEADER_SIZE], uint8_t type, uint32_t xfer,
                          uint32_t length);

/* One complete frame. PAYLOAD points either into the reader's buffer or into the bytes given to
 * the feed call that completed it; it is valid until the next call on the reader and, in the
 * second case, only while those bytes are. */
struct wq_frame {
	uint8_t type; /* WQ_FRAME_MSG or WQ_FRAME_DATA */
	uint32_t xfer;
	uint32_t length; /* of the whole payload */
	const uint8_t *payload;
	uint32_t piece; /* bytes at PAYLOAD: LENGTH, or less for a piece of a DATA frame */
	int last;       /* 1 when this ends the frame (always, except for DATA pieces) */
};

struct wq_frame_reader;

/* Creates a reader whose MSG limit is MSG_LIMIT (WQ_MIN_MSG .. WQ_MAX_MSG; normally
 * WQ_MAX_MSG_PREAUTH). Returns NULL with errno EINVAL for a limit out of range. Free it with
 * wq_frame_reader_delete(). */
struct wq_frame_reader *wq_frame_reader_create(size_t msg_limit);
/* Frees the reader and its buffer. NULL is accepted. */
void wq_frame_reader_delete(struct wq_frame_reader *r);

/* With ON, DATA payloads are returned in pieces as the bytes come (each piece a return of 1 with
 * PIECE bytes at PAYLOAD, never copied into the reader's buffer; LAST on the piece that ends the
 * frame; the header is checked before the first), rather than gathered whole. MSG frames are
 * always whole. Takes effect from the next frame on. */
void wq_frame_reader_set_data_pieces(struct wq_frame_reader *r, int on);

/* Sets the MSG limit for every frame whose header is not complete yet (raised to WQ_MAX_MSG after
 * authentication). Returns 0, or -EINVAL outside WQ_MIN_MSG .. WQ_MAX_MSG. */
int wq_frame_reader_set_msg_limit(struct wq_frame_reader *r, size_t msg_limit);
size_t wq_frame_reader_msg_limit(const struct wq_frame_reader *r);

/* Consumes bytes of DATA (LEN bytes) up to the end of at most one frame and stores the number
 * consumed in *USED. Returns 1 when a frame is complete (in *F; the bytes after it are not
 * consumed: call again with DATA + *USED), 0 when all LEN bytes were consumed without completing
 * a frame, or HTC_EPROTO / HTC_ETOOBIG for a violation. Every header field is checked as soon as
 * its bytes are in, before anything is allocated; the payload buffer grows with the bytes
 * received, never beyond the frame's checked length. After a violation the reader stays in error:
 * every later call consumes nothing and returns the same code. */
int wq_frame_reader_feed(struct wq_frame_reader *r, const void *data, size_t len, size_t *used,
                         struct wq_frame *f);

/* The violation text (section 9 wording where fixed, e.g. "unknown frame type 7"), or "" when the
 * reader is not in error. Owned by the reader. */
const char *wq_frame_reader_error(const struct wq_frame_reader *r);
/* The `error` code for a return value of wq_frame_reader_feed: "too_big" for HTC_ETOOBIG,
 * otherwise "proto". Static string. */
const char *wq_frame_error_code(int rc);

/* Bytes currently allocated for the payload buffer, and the most ever allocated (for tests). */
size_t wq_frame_reader_buffer_size(const struct wq_frame_reader *r);
size_t wq_frame_reader_buffer_peak(const struct wq_frame_reader *r);

/* What the first bytes of a connection are (section 3.1). */
enum wq_frame_start {
	WQ_START_MORE = 0, /* no byte yet */
	WQ_START_FRAME,    /* 0xF5: a plain frame */
	WQ_START_TLS,      /* 0x16: a TLS handshake record */
	WQ_START_OTHER     /* anything else: TEXT receives the violation text */
};

/* Classifies the first bytes DATA (LEN bytes) of a connection from its first byte. For
 * WQ_START_OTHER, writes "not the work queue protocol (first bytes 47 45 54 20)" into TEXT (SIZE
 * bytes; WQ_FRAME_TEXT_SIZE is enough) with up to four bytes in lowercase hex (fewer when fewer
 * were received). TEXT may be NULL. */
enum wq_frame_start wq_frame_classify_start(const void *data, size_t len, char *text, size_t size);

#endif
