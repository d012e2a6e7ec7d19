/* sha256.c: SHA-256 through OpenSSL's EVP interface (see sha256.h). */
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "stringtools.h"
#include "banned.h"

#define SHA256_CHUNK (64 * 1024)

/* The digest fetched once for the process: EVP_sha256() makes every EVP_DigestInit_ex look
 * it up among the providers again (OpenSSL 3), which costs more than hashing a small file. */
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_fetched;

static void md_fetch(void)
{
	md_fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256_md(void)
{
	pthread_once(&md_once, md_fetch);
	return md_fetched ? md_fetched : EVP_sha256();
}

struct sha256_ctx {
	EVP_MD_CTX *md;
};

struct sha256_ctx *sha256_ctx_create(void)
{
	struct sha256_ctx *ctx = malloc(sizeof *ctx);
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->md = EVP_MD_CTX_new();
	if (!ctx->md) {
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	if (EVP_DigestInit_ex(ctx->md, sha256_md(), NULL) != 1) {
		EVP_MD_CTX_free(ctx->md);
		free(ctx);
		errno = EIO;
		return NULL;
	}
	return ctx;
}

int sha256_ctx_update(struct sha256_ctx *ctx, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	return EVP_DigestUpdate(ctx->md, data, len) == 1 ? 0 : -EIO;
}

int sha256_ctx_final(struct sha256_ctx *ctx, char out_hex[SHA256_HEX_SIZE])
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	out_hex[0] = 0;
	if (EVP_DigestFinal_ex(ctx->md, digest, &n) != 1 || n != 32)
		return -EIO;
	str_hex_encode(digest, n, out_hex);
	if (EVP_DigestInit_ex(ctx->md, sha256_md(), NULL) != 1)
		return -EIO;
	return 0;
}

void sha256_ctx_delete(struct sha256_ctx *ctx)
{
	if (!ctx)
		return;
	EVP_MD_CTX_free(ctx->md);
	free(ctx);
}

int sha256_buffer(const void *data, size_t len, char out_hex[SHA256_HEX_SIZE])
{
	out_hex[0] = 0;
	struct sha256_ctx *ctx = sha256_ctx_create();
	if (!ctx)
		return -errno;
	int r = sha256_ctx_update(ctx, data, len);
	if (r == 0)
		r = sha256_ctx_final(ctx, out_hex);
	sha256_ctx_delete(ctx);
	return r;
}

int sha256_fd(int fd, char out_hex[SHA256_HEX_SIZE])
{
	int r = 0;
	out_hex[0] = 0;
	unsigned char *chunk = malloc(SHA256_CHUNK);
	if (!chunk)
		return -ENOMEM;
	struct sha256_ctx *ctx = sha256_ctx_create();
	if (!ctx) {
		r = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, SHA256_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		r = sha256_ctx_update(ctx, chunk, (size_t)n);
		if (r < 0)
			goto out;
	}
	r = sha256_ctx_final(ctx, out_hex);
out:
	sha256_ctx_delete(ctx);
	free(chunk);
	return r;
}

int sha256_file(const char *path, char out_hex[SHA256_HEX_SIZE])
{
	out_hex[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = sha256_fd(fd, out_hex);
	close(fd);
	return r;
}
