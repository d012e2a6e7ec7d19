/* test_debug.c: unit tests for the logging facility (debug.h). */
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

#include "debug.h"
#include "banned.h"

static int calls;
static int count_call(void)
{
	return ++calls;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_flags_parse(void **state)
{
	(void)state;
	assert_int_equal(debug_flags_set("none"), 0);
	assert_int_equal(debug_enabled_flags, D_NOTICE);
	assert_int_equal(debug_flags_set("wq,batch"), 0);
	assert_true(debug_enabled_flags & D_WQ);
	assert_true(debug_enabled_flags & D_BATCH);
	assert_false(debug_enabled_flags & D_MAKEFLOW);
	assert_int_equal(debug_flags_set("all"), 0);
	assert_true(debug_enabled_flags & D_MAKEFLOW);
	assert_int_equal(debug_flags_set("none"), 0);
	assert_int_equal(debug_flags_set("wq,bogus"), -EINVAL);
	/* a failed parse leaves the previous set unchanged */
	assert_false(debug_enabled_flags & D_WQ);
}

static void test_disabled_is_not_evaluated(void **state)
{
	(void)state;
	calls = 0;
	debug_flags_set("none");
	debug(D_WQ, "value %d", count_call());
	assert_int_equal(calls, 0);
}

static void test_file_output(void **state)
{
	(void)state;
	char path[] = "/tmp/test_debug.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	debug_config_program("/usr/bin/prog");
	assert_int_equal(debug_config_file(path), 0);
	debug_flags_set("none");
	debug_flags_set("batch");
	debug(D_BATCH, "hello %s", "world");
	debug(D_WQ, "should not appear");
	debug_close();
	char *text = slurp(path);
	assert_non_null(strstr(text, "prog["));
	assert_non_null(strstr(text, "batch: hello world\n"));
	assert_null(strstr(text, "should not appear"));
	unlink(path);
	assert_int_equal(debug_config_file("/nonexistent-dir/x/y.log"), -ENOENT);
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

static void test_rotation(void **state)
{
	(void)state;
	char path[] = "/tmp/test_debug_rot.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	char old[64];
	snprintf(old, sizeof old, "%s.old", path);
	assert_int_equal(debug_config_file_size(-1), -EINVAL);
	assert_int_equal(debug_config_file_size(1000), 0);
	assert_int_equal(debug_config_file(path), 0);
	debug_flags_set("batch");
	/* each line is about 60 bytes: the file reaches 1000 bytes after ~17 lines */
	for (int i = 0; i < 25; i++)
		debug(D_BATCH, "line %02d of the rotation test", i);
	long cur = file_size(path), prev = file_size(old);
	assert_true(prev >= 1000); /* rotated once it held 1000 bytes or more */
	assert_true(cur > 0 && cur < 1000);
	assert_non_null(strstr(slurp(old), "line 00 of"));
	char *text = slurp(path);
	assert_non_null(strstr(text, "line 24 of"));
	assert_null(strstr(text, "line 00 of"));
	/* 0: never rotated */
	debug_close();
	unlink(old);
	assert_int_equal(debug_config_file_size(0), 0);
	assert_int_equal(debug_config_file(path), 0);
	for (int i = 0; i < 40; i++)
		debug(D_BATCH, "line %02d of the rotation test", i);
	debug_close();
	assert_true(file_size(path) > 2000);
	assert_int_equal(file_size(old), -1);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flags_parse),
	    cmocka_unit_test(test_disabled_is_not_evaluated),
	    cmocka_unit_test(test_file_output),
	    cmocka_unit_test(test_rotation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
