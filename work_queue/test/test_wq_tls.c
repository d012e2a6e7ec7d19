/* test_wq_tls.c: unit tests for the TLS engine (wq_tls.h). Certificates are
 * made here with the OpenSSL API (an EC P-256 CA, a server and a client
 * certificate it signs, an unrelated self-signed one) and two engines are
 * pumped against each other in memory, without sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "htc_error.h"
#include "wq_tls.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

/* Ciphertext waiting in an engine never exceeds this (wq_tls.h: OUT_MAX plus
 * a few KiB of record overhead and handshake messages). */
#define OUT_BOUND (WQ_TLS_OUT_MAX + 8 * 1024)

static char *tmpdir;
static char ca_pem[128], ca_key[128], srv_pem[128], srv_key[128], other_pem[128], other_key[128],
    cli_pem[128], cli_key[128], garbage_pem[128], enc_key[128], empty_pem[128], srv_der[128];
/* Fingerprints computed with X509_digest, independently of the module. */
static char srv_fp[65], other_fp[65], cli_fp[65];

/* ---- certificate generation ------------------------------------------------ */

static void add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

/* A certificate for KEY named CN, signed by ISSUER/ISSUER_KEY (self-signed
 * when ISSUER is NULL). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca,
                       const char *san, long serial)
{
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), serial), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	X509_NAME *name = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	                                            (const unsigned char *)cn, -1, -1, 0),
	                 1);
	assert_int_equal(X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name), 1);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	add_ext(x, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	add_ext(x, &v3, NID_key_usage,
	        ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
	add_ext(x, &v3, NID_subject_key_identifier, "hash");
	if (san)
		add_ext(x, &v3, NID_subject_alt_name, san);
	assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
	return x;
}

static void write_cert(const char *path, X509 *x)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	assert_int_equal(fclose(f), 0);
}

static void write_key(const char *path, EVP_PKEY *k, const char *passphrase)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (passphrase)
		assert_int_equal(PEM_write_PrivateKey(f, k, EVP_aes_256_cbc(),
		                                      (const unsigned char *)passphrase,
		                                      (int)strlen(passphrase), NULL, NULL),
		                 1);
	else
		assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(f), 0);
}

static void digest_hex(X509 *x, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	assert_int_equal(X509_digest(x, EVP_sha256(), md, &n), 1);
	assert_int_equal(n, 32);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void path_in_tmp(char *out, const char *name)
{
	snprintf(out, 128, "%s/%s", tmpdir, name);
}

static int setup_certs(void **state)
{
	(void)state;
	tmpdir = ts_tmpdir_create("test_wq_tls");
	path_in_tmp(ca_pem, "ca.pem");
	path_in_tmp(ca_key, "ca.key");
	path_in_tmp(srv_pem, "server.pem");
	path_in_tmp(srv_key, "server.key");
	path_in_tmp(other_pem, "other.pem");
	path_in_tmp(other_key, "other.key");
	path_in_tmp(cli_pem, "client.pem");
	path_in_tmp(cli_key, "client.key");
	path_in_tmp(garbage_pem, "garbage.pem");
	path_in_tmp(enc_key, "encrypted.key");
	path_in_tmp(empty_pem, "empty.pem");
	path_in_tmp(srv_der, "server.der");

	EVP_PKEY *kca = EVP_EC_gen("P-256"), *ksrv = EVP_EC_gen("P-256"),
	         *koth = EVP_EC_gen("P-256"), *kcli = EVP_EC_gen("P-256");
	if (!kca || !ksrv || !koth || !kcli)
		return -1;
	X509 *ca = make_cert(kca, "htc test CA", NULL, NULL, true, NULL, 1);
	X509 *srv = make_cert(ksrv, "localhost", ca, kca, false, "DNS:localhost,IP:127.0.0.1", 2);
	X509 *oth = make_cert(koth, "localhost", NULL, NULL, false, "DNS:localhost", 3);
	X509 *cli = make_cert(kcli, "worker-1", ca, kca, false, NULL, 4);
	write_cert(ca_pem, ca);
	write_key(ca_key, kca, NULL);
	write_cert(srv_pem, srv);
	write_key(srv_key, ksrv, NULL);
	write_cert(other_pem, oth);
	write_key(other_key, koth, NULL);
	write_cert(cli_pem, cli);
	write_key(cli_key, kcli, NULL);
	write_key(enc_key, ksrv, "secret passphrase");
	FILE *f = fopen(garbage_pem, "w");
	assert_non_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all !!!\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	f = fopen(empty_pem, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(srv_der, "wb");
	assert_non_null(f);
	assert_int_equal(i2d_X509_fp(f, srv), 1);
	fclose(f);
	digest_hex(srv, srv_fp);
	digest_hex(oth, other_fp);
	digest_hex(cli, cli_fp);
	X509_free(ca);
	X509_free(srv);
	X509_free(oth);
	X509_free(cli);
	EVP_PKEY_free(kca);
	EVP_PKEY_free(ksrv);
	EVP_PKEY_free(koth);
	EVP_PKEY_free(kcli);
	return 0;
}

static int teardown_certs(void **state)
{
	(void)state;
	ts_tmpdir_remove(tmpdir);
	tmpdir = NULL;
	return 0;
}

/* ---- configurations and engines ------------------------------------------------ */

static struct wq_tls_config *server_cfg(const char *cert, const char *key, const char *client_ca)
{
	char *err = NULL;
	struct wq_tls_config *c = wq_tls_config_server_create(cert, key, client_ca, &err);
	if (!c)
		print_error("server config: %s\n", err);
	assert_non_null(c);
	assert_null(err);
	return c;
}

static struct wq_tls_config *client_cfg(enum wq_tls_verify mode, const char *arg)
{
	char *err = NULL;
	struct wq_tls_config *c = wq_tls_config_client_create(mode, arg, &err);
	if (!c)
		print_error("client config: %s\n", err);
	assert_non_null(c);
	assert_null(err);
	return c;
}

static struct wq_tls *engine(struct wq_tls_config *cfg, const char *host)
{
	char *err = NULL;
	struct wq_tls *t = wq_tls_create(cfg, host, &err);
	if (!t)
		print_error("engine: %s\n", err);
	assert_non_null(t);
	return t;
}

/* ---- the in-memory pump ---------------------------------------------------------- */

#define WIRE_CAP (256 * 1024)

struct end {
	struct wq_tls *t;
	unsigned char *wire; /* ciphertext travelling towards this end */
	size_t wire_len;
	uint64_t to_send, sent; /* plaintext this end writes (a pattern) */
	uint64_t received;      /* plaintext this end read (the peer's pattern) */
	bool mismatch, eof;
	uint32_t seed; /* of the pattern this end sends */
	size_t max_pending;
};

static unsigned char pattern(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + seed) * UINT64_C(0x9E3779B97F4A7C15);
	return (unsigned char)(x >> 56);
}

static void end_init(struct end *e, struct wq_tls *t, uint32_t seed)
{
	memset(e, 0, sizeof *e);
	e->t = t;
	e->wire = xmalloc(WIRE_CAP);
	e->seed = seed;
}

static void end_free(struct end *e)
{
	wq_tls_delete(e->t);
	free(e->wire);
}

/* Moves data one way, from SRC to DST, CHUNK bytes at most per socket read;
 * returns whether anything moved. */
static bool pump_one(struct end *src, struct end *dst, size_t chunk)
{
	static unsigned char buf[100000];
	bool progress = false;
	/* the application writes pieces of varying size while accepted */
	while (src->sent < src->to_send) {
		uint64_t left = src->to_send - src->sent;
		size_t piece = 1 + (size_t)((src->sent * 7919) % sizeof buf);
		if (piece > left)
			piece = (size_t)left;
		for (size_t i = 0; i < piece; i++)
			buf[i] = pattern(src->seed, src->sent + i);
		ssize_t r = wq_tls_write(src->t, buf, piece);
		if (r <= 0)
			break;
		assert_true((size_t)r <= piece);
		src->sent += (uint64_t)r;
		progress = true;
	}
	size_t pending = wq_tls_out_pending(src->t);
	if (pending > src->max_pending)
		src->max_pending = pending;
	assert_true(pending <= OUT_BOUND);
	/* the socket carries ciphertext */
	size_t room = WIRE_CAP - dst->wire_len;
	size_t n = wq_tls_take(src->t, dst->wire + dst->wire_len, chunk < room ? chunk : room);
	dst->wire_len += n;
	progress |= n > 0;
	if (dst->wire_len > 0) {
		size_t give = dst->wire_len < chunk ? dst->wire_len : chunk;
		ssize_t r = wq_tls_feed(dst->t, dst->wire, give);
		if (r < 0) {
			assert_int_equal(r, HTC_EPROTO);
			assert_non_null(wq_tls_error(dst->t));
			dst->wire_len = 0; /* a failed engine drops what it is given */
		} else if (r > 0) {
			memmove(dst->wire, dst->wire + r, dst->wire_len - (size_t)r);
			dst->wire_len -= (size_t)r;
			progress = true;
		}
	}
	/* the receiving application reads plaintext */
	for (;;) {
		ssize_t r = wq_tls_read(dst->t, buf, sizeof buf);
		if (r == 0) {
			dst->eof = true;
			break;
		}
		if (r < 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern(src->seed, dst->received + (uint64_t)i))
				dst->mismatch = true;
		dst->received += (uint64_t)r;
		progress = true;
	}
	return progress;
}

/* Runs both directions until nothing moves. */
static void pump(struct end *a, struct end *b, size_t chunk)
{
	for (long round = 0;; round++) {
		assert_true(round < 5000000); /* never hang */
		bool p = pump_one(a, b, chunk);
		p |= pump_one(b, a, chunk);
		if (!p)
			break;
	}
}

static void expect_open(struct end *c, struct end *s)
{
	if (wq_tls_error(c->t))
		print_error("client: %s\n", wq_tls_error(c->t));
	if (wq_tls_error(s->t))
		print_error("server: %s\n", wq_tls_error(s->t));
	assert_int_equal(wq_tls_state(c->t), WQ_TLS_OPEN);
	assert_int_equal(wq_tls_state(s->t), WQ_TLS_OPEN);
	assert_true(wq_tls_handshake_done(c->t));
	assert_string_equal(wq_tls_version(c->t), "TLSv1.3");
	assert_string_equal(wq_tls_version(s->t), "TLSv1.3");
	assert_true(strlen(wq_tls_cipher(c->t)) > 0);
}

static void expect_contains(const char *text, const char *part)
{
	if (!text || !strstr(text, part))
		print_error("expected \"%s\" in \"%s\"\n", part, text ? text : "(null)");
	assert_non_null(text);
	assert_non_null(strstr(text, part));
}

/* Makes a client with CCFG/HOST and a server with SCFG, pumps, and leaves
 * the ends for the caller to check and free. */
static void connect_pair(struct end *c, struct end *s, struct wq_tls_config *ccfg, const char *host,
                         struct wq_tls_config *scfg, size_t chunk)
{
	end_init(c, engine(ccfg, host), 11);
	end_init(s, engine(scfg, NULL), 22);
	assert_int_equal(wq_tls_state(c->t), WQ_TLS_HANDSHAKING);
	assert_true(wq_tls_out_pending(c->t) > 0); /* the ClientHello */
	pump(c, s, chunk);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_handshake_and_16mib(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	struct end c, s;
	connect_pair(&c, &s, ccfg, "localhost", scfg, 16384);
	expect_open(&c, &s);
	/* the configurations may go before their engines */
	wq_tls_config_delete(scfg);
	wq_tls_config_delete(ccfg);

	c.to_send = 16 * 1024 * 1024;
	s.to_send = 16 * 1024 * 1024 + 12345;
	pump(&c, &s, 65536);
	assert_int_equal(c.sent, c.to_send);
	assert_int_equal(s.sent, s.to_send);
	assert_int_equal(s.received, c.to_send);
	assert_int_equal(c.received, s.to_send);
	assert_false(c.mismatch);
	assert_false(s.mismatch);
	assert_true(c.max_pending <= OUT_BOUND);
	assert_true(c.max_pending >= WQ_TLS_OUT_MAX / 2); /* the bound was reached, not idle */

	/* fingerprints: the peer's, the file's and X509_digest agree */
	char fp[WQ_TLS_FINGERPRINT_SIZE], ffp[WQ_TLS_FINGERPRINT_SIZE];
	assert_int_equal(wq_tls_peer_fingerprint(c.t, fp), 0);
	assert_string_equal(fp, srv_fp);
	assert_int_equal(wq_tls_cert_file_fingerprint(srv_pem, ffp, NULL), 0);
	assert_string_equal(ffp, srv_fp);
	assert_int_equal(wq_tls_cert_file_fingerprint(srv_der, ffp, NULL), 0);
	assert_string_equal(ffp, srv_fp);
	assert_int_equal(wq_tls_peer_fingerprint(s.t, fp), -ENOENT); /* no client cert */
	end_free(&c);
	end_free(&s);
}

static void binding_of_new_session(uint8_t cb[32], uint8_t sb[32])
{
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	struct end c, s;
	end_init(&c, engine(ccfg, "localhost"), 1);
	end_init(&s, engine(scfg, NULL), 2);
	assert_int_equal(wq_tls_channel_binding(c.t, cb), -ENOTCONN);
	assert_int_equal(wq_tls_channel_binding(s.t, sb), -ENOTCONN);
	pump(&c, &s, 4096);
	expect_open(&c, &s);
	assert_int_equal(wq_tls_channel_binding(c.t, cb), 0);
	assert_int_equal(wq_tls_channel_binding(s.t, sb), 0);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(scfg);
	wq_tls_config_delete(ccfg);
}

static void test_channel_binding(void **state)
{
	(void)state;
	uint8_t c1[32], s1[32], c2[32], s2[32], zero[32] = {0};
	binding_of_new_session(c1, s1);
	binding_of_new_session(c2, s2);
	assert_memory_equal(c1, s1, 32);
	assert_memory_equal(c2, s2, 32);
	assert_memory_not_equal(c1, c2, 32);
	assert_memory_not_equal(c1, zero, 32);
}

/* The binding equals what a plain OpenSSL client, written here, exports with
 * the label, length and empty context of protocol section 4. */
static void test_channel_binding_is_the_exporter(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls *srv = engine(scfg, NULL);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	SSL *raw = SSL_new(ctx);
	assert_non_null(raw);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(rb, -1);
	BIO_set_mem_eof_return(wb, -1);
	SSL_set_bio(raw, rb, wb);
	SSL_set_connect_state(raw);
	static char buf[65536];
	int done = 0;
	for (int i = 0; i < 100 && !(done == 1 && wq_tls_handshake_done(srv)); i++) {
		done = SSL_do_handshake(raw);
		int n = BIO_read(wb, buf, sizeof buf);
		if (n > 0)
			assert_int_equal(wq_tls_feed(srv, buf, (size_t)n), n);
		(void)wq_tls_read(srv, buf, sizeof buf);
		size_t m = wq_tls_take(srv, buf, sizeof buf);
		if (m > 0)
			assert_int_equal(BIO_write(rb, buf, (int)m), (int)m);
	}
	assert_int_equal(done, 1);
	assert_true(wq_tls_handshake_done(srv));
	uint8_t expect[32], got[32], other[32];
	const char *label = "EXPORTER-htc-wq-channel";
	assert_int_equal(
	    SSL_export_keying_material(raw, expect, 32, label, strlen(label), NULL, 0, 0), 1);
	assert_int_equal(wq_tls_channel_binding(srv, got), 0);
	assert_memory_equal(got, expect, 32);
	/* the length and the label are part of the value */
	assert_int_equal(
	    SSL_export_keying_material(raw, other, 32, label, strlen(label) - 1, NULL, 0, 0), 1);
	assert_memory_not_equal(other, expect, 32);
	SSL_free(raw);
	SSL_CTX_free(ctx);
	wq_tls_delete(srv);
	wq_tls_config_delete(scfg);
}

static void expect_failure(const char *host, struct wq_tls_config *ccfg, struct wq_tls_config *scfg,
                           const char *client_text, const char *server_text)
{
	struct end c, s;
	connect_pair(&c, &s, ccfg, host, scfg, 4096);
	assert_int_equal(wq_tls_state(c.t), WQ_TLS_FAILED);
	assert_int_equal(wq_tls_state(s.t), WQ_TLS_FAILED);
	expect_contains(wq_tls_error(c.t), "TLS handshake failed: ");
	expect_contains(wq_tls_error(s.t), "TLS handshake failed: ");
	if (client_text)
		expect_contains(wq_tls_error(c.t), client_text);
	if (server_text)
		expect_contains(wq_tls_error(s.t), server_text);
	uint8_t b[32];
	assert_int_equal(wq_tls_channel_binding(c.t, b), -ENOTCONN);
	assert_int_equal(wq_tls_write(c.t, "x", 1), HTC_EPROTO);
	assert_int_equal(wq_tls_read(c.t, b, sizeof b), HTC_EPROTO);
	assert_int_equal(wq_tls_feed(c.t, "x", 1), HTC_EPROTO);
	end_free(&c);
	end_free(&s);
}

static void test_ca_file_and_host_names(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	struct end c, s;
	connect_pair(&c, &s, ccfg, "127.0.0.1", scfg, 4096);
	expect_open(&c, &s);
	end_free(&c);
	end_free(&s);

	expect_failure("master.example.org", ccfg, scfg,
	               "TLS handshake failed: certificate verify failed (hostname mismatch)",
	               "alert");
	expect_failure("127.0.0.2", ccfg, scfg, "certificate verify failed (IP address mismatch)",
	               NULL);
	/* a partial wildcard or a suffix is not a match */
	expect_failure("localhost.", ccfg, scfg, "hostname mismatch", NULL);

	/* the host name is required when it is checked */
	char *err = NULL;
	assert_null(wq_tls_create(ccfg, NULL, &err));
	expect_contains(err, "host name");
	free(err);
	wq_tls_config_delete(ccfg);

	/* an unrelated CA */
	ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, other_pem);
	expect_failure("localhost", ccfg, scfg,
	               "certificate verify failed (unable to get local issuer certificate)",
	               "alert");
	wq_tls_config_delete(ccfg);

	/* the system trust store does not know our test CA */
	ccfg = client_cfg(WQ_TLS_VERIFY_SYSTEM, NULL);
	expect_failure("localhost", ccfg, scfg, "certificate verify failed (", NULL);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void test_fingerprint(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	/* upper case with colons, the way `openssl x509 -fingerprint` prints it */
	char fancy[200];
	size_t k = 0;
	for (int i = 0; i < 64; i++) {
		if (i && i % 2 == 0)
			fancy[k++] = ':';
		fancy[k++] = (char)(srv_fp[i] >= 'a' ? srv_fp[i] - 'a' + 'A' : srv_fp[i]);
	}
	fancy[k] = 0;
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_FINGERPRINT, fancy);
	struct end c, s;
	/* no name check: any host name */
	connect_pair(&c, &s, ccfg, "not-the-name.example", scfg, 4096);
	expect_open(&c, &s);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);

	/* mismatch: the expected value belongs to another certificate */
	ccfg = client_cfg(WQ_TLS_VERIFY_FINGERPRINT, other_fp);
	char expect[300];
	snprintf(expect, sizeof expect,
	         "certificate verify failed (the certificate's SHA-256 fingerprint %s is not the "
	         "expected %s)",
	         srv_fp, other_fp);
	expect_failure("localhost", ccfg, scfg, expect, "alert");
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);

	/* a self-signed server accepted by its fingerprint */
	scfg = server_cfg(other_pem, other_key, NULL);
	ccfg = client_cfg(WQ_TLS_VERIFY_FINGERPRINT, other_fp);
	connect_pair(&c, &s, ccfg, NULL, scfg, 4096);
	expect_open(&c, &s);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);

	/* malformed fingerprints */
	const char *bad[] = {
	    "",
	    "abc",
	    "zz" /* + 62 */ "00000000000000000000000000000000000000000000000000000000"
	    "000000",
	    "00000000000000000000000000000000000000000000000000000000000000000",
	    "0000000000000000000000000000000000000000000000000000000000000 00",
	    "sha256 Fingerprint=00"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		assert_null(wq_tls_config_client_create(WQ_TLS_VERIFY_FINGERPRINT, bad[i], &err));
		expect_contains(err, "invalid SHA-256 fingerprint \"");
		expect_contains(err, "expected 64 hexadecimal digits");
		free(err);
	}
	char *err = NULL;
	assert_null(wq_tls_config_client_create(WQ_TLS_VERIFY_FINGERPRINT, NULL, &err));
	assert_non_null(err);
	free(err);
	char out[WQ_TLS_FINGERPRINT_SIZE];
	assert_int_equal(wq_tls_fingerprint_parse(fancy, out, NULL), 0);
	assert_string_equal(out, srv_fp);
}

static void test_no_verify(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(other_pem, other_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	struct end c, s;
	connect_pair(&c, &s, ccfg, "anything.example", scfg, 4096);
	expect_open(&c, &s);
	char fp[WQ_TLS_FINGERPRINT_SIZE];
	assert_int_equal(wq_tls_peer_fingerprint(c.t, fp), 0);
	assert_string_equal(fp, other_fp);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void test_client_certificates(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, ca_pem);
	/* missing: both sides say so */
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	expect_failure("localhost", ccfg, scfg, "certificate required",
	               "peer did not return a certificate");
	/* present and signed by the client CA */
	char *err = NULL;
	assert_int_equal(wq_tls_config_set_cert(ccfg, cli_pem, cli_key, &err), 0);
	assert_null(err);
	struct end c, s;
	connect_pair(&c, &s, ccfg, "localhost", scfg, 4096);
	expect_open(&c, &s);
	c.to_send = 1000;
	s.to_send = 1000;
	pump(&c, &s, 4096);
	assert_int_equal(c.received, 1000);
	assert_int_equal(s.received, 1000);
	char fp[WQ_TLS_FINGERPRINT_SIZE];
	assert_int_equal(wq_tls_peer_fingerprint(s.t, fp), 0);
	assert_string_equal(fp, cli_fp);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	/* a certificate from another issuer */
	ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	assert_int_equal(wq_tls_config_set_cert(ccfg, other_pem, other_key, NULL), 0);
	expect_failure("localhost", ccfg, scfg, NULL, "certificate verify failed (");
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void test_tls12_refused(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	SSL_CTX *ctx = wq_tls_config_ssl_ctx(ccfg);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
	expect_failure("localhost", ccfg, scfg, "protocol version", "unsupported protocol");
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);

	/* and a TLS 1.2-only server, for our client */
	scfg = server_cfg(srv_pem, srv_key, NULL);
	ctx = wq_tls_config_ssl_ctx(scfg);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
	ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	expect_failure("localhost", ccfg, scfg, NULL, NULL);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

/* Feeds JUNK, then more junk while the engine waits for the rest of a record
 * whose (junk) header announced a length: it must fail within 64 KiB. */
static void feed_junk(struct wq_tls *t, const unsigned char *junk, size_t len)
{
	unsigned char out[100];
	for (size_t total = 0; total < 64 * 1024; total += len) {
		ssize_t r = wq_tls_feed(t, junk, len);
		if (r >= 0)
			(void)wq_tls_read(t, out, sizeof out);
		if (wq_tls_state(t) == WQ_TLS_FAILED)
			return;
		junk = (const unsigned char *)"\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a";
		len = 8;
	}
}

static void test_garbage(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	unsigned char junk[3000];
	uint64_t x = 88172645463325252u;
	for (int round = 0; round < 60; round++) {
		for (size_t i = 0; i < sizeof junk; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			junk[i] = (unsigned char)x;
		}
		if (round % 3 == 1) { /* a plausible record header, then junk */
			junk[0] = 0x16;
			junk[1] = 0x03;
			junk[2] = 0x01;
		}
		if (round == 2) /* a plain work queue frame header */
			memcpy(junk, "\xF5\x71\x01\x00\x00\x00\x00\x00\x00\x00\x00\x20", 12);
		/* at a server */
		struct wq_tls *t = engine(scfg, NULL);
		feed_junk(t, junk, sizeof junk);
		assert_int_equal(wq_tls_state(t), WQ_TLS_FAILED);
		expect_contains(wq_tls_error(t), "TLS handshake failed: ");
		assert_true(strlen(wq_tls_error(t)) > strlen("TLS handshake failed: "));
		wq_tls_delete(t);
		/* at a client that has sent its hello */
		t = engine(ccfg, "localhost");
		size_t n = 0;
		free(wq_tls_take_all(t, &n));
		assert_true(n > 0);
		feed_junk(t, junk, sizeof junk);
		assert_int_equal(wq_tls_state(t), WQ_TLS_FAILED);
		assert_non_null(wq_tls_error(t));
		wq_tls_delete(t);
	}
	/* garbage after a completed handshake */
	struct end c, s;
	connect_pair(&c, &s, ccfg, "localhost", scfg, 4096);
	expect_open(&c, &s);
	assert_int_equal(
	    wq_tls_feed(s.t, "\x17\x03\x03\x00\x20garbage garbage garbage garbage", 37), 37);
	unsigned char out[100];
	assert_int_equal(wq_tls_read(s.t, out, sizeof out), HTC_EPROTO);
	expect_contains(wq_tls_error(s.t), "TLS error: ");
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void test_one_byte_at_a_time(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, ca_pem);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	assert_int_equal(wq_tls_config_set_cert(ccfg, cli_pem, cli_key, NULL), 0);
	struct end c, s;
	connect_pair(&c, &s, ccfg, "localhost", scfg, 1);
	expect_open(&c, &s);
	c.to_send = 20000;
	s.to_send = 30000;
	pump(&c, &s, 1);
	assert_int_equal(s.received, 20000);
	assert_int_equal(c.received, 30000);
	assert_false(c.mismatch);
	assert_false(s.mismatch);
	uint8_t cb[32], sb[32];
	assert_int_equal(wq_tls_channel_binding(c.t, cb), 0);
	assert_int_equal(wq_tls_channel_binding(s.t, sb), 0);
	assert_memory_equal(cb, sb, 32);
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void test_backpressure_and_close(void **state)
{
	(void)state;
	struct wq_tls_config *scfg = server_cfg(srv_pem, srv_key, NULL);
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_CA_FILE, ca_pem);
	struct end c, s;
	/* before the handshake: no writing, no shutdown */
	end_init(&c, engine(ccfg, "localhost"), 5);
	assert_int_equal(wq_tls_write(c.t, "x", 1), -EAGAIN);
	assert_int_equal(wq_tls_shutdown(c.t), -ENOTCONN);
	end_free(&c);
	connect_pair(&c, &s, ccfg, "localhost", scfg, 4096);
	expect_open(&c, &s);

	/* the writer is refused once WQ_TLS_OUT_MAX waits */
	static unsigned char data[300000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = pattern(c.seed, i);
	size_t accepted = 0;
	for (;;) {
		ssize_t r = wq_tls_write(c.t, data + accepted, sizeof data - accepted);
		if (r == -EAGAIN)
			break;
		assert_true(r > 0);
		accepted += (size_t)r;
	}
	size_t pending = wq_tls_out_pending(c.t);
	assert_true(pending >= WQ_TLS_OUT_MAX);
	assert_true(pending <= OUT_BOUND);
	assert_true(accepted < sizeof data);
	size_t n = 0;
	char *cipher = wq_tls_take_all(c.t, &n);
	assert_int_equal(n, pending);
	assert_int_equal(wq_tls_out_pending(c.t), 0);
	/* the reader is refused past WQ_TLS_IN_MAX until it decrypts */
	ssize_t f = wq_tls_feed(s.t, cipher, n);
	assert_int_equal(f, WQ_TLS_IN_MAX);
	assert_int_equal(wq_tls_feed(s.t, cipher + f, n - (size_t)f), 0);
	unsigned char out[4096];
	size_t got = 0, off = (size_t)f;
	bool bad = false;
	while (got < accepted) {
		ssize_t r = wq_tls_read(s.t, out, sizeof out);
		if (r == -EAGAIN) {
			assert_true(off < n);
			ssize_t more = wq_tls_feed(s.t, cipher + off, n - off);
			assert_true(more > 0);
			off += (size_t)more;
			continue;
		}
		assert_true(r > 0);
		for (ssize_t i = 0; i < r; i++)
			bad |= out[i] != data[got + (size_t)i];
		got += (size_t)r;
	}
	assert_false(bad);
	assert_int_equal(off, n);
	free(cipher);

	/* close_notify */
	assert_int_equal(wq_tls_shutdown(c.t), 0);
	assert_int_equal(wq_tls_shutdown(c.t), 0);
	assert_int_equal(wq_tls_write(c.t, "x", 1), -EPIPE);
	pump(&c, &s, 4096);
	assert_true(s.eof);
	assert_int_equal(wq_tls_state(s.t), WQ_TLS_CLOSED);
	assert_int_equal(wq_tls_read(s.t, out, sizeof out), 0);
	assert_int_equal(wq_tls_write(s.t, "x", 1), -EPIPE);
	assert_null(wq_tls_error(s.t));
	end_free(&c);
	end_free(&s);
	wq_tls_config_delete(ccfg);
	wq_tls_config_delete(scfg);
}

static void expect_config_error(const char *cert, const char *key, const char *client_ca,
                                const char *part1, const char *part2)
{
	char *err = NULL;
	errno = 0;
	assert_null(wq_tls_config_server_create(cert, key, client_ca, &err));
	assert_true(errno != 0);
	expect_contains(err, part1);
	expect_contains(err, part2);
	free(err);
}

static void test_bad_files(void **state)
{
	(void)state;
	char missing[160];
	snprintf(missing, sizeof missing, "%s/missing.pem", tmpdir);
	expect_config_error(missing, srv_key, NULL, missing, "No such file or directory");
	expect_config_error(srv_pem, missing, NULL, missing, "No such file or directory");
	expect_config_error(tmpdir, srv_key, NULL, tmpdir, "Is a directory");
	expect_config_error(garbage_pem, srv_key, NULL, garbage_pem, "no PEM certificate found");
	expect_config_error(empty_pem, srv_key, NULL, empty_pem, "no PEM certificate found");
	expect_config_error(srv_pem, garbage_pem, NULL, garbage_pem, "no private key found");
	expect_config_error(srv_pem, srv_pem, NULL, srv_pem, "no private key found");
	expect_config_error(srv_pem, other_key, NULL, other_key, "does not match the certificate");
	expect_config_error(srv_pem, other_key, NULL, srv_pem, "does not match the certificate");
	expect_config_error(srv_pem, enc_key, NULL, enc_key, "is encrypted");
	expect_config_error(srv_pem, srv_key, missing, missing, "TLS client CA file");
	expect_config_error(srv_pem, srv_key, empty_pem, empty_pem, "no usable CA certificate");

	char *err = NULL;
	assert_null(wq_tls_config_client_create(WQ_TLS_VERIFY_CA_FILE, missing, &err));
	expect_contains(err, missing);
	free(err);
	err = NULL;
	assert_null(wq_tls_config_client_create(WQ_TLS_VERIFY_CA_FILE, garbage_pem, &err));
	expect_contains(err, garbage_pem);
	free(err);
	err = NULL;
	assert_null(wq_tls_config_client_create(WQ_TLS_VERIFY_CA_FILE, NULL, &err));
	assert_non_null(err);
	free(err);

	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	err = NULL;
	assert_true(wq_tls_config_set_cert(ccfg, cli_pem, srv_key, &err) < 0);
	expect_contains(err, "does not match");
	free(err);
	wq_tls_config_delete(ccfg);

	char fp[WQ_TLS_FINGERPRINT_SIZE];
	err = NULL;
	assert_int_equal(wq_tls_cert_file_fingerprint(missing, fp, &err), -ENOENT);
	expect_contains(err, missing);
	free(err);
	err = NULL;
	assert_int_equal(wq_tls_cert_file_fingerprint(garbage_pem, fp, &err), HTC_EPARSE);
	expect_contains(err, garbage_pem);
	free(err);
	assert_int_equal(wq_tls_cert_file_fingerprint(other_pem, fp, NULL), 0);
	assert_string_equal(fp, other_fp);

	/* NULL configuration and NULL deletes */
	err = NULL;
	assert_null(wq_tls_create(NULL, "localhost", &err));
	assert_non_null(err);
	free(err);
	wq_tls_delete(NULL);
	wq_tls_config_delete(NULL);
}

static void test_peek(void **state)
{
	(void)state;
	const unsigned char plain[] = {0xF5, 0x71, 0x01, 0x00};
	const unsigned char hs[] = {0x16, 0x03, 0x03, 0x00};
	const unsigned char alert[] = {0x15, 0x03, 0x03};
	assert_int_equal(wq_tls_peek(plain, 0), WQ_TLS_PEEK_MORE);
	assert_int_equal(wq_tls_peek(plain, 1), WQ_TLS_PEEK_MORE);
	assert_int_equal(wq_tls_peek(plain, 2), WQ_TLS_PEEK_MORE);
	assert_int_equal(wq_tls_peek(plain, 3), WQ_TLS_PEEK_PLAIN);
	assert_int_equal(wq_tls_peek(plain, 4), WQ_TLS_PEEK_PLAIN);
	assert_int_equal(wq_tls_peek(hs, 1), WQ_TLS_PEEK_MORE);
	assert_int_equal(wq_tls_peek(hs, 2), WQ_TLS_PEEK_TLS);
	assert_int_equal(wq_tls_peek(hs, 4), WQ_TLS_PEEK_TLS);
	assert_int_equal(wq_tls_peek(alert, 3), WQ_TLS_PEEK_TLS);
	assert_int_equal(wq_tls_peek("\xF5\x71\x02", 3), WQ_TLS_PEEK_OTHER); /* DATA first */
	assert_int_equal(wq_tls_peek("\xF5\x72", 2), WQ_TLS_PEEK_OTHER);
	assert_int_equal(wq_tls_peek("\x16\x04", 2), WQ_TLS_PEEK_OTHER);
	assert_int_equal(wq_tls_peek("HTTP/1.1 400", 12), WQ_TLS_PEEK_OTHER);
	assert_int_equal(wq_tls_peek("\x00", 1), WQ_TLS_PEEK_OTHER);

	/* what a real engine sends is recognised as TLS */
	struct wq_tls_config *ccfg = client_cfg(WQ_TLS_VERIFY_NONE, NULL);
	struct wq_tls *t = engine(ccfg, "localhost");
	size_t n = 0;
	char *hello = wq_tls_take_all(t, &n);
	assert_true(n > 5);
	assert_int_equal(wq_tls_peek(hello, n), WQ_TLS_PEEK_TLS);
	assert_null(wq_tls_take_all(t, &n));
	assert_int_equal(n, 0);
	free(hello);
	wq_tls_delete(t);
	wq_tls_config_delete(ccfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_handshake_and_16mib),
	    cmocka_unit_test(test_channel_binding),
	    cmocka_unit_test(test_channel_binding_is_the_exporter),
	    cmocka_unit_test(test_ca_file_and_host_names),
	    cmocka_unit_test(test_fingerprint),
	    cmocka_unit_test(test_no_verify),
	    cmocka_unit_test(test_client_certificates),
	    cmocka_unit_test(test_tls12_refused),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_one_byte_at_a_time),
	    cmocka_unit_test(test_backpressure_and_close),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_peek),
	};
	return cmocka_run_group_tests(tests, setup_certs, teardown_certs);
}
