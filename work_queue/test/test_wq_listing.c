/* test_wq_listing.c: unit tests for wq_listing: the listing text and D- hash of a small tree
 * checked against a listing written by hand and hashed with sha256_buffer, the same listing
 * built from wire entries, refusals (links, FIFOs, control characters, duplicates, orphans) and
 * the entry, depth and path limits. */
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

#include "wq_listing.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static void put(const char *dir, const char *name, const char *content, mode_t mode)
{
	char *p = path_join(dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
	free(p);
}

static void mk(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
}

static char *hash_of(const char *s)
{
	char *h = xmalloc(SHA256_HEX_SIZE);
	assert_int_equal(sha256_buffer(s, strlen(s), h), 0);
	return h;
}

/* The tree of the format test, and its listing written by hand. */
static char *make_tree(char **expected_text)
{
	char *d = ts_tmpdir_create("test_wq_listing");
	put(d, "a.txt", "hello\n", 0644);
	mk(d, "a");
	mk(d, "a-b");
	put(d, "a/x", "", 0600);
	mk(d, "bin");
	put(d, "bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
	mk(d, "empty");
	char *h1 = hash_of("hello\n"), *h2 = hash_of(""), *h3 = hash_of("#!/bin/sh\necho hi\n");
	/* byte order: "a" < "a-b" < "a.txt" < "a/x" < "bin" < "bin/run.sh" < "empty" */
	*expected_text = xasprintf("d a\n"
	                           "d a-b\n"
	                           "f - 6 %s a.txt\n"
	                           "f - 0 %s a/x\n"
	                           "d bin\n"
	                           "f x 18 %s bin/run.sh\n"
	                           "d empty\n",
	                           h1, h2, h3);
	free(h1);
	free(h2);
	free(h3);
	return d;
}

static void test_format_and_hash(void **state)
{
	(void)state;
	char *expected;
	char *d = make_tree(&expected);
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, "out", 0, &l, &why), 0);
	assert_null(why);
	size_t len;
	char *text = wq_listing_text(l, &len);
	assert_string_equal(text, expected);
	assert_int_equal(len, strlen(expected));
	char want[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(expected, strlen(expected), want), 0);
	assert_int_equal(wq_listing_hash(l, got), 0);
	assert_string_equal(got, want);
	assert_int_equal(wq_listing_count(l), 7);
	assert_int_equal(wq_listing_bytes(l), 24);
	/* parents come before children */
	for (size_t i = 1; i < wq_listing_count(l); i++)
		assert_true(strcmp(wq_listing_get(l, i - 1)->path, wq_listing_get(l, i)->path) < 0);

	/* The same listing from wire entries, in transfer order, gives the same hash. */
	struct wq_listing *w = wq_listing_create();
	char *h1 = hash_of("hello\n"), *h2 = hash_of(""), *h3 = hash_of("#!/bin/sh\necho hi\n");
	assert_int_equal(wq_listing_add_dir(w, "empty"), 0);
	assert_int_equal(wq_listing_add_dir(w, "bin"), 0);
	assert_int_equal(wq_listing_add_file(w, "bin/run.sh", true, 18, h3), 0);
	assert_int_equal(wq_listing_add_dir(w, "a"), 0);
	assert_int_equal(wq_listing_add_file(w, "a/x", false, 0, h2), 0);
	assert_int_equal(wq_listing_add_dir(w, "a-b"), 0);
	assert_int_equal(wq_listing_add_file(w, "a.txt", false, 6, h1), 0);
	assert_int_equal(wq_listing_hash(w, got), 0);
	assert_string_equal(got, want);
	/* a changed exec bit changes the hash */
	struct wq_listing *w2 = wq_listing_create();
	assert_int_equal(wq_listing_add_file(w2, "a.txt", true, 6, h1), 0);
	char g2[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(w2, g2), 0);
	char *t2 = wq_listing_text(w2, NULL);
	char *e2 = xasprintf("f x 6 %s a.txt\n", h1);
	assert_string_equal(t2, e2);
	assert_string_not_equal(g2, got);
	free(t2);
	free(e2);
	wq_listing_delete(w2);
	free(h1);
	free(h2);
	free(h3);
	wq_listing_delete(w);

	free(text);
	free(expected);
	wq_listing_delete(l);
	close(fd);
	ts_tmpdir_remove(d);
}

static void test_empty(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), 0);
	char got[SHA256_HEX_SIZE], want[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(l, got), 0);
	assert_int_equal(sha256_buffer("", 0, want), 0);
	assert_string_equal(got, want);
	assert_string_equal(got,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	wq_listing_delete(l);
	close(fd);
	ts_tmpdir_remove(d);
}

static void expect_walk_error(const char *dir, int flags, int code, const char *why_want)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	struct wq_listing *l = (struct wq_listing *)1;
	char *why = NULL;
	int r = wq_listing_walk(fd, "out", flags, &l, &why);
	if (r != code)
		fail_msg("walk returned %d (%s), want %d", r, why ? why : "", code);
	assert_null(l);
	assert_non_null(why);
	if (why_want)
		assert_string_equal(why, why_want);
	free(why);
	close(fd);
}

static void test_refusals(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	mk(d, "sub");
	char *p = path_join(d, "sub/l");
	assert_int_equal(symlink("/etc/passwd", p), 0);
	expect_walk_error(d, 0, -ELOOP, "is a symbolic link: out/sub/l");
	expect_walk_error(d, WQ_LISTING_NO_HASH, -ELOOP, "is a symbolic link: out/sub/l");
	unlink(p);
	/* a link to a directory */
	assert_int_equal(symlink("/etc", p), 0);
	expect_walk_error(d, 0, -ELOOP, "is a symbolic link: out/sub/l");
	unlink(p);
	/* a FIFO is not read (would block) */
	assert_int_equal(mkfifo(p, 0644), 0);
	expect_walk_error(d, 0, -EINVAL, "is not a regular file: out/sub/l");
	expect_walk_error(d, WQ_LISTING_NO_HASH, -EINVAL, "is not a regular file: out/sub/l");
	unlink(p);
	free(p);
	/* a newline in a name would forge a listing line */
	put(d, "sub/a\nf - 0 x b", "", 0644);
	expect_walk_error(d, 0, HTC_EPARSE, NULL);
	ts_tmpdir_remove(d);
}

static void test_follow_and_cycle(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	char *o = ts_tmpdir_create("test_wq_listing");
	put(o, "f", "x", 0644);
	char *p = path_join(d, "link");
	assert_int_equal(symlink(o, p), 0);
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, WQ_LISTING_FOLLOW_LINKS, &l, &why), 0);
	assert_int_equal(wq_listing_count(l), 2);
	assert_string_equal(wq_listing_get(l, 1)->path, "link/f");
	wq_listing_delete(l);
	/* a cycle */
	char *q = path_join(o, "back");
	assert_int_equal(symlink(d, q), 0);
	assert_int_equal(wq_listing_walk(fd, NULL, WQ_LISTING_FOLLOW_LINKS, &l, &why), HTC_ECYCLE);
	assert_non_null(strstr(why, "directory cycle"));
	free(why);
	close(fd);
	free(p);
	free(q);
	ts_tmpdir_remove(d);
	ts_tmpdir_remove(o);
}

static void test_wire_errors(void **state)
{
	(void)state;
	struct wq_listing *l = wq_listing_create();
	char *h = hash_of("");
	assert_int_equal(wq_listing_add_file(l, "x/y", false, 0, h), HTC_EUNDEF);
	assert_int_equal(wq_listing_add_dir(l, "x"), 0);
	assert_int_equal(wq_listing_add_dir(l, "x"), HTC_EDUP);
	assert_int_equal(wq_listing_add_file(l, "x", false, 0, h), HTC_EDUP);
	assert_int_equal(wq_listing_add_file(l, "x/y", false, 0, h), 0);
	assert_int_equal(wq_listing_add_file(l, "x/y/z", false, 0, h), HTC_EUNDEF);
	const char *bad[] = {"",    "/etc/passwd", "../x", "x/../y", "x//y",
	                     "./x", "x/",          "a\nb", "a\x7f"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (wq_listing_add_dir(l, bad[i]) != HTC_EPARSE)
			fail_msg("bad path %zu accepted", i);
	assert_int_equal(wq_listing_add_file(l, "q", false, 0, "abc"), HTC_EPARSE);
	assert_int_equal(
	    wq_listing_add_file(l, "q", false, 0,
	                        "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"),
	    HTC_EPARSE);
	assert_int_equal(wq_listing_count(l), 2);
	/* 65 components */
	char deep[200] = "";
	size_t n = 0;
	for (int i = 0; i < 65; i++) {
		deep[n++] = 'd';
		deep[n++] = '/';
	}
	deep[n - 1] = 0;
	assert_int_equal(wq_listing_add_dir(l, deep), HTC_EPARSE);
	free(h);
	wq_listing_delete(l);
}

static void test_entry_limit_wire(void **state)
{
	(void)state;
	struct wq_listing *l = wq_listing_create();
	char *h = hash_of("");
	char name[32];
	for (int i = 0; i < WQ_LISTING_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(wq_listing_add_file(l, name, false, 0, h), 0);
	}
	assert_int_equal(wq_listing_add_file(l, "one-more", false, 0, h), HTC_ELIMIT);
	assert_int_equal(wq_listing_count(l), WQ_LISTING_MAX_ENTRIES);
	free(h);
	wq_listing_delete(l);
}

static void test_entry_limit_walk(void **state)
{
	(void)state;
	/* 100,001 files: on tmpfs when there is one, it is several times faster */
	struct stat st;
	char *d = ts_tmpdir_create_in(stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm"
	                                                                                : "/tmp",
	                              "test_wq_listing");
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	char name[32];
	for (int i = 0; i < WQ_LISTING_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		int f = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(f >= 0);
		close(f);
	}
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, WQ_LISTING_NO_HASH, &l, &why), 0);
	assert_int_equal(wq_listing_count(l), WQ_LISTING_MAX_ENTRIES);
	assert_null(wq_listing_text(l, NULL));
	wq_listing_delete(l);
	int f = openat(fd, "last", O_WRONLY | O_CREAT | O_EXCL, 0644);
	close(f);
	assert_int_equal(wq_listing_walk(fd, "o", WQ_LISTING_NO_HASH, &l, &why), HTC_ELIMIT);
	assert_non_null(strstr(why, "more than 100000 entries"));
	free(why);
	close(fd);
	ts_tmpdir_remove(d);
}

static void test_depth_limit(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	int cur = dup(fd);
	for (int i = 0; i < WQ_LISTING_MAX_DEPTH; i++) {
		assert_int_equal(mkdirat(cur, "d", 0755), 0);
		int next = openat(cur, "d", O_RDONLY | O_DIRECTORY);
		close(cur);
		cur = next;
	}
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), 0);
	assert_int_equal(wq_listing_count(l), WQ_LISTING_MAX_DEPTH);
	wq_listing_delete(l);
	/* a file at depth 65 */
	int f = openat(cur, "f", O_WRONLY | O_CREAT, 0644);
	close(f);
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), HTC_ELIMIT);
	assert_non_null(strstr(why, "deeper than 64 levels"));
	free(why);
	close(cur);
	close(fd);
	ts_tmpdir_remove(d);
}

static void test_path_limit(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	char comp[251];
	memset(comp, 'c', 250);
	comp[250] = 0;
	int cur = dup(fd);
	for (int i = 0; i < 5; i++) { /* 5 x 251 > 1024 */
		assert_int_equal(mkdirat(cur, comp, 0755), 0);
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY);
		close(cur);
		cur = next;
	}
	close(cur);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), HTC_ELIMIT);
	assert_non_null(strstr(why, "path longer than 1024 bytes"));
	free(why);
	close(fd);
	ts_tmpdir_remove(d);
}

static void test_hash_fd(void **state)
{
	(void)state;
	char *d = ts_tmpdir_create("test_wq_listing");
	/* 200 KiB: more than one chunk */
	size_t n = 200 * 1024;
	char *buf = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(i * 7);
	char *p = path_join(d, "big");
	int fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	char want[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(buf, n, want), 0);
	uint64_t size = 0;
	assert_int_equal(wq_listing_hash_fd(fd, got, &size), 0); /* offset at end: pread ignores */
	assert_string_equal(got, want);
	assert_int_equal(size, n);
	close(fd);
	free(p);
	free(buf);
	ts_tmpdir_remove(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_and_hash),  cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_refusals),         cmocka_unit_test(test_follow_and_cycle),
	    cmocka_unit_test(test_wire_errors),      cmocka_unit_test(test_entry_limit_wire),
	    cmocka_unit_test(test_entry_limit_walk), cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_path_limit),       cmocka_unit_test(test_hash_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
