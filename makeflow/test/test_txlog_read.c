/* test_txlog_read.c: unit tests of the incremental transaction-log reader: a log written by
 * txlog.c read whole and byte by byte, partial lines kept for the next feed, corrupt records
 * and lines named by file:line, a CCTools log refused, restarts, the recent rate, and a file
 * followed as it grows, is cut back, or is replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "htc_error.h"
#include "txlog.h"
#include "txlog_read.h"

#include "ts_tmpdir.h"
#include "banned.h"

#define HEADER "#htc-makeflow-log 1 Makeflow\n"

/* Appends record TEXT (without its CRC) with its CRC and newline to BUF (SIZE bytes). */
static void rec(char *buf, size_t size, const char *text)
{
	size_t used = strlen(buf);
	uLong crc = crc32(0L, (const Bytef *)text, (uInt)strlen(text));
	snprintf(buf + used, size - used, "%s %08lx\n", text, (unsigned long)crc);
}

/* A run of 3 rules: rule 0 completes, rule 2 fails, rule 1 is still running. */
static void sample(char *buf, size_t size)
{
	snprintf(buf, size, HEADER);
	rec(buf, size, "S 1000000 77 3 0123456789abcdef0123456789abcdef");
	rec(buf, size, "F 1000001 4 10 5 in.txt");
	rec(buf, size, "N 1000002 0 2 00000000000000aa");
	rec(buf, size, "N 1000003 2 2 00000000000000cc");
	rec(buf, size, "F 2000000 2 3 7 a.txt");
	rec(buf, size, "N 2000001 0 3 00000000000000aa");
	rec(buf, size, "N 3000000 1 2 00000000000000bb");
	rec(buf, size, "N 4000000 2 4 00000000000000cc");
}

static int nrecords;
static int count_records(const struct txlog_reader *rd, const struct txlog_record *r, void *arg)
{
	(void)rd;
	(void)r;
	(void)arg;
	nrecords++;
	return 0;
}

static void check_sample(const struct txlog_reader *rd)
{
	const struct txlog_progress *p = txlog_reader_progress(rd);
	assert_string_equal(p->workflow, "Makeflow");
	assert_int_equal(p->runs, 1);
	assert_int_equal(p->rules, 3);
	assert_int_equal(p->pid, 77);
	assert_int_equal(p->complete, 1);
	assert_int_equal(p->running, 1);
	assert_int_equal(p->failed, 1);
	assert_int_equal(p->waiting, 0);
	assert_int_equal(p->ended, 0);
	assert_int_equal(p->start_us, 1000000);
	assert_int_equal(p->last_us, 4000000);
	const struct txlog_rule *r0 = txlog_reader_rule(rd, 0), *r2 = txlog_reader_rule(rd, 2);
	assert_int_equal(r0->state, TXLOG_NODE_COMPLETE);
	assert_int_equal(r0->start_us, 1000002);
	assert_int_equal(r0->end_us, 2000001);
	assert_int_equal(r0->key, 0xaa);
	assert_int_equal(r2->state, TXLOG_NODE_FAILED);
	assert_int_equal(r2->attempts, 1);
	assert_null(txlog_reader_rule(rd, 3));
	assert_null(txlog_reader_rule(rd, -1));
}

static void test_whole_and_byte_by_byte(void **state)
{
	(void)state;
	char log[4096];
	sample(log, sizeof log);
	struct txlog_reader *rd = txlog_reader_create("wf.makeflowlog", count_records, NULL);
	nrecords = 0;
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	check_sample(rd);
	assert_int_equal(nrecords, 8);
	assert_int_equal(txlog_reader_lines(rd), 9);
	txlog_reader_delete(rd);

	rd = txlog_reader_create("wf.makeflowlog", NULL, NULL);
	for (size_t i = 0; log[i]; i++) {
		assert_int_equal(txlog_reader_feed(rd, log + i, 1), 0);
		assert_int_equal(txlog_reader_partial(rd), log[i] != '\n');
	}
	check_sample(rd);
	txlog_reader_delete(rd);
	txlog_reader_delete(NULL);
}

static void test_partial_line_kept(void **state)
{
	(void)state;
	char log[4096];
	sample(log, sizeof log);
	size_t len = strlen(log);
	struct txlog_reader *rd = txlog_reader_create("wf", NULL, NULL);
	/* all but the last 10 bytes: the last record waits for its end */
	assert_int_equal(txlog_reader_feed(rd, log, len - 10), 0);
	assert_true(txlog_reader_partial(rd));
	assert_int_equal(txlog_reader_progress(rd)->failed, 0);
	assert_int_equal(txlog_reader_progress(rd)->running, 2);
	assert_int_equal(txlog_reader_feed(rd, log + len - 10, 10), 0);
	assert_false(txlog_reader_partial(rd));
	check_sample(rd);
	txlog_reader_delete(rd);
}

static void test_end_and_restart(void **state)
{
	(void)state;
	char log[8192];
	sample(log, sizeof log);
	rec(log, sizeof log, "N 4000001 1 5 00000000000000bb");
	rec(log, sizeof log, "E 4000002 1 failed");
	struct txlog_reader *rd = txlog_reader_create("wf", NULL, NULL);
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	const struct txlog_progress *p = txlog_reader_progress(rd);
	assert_int_equal(p->ended, 1);
	assert_int_equal(p->end_status, 1);
	assert_string_equal(p->end_reason, "failed");
	assert_int_equal(p->end_us, 4000002);
	assert_int_equal(p->aborted, 1);
	/* a restart: the completed rule stays complete, the others wait again */
	log[0] = 0;
	rec(log, sizeof log, "S 5000000 78 3");
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_int_equal(p->runs, 2);
	assert_int_equal(p->ended, 0);
	assert_null(p->end_reason);
	assert_int_equal(p->complete, 1);
	assert_int_equal(p->waiting, 2);
	assert_int_equal(p->completed_in_run, 0);
	assert_int_equal(txlog_reader_rule(rd, 2)->state, 0);
	assert_int_equal(txlog_reader_rule(rd, 0)->state, TXLOG_NODE_COMPLETE);
	/* another number of rules: the workflow changed, every rule starts over */
	log[0] = 0;
	rec(log, sizeof log, "S 6000000 79 5");
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_int_equal(p->complete, 0);
	assert_int_equal(p->waiting, 5);
	assert_int_equal(txlog_reader_rule(rd, 0)->state, 0);
	/* the rules it skipped as complete have no record; its end says all are complete */
	log[0] = 0;
	rec(log, sizeof log, "N 6000001 4 2 00000000000000dd");
	rec(log, sizeof log, "N 6000002 4 3 00000000000000dd");
	rec(log, sizeof log, "E 6000003 0 complete");
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_int_equal(p->complete, 5);
	assert_int_equal(p->waiting, 0);
	assert_int_equal(txlog_reader_rule(rd, 0)->state, TXLOG_NODE_COMPLETE);
	txlog_reader_delete(rd);
}

static int feed_text(const char *text, size_t len, char *msg, size_t msglen);

static void test_failure_word(void **state)
{
	(void)state;
	char log[4096], msg[1024];
	snprintf(log, sizeof log, HEADER);
	rec(log, sizeof log, "S 1 2 2");
	rec(log, sizeof log, "N 2 0 2 0000000000000001");
	rec(log, sizeof log, "N 3 0 4 0000000000000001 exit:3");
	rec(log, sizeof log, "N 4 1 2 0000000000000002");
	rec(log, sizeof log, "N 5 1 4 0000000000000002");
	struct txlog_reader *rd = txlog_reader_create("wf", NULL, NULL);
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_string_equal(txlog_reader_rule(rd, 0)->failure, "exit:3");
	assert_string_equal(txlog_reader_rule(rd, 1)->failure, ""); /* an older log: no word */
	/* a new attempt forgets the last failure */
	log[0] = 0;
	rec(log, sizeof log, "N 6 0 2 0000000000000001");
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_string_equal(txlog_reader_rule(rd, 0)->failure, "");
	txlog_reader_delete(rd);
	/* only a failed record says how, in one word of [a-z0-9:-] */
	static const char *const bad[] = {"N 3 0 3 0000000000000001 exit:3",
	                                  "N 3 0 4 0000000000000001 Exit",
	                                  "N 3 0 4 0000000000000001 exit:3 x",
	                                  "N 3 0 4 0000000000000001 "
	                                  "abcdefghijklmnopqrstuvwxyzabcdefgh"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(log, sizeof log, HEADER);
		rec(log, sizeof log, "S 1 2 2");
		rec(log, sizeof log, bad[i]);
		assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
		assert_string_equal(msg, "wf.makeflowlog:3: corrupt record");
	}
	/* makeflow's writer, and its own reader */
	char *dir = ts_tmpdir_create("test_txlog_read");
	char path[4096], err[1024];
	snprintf(path, sizeof path, "%s/wf.makeflowlog", dir);
	struct txlog *t = txlog_open(path, "Makeflow", -1);
	assert_int_equal(txlog_start(t, 1, 3, NULL), 0);
	assert_int_equal(txlog_node_failed(t, 0, 7, "signal:9"), 0);
	assert_int_equal(txlog_node_failed(t, 1, 8, "Not A Word"), 0); /* written without it */
	assert_int_equal(txlog_node_failed(t, 2, 9, NULL), 0);
	txlog_close(t);
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err), 0);
	rd = txlog_reader_create(path, NULL, NULL);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_string_equal(txlog_reader_rule(rd, 0)->failure, "signal:9");
	assert_string_equal(txlog_reader_rule(rd, 1)->failure, "");
	assert_int_equal(txlog_reader_progress(rd)->failed, 3);
	txlog_reader_delete(rd);
	ts_tmpdir_remove(dir);
}

static void test_recent_rate(void **state)
{
	(void)state;
	char log[8192];
	snprintf(log, sizeof log, HEADER);
	rec(log, sizeof log, "S 1000000 1 4");
	struct txlog_reader *rd = txlog_reader_create("wf", NULL, NULL);
	assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	assert_true(txlog_reader_recent_rate(rd) < 0);
	for (int i = 0; i < 3; i++) {
		char text[128];
		log[0] = 0;
		snprintf(text, sizeof text, "N %d %d 3 0000000000000001", 2000000 + i * 500000, i);
		rec(log, sizeof log, text);
		assert_int_equal(txlog_reader_feed(rd, log, strlen(log)), 0);
	}
	/* three completions one half second apart: 2 per second */
	assert_true(txlog_reader_recent_rate(rd) > 1.99 && txlog_reader_recent_rate(rd) < 2.01);
	assert_int_equal(txlog_reader_progress(rd)->completed_in_run, 3);
	txlog_reader_delete(rd);
}

/* Feeds TEXT to a new reader; returns the error code, the message in MSG. */
static int feed_text(const char *text, size_t len, char *msg, size_t msglen)
{
	struct txlog_reader *rd = txlog_reader_create("wf.makeflowlog", NULL, NULL);
	int r = txlog_reader_feed(rd, text, len);
	snprintf(msg, msglen, "%s", txlog_reader_error(rd));
	/* an error is final */
	if (r)
		assert_int_equal(txlog_reader_feed(rd, HEADER, strlen(HEADER)), r);
	txlog_reader_delete(rd);
	return r;
}

static void test_corrupt_records(void **state)
{
	(void)state;
	char log[8192], msg[1024];
	sample(log, sizeof log);
	/* a changed byte in line 4 fails its CRC */
	char *line4 = strstr(log, "\nN 1000002") + 1;
	line4[2] = '9';
	assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:4: corrupt record");

	snprintf(log, sizeof log, HEADER "garbage\n");
	assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:2: corrupt record");

	snprintf(log, sizeof log, HEADER);
	rec(log, sizeof log, "S 1 2 2");
	rec(log, sizeof log, "N 2 5 2 0000000000000001");
	assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:3: rule 5 is not one of the 2 rules of the run");

	snprintf(log, sizeof log, HEADER);
	rec(log, sizeof log, "N 2 0 2 0000000000000001");
	assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:2: rule 0 is not one of the 0 rules of the run");

	snprintf(log, sizeof log, HEADER);
	rec(log, sizeof log, "S 1 2 999999999999");
	assert_int_equal(feed_text(log, strlen(log), msg, sizeof msg), HTC_ECORRUPT);
	assert_non_null(strstr(msg, "wf.makeflowlog:2: a run of 999999999999 rules"));

	memcpy(log, HEADER "S 1\0002 3 abcdef01\n", sizeof HEADER + 17);
	assert_int_equal(feed_text(log, sizeof HEADER + 16, msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:2: corrupt record (a NUL byte)");

	size_t big = TXLOG_MAX_LINE + 100;
	char *huge = malloc(big);
	memset(huge, 'x', big);
	memcpy(huge, HEADER, strlen(HEADER));
	assert_int_equal(feed_text(huge, big, msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:2: record longer than 65536 bytes");
	free(huge);
}

static void test_headers(void **state)
{
	(void)state;
	char msg[1024];
	const char *cc =
	    "# FILE 1795736423860682 Makeflow.batchlog 1 0\n# STARTED 1795736423863465\n";
	assert_int_equal(feed_text(cc, strlen(cc), msg, sizeof msg), HTC_EUNSUP);
	assert_string_equal(msg,
	                    "wf.makeflowlog:1: this is a CCTools makeflow log, which is not read "
	                    "here (this makeflow's transaction log has its own format: "
	                    "doc/makeflow-log-format.md)");
	/* an old CCTools log opens with a node record: ten numbers */
	const char *cc2 = "1795736423864647 0 1 25764 1 1 0 0 0 2\n";
	assert_int_equal(feed_text(cc2, strlen(cc2), msg, sizeof msg), HTC_EUNSUP);
	assert_int_equal(feed_text("   \n", 4, msg, sizeof msg), HTC_ECORRUPT);
	const char *other = "hello\n";
	assert_int_equal(feed_text(other, strlen(other), msg, sizeof msg), HTC_ECORRUPT);
	assert_string_equal(msg, "wf.makeflowlog:1: not a makeflow transaction log");
	const char *v2 = "#htc-makeflow-log 2 Makeflow\n";
	assert_int_equal(feed_text(v2, strlen(v2), msg, sizeof msg), HTC_EVERSION);
	/* the header's workflow name is decoded */
	const char *enc = "#htc-makeflow-log 1 my%20flow\n";
	struct txlog_reader *rd = txlog_reader_create("wf", NULL, NULL);
	assert_int_equal(txlog_reader_feed(rd, enc, strlen(enc)), 0);
	assert_string_equal(txlog_reader_progress(rd)->workflow, "my flow");
	txlog_reader_delete(rd);
	/* the same check in makeflow's own reading of the log */
	char *dir = ts_tmpdir_create("test_txlog_read");
	char path[4096], err[1024];
	snprintf(path, sizeof path, "%s/cc.makeflowlog", dir);
	ts_write_file(path, cc);
	assert_int_equal(txlog_read(path, NULL, NULL, NULL, NULL, NULL, err, sizeof err),
	                 HTC_EUNSUP);
	assert_non_null(strstr(err, "cc.makeflowlog:1: this is a CCTools makeflow log"));
	ts_tmpdir_remove(dir);
}

static void append_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "a");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_follow_file(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_txlog_read");
	char path[4096];
	snprintf(path, sizeof path, "%s/wf.makeflowlog", dir);
	struct txlog_reader *rd = txlog_reader_create(path, NULL, NULL);
	assert_int_equal(txlog_reader_read_file(rd, path), -ENOENT);

	/* a log written by makeflow's own writer, read as it grows */
	struct txlog *t = txlog_open(path, "Makeflow", -1);
	assert_non_null(t);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_string_equal(txlog_reader_progress(rd)->workflow, "Makeflow");
	assert_int_equal(txlog_start(t, 5, 2, NULL), 0);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_RUNNING, 1), 0);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_int_equal(txlog_reader_progress(rd)->running, 1);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_COMPLETE, 1), 0);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_int_equal(txlog_reader_progress(rd)->complete, 1);
	assert_int_equal(txlog_reader_read_file(rd, path), 0); /* nothing new */
	assert_int_equal(txlog_reader_lines(rd), 4);
	txlog_close(t);

	/* a torn write, cut off by a restarting makeflow, which then appends */
	append_file(path, "N 99 1 2 00", 11);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_true(txlog_reader_partial(rd));
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	t = txlog_open(path, "Makeflow", st.st_size - 11);
	assert_non_null(t);
	assert_int_equal(txlog_node(t, 1, TXLOG_NODE_RUNNING, 2), 0);
	txlog_close(t);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_false(txlog_reader_partial(rd));
	assert_int_equal(txlog_reader_progress(rd)->running, 1);
	assert_int_equal(txlog_reader_progress(rd)->complete, 1);

	/* the log removed (makeflow -c) and a new run: read again from its start */
	unlink(path);
	t = txlog_open(path, "Makeflow", -1);
	assert_int_equal(txlog_start(t, 6, 2, NULL), 0);
	txlog_close(t);
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_int_equal(txlog_reader_progress(rd)->runs, 1);
	assert_int_equal(txlog_reader_progress(rd)->complete, 0);
	assert_int_equal(txlog_reader_progress(rd)->pid, 6);
	assert_int_equal(txlog_reader_lines(rd), 2);

	/* cut shorter than what was read, in place: read again from its start */
	assert_int_equal(truncate(path, 0), 0);
	append_file(path, HEADER, strlen(HEADER));
	assert_int_equal(txlog_reader_read_file(rd, path), 0);
	assert_int_equal(txlog_reader_progress(rd)->runs, 0);
	assert_int_equal(txlog_reader_lines(rd), 1);
	txlog_reader_delete(rd);
	ts_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole_and_byte_by_byte),
	    cmocka_unit_test(test_partial_line_kept),
	    cmocka_unit_test(test_end_and_restart),
	    cmocka_unit_test(test_recent_rate),
	    cmocka_unit_test(test_failure_word),
	    cmocka_unit_test(test_corrupt_records),
	    cmocka_unit_test(test_headers),
	    cmocka_unit_test(test_follow_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
