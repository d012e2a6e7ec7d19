/* test_worker_cache.c: unit tests for worker_cache: commit with hash and name verification, corrupt
 * and short transfers, directory objects and their modes, drop (also while a sandbox holds a
 * link or a reference), cache_have batches, the rescan of a damaged cache, the master_id rule,
 * ENOSPC on a 1 MB tmpfs, and the free-space arithmetic. */
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker_cache.h"
#include "htc_error.h"
#include "full_io.h"
#include "path.h"
#include "sha256.h"
#include "wq_listing.h"
#include "worker_sandbox.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

struct fixture {
	char *dir;
	struct worker_cache *c;
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->dir = ts_tmpdir_create("test_worker_cache");
	f->c = worker_cache_create(f->dir);
	assert_non_null(f->c);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	worker_cache_delete(f->c);
	ts_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static char *fname(const char *content, char prefix)
{
	char h[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(content, strlen(content), h), 0);
	return xasprintf("%c-%s", prefix, h);
}

static int count_entries(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(fd, NULL, WQ_LISTING_NO_HASH, &l, &why), 0);
	int n = (int)wq_listing_count(l);
	wq_listing_delete(l);
	close(fd);
	return n;
}

/* Receives CONTENT as object NAME, announcing SHA (NULL: the right one). */
static int receive(struct worker_cache *c, const char *name, const char *content, const char *sha,
                   enum worker_cache_keep keep, uint64_t xfer)
{
	struct worker_cache_partial *p;
	size_t len = strlen(content);
	int r = worker_cache_begin(c, name, keep, xfer, len, &p);
	if (r < 0)
		return r;
	assert_int_equal(worker_cache_reserved(c), len);
	/* in two pieces */
	r = worker_cache_partial_write(p, content, len / 2);
	if (r == 0)
		r = worker_cache_partial_write(p, content + len / 2, len - len / 2);
	char h[SHA256_HEX_SIZE];
	sha256_buffer(content, len, h);
	if (r == 0)
		r = worker_cache_partial_finish(p, sha ? sha : h);
	worker_cache_end(c, p, r == 0);
	assert_int_equal(worker_cache_reserved(c), 0);
	return r;
}

static void test_commit(void **state)
{
	struct fixture *f = *state;
	char *n = fname("hello world\n", 'F');
	assert_int_equal(receive(f->c, n, "hello world\n", NULL, WORKER_CACHE_KEEP_RUN, 1), 0);
	uint64_t size = 0;
	assert_true(worker_cache_has(f->c, n, &size));
	assert_int_equal(size, 12);
	assert_int_equal(worker_cache_bytes(f->c), 12);
	assert_int_equal(worker_cache_count(f->c), 1);
	struct stat st;
	assert_int_equal(fstatat(worker_cache_fd(f->c), n, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0555);
	char *pp = path_join(worker_cache_path(f->c), ".partial");
	assert_int_equal(count_entries(pp), 0);
	/* present: "have" */
	struct worker_cache_partial *p;
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 2, 12, &p), HTC_EDUP);
	/* bad names */
	assert_int_equal(worker_cache_begin(f->c, "F-../../etc", WORKER_CACHE_KEEP_RUN, 3, 1, &p),
	                 HTC_EPARSE);
	assert_int_equal(worker_cache_begin(f->c, "X-0", WORKER_CACHE_KEEP_RUN, 3, 1, &p),
	                 HTC_EPARSE);
	assert_false(worker_cache_name_valid(
	    "F-E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
	assert_true(worker_cache_name_valid(
	    "U-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	/* being received: "have" for a second begin */
	char *n2 = fname("second", 'F');
	assert_int_equal(worker_cache_begin(f->c, n2, WORKER_CACHE_KEEP_RUN, 4, 6, &p), 0);
	struct worker_cache_partial *p2;
	assert_int_equal(worker_cache_begin(f->c, n2, WORKER_CACHE_KEEP_RUN, 5, 6, &p2), HTC_EDUP);
	assert_false(worker_cache_has(f->c, n2, NULL));
	assert_int_equal(count_entries(pp), 1);
	worker_cache_end(f->c, p, false); /* xfer_abort */
	assert_int_equal(count_entries(pp), 0);
	assert_false(worker_cache_has(f->c, n2, NULL));
	free(pp);
	free(n);
	free(n2);
}

static void test_corrupt(void **state)
{
	struct fixture *f = *state;
	char *n = fname("data", 'F');
	char *other = fname("other", 'F');
	/* the announced sha256 differs from the content */
	assert_int_equal(receive(f->c, n, "data", other + 2, WORKER_CACHE_KEEP_RUN, 1),
	                 HTC_ECORRUPT);
	assert_false(worker_cache_has(f->c, n, NULL));
	/* the content matches the announced sha256, but not the F- name */
	assert_int_equal(receive(f->c, other, "data", NULL, WORKER_CACHE_KEEP_RUN, 2),
	                 HTC_ECORRUPT);
	assert_false(worker_cache_has(f->c, other, NULL));
	struct stat st;
	assert_int_equal(fstatat(worker_cache_fd(f->c), other, &st, 0), -1);
	/* a U- object is checked against the announced sha256 only */
	char *u = fname("http://x/", 'U');
	assert_int_equal(receive(f->c, u, "data", NULL, WORKER_CACHE_KEEP_RUN, 3), 0);
	/* short and long */
	struct worker_cache_partial *p;
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 4, 10, &p), 0);
	assert_int_equal(worker_cache_partial_write(p, "data", 4), 0);
	char h[SHA256_HEX_SIZE];
	sha256_buffer("data", 4, h);
	assert_int_equal(worker_cache_partial_finish(p, h), HTC_ECORRUPT);
	worker_cache_end(f->c, p, false);
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 5, 2, &p), 0);
	assert_int_equal(worker_cache_partial_write(p, "data", 4), HTC_ETOOBIG);
	worker_cache_end(f->c, p, false);
	char *pp = path_join(worker_cache_path(f->c), ".partial");
	assert_int_equal(count_entries(pp), 0);
	assert_int_equal(worker_cache_count(f->c), 1);
	free(pp);
	free(n);
	free(u);
	free(other);
}

/* Builds a D- object of two files and a subdirectory; returns its name. */
static char *receive_dir(struct worker_cache *c, uint64_t xfer, int *result, bool lie)
{
	const char *a = "alpha\n", *b = "#!/bin/sh\n";
	char ha[SHA256_HEX_SIZE], hb[SHA256_HEX_SIZE];
	sha256_buffer(a, strlen(a), ha);
	sha256_buffer(b, strlen(b), hb);
	char *text = xasprintf("f - 6 %s a\nd s\nf x 10 %s s/b\nd s/e\n", ha, hb);
	char *n = fname(text, 'D');
	free(text);
	struct worker_cache_partial *p;
	assert_int_equal(worker_cache_begin(c, n, WORKER_CACHE_KEEP_WORKER, xfer, 16, &p), 0);
	int dfd = worker_cache_partial_dirfd(p);
	assert_true(dfd >= 0);
	struct wq_listing *l = wq_listing_create();
	int fd = create_beneath(dfd, "a", false);
	assert_int_equal(full_write(fd, a, 6), 0);
	close(fd);
	assert_int_equal(wq_listing_add_file(l, "a", false, 6, ha), 0);
	close(mkdir_beneath(dfd, "s", 0755));
	assert_int_equal(wq_listing_add_dir(l, "s"), 0);
	fd = create_beneath(dfd, "s/b", true);
	assert_int_equal(full_write(fd, b, 10), 0);
	close(fd);
	assert_int_equal(wq_listing_add_file(l, "s/b", true, 10, hb), 0);
	close(mkdir_beneath(dfd, "s/e", 0755));
	assert_int_equal(wq_listing_add_dir(l, "s/e"), 0);
	if (lie) { /* a file the listing does not have */
		fd = create_beneath(dfd, "s/e/extra", false);
		close(fd);
	}
	*result = worker_cache_partial_finish_dir(p, l, 4, n + 2);
	worker_cache_end(c, p, *result == 0);
	wq_listing_delete(l);
	return n;
}

static void test_dir_object(void **state)
{
	struct fixture *f = *state;
	int r;
	char *bad = receive_dir(f->c, 1, &r, true);
	assert_int_equal(r, HTC_ECORRUPT);
	assert_false(worker_cache_has(f->c, bad, NULL));
	free(bad);
	char *n = receive_dir(f->c, 2, &r, false);
	assert_int_equal(r, 0);
	uint64_t size;
	assert_true(worker_cache_has(f->c, n, &size));
	assert_int_equal(size, 16);
	int cfd = worker_cache_fd(f->c);
	struct stat st;
	char p[200];
	snprintf(p, sizeof(p), "%s/a", n);
	assert_int_equal(fstatat(cfd, p, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	snprintf(p, sizeof(p), "%s/s/b", n);
	assert_int_equal(fstatat(cfd, p, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	snprintf(p, sizeof(p), "%s/s/e", n);
	assert_int_equal(fstatat(cfd, p, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	assert_int_equal(fstatat(cfd, n, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	/* the walk of the stored object gives its name back */
	int dfd = openat(cfd, n, O_RDONLY | O_DIRECTORY);
	struct wq_listing *l;
	char *why;
	assert_int_equal(wq_listing_walk(dfd, NULL, 0, &l, &why), 0);
	char h[SHA256_HEX_SIZE];
	wq_listing_hash(l, h);
	assert_string_equal(h, n + 2);
	wq_listing_delete(l);
	close(dfd);

	/* in use by a task: a drop waits for the last unref */
	assert_int_equal(worker_cache_ref(f->c, n), 0);
	assert_int_equal(worker_cache_drop(f->c, n), 0);
	assert_false(worker_cache_has(f->c, n, NULL));
	assert_int_equal(fstatat(cfd, n, &st, 0), 0);
	/* sent again meanwhile: the same content is still there */
	struct worker_cache_partial *pp;
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 3, 16, &pp), HTC_EDUP);
	assert_true(worker_cache_has(f->c, n, NULL));
	assert_int_equal(worker_cache_drop(f->c, n), 0);
	worker_cache_unref(f->c, n);
	assert_int_equal(fstatat(cfd, n, &st, 0), -1);
	assert_int_equal(worker_cache_empty_trash(cfd, worker_cache_path(f->c)), 0);
	char *trash = path_join(worker_cache_path(f->c), ".trash");
	assert_int_equal(count_entries(trash), 0);
	free(trash);
	assert_int_equal(worker_cache_bytes(f->c), 0);
	free(n);
}

/* A dropped file object stays readable through a sandbox's hard link. */
static void test_drop_linked(void **state)
{
	struct fixture *f = *state;
	char *n = fname("payload\n", 'F');
	assert_int_equal(receive(f->c, n, "payload\n", NULL, WORKER_CACHE_KEEP_RUN, 1), 0);
	int wfd = open(f->dir, O_RDONLY | O_DIRECTORY);
	struct worker_sandbox *sb = worker_sandbox_create(wfd, f->dir, 1, 0, BENEATH_RESOLVE_AUTO);
	assert_non_null(sb);
	assert_int_equal(worker_sandbox_link_file(sb, worker_cache_fd(f->c), n, "in.txt"), 0);
	assert_int_equal(worker_cache_drop(f->c, n), 0);
	assert_int_equal(worker_cache_drop(f->c, n), 0); /* unknown now: ignored */
	assert_false(worker_cache_has(f->c, n, NULL));
	struct stat st;
	assert_int_equal(fstatat(worker_cache_fd(f->c), n, &st, 0), -1);
	int fd = -1;
	char *m = NULL;
	assert_int_equal(worker_sandbox_check_output(sb, "in.txt", false, &fd, &m), 0);
	char buf[32] = "";
	assert_int_equal(read(fd, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "payload\n");
	close(fd);
	worker_sandbox_remove(sb);
	worker_sandbox_delete(sb);
	close(wfd);
	/* a fresh transfer of the same name is a fresh object */
	assert_int_equal(receive(f->c, n, "payload\n", NULL, WORKER_CACHE_KEEP_RUN, 2), 0);
	assert_true(worker_cache_has(f->c, n, NULL));
	free(n);
}

struct batches {
	int calls;
	size_t total;
	size_t sizes[8];
	bool last[8];
};

static int on_batch(const struct worker_cache_item *items, size_t n, bool last, void *arg)
{
	struct batches *b = arg;
	assert_true(n <= WORKER_CACHE_HAVE_BATCH);
	for (size_t i = 0; i < n; i++)
		assert_true(worker_cache_name_valid(items[i].name));
	if (b->calls < 8) {
		b->sizes[b->calls] = n;
		b->last[b->calls] = last;
	}
	b->calls++;
	b->total += n;
	return 0;
}

static void test_batches(void **state)
{
	struct fixture *f = *state;
	struct batches b = {0};
	assert_int_equal(worker_cache_foreach_batch(f->c, on_batch, &b), 0);
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.sizes[0], 0);
	assert_true(b.last[0]);
	/* 2,500 objects written straight to disk, then found by a scan */
	for (int i = 0; i < 2500; i++) {
		char content[16];
		snprintf(content, sizeof(content), "%d", i);
		char *n = fname(content, 'F');
		char *p = path_join(worker_cache_path(f->c), n);
		int fd = open(p, O_WRONLY | O_CREAT, 0555);
		assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
		close(fd);
		free(p);
		free(n);
	}
	assert_int_equal(worker_cache_scan(f->c, true), 0);
	assert_int_equal(worker_cache_count(f->c), 2500);
	memset(&b, 0, sizeof(b));
	assert_int_equal(worker_cache_foreach_batch(f->c, on_batch, &b), 0);
	assert_int_equal(b.calls, 3);
	assert_int_equal(b.sizes[0], 1000);
	assert_int_equal(b.sizes[1], 1000);
	assert_int_equal(b.sizes[2], 500);
	assert_false(b.last[0]);
	assert_false(b.last[1]);
	assert_true(b.last[2]);
	assert_int_equal(b.total, 2500);
}

static void plant(const char *dir, const char *name, const char *content)
{
	char *p = path_join(dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	free(p);
}

static void test_scan(void **state)
{
	struct fixture *f = *state;
	const char *cp = worker_cache_path(f->c);
	char *good = fname("good", 'F');
	assert_int_equal(receive(f->c, good, "good", NULL, WORKER_CACHE_KEEP_WORKER, 1), 0);
	int r;
	char *dir = receive_dir(f->c, 2, &r, false);
	assert_int_equal(r, 0);
	/* damage */
	char *corrupt = fname("what the name says", 'F');
	plant(cp, corrupt, "something else");
	plant(cp, "junk", "x");
	plant(cp, ".partial/77", "half");
	char *ln = fname("link", 'F');
	char *lp = path_join(cp, ln);
	assert_int_equal(symlink("/etc/passwd", lp), 0);
	char *fd_as_dir = fname("dir", 'F');
	char *p = path_join(cp, fd_as_dir);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	char *dl = fname("dir with a link", 'D');
	p = path_join(cp, dl);
	assert_int_equal(mkdir(p, 0755), 0);
	char *q = path_join(p, "l");
	assert_int_equal(symlink("/", q), 0);
	free(q);
	free(p);

	/* without verification, the corrupt object is kept (same size check only) */
	int deleted = worker_cache_scan(f->c, false);
	assert_int_equal(deleted, 4); /* junk, the link, the F- directory, the D- with a link */
	assert_true(worker_cache_has(f->c, corrupt, NULL));
	assert_true(worker_cache_has(f->c, good, NULL));
	assert_true(worker_cache_has(f->c, dir, NULL));
	char *pp = path_join(cp, ".partial");
	assert_int_equal(count_entries(pp), 0);
	free(pp);
	/* with verification it goes */
	assert_int_equal(worker_cache_scan(f->c, true), 1);
	assert_false(worker_cache_has(f->c, corrupt, NULL));
	assert_true(worker_cache_has(f->c, good, NULL));
	assert_true(worker_cache_has(f->c, dir, NULL));
	assert_int_equal(worker_cache_count(f->c), 2);
	assert_int_equal(worker_cache_bytes(f->c), 4 + 16);
	/* a verified D- whose content changed on disk is corrupt */
	char *m = xasprintf("%s/%s/a", cp, dir);
	chmod(m, 0644);
	plant(cp, m + strlen(cp) + 1, "ALPHA\n");
	free(m);
	assert_int_equal(worker_cache_scan(f->c, true), 1);
	assert_false(worker_cache_has(f->c, dir, NULL));
	/* keep classes survive a restart */
	worker_cache_delete(f->c);
	f->c = worker_cache_create(f->dir);
	assert_int_equal(worker_cache_scan(f->c, false), 0);
	struct batches b = {0};
	worker_cache_foreach_batch(f->c, on_batch, &b);
	assert_int_equal(b.total, 1);
	free(good);
	free(dir);
	free(corrupt);
	free(ln);
	free(lp);
	free(fd_as_dir);
	free(dl);
}

/* worker_cache_partial_store + worker_cache_partial_finish_hashed: the caller's hash is checked
 * against the announced one and the F- name, and the two ways of filling a partial do not mix. */
static void test_store_hashed(void **state)
{
	struct fixture *f = *state;
	const char *content = "stored without hashing";
	size_t len = strlen(content);
	char h[SHA256_HEX_SIZE], wrong[SHA256_HEX_SIZE];
	sha256_buffer(content, len, h);
	sha256_buffer("else", 4, wrong);
	char *n = fname(content, 'F');
	struct worker_cache_partial *p;
	/* the caller's hash differs from the announced one */
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 1, len, &p), 0);
	assert_int_equal(worker_cache_partial_store(p, content, len), 0);
	assert_int_equal(worker_cache_partial_finish_hashed(p, h, wrong), HTC_ECORRUPT);
	worker_cache_end(f->c, p, false);
	assert_false(worker_cache_has(f->c, n, NULL));
	/* hash and announcement agree but not with the name */
	char *other = fname("other", 'F');
	assert_int_equal(worker_cache_begin(f->c, other, WORKER_CACHE_KEEP_RUN, 2, len, &p), 0);
	assert_int_equal(worker_cache_partial_store(p, content, len), 0);
	assert_int_equal(worker_cache_partial_finish_hashed(p, h, h), HTC_ECORRUPT);
	worker_cache_end(f->c, p, false);
	assert_false(worker_cache_has(f->c, other, NULL));
	/* short */
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 3, len, &p), 0);
	assert_int_equal(worker_cache_partial_store(p, content, len - 1), 0);
	assert_int_equal(worker_cache_partial_finish_hashed(p, h, h), HTC_ECORRUPT);
	worker_cache_end(f->c, p, false);
	/* mixing the hashing and the plain writes is refused */
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 4, len, &p), 0);
	assert_int_equal(worker_cache_partial_store(p, content, 3), 0);
	assert_int_equal(worker_cache_partial_write(p, content + 3, len - 3), 0);
	assert_int_equal(worker_cache_partial_finish(p, h), -EINVAL);
	worker_cache_end(f->c, p, false);
	assert_false(worker_cache_has(f->c, n, NULL));
	/* the good case, in two pieces */
	assert_int_equal(worker_cache_begin(f->c, n, WORKER_CACHE_KEEP_RUN, 5, len, &p), 0);
	assert_int_equal(worker_cache_partial_store(p, content, 5), 0);
	assert_int_equal(worker_cache_partial_store(p, content + 5, len - 5), 0);
	assert_int_equal(worker_cache_partial_store(p, "x", 1), HTC_ETOOBIG);
	assert_int_equal(worker_cache_partial_finish_hashed(p, h, h), 0);
	worker_cache_end(f->c, p, true);
	uint64_t size = 0;
	assert_true(worker_cache_has(f->c, n, &size));
	assert_int_equal(size, len);
	char *pp = path_join(worker_cache_path(f->c), ".partial");
	assert_int_equal(count_entries(pp), 0);
	free(pp);
	free(n);
	free(other);
}

static void test_master_id(void **state)
{
	struct fixture *f = *state;
	char *run = fname("run", 'F'), *wrk = fname("worker", 'F');
	assert_int_equal(worker_cache_set_master(f->c, "master-A"), 0);
	assert_int_equal(receive(f->c, run, "run", NULL, WORKER_CACHE_KEEP_RUN, 1), 0);
	assert_int_equal(receive(f->c, wrk, "worker", NULL, WORKER_CACHE_KEEP_WORKER, 2), 0);
	/* the same master again (a reconnection): nothing goes */
	assert_int_equal(worker_cache_set_master(f->c, "master-A"), 0);
	assert_true(worker_cache_has(f->c, run, NULL));
	/* after a restart too */
	worker_cache_delete(f->c);
	f->c = worker_cache_create(f->dir);
	assert_int_equal(worker_cache_scan(f->c, true), 0);
	assert_int_equal(worker_cache_set_master(f->c, "master-A"), 0);
	assert_true(worker_cache_has(f->c, run, NULL));
	/* another master: run objects go, worker objects stay */
	assert_int_equal(worker_cache_set_master(f->c, "master-B"), 1);
	assert_false(worker_cache_has(f->c, run, NULL));
	assert_true(worker_cache_has(f->c, wrk, NULL));
	struct stat st;
	assert_int_equal(fstatat(worker_cache_fd(f->c), run, &st, 0), -1);
	char *idp = path_join(worker_cache_path(f->c), ".master_id");
	char buf[64] = "";
	int fd = open(idp, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 8);
	close(fd);
	assert_string_equal(buf, "master-B");
	free(idp);
	free(run);
	free(wrk);
}

static void test_enospc(void **state)
{
	struct fixture *f = *state;
	char *mnt = path_join(f->dir, "small");
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0) {
		const char *ci = getenv("CI");
		if (ci && !strcmp(ci, "true"))
			fail_msg("cannot mount a 1 MB tmpfs at %s: %s (CI=true: not skipped)", mnt,
			         strerror(errno));
		print_message("SKIP test_enospc: cannot mount a 1 MB tmpfs at %s: %s\n", mnt,
		              strerror(errno));
		free(mnt);
		skip();
	}
	char *wd = path_join(mnt, "wd");
	assert_int_equal(mkdir(wd, 0755), 0);
	struct worker_cache *c = worker_cache_create(wd);
	assert_non_null(c);
	struct wq_disk_info info;
	assert_int_equal(wq_disk_info(wd, &info), 0);
	assert_true(info.fs_total <= 1024 * 1024);
	assert_true(info.disk_full); /* a 1 MB file system is all reserve */
	assert_int_equal(info.usable, 0);
	assert_int_equal(info.reserve, WQ_DISK_RESERVE_MIN);

	size_t size = 2 * 1024 * 1024;
	char *n = fname("never", 'F');
	struct worker_cache_partial *p;
	assert_int_equal(worker_cache_begin(c, n, WORKER_CACHE_KEEP_RUN, 1, size, &p), 0);
	char *chunk = xcalloc(1, 65536);
	int r = 0;
	size_t written = 0;
	while (written < size && (r = worker_cache_partial_write(p, chunk, 65536)) == 0)
		written += 65536;
	assert_int_equal(r, -ENOSPC);
	assert_true(written < size);
	char *pp = path_join(worker_cache_path(c), ".partial");
	assert_int_equal(count_entries(pp), 0); /* deleted at once */
	worker_cache_end(c, p, false);
	assert_false(worker_cache_has(c, n, NULL));
	/* room again: a small object fits */
	char *small = fname("small", 'F');
	assert_int_equal(receive(c, small, "small", NULL, WORKER_CACHE_KEEP_RUN, 2), 0);
	worker_cache_delete(c);
	umount2(mnt, MNT_DETACH);
	free(small);
	free(pp);
	free(chunk);
	free(n);
	free(wd);
	free(mnt);
}

static void test_disk_math(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(wq_disk_reserve(0), WQ_DISK_RESERVE_MIN);
	assert_int_equal(wq_disk_reserve(1000ULL << 30), (1000ULL << 30) / 100);
	struct wq_disk_info info;
	assert_int_equal(wq_disk_info(f->dir, &info), 0);
	assert_true(info.fs_total > 0);
	assert_int_equal(info.reserve, wq_disk_reserve(info.fs_total));
	assert_int_equal(info.disk_full, info.fs_avail < info.reserve);
	assert_int_equal(info.usable, info.disk_full ? 0 : info.fs_avail - info.reserve);
	assert_int_equal(wq_disk_info("/nonexistent/x", &info), -ENOENT);
	struct wq_disk_info syn = {.usable = 5000ULL << 20};
	assert_int_equal(wq_disk_free_mb(&syn, 3000ULL << 20, 1000ULL << 20, 500ULL << 20), 1500);
	assert_int_equal(wq_disk_free_mb(&syn, 9000ULL << 20, 0, 0), 5000);
	assert_int_equal(wq_disk_free_mb(&syn, 100ULL << 20, 200ULL << 20, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_object, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drop_linked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_master_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disk_math, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_hashed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
