/* wq_sandbox.c: task sandboxes and link-free path resolution for the worker (protocol section
 * 6). Every name is resolved beneath a directory fd, with openat2 or with an O_NOFOLLOW walk,
 * so a link a task planted can never redirect a read or a write outside its sandbox. */
#include "wq_sandbox.h"

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

#include "debug.h"
#include "dir_entries.h"
#include "path.h"
#include "wq_listing.h"
#include "xalloc.h"
#include "banned.h"

/* ---- names -------------------------------------------------------------------------------- */

/* Refuses what must never reach the file system, whatever the caller checked before. */
static int precheck(const char *name, bool allow_empty)
{
	if (!name)
		return -EINVAL;
	if (!name[0])
		return allow_empty ? 0 : -EINVAL;
	if (name[0] == '/')
		return -EXDEV;
	if (strlen(name) >= PATH_MAX)
		return -ENAMETOOLONG;
	const char *start = name;
	for (const char *p = name;; p++) {
		if (*p == '/' || *p == 0) {
			size_t n = (size_t)(p - start);
			if (n == 2 && start[0] == '.' && start[1] == '.')
				return -EXDEV;
			if (n == 0 || (n == 1 && start[0] == '.'))
				return -EINVAL;
			if (n > NAME_MAX)
				return -ENAMETOOLONG;
			if (*p == 0)
				break;
			start = p + 1;
		}
	}
	return 0;
}

/* After a failed open of COMP in FD with ENOTDIR: -ELOOP when COMP is a link. */
static int classify_enotdir(int fd, const char *comp, int err)
{
	struct stat st;
	if (err == ENOTDIR && fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return -err;
}

/* Splits NAME at its last slash: *PARENT gets a copy of the part before (or "" without a
 * slash; caller frees), and the return value points at the last component in NAME. */
static const char *split_last(const char *name, char **parent)
{
	const char *slash = strrchr(name, '/');
	if (!slash) {
		*parent = xstrdup("");
		return name;
	}
	*parent = xstrndup(name, (size_t)(slash - name));
	return slash + 1;
}

/* ---- opening beneath a directory ---------------------------------------------------------- */

static int open_openat2(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how;
	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(unsigned)flags;
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	long fd;
	do {
		fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	} while (fd < 0 && (errno == EINTR || errno == EAGAIN));
	return fd < 0 ? -errno : (int)fd;
}

static int open_walk(int dirfd, const char *name, int flags, mode_t mode)
{
	char *copy = xstrdup(name);
	int cur = dirfd;
	int r = 0;
	char *comp = copy;
	for (;;) {
		char *slash = strchr(comp, '/');
		if (!slash)
			break;
		*slash = 0;
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			r = classify_enotdir(cur, comp, errno);
		if (cur != dirfd)
			close(cur);
		if (next < 0)
			goto out;
		cur = next;
		comp = slash + 1;
	}
	int fd = openat(cur, comp, flags, mode);
	if (fd < 0)
		r = classify_enotdir(cur, comp, errno);
	else
		r = fd;
	if (cur != dirfd)
		close(cur);
out:
	free(copy);
	return r;
}

int wq_open_beneath(int dirfd, const char *name, int flags, mode_t mode, enum wq_resolve how)
{
	int r = precheck(name, false);
	if (r < 0)
		return r;
	flags |= O_NOFOLLOW | O_CLOEXEC;
	if (!(flags & O_CREAT))
		flags |= O_NONBLOCK;
	if (how != WQ_RESOLVE_WALK) {
		r = open_openat2(dirfd, name, flags, mode);
		if (how == WQ_RESOLVE_OPENAT2 || (r != -ENOSYS && r != -EPERM && r != -E2BIG))
			return r;
		debug(D_WORKER, "openat2 unavailable (%s): walking %s", strerror(-r), name);
	}
	return open_walk(dirfd, name, flags, mode);
}

int wq_mkdir_beneath(int dirfd, const char *name, mode_t mode)
{
	int r = precheck(name, true);
	if (r < 0)
		return r;
	if (!name[0]) {
		r = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return r < 0 ? -errno : r;
	}
	char *copy = xstrdup(name);
	int cur = dirfd;
	char *comp = copy;
	for (;;) {
		char *slash = strchr(comp, '/');
		if (slash)
			*slash = 0;
		if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			r = classify_enotdir(cur, comp, errno);
		if (cur != dirfd)
			close(cur);
		cur = dirfd;
		if (next < 0)
			break;
		cur = next;
		if (!slash) {
			r = cur;
			break;
		}
		comp = slash + 1;
	}
	if (r < 0 && cur != dirfd)
		close(cur);
	free(copy);
	return r;
}

int wq_create_beneath(int dirfd, const char *name, bool exec)
{
	int r = precheck(name, false);
	if (r < 0)
		return r;
	char *parent;
	const char *last = split_last(name, &parent);
	int pfd = wq_mkdir_beneath(dirfd, parent, 0755);
	free(parent);
	if (pfd < 0)
		return pfd;
	mode_t mode = exec ? 0755 : 0644;
	int fd = openat(pfd, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
	} else if (fchmod(fd, mode) < 0) {
		r = -errno;
		close(fd);
		unlinkat(pfd, last, 0);
	} else {
		r = fd;
	}
	close(pfd);
	return r;
}

int wq_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
				return -ENOSPC;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int wq_rename_beneath(int src_dirfd, const char *src_name, int dst_dirfd, const char *name)
{
	if (strchr(src_name, '/'))
		return -EINVAL;
	int r = precheck(src_name, false);
	if (r == 0)
		r = precheck(name, false);
	if (r < 0)
		return r;
	char *parent;
	const char *last = split_last(name, &parent);
	int pfd = wq_mkdir_beneath(dst_dirfd, parent, 0755);
	free(parent);
	if (pfd < 0)
		return pfd;
	r = renameat2(src_dirfd, src_name, pfd, last, RENAME_NOREPLACE) < 0 ? -errno : 0;
	close(pfd);
	return r;
}

/* ---- removal ------------------------------------------------------------------------------ */

#define MAX_CHMOD_DEPTH 4096

static int make_writable(int top, int depth)
{
	if (depth > MAX_CHMOD_DEPTH)
		return -ELOOP;
	struct stat st;
	if (fstat(top, &st) == 0 && (st.st_mode & 0700) != 0700)
		fchmod(top, (st.st_mode | 0700) & 07777);
	int fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	int r = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		/* AT_SYMLINK_NOFOLLOW: a directory swapped for a link is not chmod'ed through. */
		if ((st.st_mode & 0700) != 0700 &&
		    fchmodat(dirfd(d), de->d_name, (st.st_mode | 0700) & 07777,
		             AT_SYMLINK_NOFOLLOW) < 0 &&
		    r == 0)
			r = -errno;
		int sub =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		int rr = make_writable(sub, depth + 1);
		close(sub);
		if (rr < 0 && r == 0)
			r = rr;
	}
	closedir(d);
	return r;
}

int wq_tree_make_writable(int dirfd)
{
	return make_writable(dirfd, 0);
}

int wq_remove_tree(const char *path)
{
	int r = path_rm_rf(path);
	if (r != -EACCES && r != -EPERM)
		return r;
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return r;
	fchmodat(AT_FDCWD, path, (st.st_mode | 0700) & 07777, AT_SYMLINK_NOFOLLOW);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return r;
	wq_tree_make_writable(fd);
	close(fd);
	return path_rm_rf(path);
}

/* ---- sandboxes ---------------------------------------------------------------------------- */

struct wq_sandbox {
	int fd;
	int work_fd;
	int tmp_fd;
	char *path;
	char *work;
	char *tmp;
	char *workdir; /* as given to wq_sandbox_create (the pool's key) */
	enum wq_resolve how;
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
	int r = wq_remove_tree(p);
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
static int recycle(struct wq_sandbox *sb, int *budget)
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

int wq_sandbox_recycle_small(struct wq_sandbox *sb, int max_entries)
{
	int budget = max_entries;
	int r = recycle(sb, &budget);
	if (r == 0)
		debug(D_WORKER, "sandbox %s emptied for reuse", sb->path);
	return r;
}

int wq_sandbox_recycle(struct wq_sandbox *sb)
{
	int r = recycle(sb, NULL);
	if (r == 0) {
		debug(D_WORKER, "sandbox %s emptied for reuse", sb->path);
		return 0;
	}
	debug(D_WORKER, "sandbox %s not reused (%s): removing it", sb->path, strerror(-r));
	return wq_sandbox_remove(sb);
}

void wq_sandbox_pool_forget(const char *workdir)
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

struct wq_sandbox *wq_sandbox_create(int workdir_fd, const char *workdir, uint64_t id,
                                     unsigned try_, enum wq_resolve how)
{
	int err = 0;
	struct wq_sandbox *sb = xcalloc(1, sizeof(*sb));
	sb->fd = sb->work_fd = sb->tmp_fd = -1;
	sb->how = how;
	sb->workdir = xstrdup(workdir);
	char *base = xasprintf("%llu.%u", (unsigned long long)id, try_);
	char *tasks = path_join(workdir, "tasks");
	sb->path = path_join(tasks, base);
	sb->work = path_join(sb->path, "work");
	sb->tmp = path_join(sb->path, "tmp");
	free(tasks);
	int tfd = wq_mkdir_beneath(workdir_fd, "tasks", 0755);
	if (tfd < 0) {
		err = -tfd;
		goto fail;
	}
	struct stat st;
	if (fstatat(tfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		debug(D_WORKER, "removing an old sandbox %s", sb->path);
		int r = wq_remove_tree(sb->path);
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
	wq_remove_tree(sb->path);
fail:
	debug(D_WORKER, "cannot create sandbox %s: %s", sb->path, strerror(err));
	free(base);
	wq_sandbox_delete(sb);
	errno = err;
	return NULL;
}

void wq_sandbox_delete(struct wq_sandbox *sb)
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

int wq_sandbox_remove(struct wq_sandbox *sb)
{
	int r = wq_remove_tree(sb->path);
	if (r < 0)
		warn("cannot remove sandbox %s: %s", sb->path, strerror(-r));
	return r;
}

const char *wq_sandbox_path(const struct wq_sandbox *sb)
{
	return sb->path;
}

const char *wq_sandbox_work_path(const struct wq_sandbox *sb)
{
	return sb->work;
}

const char *wq_sandbox_tmp_path(const struct wq_sandbox *sb)
{
	return sb->tmp;
}

int wq_sandbox_work_fd(const struct wq_sandbox *sb)
{
	return sb->work_fd;
}

int wq_sandbox_fd(const struct wq_sandbox *sb)
{
	return sb->fd;
}

#define TMP_NAME_SIZE 32

static void tmp_name(uint64_t xfer, char out[TMP_NAME_SIZE])
{
	snprintf(out, TMP_NAME_SIZE, ".in.%llu", (unsigned long long)xfer);
}

int wq_sandbox_tmp_open(struct wq_sandbox *sb, uint64_t xfer, bool exec)
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

int wq_sandbox_tmp_mkdir(struct wq_sandbox *sb, uint64_t xfer)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	if (mkdirat(sb->fd, n, 0755) < 0)
		return -errno;
	int fd = openat(sb->fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int wq_sandbox_tmp_commit(struct wq_sandbox *sb, uint64_t xfer, const char *name)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	return wq_rename_beneath(sb->fd, n, sb->work_fd, name);
}

int wq_sandbox_tmp_discard(struct wq_sandbox *sb, uint64_t xfer)
{
	char n[TMP_NAME_SIZE];
	tmp_name(xfer, n);
	struct stat st;
	if (fstatat(sb->fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(sb->fd, n, 0) < 0 && errno != ENOENT ? -errno : 0;
	char *p = path_join(sb->path, n);
	int r = wq_remove_tree(p);
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
		r = wq_write_all(dst, buf, (size_t)n);
		if (r < 0)
			break;
	}
	free(buf);
	return r;
}

int wq_sandbox_link_file(struct wq_sandbox *sb, int cache_dirfd, const char *object,
                         const char *name)
{
	int r = check_object(object);
	if (r == 0)
		r = precheck(name, false);
	if (r < 0)
		return r;
	char *parent;
	const char *last = split_last(name, &parent);
	int pfd = wq_mkdir_beneath(sb->work_fd, parent, 0755);
	free(parent);
	if (pfd < 0)
		return pfd;
	if (linkat(cache_dirfd, object, pfd, last, 0) == 0)
		goto out;
	r = -errno;
	if (r != -EXDEV)
		goto out;
	debug(D_WORKER, "linkat %s: cross-device, copying into %s", object, sb->work);
	int src = openat(cache_dirfd, object, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (src < 0) {
		r = -errno;
		goto out;
	}
	struct stat st;
	if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = -EINVAL;
		close(src);
		goto out;
	}
	int dst = openat(pfd, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0555);
	if (dst < 0) {
		r = -errno;
		close(src);
		goto out;
	}
	r = copy_fd(src, dst);
	if (r == 0 && fchmod(dst, 0555) < 0)
		r = -errno;
	close(src);
	if (close(dst) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlinkat(pfd, last, 0);
out:
	close(pfd);
	return r;
}

int wq_sandbox_link_dir(struct wq_sandbox *sb, const char *cache_path, const char *object,
                        const char *name)
{
	int r = check_object(object);
	if (r == 0)
		r = precheck(name, false);
	if (r < 0)
		return r;
	if (!path_is_absolute(cache_path))
		return -EINVAL;
	char *parent;
	const char *last = split_last(name, &parent);
	int pfd = wq_mkdir_beneath(sb->work_fd, parent, 0755);
	free(parent);
	if (pfd < 0)
		return pfd;
	char *target = path_join(cache_path, object);
	r = symlinkat(target, pfd, last) < 0 ? -errno : 0;
	free(target);
	close(pfd);
	return r;
}

int wq_check_output_beneath(int dirfd, const char *name, bool want_dir, enum wq_resolve how,
                            int *fd_out, char **missing)
{
	if (fd_out)
		*fd_out = -1;
	*missing = NULL;
	int fd = wq_open_beneath(dirfd, name, O_RDONLY | O_NOCTTY, 0, how);
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

int wq_sandbox_check_output(struct wq_sandbox *sb, const char *name, bool want_dir, int *fd_out,
                            char **missing)
{
	return wq_check_output_beneath(sb->work_fd, name, want_dir, sb->how, fd_out, missing);
}
