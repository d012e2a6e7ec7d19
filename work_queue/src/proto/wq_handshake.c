/* wq_handshake.c: the handshake of a Work Queue connection on both sides (protocol sections 3 and
 * 4): TLS decision, `hello` checks, the password table and the HMAC proofs over the exact hello
 * bytes, with a deadline and a non-blocking delay before a wrong password is refused. Every
 * refusal sends the fixed texts of the protocol and yields a result the caller can act on. */
#include "wq_handshake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "htc_error.h"
#include "wq_frame.h"
#include "wq_tls_filter.h"
#include "xalloc.h"
#include "banned.h"

enum hs_state {
	H_HELLO,       /* waiting for the peer's hello */
	H_AUTH,        /* master: waiting for auth_proof; worker: waiting for auth_ok */
	H_DELAY,       /* master: a wrong proof, refusing after WQ_HS_AUTH_DELAY_MS */
	H_REFUSE_WAIT, /* master without a password, worker with one: the worker refuses next */
	H_DONE
};

struct wq_handshake {
	uv_loop_t *loop;
	struct wq_conn *c;
	struct wq_hs_config cfg;
	wq_hs_done_fn done;
	void *user;
	struct wq_tls_filter *tls;
	enum hs_state st;
	bool deleted;
	uv_timer_t deadline, delay;
	int handles_open;
	uint64_t started;

	char nonce[WQ_AUTH_NONCE_HEX]; /* ours */
	char *own_hello;               /* our hello payload as sent */
	size_t own_len;
	uint8_t *peer_hello; /* the peer's hello payload as received */
	size_t peer_len;
	struct wq_hello peer; /* parsed peer hello (holds a reference) */
	bool have_peer;
	struct wq_auth_transcript tr; /* worker: kept to check auth_ok */

	char *code, *text;
	struct wq_hs_result res;
};

const char *wq_hs_outcome_name(enum wq_hs_outcome o)
{
	switch (o) {
	case WQ_HS_OK: return "ok";
	case WQ_HS_RETRY: return "retry";
	case WQ_HS_PERMANENT: return "permanent";
	}
	return "unknown";
}

static const char *label(const struct wq_handshake *h)
{
	return wq_conn_label(h->c);
}

/* ---- the end ------------------------------------------------------------------ */

static void finish(struct wq_handshake *h, enum wq_hs_outcome o, const char *code, const char *text,
                   bool by_peer)
{
	if (h->st == H_DONE)
		return;
	h->st = H_DONE;
	uv_timer_stop(&h->deadline);
	uv_timer_stop(&h->delay);
	free(h->code);
	free(h->text);
	h->code = xstrdup(code ? code : "");
	h->text = xstrdup(text ? text : "");
	h->res.outcome = o;
	h->res.code = h->code;
	h->res.text = h->text;
	h->res.by_peer = by_peer;
	h->res.tls = h->tls != NULL;
	h->res.elapsed_ms = uv_now(h->loop) - h->started;
	debug(h->cfg.master ? D_WQ : D_WORKER, "%s: handshake %s%s%s%s", wq_conn_name(h->c),
	      wq_hs_outcome_name(o), *h->code ? " (" : "", h->code, *h->code ? ")" : "");
	if (!h->deleted && h->done)
		h->done(h, &h->res, h->user);
}

static bool permanent_code(const char *code)
{
	return !strcmp(code, "version") || !strcmp(code, "auth") || !strcmp(code, "tls_required") ||
	       !strcmp(code, "tls_unexpected");
}

static void violation(struct wq_handshake *h, const char *why)
{
	wq_conn_violation(h->c, "proto", "%s", why);
	finish(h, WQ_HS_RETRY, "proto", why, false);
}

/* Master: fatal `error` and close, logged "LABEL: LOG". */
static void master_refuse(struct wq_handshake *h, const char *code, const char *text,
                          const char *log, enum wq_hs_outcome o)
{
	wq_conn_refuse(h->c, code, text, log);
	finish(h, o, code, text, false);
}

/* Worker: logs LOG as it is, sends a fatal `error` and closes. */
static void worker_refuse(struct wq_handshake *h, const char *code, const char *text,
                          const char *log, enum wq_hs_outcome o)
{
	warn("%s", log);
	json_t *e = wq_msg_error_build(code, text, true, -1);
	if (!e || wq_conn_close(h->c, e) < 0)
		wq_conn_close_now(h->c);
	json_decref(e);
	finish(h, o, code, text, false);
}

static void success(struct wq_handshake *h)
{
	wq_conn_set_msg_limit(h->c, WQ_MAX_MSG);
	struct wq_hs_result *r = &h->res;
	r->peer_role = h->peer.role;
	r->peer_id = h->peer.id;
	r->peer_software = h->peer.software;
	r->peer_host = h->cfg.master ? h->peer.host : NULL;
	r->peer_project = h->peer.project;
	r->peer_minor = h->peer.proto_minor;
	if (h->cfg.master) {
		r->caps = wq_msg_caps_negotiate(h->peer.caps, h->cfg.caps);
		r->keepalive_interval = h->cfg.keepalive_interval;
		r->keepalive_timeout = h->cfg.keepalive_timeout;
	} else {
		r->caps = h->peer.caps & h->cfg.caps;
		r->keepalive_interval = h->peer.keepalive_interval;
		r->keepalive_timeout = h->peer.keepalive_timeout;
	}
	r->authenticated = h->cfg.key != NULL;
	finish(h, WQ_HS_OK, "", "", false);
}

/* ---- timers --------------------------------------------------------------------- */

static void deadline_fired(uv_timer_t *t)
{
	struct wq_handshake *h = t->data;
	if (h->st == H_DONE)
		return;
	char *text =
	    xasprintf("handshake not completed within %g s", (double)h->cfg.deadline_ms / 1000.0);
	wq_conn_refuse(h->c, "timeout", text, text);
	finish(h, WQ_HS_RETRY, "timeout", text, false);
	free(text);
}

static void delay_fired(uv_timer_t *t)
{
	struct wq_handshake *h = t->data;
	if (h->st != H_DELAY)
		return;
	master_refuse(h, "auth", WQ_HS_TEXT_WRONG_PW, "refused: wrong password", WQ_HS_PERMANENT);
}

/* ---- shared pieces ------------------------------------------------------------------ */

/* The TLS channel binding into the transcript's source; false (after a violation) if missing. */
static bool binding(struct wq_handshake *h, const unsigned char **b)
{
	*b = NULL;
	if (!h->tls)
		return true;
	int rc = wq_tls_filter_binding(h->tls, h->res.binding);
	if (rc < 0) {
		char *why = xasprintf("TLS channel binding unavailable: %s", htc_strerror(rc));
		violation(h, why);
		free(why);
		return false;
	}
	h->res.has_binding = true;
	*b = h->res.binding;
	return true;
}

static bool transcript(struct wq_handshake *h)
{
	const unsigned char *b;
	if (!binding(h, &b))
		return false;
	const char *nm = h->cfg.master ? h->nonce : h->peer.nonce;
	const char *nw = h->cfg.master ? h->peer.nonce : h->nonce;
	const void *wh = h->cfg.master ? (const void *)h->peer_hello : (const void *)h->own_hello;
	size_t wl = h->cfg.master ? h->peer_len : h->own_len;
	const void *mh = h->cfg.master ? (const void *)h->own_hello : (const void *)h->peer_hello;
	size_t ml = h->cfg.master ? h->own_len : h->peer_len;
	int rc = wq_auth_transcript_init(&h->tr, nm, nw, wh, wl, mh, ml, b);
	if (rc < 0) {
		violation(h, "cannot compute the authentication transcript");
		return false;
	}
	return true;
}

/* Reads the "proof" of auth_proof or auth_ok; false after a violation. */
static bool get_proof(struct wq_handshake *h, json_t *msg, const char *name, const char **proof)
{
	struct wq_msg_v v = {.m = name};
	if (wq_msg_str(&v, msg, "proof", WQ_REQ, 64, proof, NULL) != 0) {
		violation(h, v.why ? v.why : "bad proof");
		free(v.why);
		return false;
	}
	return true;
}

static int send_proof(struct wq_handshake *h, const char *m, const char *label_text)
{
	char proof[WQ_AUTH_PROOF_HEX];
	int rc = wq_auth_proof(h->cfg.key, &h->tr, label_text, proof);
	if (rc < 0)
		return rc;
	json_t *o = json_pack("{s:s,s:s}", "m", m, "proof", proof);
	rc = o ? wq_conn_send_msg(h->c, o) : -ENOMEM;
	json_decref(o);
	return rc;
}

static void keep_peer_hello(struct wq_handshake *h, const struct wq_hello *p, const uint8_t *raw,
                            size_t len)
{
	h->peer = *p;
	h->have_peer = true;
	h->peer_hello = xmalloc(len);
	memcpy(h->peer_hello, raw, len);
	h->peer_len = len;
}

static void on_error(struct wq_handshake *h, json_t *msg)
{
	struct wq_error e;
	char *why = NULL;
	if (wq_msg_error_parse(msg, &e, &why) != 0) {
		violation(h, why);
		free(why);
		return;
	}
	char *shown = wq_msg_escape(e.text, strlen(e.text), WQ_TEXT_RECV_MAX, false);
	if (!e.fatal) {
		notice("%s: %s", label(h), shown);
	} else {
		if (h->cfg.master)
			warn("%s: worker refused the connection: %s", label(h), shown);
		else
			warn("%s refused the connection: %s", label(h), shown);
		enum wq_hs_outcome o = permanent_code(e.code) ? WQ_HS_PERMANENT : WQ_HS_RETRY;
		char *code = xstrdup(e.code), *text = xstrdup(e.text);
		wq_conn_close(h->c, NULL);
		finish(h, o, code, text, true);
		free(code);
		free(text);
	}
	free(shown);
	wq_msg_error_free(&e);
}

/* ---- master ---------------------------------------------------------------------------- */

static void master_on_hello(struct wq_handshake *h, json_t *msg, const uint8_t *raw, size_t len)
{
	struct wq_hello w;
	char *why = NULL;
	int rc = wq_msg_hello_parse(msg, false, &w, &why);
	if (rc == HTC_EVERSION) {
		char *log = wq_msg_version_log(w.proto_major, w.proto_minor, true);
		master_refuse(h, "version", why, log, WQ_HS_PERMANENT);
		free(log);
		free(why);
		return;
	}
	if (rc != 0) {
		violation(h, why);
		free(why);
		return;
	}
	keep_peer_hello(h, &w, raw, len);
	const struct wq_auth_key *key = h->cfg.key;
	if (!w.auth && key) {
		master_refuse(h, "auth", WQ_HS_TEXT_MASTER_NEEDS_PW,
		              "refused: the worker has no password", WQ_HS_PERMANENT);
		return;
	}
	if (key && wq_auth_nonce(NULL, h->nonce) < 0) {
		master_refuse(h, "auth", "the master cannot make a nonce",
		              "refused: cannot make a nonce", WQ_HS_RETRY);
		return;
	}
	struct wq_hello m = {
	    .role = WQ_ROLE_MASTER,
	    .software = h->cfg.software,
	    .id = h->cfg.id,
	    .project = h->cfg.project,
	    .caps = wq_msg_caps_negotiate(w.caps, h->cfg.caps),
	    .auth = key != NULL,
	    .nonce = key ? h->nonce : NULL,
	    .keepalive_interval = h->cfg.keepalive_interval,
	    .keepalive_timeout = h->cfg.keepalive_timeout,
	};
	json_t *o = wq_msg_hello_build(&m);
	h->own_hello = o ? wq_msg_encode(o, &h->own_len) : NULL;
	json_decref(o);
	if (!h->own_hello || wq_conn_send_msg_bytes(h->c, h->own_hello, h->own_len) < 0) {
		wq_conn_close_now(h->c);
		finish(h, WQ_HS_RETRY, "", "cannot send the master's hello", false);
		return;
	}
	if (w.auth && !key) {
		h->st = H_REFUSE_WAIT; /* the worker refuses next (section 4 table) */
		return;
	}
	if (key) {
		h->st = H_AUTH;
		return;
	}
	success(h);
}

static void master_on_proof(struct wq_handshake *h, json_t *msg)
{
	const char *proof;
	if (!get_proof(h, msg, "auth_proof", &proof) || !transcript(h))
		return;
	int rc = wq_auth_verify(h->cfg.key, &h->tr, WQ_AUTH_LABEL_WORKER, proof);
	if (rc == HTC_EAUTH) {
		/* slow down password guessing without blocking the loop */
		h->st = H_DELAY;
		wq_conn_pause_reading(h->c);
		uv_timer_start(&h->delay, delay_fired, WQ_HS_AUTH_DELAY_MS, 0);
		return;
	}
	if (rc == 0)
		rc = send_proof(h, "auth_ok", WQ_AUTH_LABEL_MASTER);
	if (rc < 0) {
		wq_conn_close_now(h->c);
		finish(h, WQ_HS_RETRY, "", htc_strerror(rc), false);
		return;
	}
	success(h);
}

/* ---- worker ---------------------------------------------------------------------------- */

static void worker_on_hello(struct wq_handshake *h, json_t *msg, const uint8_t *raw, size_t len)
{
	struct wq_hello m;
	char *why = NULL;
	int rc = wq_msg_hello_parse(msg, true, &m, &why);
	if (rc == HTC_EVERSION) {
		char *v = wq_msg_version_log(m.proto_major, m.proto_minor, false);
		char *log = xasprintf("%s %s", label(h), v);
		worker_refuse(h, "version", why, log, WQ_HS_PERMANENT);
		free(log);
		free(v);
		free(why);
		return;
	}
	if (rc != 0) {
		violation(h, why);
		free(why);
		return;
	}
	keep_peer_hello(h, &m, raw, len);
	const char *p = h->cfg.project;
	if (p && (!m.project || strcmp(p, m.project))) {
		char *text = m.project ? xasprintf("this worker serves project \"%s\", the master "
		                                   "serves \"%s\"",
		                                   p, m.project)
		                       : xasprintf("this worker serves project \"%s\", the master "
		                                   "serves no project",
		                                   p);
		char *log = xasprintf("%s: %s", label(h), text);
		worker_refuse(h, "project", text, log, WQ_HS_RETRY);
		free(log);
		free(text);
		return;
	}
	const struct wq_auth_key *key = h->cfg.key;
	if (m.auth && !key) {
		char *log = xasprintf(
		    "%s requires a password but this worker has none; refusing it", label(h));
		worker_refuse(h, "auth", "this worker has no password but the master requires one",
		              log, WQ_HS_PERMANENT);
		free(log);
		return;
	}
	if (!m.auth && key) {
		char *log = xasprintf("%s does not use a password but this worker was given one; "
		                      "refusing it",
		                      label(h));
		worker_refuse(h, "auth", WQ_HS_TEXT_MASTER_HAS_NO_PW, log, WQ_HS_PERMANENT);
		free(log);
		return;
	}
	if (!key) {
		success(h);
		return;
	}
	if (!transcript(h))
		return;
	rc = send_proof(h, "auth_proof", WQ_AUTH_LABEL_WORKER);
	if (rc < 0) {
		wq_conn_close_now(h->c);
		finish(h, WQ_HS_RETRY, "", htc_strerror(rc), false);
		return;
	}
	h->st = H_AUTH;
}

static void worker_on_auth_ok(struct wq_handshake *h, json_t *msg)
{
	const char *proof;
	if (!get_proof(h, msg, "auth_ok", &proof))
		return;
	int rc = wq_auth_verify(h->cfg.key, &h->tr, WQ_AUTH_LABEL_MASTER, proof);
	if (rc == HTC_EAUTH) {
		char *log = xasprintf("%s failed to prove the password (impostor, or a different "
		                      "password file); refusing it",
		                      label(h));
		worker_refuse(h, "auth", WQ_HS_TEXT_MASTER_PROOF, log, WQ_HS_PERMANENT);
		free(log);
		return;
	}
	if (rc < 0) {
		wq_conn_close_now(h->c);
		finish(h, WQ_HS_RETRY, "", htc_strerror(rc), false);
		return;
	}
	success(h);
}

/* ---- entry points --------------------------------------------------------------------- */

bool wq_handshake_message(struct wq_handshake *h, json_t *msg, const char *name, const uint8_t *raw,
                          size_t len)
{
	if (h->st == H_DONE)
		return false;
	if (h->st == H_DELAY)
		return true; /* reading is paused; nothing more is looked at */
	if (!strcmp(name, "error")) {
		on_error(h, msg);
		return true;
	}
	if (h->tls && wq_tls_filter_plain_peer(h->tls)) {
		char *why =
		    xasprintf("the master does not use TLS and sent \"%s\" in plaintext", name);
		wq_conn_close_now(h->c);
		finish(h, WQ_HS_RETRY, "proto", why, false);
		free(why);
		return true;
	}
	if (h->st == H_REFUSE_WAIT) {
		master_refuse(h, "auth", WQ_HS_TEXT_MASTER_HAS_NO_PW,
		              "refused: the worker was given a password but this master has none",
		              WQ_HS_PERMANENT);
		return true;
	}
	bool status = h->have_peer ? h->peer.role == WQ_ROLE_STATUS : h->cfg.role == WQ_ROLE_STATUS;
	enum wq_dir dir;
	if (h->cfg.master)
		dir = status ? WQ_DIR_S2M : WQ_DIR_W2M;
	else
		dir = status ? WQ_DIR_M2S : WQ_DIR_M2W;
	enum wq_state s = h->st == H_HELLO ? WQ_STATE_HELLO : WQ_STATE_AUTH;
	char *why = NULL;
	if (wq_msg_allowed(name, dir, s, &why) != 0) {
		violation(h, why);
		free(why);
		return true;
	}
	if (!strcmp(name, "hello")) {
		if (h->cfg.master)
			master_on_hello(h, msg, raw, len);
		else
			worker_on_hello(h, msg, raw, len);
	} else if (!strcmp(name, "auth_proof")) {
		master_on_proof(h, msg);
	} else if (!strcmp(name, "auth_ok")) {
		worker_on_auth_ok(h, msg);
	} else {
		char *t =
		    xasprintf("message \"%s\" not expected in state %s", name, wq_state_name(s));
		violation(h, t);
		free(t);
	}
	return true;
}

bool wq_handshake_data(struct wq_handshake *h, uint32_t xfer)
{
	if (h->st == H_DONE)
		return false;
	if (h->st == H_DELAY)
		return true;
	char *why = xasprintf("data for transfer %u before authentication", xfer);
	violation(h, why);
	free(why);
	return true;
}

void wq_handshake_closed(struct wq_handshake *h, enum wq_conn_end why, const char *text)
{
	if (h->st == H_DONE)
		return;
	const char *code = "";
	enum wq_hs_outcome o = WQ_HS_RETRY;
	if (why == WQ_CONN_END_REFUSED && !strcmp(text, WQ_TLS_REQUIRED_TEXT)) {
		code = "tls_required";
		o = WQ_HS_PERMANENT;
	} else if (why == WQ_CONN_END_REFUSED && !strcmp(text, WQ_TLS_UNEXPECTED_TEXT)) {
		code = "tls_unexpected";
		o = WQ_HS_PERMANENT;
	} else if (why == WQ_CONN_END_VIOLATION) {
		code = "proto";
	} else if (why == WQ_CONN_END_TIMEOUT) {
		code = "timeout";
	}
	finish(h, o, code, text, false);
}

bool wq_handshake_finished(const struct wq_handshake *h)
{
	return h->st == H_DONE;
}

struct wq_handshake *wq_handshake_start(uv_loop_t *loop, struct wq_conn *c,
                                        const struct wq_hs_config *cfg, wq_hs_done_fn done,
                                        void *user, char **err)
{
	if (err)
		*err = NULL;
	if (!cfg->software || !cfg->id || (!cfg->master && !cfg->host) ||
	    (!cfg->master && cfg->tls && !cfg->tls_host) ||
	    (!cfg->master && cfg->role != WQ_ROLE_WORKER && cfg->role != WQ_ROLE_STATUS)) {
		if (err)
			*err =
			    xstrdup("handshake: incomplete configuration (software, id, host, or "
			            "TLS host missing)");
		errno = EINVAL;
		return NULL;
	}
	struct wq_handshake *h = xcalloc(1, sizeof *h);
	h->loop = loop;
	h->c = c;
	h->cfg = *cfg;
	if (!h->cfg.keepalive_interval)
		h->cfg.keepalive_interval = 30;
	if (!h->cfg.keepalive_timeout)
		h->cfg.keepalive_timeout = 120;
	if (!h->cfg.deadline_ms)
		h->cfg.deadline_ms = WQ_HS_DEADLINE_MS;
	h->done = done;
	h->user = user;
	h->st = H_HELLO;
	h->started = uv_now(loop);

	if (cfg->tls) {
		h->tls =
		    wq_tls_filter_install(c, cfg->tls, cfg->master ? NULL : cfg->tls_host, err);
		if (!h->tls) {
			int e = errno;
			free(h);
			errno = e;
			return NULL;
		}
	} else if (cfg->master) {
		wq_conn_check_first_bytes(c);
	}

	if (!cfg->master) {
		if (cfg->key && wq_auth_nonce(NULL, h->nonce) < 0) {
			if (err)
				*err = xstrdup("handshake: cannot make a random nonce");
			free(h);
			errno = EIO;
			return NULL;
		}
		struct wq_hello w = {
		    .role = cfg->role,
		    .software = cfg->software,
		    .id = cfg->id,
		    .host = cfg->host,
		    .project = cfg->project,
		    .caps = cfg->caps,
		    .auth = cfg->key != NULL,
		    .nonce = cfg->key ? h->nonce : NULL,
		};
		json_t *o = wq_msg_hello_build(&w);
		h->own_hello = o ? wq_msg_encode(o, &h->own_len) : NULL;
		json_decref(o);
		if (!h->own_hello) {
			if (err)
				*err = xstrdup(
				    "handshake: cannot build the worker's hello (a field is "
				    "not valid UTF-8?)");
			free(h);
			errno = EINVAL;
			return NULL;
		}
	}

	uv_timer_init(loop, &h->deadline);
	uv_timer_init(loop, &h->delay);
	h->deadline.data = h;
	h->delay.data = h;
	h->handles_open = 2;
	uv_timer_start(&h->deadline, deadline_fired, h->cfg.deadline_ms, 0);

	/* A failed send closes the connection; the closed callback then ends the handshake. */
	if (!cfg->master)
		wq_conn_send_msg_bytes(c, h->own_hello, h->own_len);
	return h;
}

static void handle_closed(uv_handle_t *hd)
{
	struct wq_handshake *h = hd->data;
	if (--h->handles_open > 0)
		return;
	if (h->have_peer)
		wq_msg_hello_free(&h->peer);
	free(h->own_hello);
	free(h->peer_hello);
	free(h->code);
	free(h->text);
	free(h);
}

void wq_handshake_delete(struct wq_handshake *h)
{
	if (!h || h->deleted)
		return;
	h->deleted = true;
	uv_timer_stop(&h->deadline);
	uv_timer_stop(&h->delay);
	uv_close((uv_handle_t *)&h->deadline, handle_closed);
	uv_close((uv_handle_t *)&h->delay, handle_closed);
}
