/* wq_handshake.h: both sides of the Work Queue connection handshake (doc/work-queue-protocol.md
 * sections 3 and 4): the TLS decision, the `hello` exchange with its version, project and
 * capability checks, and the password proofs, as an asynchronous state machine over a wq_conn.
 * It ends with one result: success with what was negotiated, or a refusal that the worker maps to
 * exit status 2 (permanent) or to a retry. */
#ifndef HTC_WQ_HANDSHAKE_H
#define HTC_WQ_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_msg.h"
#include "wq_tls.h"

#define WQ_HS_DEADLINE_MS   30000 /* accept/connect -> end of the handshake (section 2.4) */
#define WQ_HS_AUTH_DELAY_MS 1000  /* before refusing a wrong password */

/* Refusal texts of sections 3.2 and 4 (the peer's text of the fatal `error`). */
#define WQ_HS_TEXT_MASTER_NEEDS_PW                                                                 \
	"this master requires a password: start the worker with --password FILE"
#define WQ_HS_TEXT_MASTER_HAS_NO_PW "this worker was given a password but the master has none"
#define WQ_HS_TEXT_WRONG_PW                                                                        \
	"authentication failed: the worker's password does not match the master's"
#define WQ_HS_TEXT_MASTER_PROOF "the master failed to prove the password"

/* What one side is. Strings and keys are borrowed and must outlive the handshake. */
struct wq_hs_config {
	bool master;                   /* the master's side of an accepted connection */
	enum wq_role role;             /* worker side: WQ_ROLE_WORKER or WQ_ROLE_STATUS */
	const struct wq_auth_key *key; /* the password, or NULL */
	struct wq_tls_config *tls;     /* server (master) or client (worker) config, or NULL */
	const char *tls_host;          /* worker with TLS: the master's name or address */
	const char *software;          /* "htc 0.1.0" */
	const char *id;                /* worker_id or master_id: 32 lowercase hex */
	const char *host;              /* worker: this host's name */
	const char *project;           /* worker: -M PROJECT or NULL; master: its name or NULL */
	unsigned caps;                 /* worker: offered; master: supported (WQ_CAP_*) */
	int64_t keepalive_interval;    /* master: announced, seconds (0: 30) */
	int64_t keepalive_timeout;     /* master: announced, seconds (0: 120) */
	uint64_t deadline_ms;          /* 0: WQ_HS_DEADLINE_MS */
};

enum wq_hs_outcome {
	WQ_HS_OK,        /* authenticated: the caller takes the connection over */
	WQ_HS_RETRY,     /* failed or refused; another attempt or master may work */
	WQ_HS_PERMANENT, /* refused for version, auth, tls_required or tls_unexpected: exit 2 */
};

/* The result. Strings stay valid until wq_handshake_delete(). */
struct wq_hs_result {
	enum wq_hs_outcome outcome;
	const char *code; /* the refusal's `error` code, sent or received; "" when none */
	const char *text; /* the refusal's text, or why the connection ended; "" on success */
	bool by_peer;     /* the peer refused (we received its fatal `error`) */
	/* on success: */
	enum wq_role peer_role;
	const char *peer_id; /* worker_id or master_id */
	const char *peer_software;
	const char *peer_host;                         /* worker's host (master side), else NULL */
	const char *peer_project;                      /* the other side's project, or NULL */
	int64_t peer_minor;                            /* the peer's minor protocol version */
	unsigned caps;                                 /* negotiated */
	int64_t keepalive_interval, keepalive_timeout; /* announced by the master, seconds */
	bool authenticated;                            /* a password was proven both ways */
	bool tls;
	bool has_binding;
	uint8_t binding[WQ_TLS_BINDING_SIZE]; /* the TLS channel binding the proofs used */
	uint64_t elapsed_ms; /* since wq_handshake_start (the master's deadline runs on until
	                        `identity`: the caller waits at most deadline - elapsed for it) */
};

struct wq_handshake;

/* Called exactly once, when the outcome is known (never from inside wq_handshake_start). May call
 * wq_handshake_delete(), wq_conn_delete() and any wq_conn function. After a failure the
 * connection is already closing (the caller still gets its own closed callback unless it deletes
 * the connection). After success the MSG limit is WQ_MAX_MSG; keepalive is left to the caller. */
typedef void (*wq_hs_done_fn)(struct wq_handshake *h, const struct wq_hs_result *r, void *user);

/* Starts the handshake on C, which must have just been created (before the loop has run) with
 * callbacks that forward to wq_handshake_message() and wq_handshake_closed() until DONE has been
 * called. Installs the TLS filter (CFG->tls) or, on a master without TLS, the first-byte check;
 * a worker sends its `hello` at once. LOOP runs the deadline and delay timers. Returns NULL with
 * errno set and *ERR (caller frees) when the TLS engine cannot be made or CFG is incomplete. */
struct wq_handshake *wq_handshake_start(uv_loop_t *loop, struct wq_conn *c,
                                        const struct wq_hs_config *cfg, wq_hs_done_fn done,
                                        void *user, char **err);

/* A message received while the handshake runs (the arguments of the message callback). Returns
 * true when the handshake took it, false once it is over (the caller handles the message). */
bool wq_handshake_message(struct wq_handshake *h, json_t *msg, const char *name, const uint8_t *raw,
                          size_t len);

/* A DATA frame received during the handshake: a violation. Returns false once it is over. */
bool wq_handshake_data(struct wq_handshake *h, uint32_t xfer);

/* The connection's closed callback, forwarded: ends a handshake still under way (RETRY, or the
 * refusal the connection itself made: tls_required, tls_unexpected, proto). */
void wq_handshake_closed(struct wq_handshake *h, enum wq_conn_end why, const char *text);

/* True once DONE has been called. */
bool wq_handshake_finished(const struct wq_handshake *h);

/* Stops the timers and frees H (later, from the loop); does not touch the connection. Safe inside
 * DONE; NULL is accepted. Delete the handshake no later than its connection (its timers use the
 * connection while it runs). */
void wq_handshake_delete(struct wq_handshake *h);

/* "ok", "retry", "permanent". */
const char *wq_hs_outcome_name(enum wq_hs_outcome o);

#endif
