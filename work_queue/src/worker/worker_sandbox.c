/* worker_sandbox.c: task sandboxes and link-free path resolution for the worker (protocol section
 * 6). Every name is resolved beneath a directory fd, with openat2 or with an O_NOFOLLOW walk,
 * so a link a task planted can never redirect a read or a write outside its sandbox. */
#include "worker_sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "beneath.h"
#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "dir_entries.h"
#include "path.h"
#include "wq_listing.h"
#include "xalloc.h"
#include "banned.h"

/* ---- sandboxes ---------------------------------------------------------------------------- */

struct worker_sandbox {
	int fd;
	int work_fd;
	int tmp_fd;
	char *path;
	char *work;
	char *tmp;
	char *workdir; /* as given to worker_sandbox_create (the pool's key) */
	enum beneath_resolve how;
};

/* ---- recycled sandboxes -------------------------------------------------------------------
 * Creating a sandbox costs three new inodes (the sandbox, work, tmp) and the stdout file a
 * fourth; on a busy worker with short tasks that is a large part of each task's cost. An
 * emptied sandbox is therefore renamed to WORKDIR/tasks/.free.<N> and renamed back for a later
 * task. The pool is per process and guarded by a mutex (recycling runs in the thread pool). */

#define POOL_MAX 64

struct pooled {
	char *workdir; /* which WORKDIR the entry belongs to */
	char *name;    /* .free.<N> beneath WORKDIR/tasks */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pooled pool[POOL_MAX];
static size_t pool_n;
static unsigned long long pool_serial;

/* Takes a pooled sandbox of WORKDIR and renames it to BASE beneath TFD. 1 when done (the
 * directory BASE exists and holds empty work and tmp), 0 when none could be used. */
static int pool_take(int tfd, const char *workdir, const char *base)
{
	for (;;) {
		char *name = NULL;
		pthread_mutex_lock(&pool_lock);
		for (size_t i = pool_n; i-- > 0;)
			if (strcmp(pool[i].workdir, workdir) == 0) {
				name = pool[i].name;
				free(pool[i].workdir);
				pool[i] = pool[--pool_n];
				break;
			}
		pthread_mutex_unlock(&pool_lock);
		if (!name)
			return 0;
		int r = renameat2(tfd, name, tfd, base, RENAME_NOREPLACE);
		free(name);
		if (r == 0)
			return 1;
		/* Gone (the tasks directory was cleaned) or BASE taken: try another one. */
	}
}

struct empty {
	const char *path;
	const char *const *keep;
	int *budget;
};

static int empty_entry(int dirfd, const char *n, unsigned char type, void *arg)
{
	(void)type; /* unlinkat says what it is */
	struct empty *e = arg;
	for (size_t i = 0; e->keep && e->keep[i]; i++)
		if (!strcmp(n, e->keep[i]))
			return 0;
	if (e->budget && (*e->budget)-- <= 0)
		return -EAGAIN;
	if (unlinkat(dirfd, n, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (e->budget)
		return -EAGAIN;
	char *p = path_join(e->path, n);
	int r = tree_remove(p);
	free(p);
	return r;
}

/* Removes every entry of the directory open as DIRFD (at PATH), keeping the names in KEEP.
 * Entries are unlinked without following links; directories are removed as trees. With BUDGET,
 * each entry removed costs one and a directory met stops the work: -EAGAIN once it is spent or
 * at a directory (what was removed stays removed). The listing starts from the directory's
 * start (DIRFD's offset, shared with the sandbox's descriptor, is where an earlier pass may
 * have stopped). */
static int empty_dir(int dirfd, const char *path, const char *const *keep, int *budget)
{
	struct empty e = {path, keep, budget};
	return dir_entries(dirfd, empty_entry, &e);
}

/* Empties SB and puts it in the pool. 0, or -errno when it could not be reused (the caller then
 * removes it); -EAGAIN when BUDGET (NULL: none, see empty_dir) ran out first. */
static int recycle(struct worker_sandbox *sb, int *budget)
{
	if (fchmod(sb->fd, 0700) < 0 || fchmod(sb->work_fd, 0755) < 0 ||
	    fchmod(sb->tmp_fd, 0700) < 0)
		return -errno;
	static const char *const keep_top[] = {"work", "tmp", "stdout", NULL};
	int r = empty_dir(sb->work_fd, sb->work, NULL, budget);
	if (r == 0)
		r = empty_dir(sb->tmp_fd, sb->tmp, NULL, budget);
	if (r == 0)
		r = empty_dir(sb->fd, sb->path, keep_top, budget);
	if (r < 0)
		return r;
	/* stdout is reused only when it is still a plain file of its own (one link): anything
	 * else a task may have put there is removed. */
	struct stat st;
	if (fstatat(sb->fd, "stdout", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		int fd = -1;
		if (S_ISREG(st.st_mode) && st.st_nlink == 1)
			fd = openat(sb->fd, "stdout",
			            O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		else if (unlinkat(sb->fd, "stdout", 0) < 0)
			return -errno;
	}
	char *tasks = path_dirname(sb->path);
	int tfd = open(tasks, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(tasks);
	if (tfd < 0)
		return -errno;
	char *workdir = xstrdup(sb->workdir);
	char *base = path_basename(sb->path);
	pthread_mutex_lock(&pool_lock);
	if (pool_n < POOL_MAX) {
		char *name = xasprintf(".free.%llu", ++pool_serial);
		if (renameat2(tfd, base, tfd, name, RENAME_NOREPLACE) == 0) {
			pool[pool_n].workdir = workdir;
			pool[pool_n].name = name;
			pool_n++;
			workdir = NULL;
		} else {
			r = -errno;
			free(name);
		}
	} else {
		r = -ENOSPC;
	}
	pthread_mutex_unlock(&pool_lock);
	free(workdir);
	free(base);
	close(tfd);
	return r;
}

int worker_sandbox_recycle_small(struct worker_sandbox *sb, int max_entries)
{
	int budget = max_entries;
	int r = recycle(sb, &budget);
	if (r == 0)
		debug(D_WORKER, "sandbox %s emptied for reuse", sb->path);
	return r;
}

int worker_sandbox_recycle(struct worker_sandbox *sb)
{
	int r = recycle(sb, NULL);
	if (r == 0) {
		debug(D_WORKER, "sandbox %s emptied for reuse", sb->path);
		return 0;
	}
	debug(D_WORKER, "sandbox %s not reused (%s): removing it", sb->path, strerror(-r));
	return worker_sandbox_remove(sb);
}

void worker_sandbox_pool_forget(const char *workdir)
{
	pthread_mutex_lock(&pool_lock);
	for (size_t i = pool_n; i-- > 0;)
		if (!workdir || strcmp(pool[i].workdir, workdir) == 0) {
			free(pool[i].workdir);
			free(pool[i].name);
			pool[i] = pool[--pool_n];
		}
	pthread_mutex_unlock(&pool_lock);
}

struct worker_sandbox *worker_sandbox_create(int workdir_fd, const char *workdir, uint64_t id,
                                             unsigned try_, enum beneath_resolve how)
{
	int err = 0;
	struct worker_sandbox *sb = xcalloc(1, sizeof(*sb));
	sb->fd = sb->work_fd = sb->tmp_fd = -1;
	sb->how = how;
	sb->workdir = xstrdup(workdir);
	char *base = xasprintf("%llu.%u", (unsigned long long)id, try_);
	char *tasks = path_join(workdir, "tasks");
	sb->path = path_join(tasks, base);
	sb->work = path_join(sb->path, "work");
	sb->tmp = path_join(sb->path, "tmp");
	free(tasks);
	int tfd = mkdir_beneath(workdir_fd, "tasks", 0755);
	if (tfd < 0) {
		err = -tfd;
		goto fail;
	}
	struct stat st;
	if (fstatat(tfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		debug(D_WORKER, "removing an old sandbox %s", sb->path);
		int r = tree_remove(sb->path);
		if (r < 0) {
			err = -r;
			close(tfd);
			goto fail;
		}
	}
	int reused = pool_take(tfd, workdir, base);
	if (!reused && mkdirat(tfd, base, 0700) < 0) {
		err = errno;
		close(tfd);
		goto fail;
	}
	sb->fd = openat(tfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(tfd);
	if (sb->fd < 0 ||
	    (!reused && (mkdirat(sb->fd, "work", 0755) < 0 || mkdirat(sb->fd, "tmp", 0700) < 0))) {
		err = errno;
		goto fail_rm;
	}
	sb->work_fd = openat(sb->fd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sb->work_fd < 0) {
		err = errno;
		goto fail_rm;
	}
	sb->tmp_fd = openat(sb->fd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sb->tmp_fd < 0) {
		err = errno;
		goto fail_rm;
	}
	free(base);
	return sb;
fail_rm:
	tree_remove(sb->path);
fail:
	debug(D_WORKER, "cannot create sandbox %s: %s", sb->path, strerror(err));
	free(base);
	worker_sandbox_delete(sb);
	errno = err;
	return NULL;
}

void worker_sandbox_delete(struct worker_sandbox *sb)
{
	if (!sb)
		return;
	if (sb->fd >= 0)
		close(sb->fd);
	if (sb->work_fd >= 0)
		close(sb->work_fd);
	if (sb->tmp_fd >= 0)
		close(sb->tmp_fd);
	free(sb->path);
	free(sb->work);
	free(sb->tmp);
	free(sb->workdir);
	free(sb);
}

int worker_sandbox_remove(struct worker_sandbox *sb)
{
	int r = tree_remove(sb->path);
	if (r < 0)
		warn("cannot remove sandbox %s: %s", sb->path, strerror(-r));
	return r;
}

const char *worker_sandbox_path(const struct worker_sandbox *sb)
{
	return sb->path;
}

const char *worker_sandbox_work_path(const struct worker_sandbox *sb)
{
	return sb->work;
}

const char *worker_sandbox_tmp_path(const struct worker_sandbox *sb)
{
	return sb->tmp;
}

int worker_sandbox_work_fd(const struct worker_sandbox *sb)
{
	return sb->work_fd;
}

int worker_sandbox_fd(const struct worker_sandbox *sb)
{
	return sb->fd;
}

#define TMP_NAME_SIZE 32

static void tmp_name(uint64_t xfer, char out[TMP_NAME_SIZE])
{
	snprintf(out, TMP_NAME_SIZE, ".in.%llu", (unsigned long long)xfer);
}

int worker_sandbox_tmp_open(struct worker_sandbox *sb, uint64_t xfer, bool exec)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	mode_t mode = exec ? 0755 : 0644;
	int fd = openat(sb->fd, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		int e = errno;
		close(fd);
		unlinkat(sb->fd, n, 0);
		return -e;
	}
	return fd;
}

int worker_sandbox_tmp_mkdir(struct worker_sandbox *sb, uint64_t xfer)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	if (mkdirat(sb->fd, n, 0755) < 0)
		return -errno;
	int fd = openat(sb->fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int worker_sandbox_tmp_commit(struct worker_sandbox *sb, uint64_t xfer, const char *name)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	return rename_beneath(sb->fd, n, sb->work_fd, name);
}

int worker_sandbox_tmp_discard(struct worker_sandbox *sb, uint64_t xfer)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	struct stat st;
	if (fstatat(sb->fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(sb->fd, n, 0) < 0 && errno != ENOENT ? -errno : 0;
	char *p = path_join(sb->path, n);
	int r = tree_remove(p);
	free(p);
	return r;
}

/* A cache object name is one plain component that does not start with a dot. */
static int check_object(const char *object)
{
	if (!object || !object[0] || object[0] == '.' || strchr(object, '/') ||
	    strlen(object) > NAME_MAX)
		return -EINVAL;
	return 0;
}

static int copy_fd(int src, int dst)
{
	char *buf = xmalloc(65536);
	int r = 0;
	for (;;) {
		ssize_t n = read(src, buf, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = full_write(dst, buf, (size_t)n);
		if (r < 0)
			break;
	}
	free(buf);
	return r;
}

/* Copies the regular file FROM of directory SRC to a new file TO of directory DST with MODE; a
 * partial copy is removed. 0 or -errno (-EINVAL: not a regular file). */
static int copy_in(int src, const char *from, int dst, const char *to, mode_t mode)
{
	int in = openat(src, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return -EINVAL;
	}
	int out = openat(dst, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0) {
		int r = -errno;
		close(in);
		return r;
	}
	int r = copy_fd(in, out);
	if (r == 0 && fchmod(out, mode) < 0)
		r = -errno;
	close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlinkat(dst, to, 0);
	return r;
}

/* Checks OBJECT and NAME and makes NAME's parent beneath work: its fd (caller closes), *LAST
 * pointing at NAME's last component; or -errno. */
static int place_parent(struct worker_sandbox *sb, const char *object, const char *name,
                        const char **last)
{
	int r = check_object(object);
	if (r == 0)
		r = beneath_check_name(name, false);
	if (r < 0)
		return r;
	char *parent;
	*last = beneath_split_last(name, &parent);
	int pfd = mkdir_beneath(sb->work_fd, parent, 0755);
	free(parent);
	return pfd;
}

int worker_sandbox_link_file(struct worker_sandbox *sb, int cache_dirfd, const char *object,
                             const char *name)
{
	const char *last;
	int pfd = place_parent(sb, object, name, &last);
	if (pfd < 0)
		return pfd;
	int r = linkat(cache_dirfd, object, pfd, last, 0) == 0 ? 0 : -errno;
	if (r == -EXDEV) {
		debug(D_WORKER, "linkat %s: cross-device, copying into %s", object, sb->work);
		r = copy_in(cache_dirfd, object, pfd, last, 0555);
	}
	close(pfd);
	return r;
}

int worker_sandbox_link_dir(struct worker_sandbox *sb, int cache_dirfd, const char *object,
                            const char *name)
{
	const char *last;
	int pfd = place_parent(sb, object, name, &last);
	if (pfd < 0)
		return pfd;
	int src = openat(cache_dirfd, object, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0) {
		int r = -errno;
		close(pfd);
		return r;
	}
	struct wq_listing *l = NULL;
	char *why = NULL;
	int r = wq_listing_walk(src, object, WQ_LISTING_NO_HASH, &l, &why);
	if (r < 0)
		debug(D_WORKER, "cache object %s: %s", object, why ? why : htc_strerror(r));
	free(why);
	int dst = -1;
	if (r == 0 && mkdirat(pfd, last, 0755) < 0)
		r = -errno;
	if (r == 0 &&
	    (dst = openat(pfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = -errno;
	/* its directories the task's own (it may add to them), its files the cache's, linked,
	 * or copied once linkat says the cache is on another file system */
	bool copy = false;
	for (size_t i = 0, n = wq_listing_count(l); r == 0 && i < n; i++) {
		const struct wq_listing_entry *e = wq_listing_get(l, i);
		if (e->is_dir)
			r = mkdirat(dst, e->path, 0755) < 0 ? -errno : 0;
		else if (!copy && linkat(src, e->path, dst, e->path, 0) == 0)
			r = 0;
		else if (!copy && errno != EXDEV)
			r = -errno;
		else {
			copy = true;
			r = copy_in(src, e->path, dst, e->path, e->exec ? 0555 : 0444);
		}
	}
	if (copy)
		debug(D_WORKER, "cache object %s: cross-device, copied into %s", object, sb->work);
	if (dst >= 0)
		close(dst);
	close(pfd);
	close(src);
	wq_listing_delete(l);
	return r;
}

int worker_sandbox_check_beneath(int dirfd, const char *name, bool want_dir,
                                 enum beneath_resolve how, int *fd_out, char **missing)
{
	if (fd_out)
		*fd_out = -1;
	*missing = NULL;
	int fd = open_beneath(dirfd, name, O_RDONLY | O_NOCTTY, 0, how);
	if (fd < 0) {
		if (fd == -ELOOP)
			*missing = xasprintf("is a symbolic link: %s", name);
		else if (fd == -ENOENT || fd == -ENOTDIR)
			*missing = xasprintf("does not exist: %s", name);
		else if (fd == -ENXIO)
			*missing = xasprintf("is not a regular file: %s", name);
		else
			*missing = xasprintf("cannot open: %s: %s", name, strerror(-fd));
		return fd == -ENXIO ? -EINVAL : fd;
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		*missing = xasprintf("cannot open: %s: %s", name, strerror(errno));
	} else if (want_dir && S_ISDIR(st.st_mode)) {
		struct wq_listing *l = NULL;
		char *why = NULL;
		r = wq_listing_walk(fd, name, WQ_LISTING_NO_HASH, &l, &why);
		wq_listing_delete(l);
		if (r < 0)
			*missing = why;
		else
			free(why);
	} else if (want_dir && S_ISREG(st.st_mode)) {
		r = -ENOTDIR;
		*missing = xasprintf("is not a directory: %s", name);
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		*missing = xasprintf("is not a regular file: %s", name);
	} else {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	if (r < 0 || !fd_out)
		close(fd);
	else
		*fd_out = fd;
	return r;
}

int worker_sandbox_check_output(struct worker_sandbox *sb, const char *name, bool want_dir,
                                int *fd_out, char **missing)
{
	return worker_sandbox_check_beneath(sb->work_fd, name, want_dir, sb->how, fd_out, missing);
}
