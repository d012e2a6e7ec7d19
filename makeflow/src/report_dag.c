/* report_dag.c: draws the DAG for the run report. The layered layout is the simple one: each
 * rule sits in the layer of its depth, layers are ordered by the mean position of each rule's
 * parents (one pass from the top), and edges are straight lines. Graphviz does better when it
 * is there; its SVG is embedded after its XML prolog. */
#include "report_dag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "htc_error.h"
#include "report_dot.h"
#include "svg_writer.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define NODE_W 120.0
#define NODE_H 26.0
#define GAP_X  14.0
#define GAP_Y  40.0
#define MARGIN 10.0
/* Graphviz's SVG larger than this is not embedded (our drawing is used). */
#define MAX_DOT_SVG (32 << 20)

const char *report_state_colour(int state)
{
	switch (state) {
	case TXLOG_NODE_COMPLETE: return "#5cb85c";
	case TXLOG_NODE_FAILED: return "#d9534f";
	case TXLOG_NODE_RUNNING: return "#f0ad4e";
	case TXLOG_NODE_ABORTED: return "#999999";
	default: return "#ffffff";
	}
}

static const char *state_word(int state)
{
	switch (state) {
	case TXLOG_NODE_COMPLETE: return "complete";
	case TXLOG_NODE_FAILED: return "failed";
	case TXLOG_NODE_RUNNING: return "running";
	case TXLOG_NODE_ABORTED: return "aborted";
	default: return "waiting";
	}
}

static int from_graphviz(struct buffer *out, struct report *r)
{
	char dotpath[] = "/tmp/htc-report-XXXXXX";
	int fd = mkstemp(dotpath);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(dotpath);
		return -1;
	}
	const struct dag *d = r->dag;
	const char **fills = xcalloc((size_t)d->nnodes + 1, sizeof *fills);
	char **titles = xcalloc((size_t)d->nnodes + 1, sizeof *titles);
	for (int i = 0; i < d->nnodes; i++) {
		fills[i] = report_state_colour(r->rules[i].state);
		titles[i] = xasprintf("rule %d, line %d: %s", i, r->rules[i].line,
		                      state_word(r->rules[i].state));
	}
	report_dot_write_rules(f, d, fills, (const char *const *)titles);
	for (int i = 0; i < d->nnodes; i++)
		free(titles[i]);
	free(titles);
	free(fills);
	int bad = fclose(f) != 0;
	char *svgpath = xasprintf("%s.svg", dotpath);
	char err[512];
	int rc = bad ? -1 : report_dot_render(dotpath, "svg", svgpath, err, sizeof err);
	if (rc < 0 && !bad)
		report_note(
		    r, "Graphviz could not draw the DAG (%s): it is drawn by makeflow_report", err);
	if (rc == 0) {
		rc = -1;
		FILE *s = fopen(svgpath, "r");
		if (s) {
			char *text = xmalloc(MAX_DOT_SVG + 1);
			size_t n = fread(text, 1, MAX_DOT_SVG, s);
			text[n] = 0;
			fclose(s);
			const char *start = strstr(text, "<svg");
			if (start && n < MAX_DOT_SVG) {
				buffer_putstring(out, "<div class=\"dagwrap\">");
				rc = buffer_putstring(out, start);
				if (rc == 0)
					rc = buffer_putstring(out, "</div>\n");
			}
			free(text);
		}
	}
	unlink(dotpath);
	unlink(svgpath);
	free(svgpath);
	return rc;
}

struct placed {
	int id;
	double key;
};

static int cmp_placed(const void *a, const void *b)
{
	const struct placed *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id - y->id;
}

static int layered(struct buffer *out, struct report *r)
{
	const struct dag *d = r->dag;
	int maxdepth = 0;
	for (int i = 0; i < d->nnodes; i++)
		if (d->nodes[i]->depth > maxdepth)
			maxdepth = d->nodes[i]->depth;
	int nl = maxdepth + 1;
	int *count = xcalloc((size_t)nl, sizeof(int));
	for (int i = 0; i < d->nnodes; i++)
		count[d->nodes[i]->depth]++;
	int widest = 1;
	for (int l = 0; l < nl; l++)
		if (count[l] > widest)
			widest = count[l];
	double *xs = xcalloc((size_t)d->nnodes + 1, sizeof(double));
	struct placed *layer = xcalloc((size_t)widest, sizeof *layer);
	double width = MARGIN * 2 + widest * (NODE_W + GAP_X);
	if (width < 600)
		width = 600;
	for (int l = 0; l < nl; l++) {
		int n = 0;
		for (int i = 0; i < d->nnodes; i++) {
			const struct dag_node *nd = d->nodes[i];
			if (nd->depth != l)
				continue;
			double key = i;
			if (nd->nparents) {
				key = 0;
				for (int j = 0; j < nd->nparents; j++)
					key += xs[nd->parents[j]->id];
				key /= nd->nparents;
			}
			layer[n++] = (struct placed){i, key};
		}
		qsort(layer, (size_t)n, sizeof *layer, cmp_placed);
		double row_w = n * (NODE_W + GAP_X) - GAP_X;
		double x0 = (width - row_w) / 2;
		for (int k = 0; k < n; k++)
			xs[layer[k].id] = x0 + k * (NODE_W + GAP_X);
	}
	struct svg s;
	double height = MARGIN * 2 + nl * (NODE_H + GAP_Y) - GAP_Y;
	int rc = svg_begin(&s, out, width, height, "dag", "the workflow's DAG");
	for (int i = 0; i < d->nnodes && rc == 0; i++) {
		const struct dag_node *nd = d->nodes[i];
		for (int j = 0; j < nd->nparents && rc == 0; j++) {
			const struct dag_node *p = nd->parents[j];
			rc = svg_line(&s, xs[p->id] + NODE_W / 2,
			              MARGIN + p->depth * (NODE_H + GAP_Y) + NODE_H,
			              xs[i] + NODE_W / 2, MARGIN + nd->depth * (NODE_H + GAP_Y),
			              "#888", 1);
		}
	}
	for (int i = 0; i < d->nnodes && rc == 0; i++) {
		const struct dag_node *nd = d->nodes[i];
		const struct report_rule *rr = &r->rules[i];
		double y = MARGIN + nd->depth * (NODE_H + GAP_Y);
		char title[512], label[64];
		snprintf(title, sizeof title, "rule %d, line %d, %s: %s\n%.400s", i, rr->line,
		         rr->category, state_word(rr->state), nd->command ? nd->command : "");
		rc = svg_rect(&s, xs[i], y, NODE_W, NODE_H, report_state_colour(rr->state), 1,
		              "node", title);
		snprintf(label, sizeof label, "%d: %.14s", i, nd->command ? nd->command : "");
		if (rc == 0)
			rc = svg_text(&s, xs[i] + NODE_W / 2, y + NODE_H / 2 + 4, "middle", 10,
			              label);
	}
	if (rc == 0)
		rc = svg_end(&s);
	free(count);
	free(xs);
	free(layer);
	return rc;
}

/* Above REPORT_DAG_MAX_RULES: one box per (depth, category) with its rule count. */
struct group {
	int depth;
	const char *category;
	int rules, complete, failed;
	double x;
};

static int grouped(struct buffer *out, struct report *r)
{
	const struct dag *d = r->dag;
	struct group *g = NULL;
	int ng = 0, cap = 0;
	int *gid = xcalloc((size_t)d->nnodes, sizeof(int));
	int maxdepth = 0;
	for (int i = 0; i < d->nnodes; i++) {
		const struct dag_node *nd = d->nodes[i];
		int k = 0;
		while (k < ng &&
		       !(g[k].depth == nd->depth && !strcmp(g[k].category, r->rules[i].category)))
			k++;
		if (k == ng) {
			struct group ng_new = {.depth = nd->depth,
			                       .category = r->rules[i].category};
			VEC_PUSH(g, ng, cap, ng_new);
		}
		g[k].rules++;
		g[k].complete += r->rules[i].state == TXLOG_NODE_COMPLETE;
		g[k].failed += r->rules[i].state == TXLOG_NODE_FAILED;
		gid[i] = k;
		if (nd->depth > maxdepth)
			maxdepth = nd->depth;
	}
	int widest = 1;
	for (int l = 0; l <= maxdepth; l++) {
		int n = 0;
		for (int k = 0; k < ng; k++)
			if (g[k].depth == l)
				g[k].x = MARGIN + (n++) * (NODE_W + 40 + GAP_X);
		if (n > widest)
			widest = n;
	}
	/* edges between groups: a bit matrix of group pairs (groups are few) */
	unsigned char *edge = xcalloc((size_t)ng * (size_t)ng, 1);
	for (int i = 0; i < d->nnodes; i++)
		for (int j = 0; j < d->nodes[i]->nparents; j++)
			edge[(size_t)gid[d->nodes[i]->parents[j]->id] * (size_t)ng +
			     (size_t)gid[i]] = 1;
	struct svg s;
	double width = MARGIN * 2 + widest * (NODE_W + 40 + GAP_X);
	double height = MARGIN * 2 + (maxdepth + 1) * (NODE_H + 12 + GAP_Y);
	int rc = svg_begin(&s, out, width < 600 ? 600 : width, height, "dag",
	                   "the workflow's DAG, grouped by depth and category");
	for (int a = 0; a < ng && rc == 0; a++)
		for (int b = 0; b < ng && rc == 0; b++)
			if (edge[(size_t)a * (size_t)ng + (size_t)b])
				rc = svg_line(
				    &s, g[a].x + (NODE_W + 40) / 2,
				    MARGIN + g[a].depth * (NODE_H + 12 + GAP_Y) + NODE_H + 12,
				    g[b].x + (NODE_W + 40) / 2,
				    MARGIN + g[b].depth * (NODE_H + 12 + GAP_Y), "#888", 1);
	for (int k = 0; k < ng && rc == 0; k++) {
		double y = MARGIN + g[k].depth * (NODE_H + 12 + GAP_Y);
		char title[256], label[96];
		snprintf(title, sizeof title,
		         "depth %d, category %s: %d rules, %d complete, %d failed", g[k].depth,
		         g[k].category, g[k].rules, g[k].complete, g[k].failed);
		int st = g[k].failed                   ? TXLOG_NODE_FAILED
		         : g[k].complete == g[k].rules ? TXLOG_NODE_COMPLETE
		                                       : TXLOG_NODE_WAITING;
		rc = svg_rect(&s, g[k].x, y, NODE_W + 40, NODE_H + 12, report_state_colour(st), 1,
		              "node", title);
		snprintf(label, sizeof label, "%.16s x%d", g[k].category, g[k].rules);
		if (rc == 0)
			rc = svg_text(&s, g[k].x + (NODE_W + 40) / 2, y + (NODE_H + 12) / 2 + 4,
			              "middle", 10, label);
	}
	if (rc == 0)
		rc = svg_end(&s);
	free(edge);
	free(gid);
	free(g);
	return rc;
}

int report_dag_svg(struct buffer *out, struct report *r, int use_dot, enum report_dag_kind *kind)
{
	*kind = REPORT_DAG_NONE;
	if (!r->dag)
		return 0;
	if (r->dag->nnodes > REPORT_DAG_MAX_RULES) {
		*kind = REPORT_DAG_GROUPED;
		return grouped(out, r);
	}
	if (use_dot) {
		size_t mark = buffer_len(out);
		char *dot = report_dot_find();
		int ok = dot && from_graphviz(out, r) == 0;
		free(dot);
		if (ok) {
			*kind = REPORT_DAG_GRAPHVIZ;
			return 0;
		}
		buffer_rewind(out, mark);
	}
	*kind = REPORT_DAG_LAYERED;
	return layered(out, r);
}
