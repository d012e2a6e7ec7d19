/* atomic_file.c: write-temp, fsync, rename, fsync-directory file replacement
 * (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "full_io.h"
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
	r = full_write(fd, data, len);
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
