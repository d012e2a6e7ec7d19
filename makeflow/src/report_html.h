/* report_html.h: the run report as one self-contained HTML page (doc/makeflow-report.md):
 * summary, timelines, concurrency, resources per category, failures and the DAG, with its
 * style inline and its plots as inline SVG, so that it opens without a network. */
#ifndef MAKEFLOW_REPORT_HTML_H
#define MAKEFLOW_REPORT_HTML_H

#include <stddef.h>

#include "buffer.h"
#include "report_data.h"

/* The largest report written (a 100,000-rule run's is a few MB). */
#define REPORT_MAX_HTML (256u << 20)

struct report_html_opts {
	int use_dot;   /* draw the DAG with Graphviz when it is installed */
	int refresh_s; /* > 0: the page asks the browser to reload it after this many seconds */
};

/* Appends the page for R to OUT. Returns 0 or HTC_ETOOBIG. */
int report_html(struct buffer *out, struct report *r, const struct report_html_opts *o);

/* Gathers the report of IN and writes it atomically to PATH. 0, or -1 with a message in ERR
 * (the log cannot be read, the page cannot be written). */
int report_write_file(const struct report_input *in, const struct report_html_opts *o,
                      const char *path, char *err, size_t errlen);

#endif
