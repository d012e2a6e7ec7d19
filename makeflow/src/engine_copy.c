/* engine_copy.c: file and directory tree copies for the archive and the mounts. Data moves
 * with copy_file_range where the kernel offers it, else through a 64 KiB buffer. */
#include "engine_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_entries.h"
#include "full_io.h"
#include "path.h"
#include "xalloc.h"

#include "banned.h"

static int copy_data(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int r = full_write(out, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

static int copy_file(const char *src, const char *dst, mode_t mode, int sync)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		int r = -errno;
		close(in);
		return r;
	}
	int r = copy_data(in, out);
	if (r == 0)
		fchmod(out, mode & 07777);
	if (r == 0 && sync && fsync(out) < 0)
		r = -errno;
	if (close(out) < 0 && r == 0)
		r = -errno;
	close(in);
	return r;
}

struct tree {
	const char *src, *dst;
	int sync;
	int depth;
};

static int copy_at(const char *src, const char *dst, int sync, int depth, int follow);

static int on_entry(int dirfd, const char *name, unsigned char type, void *arg)
{
	(void)dirfd;
	(void)type;
	struct tree *t = arg;
	char *s = path_join(t->src, name);
	char *d = path_join(t->dst, name);
	int r = copy_at(s, d, t->sync, t->depth + 1, 0);
	free(s);
	free(d);
	return r;
}

static int copy_at(const char *src, const char *dst, int sync, int depth, int follow)
{
	if (depth > 256)
		return -ELOOP;
	struct stat st;
	if ((follow ? stat(src, &st) : lstat(src, &st)) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		return copy_file(src, dst, st.st_mode, sync);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(src, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
		return symlink(target, dst) < 0 ? -errno : 0;
	}
	if (!S_ISDIR(st.st_mode))
		return -EINVAL; /* devices, sockets and pipes are not copied */
	if (mkdir(dst, 0700) < 0)
		return -errno;
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct tree t = {src, dst, sync, depth};
	int r = dir_entries(fd, on_entry, &t);
	close(fd);
	if (r == 0 && chmod(dst, st.st_mode & 07777) < 0)
		r = -errno;
	return r;
}

int engine_copy(const char *src, const char *dst, int sync)
{
	return copy_at(src, dst, sync, 0, 1);
}

int engine_copy_replace(const char *src, const char *dst)
{
	char *dir = path_dirname(dst);
	char *base = path_basename(dst);
	char *tmp = xasprintf("%s/.%s.copy.%ld", dir, base, (long)getpid());
	free(dir);
	free(base);
	path_rm_rf(tmp);
	int r = engine_copy(src, tmp, 0);
	if (r == 0) {
		struct stat st;
		if (lstat(dst, &st) == 0 && S_ISDIR(st.st_mode))
			path_rm_rf(dst);
		if (rename(tmp, dst) < 0)
			r = -errno;
	}
	if (r < 0)
		path_rm_rf(tmp);
	free(tmp);
	return r;
}
