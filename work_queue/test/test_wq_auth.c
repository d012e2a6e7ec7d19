/* test_wq_auth.c: unit tests for the password authentication (wq_auth.h):
 * the section 8 test vectors (hello hashes, T length, both proofs) byte for
 * byte, refusal of wrong, swapped, replayed or malformed proofs, channel
 * binding, nonces, and the password file edge cases. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "htc_error.h"
#include "sha256.h"
#include "wq_auth.h"
#include "banned.h"

/* The two hello payloads of section 8, frames 1 and 2, exactly. */
static const char hello_w[] =
    "{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"htc 0.1.0\","
    "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"node12\","
    "\"caps\":[\"zlib\",\"fetch\",\"watch\"],\"auth\":[\"hmac-sha256\"],"
    "\"nonce\":\"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\"}";
static const char hello_m[] =
    "{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"master\",\"software\":\"htc 0.1.0\","
    "\"master_id\":\"c0ffee00112233445566778899aabbcc\",\"project\":\"demo\","
    "\"caps\":[\"zlib\",\"fetch\",\"watch\"],\"auth\":\"hmac-sha256\","
    "\"nonce\":\"4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60\","
    "\"keepalive\":{\"interval\":30,\"timeout\":120}}";
static const char nw_hex[] = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";
static const char nm_hex[] = "4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60";
static const char worker_proof[] =
    "e391690e984b19545ef56ea09cf23c47a538575cae0be30e2a15cc1b6e379999";
static const char master_proof[] =
    "716c7bd641f749c286d205a952ef191b08b025de69d2e85d789d9fd7c6762688";
static const char password[] = "correct horse battery staple";

static struct wq_auth_key *section8_key(void)
{
	struct wq_auth_key *k = wq_auth_key_create(password, strlen(password));
	assert_non_null(k);
	return k;
}

static void section8_transcript(struct wq_auth_transcript *t, const unsigned char *b)
{
	assert_int_equal(wq_auth_transcript_init(t, nm_hex, nw_hex, hello_w, strlen(hello_w),
	                                         hello_m, strlen(hello_m), b),
	                 0);
}

static void test_payload_hashes(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(strlen(hello_w), 259);
	assert_int_equal(strlen(hello_m), 300);
	sha256_buffer(hello_w, strlen(hello_w), hex);
	assert_string_equal(hex,
	                    "55a98bc51dff87d212e326b22300925e194f4867c89f26c42c2abaed2b26c473");
	sha256_buffer(hello_m, strlen(hello_m), hex);
	assert_string_equal(hex,
	                    "485d80ac82d4fb0173906861fa1b2078f53936b82120d037a49def725ff530fa");
	sha256_buffer("", 0, hex);
	assert_string_equal(hex,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_transcript_layout(void **state)
{
	(void)state;
	struct wq_auth_transcript t;
	section8_transcript(&t, NULL);
	unsigned char buf[WQ_AUTH_T_MAX];
	int n = wq_auth_transcript_bytes(&t, WQ_AUTH_LABEL_WORKER, buf, sizeof buf);
	assert_int_equal(n, 150);
	assert_memory_equal(buf, "htc-wq/1 worker proof", 21);
	assert_int_equal(buf[21], 0);
	for (int i = 0; i < 32; i++) {
		assert_int_equal(buf[22 + i], 0x41 + i); /* Nm first */
		assert_int_equal(buf[54 + i], 0x01 + i); /* then Nw */
	}
	assert_int_equal(buf[86], 0x55);  /* SHA-256 of the worker hello */
	assert_int_equal(buf[149], 0xfa); /* last byte of SHA-256 of the master hello */
	/* with a channel binding: 32 more bytes at the end */
	unsigned char b[32];
	memset(b, 0xab, sizeof b);
	section8_transcript(&t, b);
	n = wq_auth_transcript_bytes(&t, WQ_AUTH_LABEL_MASTER, buf, sizeof buf);
	assert_int_equal(n, 182);
	assert_int_equal(buf[150], 0xab);
	assert_int_equal(buf[181], 0xab);
	assert_int_equal(wq_auth_transcript_bytes(&t, WQ_AUTH_LABEL_MASTER, buf, 181), -ENOSPC);
}

static void test_section8_proofs(void **state)
{
	(void)state;
	struct wq_auth_key *k = section8_key();
	struct wq_auth_transcript t;
	section8_transcript(&t, NULL);
	char proof[WQ_AUTH_PROOF_HEX];
	assert_int_equal(wq_auth_proof(k, &t, WQ_AUTH_LABEL_WORKER, proof), 0);
	assert_string_equal(proof, worker_proof);
	assert_int_equal(wq_auth_proof(k, &t, WQ_AUTH_LABEL_MASTER, proof), 0);
	assert_string_equal(proof, master_proof);
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_WORKER, worker_proof), 0);
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_MASTER, master_proof), 0);
	/* upper-case nonces decode to the same bytes */
	struct wq_auth_transcript t2;
	char up[65];
	for (int i = 0; i < 65; i++)
		up[i] = (nm_hex[i] >= 'a' && nm_hex[i] <= 'f') ? (char)(nm_hex[i] - 32) : nm_hex[i];
	assert_int_equal(wq_auth_transcript_init(&t2, up, nw_hex, hello_w, strlen(hello_w), hello_m,
	                                         strlen(hello_m), NULL),
	                 0);
	assert_int_equal(wq_auth_verify(k, &t2, WQ_AUTH_LABEL_WORKER, worker_proof), 0);
	wq_auth_key_delete(k);
}

static void test_refusals(void **state)
{
	(void)state;
	struct wq_auth_key *k = section8_key();
	struct wq_auth_transcript t;
	section8_transcript(&t, NULL);
	/* a proof is not reflected: the worker's proof is not the master's */
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_MASTER, worker_proof), HTC_EAUTH);
	/* one bit off */
	char bad[65];
	memcpy(bad, worker_proof, 65);
	bad[63] = '8';
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_WORKER, bad), HTC_EAUTH);
	/* malformed */
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_WORKER, "zz"), HTC_EAUTH);
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_WORKER, ""), HTC_EAUTH);
	memcpy(bad, worker_proof, 65);
	bad[0] = 'g';
	assert_int_equal(wq_auth_verify(k, &t, WQ_AUTH_LABEL_WORKER, bad), HTC_EAUTH);
	/* another password */
	struct wq_auth_key *k2 = wq_auth_key_create("correct horse battery stapl", 27);
	assert_int_equal(wq_auth_verify(k2, &t, WQ_AUTH_LABEL_WORKER, worker_proof), HTC_EAUTH);
	wq_auth_key_delete(k2);
	/* replay against a fresh master nonce */
	struct wq_auth_transcript t2;
	char fresh[WQ_AUTH_NONCE_HEX];
	assert_int_equal(wq_auth_nonce(NULL, fresh), 0);
	assert_int_equal(wq_auth_transcript_init(&t2, fresh, nw_hex, hello_w, strlen(hello_w),
	                                         hello_m, strlen(hello_m), NULL),
	                 0);
	assert_int_equal(wq_auth_verify(k, &t2, WQ_AUTH_LABEL_WORKER, worker_proof), HTC_EAUTH);
	/* a tampered hello (caps removed) breaks the proof */
	char tampered[sizeof hello_m];
	memcpy(tampered, hello_m, sizeof hello_m);
	char *z = strstr(tampered, "zlib");
	z[0] = 'Z';
	assert_int_equal(wq_auth_transcript_init(&t2, nm_hex, nw_hex, hello_w, strlen(hello_w),
	                                         tampered, strlen(tampered), NULL),
	                 0);
	assert_int_equal(wq_auth_verify(k, &t2, WQ_AUTH_LABEL_WORKER, worker_proof), HTC_EAUTH);
	/* channel binding changes both proofs */
	unsigned char b[32] = {1};
	section8_transcript(&t2, b);
	assert_int_equal(wq_auth_verify(k, &t2, WQ_AUTH_LABEL_WORKER, worker_proof), HTC_EAUTH);
	char p[WQ_AUTH_PROOF_HEX];
	assert_int_equal(wq_auth_proof(k, &t2, WQ_AUTH_LABEL_WORKER, p), 0);
	assert_int_equal(wq_auth_verify(k, &t2, WQ_AUTH_LABEL_WORKER, p), 0);
	/* bad nonces */
	assert_int_equal(wq_auth_transcript_init(&t2, "41", nw_hex, "", 0, "", 0, NULL),
	                 HTC_EPARSE);
	assert_int_equal(wq_auth_transcript_init(&t2, nm_hex, NULL, "", 0, "", 0, NULL),
	                 HTC_EPARSE);
	wq_auth_key_delete(k);
	wq_auth_key_delete(NULL);
}

static void test_nonce(void **state)
{
	(void)state;
	unsigned char a[32], b[32];
	char ha[WQ_AUTH_NONCE_HEX], hb[WQ_AUTH_NONCE_HEX];
	assert_int_equal(wq_auth_nonce(a, ha), 0);
	assert_int_equal(wq_auth_nonce(b, hb), 0);
	assert_int_equal(strlen(ha), 64);
	assert_string_not_equal(ha, hb);
	assert_memory_not_equal(a, b, 32);
	for (int i = 0; i < 64; i++)
		assert_non_null(strchr("0123456789abcdef", ha[i]));
	char two[3];
	snprintf(two, sizeof two, "%02x", a[0]);
	assert_memory_equal(ha, two, 2);
}

/* Writes LEN bytes to a new temporary file with MODE; caller frees the path. */
static char *pwfile(const void *data, size_t len, mode_t mode)
{
	char *path = strdup("/tmp/test_wq_auth.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
	return path;
}

static struct wq_auth_key *load(const void *data, size_t len, char **why)
{
	char *path = pwfile(data, len, 0600);
	struct wq_auth_key *k = wq_auth_key_load(path, why);
	if (*why)
		assert_non_null(strstr(*why, path)); /* the text names the file */
	unlink(path);
	free(path);
	return k;
}

/* Key loaded from a file proves the same as the key given directly. */
static void assert_key_is(struct wq_auth_key *k, const char *bytes, size_t len)
{
	struct wq_auth_key *ref = wq_auth_key_create(bytes, len);
	assert_non_null(ref);
	struct wq_auth_transcript t;
	section8_transcript(&t, NULL);
	char a[WQ_AUTH_PROOF_HEX], b[WQ_AUTH_PROOF_HEX];
	assert_int_equal(wq_auth_proof(k, &t, WQ_AUTH_LABEL_WORKER, a), 0);
	assert_int_equal(wq_auth_proof(ref, &t, WQ_AUTH_LABEL_WORKER, b), 0);
	assert_string_equal(a, b);
	wq_auth_key_delete(ref);
}

static void test_password_file(void **state)
{
	(void)state;
	char *why = NULL;
	/* section 8: the trailing newline is not part of K */
	struct wq_auth_key *k = load("correct horse battery staple\n", 29, &why);
	assert_non_null(k);
	assert_null(why);
	struct wq_auth_transcript t;
	section8_transcript(&t, NULL);
	char proof[WQ_AUTH_PROOF_HEX];
	wq_auth_proof(k, &t, WQ_AUTH_LABEL_WORKER, proof);
	assert_string_equal(proof, worker_proof);
	wq_auth_key_delete(k);
	/* CRLF, and several */
	k = load("correct horse battery staple\r\n\r\n", 32, &why);
	assert_non_null(k);
	wq_auth_proof(k, &t, WQ_AUTH_LABEL_WORKER, proof);
	assert_string_equal(proof, worker_proof);
	wq_auth_key_delete(k);
	/* inner CR/LF stay */
	k = load("a\r\nb\n", 5, &why);
	assert_non_null(k);
	assert_key_is(k, "a\r\nb", 4);
	wq_auth_key_delete(k);
	/* empty, only a newline, only CRLFs */
	k = load("", 0, &why);
	assert_null(k);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(why, ": empty (after removing trailing CR and LF)"));
	free(why);
	why = NULL;
	assert_null(load("\n", 1, &why));
	assert_non_null(strstr(why, ": empty"));
	free(why);
	why = NULL;
	assert_null(load("\r\n\r\n", 4, &why));
	free(why);
	why = NULL;
	/* 4,096 bytes fine (also with a newline after), 4,097 refused */
	char *big = malloc(4100);
	memset(big, 'k', 4100);
	big[4096] = '\n';
	k = load(big, 4097, &why);
	assert_non_null(k);
	assert_null(why);
	assert_key_is(k, big, 4096);
	wq_auth_key_delete(k);
	k = load(big, 4096, &why);
	assert_non_null(k);
	wq_auth_key_delete(k);
	big[4096] = 'k';
	k = load(big, 4097, &why);
	assert_null(k);
	assert_non_null(strstr(why, ": longer than 4096 bytes"));
	free(why);
	why = NULL;
	free(big);
	/* missing file */
	assert_null(wq_auth_key_load("/nonexistent/pw", &why));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(why, "password file /nonexistent/pw: No such file or directory");
	free(why);
	why = NULL;
	/* a directory */
	assert_null(wq_auth_key_load("/tmp", &why));
	assert_non_null(strstr(why, "not a regular file"));
	free(why);
	why = NULL;
	/* group-readable: loaded, with a warning on stderr */
	char *path = pwfile("pw\n", 3, 0640);
	char *errpath = pwfile("", 0, 0600);
	fflush(stderr);
	int saved = dup(2);
	int efd = open(errpath, O_WRONLY | O_TRUNC);
	dup2(efd, 2);
	k = wq_auth_key_load(path, &why);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(efd);
	char logged[512] = "";
	FILE *f = fopen(errpath, "r");
	size_t got = fread(logged, 1, sizeof logged - 1, f);
	logged[got] = 0;
	fclose(f);
	unlink(errpath);
	free(errpath);
	assert_non_null(strstr(logged, "is readable by group or others"));
	assert_non_null(strstr(logged, path));
	assert_non_null(k);
	assert_key_is(k, "pw", 2);
	wq_auth_key_delete(k);
	unlink(path);
	free(path);
	/* direct creation limits */
	assert_null(wq_auth_key_create("", 0));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_payload_hashes),  cmocka_unit_test(test_transcript_layout),
	    cmocka_unit_test(test_section8_proofs), cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_nonce),           cmocka_unit_test(test_password_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
