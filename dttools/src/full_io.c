/* full_io.c: whole-range reads and writes (see full_io.h). */
#include "full_io.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

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
