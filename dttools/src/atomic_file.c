/* atomic_file.c: write-temp, fsync, rename, fsync-directory file replacement
 * (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "xalloc.h"
#include "banned.h"

int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int atomic_file_write(const char *path, const void *data, size_t len, mode_t mode)
{
	int r = 0;
	int fd = -1;
	char *dir = path_dirname(path);
	char *base = path_basename(path);
	char *tmp = xasprintf("%s/.%s.tmp.XXXXXX", dir, base);

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (fchmod(fd, mode & 07777) < 0) {
		r = -errno;
		goto fail;
	}
	r = write_all(fd, data, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	int c = close(fd);
	fd = -1;
	if (c < 0) {
		r = -errno;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	r = fsync_dir(dir);
	goto out;

fail:
	if (fd >= 0)
		close(fd);
	fd = -1;
	unlink(tmp);
out:
	free(tmp);
	free(base);
	free(dir);
	return r;
}
