/* makeflow_report_opts.h: the command line of makeflow_report, parsed into one struct: the
 * transaction log, the monitor directory, the output page (-O), the workflow file when it is
 * not the one the log names (-w), and whether Graphviz may draw the DAG. Parsing never exits,
 * so every option and error text is tested on its own. */
#ifndef MAKEFLOW_REPORT_OPTS_H
#define MAKEFLOW_REPORT_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "workflow_load.h"

struct makeflow_report_opts {
	const char *log;         /* the transaction log (points into ARGV) */
	const char *monitor_dir; /* the --monitor directory, NULL when not given */
	const char *output;      /* -O FILE, default "report.html" */
	const char *workflow;    /* -w FILE, NULL: the one the log names */
	const char *failed_dir;  /* --failed-dir DIR, NULL: the log's directory */
	int no_dot;              /* --no-dot: draw the DAG ourselves even when dot is installed */
	int src_given;           /* a workflow-form option (--json, --jx...) was given */
	struct workflow_source src;
};

/* Parses ARGV into O (which it initialises), handling -d -o -v -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed), CLI_USAGE (getopt printed an unknown
 * option or a missing value; no log given, with a message in ERR; too many arguments), or
 * HTC_EPARSE with the message in ERR. Only CLI_DONE leaves anything in O to free (with
 * makeflow_report_opts_clear). */
int makeflow_report_opts_parse(int argc, char *argv[], struct makeflow_report_opts *o, char *err,
                               size_t errlen);
void makeflow_report_opts_clear(struct makeflow_report_opts *o);

/* Writes the usage text, naming the program PROG. */
void makeflow_report_opts_usage(FILE *out, const char *prog);

#endif
