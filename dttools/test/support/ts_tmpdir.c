/* ts_tmpdir.c: temporary directories and file helpers of the tests (see ts_tmpdir.h). Removal goes
 * through dttools' tree_remove, the same code the worker uses for its sandboxes. */
#include "ts_tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beneath.h"
#include "path.h"
#include "xalloc.h"
#include "banned.h"

#define READ_MAX (1 << 20)

char *ts_tmpdir_create_in(const char *parent, const char *name)
{
	char *dir = xasprintf("%s/%s.XXXXXX", parent, name);
	if (!mkdtemp(dir))
		fail_msg("cannot make a temporary directory %s: %s", dir, strerror(errno));
	return dir;
}

char *ts_tmpdir_create(const char *name)
{
	const char *base = getenv("TMPDIR");
	return ts_tmpdir_create_in(base && *base ? base : "/tmp", name);
}

void ts_tmpdir_remove(char *dir)
{
	if (!dir)
		return;
	int r = tree_remove(dir);
	if (r < 0 || path_exists(dir)) {
		print_error("cannot remove %s: %s\n", dir, strerror(r < 0 ? -r : EEXIST));
		free(dir);
		fail();
	}
	free(dir);
}

void ts_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("cannot write %s: %s", path, strerror(errno));
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			close(fd);
			fail_msg("cannot write %s: %s", path, strerror(e));
		}
		done += (size_t)n;
	}
	close(fd);
}

char *ts_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = xmalloc(READ_MAX + 1);
	size_t got = 0;
	while (got < READ_MAX) {
		ssize_t n = read(fd, buf + got, READ_MAX - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	if (len)
		*len = got;
	return buf;
}
