/* test_mesos.c: unit tests for the pure parts of the mesos driver: the RecordIO parser (records
 * split anywhere, several in one piece, empty records, bad and huge lengths refused), offer
 * resources and matching, task ids carrying the run id, the task's command and TaskInfo, and the
 * mapping of final task states onto batch results (exit status, signal, exhaustion). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mesos_http.h"
#include "mesos_proto.h"
#include "mesos_recordio.h"
#include "banned.h"

struct got {
	char recs[8][64];
	int n;
	int stop_at; /* return 1 on this record (1-based); 0: never */
};

static int take(const char *d, size_t len, void *arg)
{
	struct got *g = arg;
	assert_true(len < sizeof g->recs[0]);
	assert_int_equal(d[len], 0);
	memcpy(g->recs[g->n], d, len);
	g->recs[g->n][len] = 0;
	g->n++;
	return g->stop_at == g->n;
}

static void test_recordio_split(void **st)
{
	(void)st;
	const char *stream = "5\nhello3\nabc0\n12\n{\"type\":\"x\"}";
	/* every way of cutting the stream in two gives the same records */
	for (size_t cut = 0; cut <= strlen(stream); cut++) {
		struct mesos_recordio r;
		struct got g = {0};
		mesos_recordio_init(&r, 0);
		assert_int_equal(mesos_recordio_feed(&r, stream, cut, take, &g), 0);
		assert_int_equal(
		    mesos_recordio_feed(&r, stream + cut, strlen(stream) - cut, take, &g), 0);
		assert_int_equal(g.n, 4);
		assert_string_equal(g.recs[0], "hello");
		assert_string_equal(g.recs[1], "abc");
		assert_string_equal(g.recs[2], "");
		assert_string_equal(g.recs[3], "{\"type\":\"x\"}");
		assert_true(mesos_recordio_idle(&r));
		mesos_recordio_free(&r);
	}
	/* byte by byte */
	struct mesos_recordio r;
	struct got g = {0};
	mesos_recordio_init(&r, 0);
	for (size_t i = 0; i < strlen(stream); i++) {
		assert_int_equal(mesos_recordio_feed(&r, stream + i, 1, take, &g), 0);
		if (i == 3)
			assert_false(mesos_recordio_idle(&r));
	}
	assert_int_equal(g.n, 4);
	mesos_recordio_free(&r);
}

static void test_recordio_stop(void **st)
{
	(void)st;
	struct mesos_recordio r;
	struct got g = {.stop_at = 1};
	mesos_recordio_init(&r, 0);
	assert_int_equal(mesos_recordio_feed(&r, "1\na1\nb", 6, take, &g), 1);
	assert_int_equal(g.n, 1);
	mesos_recordio_free(&r);
}

static void test_recordio_bad(void **st)
{
	(void)st;
	static const char *const bad[] = {"12x\n{", "\n", "-1\nx", " 1\nx", "1a\n"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct mesos_recordio r;
		struct got g = {0};
		mesos_recordio_init(&r, 0);
		assert_int_equal(mesos_recordio_feed(&r, bad[i], strlen(bad[i]), take, &g), -1);
		assert_true(strlen(r.err) > 0);
		/* refused for good until reset */
		assert_int_equal(mesos_recordio_feed(&r, "1\na", 3, take, &g), -1);
		mesos_recordio_reset(&r);
		assert_int_equal(mesos_recordio_feed(&r, "1\na", 3, take, &g), 0);
		assert_int_equal(g.n, 1);
		mesos_recordio_free(&r);
	}
	struct mesos_recordio r;
	struct got g = {0};
	mesos_recordio_init(&r, 0);
	assert_int_equal(mesos_recordio_feed(&r, "12x\n", 4, take, &g), -1);
	assert_string_equal(r.err, "a record length that is not a decimal number (byte 'x')");
	mesos_recordio_free(&r);
}

static void test_recordio_huge(void **st)
{
	(void)st;
	struct mesos_recordio r;
	struct got g = {0};
	/* a cap of 10 bytes: 10 is taken, 11 refused as soon as its digits say so */
	mesos_recordio_init(&r, 10);
	assert_int_equal(mesos_recordio_feed(&r, "10\n0123456789", 13, take, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(mesos_recordio_feed(&r, "11", 2, take, &g), -1);
	assert_string_equal(r.err, "a record longer than the limit of 10 bytes");
	mesos_recordio_free(&r);
	/* the default cap: a length of many digits is refused without overflow */
	mesos_recordio_init(&r, 0);
	assert_int_equal(mesos_recordio_feed(&r, "99999999999999999999999\n", 24, take, &g), -1);
	mesos_recordio_free(&r);
	mesos_recordio_init(&r, 0);
	assert_int_equal(mesos_recordio_feed(&r, "16777217\n", 9, take, &g), -1);
	mesos_recordio_reset(&r);
	assert_int_equal(mesos_recordio_feed(&r, "16777216\n", 9, take, &g), 0);
	mesos_recordio_free(&r);
}

static json_t *offer(double cpus, double mem, double disk)
{
	json_t *o = json_pack("{s:{s:s}, s:{s:s}, s:[]}", "id", "value", "o1", "agent_id", "value",
	                      "a1", "resources");
	json_t *res = json_object_get(o, "resources");
	json_array_append_new(res, json_pack("{s:s, s:s, s:{s:f}}", "name", "cpus", "type",
	                                     "SCALAR", "scalar", "value", cpus));
	json_array_append_new(res, json_pack("{s:s, s:s, s:{s:f}}", "name", "mem", "type", "SCALAR",
	                                     "scalar", "value", mem));
	json_array_append_new(res, json_pack("{s:s, s:s, s:{s:f}}", "name", "disk", "type",
	                                     "SCALAR", "scalar", "value", disk));
	/* resources that are not scalars of these names are not counted */
	json_array_append_new(res, json_pack("{s:s, s:s, s:{s:[]}}", "name", "ports", "type",
	                                     "RANGES", "ranges", "range"));
	json_array_append_new(res, json_pack("{s:s, s:s, s:{s:f}}", "name", "gpus", "type",
	                                     "SCALAR", "scalar", "value", 8.0));
	return o;
}

static void test_offer_matching(void **st)
{
	(void)st;
	json_t *o = offer(2, 1000, 500);
	struct mesos_res have, need;
	assert_int_equal(mesos_offer_resources(o, &have), 0);
	assert_true(have.cpus == 2 && have.mem == 1000 && have.disk == 500);
	/* an undeclared job: 1 core, the default memory, no disk */
	struct batch_resources r = {-1, -1, -1, -1, -1};
	mesos_job_need(&r, 256, 0, &need);
	assert_true(need.cpus == 1 && need.mem == 256 && need.disk == 0);
	assert_true(mesos_fits(&need, &have));
	/* three such jobs fit in memory but only two in cores */
	int n = 0;
	while (mesos_fits(&need, &have)) {
		mesos_take(&have, &need);
		n++;
	}
	assert_int_equal(n, 2);
	/* a job larger in any one resource does not fit */
	assert_int_equal(mesos_offer_resources(o, &have), 0);
	struct batch_resources big_mem = {1, 1001, -1, -1, -1}, big_disk = {1, 10, 501, -1, -1},
	                       big_cpu = {3, 10, -1, -1, -1}, exact = {2, 1000, 500, -1, -1};
	mesos_job_need(&big_mem, 256, 0, &need);
	assert_false(mesos_fits(&need, &have));
	mesos_job_need(&big_disk, 256, 0, &need);
	assert_false(mesos_fits(&need, &have));
	mesos_job_need(&big_cpu, 256, 0, &need);
	assert_false(mesos_fits(&need, &have));
	mesos_job_need(&exact, 256, 0, &need);
	assert_true(mesos_fits(&need, &have));
	/* the resources of a TaskInfo: no disk when none is asked */
	struct mesos_res nd = {1, 100, 0};
	json_t *a = mesos_resources_json(&nd);
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
	json_decref(o);
	/* an offer without an agent is refused */
	o = json_pack("{s:{s:s}, s:[]}", "id", "value", "o", "resources");
	assert_int_equal(mesos_offer_resources(o, &have), -EINVAL);
	json_decref(o);
}

static void test_task_ids(void **st)
{
	(void)st;
	const char *run = "0123456789abcdef0123456789abcdef";
	char id[MESOS_TASK_ID_LEN];
	mesos_task_id(run, 42, id);
	assert_string_equal(id, "htc-0123456789abcdef0123456789abcdef-42");
	assert_true(mesos_task_of_run(id, run));
	assert_false(mesos_task_of_run(id, "0123456789abcdef0123456789abcdee"));
	assert_false(mesos_task_of_run("htc-0123456789abcdef0123456789abcdef", run));
	assert_false(mesos_task_of_run("xyz", run));
}

static void test_task_info(void **st)
{
	(void)st;
	const char *env[] = {"HTC_RUN_ID=abc", "X=a b", NULL};
	struct batch_job_spec spec = {.command = "echo 'hi' > out",
	                              .env = env,
	                              .resources = {2, 300, -1, -1, -1},
	                              .tag = "rule 3"};
	struct mesos_res need = {2, 300, 0};
	json_t *ti = mesos_task_info(&spec, "htc-x-1", "agent-a", &need, "/work dir");
	assert_string_equal(json_string_value(json_object_get(ti, "name")), "rule 3");
	json_t *cmd = json_object_get(ti, "command");
	assert_true(json_is_true(json_object_get(cmd, "shell")));
	const char *text = json_string_value(json_object_get(cmd, "value"));
	assert_non_null(strstr(text, "cd '/work dir' || exit 126"));
	assert_non_null(strstr(text, "/bin/sh -c 'echo '\\''hi'\\'' > out'"));
	assert_non_null(strstr(text, "rm -rf \"$t\""));
	json_t *vars = json_object_get(json_object_get(cmd, "environment"), "variables");
	char *dump = json_dumps(vars, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(dump, "[{\"name\":\"CORES\",\"value\":\"2\"},{\"name\":\"MEMORY\","
	                          "\"value\":\"300\"},{\"name\":\"HTC_RUN_ID\",\"value\":\"abc\"},"
	                          "{\"name\":\"X\",\"value\":\"a b\"}]");
	free(dump);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(ti, "agent_id"), "value")),
	    "agent-a");
	/* no WALL_TIME: no max_completion_time */
	assert_null(json_object_get(ti, "max_completion_time"));
	json_decref(ti);
	/* WALL_TIME 90 s: the task's max_completion_time, in nanoseconds */
	spec.resources.wall_time_s = 90;
	ti = mesos_task_info(&spec, "htc-x-1", "agent-a", &need, "/work dir");
	json_t *mct = json_object_get(ti, "max_completion_time");
	assert_non_null(mct);
	assert_true(json_integer_value(json_object_get(mct, "nanoseconds")) == 90000000000LL);
	json_decref(ti);
}

static void result(const char *state, const char *reason, const char *msg, struct batch_result *r,
                   char **why)
{
	memset(r, 0, sizeof *r);
	*why = mesos_result_from_status(state, reason, msg, r);
}

static void test_state_mapping(void **st)
{
	(void)st;
	assert_int_equal(mesos_state_phase("TASK_STAGING"), MESOS_PHASE_WAITING);
	assert_int_equal(mesos_state_phase("TASK_STARTING"), MESOS_PHASE_WAITING);
	assert_int_equal(mesos_state_phase("TASK_RUNNING"), MESOS_PHASE_RUNNING);
	assert_int_equal(mesos_state_phase("TASK_KILLING"), MESOS_PHASE_RUNNING);
	static const char *const ended[] = {"TASK_FINISHED", "TASK_FAILED",  "TASK_KILLED",
	                                    "TASK_LOST",     "TASK_ERROR",   "TASK_DROPPED",
	                                    "TASK_GONE",     "TASK_UNKNOWN", "TASK_UNREACHABLE"};
	for (size_t i = 0; i < sizeof ended / sizeof *ended; i++)
		assert_int_equal(mesos_state_phase(ended[i]), MESOS_PHASE_ENDED);
	assert_int_equal(mesos_state_phase("TASK_SOMETHING"), MESOS_PHASE_UNKNOWN);
	assert_int_equal(mesos_state_phase(NULL), MESOS_PHASE_UNKNOWN);

	struct batch_result r;
	char *why;
	result("TASK_FINISHED", NULL, "Command exited with status 0", &r, &why);
	assert_null(why);
	assert_true(r.exited_normally && r.exit_code == 0 && !r.exhausted);

	result("TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED", "Command exited with status 7", &r,
	       &why);
	assert_null(why);
	assert_true(r.exited_normally && r.exit_code == 7);

	result("TASK_FAILED", NULL, "Command terminated with signal Killed", &r, &why);
	assert_null(why);
	assert_true(!r.exited_normally && r.signal == SIGKILL);
	result("TASK_FAILED", NULL, "Command terminated with signal SIGSEGV", &r, &why);
	assert_null(why);
	assert_int_equal(r.signal, SIGSEGV);

	/* a failure without an exit status in its message: an error with what Mesos said */
	result("TASK_FAILED", "REASON_EXECUTOR_TERMINATED", "Abnormal executor termination", &r,
	       &why);
	assert_string_equal(why, "mesos: task TASK_FAILED (REASON_EXECUTOR_TERMINATED): Abnormal "
	                         "executor termination");
	assert_false(r.exited_normally);
	free(why);

	result("TASK_LOST", "REASON_AGENT_REMOVED", NULL, &r, &why);
	assert_string_equal(why, "mesos: task TASK_LOST (REASON_AGENT_REMOVED)");
	assert_false(r.exited_normally);
	assert_int_equal(r.exhausted, 0);
	free(why);
	result("TASK_KILLED", NULL, "", &r, &why);
	assert_string_equal(why, "mesos: task TASK_KILLED");
	free(why);
	/* TASK_KILLED with a command's exit message is still killed, not an exit status */
	result("TASK_KILLED", NULL, "Command exited with status 0", &r, &why);
	assert_non_null(why);
	assert_false(r.exited_normally);
	free(why);

	/* limits: exhaustion, whatever the state */
	result("TASK_FAILED", "REASON_CONTAINER_LIMITATION_MEMORY", "Memory limit exceeded", &r,
	       &why);
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_MEMORY);
	assert_false(r.exited_normally);
	free(why);
	result("TASK_FAILED", "REASON_CONTAINER_LIMITATION_DISK", "Disk usage", &r, &why);
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_DISK);
	free(why);
	result("TASK_KILLED", "REASON_MAX_COMPLETION_TIME_REACHED", NULL, &r, &why);
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_WALL_TIME);
	free(why);
	result("TASK_FAILED", "REASON_CONTAINER_LIMITATION", "Command exited with status 137", &r,
	       &why);
	assert_int_equal(r.exhausted, BATCH_EXHAUSTED_MEMORY);
	assert_false(r.exited_normally);
	free(why);
}

static void test_calls(void **st)
{
	(void)st;
	json_t *c = mesos_call_subscribe("htc-x", "alice", NULL, 60);
	char *s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"subscribe\":{\"framework_info\":{\"capabilities\":[{\"type\":"
	                       "\"MULTI_ROLE\"}],\"failover_timeout\":60.0,\"name\":\"htc-x\","
	                       "\"roles\":[\"*\"],\"user\":\"alice\"}},\"type\":\"SUBSCRIBE\"}");
	free(s);
	json_decref(c);
	/* re-subscription: the framework id in both places */
	c = mesos_call_subscribe("htc-x", "alice", "F1", 60);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(c, "framework_id"), "value")), "F1");
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(json_object_get(c, "subscribe"), "framework_info"),
	                        "id"),
	        "value")),
	    "F1");
	json_decref(c);
}

/* A master that is not the leader answers 307 with Location "//host:port/api/v1/scheduler". */
static void test_redirect_location(void **st)
{
	(void)st;
	const char *base = "http://10.0.0.5:5050/api/v1/scheduler";
	struct {
		const char *loc, *want;
	} ok[] = {
	    {"//10.0.0.7:5050/api/v1/scheduler", "http://10.0.0.7:5050/api/v1/scheduler"},
	    {"http://m2:5050/api/v1/scheduler", "http://m2:5050/api/v1/scheduler"},
	    {"https://m3/api/v1/scheduler", "https://m3/api/v1/scheduler"},
	    {"/other/api", "http://10.0.0.5:5050/other/api"},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char *u = mesos_http_resolve(base, ok[i].loc);
		assert_non_null(u);
		assert_string_equal(u, ok[i].want);
		char *a = mesos_http_authority(u);
		assert_true(strlen(a) > 0 && !strchr(a, '/'));
		free(a);
		free(u);
	}
	const char *bad[] = {"", "api/v1/scheduler", "ftp://x/y", "//a b/c"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_null(mesos_http_resolve(base, bad[i]));
	char *a = mesos_http_authority("http://10.0.0.7:5050/api/v1/scheduler");
	assert_string_equal(a, "10.0.0.7:5050");
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recordio_split), cmocka_unit_test(test_recordio_stop),
	    cmocka_unit_test(test_recordio_bad),   cmocka_unit_test(test_recordio_huge),
	    cmocka_unit_test(test_offer_matching), cmocka_unit_test(test_task_ids),
	    cmocka_unit_test(test_task_info),      cmocka_unit_test(test_state_mapping),
	    cmocka_unit_test(test_calls),          cmocka_unit_test(test_redirect_location),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
