/* wq_tls.c: TLS for Work Queue connections (see wq_tls.h). An OpenSSL 3
 * SSL object runs on two memory BIOs, one for the ciphertext fed in from the
 * socket and one for the ciphertext to send; both are kept bounded, and every
 * failure is turned into one line of text naming OpenSSL's reason. */
#include "wq_tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "debug.h"
#include "htc_error.h"
#include "sha256.h"
#include "wq_frame.h"
#include "xalloc.h"
#include "banned.h"

struct wq_tls_config {
	SSL_CTX *ctx;
	bool server;
	enum wq_tls_verify mode;
	char fingerprint[WQ_TLS_FINGERPRINT_SIZE]; /* FINGERPRINT mode: expected, lowercase */
};

struct wq_tls {
	SSL *ssl;  /* owns the two BIOs */
	BIO *rbio; /* ciphertext received, waiting to be decrypted */
	BIO *wbio; /* ciphertext produced, waiting to be taken */
	bool server;
	enum wq_tls_verify mode;
	char fingerprint[WQ_TLS_FINGERPRINT_SIZE];
	enum wq_tls_state state;
	bool got_plaintext; /* some plaintext was received from the peer */
	bool sent_shutdown; /* close_notify queued */
	char *error;        /* set when FAILED */
	char *verify_note;  /* why the fingerprint check refused the certificate */
};

/* ---- small helpers --------------------------------------------------------- */

static void set_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char **err, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	debug(D_NET, "%s", text);
	if (err)
		*err = xstrdup(text);
}

/* OpenSSL's reason for the oldest error queued (the root cause), then clears
 * the queue. */
static void ossl_reason(char *out, size_t n, unsigned long *code)
{
	unsigned long e = ERR_get_error();
	if (code)
		*code = e;
	if (!e) {
		snprintf(out, n, "unknown error");
	} else {
		const char *r = ERR_reason_error_string(e);
		if (r)
			snprintf(out, n, "%s", r);
		else
			ERR_error_string_n(e, out, n);
	}
	ERR_clear_error();
}

/* Never prompts for a passphrase (OpenSSL's default would read the terminal
 * and block); records that one was asked for. */
static int no_password_cb(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	if (u)
		*(bool *)u = true;
	return -1;
}

/* Checks that PATH names a readable regular file; the error names WHAT and
 * PATH. */
static int check_file(const char *what, const char *path, char **err)
{
	struct stat st;
	if (!path || !*path) {
		set_err(err, "no %s given", what);
		return -EINVAL;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		set_err(err, "cannot read %s %s: %s", what, path, strerror(e));
		return -e;
	}
	int rc = 0;
	if (fstat(fileno(f), &st) < 0) {
		rc = -errno;
		set_err(err, "cannot read %s %s: %s", what, path, strerror(-rc));
	} else if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		set_err(err, "cannot read %s %s: %s", what, path, strerror(EISDIR));
	}
	fclose(f);
	return rc;
}

static int x509_fingerprint(X509 *cert, char out[WQ_TLS_FINGERPRINT_SIZE])
{
	unsigned char *der = NULL;
	int n = i2d_X509(cert, &der);
	out[0] = 0;
	if (n <= 0)
		return HTC_EPROTO;
	int rc = sha256_buffer(der, (size_t)n, out);
	OPENSSL_free(der);
	return rc;
}

static bool is_ip_literal(const char *host)
{
	unsigned char addr[16];
	return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

/* ---- certificates and keys ------------------------------------------------ */

/* Reads the certificate chain of CERT_FILE and the key of KEY_FILE and
 * installs them in CTX. */
static int load_cert_and_key(SSL_CTX *ctx, const char *cert_file, const char *key_file, char **err)
{
	char reason[256];
	X509 *leaf = NULL;
	STACK_OF(X509) *chain = NULL;
	EVP_PKEY *key = NULL;
	BIO *bio = NULL;
	bool asked = false;
	int rc = check_file("TLS certificate file", cert_file, err);
	if (rc < 0)
		return rc;
	rc = check_file("TLS key file", key_file, err);
	if (rc < 0)
		return rc;

	ERR_clear_error();
	rc = HTC_EPARSE;
	bio = BIO_new_file(cert_file, "rb");
	if (!bio) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot read TLS certificate file %s: %s", cert_file, reason);
		rc = -EIO;
		goto out;
	}
	leaf = PEM_read_bio_X509_AUX(bio, NULL, no_password_cb, NULL);
	if (!leaf) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "TLS certificate file %s: no PEM certificate found (%s)", cert_file,
		        reason);
		goto out;
	}
	chain = sk_X509_new_null();
	if (!chain) {
		rc = -ENOMEM;
		set_err(err, "TLS certificate file %s: out of memory", cert_file);
		goto out;
	}
	for (;;) {
		X509 *x = PEM_read_bio_X509(bio, NULL, no_password_cb, NULL);
		if (!x)
			break;
		if (!sk_X509_push(chain, x)) {
			X509_free(x);
			rc = -ENOMEM;
			set_err(err, "TLS certificate file %s: out of memory", cert_file);
			goto out;
		}
	}
	{
		/* The loop ends at the end of the file ("no start line") or at a
		 * broken certificate. */
		unsigned long e = ERR_peek_last_error();
		if (e &&
		    !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
			ossl_reason(reason, sizeof reason, NULL);
			set_err(
			    err,
			    "TLS certificate file %s: certificate %d of the chain is invalid (%s)",
			    cert_file, sk_X509_num(chain) + 2, reason);
			goto out;
		}
		ERR_clear_error();
	}
	BIO_free(bio);

	bio = BIO_new_file(key_file, "rb");
	if (!bio) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot read TLS key file %s: %s", key_file, reason);
		rc = -EIO;
		goto out;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, no_password_cb, &asked);
	if (!key) {
		ossl_reason(reason, sizeof reason, NULL);
		if (asked)
			set_err(err,
			        "TLS key file %s is encrypted; passphrase-protected keys are not "
			        "supported",
			        key_file);
		else
			set_err(err,
			        "TLS key file %s: no private key found (an unencrypted PEM key is "
			        "expected)",
			        key_file);
		goto out;
	}
	if (X509_check_private_key(leaf, key) != 1) {
		ERR_clear_error();
		set_err(err, "TLS key file %s does not match the certificate in %s", key_file,
		        cert_file);
		goto out;
	}
	if (SSL_CTX_use_certificate(ctx, leaf) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "TLS certificate file %s / key file %s refused: %s", cert_file,
		        key_file, reason);
		goto out;
	}
	if (SSL_CTX_set1_chain(ctx, chain) != 1) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "TLS certificate file %s: chain refused: %s", cert_file, reason);
		goto out;
	}
	rc = 0;
out:
	BIO_free(bio);
	X509_free(leaf);
	sk_X509_pop_free(chain, X509_free);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return rc;
}

/* Loads the CAs of CA_FILE as the only trust anchors of CTX. */
static int load_ca_file(SSL_CTX *ctx, const char *what, const char *ca_file, char **err)
{
	char reason[256];
	int rc = check_file(what, ca_file, err);
	if (rc < 0)
		return rc;
	ERR_clear_error();
	if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "%s %s: no usable CA certificate (%s)", what, ca_file, reason);
		return HTC_EPARSE;
	}
	return 0;
}

/* ---- configurations ------------------------------------------------------ */

static struct wq_tls_config *config_new(bool server, char **err)
{
	char reason[256];
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot create a TLS context: %s", reason);
		errno = ENOMEM;
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot require TLS 1.3: %s", reason);
		SSL_CTX_free(ctx);
		errno = ENOTSUP;
		return NULL;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_default_passwd_cb(ctx, no_password_cb);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (server)
		SSL_CTX_set_num_tickets(ctx, 0); /* no resumption: one session per connection */
	struct wq_tls_config *cfg = xcalloc(1, sizeof *cfg);
	cfg->ctx = ctx;
	cfg->server = server;
	cfg->mode = WQ_TLS_VERIFY_NONE;
	return cfg;
}

struct wq_tls_config *wq_tls_config_server_create(const char *cert_file, const char *key_file,
                                                  const char *client_ca_file, char **err)
{
	struct wq_tls_config *cfg = config_new(true, err);
	if (!cfg)
		return NULL;
	int rc = load_cert_and_key(cfg->ctx, cert_file, key_file, err);
	if (rc < 0)
		goto fail;
	if (client_ca_file) {
		rc = load_ca_file(cfg->ctx, "TLS client CA file", client_ca_file, err);
		if (rc < 0)
			goto fail;
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca_file);
		ERR_clear_error();
		if (names)
			SSL_CTX_set_client_CA_list(cfg->ctx, names);
		SSL_CTX_set_verify(cfg->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
		                   NULL);
	}
	return cfg;
fail:
	wq_tls_config_delete(cfg);
	errno = rc < 0 && rc > -HTC_ERR_BASE ? -rc : EINVAL;
	return NULL;
}

/* Replaces chain verification in FINGERPRINT mode: the leaf certificate's
 * SHA-256 must be the expected one. */
static int fingerprint_verify_cb(X509_STORE_CTX *xs, void *arg)
{
	(void)arg;
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct wq_tls *t = ssl ? SSL_get_app_data(ssl) : NULL;
	X509 *cert = X509_STORE_CTX_get0_cert(xs);
	char hex[WQ_TLS_FINGERPRINT_SIZE];
	if (!t || !cert || x509_fingerprint(cert, hex) < 0) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_UNSPECIFIED);
		return 0;
	}
	if (CRYPTO_memcmp(hex, t->fingerprint, 64) != 0) {
		free(t->verify_note);
		t->verify_note = xasprintf("the certificate's SHA-256 fingerprint %s is not the "
		                           "expected %s",
		                           hex, t->fingerprint);
		X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	X509_STORE_CTX_set_error(xs, X509_V_OK);
	return 1;
}

struct wq_tls_config *wq_tls_config_client_create(enum wq_tls_verify mode, const char *arg,
                                                  char **err)
{
	char reason[256];
	char fp[WQ_TLS_FINGERPRINT_SIZE];
	int rc = 0;
	if (mode == WQ_TLS_VERIFY_FINGERPRINT) {
		rc = wq_tls_fingerprint_parse(arg, fp, err);
		if (rc < 0) {
			errno = EINVAL;
			return NULL;
		}
	}
	struct wq_tls_config *cfg = config_new(false, err);
	if (!cfg)
		return NULL;
	cfg->mode = mode;
	switch (mode) {
	case WQ_TLS_VERIFY_SYSTEM:
		ERR_clear_error();
		if (SSL_CTX_set_default_verify_paths(cfg->ctx) != 1) {
			ossl_reason(reason, sizeof reason, NULL);
			set_err(err, "cannot load the system's trusted CA certificates: %s",
			        reason);
			rc = -ENOENT;
			goto fail;
		}
		SSL_CTX_set_verify(cfg->ctx, SSL_VERIFY_PEER, NULL);
		break;
	case WQ_TLS_VERIFY_CA_FILE:
		rc = load_ca_file(cfg->ctx, "TLS CA file", arg, err);
		if (rc < 0)
			goto fail;
		SSL_CTX_set_verify(cfg->ctx, SSL_VERIFY_PEER, NULL);
		break;
	case WQ_TLS_VERIFY_FINGERPRINT:
		memcpy(cfg->fingerprint, fp, sizeof fp);
		SSL_CTX_set_verify(cfg->ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_cert_verify_callback(cfg->ctx, fingerprint_verify_cb, NULL);
		break;
	case WQ_TLS_VERIFY_NONE: SSL_CTX_set_verify(cfg->ctx, SSL_VERIFY_NONE, NULL); break;
	default:
		set_err(err, "unknown TLS verification mode %d", (int)mode);
		rc = -EINVAL;
		goto fail;
	}
	return cfg;
fail:
	wq_tls_config_delete(cfg);
	errno = rc < 0 && rc > -HTC_ERR_BASE ? -rc : EINVAL;
	return NULL;
}

int wq_tls_config_set_cert(struct wq_tls_config *cfg, const char *cert_file, const char *key_file,
                           char **err)
{
	if (!cfg) {
		set_err(err, "no TLS configuration");
		return -EINVAL;
	}
	return load_cert_and_key(cfg->ctx, cert_file, key_file, err);
}

struct ssl_ctx_st *wq_tls_config_ssl_ctx(struct wq_tls_config *cfg)
{
	return cfg ? cfg->ctx : NULL;
}

void wq_tls_config_delete(struct wq_tls_config *cfg)
{
	if (!cfg)
		return;
	SSL_CTX_free(cfg->ctx);
	free(cfg);
}

/* ---- engines --------------------------------------------------------------- */

/* Records a fatal error from the last OpenSSL call, whose SSL_get_error()
 * value is SSLERR. */
static void tls_fail(struct wq_tls *t, int sslerr)
{
	char reason[256];
	char detail[512] = "";
	unsigned long code = 0;
	if (sslerr == SSL_ERROR_ZERO_RETURN) {
		snprintf(reason, sizeof reason, "the peer closed the TLS session");
		ERR_clear_error();
	} else if (sslerr == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
		snprintf(reason, sizeof reason, "unexpected end of the TLS stream");
	} else {
		ossl_reason(reason, sizeof reason, &code);
	}
	if (ERR_GET_LIB(code) == ERR_LIB_SSL &&
	    ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		long vr = SSL_get_verify_result(t->ssl);
		if (t->verify_note)
			snprintf(detail, sizeof detail, " (%s)", t->verify_note);
		else if (vr != X509_V_OK)
			snprintf(detail, sizeof detail, " (%s)", X509_verify_cert_error_string(vr));
	}
	free(t->error);
	/* A TLS 1.3 client finishes its handshake before the server has checked
	 * it, so the server's refusal reaches it later, before any data. */
	bool in_handshake = t->state == WQ_TLS_HANDSHAKING || (!t->server && !t->got_plaintext);
	t->error = xasprintf("%s: %s%s", in_handshake ? "TLS handshake failed" : "TLS error",
	                     reason, detail);
	t->state = WQ_TLS_FAILED;
	debug(D_NET, "%s", t->error);
}

static void drive_handshake(struct wq_tls *t)
{
	if (t->state != WQ_TLS_HANDSHAKING)
		return;
	ERR_clear_error();
	int r = SSL_do_handshake(t->ssl);
	if (r == 1) {
		t->state = WQ_TLS_OPEN;
		debug(D_NET, "TLS handshake complete as %s: %s %s", t->server ? "server" : "client",
		      SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl));
		return;
	}
	int e = SSL_get_error(t->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return;
	tls_fail(t, e);
}

struct wq_tls *wq_tls_create(struct wq_tls_config *cfg, const char *host, char **err)
{
	char reason[256];
	if (!cfg) {
		set_err(err, "no TLS configuration");
		errno = EINVAL;
		return NULL;
	}
	bool verify_name = !cfg->server && (cfg->mode == WQ_TLS_VERIFY_SYSTEM ||
	                                    cfg->mode == WQ_TLS_VERIFY_CA_FILE);
	if (verify_name && (!host || !*host)) {
		set_err(err, "a host name is needed to verify the server's TLS certificate");
		errno = EINVAL;
		return NULL;
	}
	ERR_clear_error();
	struct wq_tls *t = xcalloc(1, sizeof *t);
	t->server = cfg->server;
	t->mode = cfg->mode;
	memcpy(t->fingerprint, cfg->fingerprint, sizeof t->fingerprint);
	t->state = WQ_TLS_HANDSHAKING;
	t->ssl = SSL_new(cfg->ctx);
	t->rbio = BIO_new(BIO_s_mem());
	t->wbio = BIO_new(BIO_s_mem());
	if (!t->ssl || !t->rbio || !t->wbio) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot create a TLS session: %s", reason);
		BIO_free(t->rbio);
		BIO_free(t->wbio);
		SSL_free(t->ssl);
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	/* An empty memory BIO means "retry later", not end of file. */
	BIO_set_mem_eof_return(t->rbio, -1);
	BIO_set_mem_eof_return(t->wbio, -1);
	SSL_set_bio(t->ssl, t->rbio, t->wbio);
	SSL_set_app_data(t->ssl, t);

	if (t->server) {
		SSL_set_accept_state(t->ssl);
		return t;
	}
	int ok = 1;
	if (host && *host) {
		bool ip = is_ip_literal(host);
		if (!ip)
			ok &= SSL_set_tlsext_host_name(t->ssl, host);
		if (verify_name) {
			SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
			if (ip)
				ok &= X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host);
			else
				ok &= SSL_set1_host(t->ssl, host);
		}
	}
	if (ok != 1) {
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot use host name \"%.255s\" for TLS: %s", host, reason);
		wq_tls_delete(t);
		errno = EINVAL;
		return NULL;
	}
	SSL_set_connect_state(t->ssl);
	drive_handshake(t); /* queues the ClientHello */
	return t;
}

void wq_tls_delete(struct wq_tls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	free(t->error);
	free(t->verify_note);
	free(t);
}

ssize_t wq_tls_feed(struct wq_tls *t, const void *data, size_t len)
{
	if (t->state == WQ_TLS_FAILED)
		return HTC_EPROTO;
	if (t->state == WQ_TLS_CLOSED)
		return (ssize_t)(len > SSIZE_MAX ? SSIZE_MAX : len);
	size_t pending = BIO_ctrl_pending(t->rbio);
	size_t room = pending < WQ_TLS_IN_MAX ? WQ_TLS_IN_MAX - pending : 0;
	size_t n = len < room ? len : room;
	if (n > 0) {
		int w = BIO_write(t->rbio, data, (int)n);
		if (w != (int)n) {
			ERR_clear_error();
			free(t->error);
			t->error = xstrdup("TLS error: out of memory buffering received data");
			t->state = WQ_TLS_FAILED;
			return HTC_EPROTO;
		}
	}
	drive_handshake(t);
	if (t->state == WQ_TLS_FAILED)
		return HTC_EPROTO;
	return (ssize_t)n;
}

ssize_t wq_tls_read(struct wq_tls *t, void *buf, size_t cap)
{
	if (t->state == WQ_TLS_FAILED)
		return HTC_EPROTO;
	if (t->state == WQ_TLS_CLOSED)
		return 0;
	if (t->state == WQ_TLS_HANDSHAKING) {
		drive_handshake(t);
		if (t->state == WQ_TLS_FAILED)
			return HTC_EPROTO;
		if (t->state == WQ_TLS_HANDSHAKING)
			return -EAGAIN;
	}
	if (cap == 0)
		return -EAGAIN;
	int n = cap > INT_MAX ? INT_MAX : (int)cap;
	ERR_clear_error();
	int r = SSL_read(t->ssl, buf, n);
	if (r > 0) {
		t->got_plaintext = true;
		return r;
	}
	int e = SSL_get_error(t->ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE: return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		t->state = WQ_TLS_CLOSED;
		debug(D_NET, "TLS: the peer sent close_notify");
		return 0;
	default: tls_fail(t, e); return HTC_EPROTO;
	}
}

ssize_t wq_tls_write(struct wq_tls *t, const void *data, size_t len)
{
	if (t->state == WQ_TLS_FAILED)
		return HTC_EPROTO;
	if (t->state == WQ_TLS_CLOSED || t->sent_shutdown)
		return -EPIPE;
	if (t->state == WQ_TLS_HANDSHAKING)
		return -EAGAIN;
	if (len == 0)
		return 0;
	size_t pending = BIO_ctrl_pending(t->wbio);
	if (pending >= WQ_TLS_OUT_MAX)
		return -EAGAIN;
	size_t n = WQ_TLS_OUT_MAX - pending;
	if (n > len)
		n = len;
	ERR_clear_error();
	int r = SSL_write(t->ssl, data, (int)n);
	if (r > 0)
		return r;
	int e = SSL_get_error(t->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return -EAGAIN;
	tls_fail(t, e);
	return HTC_EPROTO;
}

size_t wq_tls_out_pending(const struct wq_tls *t)
{
	return BIO_ctrl_pending(t->wbio);
}

size_t wq_tls_take(struct wq_tls *t, void *buf, size_t cap)
{
	size_t pending = BIO_ctrl_pending(t->wbio);
	size_t n = cap < pending ? cap : pending;
	if (n > INT_MAX)
		n = INT_MAX;
	if (n == 0)
		return 0;
	int r = BIO_read(t->wbio, buf, (int)n);
	return r > 0 ? (size_t)r : 0;
}

char *wq_tls_take_all(struct wq_tls *t, size_t *len)
{
	size_t pending = BIO_ctrl_pending(t->wbio);
	*len = 0;
	if (pending == 0)
		return NULL;
	char *buf = xmalloc(pending);
	*len = wq_tls_take(t, buf, pending);
	if (*len == 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int wq_tls_shutdown(struct wq_tls *t)
{
	if (t->state == WQ_TLS_FAILED)
		return HTC_EPROTO;
	if (t->state == WQ_TLS_HANDSHAKING)
		return -ENOTCONN;
	if (t->sent_shutdown)
		return 0;
	ERR_clear_error();
	int r = SSL_shutdown(t->ssl);
	if (r < 0) {
		int e = SSL_get_error(t->ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			tls_fail(t, e);
			return HTC_EPROTO;
		}
	}
	t->sent_shutdown = true;
	return 0;
}

enum wq_tls_state wq_tls_state(const struct wq_tls *t)
{
	return t->state;
}

bool wq_tls_handshake_done(const struct wq_tls *t)
{
	return t->state == WQ_TLS_OPEN || t->state == WQ_TLS_CLOSED;
}

const char *wq_tls_error(const struct wq_tls *t)
{
	return t->state == WQ_TLS_FAILED ? t->error : NULL;
}

const char *wq_tls_version(const struct wq_tls *t)
{
	return wq_tls_handshake_done(t) ? SSL_get_version(t->ssl) : "";
}

const char *wq_tls_cipher(const struct wq_tls *t)
{
	const char *c = wq_tls_handshake_done(t) ? SSL_get_cipher_name(t->ssl) : NULL;
	return c ? c : "";
}

int wq_tls_channel_binding(struct wq_tls *t, uint8_t out[WQ_TLS_BINDING_SIZE])
{
	if (!wq_tls_handshake_done(t))
		return -ENOTCONN;
	ERR_clear_error();
	if (SSL_export_keying_material(t->ssl, out, WQ_TLS_BINDING_SIZE, WQ_TLS_BINDING_LABEL,
	                               strlen(WQ_TLS_BINDING_LABEL), NULL, 0, 0) != 1) {
		char reason[256];
		ossl_reason(reason, sizeof reason, NULL);
		debug(D_NET, "TLS exporter failed: %s", reason);
		return HTC_EPROTO;
	}
	return 0;
}

int wq_tls_peer_fingerprint(struct wq_tls *t, char out[WQ_TLS_FINGERPRINT_SIZE])
{
	out[0] = 0;
	if (!wq_tls_handshake_done(t))
		return -ENOENT;
	X509 *peer = SSL_get1_peer_certificate(t->ssl);
	if (!peer)
		return -ENOENT;
	int rc = x509_fingerprint(peer, out);
	X509_free(peer);
	return rc;
}

int wq_tls_cert_file_fingerprint(const char *path, char out[WQ_TLS_FINGERPRINT_SIZE], char **err)
{
	out[0] = 0;
	int rc = check_file("certificate file", path, err);
	if (rc < 0)
		return rc;
	ERR_clear_error();
	BIO *bio = BIO_new_file(path, "rb");
	if (!bio) {
		char reason[256];
		ossl_reason(reason, sizeof reason, NULL);
		set_err(err, "cannot read certificate file %s: %s", path, reason);
		return -EIO;
	}
	X509 *cert = PEM_read_bio_X509(bio, NULL, no_password_cb, NULL);
	if (!cert && BIO_reset(bio) == 0) /* not PEM: try DER */
		cert = d2i_X509_bio(bio, NULL);
	BIO_free(bio);
	ERR_clear_error();
	if (!cert) {
		set_err(err, "certificate file %s: no certificate found (neither PEM nor DER)",
		        path);
		return HTC_EPARSE;
	}
	rc = x509_fingerprint(cert, out);
	X509_free(cert);
	if (rc < 0)
		set_err(err, "certificate file %s: cannot hash the certificate", path);
	return rc;
}

int wq_tls_fingerprint_parse(const char *text, char out[WQ_TLS_FINGERPRINT_SIZE], char **err)
{
	size_t n = 0;
	bool bad = !text;
	out[0] = 0;
	for (const char *p = text; p && *p && !bad; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == ':')
			continue;
		if (!isxdigit(c) || n == 64)
			bad = true;
		else
			out[n++] = (char)tolower(c);
	}
	if (bad || n != 64) {
		/* Show the value, printable and bounded. */
		char shown[100];
		size_t k = 0;
		for (const char *p = text; p && *p && k + 4 < sizeof shown; p++)
			shown[k++] = isprint((unsigned char)*p) ? *p : '?';
		if (text && k + 4 >= sizeof shown) {
			memcpy(shown + k, "...", 3);
			k += 3;
		}
		shown[k] = 0;
		set_err(err,
		        "invalid SHA-256 fingerprint \"%s\": expected 64 hexadecimal digits "
		        "(colons allowed)",
		        shown);
		out[0] = 0;
		return HTC_EPARSE;
	}
	out[64] = 0;
	return 0;
}

enum wq_tls_peek wq_tls_peek(const void *data, size_t len)
{
	const unsigned char *b = data;
	if (len == 0)
		return WQ_TLS_PEEK_MORE;
	if (b[0] == WQ_FRAME_MAGIC0) {
		if (len < 2)
			return WQ_TLS_PEEK_MORE;
		if (b[1] != WQ_FRAME_MAGIC1)
			return WQ_TLS_PEEK_OTHER;
		if (len < 3)
			return WQ_TLS_PEEK_MORE;
		return b[2] == WQ_FRAME_MSG ? WQ_TLS_PEEK_PLAIN : WQ_TLS_PEEK_OTHER;
	}
	if (b[0] >= 0x14 && b[0] <= 0x17) {
		if (len < 2)
			return WQ_TLS_PEEK_MORE;
		return b[1] == 0x03 ? WQ_TLS_PEEK_TLS : WQ_TLS_PEEK_OTHER;
	}
	return WQ_TLS_PEEK_OTHER;
}
