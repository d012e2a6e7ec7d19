/* wq_conn.h: one Work Queue connection over a libuv TCP stream: frames in and out, JSON message
 * decoding, keepalive pings, write-queue flow control, and the violation and close procedures of
 * doc/work-queue-protocol.md sections 2.4, 2.5 and 5.7. It knows nothing of message semantics;
 * the handshake and the master/worker state machines sit above it. */
#ifndef HTC_WQ_CONN_H
#define HTC_WQ_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "wq_frame.h"

/* Write-queue thresholds (section 2.4): above HIGH a file sender pauses; the writable callback
 * fires when the queue falls below LOW again; above CAP the peer is not reading (violation). */
#define WQ_CONN_QUEUE_HIGH (4u << 20)
#define WQ_CONN_QUEUE_LOW  (1u << 20)
#define WQ_CONN_QUEUE_CAP  (16u << 20)

#define WQ_CONN_LINGER_MS 2000 /* linger after a fatal error or a clean close */

struct wq_conn;

/* Why a connection ended (the argument of the closed callback). */
enum wq_conn_end {
	WQ_CONN_END_LOCAL,     /* wq_conn_close() or wq_conn_close_now() */
	WQ_CONN_END_EOF,       /* the peer closed its side */
	WQ_CONN_END_ERROR,     /* a socket read or write error */
	WQ_CONN_END_TIMEOUT,   /* no complete frame within the keepalive timeout */
	WQ_CONN_END_VIOLATION, /* a protocol violation, found here or raised by wq_conn_violation()
	                        */
	WQ_CONN_END_REFUSED    /* wq_conn_refuse(), or the first-byte check refused TLS */
};

/* Name of an end reason ("eof", "violation", ...). Static string. */
const char *wq_conn_end_name(enum wq_conn_end why);

/* Callbacks; any may be NULL. Every callback may call any wq_conn function on C, including
 * wq_conn_close_now() and wq_conn_delete(): the memory is freed only once the handles are closed
 * and the callback has returned. After the closed callback, or after wq_conn_delete(), no
 * callback is called again. */
struct wq_conn_callbacks {
	/* A MSG frame that decoded to a JSON object with a string "m". MSG (borrowed: json_incref
	 * it to keep it), NAME its "m" (valid as long as MSG), RAW/LEN the exact payload bytes
	 * (valid during the call). While keepalive is on, ping and pong are handled inside and not
	 * shown. */
	void (*message)(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
	                size_t len, void *user);
	/* A DATA frame: transfer id XFER (>= 1), LEN (1 .. WQ_MAX_DATA) bytes valid during the
	 * call; or, after wq_conn_set_data_pieces(), a piece of one. */
	void (*data)(struct wq_conn *c, uint32_t xfer, const uint8_t *bytes, size_t len,
	             void *user);
	/* The write queue went above WQ_CONN_QUEUE_HIGH and has now fallen below WQ_CONN_QUEUE_LOW.
	 */
	void (*writable)(struct wq_conn *c, void *user);
	/* The connection is over and its socket closed: called exactly once, with TEXT saying why
	 * (the violation text, "connection closed by the peer", a uv error, ...). */
	void (*closed)(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user);
};

/* Wraps TCP, a connected or accepted stream, which the connection now owns: it must have been
 * allocated with malloc (or xmalloc) and be initialised on a loop; the connection closes and frees
 * it. TCP->data is taken over. LABEL is the prefix of every log line, copied: "wq: 1.2.3.4:5123"
 * on a master (lines read "wq: 1.2.3.4:5123: protocol violation: ..."), "master HOST:PORT" on a
 * worker. CB is copied. Sets TCP_NODELAY and a 60 s TCP keepalive and starts reading; the MSG
 * limit starts at WQ_MAX_MSG_PREAUTH and keepalive is off. Returns NULL and sets errno if reading
 * cannot start (TCP is then closed and freed). The caller calls wq_conn_delete() once. */
struct wq_conn *wq_conn_create(uv_tcp_t *tcp, const char *label, const struct wq_conn_callbacks *cb,
                               void *user);

/* Detaches the caller: no callback is called from now on, and the memory is released when the
 * socket is closed. An open connection is closed at once; one already closing (violation, clean
 * close) finishes sending its last frame first. Safe inside callbacks; NULL is accepted. */
void wq_conn_delete(struct wq_conn *c);

/* Replaces the log label (e.g. once the worker's identity is known). */
void wq_conn_set_label(struct wq_conn *c, const char *label);
const char *wq_conn_label(const struct wq_conn *c);
/* The label without the "wq: " a master's labels begin with: for debug lines, which carry the
 * wq subsystem already. */
const char *wq_conn_name(const struct wq_conn *c);

/* Sets the MSG payload limit for both directions (WQ_MAX_MSG after authentication). Returns 0 or
 * -EINVAL outside WQ_MIN_MSG .. WQ_MAX_MSG. */
int wq_conn_set_msg_limit(struct wq_conn *c, size_t limit);

/* Keepalive (section 5.7), in milliseconds so that tests can use short values. With INTERVAL_MS
 * > 0 the connection sends `ping {seq}` after INTERVAL_MS without a complete frame received (one
 * ping outstanding at most), answers pings with pongs, ignores a pong with a wrong seq, and after
 * TIMEOUT_MS without a complete frame logs "LABEL: no complete frame received for N s", sends
 * `error timeout` (best effort) and closes (WQ_CONN_END_TIMEOUT). INTERVAL_MS 0 turns it off:
 * ping and pong then go to the message callback. Returns 0, or -EINVAL when TIMEOUT_MS <
 * INTERVAL_MS. */
int wq_conn_set_keepalive(struct wq_conn *c, uint64_t interval_ms, uint64_t timeout_ms);

/* How long a closing connection waits for its last frames and the peer's EOF (default
 * WQ_CONN_LINGER_MS). */
void wq_conn_set_linger(struct wq_conn *c, uint64_t linger_ms);

struct htc_clock;
/* The clock the rate limit of C's log lines reads (timeutil.h; borrowed, must outlive C; NULL,
 * the default: the monotonic clock). Keepalive and linger run on libuv timers, not on it. */
void wq_conn_set_clock(struct wq_conn *c, const struct htc_clock *clock);

/* Checks the first bytes received before any frame (a master without TLS, section 3.1): 0x16 gets
 * a plain `error tls_unexpected` and a close (WQ_CONN_END_REFUSED); another byte than 0xF5 is a
 * `proto` violation "not the work queue protocol (first bytes XX XX XX XX)". Call right after
 * create, before the loop runs. */
void wq_conn_check_first_bytes(struct wq_conn *c);

/* Sends MSG compactly encoded. Returns 0; HTC_ETOOBIG (nothing sent) if the encoding exceeds the
 * current MSG limit; -EINVAL if MSG is not an object or cannot be encoded; -ENOTCONN once the
 * connection is closing; HTC_ELIMIT if the frame would take the write queue over
 * WQ_CONN_QUEUE_CAP (the connection then fails with the violation "peer is not reading (16 MiB
 * waiting to be sent)"). The caller keeps its reference to MSG. */
int wq_conn_send_msg(struct wq_conn *c, json_t *msg);
/* Sends an already encoded MSG payload (for instance a hello whose bytes the caller hashes); the
 * caller guarantees it is one JSON object. Same returns; -EINVAL under WQ_MIN_MSG bytes. */
int wq_conn_send_msg_bytes(struct wq_conn *c, const void *payload, size_t len);
/* Sends a DATA frame for transfer XFER (>= 1) with LEN (1 .. WQ_MAX_DATA) bytes, copied. Same
 * returns as wq_conn_send_msg (-EINVAL for a bad XFER or LEN). */
int wq_conn_send_data(struct wq_conn *c, uint32_t xfer, const void *bytes, size_t len);

/* With ON, the data callback gets each DATA frame in pieces as the socket delivers them (in order,
 * 1 .. WQ_MAX_DATA bytes each, the header checked before the first piece) instead of whole frames
 * gathered into a buffer: one copy less for a consumer that appends the bytes anyway (the
 * transfer receiver turns it on). A frame counts as activity once its last piece is in. Takes
 * effect from the next frame on. */
void wq_conn_set_data_pieces(struct wq_conn *c, bool on);

/* Zero-copy DATA frames for file senders. wq_conn_data_buffer_new() returns room for WQ_MAX_DATA
 * payload bytes with the frame header's place in front (never NULL); it may be filled in any
 * thread. wq_conn_send_data_buffer() sends LEN bytes of it as a DATA frame for XFER without
 * copying, and takes the buffer whatever it returns (same returns as wq_conn_send_data). A buffer
 * not sent is given back with wq_conn_data_buffer_free() (NULL accepted). Buffers are recycled
 * through a small process-wide pool. */
uint8_t *wq_conn_data_buffer_new(void);
void wq_conn_data_buffer_free(uint8_t *payload);
int wq_conn_send_data_buffer(struct wq_conn *c, uint32_t xfer, uint8_t *payload, size_t len);

/* Bytes of frames queued and not yet reported written by libuv (at least
 * uv_stream_get_write_queue_size(); this is the memory the queue holds). */
size_t wq_conn_write_queue_size(const struct wq_conn *c);
/* True while a file sender should wait for the writable callback: the queue went above
 * WQ_CONN_QUEUE_HIGH and has not yet fallen below WQ_CONN_QUEUE_LOW. */
int wq_conn_write_blocked(const struct wq_conn *c);

/* Receive backpressure: stops reading the socket (uv_read_stop); frames already read and not yet
 * delivered wait too. Resuming delivers them from the loop (never from inside this call). */
void wq_conn_pause_reading(struct wq_conn *c);
void wq_conn_resume_reading(struct wq_conn *c);

/* A violation found by the layer above (section 2.5): logs "LABEL: protocol violation: TEXT"
 * (rate-limited process-wide to 10 lines per second, then "... N more suppressed"), stops reading,
 * queues `error {code: CODE, text: TEXT, fatal: true}`, half-closes, closes when the peer closes
 * or after the linger, then calls the closed callback (WQ_CONN_END_VIOLATION). Ignored when the
 * connection is already closing. */
void wq_conn_violation(struct wq_conn *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same procedure for a refusal: logs "LABEL: LOG_TEXT" and sends `error {CODE, PEER_TEXT,
 * fatal: true}`; the closed callback gets WQ_CONN_END_REFUSED and PEER_TEXT. */
void wq_conn_refuse(struct wq_conn *c, const char *code, const char *peer_text,
                    const char *log_text);

/* Clean close: sends LAST (e.g. `bye`; may be NULL), stops delivering frames, half-closes, and
 * closes when the peer closes or after the linger. The closed callback gets WQ_CONN_END_LOCAL.
 * Returns 0 or -ENOTCONN when already closing. */
int wq_conn_close(struct wq_conn *c, json_t *last);
/* Immediate close: anything unsent is dropped. The closed callback gets WQ_CONN_END_LOCAL. */
void wq_conn_close_now(struct wq_conn *c);
/* With QUIET, the violations and refusals this side detects are logged at debug level only, for
 * an owner that reports the end of the connection itself (the worker in its handshake says why
 * a connect failed once per reason, not at every attempt). */
void wq_conn_set_quiet(struct wq_conn *c, bool quiet);
/* Bytes received from the socket so far (before TLS): 0 for a peer that has been silent. */
uint64_t wq_conn_bytes_received(const struct wq_conn *c);

/* Logs "LABEL: TEXT" with warn(), through the process-wide limit of 10 lines per second shared by
 * all connections' violation lines; the second is measured on CLOCK (NULL: the monotonic
 * clock). */
void wq_conn_warn_limited(const struct htc_clock *clock, const char *label, const char *text);
/* Logs "... N more suppressed" for the lines the limit dropped once their window has ended (on
 * CLOCK, NULL: the monotonic clock); called periodically (the master's tick, the worker's
 * check) so that the sum is never lost when no further line comes. */
void wq_conn_warn_flush(const struct htc_clock *clock);

/*
 * Byte filter (for TLS, added later). All socket bytes pass through two functions of wq_conn.c:
 * conn_bytes_in() gets what the socket read and conn_bytes_out() sends encoded frames. A filter
 * installed with wq_conn_set_filter() is called instead: its IN gets the socket bytes and hands
 * the plaintext to wq_conn_input(); its OUT gets each encoded frame (plaintext) and hands the
 * bytes for the wire to wq_conn_write_raw(). Either returns 0 or a negative code (-errno or
 * HTC_E*), which closes the connection as WQ_CONN_END_ERROR with the text "filter: " +
 * htc_strerror(). A filter that must see the first bytes (TLS) is installed before the loop runs,
 * and can call wq_conn_input() later, e.g. once its handshake is done.
 */
struct wq_conn_filter {
	int (*in)(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx);
	int (*out)(struct wq_conn *c, const uint8_t *bytes, size_t len, void *fctx);
	void (*free)(void *fctx); /* called when the connection is freed; may be NULL */
};
void wq_conn_set_filter(struct wq_conn *c, const struct wq_conn_filter *f, void *fctx);
/* Plaintext frame bytes from a filter, into the frame reader. */
void wq_conn_input(struct wq_conn *c, const uint8_t *bytes, size_t len);
/* Wire bytes from a filter, copied and queued on the socket. Returns 0 or a negative code. */
int wq_conn_write_raw(struct wq_conn *c, const uint8_t *bytes, size_t len);
/* Ends the connection because the filter failed (e.g. a TLS handshake error), with the filter's
 * own TEXT rather than "filter: ...": logs "LABEL: TEXT" (through the same rate limit as violation
 * lines), stops reading and delivering, lets the bytes already queued with wq_conn_write_raw()
 * (e.g. a TLS alert) be written, half-closes, and closes when the peer closes or after the linger.
 * The closed callback gets WQ_CONN_END_ERROR and TEXT. Ignored once the connection is closing. */
void wq_conn_filter_fail(struct wq_conn *c, const char *text);

#endif
