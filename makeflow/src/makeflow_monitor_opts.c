/* makeflow_monitor_opts.c: parses the command line of makeflow_monitor (getopt_long, with the
 * options every program shares through cli.h) into struct makeflow_monitor_opts. See
 * makeflow_monitor_opts.h. */
#include "makeflow_monitor_opts.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"

#include "banned.h"

enum { OPT_ONCE = 1000 };

static const struct option longopts[] = {
    {"interval", required_argument, 0, 't'},
    {"sort", no_argument, 0, 'S'},
    {"hide-finished", no_argument, 0, 'H'},
    {"once", no_argument, 0, OPT_ONCE},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void makeflow_monitor_opts_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "Usage: %s [options] LOG...   (LOG: a workflow's transaction log, "
	        "WORKFLOW.makeflowlog)\n"
	        "  -t, --interval=SECONDS  look at the logs every SECONDS (default 1)\n"
	        "  -S, --sort              show the workflows in order of progress\n"
	        "  -H, --hide-finished     stop showing a workflow when it ends; exit when all "
	        "ended\n"
	        "      --once              show each log once, as it is now, and exit\n"
	        "  -d, --debug=SUBSYS      debug output; -o, --debug-file=FILE\n"
	        "  -v, --version; -h, --help\n",
	        prog);
}

static int parse_interval(const char *s, double *out, char *err, size_t errlen)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v < MAKEFLOW_MONITOR_MIN_INTERVAL || v > 86400) {
		snprintf(err, errlen, "-t %s: the interval is a number of seconds from %g to 86400",
		         s, MAKEFLOW_MONITOR_MIN_INTERVAL);
		return HTC_EPARSE;
	}
	*out = v;
	return 0;
}

static int parse_one(struct makeflow_monitor_opts *o, int c, char *argv[], char *err, size_t errlen)
{
	switch (c) {
	case 't': return parse_interval(optarg, &o->interval, err, errlen);
	case 'S': o->sort = 1; return 0;
	case 'H': o->hide_finished = 1; return 0;
	case OPT_ONCE: o->once = 1; return 0;
	case 'o':
		if (debug_config_file(optarg) < 0) {
			snprintf(err, errlen, "-o %s: cannot open", optarg);
			return HTC_EPARSE;
		}
		return 0;
	case 'd':
	case 'v':
	case 'h': {
		int r = cli_common_option(c, argv, "makeflow_monitor", makeflow_monitor_opts_usage,
		                          err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	default: return CLI_USAGE;
	}
}

int makeflow_monitor_opts_parse(int argc, char *argv[], struct makeflow_monitor_opts *o, char *err,
                                size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->interval = 1.0;
	/* getopt itself reports an unknown option or a missing value (then the usage follows) */
	opterr = 1;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r;
	while ((c = getopt_long(argc, argv, "t:SHd:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, argv, err, errlen);
		if (r != 0)
			return r;
	}
	if (optind >= argc) {
		snprintf(err, errlen, "no transaction log given");
		return CLI_USAGE;
	}
	o->logs = argv + optind;
	o->nlogs = argc - optind;
	return CLI_DONE;
}
