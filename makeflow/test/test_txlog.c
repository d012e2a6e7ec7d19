/* test_txlog.c: unit tests for the transaction log: round trip, name
 * encoding, torn tails, corruption and version checks, writes cut short,
 * the run id and the workflow's lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "htc_error.h"
#include "txlog.h"
#include "banned.h"

struct seen {
	int n;
	char types[64];
	char names[8][128];
	int nnames;
	int64_t ids[8];
	uint64_t keys[8];
	int nids;
};

static int collect(const struct txlog_record *r, void *arg)
{
	struct seen *s = arg;
	s->types[s->n++] = r->type;
	if (r->type == 'F' && s->nnames < 8)
		snprintf(s->names[s->nnames++], 128, "%s", r->name);
	if (r->type == 'N' && s->nids < 8) {
		s->ids[s->nids] = r->node_id;
		s->keys[s->nids++] = r->key;
	}
	return 0;
}

static void tmp_path(char *buf, size_t n)
{
	snprintf(buf, n, "/tmp/test_txlog.%d.%d", (int)getpid(), rand());
}

static void write_sample(const char *path)
{
	struct txlog *t = txlog_open(path, "My Makeflow", -1);
	assert_non_null(t);
	assert_int_equal(txlog_start(t, 42, 3, "0123456789abcdef0123456789abcdef"), 0);
	assert_int_equal(txlog_file(t, TXLOG_FILE_SOURCE, 10, 123, "in put.txt"), 0);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_RUNNING, 0xdeadbeefcafef00dULL), 0);
	assert_int_equal(txlog_file(t, TXLOG_FILE_EXISTS, 5, 456, "weird%name\nwith newline"), 0);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_COMPLETE, 0xdeadbeefcafef00dULL), 0);
	assert_int_equal(txlog_end(t, 0, "complete"), 0);
	txlog_close(t);
}

static void test_round_trip(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof path);
	write_sample(path);
	struct seen s;
	memset(&s, 0, sizeof s);
	char err[512];
	off_t end = -1;
	int torn = -1;
	assert_int_equal(txlog_read(path, "My Makeflow", collect, &s, &end, &torn, err, sizeof err),
	                 0);
	assert_int_equal(s.n, 6);
	assert_memory_equal(s.types, "SFNFNE", 6);
	assert_string_equal(s.names[0], "in put.txt");
	assert_string_equal(s.names[1], "weird%name\nwith newline");
	assert_int_equal(s.keys[1], 0xdeadbeefcafef00dULL);
	assert_int_equal(torn, 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(end, st.st_size);
	/* Reopening appends without a second header. */
	struct txlog *t = txlog_open(path, "My Makeflow", -1);
	assert_int_equal(txlog_node(t, 1, TXLOG_NODE_RUNNING, 1), 0);
	txlog_close(t);
	memset(&s, 0, sizeof s);
	assert_int_equal(txlog_read(path, NULL, collect, &s, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(s.n, 7);
	unlink(path);
}

static void test_torn_tail(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof path);
	write_sample(path);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	off_t full = st.st_size;
	/* Cut the file at every byte of the last record: always read as torn. */
	for (off_t cut = full - 1; cut > full - 20; cut--) {
		assert_int_equal(truncate(path, cut), 0);
		struct seen s;
		memset(&s, 0, sizeof s);
		char err[512];
		off_t end;
		int torn;
		assert_int_equal(txlog_read(path, NULL, collect, &s, &end, &torn, err, sizeof err),
		                 0);
		assert_int_equal(s.n, 5);
		assert_int_equal(torn, 1);
		assert_true(end < cut);
		/* Appending after cutting the torn tail yields a clean log. */
		struct txlog *t = txlog_open(path, "x", end);
		assert_non_null(t);
		assert_int_equal(txlog_end(t, 2, "aborted"), 0);
		txlog_close(t);
		memset(&s, 0, sizeof s);
		assert_int_equal(txlog_read(path, NULL, collect, &s, &end, &torn, err, sizeof err),
		                 0);
		assert_int_equal(s.n, 6);
		assert_int_equal(torn, 0);
		write_sample(path); /* restore: appends a second sample */
		unlink(path);
		write_sample(path);
	}
	unlink(path);
}

static void test_corrupt_middle(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof path);
	write_sample(path);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	/* Flip one character of the third line (a file record). */
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf, f);
	int nl = 0;
	size_t i;
	for (i = 0; i < n && nl < 2; i++)
		if (buf[i] == '\n')
			nl++;
	buf[i + 5] = buf[i + 5] == '1' ? '2' : '1';
	fseek(f, 0, SEEK_SET);
	fwrite(buf, 1, n, f);
	fclose(f);
	char err[512];
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err),
	                 HTC_ECORRUPT);
	assert_non_null(strstr(err, ":3: corrupt record"));
	unlink(path);
}

static void test_header_checks(void **state)
{
	(void)state;
	char path[128], err[512];
	tmp_path(path, sizeof path);
	FILE *f = fopen(path, "w");
	fputs("#htc-makeflow-log 99 wf\n", f);
	fclose(f);
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err),
	                 HTC_EVERSION);
	assert_non_null(strstr(err, "version 99 is not supported"));
	f = fopen(path, "w");
	fputs("hello world\n", f);
	fclose(f);
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err),
	                 HTC_ECORRUPT);
	assert_non_null(strstr(err, "not a makeflow transaction log"));
	write_sample(path);
	unlink(path);
	write_sample(path);
	assert_int_equal(txlog_read(path, "Other", NULL, NULL, NULL, NULL, err, sizeof err),
	                 HTC_ECORRUPT);
	assert_non_null(strstr(err, "belongs to workflow"));
	unlink(path);
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err), -ENOENT);
}

/* A write function that writes half of what it is given and then fails as a full disk does,
 * while short_armed is set. */
static int short_armed;
static ssize_t short_write(int fd, const void *buf, size_t len)
{
	if (!short_armed)
		return write(fd, buf, len);
	short_armed = 0;
	ssize_t w = write(fd, buf, len / 2);
	if (w < 0)
		return w;
	(void)w;
	errno = ENOSPC;
	return -1;
}

/* A record cut short by a full disk is removed before the next one is written: the log stays
 * readable, with every record that was written whole. */
static void test_short_write_repaired(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof path);
	struct txlog *t = txlog_open(path, "Makeflow", -1);
	assert_non_null(t);
	assert_int_equal(txlog_start(t, 1, 2, NULL), 0);
	txlog_set_write_fn(t, short_write);
	short_armed = 1;
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_RUNNING, 7), -ENOSPC);
	assert_int_equal(txlog_error(t), -ENOSPC);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	off_t after_fail = st.st_size;
	/* space came back: the next records are whole lines after the repaired tail */
	assert_int_equal(txlog_node(t, 1, TXLOG_NODE_RUNNING, 8), 0);
	short_armed = 1;
	assert_int_equal(txlog_file(t, TXLOG_FILE_EXISTS, 1, 2, "out"), -ENOSPC);
	assert_int_equal(txlog_end(t, 1, "log-full"), 0);
	assert_int_equal(txlog_error(t), -ENOSPC);
	txlog_close(t);

	struct seen s;
	memset(&s, 0, sizeof s);
	char err[256] = "";
	off_t good = -1;
	int torn = -1;
	assert_int_equal(txlog_read(path, "Makeflow", collect, &s, &good, &torn, err, sizeof err),
	                 0);
	assert_int_equal(torn, 0);
	assert_int_equal(s.n, 3);
	assert_memory_equal(s.types, "SNE", 3);
	assert_int_equal(s.ids[0], 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(good, st.st_size);
	assert_true(after_fail < st.st_size);
	unlink(path);
}

static int get_run_id(const struct txlog_record *r, void *arg)
{
	if (r->type == 'S')
		snprintf(arg, 64, "%s", r->run_id ? r->run_id : "(none)");
	return 0;
}

/* The run id is recorded in the S record; an S record without one (older logs) still reads. */
static void test_run_id(void **state)
{
	(void)state;
	char id[TXLOG_RUN_ID_LEN + 1], id2[TXLOG_RUN_ID_LEN + 1];
	assert_int_equal(txlog_new_run_id(id), 0);
	assert_int_equal(txlog_new_run_id(id2), 0);
	assert_int_equal(strlen(id), TXLOG_RUN_ID_LEN);
	assert_int_equal(strspn(id, "0123456789abcdef"), TXLOG_RUN_ID_LEN);
	assert_string_not_equal(id, id2);
	char path[128], got[64] = "";
	tmp_path(path, sizeof path);
	struct txlog *t = txlog_open(path, "Makeflow", -1);
	assert_non_null(t);
	assert_int_equal(txlog_start(t, 1, 1, id), 0);
	txlog_close(t);
	char err[256];
	assert_int_equal(txlog_read(path, NULL, get_run_id, got, NULL, NULL, err, sizeof err), 0);
	assert_string_equal(got, id);
	t = txlog_open(path, "Makeflow", -1);
	assert_int_equal(txlog_start(t, 1, 1, NULL), 0);
	txlog_close(t);
	assert_int_equal(txlog_read(path, NULL, get_run_id, got, NULL, NULL, err, sizeof err), 0);
	assert_string_equal(got, "(none)");
	unlink(path);
}

/* In a child process: tries the lock of PATH and exits 0 if it was refused and told PID
 * (the holder), 1 if it was refused otherwise, 2 if it got it. */
static int try_lock_in_child(const char *path, pid_t holder_expected)
{
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		long holder = -1;
		struct txlog_lock *l = txlog_lock(path, &holder);
		if (l)
			_exit(2);
		_exit(errno == EWOULDBLOCK && holder == (long)holder_expected ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The workflow's lock: another process is refused and told the holder's PID; after release the
 * lock file is gone and the lock can be taken again. */
static void test_lock(void **state)
{
	(void)state;
	char path[128], lockpath[160];
	tmp_path(path, sizeof path);
	snprintf(lockpath, sizeof lockpath, "%s.lock", path);
	long holder = -1;
	struct txlog_lock *l = txlog_lock(path, &holder);
	assert_non_null(l);
	assert_int_equal(access(lockpath, F_OK), 0);
	assert_int_equal(try_lock_in_child(path, getpid()), 0);
	txlog_unlock(l);
	assert_int_equal(access(lockpath, F_OK), -1);
	l = txlog_lock(path, &holder);
	assert_non_null(l);
	txlog_unlock(l);
	txlog_unlock(NULL);
}

/* A holder killed while a child of its own still has the lock's descriptor (a job between
 * fork and exec) leaves the lock free: the child does not hold it. */
static void test_lock_not_kept_by_children(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof path);
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t holder_pid = fork();
	assert_true(holder_pid >= 0);
	if (holder_pid == 0) {
		long h;
		struct txlog_lock *l = txlog_lock(path, &h);
		if (!l)
			_exit(1);
		pid_t g = fork(); /* keeps every descriptor, as a job before its exec */
		if (g == 0) {
			close(ready[0]);
			pid_t me = getpid();
			if (write(ready[1], &me, sizeof me) != (ssize_t)sizeof me)
				_exit(1);
			pause();
			_exit(0);
		}
		_exit(g > 0 ? 0 : 1); /* the holder dies without unlocking */
	}
	close(ready[1]);
	int st;
	assert_int_equal(waitpid(holder_pid, &st, 0), holder_pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid_t grandchild; /* it lives on, with the descriptor */
	assert_int_equal(read(ready[0], &grandchild, sizeof grandchild),
	                 (ssize_t)sizeof grandchild);
	close(ready[0]);
	long holder = -1;
	struct txlog_lock *l = txlog_lock(path, &holder);
	kill(grandchild, SIGKILL); /* not our child: init reaps it */
	assert_non_null(l);
	txlog_unlock(l);
	char lockpath[160];
	snprintf(lockpath, sizeof lockpath, "%s.lock", path);
	unlink(lockpath);
}

static void test_encode(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(txlog_encode_name("a b", out, sizeof out), 5);
	assert_string_equal(out, "a%20b");
	assert_int_equal(txlog_encode_name("", out, sizeof out), HTC_EPARSE);
	assert_int_equal(txlog_encode_name("abcdefgh", out, 4), HTC_ETOOBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_torn_tail),
	    cmocka_unit_test(test_corrupt_middle),
	    cmocka_unit_test(test_header_checks),
	    cmocka_unit_test(test_encode),
	    cmocka_unit_test(test_short_write_repaired),
	    cmocka_unit_test(test_run_id),
	    cmocka_unit_test(test_lock),
	    cmocka_unit_test(test_lock_not_kept_by_children),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
