/* report_dag.h: the DAG section of the run report: Graphviz's SVG when `dot` is installed and
 * the DAG is small enough for it, else a layered drawing of our own (layer = depth, order by
 * the parents' mean position), aggregated into (depth, category) boxes above
 * REPORT_DAG_MAX_RULES rules. */
#ifndef MAKEFLOW_REPORT_DAG_H
#define MAKEFLOW_REPORT_DAG_H

#include "buffer.h"
#include "report_data.h"

#define REPORT_DAG_MAX_RULES 2000

/* How the DAG was drawn. */
enum report_dag_kind {
	REPORT_DAG_NONE,
	REPORT_DAG_GRAPHVIZ,
	REPORT_DAG_LAYERED,
	REPORT_DAG_GROUPED
};

/* Appends the DAG of R (R->dag must not be NULL) as SVG. USE_DOT: try Graphviz first. *KIND
 * says how it was drawn. Returns 0 or HTC_ETOOBIG. */
int report_dag_svg(struct buffer *out, struct report *r, int use_dot, enum report_dag_kind *kind);

/* The fill colour of a rule in its final state. */
const char *report_state_colour(int state);

#endif
