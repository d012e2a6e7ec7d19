/* dir_entries.c: see dir_entries.h. */
#include "dir_entries.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "banned.h"

#define DENTS_BUF 8192 /* on the stack of each level of a recursive walk */

int dir_entries(int dirfd, dir_entry_fn fn, void *arg)
{
	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return -errno;
	/* aligned for the records getdents64 writes */
	union {
		char bytes[DENTS_BUF];
		struct dirent64 align;
	} buf;
	for (;;) {
		ssize_t n = getdents64(dirfd, buf.bytes, sizeof buf.bytes);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf.bytes + off);
			off += d->d_reclen;
			const char *name = d->d_name;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			int r = fn(dirfd, name, d->d_type, arg);
			if (r)
				return r;
		}
	}
}
