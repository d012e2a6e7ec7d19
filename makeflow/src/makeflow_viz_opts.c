/* makeflow_viz_opts.c: parses the command line of makeflow_viz (getopt_long, with -v and -h
 * through cli.h) into struct makeflow_viz_opts. See makeflow_viz_opts.h. */
#include "makeflow_viz_opts.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "htc_error.h"

#include "banned.h"

static const struct option longopts[] = {
    {"display", required_argument, 0, 'D'},
    {"version", no_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'},
    WORKFLOW_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void makeflow_viz_opts_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "Usage: %s -D dot|json|svg|png [options] [WORKFLOW]   (default WORKFLOW: "
	        "./Makeflow)\n"
	        "  -D, --display=FORMAT  dot (Graphviz), json, or svg / png (drawn by Graphviz's\n"
	        "                        dot, which must be installed)\n"
	        "      --json / --jx / --jx-args=FILE / --jx-define=VAR=EXPR   workflow form\n"
	        "      --parse-memory=SIZE   memory budget of reading the workflow\n"
	        "  -v, --version; -h, --help\n",
	        prog);
}

void makeflow_viz_opts_clear(struct makeflow_viz_opts *o)
{
	workflow_source_free(&o->src);
	memset(o, 0, sizeof *o);
}

static int parse_one(struct makeflow_viz_opts *o, int c, char *argv[], char *err, size_t errlen)
{
	switch (c) {
	case 'D': o->display = optarg; return 0;
	case 'v':
	case 'h': {
		int r = cli_common_option(c, argv, "makeflow_viz", makeflow_viz_opts_usage, err,
		                          errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	default: return workflow_source_getopt(&o->src, c, optarg) ? 0 : CLI_USAGE;
	}
}

int makeflow_viz_opts_parse(int argc, char *argv[], struct makeflow_viz_opts *o, char *err,
                            size_t errlen)
{
	memset(o, 0, sizeof *o);
	/* getopt itself reports an unknown option or a missing value (then the usage follows) */
	opterr = 1;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	while ((c = getopt_long(argc, argv, "D:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, argv, err, errlen);
		if (r != 0)
			goto out;
	}
	const char *d = o->display;
	if (!d || (strcmp(d, "dot") && strcmp(d, "json") && strcmp(d, "svg") && strcmp(d, "png"))) {
		snprintf(err, errlen, "%s%s%s-D dot, json, svg or png is required",
		         d ? "unknown display format '" : "", d ? d : "", d ? "'; " : "");
		r = HTC_EUNSUP;
		goto out;
	}
	if (optind < argc - 1) {
		snprintf(err, errlen, "expected one workflow file (see --help)");
		r = HTC_EPARSE;
		goto out;
	}
	o->src.path = optind < argc ? argv[optind] : "Makeflow";
out:
	if (r != 0)
		makeflow_viz_opts_clear(o);
	return r;
}
