/* test_full_io.c: full_pread reads whole ranges, stops at the end of a file, and returns
 * -errno for a bad descriptor or a pipe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "full_io.h"
#include "banned.h"

static void test_ranges(void **state)
{
	(void)state;
	char path[] = "/tmp/test_full_io.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	char data[100000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 7);
	assert_int_equal(write(fd, data, sizeof data), (ssize_t)sizeof data);
	char buf[sizeof data];
	assert_int_equal(full_pread(fd, buf, sizeof buf, 0), (ssize_t)sizeof data);
	assert_memory_equal(buf, data, sizeof data);
	assert_int_equal(full_pread(fd, buf, 1000, 99500), 500); /* the file ends first */
	assert_memory_equal(buf, data + 99500, 500);
	assert_int_equal(full_pread(fd, buf, 10, 200000), 0);
	assert_int_equal(full_pread(fd, buf, 0, 0), 0);
	close(fd);
	assert_int_equal(full_pread(fd, buf, 10, 0), -EBADF);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(full_pread(p[0], buf, 10, 0), -ESPIPE);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
