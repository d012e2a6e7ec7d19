/* test_rmon_util.h: what the resource_monitor unit tests share: finding the helper programs
 * (helper_*.c, built next to the test binaries). Each test is built from its own single file
 * and includes this header; the functions are static inline so that a test may leave some unused.
 */
#ifndef TEST_RMON_UTIL_H
#define TEST_RMON_UTIL_H

#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

/* Fills DIR (SIZE bytes) with the directory of the running test binary, where the helper
 * programs are built; leaves DIR as it is when /proc/self/exe cannot be read. */
static inline void test_helper_dir(char *dir, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", dir, size - 1);
	if (n > 0) {
		dir[n] = 0;
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
	}
}

/* Path of the helper program helper_NAME in DIR (from test_helper_dir()). Caller frees. */
static inline char *test_helper_path(const char *dir, const char *name)
{
	return xasprintf("%s/helper_%s", dir, name);
}

#endif
