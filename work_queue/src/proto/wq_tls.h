/* wq_tls.h: the TLS layer of a Work Queue connection, an OpenSSL 3 engine on
 * memory BIOs. It owns no socket and never blocks: the caller feeds it the
 * ciphertext read from the socket, takes out the ciphertext to write, and
 * exchanges plaintext frames with it (doc/work-queue-protocol.md 3.1 and 4).
 *
 * Typical use on a libuv connection:
 *   - read callback: wq_tls_feed() the bytes (keep what it did not accept and
 *     stop reading until plaintext has been drained), then call
 *     wq_tls_read() until it returns -EAGAIN, then send wq_tls_take_all();
 *   - to send a frame: wq_tls_write() (on -EAGAIN wait until the ciphertext
 *     already taken has been written), then send wq_tls_take_all();
 *   - after any call, ciphertext may be waiting (handshake messages, alerts):
 *     check wq_tls_out_pending() and send it, also after a failure, so the
 *     peer learns why the connection ends.
 *
 * Bounds: the engine keeps no plaintext buffer of its own (OpenSSL holds at
 * most one record, 16 KiB, being decrypted). Ciphertext received and not yet
 * decrypted is at most WQ_TLS_IN_MAX bytes: wq_tls_feed() accepts less than
 * it is given rather than grow. Ciphertext waiting to be taken is at most
 * WQ_TLS_OUT_MAX plus a few KiB (record overhead, handshake messages,
 * alerts): wq_tls_write() returns -EAGAIN rather than grow. */
#ifndef HTC_WQ_TLS_H
#define HTC_WQ_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Ciphertext received but not yet decrypted, at most (bytes). */
#define WQ_TLS_IN_MAX (64 * 1024)
/* wq_tls_write() accepts plaintext only while less ciphertext than this waits
 * to be taken (bytes). */
#define WQ_TLS_OUT_MAX (64 * 1024)
/* Size of the channel binding B (protocol section 4). */
#define WQ_TLS_BINDING_SIZE 32
/* Exporter label of the channel binding. */
#define WQ_TLS_BINDING_LABEL "EXPORTER-htc-wq-channel"
/* A SHA-256 fingerprint as text: 64 lowercase hex digits and a NUL. */
#define WQ_TLS_FINGERPRINT_SIZE 65

/* How a client checks the server's certificate (protocol section 3.1). */
enum wq_tls_verify {
	WQ_TLS_VERIFY_SYSTEM,      /* chain against the system trust store, and host name */
	WQ_TLS_VERIFY_CA_FILE,     /* chain against the CAs of one PEM file only, and host name */
	WQ_TLS_VERIFY_FINGERPRINT, /* SHA-256 of the server's DER certificate; no chain/name */
	WQ_TLS_VERIFY_NONE,        /* nothing is checked */
};

/* A configuration (an SSL_CTX) shared by any number of engines. */
struct wq_tls_config;
/* One TLS connection. */
struct wq_tls;

/* ---- configurations ---------------------------------------------------- */

/* A server configuration presenting the certificate chain in CERT_FILE (PEM:
 * the certificate first, then any intermediates) with the private key in
 * KEY_FILE (PEM, not encrypted). With CLIENT_CA_FILE (PEM, may be NULL),
 * clients must present a certificate issued by one of its CAs. Returns NULL
 * on failure with errno set and *ERR (if ERR is not NULL) set to a message
 * naming the file, e.g. "TLS key file k.pem does not match the certificate in
 * c.pem"; caller frees *ERR. */
struct wq_tls_config *wq_tls_config_server_create(const char *cert_file, const char *key_file,
                                                  const char *client_ca_file, char **err);

/* A client configuration. ARG depends on MODE: the CA file for
 * WQ_TLS_VERIFY_CA_FILE, the expected fingerprint for
 * WQ_TLS_VERIFY_FINGERPRINT (64 hex digits, case-insensitive, colons
 * allowed and ignored), unused (may be NULL) otherwise. NULL on failure, with
 * errno and *ERR as for the server. */
struct wq_tls_config *wq_tls_config_client_create(enum wq_tls_verify mode, const char *arg,
                                                  char **err);

/* Adds a certificate chain and key to present to the peer (a client
 * certificate, for masters started with a client CA). Files as for the
 * server. Returns 0, or a negative code with *ERR set (caller frees). */
int wq_tls_config_set_cert(struct wq_tls_config *cfg, const char *cert_file, const char *key_file,
                           char **err);

/* The OpenSSL SSL_CTX underneath, still owned by CFG: for tests and
 * diagnostics (for instance a test restricting protocol versions). Changes
 * apply to engines created afterwards. */
struct ssl_ctx_st *wq_tls_config_ssl_ctx(struct wq_tls_config *cfg);

/* Frees CFG. Engines made from it keep working (they hold their own
 * references). NULL is accepted. */
void wq_tls_config_delete(struct wq_tls_config *cfg);

/* ---- engines ------------------------------------------------------------- */

enum wq_tls_state {
	WQ_TLS_HANDSHAKING, /* handshake in progress */
	WQ_TLS_OPEN,        /* handshake complete: plaintext flows */
	WQ_TLS_CLOSED,      /* the peer sent close_notify: no more plaintext will come */
	WQ_TLS_FAILED,      /* fatal error: see wq_tls_error(); send what is pending, then close */
};

/* An engine for one connection. A client config makes a client, which starts
 * the handshake at once (take its ClientHello with wq_tls_take_all()); HOST is
 * the server's name or IP address, used for SNI (names only) and, in the
 * SYSTEM and CA_FILE modes, checked against the certificate (required then;
 * optional otherwise). A server config makes a server; HOST is ignored. CFG
 * may be deleted before the engine. NULL on failure with errno and *ERR set
 * (caller frees). */
struct wq_tls *wq_tls_create(struct wq_tls_config *cfg, const char *host, char **err);

/* Frees the engine and everything pending inside it. NULL is accepted. */
void wq_tls_delete(struct wq_tls *t);

/* Gives the engine LEN bytes of ciphertext received from the socket and
 * advances the handshake. Returns the number of bytes accepted (0 .. LEN):
 * fewer than LEN when WQ_TLS_IN_MAX bytes already wait to be decrypted (keep
 * the rest, stop reading the socket, call wq_tls_read() and feed again).
 * Returns HTC_EPROTO once the engine has failed (the text is in
 * wq_tls_error(); the bytes are dropped). Bytes after the peer's close_notify
 * are accepted and dropped. */
ssize_t wq_tls_feed(struct wq_tls *t, const void *data, size_t len);

/* Decrypts up to CAP bytes of plaintext into BUF. Returns the number of bytes
 * (> 0); -EAGAIN when more ciphertext is needed (or the handshake is not
 * complete); 0 when the peer sent close_notify (end of data); HTC_EPROTO on a
 * fatal error (text in wq_tls_error()). */
ssize_t wq_tls_read(struct wq_tls *t, void *buf, size_t cap);

/* Encrypts up to LEN bytes of plaintext. Returns the number accepted (> 0,
 * possibly fewer than LEN); -EAGAIN while the handshake is not complete or
 * WQ_TLS_OUT_MAX bytes of ciphertext wait to be taken (back-pressure);
 * -EPIPE after a close_notify was sent or received; HTC_EPROTO once failed. */
ssize_t wq_tls_write(struct wq_tls *t, const void *data, size_t len);

/* Bytes of ciphertext waiting to be sent. */
size_t wq_tls_out_pending(const struct wq_tls *t);

/* Moves up to CAP bytes of ciphertext to send into BUF; returns how many
 * (0 when none is waiting). */
size_t wq_tls_take(struct wq_tls *t, void *buf, size_t cap);

/* Moves all the ciphertext waiting into a new buffer (for uv_write; caller
 * frees it, with free(), when the write completes) and sets *LEN. Returns NULL
 * with *LEN = 0 when nothing is waiting. */
char *wq_tls_take_all(struct wq_tls *t, size_t *len);

/* Queues a close_notify alert (take and send it, then half-close the
 * socket). Returns 0; -ENOTCONN if the handshake has not completed (just
 * close the socket then); HTC_EPROTO once failed. Calling it twice is
 * harmless. */
int wq_tls_shutdown(struct wq_tls *t);

enum wq_tls_state wq_tls_state(const struct wq_tls *t);
/* True once the handshake has completed (state OPEN or CLOSED). */
bool wq_tls_handshake_done(const struct wq_tls *t);

/* The reason of a failure, for the log: "TLS handshake failed: REASON" when
 * it happened during the handshake, or at a client before any plaintext was
 * received (a TLS 1.3 client learns only after its last handshake message
 * that the server refused its certificate); "TLS error: REASON" otherwise. REASON is OpenSSL's,
 * with the certificate check's result in parentheses when the certificate
 * was refused, e.g. "certificate verify failed (hostname mismatch)". NULL
 * unless the state is WQ_TLS_FAILED. Owned by T. */
const char *wq_tls_error(const struct wq_tls *t);

/* Protocol version and cipher in use, e.g. "TLSv1.3 TLS_AES_256_GCM_SHA384"
 * (static strings from OpenSSL; "" before the handshake completes). */
const char *wq_tls_version(const struct wq_tls *t);
const char *wq_tls_cipher(const struct wq_tls *t);

/* Writes the channel binding B of protocol section 4:
 * SSL_export_keying_material with label WQ_TLS_BINDING_LABEL, 32 bytes, no
 * context. Returns 0; -ENOTCONN before the handshake completes; HTC_EPROTO if
 * OpenSSL fails. Both ends of a session get the same bytes. */
int wq_tls_channel_binding(struct wq_tls *t, uint8_t out[WQ_TLS_BINDING_SIZE]);

/* Writes the SHA-256 of the peer's DER certificate as 64 lowercase hex
 * digits. Returns 0; -ENOENT if the peer presented no certificate (a server
 * without client certificates) or the handshake has not completed. */
int wq_tls_peer_fingerprint(struct wq_tls *t, char out[WQ_TLS_FINGERPRINT_SIZE]);

/* Writes the SHA-256 fingerprint of the first certificate in PATH (PEM, or
 * DER) as 64 lowercase hex digits, the value a worker gives to
 * --ssl-fingerprint. Returns 0, or a negative code with *ERR (if not NULL)
 * set to a message naming the file (caller frees). */
int wq_tls_cert_file_fingerprint(const char *path, char out[WQ_TLS_FINGERPRINT_SIZE], char **err);

/* Normalises a fingerprint given by a user (64 hex digits, any case, colons
 * anywhere ignored, e.g. the output of `openssl x509 -fingerprint -sha256`
 * after its "=") to 64 lowercase hex digits. Returns 0, or HTC_EPARSE with
 * *ERR set (caller frees) naming the offending value. */
int wq_tls_fingerprint_parse(const char *text, char out[WQ_TLS_FINGERPRINT_SIZE], char **err);

/* ---- plain or TLS? ------------------------------------------------------- */

enum wq_tls_peek {
	WQ_TLS_PEEK_MORE,  /* too few bytes to tell yet */
	WQ_TLS_PEEK_TLS,   /* a TLS record: content type 0x14..0x17 (0x16 handshake, 0x15
	                      alert), then version major 0x03: feed it to the engine */
	WQ_TLS_PEEK_PLAIN, /* a plain frame header: 0xF5 0x71, type 0x01 (MSG): the master
	                      does not use TLS; decode its `error` frame in plaintext */
	WQ_TLS_PEEK_OTHER, /* neither: not the work queue protocol */
};

/* For a client expecting TLS: classifies the first LEN bytes received on the
 * connection (call it again with more bytes while it says MORE; at most 3
 * bytes are looked at). */
enum wq_tls_peek wq_tls_peek(const void *data, size_t len);

#endif
