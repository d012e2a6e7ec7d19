/* test_batch_slurm.c: the slurm driver against stand-in sbatch, squeue and scancel scripts put
 * first in PATH, which log how they were called and answer what each test writes for them:
 * jobs named after the run id, all jobs of the run read by one squeue per interval, exit codes
 * and exhaustion from final states, a refused submission, a malformed squeue line, squeue
 * failing until status-timeout, removal in one scancel, stop-run, and accounting: one sacct for
 * the jobs that ended since the last call, whose answer gives exit codes, exhaustion and
 * measurements (a stand-in sacct too: without an answer file it says accounting is disabled,
 * as sacct does on a cluster without it). The real cluster is tested by
 * test/e2e/60-slurm.sh. */
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
#include <uv.h>

#include "batch_queue.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "banned.h"

#define RUN          "0123456789abcdef0123456789abcdef"
#define SLURM_FORMAT "JobID,State,ExitCode,Elapsed,TotalCPU,MaxRSS,ReqMem,AllocCPUS,Start,End"

struct ctx {
	uv_loop_t loop;
	char *dir;
	char old_cwd[4096];
	char *old_path;
	long n_done, n_wall_exhausted, n_ok;
	struct batch_result last;
	char last_error[512];
	struct batch_result by_id[8]; /* by batch job id, for ids below 8 */
	char error_by_id[8][256];
};

static struct ctx C;

static void on_complete(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	(void)arg;
	C.n_done++;
	C.last = *r;
	if (r->exited_normally && r->exit_code == 0 && !r->error)
		C.n_ok++;
	if (r->exhausted & BATCH_EXHAUSTED_WALL_TIME)
		C.n_wall_exhausted++;
	snprintf(C.last_error, sizeof C.last_error, "%s", r->error ? r->error : "");
	if (id > 0 && id < 8) {
		C.by_id[id] = *r;
		snprintf(C.error_by_id[id], sizeof C.error_by_id[id], "%s",
		         r->error ? r->error : "");
	}
}

static bool done_reached(void *arg)
{
	return C.n_done >= *(long *)arg;
}

static void run_until_done(long n)
{
	assert_true(ts_run_until(&C.loop, done_reached, &n, TS_WAIT_MS));
}

static void write_tool(const char *name, const char *body)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/bin/%s", C.dir, name);
	ts_write_file(path, body);
	assert_int_equal(chmod(path, 0755), 0);
}

static void put(const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/fake/%s", C.dir, name);
	char tmp[4300];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	ts_write_file(tmp, text);
	assert_int_equal(rename(tmp, path), 0);
}

static char *get(const char *name)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/fake/%s", C.dir, name);
	char *t = ts_read_file(path, NULL);
	return t ? t : strdup("");
}

static int setup(void **state)
{
	(void)state;
	memset(&C, 0, sizeof C);
	assert_non_null(getcwd(C.old_cwd, sizeof C.old_cwd));
	C.dir = ts_tmpdir_create("test_batch_slurm");
	assert_int_equal(chdir(C.dir), 0);
	assert_int_equal(mkdir("bin", 0755), 0);
	assert_int_equal(mkdir("fake", 0755), 0);
	char env[4200];
	snprintf(env, sizeof env, "%s/fake", C.dir);
	setenv("FAKE", env, 1);
	/* sbatch: logs its arguments, refuses when told to, else answers the number N of the
	 * driver's job-N.sh as the job id, so that the ids follow the submissions whatever order
	 * the concurrent sbatch calls finish in (the next id of a counter when there is none) */
	write_tool("sbatch",
	           "#!/bin/sh\n"
	           "echo \"$*\" >>\"$FAKE/sbatch.log\"\n"
	           "if [ -e \"$FAKE/refuse\" ]; then cat \"$FAKE/refuse\" >&2; exit 1; fi\n"
	           "n=$(echo \"$*\" | sed -n 's/.*job-\\([0-9][0-9]*\\)\\.sh.*/\\1/p')\n"
	           "if [ -n \"$n\" ]; then echo \"$n\"; exit 0; fi\n"
	           "exec 9>>\"$FAKE/lock\"\n"
	           "flock 9\n"
	           "n=$(($(cat \"$FAKE/next\" 2>/dev/null || echo 0) + 1))\n"
	           "echo $n >\"$FAKE/next\"\n"
	           "echo \"$n\"\n");
	/* squeue: logs its arguments, fails when told to, else prints the answer file */
	write_tool("squeue", "#!/bin/sh\n"
	                     "echo \"$*\" >>\"$FAKE/squeue.log\"\n"
	                     "if [ -e \"$FAKE/squeue.fail\" ]; then cat \"$FAKE/squeue.fail\" >&2; "
	                     "exit 1; fi\n"
	                     "cat \"$FAKE/squeue.out\" 2>/dev/null\n"
	                     "exit 0\n");
	write_tool("scancel", "#!/bin/sh\necho \"$*\" >>\"$FAKE/scancel.log\"\n");
	/* sacct: logs SLURM_TIME_FORMAT and its arguments; without an answer file, what sacct says
	 * on a cluster without accounting */
	write_tool("sacct", "#!/bin/sh\n"
	                    "echo \"$SLURM_TIME_FORMAT $*\" >>\"$FAKE/sacct.log\"\n"
	                    "if [ ! -e \"$FAKE/sacct.out\" ]; then\n"
	                    "  echo 'Slurm accounting storage is disabled' >&2; exit 1; fi\n"
	                    "cat \"$FAKE/sacct.out\"\n");
	C.old_path = strdup(getenv("PATH"));
	char path[8400];
	snprintf(path, sizeof path, "%s/bin:%s", C.dir, C.old_path);
	setenv("PATH", path, 1);
	assert_int_equal(uv_loop_init(&C.loop), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&C.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&C.loop), 0);
	setenv("PATH", C.old_path, 1);
	free(C.old_path);
	assert_int_equal(chdir(C.old_cwd), 0);
	ts_tmpdir_remove(C.dir);
	return 0;
}

static struct batch_queue *make_queue(void)
{
	struct batch_queue *q = batch_queue_create(&C.loop, "slurm", on_complete, &C);
	assert_non_null(q);
	assert_int_equal(batch_queue_set_option(q, "poll-interval", "0.05"), 0);
	return q;
}

static int64_t submit(struct batch_queue *q, const char *cmd)
{
	static const char *const env[] = {"HTC_RUN_ID=" RUN, NULL};
	struct batch_job_spec s;
	memset(&s, 0, sizeof s);
	s.command = cmd;
	s.env = env;
	s.resources = (struct batch_resources){1, 100, -1, -1, 120};
	s.batch_options = "-p short";
	int64_t id = batch_queue_submit(q, &s);
	assert_true(id > 0);
	return id;
}

static bool submitted(void *arg)
{
	char *log = get("sbatch.log");
	int n = 0;
	for (char *p = log; (p = strchr(p, '\n')); p++)
		n++;
	free(log);
	return n >= *(int *)arg;
}

static struct batch_queue *Q; /* the queue of the running test, for the conditions below */

static bool two_running(void *arg)
{
	(void)arg;
	return batch_queue_running(Q) == 2;
}

static bool cancelled(void *arg)
{
	(void)arg;
	char *sc = get("scancel.log");
	bool r = *sc != 0;
	free(sc);
	return r;
}

static void test_run_name_one_squeue_and_exit_codes(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_true(batch_queue_features(q) & BATCH_FEATURE_RUN_LABEL);
	assert_int_equal(batch_queue_start(q), 0);
	for (int i = 0; i < 3; i++)
		submit(q, "true");
	int three = 3;
	assert_true(ts_run_until(&C.loop, submitted, &three, TS_WAIT_MS));
	char *log = get("sbatch.log");
	assert_non_null(strstr(log, "--job-name=htc-" RUN " "));
	assert_non_null(strstr(log, "-c 1 --mem=100M --time=2 -p short"));
	free(log);
	put("squeue.out", "1 RUNNING 0 None\n2 PENDING N/A Priority\n3 RUNNING 0 None\n");
	Q = q;
	assert_true(ts_run_until(&C.loop, two_running, NULL, TS_WAIT_MS));
	assert_int_equal(batch_queue_waiting(q), 1);
	put("squeue.out", "this is not a squeue line\n1 COMPLETED 0 None\n2 FAILED 768 "
	                  "NonZeroExitCode\n3 TIMEOUT 15 TimeLimit\n");
	run_until_done(3);
	/* every squeue asked for the whole run by its name, never for one job */
	char *sq = get("squeue.log");
	char *line = strchr(sq, '\n'); /* the first is batch_queue_start's check */
	assert_non_null(strstr(sq, "-j 1\n"));
	int polls = 0;
	for (char *p = line + 1; *p; p = strchr(p, '\n') + 1, polls++) {
		assert_true(strncmp(p, "-h -t all -n htc-" RUN " ", 49) == 0);
		assert_null(strstr(p, " -j "));
	}
	assert_true(polls >= 2);
	free(sq);
	assert_int_equal(C.n_wall_exhausted, 1);
	batch_queue_delete(q);
}

static void test_exit_code_and_exhaustion(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	submit(q, "exit 3");
	int one = 1;
	assert_true(ts_run_until(&C.loop, submitted, &one, TS_WAIT_MS));
	put("squeue.out", "1 FAILED 768 NonZeroExitCode\n");
	run_until_done(1);
	assert_true(C.last.exited_normally);
	assert_int_equal(C.last.exit_code, 3);
	assert_int_equal(C.last.exhausted, 0);
	submit(q, "big");
	int two = 2;
	assert_true(ts_run_until(&C.loop, submitted, &two, TS_WAIT_MS));
	put("squeue.out", "2 OUT_OF_MEMORY 0 OutOfMemory\n");
	run_until_done(2);
	assert_int_equal(C.last.exhausted, BATCH_EXHAUSTED_MEMORY);
	batch_queue_delete(q);
}

static void test_refused_submission(void **state)
{
	(void)state;
	put("refuse", "sbatch: error: Batch job submission failed: Invalid account\n");
	struct batch_queue *q = make_queue();
	submit(q, "true");
	run_until_done(1);
	assert_string_equal(C.last_error, "slurm: sbatch refused the job: sbatch: error: Batch job "
	                                  "submission failed: Invalid account");
	batch_queue_delete(q);
}

static void test_squeue_failing(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "status-timeout", "0.3"), 0);
	submit(q, "true");
	int one = 1;
	assert_true(ts_run_until(&C.loop, submitted, &one, TS_WAIT_MS));
	put("squeue.fail", "slurm_load_jobs error: Unable to contact slurm controller\n");
	run_until_done(1);
	assert_non_null(strstr(C.last_error, "Slurm did not answer squeue for 0 s: "
	                                     "slurm_load_jobs error: Unable to contact slurm "
	                                     "controller"));
	batch_queue_delete(q);
	uv_run(&C.loop, UV_RUN_DEFAULT);
	/* the job it gave up on is cancelled */
	char *sc = get("scancel.log");
	assert_non_null(strstr(sc, "1"));
	free(sc);
}

/* A job that ran to its end while squeue could not answer is not lost: its script's status
 * file completes it; only the others fail. */
static void test_squeue_failing_keeps_finished_jobs(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "status-timeout", "0.3"), 0);
	submit(q, "true");
	submit(q, "sleep 100");
	int two = 2;
	assert_true(ts_run_until(&C.loop, submitted, &two, TS_WAIT_MS));
	ts_write_file(".htc-slurm/" RUN "/job-1.rc", "0\n");
	put("squeue.fail", "slurm_load_jobs error: Unable to contact slurm controller\n");
	run_until_done(2);
	assert_int_equal(C.n_ok, 1);
	assert_non_null(strstr(C.last_error, "Slurm did not answer squeue"));
	batch_queue_delete(q);
}

static void test_remove_in_one_scancel(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	int64_t a = submit(q, "sleep 100");
	int64_t b = submit(q, "sleep 100");
	int two = 2;
	assert_true(ts_run_until(&C.loop, submitted, &two, TS_WAIT_MS));
	put("squeue.out", "1 RUNNING 0 None\n2 RUNNING 0 None\n");
	Q = q;
	assert_true(ts_run_until(&C.loop, two_running, NULL, TS_WAIT_MS));
	assert_int_equal(batch_queue_remove(q, a), 0);
	assert_int_equal(batch_queue_remove(q, b), 0);
	run_until_done(2);
	assert_true(C.last.removed);
	assert_true(ts_run_until(&C.loop, cancelled, NULL, TS_WAIT_MS));
	char *sc = get("scancel.log");
	/* one scancel naming both */
	assert_true(strcmp(sc, "1 2\n") == 0 || strcmp(sc, "2 1\n") == 0);
	free(sc);
	batch_queue_delete(q);
}

static void test_stop_run(void **state)
{
	(void)state;
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "stop-run", "nothex"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "stop-run", RUN), 0);
	char *sc = get("scancel.log");
	assert_string_equal(sc, "-n htc-" RUN "\n");
	free(sc);
	assert_int_equal(batch_queue_set_option(q, "submit-rate", "0"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "work-dir", "relative"), -EINVAL);
	assert_int_equal(batch_queue_set_option(q, "no-such-key", "1"), -EINVAL);
	batch_queue_delete(q);
}

static bool sacct_calls(void *arg)
{
	char *log = get("sacct.log");
	int n = 0;
	for (char *p = log; (p = strchr(p, '\n')); p++)
		n++;
	free(log);
	return n >= *(int *)arg;
}

static void test_accounting(void **state)
{
	(void)state;
	put("sacct.out", "1|COMPLETED|0:0|00:00:10|00:00:19.900||100M|2|1000|1010\n"
	                 "1.batch|COMPLETED|0:0|00:00:10|00:00:19.900|104000K||2|1000|1010\n"
	                 "1.extern|COMPLETED|0:0|00:00:10|00:00:00|900K||2|1000|1010\n"
	                 "2|FAILED|3:0|00:00:02|00:00.100||100M|1|1000|1002\n"
	                 "2.batch|FAILED|3:0|00:00:02|00:00.100|2048K||1|1000|1002\n"
	                 "3|OUT_OF_MEMORY|0:125|00:00:03|00:00.500||100M|1|1000|1003\n"
	                 "3.batch|OUT_OF_MEMORY|0:125|00:00:03|00:00.500|102400K||1|1000|1003\n");
	struct batch_queue *q = make_queue();
	assert_false(batch_queue_features(q) & BATCH_FEATURE_MEASURE);
	assert_int_equal(batch_queue_start(q), 0);
	/* sacct answered at start: results carry measurements */
	assert_true(batch_queue_features(q) & BATCH_FEATURE_MEASURE);
	/* pending until the test says otherwise (so that none is missing from squeue early) */
	put("squeue.out",
	    "1 PENDING N/A Priority\n2 PENDING N/A Priority\n3 PENDING N/A Priority\n");
	for (int i = 0; i < 3; i++)
		submit(q, "true");
	int three = 3;
	assert_true(ts_run_until(&C.loop, submitted, &three, TS_WAIT_MS));
	/* 1 and 2 end in the same squeue answer; 3 is gone from squeue (the controller forgot
	 * it) */
	put("squeue.out", "1 COMPLETED 0 None\n2 FAILED 768 NonZeroExitCode\n");
	run_until_done(3);
	/* the start's check, then one sacct for 1 and 2 together, then one for 3 */
	char *log = get("sacct.log");
	assert_string_equal(log, " -n -P -j 1 -o JobID\n"
	                         "%s -n -P -j 1,2 -o " SLURM_FORMAT "\n"
	                         "%s -n -P -j 3 -o " SLURM_FORMAT "\n");
	free(log);
	struct batch_result *r = &C.by_id[1];
	assert_true(r->exited_normally && r->exit_code == 0 && !r->exhausted);
	assert_true(r->measured.wall_time_s == 10);
	assert_true(r->measured.cores == 2);
	assert_true(r->measured.memory_mb == 102);
	assert_true(r->cpu_time_s > 19.8 && r->cpu_time_s < 20);
	assert_true(r->end_us == 1010LL * 1000000 && r->start_us == 1000LL * 1000000);
	r = &C.by_id[2];
	assert_true(r->exited_normally && r->exit_code == 3);
	assert_true(r->measured.memory_mb == 2);
	/* squeue alone could not have said it: sacct's state is memory exhaustion */
	r = &C.by_id[3];
	assert_int_equal(r->exhausted, BATCH_EXHAUSTED_MEMORY);
	assert_true(r->measured.memory_mb == 100);
	batch_queue_delete(q);
}

static void test_without_accounting(void **state)
{
	(void)state;
	/* the stand-in says accounting is disabled: squeue alone, nothing measured */
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_start(q), 0);
	assert_false(batch_queue_features(q) & BATCH_FEATURE_MEASURE);
	put("squeue.out", "1 PENDING N/A Priority\n");
	submit(q, "true");
	int one = 1;
	assert_true(ts_run_until(&C.loop, submitted, &one, TS_WAIT_MS));
	put("squeue.out", "1 FAILED 768 NonZeroExitCode\n");
	run_until_done(1);
	assert_int_equal(C.last.exit_code, 3);
	assert_true(C.last.measured.memory_mb == -1 && C.last.measured.cores == -1);
	assert_true(sacct_calls(&one));
	char *log = get("sacct.log");
	assert_string_equal(log, " -n -P -j 1 -o JobID\n"); /* only the start's check */
	free(log);
	batch_queue_delete(q);
	/* accounting=yes on such a cluster: the start fails */
	q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "accounting", "yes"), 0);
	assert_true(batch_queue_start(q) < 0);
	batch_queue_delete(q);
	/* accounting=no: not even asked */
	unlink("fake/sacct.log");
	q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "accounting", "no"), 0);
	assert_int_equal(batch_queue_set_option(q, "accounting", "maybe"), -EINVAL);
	assert_int_equal(batch_queue_start(q), 0);
	log = get("sacct.log");
	assert_string_equal(log, "");
	free(log);
	batch_queue_delete(q);
}

/* A site without sacct at all: with accounting=auto the start succeeds without it. */
static void test_no_sacct_tool(void **state)
{
	(void)state;
	/* PATH: the stand-ins (sacct removed) and only the tools they use */
	assert_int_equal(unlink("bin/sacct"), 0);
	assert_int_equal(mkdir("sys", 0755), 0);
	assert_int_equal(symlink("/bin/cat", "sys/cat"), 0);
	assert_int_equal(symlink("/usr/bin/flock", "sys/flock"), 0);
	char path[8400];
	snprintf(path, sizeof path, "%s/bin:%s/sys", C.dir, C.dir);
	setenv("PATH", path, 1);
	struct batch_queue *q = make_queue();
	assert_int_equal(batch_queue_start(q), 0);
	assert_false(batch_queue_features(q) & BATCH_FEATURE_MEASURE);
	batch_queue_delete(q);
	q = make_queue();
	assert_int_equal(batch_queue_set_option(q, "accounting", "yes"), 0);
	assert_true(batch_queue_start(q) < 0);
	batch_queue_delete(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_run_name_one_squeue_and_exit_codes, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_exit_code_and_exhaustion, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_submission, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_squeue_failing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_squeue_failing_keeps_finished_jobs, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_remove_in_one_scancel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stop_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_accounting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_without_accounting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_sacct_tool, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
