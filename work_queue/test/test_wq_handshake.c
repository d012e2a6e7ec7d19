/* test_wq_handshake.c: unit tests for the connection handshake (wq_handshake.h) and the TLS filter
 * (wq_tls_filter.h) over real loopback TCP in one libuv loop: the master's and the worker's side
 * against each other with and without passwords and TLS, and against fake peers built from the
 * lower-level modules (another protocol version, a wrong master proof, garbage, silence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_frame.h"
#include "wq_handshake.h"
#include "wq_msg.h"
#include "wq_tls.h"
#include "wq_tls_filter.h"
#include "ts_loop.h"
#include "ts_net.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

#define MASTER_ID "0123456789abcdef0123456789abcdef"
#define WORKER_ID "fedcba9876543210fedcba9876543210"

static char *tmpdir, cert_pem[256], key_pem[256], log_path[256];
static char cert_fp[65];

/* ---- a self-signed certificate, made with the OpenSSL API --------------------- */

static void add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

static int setup(void **state)
{
	(void)state;
	tmpdir = ts_tmpdir_create("test_wq_handshake");
	snprintf(cert_pem, sizeof cert_pem, "%s/master.pem", tmpdir);
	snprintf(key_pem, sizeof key_pem, "%s/master.key", tmpdir);
	snprintf(log_path, sizeof log_path, "%s/log", tmpdir);
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	if (!k || !x)
		return -1;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
	                           -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE");
	add_ext(x, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
	if (X509_sign(x, k, EVP_sha256()) <= 0)
		return -1;
	FILE *f = fopen(cert_pem, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key_pem, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	X509_digest(x, EVP_sha256(), md, &n);
	for (unsigned i = 0; i < n; i++)
		snprintf(cert_fp + 2 * i, 3, "%02x", md[i]);
	X509_free(x);
	EVP_PKEY_free(k);
	return debug_config_file(log_path);
}

static int teardown(void **state)
{
	(void)state;
	debug_config_file(NULL);
	ts_tmpdir_remove(tmpdir);
	tmpdir = NULL;
	return 0;
}

/* True if the log has a line containing S. */
static int log_has(const char *s)
{
	FILE *f = fopen(log_path, "r");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

/* ---- a loop and connected socket pairs (ts_net.h), run through ts_loop.h ---------- */

struct env {
	uv_loop_t loop;
};

static void env_init(struct env *e)
{
	memset(e, 0, sizeof *e);
	assert_int_equal(uv_loop_init(&e->loop), 0);
}

/* *WORKER connected to *MASTER (accepted); both malloc'd. */
static void env_pair(struct env *e, uv_tcp_t **worker, uv_tcp_t **master)
{
	ts_tcp_pair(&e->loop, worker, master);
}

static void env_done(struct env *e)
{
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000;
}

/* ---- one side: a connection with a handshake, or a scripted fake peer ------------ */

struct side;
typedef void (*script_fn)(struct side *s, json_t *msg, const char *name);

struct side {
	struct env *env;
	struct wq_conn *c;
	struct wq_handshake *h;
	script_fn script; /* a fake peer: gets every message */
	/* the handshake's result, copied */
	int done;
	uint64_t started, done_at;
	enum wq_hs_outcome outcome;
	char code[64], text[1100], peer_id[64], peer_host[256], peer_project[256];
	bool by_peer, authenticated, tls, has_binding;
	enum wq_role peer_role;
	uint64_t elapsed;
	unsigned caps;
	int64_t ka_interval, ka_timeout;
	uint8_t binding[WQ_TLS_BINDING_SIZE];
	/* after the handshake, or everything a fake receives */
	int nmsg;
	char last_name[64];
	json_t *last_error;
	json_t *hello; /* fake master: the worker's hello */
	int closed;
	enum wq_conn_end why;
	char closed_text[1100];
};

static void on_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct side *s = user;
	assert_ptr_equal(h, s->h);
	assert_int_equal(s->done, 0);
	s->done = 1;
	s->done_at = now_ms();
	s->outcome = r->outcome;
	snprintf(s->code, sizeof s->code, "%s", r->code);
	snprintf(s->text, sizeof s->text, "%s", r->text);
	s->by_peer = r->by_peer;
	s->elapsed = r->elapsed_ms;
	if (r->outcome == WQ_HS_OK) {
		snprintf(s->peer_id, sizeof s->peer_id, "%s", r->peer_id);
		snprintf(s->peer_host, sizeof s->peer_host, "%s", r->peer_host ? r->peer_host : "");
		snprintf(s->peer_project, sizeof s->peer_project, "%s",
		         r->peer_project ? r->peer_project : "");
		s->authenticated = r->authenticated;
		s->peer_role = r->peer_role;
		s->tls = r->tls;
		s->has_binding = r->has_binding;
		memcpy(s->binding, r->binding, sizeof s->binding);
		s->caps = r->caps;
		s->ka_interval = r->keepalive_interval;
		s->ka_timeout = r->keepalive_timeout;
	}
}

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	struct side *s = user;
	(void)c;
	if (s->h && wq_handshake_message(s->h, msg, name, raw, len))
		return;
	s->nmsg++;
	snprintf(s->last_name, sizeof s->last_name, "%s", name);
	if (!strcmp(name, "error")) {
		json_decref(s->last_error);
		s->last_error = json_incref(msg);
	}
	if (s->script)
		s->script(s, msg, name);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	struct side *s = user;
	(void)c;
	(void)b;
	(void)len;
	if (s->h)
		wq_handshake_data(s->h, xfer);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	struct side *s = user;
	(void)c;
	s->closed = 1;
	s->why = why;
	snprintf(s->closed_text, sizeof s->closed_text, "%s", text);
	if (s->h)
		wq_handshake_closed(s->h, why, text);
}

static const struct wq_conn_callbacks callbacks = {on_message, on_data, NULL, on_closed};

static void side_start(struct side *s, struct env *e, uv_tcp_t *tcp, const char *label,
                       const struct wq_hs_config *cfg)
{
	memset(s, 0, sizeof *s);
	s->env = e;
	s->c = wq_conn_create(tcp, label, &callbacks, s);
	assert_non_null(s->c);
	wq_conn_set_linger(s->c, 200);
	char *err = NULL;
	s->started = now_ms();
	s->h = wq_handshake_start(&e->loop, s->c, cfg, on_done, s, &err);
	if (!s->h)
		print_error("handshake start: %s\n", err ? err : "?");
	assert_non_null(s->h);
}

static void side_fake(struct side *s, struct env *e, uv_tcp_t *tcp, const char *label,
                      script_fn script)
{
	memset(s, 0, sizeof *s);
	s->env = e;
	s->script = script;
	s->c = wq_conn_create(tcp, label, &callbacks, s);
	assert_non_null(s->c);
	wq_conn_set_linger(s->c, 200);
}

static void side_free(struct side *s)
{
	wq_handshake_delete(s->h);
	s->h = NULL;
	wq_conn_delete(s->c);
	s->c = NULL;
	json_decref(s->last_error);
	json_decref(s->hello);
	s->last_error = s->hello = NULL;
}

static const char *error_field(const struct side *s, const char *key)
{
	return json_string_value(json_object_get(s->last_error, key));
}

struct two {
	struct side *a, *b;
};

static bool both_done(void *arg)
{
	struct two *t = arg;
	return t->a->done && t->b->done;
}

static bool done_and_closed(void *arg)
{
	struct two *t = arg;
	return t->a->done && t->b->closed;
}

static bool is_done(void *arg)
{
	return ((struct side *)arg)->done;
}

/* ---- configurations ---------------------------------------------------------------- */

static struct wq_hs_config master_cfg(const struct wq_auth_key *key, struct wq_tls_config *tls)
{
	struct wq_hs_config c = {
	    .master = true,
	    .key = key,
	    .tls = tls,
	    .software = "htc test",
	    .id = MASTER_ID,
	    .caps = WQ_CAPS_ALL,
	    .keepalive_interval = 7,
	    .keepalive_timeout = 20,
	};
	return c;
}

static struct wq_hs_config worker_cfg(const struct wq_auth_key *key, struct wq_tls_config *tls)
{
	struct wq_hs_config c = {
	    .role = WQ_ROLE_WORKER,
	    .key = key,
	    .tls = tls,
	    .tls_host = "127.0.0.1",
	    .software = "htc test",
	    .id = WORKER_ID,
	    .host = "node1",
	    .caps = WQ_CAP_ZLIB | WQ_CAP_WATCH,
	};
	return c;
}

static struct wq_tls_config *server_tls(void)
{
	char *err = NULL;
	struct wq_tls_config *c = wq_tls_config_server_create(cert_pem, key_pem, NULL, &err);
	assert_null(err);
	assert_non_null(c);
	return c;
}

static struct wq_tls_config *client_tls(const char *fp)
{
	char *err = NULL;
	struct wq_tls_config *c = wq_tls_config_client_create(WQ_TLS_VERIFY_FINGERPRINT, fp, &err);
	assert_null(err);
	assert_non_null(c);
	return c;
}

/* Runs a real master against a real worker; both results are in *M and *W. */
static void run_pair(const struct wq_hs_config *mc, const struct wq_hs_config *wc, struct side *m,
                     struct side *w, struct env *e)
{
	uv_tcp_t *wt, *mt;
	env_pair(e, &wt, &mt);
	side_start(m, e, mt, "wq: 127.0.0.1:1", mc);
	side_start(w, e, wt, "master 127.0.0.1:9123", wc);
	struct two t = {m, w};
	assert_true(ts_run_until(&e->loop, both_done, &t, 5000));
}

/* Sends a message bigger than the pre-authentication limit from A to B after success. */
static bool got_msg(void *arg)
{
	return ((struct side *)arg)->nmsg > 0;
}

static void big_message(struct env *e, struct side *from, struct side *to)
{
	char *pad = xmalloc(100001);
	memset(pad, 'x', 100000);
	pad[100000] = 0;
	json_t *o = json_pack("{s:s,s:s}", "m", "identity", "pad", pad);
	free(pad);
	assert_int_equal(wq_conn_send_msg(from->c, o), 0);
	json_decref(o);
	assert_true(ts_run_until(&e->loop, got_msg, to, 3000));
	assert_string_equal(to->last_name, "identity");
}

/* ---- real master against real worker ------------------------------------------------ */

static void test_no_password(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(NULL, NULL), wc = worker_cfg(NULL, NULL);
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_OK);
	assert_int_equal(w.outcome, WQ_HS_OK);
	assert_string_equal(m.peer_id, WORKER_ID);
	assert_string_equal(m.peer_host, "node1");
	assert_string_equal(w.peer_id, MASTER_ID);
	assert_int_equal(m.caps, WQ_CAP_ZLIB | WQ_CAP_WATCH);
	assert_int_equal(w.caps, WQ_CAP_ZLIB | WQ_CAP_WATCH);
	assert_int_equal(w.ka_interval, 7);
	assert_int_equal(w.ka_timeout, 20);
	assert_false(m.authenticated);
	assert_false(w.authenticated);
	assert_false(m.has_binding);
	assert_false(w.tls);
	/* the MSG limit is 4 MiB now, both ways */
	big_message(&e, &w, &m);
	big_message(&e, &m, &w);
	side_free(&m);
	side_free(&w);
	env_done(&e);
}

static void test_same_password(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k1 = wq_auth_key_create("correct horse", 13);
	struct wq_auth_key *k2 = wq_auth_key_create("correct horse", 13);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(k1, NULL), wc = worker_cfg(k2, NULL);
	mc.project = "blast";
	wc.project = "blast";
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_OK);
	assert_int_equal(w.outcome, WQ_HS_OK);
	assert_true(m.authenticated);
	assert_true(w.authenticated);
	assert_string_equal(w.peer_project, "blast");
	assert_string_equal(m.peer_project, "blast");
	assert_false(w.has_binding);
	big_message(&e, &w, &m);
	side_free(&m);
	side_free(&w);
	wq_auth_key_delete(k1);
	wq_auth_key_delete(k2);
	env_done(&e);
}

static void test_wrong_password(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k1 = wq_auth_key_create("correct horse", 13);
	struct wq_auth_key *k2 = wq_auth_key_create("correct horsf", 13);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(k1, NULL), wc = worker_cfg(k2, NULL);
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_PERMANENT);
	assert_string_equal(m.code, "auth");
	assert_string_equal(m.text, WQ_HS_TEXT_WRONG_PW);
	assert_false(m.by_peer);
	assert_int_equal(w.outcome, WQ_HS_PERMANENT);
	assert_true(w.by_peer);
	assert_string_equal(w.code, "auth");
	assert_string_equal(w.text, "authentication failed: the worker's password does not match "
	                            "the master's");
	uint64_t took = w.done_at - w.started;
	assert_true(took >= 950);
	assert_true(took < 3000);
	assert_true(m.elapsed >= 950 && w.elapsed >= 950);
	assert_true(log_has("wq: 127.0.0.1:1: refused: wrong password"));
	assert_true(log_has("master 127.0.0.1:9123 refused the connection: authentication failed: "
	                    "the worker's password does not match the master's"));
	side_free(&m);
	side_free(&w);
	wq_auth_key_delete(k1);
	wq_auth_key_delete(k2);
	env_done(&e);
}

static void test_password_one_side(void **state)
{
	(void)state;
	struct wq_auth_key *k = wq_auth_key_create("pw", 2);
	for (int worker_has = 0; worker_has < 2; worker_has++) {
		struct env e;
		env_init(&e);
		struct side m, w;
		struct wq_hs_config mc = master_cfg(worker_has ? NULL : k, NULL);
		struct wq_hs_config wc = worker_cfg(worker_has ? k : NULL, NULL);
		run_pair(&mc, &wc, &m, &w, &e);
		const char *text = worker_has ? "this worker was given a password but the master "
		                                "has none"
		                              : "this master requires a password: start the worker "
		                                "with --password FILE";
		assert_int_equal(m.outcome, WQ_HS_PERMANENT);
		assert_int_equal(w.outcome, WQ_HS_PERMANENT);
		assert_string_equal(m.code, "auth");
		assert_string_equal(w.code, "auth");
		assert_string_equal(m.text, text);
		assert_string_equal(w.text, text);
		/* the side that refuses is the one the table names */
		assert_int_equal(m.by_peer, worker_has);
		assert_int_equal(w.by_peer, !worker_has);
		if (worker_has)
			assert_true(
			    log_has("master 127.0.0.1:9123 does not use a password but this "
			            "worker was given one; refusing it"));
		side_free(&m);
		side_free(&w);
		env_done(&e);
	}
	wq_auth_key_delete(k);
}

static void test_project_mismatch(void **state)
{
	(void)state;
	struct wq_auth_key *k = wq_auth_key_create("pw", 2);
	for (int with_pw = 0; with_pw < 2; with_pw++) {
		struct env e;
		env_init(&e);
		struct side m, w;
		struct wq_hs_config mc = master_cfg(with_pw ? k : NULL, NULL);
		struct wq_hs_config wc = worker_cfg(with_pw ? k : NULL, NULL);
		mc.project = "beta";
		wc.project = "alpha";
		run_pair(&mc, &wc, &m, &w, &e);
		const char *text =
		    "this worker serves project \"alpha\", the master serves \"beta\"";
		assert_int_equal(w.outcome, WQ_HS_RETRY);
		assert_false(w.by_peer);
		assert_string_equal(w.code, "project");
		assert_string_equal(w.text, text);
		if (with_pw) {
			/* the refusal comes while the master waits for the proof */
			assert_int_equal(m.outcome, WQ_HS_RETRY);
			assert_true(m.by_peer);
			assert_string_equal(m.code, "project");
			assert_string_equal(m.text, text);
		} else {
			/* without a password the master is done after its hello (section 4 table):
			 * the refusal reaches its caller, in INIT */
			assert_int_equal(m.outcome, WQ_HS_OK);
			assert_true(ts_run_until(&e.loop, got_msg, &m, 3000));
			assert_string_equal(m.last_name, "error");
			assert_string_equal(error_field(&m, "code"), "project");
			assert_string_equal(error_field(&m, "text"), text);
		}
		side_free(&m);
		side_free(&w);
		env_done(&e);
	}
	wq_auth_key_delete(k);
}

/* ---- TLS ------------------------------------------------------------------------------ */

static void test_tls_password(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k1 = wq_auth_key_create("s3cret", 6);
	struct wq_auth_key *k2 = wq_auth_key_create("s3cret", 6);
	struct wq_tls_config *st = server_tls(), *ct = client_tls(cert_fp);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(k1, st), wc = worker_cfg(k2, ct);
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_OK);
	assert_int_equal(w.outcome, WQ_HS_OK);
	assert_true(m.tls && w.tls);
	assert_true(m.authenticated && w.authenticated);
	assert_true(m.has_binding && w.has_binding);
	assert_memory_equal(m.binding, w.binding, WQ_TLS_BINDING_SIZE);
	static const uint8_t zero[WQ_TLS_BINDING_SIZE];
	assert_memory_not_equal(m.binding, zero, WQ_TLS_BINDING_SIZE);
	/* frames keep flowing inside TLS, above the pre-authentication limit */
	big_message(&e, &w, &m);
	big_message(&e, &m, &w);
	side_free(&m);
	side_free(&w);
	wq_tls_config_delete(st);
	wq_tls_config_delete(ct);
	wq_auth_key_delete(k1);
	wq_auth_key_delete(k2);
	env_done(&e);
}

static void test_tls_wrong_fingerprint(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_tls_config *st = server_tls();
	struct wq_tls_config *ct =
	    client_tls("0000000000000000000000000000000000000000000000000000000000000000");
	struct side m, w;
	struct wq_hs_config mc = master_cfg(NULL, st), wc = worker_cfg(NULL, ct);
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(w.outcome, WQ_HS_RETRY);
	assert_non_null(strstr(w.text, "TLS handshake failed: certificate verify failed"));
	assert_int_equal(m.outcome, WQ_HS_RETRY);
	assert_non_null(strstr(m.text, "TLS handshake failed: "));
	assert_true(log_has("master 127.0.0.1:9123: TLS handshake failed: certificate verify "
	                    "failed"));
	assert_true(log_has("wq: 127.0.0.1:1: TLS handshake failed: "));
	side_free(&m);
	side_free(&w);
	wq_tls_config_delete(st);
	wq_tls_config_delete(ct);
	env_done(&e);
}

static void test_tls_mismatch(void **state)
{
	(void)state;
	struct wq_tls_config *st = server_tls(), *ct = client_tls(cert_fp);
	for (int worker_tls = 0; worker_tls < 2; worker_tls++) {
		struct env e;
		env_init(&e);
		struct side m, w;
		struct wq_hs_config mc = master_cfg(NULL, worker_tls ? NULL : st);
		struct wq_hs_config wc = worker_cfg(NULL, worker_tls ? ct : NULL);
		run_pair(&mc, &wc, &m, &w, &e);
		const char *code = worker_tls ? "tls_unexpected" : "tls_required";
		const char *text = worker_tls
		                       ? "this master does not use TLS: start the worker "
		                         "without --ssl"
		                       : "this master requires TLS: start the worker with --ssl";
		assert_int_equal(w.outcome, WQ_HS_PERMANENT);
		assert_true(w.by_peer);
		assert_string_equal(w.code, code);
		assert_string_equal(w.text, text);
		assert_int_equal(m.outcome, WQ_HS_PERMANENT);
		assert_string_equal(m.code, code);
		assert_string_equal(m.text, text);
		assert_true(log_has(worker_tls
		                        ? "wq: 127.0.0.1:1: refused: TLS connection to a "
		                          "master without TLS"
		                        : "wq: 127.0.0.1:1: refused: plain connection to a TLS "
		                          "master"));
		side_free(&m);
		side_free(&w);
		env_done(&e);
	}
	wq_tls_config_delete(st);
	wq_tls_config_delete(ct);
}

/* A refusal sent inside TLS reaches the worker encrypted. */
static void test_tls_refusal(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k = wq_auth_key_create("s3cret", 6);
	struct wq_tls_config *st = server_tls(), *ct = client_tls(cert_fp);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(k, st), wc = worker_cfg(NULL, ct);
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_PERMANENT);
	assert_int_equal(w.outcome, WQ_HS_PERMANENT);
	assert_true(w.by_peer);
	assert_string_equal(w.code, "auth");
	assert_string_equal(w.text, WQ_HS_TEXT_MASTER_NEEDS_PW);
	side_free(&m);
	side_free(&w);
	wq_tls_config_delete(st);
	wq_tls_config_delete(ct);
	wq_auth_key_delete(k);
	env_done(&e);
}

/* A status client authenticates like a worker. */
static void test_status_client(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k = wq_auth_key_create("pw", 2);
	struct side m, w;
	struct wq_hs_config mc = master_cfg(k, NULL), wc = worker_cfg(k, NULL);
	wc.role = WQ_ROLE_STATUS;
	run_pair(&mc, &wc, &m, &w, &e);
	assert_int_equal(m.outcome, WQ_HS_OK);
	assert_int_equal(w.outcome, WQ_HS_OK);
	assert_int_equal(m.peer_role, WQ_ROLE_STATUS);
	assert_int_equal(w.peer_role, WQ_ROLE_MASTER);
	assert_true(m.authenticated);
	side_free(&m);
	side_free(&w);
	wq_auth_key_delete(k);
	env_done(&e);
}

/* ---- fake peers ------------------------------------------------------------------------ */

static void fake_worker_v2(struct env *e, struct side *fake, uv_tcp_t *tcp)
{
	side_fake(fake, e, tcp, "fake worker", NULL);
	struct wq_hello h = {.role = WQ_ROLE_WORKER,
	                     .software = "htc 2.0",
	                     .id = WORKER_ID,
	                     .host = "node2",
	                     .caps = 0};
	json_t *o = wq_msg_hello_build(&h);
	assert_non_null(o);
	json_object_set_new(o, "proto", json_pack("[ii]", 2, 0));
	assert_int_equal(wq_conn_send_msg(fake->c, o), 0);
	json_decref(o);
}

static void master_v2_script(struct side *s, json_t *msg, const char *name)
{
	(void)msg;
	if (strcmp(name, "hello"))
		return;
	struct wq_hello h = {.role = WQ_ROLE_MASTER,
	                     .software = "htc 2.0",
	                     .id = MASTER_ID,
	                     .keepalive_interval = 30,
	                     .keepalive_timeout = 120};
	json_t *o = wq_msg_hello_build(&h);
	assert_non_null(o);
	json_object_set_new(o, "proto", json_pack("[ii]", 2, 0));
	assert_int_equal(wq_conn_send_msg(s->c, o), 0);
	json_decref(o);
}

static void test_version(void **state)
{
	(void)state;
	/* a worker speaking 2.0 to this master */
	struct env e;
	env_init(&e);
	uv_tcp_t *wt, *mt;
	env_pair(&e, &wt, &mt);
	struct side m, fake;
	struct wq_hs_config mc = master_cfg(NULL, NULL);
	side_start(&m, &e, mt, "wq: 127.0.0.1:2", &mc);
	fake_worker_v2(&e, &fake, wt);
	struct two t = {&m, &fake};
	assert_true(ts_run_until(&e.loop, done_and_closed, &t, 3000));
	const char *mtext = "protocol version 2.0 is not supported: this master speaks 1.x; use a "
	                    "worker of the same release as the master";
	assert_int_equal(m.outcome, WQ_HS_PERMANENT);
	assert_string_equal(m.code, "version");
	assert_string_equal(m.text, mtext);
	assert_non_null(fake.last_error);
	assert_string_equal(error_field(&fake, "code"), "version");
	assert_string_equal(error_field(&fake, "text"), mtext);
	assert_true(json_is_true(json_object_get(fake.last_error, "fatal")));
	assert_true(log_has("wq: 127.0.0.1:2: refused: worker speaks protocol 2.0, this master "
	                    "speaks 1.x"));
	side_free(&m);
	side_free(&fake);

	/* a master speaking 2.0 to this worker */
	env_pair(&e, &wt, &mt);
	struct side w;
	struct wq_hs_config wc = worker_cfg(NULL, NULL);
	side_fake(&fake, &e, mt, "fake master", master_v2_script);
	side_start(&w, &e, wt, "master 127.0.0.1:3", &wc);
	t.a = &w;
	assert_true(ts_run_until(&e.loop, done_and_closed, &t, 3000));
	const char *wtext = "protocol version 2.0 is not supported: this worker speaks 1.x";
	assert_int_equal(w.outcome, WQ_HS_PERMANENT);
	assert_string_equal(w.code, "version");
	assert_string_equal(w.text, wtext);
	assert_false(w.by_peer);
	assert_non_null(fake.last_error);
	assert_string_equal(error_field(&fake, "code"), "version");
	assert_string_equal(error_field(&fake, "text"), wtext);
	assert_true(log_has("master 127.0.0.1:3 speaks protocol 2.0, this worker speaks 1.x"));
	side_free(&w);
	side_free(&fake);
	env_done(&e);
}

/* A fake master that requires a password but proves it wrongly. */
static void bad_proof_script(struct side *s, json_t *msg, const char *name)
{
	(void)msg;
	if (!strcmp(name, "hello")) {
		char nonce[WQ_AUTH_NONCE_HEX];
		assert_int_equal(wq_auth_nonce(NULL, nonce), 0);
		struct wq_hello h = {.role = WQ_ROLE_MASTER,
		                     .software = "htc rogue",
		                     .id = MASTER_ID,
		                     .auth = true,
		                     .nonce = nonce,
		                     .keepalive_interval = 30,
		                     .keepalive_timeout = 120};
		json_t *o = wq_msg_hello_build(&h);
		assert_int_equal(wq_conn_send_msg(s->c, o), 0);
		json_decref(o);
	} else if (!strcmp(name, "auth_proof")) {
		char zero[65];
		memset(zero, '0', 64);
		zero[64] = 0;
		json_t *o = json_pack("{s:s,s:s}", "m", "auth_ok", "proof", zero);
		assert_int_equal(wq_conn_send_msg(s->c, o), 0);
		json_decref(o);
	}
}

static void test_master_bad_proof(void **state)
{
	(void)state;
	struct env e;
	env_init(&e);
	struct wq_auth_key *k = wq_auth_key_create("pw", 2);
	uv_tcp_t *wt, *mt;
	env_pair(&e, &wt, &mt);
	struct side w, fake;
	struct wq_hs_config wc = worker_cfg(k, NULL);
	side_fake(&fake, &e, mt, "fake master", bad_proof_script);
	side_start(&w, &e, wt, "master 127.0.0.1:4", &wc);
	struct two t = {&w, &fake};
	assert_true(ts_run_until(&e.loop, done_and_closed, &t, 3000));
	assert_int_equal(w.outcome, WQ_HS_PERMANENT);
	assert_string_equal(w.code, "auth");
	assert_string_equal(w.text, "the master failed to prove the password");
	assert_string_equal(error_field(&fake, "code"), "auth");
	assert_string_equal(error_field(&fake, "text"), "the master failed to prove the password");
	assert_true(log_has("master 127.0.0.1:4 failed to prove the password (impostor, or a "
	                    "different password file); refusing it"));
	side_free(&w);
	side_free(&fake);
	wq_auth_key_delete(k);
	env_done(&e);
}

/* ---- raw peers: garbage and silence ----------------------------------------------------- */

struct raw {
	uv_tcp_t *tcp;
	uint8_t buf[4096];
	size_t len;
	int eof;
};

static void raw_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct raw *r = h->data;
	(void)suggested;
	*b = uv_buf_init((char *)r->buf + r->len, (unsigned)(sizeof r->buf - r->len));
}

static void raw_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct raw *r = st->data;
	(void)b;
	if (n < 0) {
		r->eof = 1;
		uv_read_stop(st);
	} else {
		r->len += (size_t)n;
		if (r->len == sizeof r->buf)
			uv_read_stop(st);
	}
}

static void raw_start(struct raw *r, uv_tcp_t *tcp)
{
	memset(r, 0, sizeof *r);
	r->tcp = tcp;
	tcp->data = r;
	assert_int_equal(uv_read_start((uv_stream_t *)tcp, raw_alloc, raw_read), 0);
}

static void raw_written(uv_write_t *req, int status)
{
	(void)status;
	free(req);
}

static void raw_write(struct raw *r, const void *bytes, size_t n)
{
	uv_write_t *req = xmalloc(sizeof *req + n);
	memcpy(req + 1, bytes, n);
	uv_buf_t b = uv_buf_init((char *)(req + 1), (unsigned)n);
	assert_int_equal(uv_write(req, (uv_stream_t *)r->tcp, &b, 1, raw_written), 0);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static bool raw_eof(void *arg)
{
	return ((struct raw *)arg)->eof;
}

/* The one MSG frame the raw peer received, decoded (caller decrefs). */
static json_t *raw_one_msg(struct raw *r)
{
	struct wq_frame_reader *fr = wq_frame_reader_create(WQ_MAX_MSG_PREAUTH);
	size_t used = 0;
	struct wq_frame f;
	assert_int_equal(wq_frame_reader_feed(fr, r->buf, r->len, &used, &f), 1);
	assert_int_equal(used, r->len);
	assert_int_equal(f.type, WQ_FRAME_MSG);
	json_t *o = json_loadb((const char *)f.payload, f.length, 0, NULL);
	assert_non_null(o);
	wq_frame_reader_delete(fr);
	return o;
}

/* A master (TLS or not) against a raw client writing BYTES (none: silence); checks the master's
 * result and the plain error frame the client receives. */
static void raw_client_case(bool tls, const char *bytes, uint64_t deadline_ms, const char *code,
                            const char *text)
{
	struct env e;
	env_init(&e);
	uv_tcp_t *wt, *mt;
	env_pair(&e, &wt, &mt);
	struct wq_tls_config *st = tls ? server_tls() : NULL;
	struct side m;
	struct wq_hs_config mc = master_cfg(NULL, st);
	mc.deadline_ms = deadline_ms;
	side_start(&m, &e, mt, "wq: 127.0.0.1:5", &mc);
	struct raw r;
	raw_start(&r, wt);
	if (bytes)
		raw_write(&r, bytes, strlen(bytes));
	assert_true(ts_run_until(&e.loop, is_done, &m, 3000));
	assert_true(ts_run_until(&e.loop, raw_eof, &r, 3000));
	assert_int_equal(m.outcome, WQ_HS_RETRY);
	assert_string_equal(m.code, code);
	assert_string_equal(m.text, text);
	json_t *o = raw_one_msg(&r);
	assert_string_equal(json_string_value(json_object_get(o, "m")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "code")), code);
	assert_string_equal(json_string_value(json_object_get(o, "text")), text);
	json_decref(o);
	uv_close((uv_handle_t *)wt, free_handle);
	side_free(&m);
	wq_tls_config_delete(st);
	env_done(&e);
}

static void test_garbage(void **state)
{
	(void)state;
	const char *text = "not the work queue protocol (first bytes 47 45 54 20)";
	raw_client_case(false, "GET / HTTP/1.0\r\n\r\n", 0, "proto", text);
	raw_client_case(true, "GET / HTTP/1.0\r\n\r\n", 0, "proto", text);
	assert_true(log_has("wq: 127.0.0.1:5: protocol violation: " /* */
	                    "not the work queue protocol (first bytes 47 45 54 20)"));
}

static void test_deadline(void **state)
{
	(void)state;
	uint64_t t0 = now_ms();
	raw_client_case(false, NULL, 300, "timeout", "handshake not completed within 0.3 s");
	raw_client_case(true, NULL, 300, "timeout", "handshake not completed within 0.3 s");
	assert_true(now_ms() - t0 >= 600);

	/* a worker whose master accepts and says nothing */
	struct env e;
	env_init(&e);
	uv_tcp_t *wt, *mt;
	env_pair(&e, &wt, &mt);
	struct raw r;
	raw_start(&r, mt);
	struct side w;
	struct wq_hs_config wc = worker_cfg(NULL, NULL);
	wc.deadline_ms = 250;
	side_start(&w, &e, wt, "master 127.0.0.1:6", &wc);
	assert_true(ts_run_until(&e.loop, is_done, &w, 3000));
	assert_int_equal(w.outcome, WQ_HS_RETRY);
	assert_string_equal(w.code, "timeout");
	assert_string_equal(w.text, "handshake not completed within 0.25 s");
	assert_true(w.done_at - w.started >= 240);
	uv_close((uv_handle_t *)mt, free_handle);
	side_free(&w);
	env_done(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_password),
	    cmocka_unit_test(test_same_password),
	    cmocka_unit_test(test_wrong_password),
	    cmocka_unit_test(test_password_one_side),
	    cmocka_unit_test(test_project_mismatch),
	    cmocka_unit_test(test_tls_password),
	    cmocka_unit_test(test_tls_wrong_fingerprint),
	    cmocka_unit_test(test_tls_mismatch),
	    cmocka_unit_test(test_tls_refusal),
	    cmocka_unit_test(test_status_client),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_master_bad_proof),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_deadline),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
