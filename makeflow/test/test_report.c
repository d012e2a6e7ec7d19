/* test_report.c: unit tests of the run report: the SVG writer (escaping, short numbers, element
 * counts), the gathering of a report from a log written by txlog (every attempt, retries,
 * failures, the workflow's categories and lines, monitor summaries, kept stderr), what bad or
 * missing input gives (an error naming the file and line, or a note), the page's sections, and
 * the aggregation of the timelines above REPORT_MAX_ELEMENTS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buffer.h"
#include "htc_error.h"
#include "path.h"
#include "report_data.h"
#include "report_html.h"
#include "report_plot.h"
#include "stringtools.h"
#include "svg_writer.h"
#include "txlog.h"
#include "xalloc.h"

#include "ts_tmpdir.h"
#include "banned.h"

static void test_escape_and_numbers(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	assert_int_equal(svg_escape(&b, "a<b>&\"c'"), 0);
	assert_string_equal(buffer_tostring(&b), "a&lt;b&gt;&amp;&quot;c&#39;");
	char n[32];
	assert_string_equal(svg_num(1.5, n, sizeof n), "1.5");
	assert_string_equal(svg_num(2.0, n, sizeof n), "2");
	assert_string_equal(svg_num(-0.001, n, sizeof n), "0");
	assert_string_equal(svg_num(3.14159, n, sizeof n), "3.14");
	buffer_free(&b);
}

static void test_svg_elements(void **state)
{
	(void)state;
	struct buffer b;
	buffer_init(&b, 0);
	struct svg s;
	assert_int_equal(svg_begin(&s, &b, 100, 50, NULL, "x<y"), 0);
	assert_int_equal(svg_rect(&s, 1, 2, 3, 4, "#fff", 0.5, "bar", "t<1>"), 0);
	assert_int_equal(svg_text(&s, 0, 0, "start", 10, "a&b"), 0);
	double xs[] = {0, 1}, ys[] = {2, 3};
	assert_int_equal(svg_polyline(&s, xs, ys, 2, "#000", 1), 0);
	assert_int_equal(svg_end(&s), 0);
	assert_int_equal(s.elements, 3);
	const char *t = buffer_tostring(&b);
	assert_non_null(strstr(t, "aria-label=\"x&lt;y\""));
	assert_non_null(strstr(t, "<rect x=\"1\" y=\"2\" width=\"3\" height=\"4\" fill=\"#fff\" "
	                          "fill-opacity=\"0.5\" class=\"bar\"><title>t&lt;1&gt;</title>"));
	assert_non_null(strstr(t, ">a&amp;b</text>"));
	assert_non_null(strstr(t, "points=\"0,2 1,3\""));
	buffer_free(&b);
	/* a capped buffer refuses what does not fit */
	buffer_init(&b, 16);
	assert_int_equal(svg_begin(&s, &b, 100, 50, NULL, "label"), HTC_ETOOBIG);
	buffer_free(&b);
}

struct fixture {
	char *dir;
	char *log;
};

static const char *workflow_text = "CATEGORY=small\n"
                                   "MEMORY=50\n"
                                   "a.txt:\n"
                                   "\techo a > a.txt\n"
                                   "CATEGORY=bad\n"
                                   "b.txt b.err: a.txt\n"
                                   "\texit 3\n";

/* A run of the two-rule workflow: rule 0 completes, rule 1 fails twice (exit 3). */
static void write_run(struct fixture *f, int with_end)
{
	char *wf = path_join(f->dir, "wf.mf");
	ts_write_file(wf, workflow_text);
	struct txlog *t = txlog_open(f->log, wf, -1);
	assert_non_null(t);
	assert_int_equal(txlog_start(t, 42, 2, NULL), 0);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_RUNNING, 1), 0);
	assert_int_equal(txlog_node(t, 0, TXLOG_NODE_COMPLETE, 1), 0);
	assert_int_equal(txlog_node(t, 1, TXLOG_NODE_RUNNING, 2), 0);
	assert_int_equal(txlog_node(t, 1, TXLOG_NODE_RUNNING, 2), 0);
	assert_int_equal(txlog_node_failed(t, 1, 2, "exit:3"), 0);
	if (with_end)
		assert_int_equal(txlog_end(t, 1, "failed"), 0);
	txlog_close(t);
	free(wf);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof *f);
	f->dir = ts_tmpdir_create("test_report");
	f->log = path_join(f->dir, "wf.mf.makeflowlog");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	ts_tmpdir_remove(f->dir);
	free(f->log);
	free(f);
	return 0;
}

static int has_note(const struct report *r, const char *part)
{
	for (size_t i = 0; i < r->nnotes; i++)
		if (strstr(r->notes[i], part))
			return 1;
	return 0;
}

static void test_load_run(void **state)
{
	struct fixture *f = *state;
	write_run(f, 1);
	char *mon = path_join(f->dir, "mon");
	path_mkdir_p(mon, 0755);
	char *sum = path_join(mon, "resource-rule-0.summary");
	ts_write_file(sum, "{\"host\": \"nodeA\", \"exit_type\": \"normal\", \"exit_status\": 0, "
	                   "\"memory\": [12.5, \"MB\"], \"cores\": [0.5, \"cores\"], "
	                   "\"wall_time\": [2, \"s\"]}");
	char *failed = path_join(f->dir, "makeflow.failed.1");
	path_mkdir_p(failed, 0755);
	char *info = path_join(failed, "INFO.json");
	ts_write_file(info, "{\"exit_code\": 3, \"outputs\": [{\"dag_name\": \"b.txt\"}, "
	                    "{\"dag_name\": \"b.err\"}]}");
	char *err_file = path_join(failed, "b.err");
	char lines[512] = "";
	for (int i = 1; i <= 24; i++)
		snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "l%d\n", i);
	snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "last words\n");
	ts_write_file(err_file, lines);
	char err[1024] = "";
	struct report_input in = {.log = f->log, .monitor_dir = mon};
	struct report *r = report_load(&in, err, sizeof err);
	assert_non_null(r);
	assert_int_equal(r->nrules, 2);
	assert_int_equal(r->nattempts, 3);
	assert_int_equal(r->attempts[0].outcome, REPORT_COMPLETE);
	assert_int_equal(r->attempts[1].outcome, REPORT_RETRIED);
	assert_int_equal(r->attempts[2].outcome, REPORT_FAILED);
	assert_int_equal(r->rules[1].attempts, 2);
	assert_string_equal(r->rules[1].failure, "exit:3");
	assert_string_equal(r->rules[0].category, "small");
	assert_string_equal(r->rules[1].category, "bad");
	assert_int_equal(r->rules[1].line, 6);
	assert_true(r->rules[0].alloc[REPORT_MEM] == 50);
	assert_int_equal(r->rules[0].measured, 1);
	assert_string_equal(r->rules[0].host, "nodeA");
	assert_true(r->rules[0].peak[REPORT_MEM] == 12.5);
	assert_int_equal(r->rules[1].measured, 0);
	assert_int_equal(r->rules[1].exit_status, 3);
	/* the last 20 lines of the kept stderr output */
	assert_true(str_has_prefix(r->rules[1].stderr_tail, "l6\nl7\n"));
	assert_true(str_has_suffix(r->rules[1].stderr_tail, "\nl24\nlast words"));
	assert_int_equal(r->nnotes, 0);

	struct buffer b;
	buffer_init(&b, REPORT_MAX_HTML);
	struct report_html_opts o = {.use_dot = 0};
	assert_int_equal(report_html(&b, r, &o), 0);
	const char *t = buffer_tostring(&b);
	const char *ids[] = {"id=\"summary\"",
	                     "id=\"timeline\"",
	                     "id=\"concurrency\"",
	                     "id=\"resources\"",
	                     "id=\"failures\"",
	                     "id=\"dag\"",
	                     "class=\"failed-rule\"",
	                     "exit status 3",
	                     "last words",
	                     "Drawn by makeflow_report (layered by depth)."};
	for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
		assert_non_null(strstr(t, ids[i]));
	/* memory waste of "small": (50 - 12.5) MB x 2 s */
	assert_non_null(strstr(t, "<td class=n>75</td>"));
	assert_null(strstr(t, "<script"));
	assert_null(strstr(t, "http://www.w3.org/1999")); /* nothing but the SVG namespace */
	assert_null(strstr(t, "id=\"aggregated\""));
	buffer_free(&b);
	/* time axes tick at round steps in a unit that suits the run: 250 s in whole minutes */
	r->t1_us = r->t0_us + 250 * 1000000LL;
	buffer_init(&b, REPORT_MAX_HTML);
	assert_int_equal(report_html(&b, r, &o), 0);
	t = buffer_tostring(&b);
	assert_non_null(strstr(t, ">0 min</text>"));
	assert_non_null(strstr(t, ">4 min</text>"));
	assert_null(strstr(t, ">5 min</text>"));
	assert_null(strstr(t, "4.16"));
	buffer_free(&b);
	report_delete(r);
	/* what makeflow captured of the failed try (INFO.json's stderr_tail) comes first */
	ts_write_file(info, "{\"exit_code\": 3, \"stderr_tail\": \"captured <here>\", "
	                    "\"outputs\": [{\"dag_name\": \"b.err\"}]}");
	r = report_load(&in, err, sizeof err);
	assert_non_null(r);
	assert_string_equal(r->rules[1].stderr_tail, "captured <here>");
	report_delete(r);
	free(err_file);
	free(info);
	free(failed);
	free(sum);
	free(mon);
}

static void test_missing_inputs_are_notes(void **state)
{
	struct fixture *f = *state;
	write_run(f, 0);
	/* a torn last line, as a running or killed makeflow leaves it */
	FILE *fp = fopen(f->log, "a");
	fputs("N 17958 0 2", fp);
	fclose(fp);
	char *wf = path_join(f->dir, "wf.mf");
	unlink(wf);
	char *mon = path_join(f->dir, "nomon");
	char err[1024] = "";
	struct report_input in = {.log = f->log, .monitor_dir = mon};
	struct report *r = report_load(&in, err, sizeof err);
	assert_non_null(r);
	assert_true(has_note(r, "incomplete line"));
	assert_true(has_note(r, "was not found"));
	assert_true(has_note(r, "does not exist"));
	assert_string_equal(r->rules[0].category, "(unknown)");
	assert_int_equal(r->progress.ended, 0);
	struct buffer b;
	buffer_init(&b, REPORT_MAX_HTML);
	struct report_html_opts o = {0};
	assert_int_equal(report_html(&b, r, &o), 0);
	assert_non_null(strstr(buffer_tostring(&b), "not ended"));
	assert_non_null(strstr(buffer_tostring(&b), "The workflow was not loaded"));
	buffer_free(&b);
	report_delete(r);
	free(mon);
	free(wf);
}

/* A summary that does not parse is named and left out; one that says the rule was stopped for a
 * limit marks its last attempt exhausted even when the log says only that it failed. */
static void test_summaries(void **state)
{
	struct fixture *f = *state;
	write_run(f, 1);
	char *mon = path_join(f->dir, "mon");
	path_mkdir_p(mon, 0755);
	char *s0 = path_join(mon, "resource-rule-0.summary");
	ts_write_file(s0, "{\"memory\": [12, ");
	char *s1 = path_join(mon, "resource-rule-1.summary");
	ts_write_file(s1, "{\"exit_type\": \"limits\", \"signal\": 9, \"memory\": [80, \"MB\"],"
	                  " \"limits_exceeded\": {\"memory\": [50, \"MB\"]}}");
	char err[1024] = "";
	struct report_input in = {.log = f->log, .monitor_dir = mon};
	struct report *r = report_load(&in, err, sizeof err);
	assert_non_null(r);
	assert_true(has_note(r, "resource-rule-0.summary: "));
	assert_int_equal(r->rules[0].measured, 0);
	assert_int_equal(r->rules[1].measured, 1);
	assert_int_equal(r->rules[1].exhausted, 1);
	assert_int_equal(r->attempts[2].outcome, REPORT_EXHAUSTED);
	assert_int_equal(r->attempts[1].outcome, REPORT_RETRIED);
	report_delete(r);
	free(s0);
	free(s1);
	free(mon);
}

static void test_bad_log_names_file_and_line(void **state)
{
	struct fixture *f = *state;
	write_run(f, 1);
	FILE *fp = fopen(f->log, "a");
	fputs("this is not a record\n", fp);
	fclose(fp);
	char err[1024] = "";
	struct report_input in = {.log = f->log};
	assert_null(report_load(&in, err, sizeof err));
	char *want = xasprintf("%s:9:", f->log);
	assert_non_null(strstr(err, want));
	free(want);

	ts_write_file(f->log, "# STARTED 123\n");
	assert_null(report_load(&in, err, sizeof err));
	assert_non_null(strstr(err, "CCTools"));

	ts_write_file(f->log, "");
	assert_null(report_load(&in, err, sizeof err));
	assert_non_null(strstr(err, "not a makeflow transaction log"));

	char *none = path_join(f->dir, "absent.makeflowlog");
	in.log = none;
	assert_null(report_load(&in, err, sizeof err));
	assert_non_null(strstr(err, "absent.makeflowlog"));
	assert_non_null(strstr(err, "No such file"));
	free(none);
}

static void test_large_run_aggregates(void **state)
{
	struct fixture *f = *state;
	/* 12,000 rules: 24,000 bars would pass REPORT_MAX_ELEMENTS */
	int n = 12000;
	struct txlog *t = txlog_open(f->log, "gone.mf", -1);
	assert_non_null(t);
	assert_int_equal(txlog_start(t, 1, n, NULL), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(txlog_node(t, i, TXLOG_NODE_RUNNING, (uint64_t)i), 0);
		assert_int_equal(txlog_node(t, i, TXLOG_NODE_COMPLETE, (uint64_t)i), 0);
	}
	assert_int_equal(txlog_end(t, 0, "complete"), 0);
	txlog_close(t);
	char err[1024] = "";
	struct report_input in = {.log = f->log};
	struct report *r = report_load(&in, err, sizeof err);
	assert_non_null(r);
	struct buffer b;
	buffer_init(&b, REPORT_MAX_HTML);
	struct report_html_opts o = {0};
	assert_int_equal(report_html(&b, r, &o), 0);
	const char *p = buffer_tostring(&b);
	assert_non_null(strstr(p, "id=\"aggregated\""));
	long rects = 0;
	for (p = strstr(p, "<rect"); p; p = strstr(p + 1, "<rect"))
		rects++;
	assert_true(rects <= 2 * REPORT_BINS + 100);
	assert_true(rects > 0);
	buffer_free(&b);
	report_delete(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escape_and_numbers),
	    cmocka_unit_test(test_svg_elements),
	    cmocka_unit_test_setup_teardown(test_load_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_inputs_are_notes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_summaries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_log_names_file_and_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_large_run_aggregates, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
