/* test_rmsummary.c: unit tests for resource summaries (rmsummary.h): the field table, JSON
 * writing and reading in both number forms, key order, limits parsing (good and bad input),
 * and loading concatenated documents and directories, with malformed files reported by line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "htc_error.h"
#include "path.h"
#include "rmsummary.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static void fill_example(struct rmsummary *s)
{
	rmsummary_init(s);
	s->command = xstrdup("sh -c \"echo hi\"\n");
	s->category = xstrdup("analysis");
	s->task_id = xstrdup("17");
	s->host = xstrdup("node-3");
	s->exit_type = RM_EXIT_NORMAL;
	s->exit_status = 3;
	s->v[RM_START] = 1700000000123456.0;
	s->v[RM_END] = 1700000012623456.0;
	s->v[RM_WALL_TIME] = 12.5;
	s->v[RM_CPU_TIME] = 20.25;
	s->v[RM_CORES] = 1.75;
	s->v[RM_MEMORY] = 1000;
	s->v[RM_DISK] = 12.345;
	s->v[RM_GPUS] = 1;
	s->v[RM_BANDWIDTH] = 0.5;
	s->v[RM_TOTAL_FILES] = 7;
	s->v[RM_MAX_CONCURRENT_PROCESSES] = 4;
	s->peak_times[RM_MEMORY] = 3.25;
	s->peak_times[RM_CORES] = 10;
	s->n_extra = 2;
	s->extra_keys = xcalloc(2, sizeof(char *));
	s->extra_values = xcalloc(2, sizeof(char *));
	s->extra_keys[0] = xstrdup("experiment");
	s->extra_values[0] = xstrdup("{\"run\":4,\"tag\":\"x\"}");
	s->extra_keys[1] = xstrdup("note");
	s->extra_values[1] = xstrdup("\"hello\"");
}

static void assert_same(const struct rmsummary *a, const struct rmsummary *b)
{
	assert_string_equal(a->command, b->command);
	assert_string_equal(a->category, b->category);
	assert_string_equal(a->task_id, b->task_id);
	assert_string_equal(a->host, b->host);
	assert_int_equal(a->exit_type, b->exit_type);
	assert_int_equal(a->exit_status, b->exit_status);
	assert_int_equal(a->signal, b->signal);
	for (int i = 0; i < RM_N_FIELDS; i++) {
		if (a->v[i] != b->v[i])
			fail_msg("field %s: %.17g != %.17g", rmsummary_field_name(i), a->v[i],
			         b->v[i]);
		if (a->peak_times[i] != b->peak_times[i])
			fail_msg("peak time %s: %.17g != %.17g", rmsummary_field_name(i),
			         a->peak_times[i], b->peak_times[i]);
		if (a->limits_exceeded[i] != b->limits_exceeded[i])
			fail_msg("limit %s: %.17g != %.17g", rmsummary_field_name(i),
			         a->limits_exceeded[i], b->limits_exceeded[i]);
	}
	assert_int_equal(a->n_extra, b->n_extra);
	for (size_t i = 0; i < a->n_extra; i++) {
		assert_string_equal(a->extra_keys[i], b->extra_keys[i]);
		assert_string_equal(a->extra_values[i], b->extra_values[i]);
	}
}

static void test_fields(void **state)
{
	(void)state;
	assert_string_equal(rmsummary_field_name(RM_MEMORY), "memory");
	assert_string_equal(rmsummary_field_unit(RM_MEMORY), "MB");
	assert_string_equal(rmsummary_field_unit(RM_START), "us");
	assert_string_equal(rmsummary_field_unit(RM_WALL_TIME), "s");
	assert_string_equal(rmsummary_field_unit(RM_CORES_AVG), "cores");
	assert_string_equal(rmsummary_field_unit(RM_BANDWIDTH), "Mbps");
	assert_string_equal(rmsummary_field_unit(RM_CONTEXT_SWITCHES), "switches");
	assert_string_equal(rmsummary_field_unit(RM_TOTAL_FILES), "files");
	assert_string_equal(rmsummary_field_unit(RM_TOTAL_PROCESSES), "procs");
	assert_null(rmsummary_field_name(RM_N_FIELDS));
	assert_null(rmsummary_field_name(-1));
	assert_null(rmsummary_field_unit(RM_N_FIELDS));
	for (int i = 0; i < RM_N_FIELDS; i++) {
		assert_non_null(rmsummary_field_name(i));
		assert_int_equal(rmsummary_field_lookup(rmsummary_field_name(i)), i);
	}
	assert_int_equal(rmsummary_field_lookup("nonsense"), -1);
	assert_int_equal(rmsummary_field_lookup(NULL), -1);
}

static void round_trip(int pprint, int compact)
{
	struct rmsummary a, b;
	char err[256] = "";
	fill_example(&a);
	char *text = rmsummary_to_json(&a, pprint, compact);
	assert_non_null(text);
	rmsummary_init(&b);
	int r = rmsummary_from_json(text, &b, err, sizeof err);
	if (r)
		fail_msg("from_json: %s\n%s", err, text);
	assert_same(&a, &b);
	free(text);
	rmsummary_clear(&a);
	rmsummary_clear(&b);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(1, 0);
	round_trip(0, 0);
	round_trip(1, 1);
	round_trip(0, 1);
}

static void test_json_forms(void **state)
{
	(void)state;
	struct rmsummary a;
	fill_example(&a);
	char *pretty = rmsummary_to_json(&a, 1, 0);
	char *flat = rmsummary_to_json(&a, 0, 1);
	/* Units form, one key per line; compact form with bare numbers on one line. */
	assert_non_null(strstr(pretty, "\n  \"memory\": [1000, \"MB\"],\n"));
	assert_non_null(strstr(pretty, "\"wall_time\": [12.5, \"s\"]"));
	assert_non_null(strstr(pretty, "\"start\": [1700000000123456, \"us\"]"));
	assert_non_null(strstr(pretty, "\"exit_type\": \"normal\""));
	assert_non_null(strstr(pretty, "\"exit_status\": 3"));
	assert_null(strstr(pretty, "\"signal\""));
	assert_non_null(strstr(pretty, "\"peak_times\": {\"cores\": [10, \"s\"], \"memory\": "
	                               "[3.25, \"s\"]}"));
	assert_non_null(strstr(flat, "\"memory\":1000,"));
	assert_non_null(strstr(flat, "\"disk\":12.345,"));
	assert_null(strchr(flat, '\n'));
	assert_null(strstr(flat, "\"MB\""));
	/* Key order: descriptive fields, numbers in enum order, peak_times, extras. */
	const char *order[] = {"\"command\"",
	                       "\"category\"",
	                       "\"task_id\"",
	                       "\"host\"",
	                       "\"exit_type\"",
	                       "\"exit_status\"",
	                       "\"start\"",
	                       "\"end\"",
	                       "\"wall_time\"",
	                       "\"cores\"",
	                       "\"gpus\"",
	                       "\"memory\"",
	                       "\"disk\"",
	                       "\"bandwidth\"",
	                       "\"max_concurrent_processes\"",
	                       "\"total_files\"",
	                       "\"peak_times\"",
	                       "\"experiment\"",
	                       "\"note\"",
	                       NULL};
	for (int pass = 0; pass < 2; pass++) {
		const char *text = pass ? flat : pretty;
		const char *prev = text;
		for (int i = 0; order[i]; i++) {
			const char *p = strstr(text, order[i]);
			if (!p || p < prev)
				fail_msg("key %s missing or out of order in\n%s", order[i], text);
			prev = p;
		}
	}
	free(pretty);
	free(flat);
	rmsummary_clear(&a);
}

static void test_number_rounding(void **state)
{
	(void)state;
	struct rmsummary a;
	rmsummary_init(&a);
	a.v[RM_MEMORY] = 12.34567;
	a.v[RM_TOTAL_PROCESSES] = 3.6;
	a.v[RM_CORES] = 2.0;
	a.v[RM_MACHINE_LOAD] = 0.1;
	char *t = rmsummary_to_json(&a, 0, 1);
	assert_string_equal(t, "{\"cores\":2,\"memory\":12.346,\"machine_load\":0.1,"
	                       "\"total_processes\":4}");
	free(t);
	rmsummary_init(&a);
	t = rmsummary_to_json(&a, 1, 0);
	assert_string_equal(t, "{}");
	free(t);
}

static void test_limits_exit(void **state)
{
	(void)state;
	struct rmsummary a, b;
	char err[256];
	rmsummary_init(&a);
	a.exit_type = RM_EXIT_LIMITS;
	a.signal = 9;
	a.v[RM_MEMORY] = 130;
	a.limits_exceeded[RM_MEMORY] = 100;
	char *t = rmsummary_to_json(&a, 1, 0);
	assert_non_null(strstr(t, "\"exit_type\": \"limits\""));
	assert_non_null(strstr(t, "\"signal\": 9"));
	assert_non_null(strstr(t, "\"limits_exceeded\": {\"memory\": [100, \"MB\"]}"));
	rmsummary_init(&b);
	assert_int_equal(rmsummary_from_json(t, &b, err, sizeof err), 0);
	assert_int_equal(b.exit_type, RM_EXIT_LIMITS);
	assert_int_equal(b.signal, 9);
	assert_true(b.limits_exceeded[RM_MEMORY] == 100);
	assert_true(b.limits_exceeded[RM_CORES] == -1);
	free(t);
	rmsummary_clear(&b);
}

static void expect_json_error(const char *text, const char *needle)
{
	struct rmsummary s;
	char err[256] = "";
	rmsummary_init(&s);
	int r = rmsummary_from_json(text, &s, err, sizeof err);
	if (r != HTC_EPARSE || !strstr(err, needle))
		fail_msg("from_json(%s) = %d \"%s\"; want HTC_EPARSE naming \"%s\"", text, r, err,
		         needle);
	rmsummary_clear(&s);
}

static void test_from_json(void **state)
{
	(void)state;
	struct rmsummary s;
	char err[256];
	rmsummary_init(&s);
	/* Units are converted; unknown keys are kept as extras; snapshots are skipped. */
	assert_int_equal(rmsummary_from_json("{\"memory\": [2, \"GB\"], \"wall_time\": [1500, "
	                                     "\"ms\"], \"disk\": [512, \"KB\"], \"start\": [2, "
	                                     "\"s\"], \"cores\": 3, \"whatever\": [1, 2], "
	                                     "\"snapshots\": [{}]}",
	                                     &s, err, sizeof err),
	                 0);
	assert_true(s.v[RM_MEMORY] == 2048);
	assert_true(s.v[RM_WALL_TIME] == 1.5);
	assert_true(s.v[RM_DISK] == 0.5);
	assert_true(s.v[RM_START] == 2e6);
	assert_true(s.v[RM_CORES] == 3);
	assert_true(s.v[RM_GPUS] == -1);
	assert_int_equal(s.n_extra, 1);
	assert_string_equal(s.extra_keys[0], "whatever");
	assert_string_equal(s.extra_values[0], "[1,2]");
	/* Absent fields are left as they were. */
	assert_int_equal(rmsummary_from_json("{\"gpus\": 1}", &s, err, sizeof err), 0);
	assert_true(s.v[RM_MEMORY] == 2048);
	assert_true(s.v[RM_GPUS] == 1);
	rmsummary_clear(&s);

	expect_json_error("{\"memory\": \"lots\"}", "memory");
	expect_json_error("{\"memory\": [1, \"furlongs\"]}", "furlongs");
	expect_json_error("{\"cores\": [1, 2]}", "cores");
	expect_json_error("{\"command\": 5}", "command");
	expect_json_error("{\"exit_type\": \"exploded\"}", "exit_type");
	expect_json_error("{\"exit_status\": \"0\"}", "exit_status");
	expect_json_error("{\"peak_times\": 3}", "peak_times");
	expect_json_error("{\"peak_times\": {\"memory\": \"x\"}}", "peak_times.memory");
	expect_json_error("[1, 2]", "object");
	expect_json_error("{\"disk\": [1e305, \"PB\"]}", "disk");
	expect_json_error("{\n\"memory\": 1,\n\"cores\" 2}", "line 3");
	expect_json_error("", "line");
}

static void test_copy_merge_exceeds(void **state)
{
	(void)state;
	struct rmsummary a, b, lim;
	fill_example(&a);
	rmsummary_init(&b);
	b.command = xstrdup("old");
	rmsummary_copy(&b, &a);
	assert_same(&a, &b);
	assert_ptr_not_equal(a.command, b.command);
	rmsummary_copy(&b, &b);
	assert_same(&a, &b);

	struct rmsummary m;
	rmsummary_init(&m);
	m.v[RM_MEMORY] = 1500;
	m.peak_times[RM_MEMORY] = 9;
	m.v[RM_CORES] = 1;
	rmsummary_merge_max(&b, &m);
	assert_true(b.v[RM_MEMORY] == 1500);
	assert_true(b.peak_times[RM_MEMORY] == 9);
	assert_true(b.v[RM_CORES] == 1.75);
	assert_true(b.peak_times[RM_CORES] == 10);

	rmsummary_init(&lim);
	lim.v[RM_MEMORY] = 1200;
	lim.v[RM_CORES] = 1;
	lim.v[RM_SWAP_MEMORY] = 0;
	uint64_t which = 0;
	assert_int_equal(rmsummary_exceeds(&m, &lim, &which), 1);
	assert_int_equal(which, UINT64_C(1) << RM_MEMORY);
	lim.v[RM_MEMORY] = 1500; /* equal is not exceeded */
	assert_int_equal(rmsummary_exceeds(&m, &lim, &which), 0);
	assert_int_equal(which, 0);
	assert_int_equal(rmsummary_exceeds(&m, &lim, NULL), 0);
	rmsummary_clear(&a);
	rmsummary_clear(&b);
	rmsummary_clear(NULL);
}

static void test_parse_limits(void **state)
{
	(void)state;
	struct rmsummary l;
	char err[256];
	rmsummary_init(&l);
	assert_int_equal(rmsummary_parse_limits("memory: 1000, cores: 2", &l, err, sizeof err), 0);
	assert_true(l.v[RM_MEMORY] == 1000);
	assert_true(l.v[RM_CORES] == 2);
	assert_true(l.v[RM_DISK] == -1);

	rmsummary_init(&l);
	assert_int_equal(rmsummary_parse_limits("  memory: 2G\ndisk : 1.5T,\n wall_time: 1h ,"
	                                        "cores=0.5\n\n",
	                                        &l, err, sizeof err),
	                 0);
	assert_true(l.v[RM_MEMORY] == 2048);
	assert_true(l.v[RM_DISK] == 1572864);
	assert_true(l.v[RM_WALL_TIME] == 3600);
	assert_true(l.v[RM_CORES] == 0.5);

	rmsummary_init(&l);
	assert_int_equal(rmsummary_parse_limits(" {\"memory\": \"4G\", \"cores\": 2, \"disk\": "
	                                        "[1, \"GB\"], \"wall_time\": \"2m\"}",
	                                        &l, err, sizeof err),
	                 0);
	assert_true(l.v[RM_MEMORY] == 4096);
	assert_true(l.v[RM_CORES] == 2);
	assert_true(l.v[RM_DISK] == 1024);
	assert_true(l.v[RM_WALL_TIME] == 120);

	rmsummary_init(&l);
	assert_int_equal(rmsummary_parse_limits("", &l, err, sizeof err), 0);
	assert_true(l.v[RM_MEMORY] == -1);
}

static void expect_limits_error(const char *text, const char *needle)
{
	struct rmsummary l;
	char err[256] = "";
	rmsummary_init(&l);
	int r = rmsummary_parse_limits(text, &l, err, sizeof err);
	if (r != HTC_EPARSE || !strstr(err, needle))
		fail_msg("parse_limits(%s) = %d \"%s\"; want HTC_EPARSE naming \"%s\"", text, r,
		         err, needle);
	for (int i = 0; i < RM_N_FIELDS; i++)
		if (l.v[i] != -1)
			fail_msg("parse_limits(%s) changed %s on error", text,
			         rmsummary_field_name(i));
}

static void test_parse_limits_bad(void **state)
{
	(void)state;
	expect_limits_error("memory: 100, foo: 3", "foo");
	expect_limits_error("memory: 12X", "12X");
	expect_limits_error("memory: 12X", "memory");
	expect_limits_error("cores: 2, memory", "memory");
	expect_limits_error("cores: -1", "cores");
	expect_limits_error("cores: two", "two");
	expect_limits_error("cores: ", "cores");
	expect_limits_error("wall_time: 3 fortnights", "wall_time");
	expect_limits_error("cores: 1, cores: 2", "twice");
	expect_limits_error("{\"memory\": 1, \"bogus\": 2}", "bogus");
	expect_limits_error("{\"memory\": \"12X\"}", "memory");
	expect_limits_error("{\"cores\": -2}", "cores");
	expect_limits_error("{\"cores\": true}", "cores");
	expect_limits_error("{\"cores\": 2", "line 1");
	expect_limits_error("{\"a\": 1} x", "line 1");
	struct rmsummary l;
	rmsummary_init(&l);
	assert_int_equal(rmsummary_parse_limits(NULL, &l, NULL, 0), HTC_EPARSE);
}

struct collected {
	int n;
	int stop_after;
	char ids[16][32];
	double memory[16];
};

static int collect(const struct rmsummary *s, void *arg)
{
	struct collected *c = arg;
	if (c->n < 16) {
		snprintf(c->ids[c->n], sizeof c->ids[c->n], "%s", s->task_id ? s->task_id : "-");
		c->memory[c->n] = s->v[RM_MEMORY];
	}
	c->n++;
	if (c->stop_after && c->n >= c->stop_after)
		return 7;
	return 0;
}

static void test_load_concatenated(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_rmsummary");
	char *file = path_join(dir, "all.json");
	struct rmsummary a;
	fill_example(&a);
	char *pretty = rmsummary_to_json(&a, 1, 0);
	char *flat = rmsummary_to_json(&a, 0, 1);
	char *text = xasprintf("%s\n%s{\"task_id\": \"3\", \"memory\": 5}\n\n\t %s  \n", pretty,
	                       flat, pretty);
	ts_write_file(file, text);
	struct collected c = {0};
	char err[256] = "";
	int r = rmsummary_load(file, collect, &c, err, sizeof err);
	if (r)
		fail_msg("load: %d %s", r, err);
	assert_int_equal(c.n, 4);
	assert_string_equal(c.ids[0], "17");
	assert_string_equal(c.ids[1], "17");
	assert_string_equal(c.ids[2], "3");
	assert_string_equal(c.ids[3], "17");
	assert_true(c.memory[2] == 5);
	assert_true(c.memory[3] == 1000);

	/* A nonzero return stops the walk and is passed back. */
	struct collected stop = {.stop_after = 2};
	assert_int_equal(rmsummary_load(file, collect, &stop, err, sizeof err), 7);
	assert_int_equal(stop.n, 2);

	/* An empty file holds no summaries. */
	ts_write_file(file, " \n\n");
	struct collected none = {0};
	assert_int_equal(rmsummary_load(file, collect, &none, err, sizeof err), 0);
	assert_int_equal(none.n, 0);

	free(text);
	free(pretty);
	free(flat);
	free(file);
	rmsummary_clear(&a);
	ts_tmpdir_remove(dir);
}

static void test_load_directory(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_rmsummary");
	const char *files[][2] = {
	    {"b.summary", "{\"task_id\": \"b\", \"memory\": [20, \"MB\"]}"},
	    {"a.summary", "{\"task_id\": \"a1\"}\n{\"task_id\": \"a2\"}"},
	    {"c.txt", "not json"},
	    {"c2.summary", "{\"task_id\": \"c2\"}"},
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *p = path_join(dir, files[i][0]);
		ts_write_file(p, files[i][1]);
		free(p);
	}
	struct collected c = {0};
	char err[256] = "";
	int r = rmsummary_load(dir, collect, &c, err, sizeof err);
	if (r)
		fail_msg("load: %d %s", r, err);
	assert_int_equal(c.n, 4);
	assert_string_equal(c.ids[0], "a1");
	assert_string_equal(c.ids[1], "a2");
	assert_string_equal(c.ids[2], "b");
	assert_string_equal(c.ids[3], "c2");
	assert_true(c.memory[2] == 20);

	/* A malformed file in the directory is named in the error. */
	char *bad = path_join(dir, "b2.summary");
	ts_write_file(bad, "{\"task_id\": \"x\",\n \"cores\": oops}");
	struct collected c2 = {0};
	assert_int_equal(rmsummary_load(dir, collect, &c2, err, sizeof err), HTC_EPARSE);
	char *want = xasprintf("%s:2: ", bad);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", err, want);
	assert_int_equal(c2.n, 3); /* a1, a2 and b came first */
	free(want);
	free(bad);
	ts_tmpdir_remove(dir);
}

static void expect_load_error(const char *dir, const char *text, int line, const char *needle)
{
	char *file = path_join(dir, "bad.json");
	ts_write_file(file, text);
	struct collected c = {0};
	char err[256] = "";
	int r = rmsummary_load(file, collect, &c, err, sizeof err);
	char *want = xasprintf("%s:%d: ", file, line);
	if (r != HTC_EPARSE || strncmp(err, want, strlen(want)) != 0 || !strstr(err, needle))
		fail_msg("load of <<%s>> = %d \"%s\"; want HTC_EPARSE \"%s...%s\"", text, r, err,
		         want, needle);
	free(want);
	free(file);
}

static void test_load_malformed(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_rmsummary");
	expect_load_error(dir, "{\"memory\": 1}\n\n{\n  \"cores\": 2,\n  oops\n}\n", 5, "");
	expect_load_error(dir, "{\"memory\": 1}\n{\n  \"cores\": [2, \"parsecs\"]\n}", 2,
	                  "parsecs");
	expect_load_error(dir, "\n\n[1, 2]", 3, "object");
	expect_load_error(dir, "{\"memory\": 1}\n{\"memory\": 2", 2, "");
	expect_load_error(dir, "{\"a\": 1} garbage", 1, "");
	expect_load_error(dir, "42", 1, "");

	char err[256] = "";
	struct collected c = {0};
	char *missing = path_join(dir, "missing.json");
	assert_int_equal(rmsummary_load(missing, collect, &c, err, sizeof err), -ENOENT);
	assert_non_null(strstr(err, "missing.json"));
	free(missing);

	/* Files above the cap are refused before parsing. */
	char *big = path_join(dir, "big.json");
	int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)65 * 1024 * 1024), 0);
	close(fd);
	assert_int_equal(rmsummary_load(big, collect, &c, err, sizeof err), HTC_ETOOBIG);
	assert_non_null(strstr(err, "big.json"));
	assert_non_null(strstr(err, "64 MB"));
	assert_int_equal(c.n, 0);
	free(big);
	ts_tmpdir_remove(dir);
}

/* Every prefix of a valid document, and random damage to it, is either accepted or refused
 * with a message; none may crash (run under ASan in the sanitizer suite). */
static void test_garbage(void **state)
{
	(void)state;
	struct rmsummary a;
	fill_example(&a);
	a.exit_type = RM_EXIT_LIMITS;
	a.limits_exceeded[RM_DISK] = 3;
	char *text = rmsummary_to_json(&a, 1, 0);
	size_t len = strlen(text);
	char *buf = xmalloc(len + 1);
	static const char noise[] = " {}[]\",:0-9.eaZ\\";
	unsigned seed = 12345;
	int refused = 0;
	for (size_t cut = 0; cut <= len; cut++) {
		memcpy(buf, text, cut);
		buf[cut] = '\0';
		for (int round = 0; round < 3; round++) {
			if (round > 0 && cut > 0) {
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % cut] = noise[(seed >> 20) % (sizeof noise - 1)];
			}
			struct rmsummary s;
			char err[128] = "";
			rmsummary_init(&s);
			int r = rmsummary_from_json(buf, &s, err, sizeof err);
			if (r) {
				assert_int_equal(r, HTC_EPARSE);
				assert_true(err[0] != '\0');
				refused++;
			}
			rmsummary_clear(&s);
			rmsummary_init(&s);
			r = rmsummary_parse_limits(buf, &s, err, sizeof err);
			assert_true(r == 0 || r == HTC_EPARSE);
		}
	}
	assert_true(refused > (int)len);
	free(buf);
	free(text);
	rmsummary_clear(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fields),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_json_forms),
	    cmocka_unit_test(test_number_rounding),
	    cmocka_unit_test(test_limits_exit),
	    cmocka_unit_test(test_from_json),
	    cmocka_unit_test(test_copy_merge_exceeds),
	    cmocka_unit_test(test_parse_limits),
	    cmocka_unit_test(test_parse_limits_bad),
	    cmocka_unit_test(test_load_concatenated),
	    cmocka_unit_test(test_load_directory),
	    cmocka_unit_test(test_load_malformed),
	    cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
