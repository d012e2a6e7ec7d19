/* test_dir_entries.c: dir_entries lists every entry but . and .. with its type, from the start
 * each time (also after a partial listing), stops when the callback says so, lets the callback
 * remove what it is given, lists a directory larger than one read, and gives -ENOTDIR for a
 * file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_entries.h"
#include "path.h"
#include "ts_tmpdir.h"
#include "banned.h"

struct seen {
	int files, dirs, total, stop_at;
	int unlink_them;
};

static int count(int dirfd, const char *name, unsigned char type, void *arg)
{
	struct seen *s = arg;
	s->total++;
	if (type == DT_DIR)
		s->dirs++;
	else if (type == DT_REG)
		s->files++;
	if (s->unlink_them && type == DT_REG)
		assert_int_equal(unlinkat(dirfd, name, 0), 0);
	if (s->stop_at && s->total == s->stop_at)
		return 42;
	return 0;
}

static void test_listing(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_dir_entries");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	/* more entries than one 8 KiB read holds */
	for (int i = 0; i < 700; i++) {
		char n[64];
		snprintf(n, sizeof n, "a-rather-long-file-name-to-fill-the-buffer-%04d", i);
		int fd = openat(dfd, n, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(mkdirat(dfd, "sub", 0755), 0);

	struct seen s = {0};
	assert_int_equal(dir_entries(dfd, count, &s), 0);
	assert_int_equal(s.files, 700);
	assert_int_equal(s.dirs, 1);
	assert_int_equal(s.total, 701);

	struct seen part = {.stop_at = 5};
	assert_int_equal(dir_entries(dfd, count, &part), 42);
	assert_int_equal(part.total, 5);
	/* from the start again, although the offset was left in the middle */
	struct seen again = {0};
	assert_int_equal(dir_entries(dfd, count, &again), 0);
	assert_int_equal(again.total, 701);

	struct seen rm = {.unlink_them = 1};
	assert_int_equal(dir_entries(dfd, count, &rm), 0);
	struct seen left = {0};
	assert_int_equal(dir_entries(dfd, count, &left), 0);
	assert_int_equal(left.files, 0);
	assert_int_equal(left.dirs, 1);

	int f = openat(dfd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(f >= 0);
	struct seen none = {0};
	assert_int_equal(dir_entries(f, count, &none), -ENOTDIR);
	assert_int_equal(none.total, 0);
	close(f);
	close(dfd);
	ts_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_listing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
