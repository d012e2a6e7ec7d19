/* worker_shared_cache.c: the store shared by the workers of one file system
 * (doc/work-queue-shared-cache.md). Everything that several processes may race on is settled by
 * the file system itself: OFD locks (which die with their process; on NFS, lease files with a
 * heartbeat instead, worker_shared_lease.h), linkat(2) and renameat2(RENAME_NOREPLACE) (which
 * make an object appear whole or not at all). A directory object is a read-only tree whose
 * files are hard links shared with the workers' caches, built aside and renamed into place. */
#include "worker_shared_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "worker_cache.h"
#include "worker_shared_lease.h"
#include "beneath.h"
#include "wq_listing.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

#ifndef NFS_SUPER_MAGIC
#define NFS_SUPER_MAGIC 0x6969
#endif

#define ID_FILE    "store-id"
#define COPY_CHUNK (256 * 1024)

struct worker_shared_cache {
	char *dir;
	char id[WORKER_SHARED_CACHE_ID_LEN + 1];
	uint64_t limit;
	int dir_fd, objects_fd, locks_fd, partial_fd;
	atomic_uint_fast64_t seq;
	struct shared_leases *leases; /* lease files in DIR/leases instead of OFD locks, or NULL */
	int leases_fd;
	double lease_timeout_s;
};

/* Temporaries of the store untouched this long (in lease mode, where their writers hold no
 * lock on them) belong to dead writers. */
#define LEASE_STALE_TEMP_S 600

static int open_sub(int fd, const char *name)
{
	if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	int r = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/* An OFD write lock over the whole of FD; WAIT blocks. 0, -EAGAIN or -errno. */
static int ofd_lock(int fd, bool wait)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	for (;;) {
		if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		return errno == EACCES ? -EAGAIN : -errno;
	}
}

static bool valid_id(const char *s, size_t n)
{
	if (n != WORKER_SHARED_CACHE_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Reads DIR/store-id into S->id: 0, -ENOENT, or HTC_ECORRUPT. */
static int read_id(struct worker_shared_cache *s)
{
	int fd = openat(s->dir_fd, ID_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[WORKER_SHARED_CACHE_ID_LEN + 2];
	ssize_t n = full_pread(fd, buf, sizeof buf, 0);
	close(fd);
	if (n < 0)
		return (int)n;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (!valid_id(buf, (size_t)n))
		return HTC_ECORRUPT;
	memcpy(s->id, buf, WORKER_SHARED_CACHE_ID_LEN);
	s->id[WORKER_SHARED_CACHE_ID_LEN] = 0;
	return 0;
}

/* Creates the identity once: under the lock of DIR/.lock, the first opener writes it. With
 * leases (whose file systems' locks are not trusted) no lock is taken: the identity is written
 * to a temporary and linked into place, which fails for all but the first. */
static int make_id(struct worker_shared_cache *s, char **why)
{
	int lfd = s->leases
	              ? -1
	              : openat(s->dir_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (lfd < 0 && !s->leases) {
		*why = xasprintf("%s/.lock: %s", s->dir, strerror(errno));
		return -1;
	}
	int r = s->leases ? 0 : ofd_lock(lfd, true);
	if (r == 0)
		r = read_id(s);
	if (r == -ENOENT) {
		unsigned char rnd[WORKER_SHARED_CACHE_ID_LEN / 2];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
			r = -errno;
		} else {
			char line[WORKER_SHARED_CACHE_ID_LEN + 2];
			for (size_t i = 0; i < sizeof rnd; i++)
				snprintf(line + 2 * i, 3, "%02x", rnd[i]);
			line[WORKER_SHARED_CACHE_ID_LEN] = '\n';
			line[WORKER_SHARED_CACHE_ID_LEN + 1] = 0;
			char tmp[64];
			snprintf(tmp, sizeof tmp, ".%s.%ld", ID_FILE, (long)getpid());
			int fd =
			    openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			r = fd < 0 ? -errno : full_write(fd, line, WORKER_SHARED_CACHE_ID_LEN + 1);
			if (fd >= 0 && close(fd) < 0 && r == 0)
				r = -errno;
			if (r == 0 && s->leases) {
				if (linkat(s->dir_fd, tmp, s->dir_fd, ID_FILE, 0) < 0 &&
				    errno != EEXIST)
					r = -errno;
				unlinkat(s->dir_fd, tmp, 0);
			} else if (r == 0 && renameat(s->dir_fd, tmp, s->dir_fd, ID_FILE) < 0) {
				r = -errno;
			}
			if (r < 0)
				unlinkat(s->dir_fd, tmp, 0);
			else
				r = read_id(s);
		}
	}
	if (lfd >= 0)
		close(lfd); /* releases the lock */
	if (r < 0)
		*why = xasprintf("%s/%s: %s", s->dir, ID_FILE,
		                 r == HTC_ECORRUPT ? "not a store identity (32 hex digits)"
		                                   : htc_strerror(r));
	return r < 0 ? -1 : 0;
}

struct worker_shared_cache *worker_shared_cache_open(const char *dir, uint64_t limit,
                                                     double lease_timeout_s, char **why)
{
	*why = NULL;
	if (!dir || !path_is_absolute(dir)) {
		*why = xasprintf("%s: not an absolute path", dir ? dir : "(null)");
		return NULL;
	}
	struct worker_shared_cache *s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->limit = limit;
	s->dir_fd = s->objects_fd = s->locks_fd = s->partial_fd = s->leases_fd = -1;
	int r = path_mkdir_p(dir, 0755);
	if (r == 0) {
		s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = s->dir_fd < 0 ? -errno : 0;
	}
	/* NFS: a dead client's fcntl lock lives on until its lease on the server ends, so its
	 * objects are locked with lease files instead */
	struct statfs fs;
	if (r == 0 && lease_timeout_s <= 0 && fstatfs(s->dir_fd, &fs) == 0 &&
	    fs.f_type == NFS_SUPER_MAGIC)
		lease_timeout_s = WORKER_SHARED_CACHE_LEASE_S;
	if (r == 0)
		r = s->objects_fd = open_sub(s->dir_fd, "objects");
	if (r >= 0)
		r = s->locks_fd = open_sub(s->dir_fd, "locks");
	if (r >= 0)
		r = s->partial_fd = open_sub(s->dir_fd, ".partial");
	if (r >= 0 && lease_timeout_s > 0)
		r = s->leases_fd = open_sub(s->dir_fd, "leases");
	if (r >= 0 && lease_timeout_s > 0) {
		s->leases = shared_leases_create(s->leases_fd, lease_timeout_s, &r);
		s->lease_timeout_s = lease_timeout_s;
	}
	if (r < 0) {
		*why = xasprintf("%s: %s", dir, strerror(-r));
		goto fail;
	}
	if (make_id(s, why) < 0)
		goto fail;
	r = worker_shared_cache_sweep(s);
	if (r > 0)
		notice("shared cache %s: %d temporaries of dead workers deleted", dir, r);
	return s;
fail:
	worker_shared_cache_close(s);
	return NULL;
}

void worker_shared_cache_close(struct worker_shared_cache *s)
{
	if (!s)
		return;
	shared_leases_delete(s->leases);
	int fds[] = {s->dir_fd, s->objects_fd, s->locks_fd, s->partial_fd, s->leases_fd};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(s->dir);
	free(s);
}

const char *worker_shared_cache_id(const struct worker_shared_cache *s)
{
	return s->id;
}

const char *worker_shared_cache_dir(const struct worker_shared_cache *s)
{
	return s->dir;
}

int worker_shared_cache_objects_fd(const struct worker_shared_cache *s)
{
	return s->objects_fd;
}

double worker_shared_cache_lease_timeout(const struct worker_shared_cache *s)
{
	return s->leases ? s->lease_timeout_s : 0;
}

int worker_shared_cache_lock(const struct worker_shared_cache *s, const char *name, bool wait)
{
	if (!worker_cache_name_valid(name))
		return -EINVAL;
	if (s->leases)
		return shared_lease_take(s->leases, name, wait);
	int fd = openat(s->locks_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = ofd_lock(fd, wait);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

void worker_shared_cache_unlock(const struct worker_shared_cache *s, int fd)
{
	if (fd >= 0 && s->leases)
		shared_lease_drop(s->leases, fd);
	else if (fd >= 0)
		close(fd);
}

/* Copies SRC (open for reading) into a new file TMP of DST_DIRFD while hashing it; the hash goes
 * to HEX. Returns 0 or -errno (TMP is then removed). */
static int copy_hashed(int src, int dst_dirfd, const char *tmp, int *out_fd,
                       char hex[SHA256_HEX_SIZE])
{
	int fd = openat(dst_dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = ofd_lock(fd, false); /* marks it as written by a live process */
	struct sha256_ctx *ctx = r == 0 ? sha256_ctx_create() : NULL;
	char *buf = xmalloc(COPY_CHUNK);
	if (r == 0 && !ctx)
		r = -ENOMEM;
	while (r == 0) {
		ssize_t n = read(src, buf, COPY_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		r = full_write(fd, buf, (size_t)n);
		if (r == 0)
			r = sha256_ctx_update(ctx, buf, (size_t)n);
	}
	free(buf);
	if (r == 0)
		r = sha256_ctx_final(ctx, hex);
	sha256_ctx_delete(ctx);
	if (r < 0) {
		close(fd);
		unlinkat(dst_dirfd, tmp, 0);
		return r;
	}
	*out_fd = fd;
	return 0;
}

static int publish_copy(struct worker_shared_cache *s, int src_dirfd, const char *name)
{
	int src = openat(src_dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return -errno;
	char tmp[WORKER_CACHE_NAME_LEN + 48];
	snprintf(tmp, sizeof tmp, "%s.%ld.%llu", name, (long)getpid(),
	         (unsigned long long)atomic_fetch_add(&s->seq, 1));
	char hex[SHA256_HEX_SIZE];
	int fd = -1;
	int r = copy_hashed(src, s->partial_fd, tmp, &fd, hex);
	close(src);
	if (r < 0)
		return r;
	if (name[0] == 'F' && strcmp(hex, name + 2))
		r = HTC_ECORRUPT;
	else if (fchmod(fd, 0555) < 0)
		r = -errno;
	else if (renameat2(s->partial_fd, tmp, s->objects_fd, name, RENAME_NOREPLACE) < 0)
		r = errno == EEXIST ? 0 : -errno;
	else
		r = 1;
	if (r <= 0)
		unlinkat(s->partial_fd, tmp, 0);
	close(fd); /* after the rename: the lock marks it live until then */
	return r;
}

/* ---- directory objects (D-) ------------------------------------------------------------ */

/* Copies file PATH of tree SRC into a new file PATH of tree DST (copy_hashed; the tree is
 * checked as a whole afterwards), mode 0444 (0555 when EXEC). */
static int copy_file_at(int src, int dst, const char *path, bool exec)
{
	int in = openat(src, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = -1;
	char hex[SHA256_HEX_SIZE];
	int r = copy_hashed(in, dst, path, &out, hex);
	close(in);
	if (r == 0 && fchmod(out, exec ? 0555 : 0444) < 0)
		r = -errno;
	if (out >= 0 && close(out) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Fills the empty directory DST with the tree of SRC that L lists: its directories made (mode
 * 0700), its files hard-linked, or copied when SRC is on another file system (*COPIED). */
static int fill_tree(int src, int dst, struct wq_listing *l, bool *copied)
{
	*copied = false;
	for (size_t i = 0, n = wq_listing_count(l); i < n; i++) {
		const struct wq_listing_entry *e = wq_listing_get(l, i);
		if (e->is_dir) {
			if (mkdirat(dst, e->path, 0700) < 0)
				return -errno;
			continue;
		}
		if (!*copied && linkat(src, e->path, dst, e->path, 0) == 0)
			continue;
		if (!*copied && errno != EXDEV)
			return -errno;
		*copied = true;
		int r = copy_file_at(src, dst, e->path, e->exec);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether the tree FD hashes to NAME: 0, HTC_ECORRUPT or -errno. */
static int check_tree(int fd, const char *name)
{
	struct wq_listing *l = NULL;
	char *why = NULL;
	char hex[SHA256_HEX_SIZE];
	int r = wq_listing_walk(fd, name, 0, &l, &why);
	if (r == 0)
		r = wq_listing_hash(l, hex);
	if (r == 0 && strcmp(hex, name + 2))
		r = HTC_ECORRUPT;
	if (why)
		debug(D_WORKER, "shared cache: %s", why);
	free(why);
	wq_listing_delete(l);
	return r;
}

/* Removes the tree NAME of DIR/.partial. */
static void remove_partial(const struct worker_shared_cache *s, const char *name)
{
	char *p = xasprintf("%s/.partial/%s", s->dir, name);
	int r = tree_remove(p);
	if (r < 0 && r != -ENOENT)
		warn("shared cache: cannot remove %s: %s", p, strerror(-r));
	free(p);
}

/* A D- object: made as a tree in DIR/.partial (under its writer's flock, so that no sweep takes
 * it), its files hard-linked from the worker's cache, or copied and the whole checked against
 * the name; its directories made read-only, children first; then renamed into objects/ (a
 * non-root owner can move a directory only while it may write it: the top is sealed after). */
static int publish_dir(struct worker_shared_cache *s, int src_dirfd, const char *name)
{
	struct stat st;
	if (fstatat(s->objects_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return 0; /* there already (content-addressed): no tree to build */
	int src = openat(src_dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return -errno;
	struct wq_listing *l = NULL;
	char *why = NULL;
	int r = wq_listing_walk(src, name, WQ_LISTING_NO_HASH, &l, &why);
	if (r < 0) {
		debug(D_WORKER, "shared cache: %s", why);
		free(why);
		close(src);
		return r;
	}
	char tmp[WORKER_CACHE_NAME_LEN + 48];
	snprintf(tmp, sizeof tmp, "%s.%ld.%llu", name, (long)getpid(),
	         (unsigned long long)atomic_fetch_add(&s->seq, 1));
	int fd = -1;
	bool made = mkdirat(s->partial_fd, tmp, 0700) == 0;
	if (!made)
		r = -errno;
	else if ((fd = openat(s->partial_fd, tmp,
	                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = -errno;
	else if (!s->leases && flock(fd, LOCK_EX | LOCK_NB) < 0)
		r = -errno;
	bool copied = false;
	if (r == 0)
		r = fill_tree(src, fd, l, &copied);
	if (r == 0 && copied)
		r = check_tree(fd, name);
	for (size_t i = wq_listing_count(l); r == 0 && i-- > 0;) {
		const struct wq_listing_entry *e = wq_listing_get(l, i);
		if (e->is_dir && fchmodat(fd, e->path, 0555, AT_SYMLINK_NOFOLLOW) < 0)
			r = -errno;
	}
	if (r == 0) {
		if (renameat2(s->partial_fd, tmp, s->objects_fd, name, RENAME_NOREPLACE) == 0) {
			r = 1;
			fchmod(fd, 0555);
		} else {
			r = errno == EEXIST || errno == ENOTEMPTY ? 0 : -errno;
		}
	}
	if (r <= 0 && made)
		remove_partial(s, tmp);
	if (fd >= 0)
		close(fd); /* after the rename: the flock marks it live until then */
	close(src);
	wq_listing_delete(l);
	return r;
}

int worker_shared_cache_take_dir(const struct worker_shared_cache *s, const char *name,
                                 uint64_t size, int dst_dirfd, struct wq_listing **out)
{
	*out = NULL;
	if (!worker_cache_name_valid(name) || name[0] != 'D')
		return -EINVAL;
	int src = openat(s->objects_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return -errno;
	struct wq_listing *l = NULL;
	char *why = NULL;
	int r = wq_listing_walk(src, name, 0, &l, &why);
	if (r < 0)
		debug(D_WORKER, "shared cache: %s", why);
	else if (wq_listing_bytes(l) != size)
		r = -EFBIG;
	free(why);
	bool copied = false;
	if (r == 0)
		r = fill_tree(src, dst_dirfd, l, &copied);
	close(src);
	if (r < 0)
		wq_listing_delete(l);
	else
		*out = l;
	return r;
}

/* Adds the bytes of the files of tree FD (closed here) to *BYTES, and raises *LINKS and
 * *CHANGED_NS to their largest link count and latest ctime. */
static int tree_stat(int fd, int depth, uint64_t *bytes, nlink_t *links, int64_t *changed_ns)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int r = -errno;
		close(fd);
		return r;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = depth >= WQ_LISTING_MAX_DEPTH
			              ? -ELOOP
			              : openat(dirfd(d), de->d_name,
			                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				r = sub == -ELOOP ? sub : -errno;
			else
				r = tree_stat(sub, depth + 1, bytes, links, changed_ns);
		} else if (S_ISREG(st.st_mode)) {
			int64_t ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
			*bytes += (uint64_t)st.st_size;
			if (st.st_nlink > *links)
				*links = st.st_nlink;
			if (ns > *changed_ns)
				*changed_ns = ns;
		}
	}
	closedir(d);
	return r;
}

/* The figures of directory object NAME: its files' bytes, their largest link count (1 when it
 * has no file: nobody can use it) and latest ctime (the directory's when it has no file). */
static int dir_object_stat(const struct worker_shared_cache *s, const char *name, uint64_t *bytes,
                           nlink_t *links, int64_t *changed_ns)
{
	*bytes = 0;
	*links = 1;
	struct stat st;
	if (fstatat(s->objects_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*changed_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	int fd = openat(s->objects_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return tree_stat(fd, 0, bytes, links, changed_ns);
}

/* Deletes directory object NAME (its lock held) when nobody links its files: it leaves
 * objects/ in one rename into DIR/.partial, flock'ed so that no sweep races the removal.
 * Returns 1 when deleted, 0 when in use, or -errno. */
static int delete_dir_object(const struct worker_shared_cache *s, const char *name)
{
	uint64_t bytes;
	nlink_t links;
	int64_t changed;
	int r = dir_object_stat(s, name, &bytes, &links, &changed);
	if (r < 0 || links != 1)
		return r < 0 ? r : 0;
	int fd = openat(s->objects_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!s->leases && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	char tmp[WORKER_CACHE_NAME_LEN + 48];
	/* unique while this process holds the object's lock */
	snprintf(tmp, sizeof tmp, "%s.%ld.del", name, (long)getpid());
	/* moving a directory needs write permission on it (its "..") */
	fchmod(fd, 0755);
	if (renameat(s->objects_fd, name, s->partial_fd, tmp) < 0) {
		r = -errno;
		fchmod(fd, 0555);
		close(fd);
		return r;
	}
	remove_partial(s, tmp);
	close(fd);
	return 1;
}

int worker_shared_cache_publish(struct worker_shared_cache *s, int src_dirfd, const char *name)
{
	if (!worker_cache_name_valid(name))
		return -EINVAL;
	int r;
	if (name[0] == 'D')
		r = publish_dir(s, src_dirfd, name);
	else if (linkat(src_dirfd, name, s->objects_fd, name, 0) == 0)
		r = 1;
	else if (errno == EEXIST)
		r = 0;
	else if (errno == EXDEV)
		r = publish_copy(s, src_dirfd, name);
	else
		r = -errno;
	if (r > 0)
		debug(D_WORKER, "shared cache: %s published", name);
	if (r >= 0 && s->limit > 0)
		worker_shared_cache_trim(s, s->limit);
	return r;
}

int worker_shared_cache_await(const struct worker_shared_cache *s, const char *name, uint64_t size)
{
	int lock = worker_shared_cache_lock(s, name, true);
	if (lock < 0)
		return lock;
	struct stat st;
	int r = 0;
	if (fstatat(s->objects_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	else if (name[0] == 'D')
		r = S_ISDIR(st.st_mode) ? 0 : -ENOENT; /* its size: worker_shared_cache_take_dir */
	else if (!S_ISREG(st.st_mode))
		r = -ENOENT;
	else if ((uint64_t)st.st_size != size)
		r = -EFBIG;
	if (r < 0) {
		worker_shared_cache_unlock(s, lock);
		return r;
	}
	return lock;
}

int worker_shared_cache_sweep(const struct worker_shared_cache *s)
{
	int err = 0;
	DIR *d = path_opendir_at(s->partial_fd, ".", &err);
	if (!d)
		return err;
	int n = 0;
	struct dirent *de;
	struct timespec now = {0, 0};
	if (s->leases && shared_leases_now(s->leases, &now) < 0)
		now.tv_sec = 0; /* no server time: nothing is old */
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (s->leases) {
			/* with leases, a temporary is its writer's while it changes */
			struct stat st;
			if (now.tv_sec > 0 &&
			    fstatat(s->partial_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    now.tv_sec - st.st_mtim.tv_sec > LEASE_STALE_TEMP_S) {
				if (S_ISDIR(st.st_mode))
					remove_partial(s, de->d_name);
				else if (unlinkat(s->partial_fd, de->d_name, 0) < 0)
					continue;
				n++;
			}
			continue;
		}
		struct stat st;
		if (fstatat(s->partial_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			/* a directory object being made or deleted: flock'ed by its process */
			int dfd = openat(s->partial_fd, de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd >= 0 && flock(dfd, LOCK_EX | LOCK_NB) == 0) {
				remove_partial(s, de->d_name);
				n++;
			}
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		int fd = openat(s->partial_fd, de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* Locked by its writer while written: one we can lock has no writer any more. */
		if (ofd_lock(fd, false) == 0 && unlinkat(s->partial_fd, de->d_name, 0) == 0)
			n++;
		close(fd);
	}
	closedir(d);
	if (s->leases)
		shared_leases_sweep(s->leases, LEASE_STALE_TEMP_S);
	return n;
}

int worker_shared_cache_users(const struct worker_shared_cache *s, const char *name)
{
	if (name[0] == 'D') {
		uint64_t bytes;
		nlink_t links;
		int64_t changed;
		int r = dir_object_stat(s, name, &bytes, &links, &changed);
		return r < 0 ? r : (int)links - 1;
	}
	struct stat st;
	if (fstatat(s->objects_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return (int)st.st_nlink - 1;
}

struct entry {
	char name[WORKER_CACHE_NAME_LEN + 1];
	uint64_t size;
	int64_t changed_ns;
	nlink_t links;
};

/* The objects of the store: *OUT (caller frees), their number, and *TOTAL bytes. */
static int list_objects(const struct worker_shared_cache *s, struct entry **out, size_t *count,
                        uint64_t *total)
{
	*out = NULL;
	*count = 0;
	*total = 0;
	int err = 0;
	DIR *d = path_opendir_at(s->objects_fd, ".", &err);
	if (!d)
		return err;
	size_t cap = 0;
	struct entry *v = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!worker_cache_name_valid(de->d_name) ||
		    fstatat(s->objects_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		struct entry x = {.size = (uint64_t)st.st_size, .links = st.st_nlink};
		x.changed_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
		if (de->d_name[0] == 'D'
		        ? dir_object_stat(s, de->d_name, &x.size, &x.links, &x.changed_ns) < 0
		        : !S_ISREG(st.st_mode))
			continue;
		memcpy(x.name, de->d_name, WORKER_CACHE_NAME_LEN + 1); /* a valid name: 66 chars */
		VEC_RESERVE(v, cap, *count + 1);
		v[(*count)++] = x;
		*total += x.size;
	}
	closedir(d);
	*out = v;
	return 0;
}

static int by_change(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->changed_ns < y->changed_ns ? -1 : x->changed_ns > y->changed_ns;
}

int worker_shared_cache_trim(const struct worker_shared_cache *s, uint64_t limit)
{
	struct entry *v;
	size_t n;
	uint64_t total;
	int r = list_objects(s, &v, &n, &total);
	if (r < 0)
		return r;
	qsort(v, n, sizeof *v, by_change);
	int deleted = 0;
	for (size_t i = 0; i < n && total > limit; i++) {
		if (v[i].links != 1)
			continue;
		int lock = worker_shared_cache_lock(s, v[i].name, false);
		if (lock < 0)
			continue; /* being taken or written: not now */
		struct stat st;
		if (v[i].name[0] == 'D'
		        ? delete_dir_object(s, v[i].name) == 1
		        : fstatat(s->objects_fd, v[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		              st.st_nlink == 1 && unlinkat(s->objects_fd, v[i].name, 0) == 0) {
			total -= v[i].size;
			deleted++;
			debug(D_WORKER, "shared cache: %s deleted (unused; store over its limit)",
			      v[i].name);
		}
		worker_shared_cache_unlock(s, lock);
	}
	free(v);
	return deleted;
}

int worker_shared_cache_stat(const struct worker_shared_cache *s, uint64_t *count, uint64_t *bytes)
{
	struct entry *v;
	size_t n;
	int r = list_objects(s, &v, &n, bytes);
	free(v);
	*count = n;
	return r;
}

int worker_shared_cache_foreach(const struct worker_shared_cache *s,
                                int (*cb)(const char *name, uint64_t size, void *arg), void *arg)
{
	struct entry *v;
	size_t n;
	uint64_t total;
	int r = list_objects(s, &v, &n, &total);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = cb(v[i].name, v[i].size, arg);
	free(v);
	return r < 0 ? r : 0;
}
