/* test_worker_shared_cache.c: unit tests for the shared store: one identity agreed by processes
 * opening it at once, per-object OFD locks (held, released by kill -9), publication by link and
 * by a checked copy across file systems, await of a present, missing or wrong-sized object and
 * of one whose writer died, the sweep of stale temporaries, references and the size limit;
 * directory objects (D-) published, taken, trimmed and swept the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_shared_cache.h"
#include "beneath.h"
#include "wq_listing.h"
#include "htc_error.h"
#include "full_io.h"
#include "path.h"
#include "sha256.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

struct fixture {
	char *dir;   /* the test's directory */
	char *store; /* DIR/store */
	char *src;   /* DIR/src: a "worker cache" on the same file system */
	char *dir2;  /* DIR/dst: another worker's partial directory (made by a test) */
	int src_fd;
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof *f);
	f->dir = ts_tmpdir_create("test_worker_shared_cache");
	f->store = path_join(f->dir, "store");
	f->src = path_join(f->dir, "src");
	f->dir2 = path_join(f->dir, "dst");
	assert_int_equal(mkdir(f->src, 0755), 0);
	f->src_fd = open(f->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->src_fd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	close(f->src_fd);
	free(f->store);
	free(f->src);
	free(f->dir2);
	ts_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static struct worker_shared_cache *open_store(const char *dir, uint64_t limit)
{
	char *why = NULL;
	struct worker_shared_cache *s = worker_shared_cache_open(dir, limit, 0, &why);
	if (!s)
		fail_msg("open %s: %s", dir, why);
	return s;
}

/* Writes CONTENT as an F- object into directory FD; *NAME gets its name (caller frees). */
static char *put_object(int fd, const char *content)
{
	char h[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(content, strlen(content), h), 0);
	char *name = xasprintf("F-%s", h);
	int o = openat(fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0555);
	assert_true(o >= 0);
	assert_int_equal(full_write(o, content, strlen(content)), 0);
	close(o);
	return name;
}

static bool exists_at(int fd, const char *name)
{
	struct stat st;
	return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int count_entries(const char *dir)
{
	char *cmd = xasprintf("ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	free(cmd);
	assert_non_null(p);
	int n = -1;
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* Forks a child that runs FN(ARG), writes one byte to a pipe when ready, then waits to be
 * killed. Returns its pid once it is ready. */
static pid_t child_ready(void (*fn)(void *), void *arg)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		fn(arg);
		if (write(p[1], "x", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

/* ---- identity -------------------------------------------------------------------------- */

static void test_identity_once(void **state)
{
	struct fixture *f = *state;
	/* Eight processes open a new store at the same moment: one identity for all. */
	int p[2];
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < 8; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			char *why = NULL;
			struct worker_shared_cache *s =
			    worker_shared_cache_open(f->store, 0, 0, &why);
			if (!s || write(p[1], worker_shared_cache_id(s), 32) != 32)
				_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	char first[33] = {0}, id[33] = {0};
	for (int i = 0; i < 8; i++) {
		assert_int_equal(read(p[0], id, 32), 32);
		if (i == 0)
			memcpy(first, id, 32);
		assert_string_equal(id, first);
	}
	close(p[0]);
	for (int i = 0; i < 8; i++) {
		int st;
		assert_true(wait(&st) > 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct worker_shared_cache *s = open_store(f->store, 0);
	assert_string_equal(worker_shared_cache_id(s), first);
	worker_shared_cache_close(s);
	/* Another directory is another store. */
	char *other = path_join(f->dir, "other");
	s = open_store(other, 0);
	assert_string_not_equal(worker_shared_cache_id(s), first);
	worker_shared_cache_close(s);
	free(other);
}

static void test_bad_identity(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(path_mkdir_p(f->store, 0755), 0);
	char *id = path_join(f->store, "store-id");
	ts_write_file(id, "not an id\n");
	char *why = NULL;
	assert_null(worker_shared_cache_open(f->store, 0, 0, &why));
	assert_non_null(strstr(why, "store-id: not a store identity"));
	free(why);
	free(id);
	assert_null(worker_shared_cache_open("relative/dir", 0, 0, &why));
	assert_non_null(strstr(why, "not an absolute path"));
	free(why);
}

/* ---- locks ----------------------------------------------------------------------------- */

struct lock_arg {
	struct worker_shared_cache *s;
	const char *name;
	const char *tmp_content; /* also leave a locked temporary in .partial */
};

static void hold_lock(void *p)
{
	struct lock_arg *a = p;
	if (worker_shared_cache_lock(a->s, a->name, false) < 0)
		_exit(2);
	if (a->tmp_content) {
		char *t = xasprintf("%s/.partial/%s.999.0", worker_shared_cache_dir(a->s), a->name);
		int fd = open(t, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0 ||
		    full_write(fd, a->tmp_content, strlen(a->tmp_content)) < 0)
			_exit(4);
	}
}

static void test_lock_dies_with_holder(void **state)
{
	struct fixture *f = *state;
	struct worker_shared_cache *s = open_store(f->store, 0);
	char *name = put_object(f->src_fd, "big object");
	struct lock_arg a = {s, name, "big obj"}; /* killed in the middle of writing */
	pid_t pid = child_ready(hold_lock, &a);
	/* held by another process, and also by another open file of this one */
	assert_int_equal(worker_shared_cache_lock(s, name, false), -EAGAIN);
	char *partial = path_join(f->store, ".partial");
	assert_int_equal(worker_shared_cache_sweep(s), 0); /* a live writer's temporary stays */
	assert_int_equal(count_entries(partial), 1);
	kill_child(pid);
	/* the kernel released it: no wait, no timeout */
	int fd = worker_shared_cache_lock(s, name, false);
	assert_true(fd >= 0);
	assert_int_equal(worker_shared_cache_lock(s, name, false),
	                 -EAGAIN); /* OFD: per open file */
	worker_shared_cache_unlock(s, fd);
	/* the dead writer's object is not in the store, and its temporary is swept */
	assert_int_equal(worker_shared_cache_await(s, name, 10), -ENOENT);
	assert_int_equal(worker_shared_cache_sweep(s), 1);
	assert_int_equal(count_entries(partial), 0);
	/* and a new opener of the store sweeps too */
	a.tmp_content = "x";
	pid = child_ready(hold_lock, &a);
	kill_child(pid);
	assert_int_equal(count_entries(partial), 1);
	worker_shared_cache_close(open_store(f->store, 0));
	assert_int_equal(count_entries(partial), 0);
	free(partial);
	free(name);
	worker_shared_cache_close(s);
}

/* ---- leases (where fcntl locks are not trusted) ------------------------------------------ */

static struct worker_shared_cache *open_leased(const char *dir, double timeout_s)
{
	char *why = NULL;
	struct worker_shared_cache *s = worker_shared_cache_open(dir, 0, timeout_s, &why);
	if (!s)
		fail_msg("open %s with leases: %s", dir, why);
	return s;
}

struct lease_arg {
	const char *store, *name;
};

/* In the child: its own store (and heartbeat thread: threads do not survive fork) holds NAME. */
static void hold_lease(void *p)
{
	struct lease_arg *a = p;
	struct worker_shared_cache *s = open_leased(a->store, 1.0);
	if (worker_shared_cache_lock(s, a->name, false) < 0)
		_exit(2);
}

static void test_leases(void **state)
{
	struct fixture *f = *state;
	/* the holder below renews every 1/6 s; this taker calls a lease dead after 3 s, so that
	 * a busy machine does not make a live holder look dead */
	struct worker_shared_cache *s = open_leased(f->store, 3.0);
	assert_true(worker_shared_cache_lease_timeout(s) == 3.0);
	/* the identity is made without a lock, and the same for every opener */
	struct worker_shared_cache *s2 = open_leased(f->store, 3600);
	assert_string_equal(worker_shared_cache_id(s), worker_shared_cache_id(s2));
	char *a = put_object(f->src_fd, "leased a"), *b = put_object(f->src_fd, "leased b");
	char *c = put_object(f->src_fd, "leased c");
	/* a lease is one holder's, per name: the same process cannot take it twice */
	int fd = worker_shared_cache_lock(s, a, false);
	assert_true(fd >= 0);
	assert_int_equal(worker_shared_cache_lock(s, a, false), -EAGAIN);
	assert_int_equal(worker_shared_cache_lock(s2, a, false), -EAGAIN);
	char *lease = xasprintf("%s/leases/%s", f->store, a);
	assert_int_equal(access(lease, F_OK), 0);
	worker_shared_cache_unlock(s, fd);
	assert_int_equal(access(lease, F_OK), -1); /* dropped: deleted */
	fd = worker_shared_cache_lock(s2, a, false);
	assert_true(fd >= 0);
	worker_shared_cache_unlock(s2, fd);
	/* a holder killed with -9 renews no more: its lease is broken once it is older than the
	 * timeout, by the server's time (a waiter polls until then) */
	struct lease_arg la = {f->store, b};
	pid_t pid = child_ready(hold_lease, &la);
	assert_int_equal(worker_shared_cache_lock(s, b, false), -EAGAIN);
	kill_child(pid);
	fd = worker_shared_cache_lock(s, b, true);
	assert_true(fd >= 0);
	worker_shared_cache_unlock(s, fd);
	/* a holder whose lease was broken as dead (made old here by hand: S2 renews it only every
	 * 600 s) does not delete the new holder's lease when it lets go */
	int old = worker_shared_cache_lock(s2, c, false);
	assert_true(old >= 0);
	char *lease_c = xasprintf("%s/leases/%s", f->store, c);
	struct timespec past[2] = {{1000000000, 0}, {1000000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, lease_c, past, 0), 0);
	int now = worker_shared_cache_lock(s, c, false);
	assert_true(now >= 0);
	worker_shared_cache_unlock(s2, old);
	assert_int_equal(access(lease_c, F_OK), 0);
	assert_int_equal(worker_shared_cache_lock(s2, c, false), -EAGAIN);
	worker_shared_cache_unlock(s, now);
	assert_int_equal(access(lease_c, F_OK), -1);
	free(lease_c);
	free(lease);
	free(a);
	free(b);
	free(c);
	worker_shared_cache_close(s2);
	worker_shared_cache_close(s);
}

/* ---- publish and await ------------------------------------------------------------------ */

static void test_publish_link_and_await(void **state)
{
	struct fixture *f = *state;
	struct worker_shared_cache *s = open_store(f->store, 0);
	char *name = put_object(f->src_fd, "hello");
	assert_int_equal(worker_shared_cache_await(s, name, 5), -ENOENT);
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, name), 1);
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, name), 0);
	/* one file: the store's link and the "cache"'s */
	assert_int_equal(worker_shared_cache_users(s, name), 1);
	int lock = worker_shared_cache_await(s, name, 5);
	assert_true(lock >= 0);
	worker_shared_cache_unlock(s, lock);
	assert_int_equal(worker_shared_cache_await(s, name, 6), -EFBIG);
	/* while the await holds the lock, a trim cannot delete it */
	lock = worker_shared_cache_await(s, name, 5);
	assert_true(lock >= 0);
	unlinkat(f->src_fd, name, 0); /* no user any more */
	assert_int_equal(worker_shared_cache_users(s, name), 0);
	assert_int_equal(worker_shared_cache_trim(s, 0), 0);
	worker_shared_cache_unlock(s, lock);
	assert_int_equal(worker_shared_cache_trim(s, 0), 1);
	assert_false(exists_at(worker_shared_cache_objects_fd(s), name));
	uint64_t n = 9, b = 9;
	assert_int_equal(worker_shared_cache_stat(s, &n, &b), 0);
	assert_int_equal(n, 0);
	assert_int_equal(b, 0);
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, "F-short"), -EINVAL);
	free(name);
	worker_shared_cache_close(s);
}

static void publish_then_unlock(void *p)
{
	struct lock_arg *a = p;
	int fd = worker_shared_cache_lock(a->s, a->name, false);
	if (fd < 0)
		_exit(2);
	/* the parent's await blocks on the lock from here on */
	int src = open(a->tmp_content, O_RDONLY | O_DIRECTORY);
	if (src < 0 || worker_shared_cache_publish(a->s, src, a->name) != 1)
		_exit(5);
	worker_shared_cache_unlock(a->s, fd);
}

static void test_await_sees_what_a_writer_published(void **state)
{
	struct fixture *f = *state;
	struct worker_shared_cache *s = open_store(f->store, 0);
	char *name = put_object(f->src_fd, "0123456789");
	struct lock_arg a = {s, name, f->src};
	pid_t pid = child_ready(publish_then_unlock, &a);
	int lock = worker_shared_cache_await(s, name, 10);
	assert_true(lock >= 0);
	worker_shared_cache_unlock(s, lock);
	kill_child(pid);
	free(name);
	worker_shared_cache_close(s);
}

/* A directory on another file system than the test's (tmpfs /dev/shm, when the test's is not
 * one), or NULL. */
static char *other_fs_dir(const char *dir)
{
	struct statfs a, b;
	if (statfs(dir, &a) < 0 || statfs("/dev/shm", &b) < 0)
		return NULL;
	struct stat x, y;
	if (stat(dir, &x) < 0 || stat("/dev/shm", &y) < 0 || x.st_dev == y.st_dev)
		return NULL;
	return ts_tmpdir_create_in("/dev/shm", "test_worker_shared_cache");
}

static void test_publish_copy_across_file_systems(void **state)
{
	struct fixture *f = *state;
	char *other = other_fs_dir(f->dir);
	if (!other)
		fail_msg("no second file system (/dev/shm) to test copies across file systems");
	int ofd = open(other, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ofd >= 0);
	struct worker_shared_cache *s = open_store(f->store, 0);
	char *name = put_object(ofd, "copied across");
	assert_int_equal(worker_shared_cache_publish(s, ofd, name), 1);
	assert_int_equal(worker_shared_cache_users(s, name), 0); /* a copy: its own file */
	struct stat st;
	assert_int_equal(fstatat(worker_shared_cache_objects_fd(s), name, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	assert_int_equal(st.st_size, strlen("copied across"));
	/* a file whose content is not its name is refused and leaves nothing */
	char *bad = put_object(ofd, "the real content");
	int o = openat(ofd, bad, O_WRONLY | O_TRUNC);
	if (o < 0) { /* mode 0555: make it writable to spoil it */
		assert_int_equal(fchmodat(ofd, bad, 0755, 0), 0);
		o = openat(ofd, bad, O_WRONLY | O_TRUNC);
	}
	assert_true(o >= 0);
	assert_int_equal(full_write(o, "spoiled", 7), 0);
	close(o);
	assert_int_equal(worker_shared_cache_publish(s, ofd, bad), HTC_ECORRUPT);
	assert_false(exists_at(worker_shared_cache_objects_fd(s), bad));
	char *partial = path_join(f->store, ".partial");
	assert_int_equal(count_entries(partial), 0);
	free(partial);
	free(bad);
	free(name);
	close(ofd);
	worker_shared_cache_close(s);
	ts_tmpdir_remove(other);
}

/* ---- size limit -------------------------------------------------------------------------- */

static void test_limit_keeps_used_objects(void **state)
{
	struct fixture *f = *state;
	struct worker_shared_cache *s = open_store(f->store, 12); /* bytes */
	char *a = put_object(f->src_fd, "aaaaaaaa");              /* 8 bytes, will be unused */
	char *b = put_object(f->src_fd, "bbbbbbbbb");             /* 9 bytes, used */
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, a), 1);
	unlinkat(f->src_fd, a, 0);
	/* b enters: 17 > 12; a is unused and goes; b stays (it has a user) */
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, b), 1);
	int ofd = worker_shared_cache_objects_fd(s);
	assert_false(exists_at(ofd, a));
	assert_true(exists_at(ofd, b));
	/* over the limit with only used objects: nothing can go */
	char *c = put_object(f->src_fd, "cccccccccc");
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, c), 1);
	assert_true(exists_at(ofd, b));
	assert_true(exists_at(ofd, c));
	/* b loses its user: the one changed least recently goes first, then it fits */
	unlinkat(f->src_fd, b, 0);
	unlinkat(f->src_fd, c, 0);
	assert_int_equal(worker_shared_cache_trim(s, 12), 1);
	assert_false(exists_at(ofd, b));
	assert_true(exists_at(ofd, c));
	free(a);
	free(b);
	free(c);
	worker_shared_cache_close(s);
}

/* ---- directory objects ------------------------------------------------------------------- */

/* Writes CONTENT to PATH of directory FD with MODE. */
static void put_file(int fd, const char *path, const char *content, mode_t mode)
{
	int o = openat(fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(o >= 0);
	assert_int_equal(full_write(o, content, strlen(content)), 0);
	close(o);
}

/* Makes a D- object in directory FD: "x" (2 bytes), "sub/y" (3 bytes, executable), "sub/empty/"
 * and, when SPOIL, another "x" changed after naming the tree. Returns its name (caller frees). */
static char *put_dir_object(int fd, bool spoil)
{
	assert_int_equal(mkdirat(fd, "tree", 0755), 0);
	int t = openat(fd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(t >= 0);
	put_file(t, "x", spoil ? "ww" : "xx", 0444);
	assert_int_equal(mkdirat(t, "sub", 0755), 0);
	assert_int_equal(mkdirat(t, "sub/empty", 0755), 0);
	put_file(t, "sub/y", "yyy", 0555);
	struct wq_listing *l = NULL;
	char *why = NULL;
	assert_int_equal(wq_listing_walk(t, "tree", 0, &l, &why), 0);
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(l, hex), 0);
	wq_listing_delete(l);
	if (spoil) {
		assert_int_equal(fchmodat(t, "x", 0644, 0), 0);
		put_file(t, "x", "zz", 0644);
	}
	close(t);
	char *name = xasprintf("D-%s", hex);
	assert_int_equal(renameat(fd, "tree", fd, name), 0);
	return name;
}

static ino_t ino_at(int fd, const char *path)
{
	struct stat st;
	assert_int_equal(fstatat(fd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

static void remove_at(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	assert_int_equal(tree_remove(p), 0);
	free(p);
}

static void test_dir_publish_take_and_trim(void **state)
{
	struct fixture *f = *state;
	struct worker_shared_cache *s = open_store(f->store, 0);
	char *name = put_dir_object(f->src_fd, false);
	int ofd = worker_shared_cache_objects_fd(s);
	assert_int_equal(worker_shared_cache_await(s, name, 5), -ENOENT);
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, name), 1);
	assert_int_equal(worker_shared_cache_publish(s, f->src_fd, name), 0);
	/* the files are the cache's, hard-linked; the directories read-only */
	char *x = xasprintf("%s/x", name), *y = xasprintf("%s/sub/y", name);
	char *empty = xasprintf("%s/sub/empty", name);
	assert_true(ino_at(ofd, x) == ino_at(f->src_fd, x));
	assert_true(ino_at(ofd, y) == ino_at(f->src_fd, y));
	struct stat st;
	assert_int_equal(fstatat(ofd, name, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	assert_int_equal(fstatat(ofd, empty, &st, 0), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(worker_shared_cache_users(s, name), 1);
	uint64_t n = 0, b = 0;
	assert_int_equal(worker_shared_cache_stat(s, &n, &b), 0);
	assert_int_equal(n, 1);
	assert_int_equal(b, 5);

	/* a second worker takes it: its tree links the same files */
	assert_int_equal(mkdir(f->dir2, 0700), 0);
	int dfd = open(f->dir2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	int lock = worker_shared_cache_await(s, name, 5);
	assert_true(lock >= 0);
	struct wq_listing *l = NULL;
	assert_int_equal(worker_shared_cache_take_dir(s, name, 6, dfd, &l), -EFBIG);
	assert_null(l);
	assert_int_equal(worker_shared_cache_take_dir(s, name, 5, dfd, &l), 0);
	worker_shared_cache_unlock(s, lock);
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(l, hex), 0);
	assert_string_equal(hex, name + 2);
	assert_int_equal(wq_listing_count(l), 4);
	wq_listing_delete(l);
	assert_true(ino_at(dfd, "x") == ino_at(ofd, x));
	assert_true(ino_at(dfd, "sub/y") == ino_at(ofd, y));
	assert_int_equal(worker_shared_cache_users(s, name), 2);

	/* in use: never trimmed; unused: trimmed, and nothing is left behind */
	assert_int_equal(worker_shared_cache_trim(s, 0), 0);
	remove_at(f->src, name);
	assert_int_equal(worker_shared_cache_trim(s, 0), 0);
	close(dfd);
	assert_int_equal(tree_remove(f->dir2), 0);
	assert_int_equal(worker_shared_cache_users(s, name), 0);
	assert_int_equal(worker_shared_cache_trim(s, 0), 1);
	assert_false(exists_at(ofd, name));
	char *partial = path_join(f->store, ".partial");
	assert_int_equal(count_entries(partial), 0);
	free(partial);
	free(x);
	free(y);
	free(empty);
	free(name);
	worker_shared_cache_close(s);
}

static void test_dir_copy_across_file_systems(void **state)
{
	struct fixture *f = *state;
	char *other = other_fs_dir(f->dir);
	if (!other)
		fail_msg("no second file system (/dev/shm) to test copies across file systems");
	int ofd2 = open(other, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ofd2 >= 0);
	struct worker_shared_cache *s = open_store(f->store, 0);
	int ofd = worker_shared_cache_objects_fd(s);
	char *name = put_dir_object(ofd2, false);
	assert_int_equal(worker_shared_cache_publish(s, ofd2, name), 1);
	assert_int_equal(worker_shared_cache_users(s, name), 0); /* copies: its own files */
	char *y = xasprintf("%s/sub/y", name);
	struct stat st;
	assert_int_equal(fstatat(ofd, y, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	assert_int_equal(st.st_size, 3);
	/* taken back across file systems: copied */
	char *dst = path_join(other, "taken");
	assert_int_equal(mkdir(dst, 0700), 0);
	int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct wq_listing *l = NULL;
	assert_int_equal(worker_shared_cache_take_dir(s, name, 5, dfd, &l), 0);
	wq_listing_delete(l);
	assert_int_equal(fstatat(dfd, "sub/y", &st, 0), 0);
	assert_int_equal(st.st_size, 3);
	close(dfd);
	/* a tree whose content is not its name is refused and leaves nothing */
	remove_at(other, name);
	char *bad = put_dir_object(ofd2, true);
	assert_int_equal(worker_shared_cache_publish(s, ofd2, bad), HTC_ECORRUPT);
	assert_false(exists_at(ofd, bad));
	char *partial = path_join(f->store, ".partial");
	assert_int_equal(count_entries(partial), 0);
	free(partial);
	free(bad);
	free(dst);
	free(y);
	free(name);
	close(ofd2);
	worker_shared_cache_close(s);
	ts_tmpdir_remove(other);
}

struct flock_arg {
	const char *path;
};

static void hold_flock(void *p)
{
	struct flock_arg *a = p;
	int fd = open(a->path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		_exit(2);
}

/* A directory left in DIR/.partial by a writer that died (no flock) is swept when a worker
 * opens the store, read-only directories and all; one whose writer lives is kept. */
static void test_dir_sweep(void **state)
{
	struct fixture *f = *state;
	worker_shared_cache_close(open_store(f->store, 0));
	char *dead = xasprintf("%s/.partial/D-dead.1.1", f->store);
	char *live = xasprintf("%s/.partial/D-live.1.2", f->store);
	assert_int_equal(mkdir(dead, 0755), 0);
	char *sub = path_join(dead, "sub");
	assert_int_equal(mkdir(sub, 0755), 0);
	int dfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put_file(dfd, "f", "data", 0444);
	close(dfd);
	assert_int_equal(chmod(sub, 0555), 0);
	assert_int_equal(mkdir(live, 0755), 0);
	struct flock_arg a = {live};
	pid_t pid = child_ready(hold_flock, &a);
	struct worker_shared_cache *s = open_store(f->store, 0);
	struct stat st;
	assert_int_equal(stat(dead, &st), -1);
	assert_int_equal(stat(live, &st), 0);
	kill_child(pid);
	assert_int_equal(worker_shared_cache_sweep(s), 1);
	assert_int_equal(stat(live, &st), -1);
	worker_shared_cache_close(s);
	free(sub);
	free(dead);
	free(live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_identity_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lock_dies_with_holder, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_leases, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_publish_link_and_await, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_await_sees_what_a_writer_published, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_publish_copy_across_file_systems, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limit_keeps_used_objects, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_publish_take_and_trim, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_copy_across_file_systems, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_sweep, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
