/* test_slurm_sacct.c: unit tests for reading sacct: durations ([DD-][HH:]MM:SS[.fff]), sizes
 * with units (MaxRSS, ReqMem), -P lines with the job's own line and its .batch / .extern steps,
 * states with a "by UID" suffix, and the batch result built from a job's accounting (exit code,
 * exhaustion, wall time, cores from CPU time, memory from MaxRSS). The lines are sacct 22.05's
 * own output on the test cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "batch_driver.h"
#include "slurm_sacct.h"
#include "banned.h"

static void test_duration(void **st)
{
	(void)st;
	double s;
	assert_int_equal(slurm_parse_duration("00:00:05", &s), 0);
	assert_true(s == 5);
	assert_int_equal(slurm_parse_duration("01:02:03", &s), 0);
	assert_true(s == 3723);
	assert_int_equal(slurm_parse_duration("2-03:00:01", &s), 0);
	assert_true(s == 2 * 86400 + 3 * 3600 + 1);
	assert_int_equal(slurm_parse_duration("00:00.245", &s), 0);
	assert_true(s > 0.2449 && s < 0.2451);
	assert_int_equal(slurm_parse_duration("12:34.5", &s), 0);
	assert_true(s == 754.5);
	assert_int_equal(slurm_parse_duration("01:02:03.004", &s), 0);
	assert_true(s > 3723.0039 && s < 3723.0041);
	assert_int_equal(slurm_parse_duration("7", &s), 0);
	assert_true(s == 7);
	const char *bad[] = {"",         "x",         "1:2:3:4", "00:61",  "1-02:03", "00:00:05 ",
	                     "-1:00:00", "UNLIMITED", "1.5:00",  "00:00:", "INVALID"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(slurm_parse_duration(bad[i], &s), -EINVAL);
}

static void test_size(void **st)
{
	(void)st;
	int64_t b;
	int pc = -1;
	assert_int_equal(slurm_parse_size("220K", 1, &b, NULL), 0);
	assert_true(b == 220 * 1024);
	assert_int_equal(slurm_parse_size("1.50G", 1, &b, NULL), 0);
	assert_true(b == 1536LL * 1024 * 1024);
	assert_int_equal(slurm_parse_size("0", 1, &b, NULL), 0);
	assert_true(b == 0);
	assert_int_equal(slurm_parse_size("512", 1, &b, NULL), 0);
	assert_true(b == 512);
	assert_int_equal(slurm_parse_size("200M", 1 << 20, &b, &pc), 0);
	assert_true(b == 200LL << 20);
	assert_int_equal(pc, 0);
	assert_int_equal(slurm_parse_size("4000Mc", 1 << 20, &b, &pc), 0);
	assert_true(b == 4000LL << 20);
	assert_int_equal(pc, 1);
	assert_int_equal(slurm_parse_size("1Gn", 1 << 20, &b, &pc), 0);
	assert_int_equal(pc, 0);
	/* 22.05, a job that asked for no memory */
	assert_int_equal(slurm_parse_size("16?", 1 << 20, &b, &pc), 0);
	assert_true(b == 16LL << 20);
	assert_int_equal(pc, 0);
	assert_int_equal(slurm_parse_size("16", 1 << 20, &b, NULL), 0);
	assert_true(b == 16LL << 20);
	const char *bad[] = {"", "K", "-1K", "12X", "12KK", "1e30G", "nan"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(slurm_parse_size(bad[i], 1, &b, NULL), -EINVAL);
}

static void test_lines(void **st)
{
	(void)st;
	struct slurm_sacct_line l;
	assert_int_equal(slurm_parse_sacct_line(
	                     "1|FAILED|3:0|00:00:02|00:00.245||200M|1|1795784464|1795784466", &l),
	                 0);
	assert_string_equal(l.job_id, "1");
	assert_string_equal(l.step, "");
	assert_string_equal(l.state, "FAILED");
	assert_int_equal(l.exit_code, 3);
	assert_int_equal(l.exit_signal, 0);
	assert_true(l.elapsed_s == 2);
	assert_true(l.max_rss_kb == -1);
	assert_true(l.req_mem_mb == 200);
	assert_true(l.alloc_cpus == 1);
	assert_true(l.start_s == 1795784464 && l.end_s == 1795784466);
	assert_int_equal(
	    slurm_parse_sacct_line(
	        "1.batch|FAILED|3:0|00:00:02|00:00.245|102400K||1|1795784464|Unknown\n", &l),
	    0);
	assert_string_equal(l.job_id, "1");
	assert_string_equal(l.step, "batch");
	assert_true(l.max_rss_kb == 102400);
	assert_true(l.end_s == -1);
	assert_int_equal(
	    slurm_parse_sacct_line("77|CANCELLED by 0|0:15|00:01:00|00:00:00||1G|2|None|None", &l),
	    0);
	assert_string_equal(l.state, "CANCELLED");
	assert_int_equal(l.exit_signal, 15);
	assert_true(l.start_s == -1);
	/* a job still pending: most fields empty */
	assert_int_equal(
	    slurm_parse_sacct_line("9|PENDING|0:0|00:00:00|00:00:00||1G|1|Unknown|Unknown", &l), 0);
	/* as sacct 22.05 prints a job that asked for no memory; an unknown ReqMem form */
	assert_int_equal(
	    slurm_parse_sacct_line(
	        "23|COMPLETED|0:0|00:00:00|00:00.004||16?|1|1795784717|1795784717", &l),
	    0);
	assert_true(l.req_mem_mb == 16);
	assert_int_equal(
	    slurm_parse_sacct_line("23|COMPLETED|0:0|00:00:00|00:00.004||16Q|1|1|1", &l), 0);
	assert_true(l.req_mem_mb == -1);
	assert_int_equal(slurm_parse_sacct_line("", &l), 1);
	assert_int_equal(slurm_parse_sacct_line("\n", &l), 1);
	const char *bad[] = {
	    "1|FAILED|3:0|00:00:02|00:00.245||200M|1|1|2|extra",
	    "1|FAILED|3:0|00:00:02|00:00.245||200M|1|1",
	    "x1|FAILED|3:0|00:00:02|00:00.245||200M|1|1|2",
	    "1_3|FAILED|3:0|00:00:02|00:00.245||200M|1|1|2",
	    "1.|FAILED|3:0|00:00:02|00:00.245||200M|1|1|2",
	    "1|failed|3:0|00:00:02|00:00.245||200M|1|1|2",
	    "1|CANCELLED+|3:0|00:00:02|00:00.245||200M|1|1|2",
	    "1|FAILED|3|00:00:02|00:00.245||200M|1|1|2",
	    "1|FAILED|3:0|2 s|00:00.245||200M|1|1|2",
	    "1|FAILED|3:0|00:00:02|00:00.245|lots|200M|1|1|2",
	    "sacct: error: Problem talking to the database: Connection refused",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(slurm_parse_sacct_line(bad[i], &l), -EINVAL);
}

/* The record of one job from its lines. */
static void merged(struct slurm_acct *a, const char *const *lines)
{
	slurm_acct_init(a);
	for (; *lines; lines++) {
		struct slurm_sacct_line l;
		assert_int_equal(slurm_parse_sacct_line(*lines, &l), 0);
		slurm_acct_merge(a, &l);
	}
}

static void test_merge_and_result(void **st)
{
	(void)st;
	struct slurm_acct a;
	const char *ok[] = {"5|COMPLETED|0:0|00:00:10|00:00:19.900||2000M|2|1000|1010",
	                    "5.batch|COMPLETED|0:0|00:00:10|00:00:19.900|104000K||2|1000|1010",
	                    "5.extern|COMPLETED|0:0|00:00:10|00:00:00|900000K||2|1000|1010", NULL};
	merged(&a, ok);
	assert_true(slurm_acct_final(&a));
	assert_true(a.max_rss_kb == 104000); /* .extern is left out */
	struct batch_result r;
	batch_result_init(&r);
	assert_null(slurm_result_from_acct("5", &a, -1, &r));
	assert_int_equal(r.exited_normally, 1);
	assert_int_equal(r.exit_code, 0);
	assert_true(r.measured.wall_time_s == 10);
	assert_true(r.measured.cores == 2);
	assert_true(r.measured.memory_mb == 102); /* 104000 KB rounded up */
	assert_true(r.cpu_time_s > 19.8 && r.cpu_time_s < 20);
	assert_true(r.end_us == 1010LL * 1000000 && r.start_us == 1000LL * 1000000);

	/* the script's record wins for FAILED; sacct's code is used without one */
	const char *failed[] = {"6|FAILED|7:0|00:00:01|00:00.001||1G|1|1000|1001", NULL};
	merged(&a, failed);
	batch_result_init(&r);
	assert_null(slurm_result_from_acct("6", &a, -1, &r));
	assert_int_equal(r.exit_code, 7);
	assert_true(r.measured.cores == 1);
	batch_result_init(&r);
	assert_null(slurm_result_from_acct("6", &a, 9, &r));
	assert_int_equal(r.exit_code, 9);

	/* a signal in ExitCode */
	const char *sig[] = {"8|FAILED|0:9|00:00:01|00:00.001||1G|1|1000|1001", NULL};
	merged(&a, sig);
	batch_result_init(&r);
	assert_null(slurm_result_from_acct("8", &a, -1, &r));
	assert_int_equal(r.exited_normally, 0);
	assert_int_equal(r.signal, 9);

	const char *oom[] = {"7|OUT_OF_MEMORY|0:125|00:00:03|00:00.500||50M|1|1000|1003",
	                     "7.batch|OUT_OF_MEMORY|0:125|00:00:03|00:00.500|51200K||1|1000|1003",
	                     NULL};
	merged(&a, oom);
	assert_true(a.req_mem_mb == 50);
	batch_result_init(&r);
	assert_null(slurm_result_from_acct("7", &a, 137, &r));
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_MEMORY);
	assert_true(r.measured.memory_mb == 50);

	const char *cancel[] = {"9|CANCELLED by 0|0:15|00:00:03|00:00:00||1G|1|1000|1003", NULL};
	merged(&a, cancel);
	batch_result_init(&r);
	assert_non_null(slurm_result_from_acct("9", &a, -1, &r));

	/* per-CPU memory of older Slurm */
	const char *pc[] = {"10|COMPLETED|0:0|00:00:01|00:00.001||1000Mc|4|1000|1001", NULL};
	merged(&a, pc);
	assert_true(a.req_mem_mb == 4000);

	/* only a step line, or the job still running: not final */
	const char *step_only[] = {"11.batch|COMPLETED|0:0|00:00:01|00:00.001|10K||1|1|2", NULL};
	merged(&a, step_only);
	assert_false(slurm_acct_final(&a));
	const char *running[] = {"12|RUNNING|0:0|00:00:01|00:00:00||1G|1|1000|Unknown", NULL};
	merged(&a, running);
	assert_false(slurm_acct_final(&a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_size),
	    cmocka_unit_test(test_lines),
	    cmocka_unit_test(test_merge_and_result),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
