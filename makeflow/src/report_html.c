/* report_html.c: assembles the run report's page. Every text from the log, the workflow or a
 * summary goes through svg_escape; numbers are formatted here; plots come from report_plot and
 * report_dag. No script: tooltips are SVG <title> elements. See report_html.h. */
#include "report_html.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "htc_error.h"
#include "report_dag.h"
#include "report_plot.h"
#include "svg_writer.h"
#include "xalloc.h"

#include "banned.h"

/* At most this many failed rules are listed one by one. */
#define REPORT_MAX_FAILURES 500

static const char style[] =
    "<style>\n"
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1200px}\n"
    "h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ccc;padding-bottom:.2em;"
    "margin-top:1.6em}\n"
    "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:.2em .5em;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}td.n{text-align:right}\n"
    "pre{background:#f7f7f7;padding:.4em;margin:0;max-width:60em;overflow:auto;font-size:.85em}\n"
    ".note{background:#fff6dd;border-left:4px solid #f0ad4e;padding:.3em .6em;margin:.3em 0}\n"
    ".legend span{display:inline-block;padding:0 .5em;margin-right:.4em;color:#fff;"
    "border-radius:3px;font-size:.85em}\n"
    "svg{display:block;margin:.5em 0;background:#fff}svg text{font-family:sans-serif;fill:#222}\n"
    ".dagwrap{overflow:auto;max-height:60em;border:1px solid #eee}.dagwrap svg{width:auto}\n"
    "</style>\n";

static int esc(struct buffer *b, const char *s)
{
	return svg_escape(b, s ? s : "");
}

static int summary(struct buffer *b, const struct report *r)
{
	const struct txlog_progress *p = &r->progress;
	const char *status = !p->ended ? "not ended (running, or stopped without an end record)"
	                     : p->end_status == 0 ? "complete"
	                     : p->end_status == 1 ? "ended with failures"
	                                          : "aborted";
	size_t retries = 0;
	int64_t with_attempts = 0;
	for (int64_t i = 0; i < r->nrules; i++)
		with_attempts += r->rules[i].attempts > 0;
	retries = r->nattempts - (size_t)with_attempts;
	double wall = (double)(r->t1_us - r->t0_us) / 1e6;
	int rc = buffer_putstring(b, "<section id=\"summary\"><h2>Summary</h2><table>\n");
	rc = rc ?: buffer_putstring(b, "<tr><th>workflow</th><td>");
	rc = rc ?: esc(b, r->workflow_path ? r->workflow_path : r->workflow_name);
	rc = rc ?: buffer_putstring(b, "</td></tr>\n<tr><th>log</th><td>");
	rc = rc ?: esc(b, r->log_path);
	rc = rc
	         ?: buffer_printf(b,
	                          "</td></tr>\n<tr><th>run</th><td id=\"run-status\">%s</td></tr>\n"
	                          "<tr><th>rules</th><td>%lld: %lld complete, %lld failed, %lld "
	                          "running, %lld aborted, %lld waiting</td></tr>\n"
	                          "<tr><th>attempts</th><td>%zu (%zu retries)</td></tr>\n"
	                          "<tr><th>most running at once</th><td>%ld</td></tr>\n"
	                          "<tr><th>wall time</th><td>%.3f s</td></tr>\n"
	                          "<tr><th>measured rules</th><td>%d</td></tr>\n</table>\n",
	                          status, (long long)r->nrules, (long long)p->complete,
	                          (long long)p->failed, (long long)p->running,
	                          (long long)p->aborted, (long long)p->waiting, r->nattempts,
	                          retries, report_max_concurrency(r), wall, r->measured_rules);
	for (size_t i = 0; i < r->nnotes && rc == 0; i++) {
		rc = buffer_putstring(b, "<p class=\"note\">");
		rc = rc ?: esc(b, r->notes[i]);
		rc = rc ?: buffer_putstring(b, "</p>\n");
	}
	return rc ?: buffer_putstring(b, "</section>\n");
}

static int legend(struct buffer *b)
{
	int rc = buffer_putstring(b, "<p class=\"legend\">");
	for (int o = 0; o < REPORT_N_OUTCOMES && rc == 0; o++)
		rc = buffer_printf(b, "<span style=\"background:%s\">%s</span>",
		                   report_outcome_colour(o), report_outcome_name(o));
	return rc ?: buffer_putstring(b, "</p>\n");
}

struct cat_stats {
	const char *name;
	long rules, attempts, failed, exhausted, measured;
	double alloc[REPORT_N_RES], peak[REPORT_N_RES];
	double waste_mem, waste_cores; /* MB-s, core-s */
};

/* (declared - measured peak) x wall time of one measured rule, 0 when it used all of it */
static double waste(const struct report_rule *rr, int k)
{
	if (rr->alloc[k] < 0 || rr->peak[k] < 0 || rr->wall_s <= 0 || rr->peak[k] >= rr->alloc[k])
		return 0;
	return (rr->alloc[k] - rr->peak[k]) * rr->wall_s;
}

static int resources(struct buffer *b, const struct report *r)
{
	struct cat_stats *c = xcalloc((size_t)r->nrules + 1, sizeof *c);
	int n = 0;
	for (int64_t i = 0; i < r->nrules; i++) {
		const struct report_rule *rr = &r->rules[i];
		int j = 0;
		while (j < n && strcmp(c[j].name, rr->category) != 0)
			j++;
		if (j == n) {
			c[n].name = rr->category;
			for (int k = 0; k < REPORT_N_RES; k++)
				c[n].alloc[k] = c[n].peak[k] = -1;
			n++;
		}
		struct cat_stats *s = &c[j];
		s->rules++;
		s->attempts += rr->attempts;
		s->failed += rr->state == TXLOG_NODE_FAILED;
		s->exhausted += rr->exhausted || !strcmp(rr->failure, "exhausted");
		for (int k = 0; k < REPORT_N_RES; k++) {
			if (rr->alloc[k] > s->alloc[k])
				s->alloc[k] = rr->alloc[k];
			if (rr->measured && rr->peak[k] > s->peak[k])
				s->peak[k] = rr->peak[k];
		}
		if (rr->measured) {
			s->measured++;
			/* a rule that used more than declared (it exceeded it) wasted nothing */
			s->waste_mem += waste(rr, REPORT_MEM);
			s->waste_cores += waste(rr, REPORT_CORES);
		}
	}
	int rc = buffer_putstring(
	    b, "<section id=\"resources\"><h2>Resources per category</h2>\n<table "
	       "id=\"categories\"><tr><th>category</th><th>rules</th><th>attempts</th>"
	       "<th>retries</th><th>failed</th><th>exhaustions</th><th>measured</th>"
	       "<th>memory MB<br>declared / peak</th><th>cores<br>declared / peak</th>"
	       "<th>disk MB<br>declared / peak</th><th>memory waste<br>MB&middot;s</th>"
	       "<th>cores waste<br>core&middot;s</th></tr>\n");
	for (int j = 0; j < n && rc == 0; j++) {
		struct cat_stats *s = &c[j];
		rc = buffer_putstring(b, "<tr><td>");
		rc = rc ?: esc(b, s->name);
		rc = rc
		         ?: buffer_printf(
		                b,
		                "</td><td class=n>%ld</td><td class=n>%ld</td><td "
		                "class=n>%ld</td><td class=n>%ld</td><td class=n>%ld</td><td "
		                "class=n>%ld</td>",
		                s->rules, s->attempts,
		                s->attempts > s->rules ? s->attempts - s->rules : 0, s->failed,
		                s->exhausted, s->measured);
		for (int k = 0; k < REPORT_N_RES && rc == 0; k++) {
			char a[32] = "-", p[32] = "-";
			if (s->alloc[k] >= 0)
				svg_num(s->alloc[k], a, sizeof a);
			if (s->peak[k] >= 0)
				svg_num(s->peak[k], p, sizeof p);
			rc = buffer_printf(b, "<td class=n>%s / %s</td>", a, p);
		}
		char wm[32] = "-", wc[32] = "-";
		if (s->measured && s->alloc[REPORT_MEM] >= 0)
			svg_num(s->waste_mem, wm, sizeof wm);
		if (s->measured && s->alloc[REPORT_CORES] >= 0)
			svg_num(s->waste_cores, wc, sizeof wc);
		rc =
		    rc ?: buffer_printf(b, "<td class=n>%s</td><td class=n>%s</td></tr>\n", wm, wc);
	}
	rc = rc
	         ?: buffer_putstring(
	                b, "</table>\n<p>Waste is (declared - measured peak) x wall time, "
	                   "summed over the measured rules of the category; \"-\" when "
	                   "nothing is declared or measured.</p>\n");
	rc = rc ?: report_plot_memory(b, r);
	free(c);
	return rc ?: buffer_putstring(b, "</section>\n");
}

static int how_failed(char *out, size_t len, const struct report_rule *rr)
{
	if (rr->exhausted || !strcmp(rr->failure, "exhausted"))
		return snprintf(out, len, "exceeded its allocation");
	if (!strncmp(rr->failure, "exit:", 5))
		return snprintf(out, len, "exit status %s", rr->failure + 5);
	if (!strncmp(rr->failure, "signal:", 7))
		return snprintf(out, len, "killed by signal %s", rr->failure + 7);
	if (rr->exit_status >= 0)
		return snprintf(out, len, "exit status %d%s%s", rr->exit_status,
		                rr->failure[0] ? ", " : "", rr->failure);
	return snprintf(out, len, "%s", rr->failure[0] ? rr->failure : "failed");
}

static int failures(struct buffer *b, const struct report *r)
{
	const char *wf = r->workflow_path ? r->workflow_path : r->workflow_name;
	int rc = buffer_putstring(b, "<section id=\"failures\"><h2>Failures</h2>\n");
	int64_t nfailed = 0;
	for (int64_t i = 0; i < r->nrules; i++)
		nfailed += r->rules[i].state == TXLOG_NODE_FAILED;
	if (nfailed == 0)
		return rc ?: buffer_putstring(b, "<p>No rule failed.</p></section>\n");
	rc = rc
	         ?: buffer_putstring(b, "<table id=\"failure-list\"><tr><th>rule</th><th>where</th>"
	                                "<th>category</th><th>how</th><th>attempts</th>"
	                                "<th>command</th><th>last lines of stderr</th></tr>\n");
	int64_t shown = 0;
	for (int64_t i = 0; i < r->nrules && rc == 0 && shown < REPORT_MAX_FAILURES; i++) {
		const struct report_rule *rr = &r->rules[i];
		if (rr->state != TXLOG_NODE_FAILED)
			continue;
		shown++;
		char how[96];
		how_failed(how, sizeof how, rr);
		rc = buffer_printf(b, "<tr class=\"failed-rule\"><td class=n>%lld</td><td>",
		                   (long long)i);
		if (rr->line) {
			rc = rc ?: esc(b, wf);
			rc = rc ?: buffer_printf(b, ":%d", rr->line);
		} else {
			rc = rc ?: buffer_putstring(b, "-");
		}
		rc = rc ?: buffer_putstring(b, "</td><td>");
		rc = rc ?: esc(b, rr->category);
		rc = rc ?: buffer_putstring(b, "</td><td>");
		rc = rc ?: esc(b, how);
		rc = rc ?: buffer_printf(b, "</td><td class=n>%d</td><td><pre>", rr->attempts);
		rc = rc ?: esc(b, rr->command ? rr->command : "(unknown)");
		rc = rc ?: buffer_putstring(b, "</pre></td><td>");
		if (rr->stderr_tail) {
			rc = rc ?: buffer_putstring(b, "<pre class=\"stderr\">");
			rc = rc ?: esc(b, rr->stderr_tail);
			rc = rc ?: buffer_putstring(b, "</pre>");
		} else {
			rc = rc
			         ?: buffer_putstring(
			                b, rr->failed_dir ? "(no .err, .stderr or .log output kept)"
			                                  : "(not kept: makeflow does not capture "
			                                    "standard error)");
		}
		rc = rc ?: buffer_putstring(b, "</td></tr>\n");
	}
	rc = rc ?: buffer_putstring(b, "</table>\n");
	if (rc == 0 && nfailed > shown)
		rc = buffer_printf(b, "<p>... and %lld more failed rules.</p>\n",
		                   (long long)(nfailed - shown));
	return rc ?: buffer_putstring(b, "</section>\n");
}

static int dag_section(struct buffer *b, struct report *r, const struct report_html_opts *o)
{
	int rc = buffer_putstring(b, "<section id=\"dag\"><h2>DAG</h2>\n");
	if (!r->dag)
		return rc
		           ?: buffer_putstring(
		                  b, "<p>The workflow was not loaded: no DAG.</p></section>\n");
	/* drawn aside first: the paragraph before it says how it was drawn */
	struct buffer svg;
	buffer_init(&svg, REPORT_MAX_HTML);
	enum report_dag_kind kind;
	rc = rc ?: report_dag_svg(&svg, r, o->use_dot, &kind);
	const char *what =
	    kind == REPORT_DAG_GRAPHVIZ ? "Drawn by Graphviz (dot -Tsvg)."
	    : kind == REPORT_DAG_GROUPED
	        ? "Drawn by makeflow_report, grouped: one box per depth and category."
	        : "Drawn by makeflow_report (layered by depth).";
	rc = rc ?: buffer_printf(b, "<p id=\"dag-kind\">%s</p>\n", what);
	rc = rc ?: buffer_putlstring(b, buffer_tostring(&svg), buffer_len(&svg));
	buffer_free(&svg);
	return rc ?: buffer_putstring(b, "</section>\n");
}

int report_html(struct buffer *out, struct report *r, const struct report_html_opts *o)
{
	long dag_elems =
	    r->dag ? 3L * (r->dag->nnodes < REPORT_DAG_MAX_RULES ? r->dag->nnodes : 200) : 0;
	int aggregate = (long)r->nattempts * 2 + dag_elems > REPORT_MAX_ELEMENTS;
	int rc = buffer_putstring(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
	                               "charset=\"utf-8\">\n<title>makeflow report: ");
	rc = rc ?: esc(out, r->workflow_name ? r->workflow_name : r->log_path);
	rc = rc ?: buffer_putstring(out, "</title>\n");
	if (rc == 0 && o->refresh_s > 0) /* written while the run goes: the browser reloads it */
		rc = buffer_printf(out, "<meta http-equiv=\"refresh\" content=\"%d\">\n",
		                   o->refresh_s);
	rc = rc ?: buffer_putstring(out, style);
	rc = rc ?: buffer_putstring(out, "</head><body>\n<h1>makeflow report: ");
	rc = rc ?: esc(out, r->workflow_name ? r->workflow_name : r->log_path);
	rc = rc ?: buffer_putstring(out, "</h1>\n");
	rc = rc ?: summary(out, r);
	rc = rc ?: buffer_putstring(out, "<section id=\"timeline\"><h2>Timeline</h2>\n");
	if (rc == 0 && aggregate)
		rc = buffer_printf(
		    out,
		    "<p id=\"aggregated\">%zu attempts: more than %d SVG elements, so "
		    "each row shows %d time bins, darker when more of its rules ran.</p>\n",
		    r->nattempts, REPORT_MAX_ELEMENTS, REPORT_BINS);
	else
		rc = rc ?: legend(out);
	rc = rc ?: buffer_putstring(out, "<h3>By category</h3>\n");
	rc = rc ?: report_plot_timeline(out, r, REPORT_BY_CATEGORY, aggregate);
	rc = rc ?: buffer_putstring(out, "<h3>By host</h3>\n");
	rc = rc ?: report_plot_timeline(out, r, REPORT_BY_HOST, aggregate);
	rc = rc
	         ?: buffer_putstring(out, "</section>\n<section id=\"concurrency\"><h2>Concurrency"
	                                  "</h2>\n");
	rc = rc ?: report_plot_concurrency(out, r);
	rc = rc ?: buffer_putstring(out, "</section>\n");
	rc = rc ?: resources(out, r);
	rc = rc ?: failures(out, r);
	rc = rc ?: dag_section(out, r, o);
	time_t now = time(NULL);
	char when[64];
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	rc = rc
	         ?: buffer_printf(out,
	                          "<footer><p>Written by makeflow_report at %s.</p></footer>\n"
	                          "</body></html>\n",
	                          when);
	return rc;
}

int report_write_file(const struct report_input *in, const struct report_html_opts *o,
                      const char *path, char *err, size_t errlen)
{
	struct report *r = report_load(in, err, errlen);
	if (!r)
		return -1;
	struct buffer b;
	buffer_init(&b, REPORT_MAX_HTML);
	int rc = report_html(&b, r, o);
	if (rc < 0) {
		snprintf(err, errlen, "%s: the report would be larger than %u MB", path,
		         REPORT_MAX_HTML >> 20);
	} else {
		rc = atomic_file_write(path, buffer_tostring(&b), buffer_len(&b), 0644);
		if (rc < 0)
			snprintf(err, errlen, "%s: cannot write: %s", path, strerror(-rc));
	}
	buffer_free(&b);
	report_delete(r);
	return rc < 0 ? -1 : 0;
}
