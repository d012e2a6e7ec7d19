/* full_io.c: whole-range reads and writes, and a file's last lines (see full_io.h). */
#include "full_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

ssize_t full_pread(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *b = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, b + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int full_write(int fd, const void *buf, size_t len)
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

char *full_read_tail(const char *path, int max_lines, size_t max_bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *tail = NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		size_t want = (size_t)st.st_size < max_bytes ? (size_t)st.st_size : max_bytes;
		char *buf = xmalloc(want);
		ssize_t n = full_pread(fd, buf, want, st.st_size - (off_t)want);
		if (n > 0)
			tail = str_tail_lines(buf, (size_t)n, max_lines, max_bytes);
		free(buf);
	}
	close(fd);
	return tail;
}
