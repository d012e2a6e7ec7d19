/* report_plot.c: the run report's plots. Rows are categories (or hosts) in order of first
 * appearance; within a row, attempts are packed into lanes so that concurrent ones do not hide
 * each other. Times are seconds since the run's first start. See report_plot.h. */
#include "report_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "svg_writer.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define PLOT_W     1000.0
#define PLOT_LEFT  150.0
#define PLOT_RIGHT 20.0
#define LANE_H     9.0
#define ROW_GAP    8.0
#define MAX_LANES  24
#define AXIS_H     24.0
#define AGG_ROW_H  22.0

struct rowset {
	const char **names;
	int n;
	int *row_of_attempt;
};

static const char *row_key(const struct report *r, int64_t rule, enum report_rows rows)
{
	const struct report_rule *rr = &r->rules[rule];
	if (rows == REPORT_BY_HOST)
		return rr->host ? rr->host : "(unmeasured)";
	return rr->category;
}

/* Rows in order of first appearance (a linear search: categories and hosts are few). */
static void make_rows(const struct report *r, enum report_rows rows, struct rowset *rs)
{
	rs->names = NULL;
	rs->n = 0;
	rs->row_of_attempt = xcalloc(r->nattempts ? r->nattempts : 1, sizeof(int));
	int cap = 0;
	for (size_t i = 0; i < r->nattempts; i++) {
		const char *k = row_key(r, r->attempts[i].rule, rows);
		int j = rs->n - 1;
		/* attempts of one row tend to come together: look at the last row first */
		if (j < 0 || strcmp(rs->names[j], k) != 0)
			for (j = 0; j < rs->n && strcmp(rs->names[j], k) != 0; j++)
				;
		if (j == rs->n) {
			VEC_PUSH(rs->names, rs->n, cap, k);
		}
		rs->row_of_attempt[i] = j;
	}
}

static double span_s(const struct report *r)
{
	double s = (double)(r->t1_us - r->t0_us) / 1e6;
	return s > 0 ? s : 1;
}

static double end_of(const struct report *r, const struct report_attempt *a)
{
	return a->end_us ? (double)a->end_us : (double)r->t1_us;
}

static double xpos(const struct report *r, double t_us)
{
	return PLOT_LEFT +
	       (t_us - (double)r->t0_us) / 1e6 / span_s(r) * (PLOT_W - PLOT_LEFT - PLOT_RIGHT);
}

/* A tick step for SPAN seconds: 1, 2 or 5 times a power of ten, about five steps in all. */
static double tick_step(double span)
{
	double raw = span / 5;
	double p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* T seconds as a label in the unit that suits a run of SPAN seconds. */
static void tick_label(double t, double span, char *buf, size_t len)
{
	if (span < 1)
		snprintf(buf, len, "%.6g ms", t * 1e3);
	else if (span < 120)
		snprintf(buf, len, "%.6g s", t);
	else if (span < 7200)
		snprintf(buf, len, "%.6g min", t / 60);
	else
		snprintf(buf, len, "%.6g h", t / 3600);
}

static int axis(struct svg *s, const struct report *r, double y)
{
	int rc = svg_line(s, PLOT_LEFT, y, PLOT_W - PLOT_RIGHT, y, "#333", 1);
	double span = span_s(r);
	/* in the unit of the labels, so that steps of minutes and hours are round too */
	double unit = span < 120 ? 1 : span < 7200 ? 60 : 3600;
	double step = tick_step(span / unit) * unit;
	for (int k = 0; k * step <= span * (1 + 1e-9) && rc == 0; k++) {
		double t = k * step;
		double x = PLOT_LEFT + (PLOT_W - PLOT_LEFT - PLOT_RIGHT) * t / span;
		char label[48];
		tick_label(t, span, label, sizeof label);
		rc = svg_line(s, x, y, x, y + 4, "#333", 1);
		if (rc == 0)
			rc = svg_text(s, x, y + 16, x > PLOT_W - PLOT_RIGHT - 30 ? "end" : "middle",
			              11, label);
	}
	return rc;
}

static int timeline_bars(struct svg *s, const struct report *r, const struct rowset *rs,
                         double *row_y, int *row_lanes)
{
	int rc = 0;
	/* lanes: end time of the latest attempt put in each lane of each row */
	double *lane_end = xcalloc((size_t)rs->n * MAX_LANES, sizeof(double));
	int *lane = xcalloc(r->nattempts ? r->nattempts : 1, sizeof(int));
	for (size_t i = 0; i < r->nattempts; i++) {
		const struct report_attempt *a = &r->attempts[i];
		double *le = lane_end + (size_t)rs->row_of_attempt[i] * MAX_LANES;
		int best = 0;
		for (int l = 0; l < MAX_LANES; l++) {
			if (le[l] <= (double)a->start_us) {
				best = l;
				break;
			}
			if (le[l] < le[best])
				best = l;
		}
		le[best] = end_of(r, a);
		lane[i] = best;
		int *rl = &row_lanes[rs->row_of_attempt[i]];
		if (best + 1 > *rl)
			*rl = best + 1;
	}
	double y = 0;
	for (int j = 0; j < rs->n; j++) {
		row_y[j] = y;
		y += (row_lanes[j] ? row_lanes[j] : 1) * LANE_H + ROW_GAP;
	}
	for (size_t i = 0; i < r->nattempts && rc == 0; i++) {
		const struct report_attempt *a = &r->attempts[i];
		const struct report_rule *rr = &r->rules[a->rule];
		double x0 = xpos(r, (double)a->start_us), x1 = xpos(r, end_of(r, a));
		char title[256];
		snprintf(title, sizeof title, "rule %lld%s%d (%s): %s, %.3f s", (long long)a->rule,
		         rr->line ? " line " : "", rr->line, rr->category,
		         report_outcome_name(a->outcome),
		         (end_of(r, a) - (double)a->start_us) / 1e6);
		if (!rr->line) /* no workflow: no line to name */
			snprintf(title, sizeof title, "rule %lld: %s, %.3f s", (long long)a->rule,
			         report_outcome_name(a->outcome),
			         (end_of(r, a) - (double)a->start_us) / 1e6);
		rc = svg_rect(s, x0, row_y[rs->row_of_attempt[i]] + lane[i] * LANE_H,
		              x1 - x0 < 0.5 ? 0.5 : x1 - x0, LANE_H - 1,
		              report_outcome_colour(a->outcome), 1, "bar", title);
	}
	free(lane_end);
	free(lane);
	return rc;
}

static int timeline_bins(struct svg *s, const struct report *r, const struct rowset *rs,
                         double *row_y)
{
	double *busy = xcalloc((size_t)rs->n * REPORT_BINS, sizeof(double));
	double t0 = (double)r->t0_us, binw = span_s(r) * 1e6 / REPORT_BINS;
	for (size_t i = 0; i < r->nattempts; i++) {
		const struct report_attempt *a = &r->attempts[i];
		double st = (double)a->start_us, en = end_of(r, a);
		int b0 = (int)((st - t0) / binw), b1 = (int)((en - t0) / binw);
		if (b0 < 0)
			b0 = 0;
		if (b1 >= REPORT_BINS)
			b1 = REPORT_BINS - 1;
		double *row = busy + (size_t)rs->row_of_attempt[i] * REPORT_BINS;
		for (int b = b0; b <= b1; b++) {
			double lo = t0 + b * binw, hi = lo + binw;
			double ov = (en < hi ? en : hi) - (st > lo ? st : lo);
			if (ov > 0)
				row[b] += ov / binw;
		}
	}
	int rc = 0;
	double bw = (PLOT_W - PLOT_LEFT - PLOT_RIGHT) / REPORT_BINS;
	for (int j = 0; j < rs->n && rc == 0; j++) {
		row_y[j] = j * AGG_ROW_H;
		double *row = busy + (size_t)j * REPORT_BINS, peak = 0;
		for (int b = 0; b < REPORT_BINS; b++)
			if (row[b] > peak)
				peak = row[b];
		for (int b = 0; b < REPORT_BINS && rc == 0; b++) {
			if (row[b] <= 0)
				continue;
			char title[160];
			snprintf(title, sizeof title, "%s: %.1f running on average, %.3g-%.3g s",
			         rs->names[j], row[b], b * binw / 1e6, (b + 1) * binw / 1e6);
			rc = svg_rect(s, PLOT_LEFT + b * bw, row_y[j], bw, AGG_ROW_H - 4, "#337ab7",
			              0.15 + 0.85 * row[b] / peak, "bin", title);
		}
	}
	free(busy);
	return rc;
}

int report_plot_timeline(struct buffer *out, const struct report *r, enum report_rows rows,
                         int aggregate)
{
	struct rowset rs;
	make_rows(r, rows, &rs);
	double *row_y = xcalloc((size_t)rs.n + 1, sizeof(double));
	int *row_lanes = xcalloc((size_t)rs.n + 1, sizeof(int));
	/* draw into a side buffer first: the height is known only once lanes are packed */
	struct buffer body;
	buffer_init(&body, 0);
	struct svg s;
	s.out = &body;
	s.elements = 0;
	int rc = aggregate ? timeline_bins(&s, r, &rs, row_y)
	                   : timeline_bars(&s, r, &rs, row_y, row_lanes);
	double h = 0;
	for (int j = 0; j < rs.n; j++) {
		double rh =
		    aggregate ? AGG_ROW_H : (row_lanes[j] ? row_lanes[j] : 1) * LANE_H + ROW_GAP;
		if (rc == 0)
			rc = svg_text(&s, PLOT_LEFT - 6, row_y[j] + (rh - ROW_GAP) / 2 + 4, "end",
			              11, rs.names[j]);
		h = row_y[j] + rh;
	}
	if (rc == 0)
		rc = axis(&s, r, h + 2);
	struct svg top;
	if (rc == 0)
		rc =
		    svg_begin(&top, out, PLOT_W, h + AXIS_H + 4, "timeline",
		              rows == REPORT_BY_HOST ? "timeline by host" : "timeline by category");
	if (rc == 0)
		rc = buffer_putlstring(out, buffer_tostring(&body), buffer_len(&body));
	if (rc == 0)
		rc = svg_end(&top);
	buffer_free(&body);
	free(row_y);
	free(row_lanes);
	free(rs.names);
	free(rs.row_of_attempt);
	return rc;
}

struct event {
	double t;
	int d;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d; /* an end before a start at the same instant */
}

static struct event *events_of(const struct report *r, size_t *n)
{
	struct event *ev = xcalloc(2 * r->nattempts + 1, sizeof *ev);
	for (size_t i = 0; i < r->nattempts; i++) {
		ev[2 * i] = (struct event){(double)r->attempts[i].start_us, 1};
		ev[2 * i + 1] = (struct event){end_of(r, &r->attempts[i]), -1};
	}
	*n = 2 * r->nattempts;
	qsort(ev, *n, sizeof *ev, cmp_event);
	return ev;
}

long report_max_concurrency(const struct report *r)
{
	size_t n;
	struct event *ev = events_of(r, &n);
	long cur = 0, peak = 0;
	for (size_t i = 0; i < n; i++) {
		cur += ev[i].d;
		if (cur > peak)
			peak = cur;
	}
	free(ev);
	return peak;
}

int report_plot_concurrency(struct buffer *out, const struct report *r)
{
	size_t n;
	struct event *ev = events_of(r, &n);
	long peak = report_max_concurrency(r);
	double h = 160, top = 10, base = top + h;
	double *xs = xcalloc(2 * n + 2 * REPORT_BINS + 4, sizeof(double));
	double *ys = xcalloc(2 * n + 2 * REPORT_BINS + 4, sizeof(double));
	size_t np = 0;
	double scale = peak > 0 ? h / (double)peak : 1;
	long cur = 0;
	xs[np] = PLOT_LEFT;
	ys[np++] = base;
	if (n <= 4 * REPORT_BINS) {
		/* exact steps */
		for (size_t i = 0; i < n;) {
			/* every change within half a pixel at once: a rule that starts as another
			 * ends (microseconds apart in the log) is no dip */
			double t = ev[i].t, eps = span_s(r) * 1e6 / 2000;
			long before = cur;
			while (i < n && ev[i].t <= t + eps)
				cur += ev[i++].d;
			if (cur == before)
				continue;
			double x = xpos(r, t);
			xs[np] = x;
			ys[np++] = base - (double)before * scale;
			xs[np] = x;
			ys[np++] = base - (double)cur * scale;
		}
	} else {
		/* per bin: the largest number running in it, then the number at its end */
		double t0 = (double)r->t0_us, binw = span_s(r) * 1e6 / REPORT_BINS;
		size_t i = 0;
		for (int b = 0; b < REPORT_BINS; b++) {
			double hi = t0 + (b + 1) * binw;
			long bmax = cur;
			while (i < n && (ev[i].t < hi || b == REPORT_BINS - 1)) {
				cur += ev[i++].d;
				if (cur > bmax)
					bmax = cur;
			}
			xs[np] = xpos(r, t0 + b * binw + binw / 2);
			ys[np++] = base - (double)bmax * scale;
			xs[np] = xpos(r, hi);
			ys[np++] = base - (double)cur * scale;
		}
	}
	xs[np] = PLOT_W - PLOT_RIGHT;
	ys[np] = ys[np - 1];
	np++;
	struct svg s;
	char label[64];
	int rc =
	    svg_begin(&s, out, PLOT_W, base + AXIS_H + 4, "concurrency", "rules running over time");
	if (rc == 0)
		rc = svg_polyline(&s, xs, ys, np, "#337ab7", 1.5);
	snprintf(label, sizeof label, "%ld", peak);
	if (rc == 0)
		rc = svg_line(&s, PLOT_LEFT, top, PLOT_LEFT, base, "#333", 1);
	if (rc == 0)
		rc = svg_text(&s, PLOT_LEFT - 6, top + 8, "end", 11, label);
	if (rc == 0)
		rc = svg_text(&s, PLOT_LEFT - 6, base, "end", 11, "0");
	if (rc == 0)
		rc = svg_text(&s, PLOT_LEFT - 40, top + h / 2, "end", 11, "running");
	if (rc == 0)
		rc = axis(&s, r, base);
	if (rc == 0)
		rc = svg_end(&s);
	free(xs);
	free(ys);
	free(ev);
	return rc;
}

int report_plot_memory(struct buffer *out, const struct report *r)
{
	/* categories in rule order, with their largest declared and measured memory */
	const char **names = xcalloc((size_t)r->nrules + 1, sizeof *names);
	double *alloc = xcalloc((size_t)r->nrules + 1, sizeof(double));
	double *peak = xcalloc((size_t)r->nrules + 1, sizeof(double));
	int n = 0;
	double top = 1;
	for (int64_t i = 0; i < r->nrules; i++) {
		const struct report_rule *rr = &r->rules[i];
		int j = 0;
		while (j < n && strcmp(names[j], rr->category) != 0)
			j++;
		if (j == n) {
			names[n] = rr->category;
			alloc[n] = peak[n] = -1;
			n++;
		}
		if (rr->alloc[REPORT_MEM] > alloc[j])
			alloc[j] = rr->alloc[REPORT_MEM];
		if (rr->measured && rr->peak[REPORT_MEM] > peak[j])
			peak[j] = rr->peak[REPORT_MEM];
		if (alloc[j] > top)
			top = alloc[j];
		if (peak[j] > top)
			top = peak[j];
	}
	double rowh = 26, h = n * rowh;
	struct svg s;
	int rc = svg_begin(&s, out, PLOT_W, h + AXIS_H + 4, "memory",
	                   "declared and measured memory per category");
	double w = PLOT_W - PLOT_LEFT - PLOT_RIGHT - 220;
	for (int j = 0; j < n && rc == 0; j++) {
		char t[160], lab[96];
		double y = j * rowh;
		rc = svg_text(&s, PLOT_LEFT - 6, y + 14, "end", 11, names[j]);
		if (rc == 0 && alloc[j] >= 0) {
			snprintf(t, sizeof t, "%s: declared %.0f MB", names[j], alloc[j]);
			rc = svg_rect(&s, PLOT_LEFT, y + 2, w * alloc[j] / top, 10, "#bbbbbb", 1,
			              "alloc", t);
		}
		if (rc == 0 && peak[j] >= 0) {
			snprintf(t, sizeof t, "%s: largest measured %.1f MB", names[j], peak[j]);
			rc = svg_rect(&s, PLOT_LEFT, y + 12, w * peak[j] / top, 10, "#337ab7", 1,
			              "used", t);
		}
		if (rc == 0) {
			char a[32] = "-", p[32] = "-";
			if (alloc[j] >= 0)
				snprintf(a, sizeof a, "%.0f", alloc[j]);
			if (peak[j] >= 0)
				snprintf(p, sizeof p, "%.1f", peak[j]);
			snprintf(lab, sizeof lab, "%s used / %s declared MB", p, a);
			rc = svg_text(&s, PLOT_W - PLOT_RIGHT, y + 16, "end", 11, lab);
		}
	}
	if (rc == 0)
		rc = svg_end(&s);
	free(names);
	free(alloc);
	free(peak);
	return rc;
}
