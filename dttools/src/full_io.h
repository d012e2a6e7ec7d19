/* full_io.h: reads that retry what read(2) may leave undone (EINTR, short counts), for the
 * places that need a whole range of a file, not whatever one call returns. */
#ifndef HTC_FULL_IO_H
#define HTC_FULL_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Reads LEN bytes of FD at offset OFF into BUF, retrying short reads and EINTR. Fewer bytes
 * only when the file ends first. Returns the bytes read, or -errno. */
ssize_t full_pread(int fd, void *buf, size_t len, off_t off);

#endif
