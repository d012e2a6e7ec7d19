/* full_io.h: reads and writes that retry what read(2) and write(2) may leave undone (EINTR,
 * short counts), for the places that need a whole range of a file, not whatever one call does. */
#ifndef HTC_FULL_IO_H
#define HTC_FULL_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Reads LEN bytes of FD at offset OFF into BUF, retrying short reads and EINTR. Fewer bytes
 * only when the file ends first. Returns the bytes read, or -errno. */
ssize_t full_pread(int fd, void *buf, size_t len, off_t off);

/* Writes LEN bytes at BUF to FD, all of them (retrying short writes and EINTR). Returns 0,
 * -ENOSPC for a full file system or quota (ENOSPC, EDQUOT, EFBIG), or another -errno. */
int full_write(int fd, const void *buf, size_t len);
/* The last MAX_LINES lines of the file at PATH, within its last MAX_BYTES bytes, as
 * str_tail_lines() cuts them; NULL when the file cannot be read or holds only newlines. */
char *full_read_tail(const char *path, int max_lines, size_t max_bytes);

#endif
