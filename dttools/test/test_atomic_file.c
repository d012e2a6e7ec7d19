/* test_atomic_file.c: unit tests for atomic file replacement
 * (atomic_file.h): new and replaced files, permission bits, and failures
 * that must leave the old content and no temporary files behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "path.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static size_t read_file(const char *p, char *buf, size_t size)
{
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, size, f);
	fclose(f);
	return n;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_create_and_replace(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_atomic_file");
	char *p = xasprintf("%s/state.json", dir);
	char buf[64];

	assert_int_equal(atomic_file_write(p, "first", 5, 0640), 0);
	assert_int_equal(read_file(p, buf, sizeof buf), 5);
	assert_memory_equal(buf, "first", 5);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);

	assert_int_equal(atomic_file_write(p, "second\0x", 8, 0600), 0);
	assert_int_equal(read_file(p, buf, sizeof buf), 8);
	assert_memory_equal(buf, "second\0x", 8);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	assert_int_equal(atomic_file_write(p, "", 0, 0644), 0);
	assert_int_equal(path_file_size(p), 0);
	assert_int_equal(count_entries(dir), 1);

	/* a large write */
	size_t big = 3 * 1024 * 1024 + 17;
	char *data = xmalloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)(i * 7);
	assert_int_equal(atomic_file_write(p, data, big, 0644), 0);
	assert_int_equal(path_file_size(p), (int64_t)big);
	free(data);
	assert_int_equal(count_entries(dir), 1);

	ts_tmpdir_remove(dir);
	free(p);
}

static void test_relative_path(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_atomic_file");
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(atomic_file_write("rel.txt", "abc", 3, 0644), 0);
	assert_int_equal(path_file_size("rel.txt"), 3);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(count_entries(dir), 1);
	ts_tmpdir_remove(dir);
}

static void test_failures_keep_old(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_atomic_file");
	char buf[64];

	/* missing directory */
	char *missing = xasprintf("%s/nope/file", dir);
	assert_int_equal(atomic_file_write(missing, "x", 1, 0644), -ENOENT);

	/* target is a non-empty directory: the rename fails after the temp
	 * file was written; it must be cleaned up */
	char *target = xasprintf("%s/target", dir);
	char *inner = xasprintf("%s/inner", target);
	assert_int_equal(path_mkdir_p(target, 0755), 0);
	assert_int_equal(atomic_file_write(inner, "old", 3, 0644), 0);
	int r = atomic_file_write(target, "new", 3, 0644);
	assert_true(r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST);
	assert_int_equal(count_entries(dir), 1);
	assert_int_equal(read_file(inner, buf, sizeof buf), 3);
	assert_memory_equal(buf, "old", 3);

	/* an unwritable directory (skipped as root, which ignores modes) */
	if (geteuid() != 0) {
		assert_int_equal(chmod(target, 0555), 0);
		assert_int_equal(atomic_file_write(inner, "new", 3, 0644), -EACCES);
		assert_int_equal(read_file(inner, buf, sizeof buf), 3);
		assert_memory_equal(buf, "old", 3);
		assert_int_equal(chmod(target, 0755), 0);
		assert_int_equal(count_entries(target), 1);
	}

	ts_tmpdir_remove(dir);
	free(inner);
	free(target);
	free(missing);
}

static void test_fsync_dir(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_atomic_file");
	assert_int_equal(fsync_dir(dir), 0);
	char *f = xasprintf("%s/f", dir);
	assert_int_equal(atomic_file_write(f, "x", 1, 0644), 0);
	assert_int_equal(fsync_dir(f), -ENOTDIR);
	char *missing = xasprintf("%s/missing", dir);
	assert_int_equal(fsync_dir(missing), -ENOENT);
	ts_tmpdir_remove(dir);
	free(missing);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_and_replace),
	    cmocka_unit_test(test_relative_path),
	    cmocka_unit_test(test_failures_keep_old),
	    cmocka_unit_test(test_fsync_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
