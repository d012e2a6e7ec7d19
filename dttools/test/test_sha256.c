/* test_sha256.c: unit tests for SHA-256 hashing (sha256.h) against known
 * vectors, for buffers, files, descriptors and the incremental API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sha256.h"
#include "xalloc.h"
#include "banned.h"

#define EMPTY_HASH  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ABC_HASH    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define ABC448_HASH "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
/* computed with: head -c 1048576 /dev/zero | sha256sum */
#define ZEROS_1M_HASH "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58"

static void test_buffer_vectors(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer("", 0, hex), 0);
	assert_string_equal(hex, EMPTY_HASH);
	assert_int_equal(sha256_buffer("abc", 3, hex), 0);
	assert_string_equal(hex, ABC_HASH);
	const char *s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_int_equal(sha256_buffer(s, strlen(s), hex), 0);
	assert_string_equal(hex, ABC448_HASH);
}

static void test_incremental(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	struct sha256_ctx *ctx = sha256_ctx_create();
	assert_non_null(ctx);
	assert_int_equal(sha256_ctx_final(ctx, hex), 0);
	assert_string_equal(hex, EMPTY_HASH);
	/* reusable after final */
	assert_int_equal(sha256_ctx_update(ctx, "a", 1), 0);
	assert_int_equal(sha256_ctx_update(ctx, "", 0), 0);
	assert_int_equal(sha256_ctx_update(ctx, "bc", 2), 0);
	assert_int_equal(sha256_ctx_final(ctx, hex), 0);
	assert_string_equal(hex, ABC_HASH);
	/* 1 MB of zeros fed in odd-sized pieces */
	char zeros[1000];
	memset(zeros, 0, sizeof zeros);
	size_t left = 1048576;
	while (left) {
		size_t n = left < sizeof zeros ? left : sizeof zeros;
		assert_int_equal(sha256_ctx_update(ctx, zeros, n), 0);
		left -= n;
	}
	assert_int_equal(sha256_ctx_final(ctx, hex), 0);
	assert_string_equal(hex, ZEROS_1M_HASH);
	sha256_ctx_delete(ctx);
	sha256_ctx_delete(NULL);
}

static char *write_temp(const void *data, size_t len)
{
	char tmpl[] = "/tmp/test_sha256.XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
	close(fd);
	return xstrdup(tmpl);
}

static void test_file(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	char *zeros = xcalloc(1048576, 1);
	char *path = write_temp(zeros, 1048576);
	assert_int_equal(sha256_file(path, hex), 0);
	assert_string_equal(hex, ZEROS_1M_HASH);
	assert_int_equal(sha256_buffer(zeros, 1048576, hex), 0);
	assert_string_equal(hex, ZEROS_1M_HASH);
	unlink(path);
	free(path);
	free(zeros);

	path = write_temp("", 0);
	assert_int_equal(sha256_file(path, hex), 0);
	assert_string_equal(hex, EMPTY_HASH);
	unlink(path);
	free(path);

	assert_int_equal(sha256_file("/nonexistent/file", hex), -ENOENT);
	assert_string_equal(hex, "");
	assert_int_equal(sha256_file("/tmp", hex), -EISDIR);
}

static void test_fd(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	char *path = write_temp("xxabc", 5);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	/* hashing starts at the current offset */
	assert_int_equal(lseek(fd, 2, SEEK_SET), 2);
	assert_int_equal(sha256_fd(fd, hex), 0);
	assert_string_equal(hex, ABC_HASH);
	/* at end of file now: the rest is empty */
	assert_int_equal(sha256_fd(fd, hex), 0);
	assert_string_equal(hex, EMPTY_HASH);
	close(fd);
	unlink(path);
	free(path);

	int fds[2];
	assert_int_equal(pipe(fds), 0);
	close(fds[1]);
	assert_int_equal(sha256_fd(fds[0], hex), 0);
	assert_string_equal(hex, EMPTY_HASH);
	close(fds[0]);
	assert_int_equal(sha256_fd(fds[0], hex), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buffer_vectors),
	    cmocka_unit_test(test_incremental),
	    cmocka_unit_test(test_file),
	    cmocka_unit_test(test_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
