/* makeflow_analyze_opts.c: parses the command line of makeflow_analyze (getopt_long, with the
 * options every program shares through cli.h) into struct makeflow_analyze_opts. See
 * makeflow_analyze_opts.h. */
#include "makeflow_analyze_opts.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "banned.h"

static const struct option longopts[] = {
    {"syntax-check", no_argument, 0, 'k'},
    {"info", no_argument, 0, 'i'},
    {"inputs", no_argument, 0, 'I'},
    {"outputs", no_argument, 0, 'O'},
    {"bundle-dir", required_argument, 0, 'b'},
    CLI_LONG_OPTIONS,
    WORKFLOW_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void makeflow_analyze_opts_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "Usage: %s [options] [WORKFLOW]   (default WORKFLOW: ./Makeflow)\n"
	        "  -k, --syntax-check   check the workflow only (exit 0 if it is valid)\n"
	        "  -i, --info           print rule, file, depth and width counts\n"
	        "  -I, --inputs         list the files the workflow needs (no rule makes them)\n"
	        "  -O, --outputs        list the workflow's final outputs\n"
	        "  -b, --bundle-dir=DIR copy the workflow and every file it needs that no rule\n"
	        "                       makes into DIR (new or empty), to run it elsewhere\n"
	        "      --json / --jx / --jx-args=FILE / --jx-define=VAR=EXPR   workflow form\n"
	        "      --parse-memory=SIZE   memory budget of reading the workflow\n"
	        "  -d, --debug=SUBSYS   debug output; -o, --debug-file=FILE\n"
	        "  -v, --version; -h, --help\n",
	        prog);
}

static void init(struct makeflow_analyze_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mode = 'k';
}

void makeflow_analyze_opts_clear(struct makeflow_analyze_opts *o)
{
	workflow_source_free(&o->src);
	init(o);
}

static int parse_one(struct makeflow_analyze_opts *o, int c, char *argv[], char *err, size_t errlen)
{
	switch (c) {
	case 'k':
	case 'i':
	case 'I':
	case 'O': o->mode = c; return 0;
	case 'b':
		o->mode = 'b';
		o->bundle_dir = optarg;
		return 0;
	case 'o':
		if (debug_config_file(optarg) < 0) {
			snprintf(err, errlen, "-o %s: cannot open", optarg);
			return HTC_EPARSE;
		}
		return 0;
	case 'd':
	case 'v':
	case 'h': {
		int r = cli_common_option(c, argv, "makeflow_analyze", makeflow_analyze_opts_usage,
		                          err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	default: return workflow_source_getopt(&o->src, c, optarg) ? 0 : CLI_USAGE;
	}
}

int makeflow_analyze_opts_parse(int argc, char *argv[], struct makeflow_analyze_opts *o, char *err,
                                size_t errlen)
{
	init(o);
	/* getopt itself reports an unknown option or a missing value (then the usage follows) */
	opterr = 1;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	while ((c = getopt_long(argc, argv, "kiIOb:d:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, argv, err, errlen);
		if (r != 0)
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
		makeflow_analyze_opts_clear(o);
	return r;
}
