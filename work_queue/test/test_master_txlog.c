/* test_master_txlog.c: unit tests of the master's transactions log: the header written once,
 * every kind of line with a fixed clock compared to the expected text, escaping of names, bad
 * arguments refused, and appending to an existing log. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "master_txlog.h"
#include "ts_tmpdir.h"

#include "banned.h"

static char *dir;
static char path[256];

static char *slurp(void)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	dir = ts_tmpdir_create("test_master_txlog");
	snprintf(path, sizeof path, "%s/tx.log", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ts_tmpdir_remove(dir);
	dir = NULL;
	return 0;
}

static void test_lines(void **state)
{
	(void)state;
	unlink(path);
	struct master_txlog *l = master_txlog_open(path);
	assert_non_null(l);
	master_txlog_set_clock(l, 1763900000000000LL);
	long pid = (long)getpid();

	struct rmsummary r;
	rmsummary_init(&r);
	r.v[RM_CORES] = 2;
	r.v[RM_MEMORY] = 3900;
	r.v[RM_DISK] = 9000;
	r.v[RM_GPUS] = 0;
	r.v[RM_WALL_TIME] = 12; /* not an allocated resource: left out of resource lines */

	assert_int_equal(master_txlog_master_start(l, 9123, "blast"), 0);
	assert_int_equal(master_txlog_worker_connect(l, "3f2a", "127.0.0.1:40122", "node 17"), 0);
	assert_int_equal(master_txlog_worker_resources(l, "3f2a", &r), 0);
	assert_int_equal(master_txlog_task(l, 17, "WAITING", "blast FIRST_RESOURCES", &r), 0);
	assert_int_equal(master_txlog_task(l, 17, "RETRIEVED", "SUCCESS 0", &r), 0);
	assert_int_equal(master_txlog_task(l, 17, "DONE", "SUCCESS 0", NULL), 0);
	assert_int_equal(master_txlog_transfer(l, 0, 17, "ref data.fa", 1048576, 0.012, 1), 0);
	assert_int_equal(master_txlog_category(l, "blast", "FIRST", &r), 0);
	assert_int_equal(master_txlog_worker_disconnect(l, "3f2a", MASTER_TXLOG_LEAVE_LOST), 0);
	assert_int_equal(master_txlog_master_start(l, 9124, NULL), 0);
	assert_int_equal(master_txlog_master_end(l), 0);
	master_txlog_close(l);

	char expected[4096];
	snprintf(expected, sizeof expected,
	         "# time pid MASTER|WORKER|TASK|TRANSFER|CATEGORY ...\n"
	         "1763900000000000 %ld MASTER START 9123 blast\n"
	         "1763900000000000 %ld WORKER 3f2a CONNECTION 127.0.0.1:40122 node%%2017\n"
	         "1763900000000000 %ld WORKER 3f2a RESOURCES "
	         "{\"cores\":2,\"gpus\":0,\"memory\":3900,\"disk\":9000}\n"
	         "1763900000000000 %ld TASK 17 WAITING blast FIRST_RESOURCES "
	         "{\"cores\":2,\"gpus\":0,\"memory\":3900,\"disk\":9000}\n"
	         "1763900000000000 %ld TASK 17 RETRIEVED SUCCESS 0 "
	         "{\"wall_time\":12,\"cores\":2,\"gpus\":0,\"memory\":3900,\"disk\":9000}\n"
	         "1763900000000000 %ld TASK 17 DONE SUCCESS 0\n"
	         "1763900000000000 %ld TRANSFER INPUT 17 ref%%20data.fa 1048576 0.012000 cache\n"
	         "1763900000000000 %ld CATEGORY blast FIRST "
	         "{\"cores\":2,\"gpus\":0,\"memory\":3900,\"disk\":9000}\n"
	         "1763900000000000 %ld WORKER 3f2a DISCONNECTION LOST\n"
	         "1763900000000000 %ld MASTER START 9124 -\n"
	         "1763900000000000 %ld MASTER END\n",
	         pid, pid, pid, pid, pid, pid, pid, pid, pid, pid, pid);
	assert_string_equal(slurp(), expected);
	rmsummary_clear(&r);
}

static void test_append_and_bad_arguments(void **state)
{
	(void)state;
	unlink(path);
	struct master_txlog *l = master_txlog_open(path);
	assert_int_equal(master_txlog_master_start(l, 1, "p"), 0);
	master_txlog_close(l);
	l = master_txlog_open(path); /* appends; no second header */
	assert_int_equal(master_txlog_master_end(l), 0);
	assert_int_equal(master_txlog_task(l, 1, "TWO WORDS", NULL, NULL), -EINVAL);
	assert_int_equal(master_txlog_task(l, 1, "DONE", "a\nb", NULL), -EINVAL);
	assert_int_equal(master_txlog_task(l, 1, "", NULL, NULL), -EINVAL);
	struct rmsummary r;
	rmsummary_init(&r);
	assert_int_equal(master_txlog_category(l, "c", "LARGEST", &r), -EINVAL);
	master_txlog_close(l);
	master_txlog_close(NULL);
	const char *s = slurp();
	int headers = 0, lines = 0;
	for (const char *p = s; *p; p++)
		if (*p == '\n')
			lines++;
	for (const char *p = s; (p = strstr(p, "# time")); p++)
		headers++;
	assert_int_equal(headers, 1);
	assert_int_equal(lines, 3);
	/* the real clock: a plausible instant (after 2020) */
	assert_true(atoll(strchr(s, '\n') + 1) > 1577836800000000LL);

	assert_null(master_txlog_open("/nonexistent-dir/tx.log"));
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines),
	    cmocka_unit_test(test_append_and_bad_arguments),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
