/* wq_auth.h: password authentication of the Work Queue protocol (section 4
 * of doc/work-queue-protocol.md): the password file, nonces, the transcript
 * T(label) that binds both nonces, both hello payloads and an optional TLS
 * channel binding, and the HMAC-SHA256 proofs of worker and master. */
#ifndef WQ_AUTH_H
#define WQ_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define WQ_AUTH_KEY_MAX      4096 /* bytes of a password after stripping CR/LF */
#define WQ_AUTH_NONCE_BYTES  32
#define WQ_AUTH_NONCE_HEX    65 /* 64 hex digits and the NUL */
#define WQ_AUTH_PROOF_HEX    65
#define WQ_AUTH_BINDING_LEN  32
#define WQ_AUTH_LABEL_WORKER "htc-wq/1 worker proof"
#define WQ_AUTH_LABEL_MASTER "htc-wq/1 master proof"
/* Largest T(label): label, NUL, two nonces, two hashes, binding. */
#define WQ_AUTH_T_MAX (64 + 1 + 4 * 32 + WQ_AUTH_BINDING_LEN)

/* The shared key K (opaque). Its bytes are wiped when it is deleted. */
struct wq_auth_key;

/* Reads the password file PATH: its bytes with trailing '\r' and '\n'
 * stripped are the key, which must be 1..4096 bytes. Warns (warn()) when the
 * file is readable by group or others. Returns the key, or NULL with errno
 * set and *WHY (caller frees) a text naming the file, e.g.
 *   password file /x/pw: empty (after removing trailing CR and LF)
 *   password file /x/pw: longer than 4096 bytes */
struct wq_auth_key *wq_auth_key_load(const char *path, char **why);

/* A key from LEN bytes at BYTES (copied), 1..4096 bytes, else NULL with
 * errno EINVAL. */
struct wq_auth_key *wq_auth_key_create(const void *bytes, size_t len);

/* Wipes and frees K; NULL is accepted. */
void wq_auth_key_delete(struct wq_auth_key *k);

/* 32 fresh random bytes (RAND_bytes) into NONCE (may be NULL) and their
 * lowercase hex into HEX. Returns 0 or -EIO. */
int wq_auth_nonce(unsigned char *nonce, char hex[WQ_AUTH_NONCE_HEX]);

/* Everything T(label) is made of, except the label. */
struct wq_auth_transcript {
	unsigned char nm[WQ_AUTH_NONCE_BYTES]; /* master's nonce */
	unsigned char nw[WQ_AUTH_NONCE_BYTES]; /* worker's nonce */
	unsigned char hw[32];                  /* SHA-256 of the worker hello payload */
	unsigned char hm[32];                  /* SHA-256 of the master hello payload */
	unsigned char b[WQ_AUTH_BINDING_LEN];  /* TLS channel binding */
	bool has_b;
};

/* Fills T from the two nonces in hex (64 lowercase or uppercase digits
 * each), the exact hello payloads as sent and received, and BINDING (NULL on
 * a plain connection, else WQ_AUTH_BINDING_LEN bytes exported from TLS).
 * Returns 0, or HTC_EPARSE for a nonce that is not 64 hex digits, or -EIO. */
int wq_auth_transcript_init(struct wq_auth_transcript *t, const char *nm_hex, const char *nw_hex,
                            const void *worker_hello, size_t worker_len, const void *master_hello,
                            size_t master_len, const unsigned char *binding);

/* Writes T(LABEL) = LABEL || 0x00 || Nm || Nw || SHA256(worker hello) ||
 * SHA256(master hello) || B into OUT (SIZE bytes). Returns its length, or
 * -ENOSPC if it does not fit. */
int wq_auth_transcript_bytes(const struct wq_auth_transcript *t, const char *label,
                             unsigned char *out, size_t size);

/* The proof HMAC-SHA256(K, T(LABEL)) in lowercase hex. LABEL is
 * WQ_AUTH_LABEL_WORKER or WQ_AUTH_LABEL_MASTER. Returns 0 or -EIO. */
int wq_auth_proof(const struct wq_auth_key *k, const struct wq_auth_transcript *t,
                  const char *label, char out[WQ_AUTH_PROOF_HEX]);

/* Checks the proof PEER_HEX received from the peer against the one expected
 * for LABEL, in constant time (CRYPTO_memcmp). Returns 0 if it matches,
 * HTC_EAUTH if not (or if PEER_HEX is not 64 hex digits), -EIO on a crypto
 * failure. */
int wq_auth_verify(const struct wq_auth_key *k, const struct wq_auth_transcript *t,
                   const char *label, const char *peer_hex);

#endif
