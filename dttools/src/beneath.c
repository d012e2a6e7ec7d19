/* beneath.c: file-system access beneath a directory fd that never follows a symbolic link
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a walk with O_NOFOLLOW), and removal of trees
 * that their owner made unwritable. The worker's sandboxes and cache and the transfer receiver
 * write through these, so a link a task planted can never redirect a read or a write. */
#include "beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "path.h"
#include "xalloc.h"
#include "banned.h"

/* ---- names -------------------------------------------------------------------------------- */

int beneath_check_name(const char *name, bool allow_empty)
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

const char *beneath_split_last(const char *name, char **parent)
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

int open_beneath(int dirfd, const char *name, int flags, mode_t mode, enum beneath_resolve how)
{
	int r = beneath_check_name(name, false);
	if (r < 0)
		return r;
	flags |= O_NOFOLLOW | O_CLOEXEC;
	if (!(flags & O_CREAT))
		flags |= O_NONBLOCK;
	if (how != BENEATH_RESOLVE_WALK) {
		r = open_openat2(dirfd, name, flags, mode);
		if (how == BENEATH_RESOLVE_OPENAT2 || (r != -ENOSYS && r != -EPERM && r != -E2BIG))
			return r;
		debug(D_WORKER, "openat2 unavailable (%s): walking %s", strerror(-r), name);
	}
	return open_walk(dirfd, name, flags, mode);
}

int mkdir_beneath(int dirfd, const char *name, mode_t mode)
{
	int r = beneath_check_name(name, true);
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

int create_beneath(int dirfd, const char *name, bool exec)
{
	int r = beneath_check_name(name, false);
	if (r < 0)
		return r;
	char *parent;
	const char *last = beneath_split_last(name, &parent);
	int pfd = mkdir_beneath(dirfd, parent, 0755);
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

int rename_beneath(int src_dirfd, const char *src_name, int dst_dirfd, const char *name)
{
	if (strchr(src_name, '/'))
		return -EINVAL;
	int r = beneath_check_name(src_name, false);
	if (r == 0)
		r = beneath_check_name(name, false);
	if (r < 0)
		return r;
	char *parent;
	const char *last = beneath_split_last(name, &parent);
	int pfd = mkdir_beneath(dst_dirfd, parent, 0755);
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
	int e = 0;
	DIR *d = path_opendir_at(top, ".", &e);
	if (!d)
		return e;
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

int tree_make_writable(int dirfd)
{
	return make_writable(dirfd, 0);
}

int tree_remove(const char *path)
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
	tree_make_writable(fd);
	close(fd);
	return path_rm_rf(path);
}
