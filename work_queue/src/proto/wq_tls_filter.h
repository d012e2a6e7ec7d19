/* wq_tls_filter.h: runs a Work Queue connection (wq_conn) inside TLS by installing a wq_tls engine
 * as the connection's byte filter, and makes the plain-or-TLS decision of
 * doc/work-queue-protocol.md section 3.1 on both sides: a master with TLS looks at the first byte
 * received, a worker with --ssl recognises a master's plain `error` frame before OpenSSL sees it.
 */
#ifndef HTC_WQ_TLS_FILTER_H
#define HTC_WQ_TLS_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "wq_conn.h"
#include "wq_tls.h"

/* Texts of the TLS mismatch refusals (section 9, cases 14 and 15). */
#define WQ_TLS_REQUIRED_TEXT   "this master requires TLS: start the worker with --ssl"
#define WQ_TLS_REQUIRED_LOG    "refused: plain connection to a TLS master"
#define WQ_TLS_UNEXPECTED_TEXT "this master does not use TLS: start the worker without --ssl"

struct wq_tls_filter;

/* Installs TLS on C, which must have just been created (before the loop runs, so that no byte has
 * been read yet). CFG is a server configuration on a master's accepted connection, or a client
 * configuration on a worker's connection; the engine keeps its own reference to it. HOST is the
 * master's name or address (client only; see wq_tls_create()).
 *
 * Server: the first byte received decides. 0x16 runs the TLS handshake and then frames inside TLS;
 * 0xF5 (a plain frame) gets a plain `error tls_required` WQ_TLS_REQUIRED_TEXT and a close (the
 * closed callback sees WQ_CONN_END_REFUSED and that text); anything else gets a plain `error proto`
 * "not the work queue protocol (first bytes ...)" (WQ_CONN_END_VIOLATION).
 * Client: the ClientHello is queued at once. If the first bytes received are a plain MSG frame
 * header, the master does not use TLS: from then on the received bytes go to the frame reader
 * unencrypted (so the caller receives the master's plain `error`), nothing more is sent, and
 * wq_tls_filter_plain_peer() is true.
 *
 * Frames sent before the handshake completes are kept (at most WQ_CONN_QUEUE_CAP bytes) and
 * encrypted once it has. A failed handshake logs "LABEL: TLS handshake failed: REASON", sends the
 * TLS alert, and closes; the closed callback gets WQ_CONN_END_ERROR with the text "TLS handshake
 * failed: REASON".
 *
 * Returns the filter, owned by C (freed with it), or NULL with errno set and *ERR (caller frees)
 * set to the reason when the engine cannot be created. */
struct wq_tls_filter *wq_tls_filter_install(struct wq_conn *c, struct wq_tls_config *cfg,
                                            const char *host, char **err);

/* True once the TLS handshake has completed (plaintext frames flow). */
bool wq_tls_filter_is_open(const struct wq_tls_filter *f);

/* Client: true when the master answered with a plain frame instead of TLS. */
bool wq_tls_filter_plain_peer(const struct wq_tls_filter *f);

/* The channel binding B of protocol section 4 (WQ_TLS_BINDING_SIZE bytes). Returns 0, -ENOTCONN
 * before the handshake has completed, or HTC_EPROTO. */
int wq_tls_filter_binding(struct wq_tls_filter *f, uint8_t out[WQ_TLS_BINDING_SIZE]);

/* The engine underneath (for its version, cipher or peer fingerprint); owned by the filter. */
struct wq_tls *wq_tls_filter_engine(struct wq_tls_filter *f);

#endif
