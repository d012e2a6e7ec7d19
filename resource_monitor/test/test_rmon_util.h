/* test_rmon_util.h: what the resource_monitor unit tests share: finding the helper programs
 * (helper_*.c, built next to the test binaries) and counting the cgroups of the test process. Each
 * test is built from its own single file and includes this header; the functions are static inline
 * so that a test may leave some unused.
 */
#ifndef TEST_RMON_UTIL_H
#define TEST_RMON_UTIL_H

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmon_proc.h"
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

/* Fills OUT (SIZE bytes) with this process's group in the v1 hierarchy CTRL (from
 * /proc/self/cgroup); "" when it is not listed. */
static inline void test_own_group(const char *ctrl, char *out, size_t size)
{
	char buf[4096];
	*out = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	size_t n = strlen(ctrl);
	while (fgets(buf, sizeof buf, f)) {
		char *c1 = strchr(buf, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 && strncmp(c1 + 1, ctrl, n) == 0 && c1[1 + n] == ':') {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(out, size, "%s", c2 + 1);
		}
	}
	fclose(f);
}

/* Number of groups of this process (htc.<pid>.<start>.*) in the v1 hierarchy CTRL. */
static inline int test_our_groups(const char *ctrl)
{
	char own[2048];
	test_own_group(ctrl, own, sizeof own);
	char *dir = xasprintf("/sys/fs/cgroup/%s%s/htc", ctrl, strcmp(own, "/") ? own : "");
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return 0;
	char prefix[64];
	snprintf(prefix, sizeof prefix, "htc.%ld.%llu.", (long)getpid(),
	         rmon_proc_start_ticks(getpid()));
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

#endif
