/* sha256.h: SHA-256 content hashing (OpenSSL EVP underneath) for file
 * identity and integrity checks. Digests are given as 64 lowercase hex
 * characters plus a NUL. Files are hashed in 64 KiB chunks, so memory use
 * does not depend on the file size. */
#ifndef HTC_SHA256_H
#define HTC_SHA256_H

#include <stddef.h>

/* Size of a hex digest buffer: 64 hex characters and the NUL. */
#define SHA256_HEX_SIZE 65

/* Hashes the LEN bytes at DATA into OUT_HEX. Returns 0, or -ENOMEM / -EIO
 * if the crypto library fails (OUT_HEX is then "" ). */
int sha256_buffer(const void *data, size_t len, char out_hex[SHA256_HEX_SIZE]);

/* Hashes everything readable from FD, from its current offset to end of
 * file, into OUT_HEX. FD is left open (at end of file). Returns 0 or -errno
 * (a read error, or -ENOMEM / -EIO from the crypto library). */
int sha256_fd(int fd, char out_hex[SHA256_HEX_SIZE]);

/* Hashes the file at PATH (following symbolic links) into OUT_HEX. Returns 0
 * or -errno (e.g. -ENOENT, -EISDIR). */
int sha256_file(const char *path, char out_hex[SHA256_HEX_SIZE]);

/* Incremental hashing: create, update any number of times, final. */
struct sha256_ctx;

/* A new context ready for updates; NULL with errno ENOMEM (or EIO) on
 * failure. Free with sha256_ctx_delete. */
struct sha256_ctx *sha256_ctx_create(void);
/* Adds LEN bytes at DATA to the running hash. Returns 0 or -EIO. */
int sha256_ctx_update(struct sha256_ctx *ctx, const void *data, size_t len);
/* Writes the digest of everything added so far into OUT_HEX and resets CTX
 * to the empty state, so it can be reused. Returns 0 or -EIO. */
int sha256_ctx_final(struct sha256_ctx *ctx, char out_hex[SHA256_HEX_SIZE]);
/* Frees CTX; NULL is accepted. */
void sha256_ctx_delete(struct sha256_ctx *ctx);

#endif
