/* report_plot.h: the run report's plots as SVG: the timeline (Gantt) of attempts by category and
 * by host, the concurrency over time, and allocated against measured memory per category. Above
 * REPORT_MAX_ELEMENTS the timelines aggregate into time bins (doc/makeflow-report.md). */
#ifndef MAKEFLOW_REPORT_PLOT_H
#define MAKEFLOW_REPORT_PLOT_H

#include "buffer.h"
#include "report_data.h"

/* Above this many SVG elements in the whole report, the timelines draw time bins. */
#define REPORT_MAX_ELEMENTS 20000
/* Time bins of an aggregated timeline, and of a concurrency line with many changes. */
#define REPORT_BINS 400

/* Rows of a timeline: by category or by host. */
enum report_rows { REPORT_BY_CATEGORY, REPORT_BY_HOST };

/* Appends the timeline of R's attempts, one row per category or host. AGGREGATE: draw bins
 * instead of one bar per attempt. Returns 0 or HTC_ETOOBIG. */
int report_plot_timeline(struct buffer *out, const struct report *r, enum report_rows rows,
                         int aggregate);
/* Appends the number of rules running over time. */
int report_plot_concurrency(struct buffer *out, const struct report *r);
/* Appends, per category, bars of declared and largest measured memory. */
int report_plot_memory(struct buffer *out, const struct report *r);

/* The largest number of attempts running at once in R (computed exactly). */
long report_max_concurrency(const struct report *r);

#endif
