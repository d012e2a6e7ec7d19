/* wq_auth.c: password authentication of the Work Queue protocol: loading the
 * key from a password file, nonces from RAND_bytes, the transcript T(label)
 * of section 4 and the HMAC-SHA256 proofs, compared in constant time. Key
 * bytes and the buffers that held them are wiped with OPENSSL_cleanse. */
#include "wq_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

/* A password file larger than this is refused without reading it all
 * (trailing newlines beyond the 4,096 key bytes are allowed up to here). */
#define WQ_AUTH_FILE_MAX 65536

struct wq_auth_key {
	size_t len;
	unsigned char bytes[];
};

struct wq_auth_key *wq_auth_key_create(const void *bytes, size_t len)
{
	if (len < 1 || len > WQ_AUTH_KEY_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct wq_auth_key *k = xmalloc(sizeof *k + len);
	k->len = len;
	memcpy(k->bytes, bytes, len);
	return k;
}

void wq_auth_key_delete(struct wq_auth_key *k)
{
	if (!k)
		return;
	OPENSSL_cleanse(k->bytes, k->len);
	OPENSSL_cleanse(&k->len, sizeof k->len);
	free(k);
}

struct wq_auth_key *wq_auth_key_load(const char *path, char **why)
{
	struct wq_auth_key *k = NULL;
	unsigned char *buf = NULL;
	size_t used = 0;
	int err = 0;
	*why = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		*why = xasprintf("password file %s: %s", path, strerror(err));
		goto out;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		err = errno;
		*why = xasprintf("password file %s: %s", path, strerror(err));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		*why = xasprintf("password file %s: not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		warn("password file %s is readable by group or others (mode %04o); chmod 600 it",
		     path, (unsigned)(st.st_mode & 07777));
	buf = xmalloc(WQ_AUTH_FILE_MAX + 1);
	for (;;) {
		ssize_t n = read(fd, buf + used, WQ_AUTH_FILE_MAX + 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			*why = xasprintf("password file %s: %s", path, strerror(err));
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > WQ_AUTH_FILE_MAX)
			break;
	}
	size_t len = used;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len == 0) {
		err = EINVAL;
		*why =
		    xasprintf("password file %s: empty (after removing trailing CR and LF)", path);
	} else if (len > WQ_AUTH_KEY_MAX) {
		err = EINVAL;
		*why = xasprintf("password file %s: longer than %d bytes", path, WQ_AUTH_KEY_MAX);
	} else {
		k = wq_auth_key_create(buf, len);
		if (!k)
			err = errno;
	}
out:
	if (buf) {
		OPENSSL_cleanse(buf, used);
		free(buf);
	}
	if (fd >= 0)
		close(fd);
	if (!k)
		errno = err ? err : EINVAL;
	return k;
}

int wq_auth_nonce(unsigned char *nonce, char hex[WQ_AUTH_NONCE_HEX])
{
	unsigned char n[WQ_AUTH_NONCE_BYTES];
	if (RAND_bytes(n, sizeof n) != 1)
		return -EIO;
	str_hex_encode(n, sizeof n, hex);
	if (nonce)
		memcpy(nonce, n, sizeof n);
	return 0;
}

int wq_auth_transcript_init(struct wq_auth_transcript *t, const char *nm_hex, const char *nw_hex,
                            const void *worker_hello, size_t worker_len, const void *master_hello,
                            size_t master_len, const unsigned char *binding)
{
	memset(t, 0, sizeof *t);
	if (str_hex_decode(nm_hex, t->nm, sizeof t->nm) != 0 ||
	    str_hex_decode(nw_hex, t->nw, sizeof t->nw) != 0)
		return HTC_EPARSE;
	if (!SHA256(worker_hello, worker_len, t->hw) || !SHA256(master_hello, master_len, t->hm))
		return -EIO;
	if (binding) {
		memcpy(t->b, binding, sizeof t->b);
		t->has_b = true;
	}
	return 0;
}

int wq_auth_transcript_bytes(const struct wq_auth_transcript *t, const char *label,
                             unsigned char *out, size_t size)
{
	size_t l = strlen(label);
	size_t need = l + 1 + 4 * 32 + (t->has_b ? sizeof t->b : 0);
	if (need > size)
		return -ENOSPC;
	unsigned char *p = out;
	memcpy(p, label, l);
	p += l;
	*p++ = 0;
	memcpy(p, t->nm, 32);
	p += 32;
	memcpy(p, t->nw, 32);
	p += 32;
	memcpy(p, t->hw, 32);
	p += 32;
	memcpy(p, t->hm, 32);
	p += 32;
	if (t->has_b) {
		memcpy(p, t->b, sizeof t->b);
		p += sizeof t->b;
	}
	return (int)(p - out);
}

static int compute(const struct wq_auth_key *k, const struct wq_auth_transcript *t,
                   const char *label, unsigned char mac[32])
{
	unsigned char buf[WQ_AUTH_T_MAX];
	int n = wq_auth_transcript_bytes(t, label, buf, sizeof buf);
	if (n < 0)
		return n;
	unsigned int maclen = 0;
	if (!HMAC(EVP_sha256(), k->bytes, (int)k->len, buf, (size_t)n, mac, &maclen) ||
	    maclen != 32)
		return -EIO;
	return 0;
}

int wq_auth_proof(const struct wq_auth_key *k, const struct wq_auth_transcript *t,
                  const char *label, char out[WQ_AUTH_PROOF_HEX])
{
	unsigned char mac[32];
	int rc = compute(k, t, label, mac);
	if (rc == 0)
		str_hex_encode(mac, sizeof mac, out);
	else
		out[0] = 0;
	OPENSSL_cleanse(mac, sizeof mac);
	return rc;
}

int wq_auth_verify(const struct wq_auth_key *k, const struct wq_auth_transcript *t,
                   const char *label, const char *peer_hex)
{
	unsigned char mac[32], peer[32];
	if (str_hex_decode(peer_hex, peer, sizeof peer) != 0)
		return HTC_EAUTH;
	int rc = compute(k, t, label, mac);
	if (rc == 0 && CRYPTO_memcmp(mac, peer, sizeof mac) != 0)
		rc = HTC_EAUTH;
	OPENSSL_cleanse(mac, sizeof mac);
	if (rc != 0 && rc != HTC_EAUTH)
		debug(D_WQ, "auth: HMAC computation failed");
	return rc;
}
