/* test_slurm.c: unit tests for the text the slurm driver writes and reads: the sbatch command
 * (resources, --ignore-memory-spec, --safe-submit-mode, --tmp, -B text), the job script (run
 * with sh: it records its command's exit status), sbatch --parsable's answer, squeue lines, and
 * how final job states become batch results (TIMEOUT and OUT_OF_MEMORY are exhaustion). The
 * driver itself is tested on a real cluster by test/e2e/60-slurm.sh. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "slurm_script.h"
#include "slurm_status.h"
#include "ts_tmpdir.h"
#include "banned.h"

static struct batch_job_spec spec_with(int64_t cores, int64_t mem, int64_t wall)
{
	struct batch_job_spec s;
	memset(&s, 0, sizeof s);
	s.command = "echo hi";
	s.resources = (struct batch_resources){cores, mem, -1, -1, wall};
	return s;
}

static void test_sbatch_command(void **st)
{
	(void)st;
	struct slurm_submit_opts o = {0};
	struct batch_job_spec s = spec_with(2, 300, 61);
	s.batch_options = "-p debug --comment='a b'";
	char *c = slurm_sbatch_command(&o, &s, "htc-x", "/w", "/w/o", "/w/j.sh");
	assert_string_equal(c, "exec sbatch --parsable --job-name='htc-x' --chdir='/w' "
	                       "--output='/w/o' -N 1 -n 1 -c 2 --mem=300M --time=2 "
	                       "-p debug --comment='a b' '/w/j.sh'");
	free(c);

	o.ignore_memory = 1;
	o.tmp = "10G";
	s.batch_options = NULL;
	c = slurm_sbatch_command(&o, &s, "n", "/w", "/w/o", "/w/j.sh");
	assert_null(strstr(c, "--mem"));
	assert_non_null(strstr(c, " -c 2 --time=2 --tmp='10G' '/w/j.sh'"));
	free(c);

	o.safe_submit = 1;
	c = slurm_sbatch_command(&o, &s, "n", "/w", "/w/o", "/w/j.sh");
	assert_null(strstr(c, " -c "));
	assert_null(strstr(c, "--time"));
	assert_non_null(strstr(c, "--tmp='10G'"));
	free(c);

	/* nothing declared: one core, Slurm's own memory and time defaults */
	struct slurm_submit_opts none = {0};
	s = spec_with(-1, -1, -1);
	c = slurm_sbatch_command(&none, &s, "n", "/w", "/w/o", "/w/j.sh");
	assert_non_null(strstr(c, " -N 1 -n 1 -c 1 '/w/j.sh'"));
	free(c);
}

static void test_script_runs_and_records_status(void **st)
{
	(void)st;
	char *dir = ts_tmpdir_create("slurm");
	struct batch_job_spec s = spec_with(3, -1, -1);
	s.command = "echo \"$GREETING $CORES\" > out.txt; exit 5";
	const char *env[] = {"GREETING=it's me", NULL};
	s.env = env;
	s.tag = "rule 1\nline 2";
	char rc[4096], script[4096];
	snprintf(rc, sizeof rc, "%s/job.rc", dir);
	snprintf(script, sizeof script, "%s/job.sh", dir);
	char *text = slurm_script_text(&s, dir, rc);
	assert_true(strncmp(text, "#!/bin/sh\n# rule 1 line 2\n", 26) == 0);
	FILE *f = fopen(script, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	char cmd[8300];
	snprintf(cmd, sizeof cmd, "cd / && sh '%s'", script);
	int status = system(cmd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 5);
	char path[4200], buf[64] = {0};
	snprintf(path, sizeof path, "%s/out.txt", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "it's me 3\n");
	f = fopen(rc, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "5\n");
	ts_tmpdir_remove(dir);
}

static void test_parse_sbatch(void **st)
{
	(void)st;
	char id[24];
	assert_int_equal(slurm_parse_sbatch("123\n", id), 0);
	assert_string_equal(id, "123");
	assert_int_equal(slurm_parse_sbatch("77;cluster1\n", id), 0);
	assert_string_equal(id, "77");
	assert_int_equal(slurm_parse_sbatch("", id), -EINVAL);
	assert_int_equal(slurm_parse_sbatch("Submitted batch job 5\n", id), -EINVAL);
	assert_int_equal(slurm_parse_sbatch("12 13\n", id), -EINVAL);
	assert_int_equal(slurm_parse_sbatch("123456789012345678901234567\n", id), -EINVAL);
}

static void test_parse_squeue(void **st)
{
	(void)st;
	struct slurm_job_status s;
	assert_int_equal(
	    slurm_parse_squeue_line("1                       FAILED              768   "
	                            "      NonZeroExitCode",
	                            &s),
	    0);
	assert_string_equal(s.id, "1");
	assert_string_equal(s.state, "FAILED");
	assert_int_equal(s.wait_status, 768);
	assert_string_equal(s.reason, "NonZeroExitCode");
	assert_int_equal(slurm_parse_squeue_line("42 PENDING N/A Priority", &s), 0);
	assert_int_equal(s.wait_status, -1);
	assert_int_equal(slurm_parse_squeue_line("42 RUNNING 0", &s), 0);
	assert_string_equal(s.reason, "None");
	assert_int_equal(slurm_parse_squeue_line("   ", &s), 1);
	assert_int_equal(slurm_parse_squeue_line("", &s), 1);
	assert_int_equal(slurm_parse_squeue_line("12_3 RUNNING 0 None", &s), -EINVAL);
	assert_int_equal(slurm_parse_squeue_line("12 running 0 None", &s), -EINVAL);
	assert_int_equal(slurm_parse_squeue_line("12 RUNNING x None", &s), -EINVAL);
	assert_int_equal(slurm_parse_squeue_line("slurm_load_jobs error: oops", &s), -EINVAL);
}

static void test_phases(void **st)
{
	(void)st;
	assert_int_equal(slurm_state_phase("PENDING"), SLURM_PENDING);
	assert_int_equal(slurm_state_phase("REQUEUED"), SLURM_PENDING);
	assert_int_equal(slurm_state_phase("RUNNING"), SLURM_RUNNING);
	assert_int_equal(slurm_state_phase("COMPLETING"), SLURM_RUNNING);
	assert_int_equal(slurm_state_phase("COMPLETED"), SLURM_FINISHED);
	assert_int_equal(slurm_state_phase("OUT_OF_MEMORY"), SLURM_FINISHED);
	assert_int_equal(slurm_state_phase("NODE_FAIL"), SLURM_FINISHED);
	assert_int_equal(slurm_state_phase("WHATEVER"), SLURM_UNKNOWN);
}

static const char *result_of(const char *line, int rc_file, struct batch_result *r)
{
	struct slurm_job_status s;
	memset(r, 0, sizeof *r);
	assert_int_equal(slurm_parse_squeue_line(line, &s), 0);
	return slurm_result_from_status(&s, rc_file, r);
}

static void test_results(void **st)
{
	(void)st;
	struct batch_result r;
	assert_null(result_of("1 COMPLETED 0 None", -1, &r));
	assert_true(r.exited_normally && r.exit_code == 0 && !r.exhausted);
	assert_null(result_of("1 FAILED 768 NonZeroExitCode", -1, &r));
	assert_true(r.exited_normally && r.exit_code == 3);
	/* the status file is the command's own status */
	assert_null(result_of("1 FAILED 256 NonZeroExitCode", 9, &r));
	assert_int_equal(r.exit_code, 9);
	assert_null(result_of("1 FAILED 0 NonZeroExitCode", 137, &r));
	assert_false(r.exited_normally);
	assert_int_equal(r.signal, 9);
	assert_null(result_of("1 FAILED 9 None", -1, &r));
	assert_false(r.exited_normally);
	assert_int_equal(r.signal, 9);
	/* killed by Slurm for a limit: exhaustion, whatever the script wrote */
	assert_null(result_of("1 TIMEOUT 15 TimeLimit", 143, &r));
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_WALL_TIME);
	assert_null(result_of("1 OUT_OF_MEMORY 253 OutOfMemory", 0, &r));
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_MEMORY);
	assert_false(r.exited_normally);
	/* the others are errors, said */
	assert_non_null(result_of("1 NODE_FAIL 0 NodeDown", -1, &r));
	assert_int_equal(r.exhausted, 0);
	assert_non_null(strstr(result_of("1 CANCELLED 0 None", -1, &r), "cancelled outside"));
	assert_int_equal(r.signal, SIGKILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sbatch_command),
	    cmocka_unit_test(test_script_runs_and_records_status),
	    cmocka_unit_test(test_parse_sbatch),
	    cmocka_unit_test(test_parse_squeue),
	    cmocka_unit_test(test_phases),
	    cmocka_unit_test(test_results),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
