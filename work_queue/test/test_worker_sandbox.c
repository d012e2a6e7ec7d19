/* test_worker_sandbox.c: unit tests for worker_sandbox: every symbolic-link trick (final component,
 * intermediate directory, link to a directory outside, dangling link, FIFO, /proc magic links)
 * and hostile names, run through openat2, through the fallback walk and through AUTO; input
 * creation, cache placement (linkat, EXDEV copy, directory links), output checks and removal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_sandbox.h"
#include "full_io.h"
#include "path.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

struct fixture {
	char *root;    /* a temporary directory */
	char *outside; /* a directory beside the sandbox, holding "secret" */
	int root_fd;
	struct worker_sandbox *sb;
	int work;
	enum beneath_resolve how;
};

static char *read_fd(int fd)
{
	char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	buf[n] = 0;
	return xstrdup(buf);
}

/* NAME beneath work is a copy of the cache file placed across file systems: one link, mode
 * 0555, content TEXT. */
static void expect_copied(struct fixture *f, const char *name, const char *text)
{
	struct stat st;
	assert_int_equal(fstatat(f->work, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_mode & 07777, 0555);
	int fd = open_beneath(f->work, name, O_RDONLY, 0, f->how);
	assert_true(fd >= 0);
	char *c = read_fd(fd);
	assert_string_equal(c, text);
	free(c);
	close(fd);
}

static int setup_how(void **state, enum beneath_resolve how)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->how = how;
	f->root = ts_tmpdir_create_in("/tmp", "test_worker_sandbox");
	f->outside = path_join(f->root, "outside");
	assert_int_equal(mkdir(f->outside, 0755), 0);
	char *s = path_join(f->outside, "secret");
	ts_write_file(s, "secret\n");
	free(s);
	f->root_fd = open(f->root, O_RDONLY | O_DIRECTORY);
	f->sb = worker_sandbox_create(f->root_fd, f->root, 42, 1, how);
	assert_non_null(f->sb);
	f->work = worker_sandbox_work_fd(f->sb);
	*state = f;
	return 0;
}

static int setup_openat2(void **state)
{
	return setup_how(state, BENEATH_RESOLVE_OPENAT2);
}
static int setup_walk(void **state)
{
	return setup_how(state, BENEATH_RESOLVE_WALK);
}
static int setup_auto(void **state)
{
	return setup_how(state, BENEATH_RESOLVE_AUTO);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	worker_sandbox_remove(f->sb);
	worker_sandbox_delete(f->sb);
	worker_sandbox_pool_forget(f->root);
	close(f->root_fd);
	ts_tmpdir_remove(f->root);
	free(f->outside);
	free(f);
	return 0;
}

static void in_work(struct fixture *f, const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", worker_sandbox_work_path(f->sb), name);
}

static void expect_missing(struct fixture *f, const char *name, bool dir, int code,
                           const char *text)
{
	int fd = 99;
	char *missing = NULL;
	int r = worker_sandbox_check_output(f->sb, name, dir, &fd, &missing);
	if (r != code)
		fail_msg("check_output(%s) = %d (%s), want %d", name, r, missing ? missing : "-",
		         code);
	assert_int_equal(fd, -1);
	assert_non_null(missing);
	assert_string_equal(missing, text);
	free(missing);
}

/* A link as the last component: never opened, reported as a link. */
static void test_final_link(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	in_work(f, "out.txt", p, sizeof(p));
	char *secret = path_join(f->outside, "secret");
	assert_int_equal(symlink(secret, p), 0);
	assert_int_equal(open_beneath(f->work, "out.txt", O_RDONLY, 0, f->how), -ELOOP);
	expect_missing(f, "out.txt", false, -ELOOP, "is a symbolic link: out.txt");
	expect_missing(f, "out.txt", true, -ELOOP, "is a symbolic link: out.txt");
	/* writing through it is refused too, and the target is untouched */
	assert_true(open_beneath(f->work, "out.txt", O_WRONLY | O_TRUNC, 0, f->how) < 0);
	assert_int_equal(create_beneath(f->work, "out.txt", false), -EEXIST);
	assert_int_equal(path_file_size(secret), 7);
	free(secret);
}

/* A link as an intermediate directory, pointing outside. */
static void test_intermediate_link(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	in_work(f, "d", p, sizeof(p));
	assert_int_equal(symlink(f->outside, p), 0);
	assert_int_equal(open_beneath(f->work, "d/secret", O_RDONLY, 0, f->how), -ELOOP);
	expect_missing(f, "d/secret", false, -ELOOP, "is a symbolic link: d/secret");
	expect_missing(f, "d", true, -ELOOP, "is a symbolic link: d");
	/* creating below it must not create anything outside */
	assert_int_equal(create_beneath(f->work, "d/new", false), -ELOOP);
	assert_int_equal(mkdir_beneath(f->work, "d/newdir", 0755), -ELOOP);
	char *n1 = path_join(f->outside, "new"), *n2 = path_join(f->outside, "newdir");
	assert_false(path_exists(n1));
	assert_false(path_exists(n2));
	free(n1);
	free(n2);
}

/* A dangling link: no open, no create through it. */
static void test_dangling_link(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	in_work(f, "dl", p, sizeof(p));
	char *target = path_join(f->outside, "created");
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(open_beneath(f->work, "dl", O_RDONLY, 0, f->how), -ELOOP);
	assert_true(open_beneath(f->work, "dl", O_WRONLY | O_CREAT, 0644, f->how) < 0);
	assert_int_equal(create_beneath(f->work, "dl", true), -EEXIST);
	assert_int_equal(create_beneath(f->work, "dl/x", true), -ELOOP);
	expect_missing(f, "dl", false, -ELOOP, "is a symbolic link: dl");
	assert_false(path_exists(target));
	free(target);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("blocked on a FIFO");
}

/* A FIFO output is reported without blocking. */
static void test_fifo(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	in_work(f, "fifo", p, sizeof(p));
	assert_int_equal(mkfifo(p, 0644), 0);
	signal(SIGALRM, on_alarm);
	alarm(5);
	expect_missing(f, "fifo", false, -EINVAL, "is not a regular file: fifo");
	expect_missing(f, "fifo", true, -EINVAL, "is not a regular file: fifo");
	/* inside a directory output */
	assert_int_equal(mkdir_beneath(f->work, "od", 0755) >= 0, 1);
	in_work(f, "od/sub", p, sizeof(p));
	assert_int_equal(mkdir(p, 0755), 0);
	in_work(f, "od/sub/p", p, sizeof(p));
	assert_int_equal(mkfifo(p, 0644), 0);
	expect_missing(f, "od", true, -EINVAL, "is not a regular file: od/sub/p");
	alarm(0);
}

/* /proc magic links are refused as last and as intermediate components. */
static void test_magic_links(void **state)
{
	struct fixture *f = *state;
	int proc = open("/proc/self", O_RDONLY | O_DIRECTORY);
	assert_true(proc >= 0);
	const char *names[] = {"exe", "cwd", "root", "fd/0", "root/etc/passwd", "cwd/x", "fd/0/x"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int r = open_beneath(proc, names[i], O_RDONLY, 0, f->how);
		if (r != -ELOOP)
			fail_msg("open beneath /proc/self of %s = %d, want -ELOOP", names[i], r);
	}
	/* a plain entry of /proc still opens */
	int fd = open_beneath(proc, "status", O_RDONLY, 0, f->how);
	assert_true(fd >= 0);
	close(fd);
	close(proc);
}

/* Names that climb or are absolute never leave the directory, whoever checked them. */
static void test_hostile_names(void **state)
{
	struct fixture *f = *state;
	const char *bad[] = {
	    "../x", "/etc/passwd", "a/../../x", "..", "../../../../etc/passwd", "a/..", "/"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = open_beneath(f->work, bad[i], O_RDONLY, 0, f->how);
		if (r != -EXDEV)
			fail_msg("open %s = %d, want -EXDEV", bad[i], r);
		assert_int_equal(create_beneath(f->work, bad[i], false), -EXDEV);
		assert_int_equal(mkdir_beneath(f->work, bad[i], 0755), -EXDEV);
		assert_true(worker_sandbox_tmp_commit(f->sb, 1, bad[i]) < 0);
		assert_int_equal(worker_sandbox_link_dir(f->sb, -1, "D-x", bad[i]), -EXDEV);
		char *m = NULL;
		assert_true(worker_sandbox_check_output(f->sb, bad[i], false, NULL, &m) < 0);
		assert_non_null(m);
		free(m);
	}
	assert_int_equal(open_beneath(f->work, "", O_RDONLY, 0, f->how), -EINVAL);
	assert_int_equal(open_beneath(f->work, "a//b", O_RDONLY, 0, f->how), -EINVAL);
	assert_int_equal(open_beneath(f->work, "./a", O_RDONLY, 0, f->how), -EINVAL);
	/* nothing appeared beside work */
	char *x = path_join(worker_sandbox_path(f->sb), "x");
	assert_false(path_exists(x));
	free(x);
	/* an object name cannot climb out of the cache either */
	assert_int_equal(worker_sandbox_link_file(f->sb, f->root_fd, "../outside/secret", "s"),
	                 -EINVAL);
	assert_int_equal(worker_sandbox_link_file(f->sb, f->root_fd, "..", "s"), -EINVAL);
}

/* Inputs: parents made, exact modes, O_EXCL, readable back through the same resolution. */
static void test_create_inputs(void **state)
{
	struct fixture *f = *state;
	int fd = create_beneath(f->work, "in/sub/run.sh", true);
	assert_true(fd >= 0);
	assert_int_equal(full_write(fd, "#!/bin/sh\n", 10), 0);
	close(fd);
	fd = create_beneath(f->work, "in/data", false);
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_int_equal(fstatat(f->work, "in/sub/run.sh", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(f->work, "in/data", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(create_beneath(f->work, "in/data", false), -EEXIST);
	assert_int_equal(create_beneath(f->work, "in/data/x", false), -ENOTDIR);
	fd = open_beneath(f->work, "in/sub/run.sh", O_RDONLY, 0, f->how);
	assert_true(fd >= 0);
	char *c = read_fd(fd);
	assert_string_equal(c, "#!/bin/sh\n");
	free(c);
	close(fd);
	/* outputs: a regular file, a directory, missing ones */
	char *m = NULL;
	fd = -1;
	assert_int_equal(worker_sandbox_check_output(f->sb, "in/sub/run.sh", false, &fd, &m), 0);
	assert_null(m);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	assert_int_equal(worker_sandbox_check_output(f->sb, "in", true, &fd, &m), 0);
	close(fd);
	expect_missing(f, "in", false, -EINVAL, "is not a regular file: in");
	expect_missing(f, "in/data", true, -ENOTDIR, "is not a directory: in/data");
	expect_missing(f, "nope", false, -ENOENT, "does not exist: nope");
	expect_missing(f, "in/data/x", false, -ENOTDIR, "does not exist: in/data/x");
	/* a link deep inside a directory output */
	char p[4096];
	in_work(f, "in/sub/l", p, sizeof(p));
	assert_int_equal(symlink("/etc", p), 0);
	expect_missing(f, "in", true, -ELOOP, "is a symbolic link: in/sub/l");
}

/* Per-task inputs through .in.<xfer> and a rename that never replaces. */
static void test_tmp_commit(void **state)
{
	struct fixture *f = *state;
	int fd = worker_sandbox_tmp_open(f->sb, 7, true);
	assert_true(fd >= 0);
	assert_int_equal(full_write(fd, "abc", 3), 0);
	close(fd);
	struct stat st;
	assert_int_equal(fstatat(worker_sandbox_fd(f->sb), ".in.7", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(worker_sandbox_tmp_commit(f->sb, 7, "a/b/c.txt"), 0);
	assert_int_equal(fstatat(worker_sandbox_fd(f->sb), ".in.7", &st, 0), -1);
	assert_int_equal(fstatat(f->work, "a/b/c.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, 3);
	fd = worker_sandbox_tmp_open(f->sb, 8, false);
	close(fd);
	assert_int_equal(worker_sandbox_tmp_commit(f->sb, 8, "a/b/c.txt"), -EEXIST);
	assert_int_equal(worker_sandbox_tmp_discard(f->sb, 8), 0);
	assert_int_equal(worker_sandbox_tmp_discard(f->sb, 8), 0);
	/* a directory transfer */
	int dfd = worker_sandbox_tmp_mkdir(f->sb, 9);
	assert_true(dfd >= 0);
	fd = create_beneath(dfd, "s/t/u", false);
	assert_true(fd >= 0);
	close(fd);
	close(dfd);
	assert_int_equal(worker_sandbox_tmp_commit(f->sb, 9, "dir"), 0);
	assert_int_equal(fstatat(f->work, "dir/s/t/u", &st, AT_SYMLINK_NOFOLLOW), 0);
	dfd = worker_sandbox_tmp_mkdir(f->sb, 10);
	close(dfd);
	assert_int_equal(worker_sandbox_tmp_discard(f->sb, 10), 0);
	assert_int_equal(fstatat(worker_sandbox_fd(f->sb), ".in.10", &st, 0), -1);
	/* a rename target under a planted link is refused */
	char p[4096];
	in_work(f, "lnk", p, sizeof(p));
	assert_int_equal(symlink(f->outside, p), 0);
	fd = worker_sandbox_tmp_open(f->sb, 11, false);
	close(fd);
	assert_int_equal(worker_sandbox_tmp_commit(f->sb, 11, "lnk/evil"), -ELOOP);
	char *e = path_join(f->outside, "evil");
	assert_false(path_exists(e));
	free(e);
}

/* A cache file placed with linkat survives the object's removal from the cache; across file
 * systems it is copied. A directory object is a worker-made link. */
static void test_link_objects(void **state)
{
	struct fixture *f = *state;
	char *cache = path_join(f->root, "cache");
	assert_int_equal(mkdir(cache, 0755), 0);
	int cfd = open(cache, O_RDONLY | O_DIRECTORY);
	char *obj = path_join(cache, "F-obj");
	ts_write_file(obj, "object data\n");
	chmod(obj, 0555);
	assert_int_equal(worker_sandbox_link_file(f->sb, cfd, "F-obj", "inputs/x.dat"), 0);
	struct stat st;
	assert_int_equal(fstatat(f->work, "inputs/x.dat", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(worker_sandbox_link_file(f->sb, cfd, "F-obj", "inputs/x.dat"), -EEXIST);
	assert_int_equal(unlink(obj), 0); /* cache_drop */
	int fd = open_beneath(f->work, "inputs/x.dat", O_RDONLY, 0, f->how);
	assert_true(fd >= 0);
	char *c = read_fd(fd);
	assert_string_equal(c, "object data\n");
	free(c);
	close(fd);

	/* a directory object: a tree of the sandbox's own, its files the cache's */
	char *dobj = path_join(cache, "D-obj");
	assert_int_equal(mkdir(dobj, 0755), 0);
	char *dsub = path_join(dobj, "sub");
	assert_int_equal(mkdir(dsub, 0755), 0);
	char *da = path_join(dobj, "a.txt"), *db = path_join(dsub, "b.sh");
	ts_write_file(da, "aaa\n");
	ts_write_file(db, "echo b\n");
	chmod(da, 0444);
	chmod(db, 0555);
	chmod(dsub, 0555);
	chmod(dobj, 0555);
	assert_int_equal(worker_sandbox_link_dir(f->sb, cfd, "D-obj", "in/tree"), 0);
	assert_int_equal(fstatat(f->work, "in/tree", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode)); /* not a link: find and cp -r enter it */
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(f->work, "in/tree/sub", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
	struct stat orig;
	assert_int_equal(stat(db, &orig), 0);
	assert_int_equal(fstatat(f->work, "in/tree/sub/b.sh", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(st.st_ino == orig.st_ino); /* linked, not copied */
	assert_int_equal(st.st_nlink, 2);
	fd = open_beneath(f->work, "in/tree/a.txt", O_RDONLY, 0, f->how);
	assert_true(fd >= 0);
	c = read_fd(fd);
	assert_string_equal(c, "aaa\n");
	free(c);
	close(fd);
	assert_int_equal(worker_sandbox_link_dir(f->sb, cfd, "D-obj", "in/tree"), -EEXIST);
	assert_int_equal(worker_sandbox_link_dir(f->sb, cfd, "D-none", "in/none"), -ENOENT);
	/* an object that is a file is no directory */
	char *fobj = path_join(cache, "F-two");
	ts_write_file(fobj, "two\n");
	assert_int_equal(worker_sandbox_link_dir(f->sb, cfd, "F-two", "in/file"), -ENOTDIR);
	free(fobj);
	chmod(dobj, 0755);
	chmod(dsub, 0755);
	free(da);
	free(db);
	free(dsub);
	free(dobj);

	/* across file systems: /dev/shm is a tmpfs when present */
	struct stat a, b;
	char *other = NULL;
	if (stat("/dev/shm", &b) == 0 && fstat(f->root_fd, &a) == 0 && a.st_dev != b.st_dev)
		other = ts_tmpdir_create_in("/dev/shm", "test_worker_sandbox");
	if (!other) {
		close(cfd);
		free(obj);
		free(cache);
		skip();
	}
	int ofd = open(other, O_RDONLY | O_DIRECTORY);
	char *o2 = path_join(other, "F-far");
	ts_write_file(o2, "far away\n");
	assert_int_equal(worker_sandbox_link_file(f->sb, ofd, "F-far", "far"), 0);
	expect_copied(f, "far", "far away\n");
	/* a directory object across file systems: its files copied, modes kept */
	char *fd1 = path_join(other, "D-far");
	assert_int_equal(mkdir(fd1, 0755), 0);
	char *fd2 = path_join(fd1, "x.sh");
	ts_write_file(fd2, "echo x\n");
	chmod(fd2, 0555);
	assert_int_equal(worker_sandbox_link_dir(f->sb, ofd, "D-far", "fartree"), 0);
	expect_copied(f, "fartree/x.sh", "echo x\n");
	free(fd2);
	free(fd1);
	/* a link in the far cache is not copied */
	char *l2 = path_join(other, "F-lnk");
	assert_int_equal(symlink("/etc/passwd", l2), 0);
	assert_true(worker_sandbox_link_file(f->sb, ofd, "F-lnk", "lnk") < 0);
	assert_int_equal(fstatat(f->work, "lnk", &st, AT_SYMLINK_NOFOLLOW), -1);
	free(l2);
	close(ofd);
	ts_tmpdir_remove(other);
	free(o2);
	close(cfd);
	free(obj);
	free(cache);
}

/* Removal never follows a link: what the sandbox points at survives. */
static void test_remove_no_follow(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	in_work(f, "to-dir", p, sizeof(p));
	assert_int_equal(symlink(f->outside, p), 0);
	char *secret = path_join(f->outside, "secret");
	in_work(f, "to-file", p, sizeof(p));
	assert_int_equal(symlink(secret, p), 0);
	int fd = mkdir_beneath(f->work, "deep/er", 0755);
	assert_true(fd >= 0);
	assert_int_equal(symlinkat(f->outside, fd, "again"), 0);
	close(fd);
	char *sbpath = xstrdup(worker_sandbox_path(f->sb));
	assert_int_equal(worker_sandbox_remove(f->sb), 0);
	assert_false(path_exists(sbpath));
	assert_true(path_exists(secret));
	assert_int_equal(path_file_size(secret), 7);
	free(secret);
	free(sbpath);
}

/* A new sandbox for the same id and try replaces a stale one. */
static void test_recreate(void **state)
{
	struct fixture *f = *state;
	int fd = create_beneath(f->work, "stale", false);
	close(fd);
	struct worker_sandbox *again = worker_sandbox_create(f->root_fd, f->root, 42, 1, f->how);
	assert_non_null(again);
	struct stat st;
	assert_int_equal(fstatat(worker_sandbox_work_fd(again), "stale", &st, 0), -1);
	assert_int_equal(stat(worker_sandbox_tmp_path(again), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(worker_sandbox_path(again), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	char *want = xasprintf("%s/tasks/42.1/work", f->root);
	assert_string_equal(worker_sandbox_work_path(again), want);
	free(want);
	/* the old object is stale now; swap it for the new one */
	worker_sandbox_delete(f->sb);
	f->sb = again;
	f->work = worker_sandbox_work_fd(again);
}

static ino_t inode_at(int dirfd, const char *name)
{
	struct stat st;
	assert_int_equal(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

static int count_free(const char *root)
{
	char *tasks = path_join(root, "tasks");
	DIR *d = opendir(tasks);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, ".free.", 6) == 0;
	closedir(d);
	free(tasks);
	return n;
}

/* A recycled sandbox comes back empty, with its modes, its directories and its stdout file
 * (same inodes), and removing what a task left never follows its links. */
static void test_recycle(void **state)
{
	struct fixture *f = *state;
	int sbfd = worker_sandbox_fd(f->sb);
	ino_t sb_ino = inode_at(sbfd, "."), work_ino = inode_at(sbfd, "work");
	char *secret = path_join(f->outside, "secret");
	char p[4096];
	in_work(f, "to-outside", p, sizeof(p));
	assert_int_equal(symlink(f->outside, p), 0);
	int fd = mkdir_beneath(f->work, "deep/er", 0755);
	assert_true(fd >= 0);
	close(create_beneath(fd, "file", false));
	close(fd);
	assert_int_equal(fchmodat(f->work, "deep", 0555, 0), 0);
	close(create_beneath(worker_sandbox_fd(f->sb), ".in.7", false));
	fd = openat(sbfd, "stdout", O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "out\n", 4), 4);
	close(fd);
	ino_t out_ino = inode_at(sbfd, "stdout");
	snprintf(p, sizeof(p), "%s/t", worker_sandbox_tmp_path(f->sb));
	ts_write_file(p, "tmp");
	assert_int_equal(fchmod(f->work, 0500), 0);
	char *old = xstrdup(worker_sandbox_path(f->sb));

	assert_int_equal(worker_sandbox_recycle(f->sb), 0);
	assert_false(path_exists(old));
	assert_int_equal(count_free(f->root), 1);
	assert_int_equal(path_file_size(secret), 7);
	worker_sandbox_delete(f->sb);

	f->sb = worker_sandbox_create(f->root_fd, f->root, 43, 2, f->how);
	assert_non_null(f->sb);
	f->work = worker_sandbox_work_fd(f->sb);
	sbfd = worker_sandbox_fd(f->sb);
	char *want = xasprintf("%s/tasks/43.2", f->root);
	assert_string_equal(worker_sandbox_path(f->sb), want);
	assert_int_equal(count_free(f->root), 0);
	assert_int_equal(inode_at(sbfd, "."), sb_ino);
	assert_int_equal(inode_at(sbfd, "work"), work_ino);
	assert_int_equal(inode_at(sbfd, "stdout"), out_ino);
	assert_int_equal(path_file_size(p) < 0, 1); /* tmp/t is gone */
	struct stat st;
	assert_int_equal(fstatat(sbfd, "stdout", &st, 0), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(fstatat(sbfd, ".in.7", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstat(f->work, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(sbfd, "tmp", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	DIR *d = fdopendir(dup(f->work));
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n++;
	closedir(d);
	assert_int_equal(n, 2); /* . and .. */
	free(want);
	free(old);
	free(secret);
}

/* A stdout that a task turned into a hard link of another file is removed, never truncated;
 * a forgotten pool leaves fresh sandboxes to be made. */
static void test_recycle_linked_stdout(void **state)
{
	struct fixture *f = *state;
	char *secret = path_join(f->outside, "secret");
	assert_int_equal(linkat(AT_FDCWD, secret, worker_sandbox_fd(f->sb), "stdout", 0), 0);
	assert_int_equal(worker_sandbox_recycle(f->sb), 0);
	assert_int_equal(path_file_size(secret), 7);
	worker_sandbox_delete(f->sb);
	f->sb = worker_sandbox_create(f->root_fd, f->root, 44, 1, f->how);
	assert_non_null(f->sb);
	f->work = worker_sandbox_work_fd(f->sb);
	struct stat st;
	assert_int_equal(fstatat(worker_sandbox_fd(f->sb), "stdout", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);

	ino_t used = inode_at(worker_sandbox_fd(f->sb), ".");
	assert_int_equal(worker_sandbox_recycle(f->sb), 0);
	worker_sandbox_delete(f->sb);
	worker_sandbox_pool_forget(f->root);
	f->sb = worker_sandbox_create(f->root_fd, f->root, 45, 1, f->how);
	assert_non_null(f->sb);
	f->work = worker_sandbox_work_fd(f->sb);
	assert_true(inode_at(worker_sandbox_fd(f->sb), ".") != used);
	assert_int_equal(count_free(f->root), 1); /* forgotten, not removed */
	free(secret);
}

/* worker_sandbox_recycle_small: within its budget it pools the sandbox like worker_sandbox_recycle;
 * past it, or at a directory, it stops with -EAGAIN, keeps what it removed, leaves the sandbox in
 * place, and worker_sandbox_recycle finishes the job. */
static void test_recycle_small(void **state)
{
	struct fixture *f = *state;
	char p[4096];
	for (int i = 0; i < 5; i++) {
		char n[16];
		snprintf(n, sizeof n, "f%d", i);
		in_work(f, n, p, sizeof(p));
		ts_write_file(p, "x");
	}
	char *old = xstrdup(worker_sandbox_path(f->sb));
	assert_int_equal(worker_sandbox_recycle_small(f->sb, 3), -EAGAIN);
	assert_true(path_exists(old));
	assert_int_equal(count_free(f->root), 0);
	int left = 0;
	for (int i = 0; i < 5; i++) {
		char n[16];
		snprintf(n, sizeof n, "f%d", i);
		in_work(f, n, p, sizeof(p));
		left += path_exists(p);
	}
	assert_int_equal(left, 2); /* three removed, two left */

	close(mkdir_beneath(f->work, "sub", 0755));
	assert_int_equal(worker_sandbox_recycle_small(f->sb, 100), -EAGAIN); /* a directory */
	assert_true(path_exists(old));
	assert_int_equal(worker_sandbox_recycle(f->sb), 0);
	assert_false(path_exists(old));
	assert_int_equal(count_free(f->root), 1);
	worker_sandbox_delete(f->sb);

	f->sb = worker_sandbox_create(f->root_fd, f->root, 46, 1, f->how);
	assert_non_null(f->sb);
	f->work = worker_sandbox_work_fd(f->sb);
	free(old);
	old = xstrdup(worker_sandbox_path(f->sb));
	in_work(f, "one", p, sizeof(p));
	ts_write_file(p, "1");
	assert_int_equal(worker_sandbox_recycle_small(f->sb, 3), 0);
	assert_false(path_exists(old));
	assert_int_equal(count_free(f->root), 1);
	free(old);
}

/* A non-root worker removes a tree whose directories are read-only (cache objects, or a task
 * that chmod'ed its sandbox). Runs in a child that becomes nobody. */
static void test_remove_readonly_as_user(void **state)
{
	struct fixture *f = *state;
	if (geteuid() != 0)
		skip();
	char *base = path_join(f->root, "user");
	assert_int_equal(chmod(f->root, 0755), 0); /* mkdtemp made it 0700 */
	assert_int_equal(mkdir(base, 0755), 0);
	assert_int_equal(chown(base, 65534, 65534), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		char *t = path_join(base, "t");
		if (mkdir(t, 0755) < 0)
			_exit(11);
		int dfd = open(t, O_RDONLY | O_DIRECTORY);
		int x = mkdir_beneath(dfd, "a/b", 0755);
		if (x < 0)
			_exit(12);
		int fd = create_beneath(x, "f", false);
		close(fd);
		close(x);
		fchmodat(dfd, "a/b", 0000, 0);
		fchmodat(dfd, "a", 0555, 0);
		close(dfd);
		if (path_rm_rf(t) == 0)
			_exit(13); /* then the test proves nothing */
		if (tree_remove(t) != 0)
			_exit(14);
		_exit(path_exists(t) ? 15 : 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("child exit %d", WEXITSTATUS(status));
	free(base);
}

#define T(fn)                                                                                      \
	cmocka_unit_test_setup_teardown(fn, setup_openat2, teardown),                              \
	    cmocka_unit_test_setup_teardown(fn, setup_walk, teardown),                             \
	    cmocka_unit_test_setup_teardown(fn, setup_auto, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_final_link),
	    T(test_intermediate_link),
	    T(test_dangling_link),
	    T(test_fifo),
	    T(test_magic_links),
	    T(test_hostile_names),
	    T(test_create_inputs),
	    T(test_tmp_commit),
	    T(test_link_objects),
	    T(test_remove_no_follow),
	    T(test_recreate),
	    T(test_recycle),
	    T(test_recycle_linked_stdout),
	    T(test_recycle_small),
	    cmocka_unit_test_setup_teardown(test_remove_readonly_as_user, setup_walk, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
