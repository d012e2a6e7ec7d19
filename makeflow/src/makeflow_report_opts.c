/* makeflow_report_opts.c: parses the command line of makeflow_report (getopt_long, with the
 * options every program shares through cli.h and the workflow-form options of workflow_load.h)
 * into struct makeflow_report_opts. See makeflow_report_opts.h. */
#include "makeflow_report_opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "banned.h"

enum { OPT_NO_DOT = 1000, OPT_FAILED_DIR };

static const struct option longopts[] = {
    {"output", required_argument, 0, 'O'},
    {"workflow", required_argument, 0, 'w'},
    {"failed-dir", required_argument, 0, OPT_FAILED_DIR},
    {"no-dot", no_argument, 0, OPT_NO_DOT},
    WORKFLOW_LONG_OPTIONS,
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void makeflow_report_opts_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "Usage: %s [options] LOG [MONITOR_DIR]\n"
	        "  LOG: a workflow's transaction log (WORKFLOW.makeflowlog); MONITOR_DIR: the\n"
	        "  directory given to makeflow --monitor (resource-rule-N.summary files)\n"
	        "  -O, --output=FILE       write the HTML report to FILE (default report.html)\n"
	        "  -w, --workflow=FILE     the workflow file, when not the one the log names\n"
	        "      --json, --jx, --jx-args=FILE, --jx-define=VAR=EXPR  its form\n"
	        "      --failed-dir=DIR    where makeflow.failed.N/ are (default: the log's "
	        "directory)\n"
	        "      --no-dot            draw the DAG without Graphviz even when dot is "
	        "installed\n"
	        "  -d, --debug=SUBSYS      debug output; -o, --debug-file=FILE\n"
	        "  -v, --version; -h, --help\n",
	        prog);
}

void makeflow_report_opts_clear(struct makeflow_report_opts *o)
{
	workflow_source_free(&o->src);
	memset(o, 0, sizeof *o);
}

static int parse_one(struct makeflow_report_opts *o, int c, char *argv[], char *err, size_t errlen)
{
	if (workflow_source_getopt(&o->src, c, optarg)) {
		o->src_given = 1;
		return 0;
	}
	switch (c) {
	case 'O': o->output = optarg; return 0;
	case 'w': o->workflow = optarg; return 0;
	case OPT_FAILED_DIR: o->failed_dir = optarg; return 0;
	case OPT_NO_DOT: o->no_dot = 1; return 0;
	case 'o':
		if (debug_config_file(optarg) < 0) {
			snprintf(err, errlen, "-o %s: cannot open", optarg);
			return HTC_EPARSE;
		}
		return 0;
	case 'd':
	case 'v':
	case 'h': {
		int r = cli_common_option(c, argv, "makeflow_report", makeflow_report_opts_usage,
		                          err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	default: return CLI_USAGE;
	}
}

int makeflow_report_opts_parse(int argc, char *argv[], struct makeflow_report_opts *o, char *err,
                               size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->output = "report.html";
	opterr = 1;
	optind = 0;
	int c, r;
	while ((c = getopt_long(argc, argv, "O:w:d:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, argv, err, errlen);
		if (r != 0) {
			makeflow_report_opts_clear(o);
			return r;
		}
	}
	int n = argc - optind;
	if (n < 1 || n > 2) {
		snprintf(err, errlen,
		         n < 1 ? "no transaction log given"
		               : "too many arguments: LOG [MONITOR_DIR]");
		makeflow_report_opts_clear(o);
		return CLI_USAGE;
	}
	o->log = argv[optind];
	o->monitor_dir = n == 2 ? argv[optind + 1] : NULL;
	if (!o->output[0]) {
		snprintf(err, errlen, "-O: the output file name is empty");
		makeflow_report_opts_clear(o);
		return HTC_EPARSE;
	}
	return CLI_DONE;
}
