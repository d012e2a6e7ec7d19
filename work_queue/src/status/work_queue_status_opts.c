/* work_queue_status_opts.c: parses the command line of work_queue_status (getopt_long, with the
 * options every program shares through cli.h) into struct work_queue_status_opts. See
 * work_queue_status_opts.h. */
#include "work_queue_status_opts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "units.h"
#include "cli.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

enum {
	OPT_JSON = 256,
	OPT_FP,
	OPT_CA,
	OPT_NO_VERIFY,
	OPT_WHERE,
	OPT_CAPACITY,
	OPT_LIVE,
	OPT_LIVE_INTERVAL
};

static const struct option longopts[] = {
    {"workers", no_argument, 0, 'W'},
    {"tasks", no_argument, 0, 'T'},
    {"able-workers", no_argument, 0, 'A'},
    {"categories", no_argument, 0, 'A'},
    {"project-name", required_argument, 0, 'M'},
    {"catalog", required_argument, 0, 'C'},
    {"password", required_argument, 0, 'P'},
    {"ssl-fingerprint", required_argument, 0, OPT_FP},
    {"ssl-ca", required_argument, 0, OPT_CA},
    {"ssl-no-verify", no_argument, 0, OPT_NO_VERIFY},
    {"json", no_argument, 0, OPT_JSON},
    {"verbose", no_argument, 0, 'l'},
    {"statistics", no_argument, 0, 'Q'},
    {"where", required_argument, 0, OPT_WHERE},
    {"live", no_argument, 0, OPT_LIVE},
    {"live-interval", required_argument, 0, OPT_LIVE_INTERVAL},
    /* CCTools options refused by name (doc/compatibility.md) */
    {"resources", no_argument, 0, 'R'},
    {"capacity", no_argument, 0, OPT_CAPACITY},
    {"debug-rotate-max", required_argument, 0, 'O'},
    {"timeout", required_argument, 0, 't'},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void work_queue_status_opts_usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options]                  masters known to the catalog\n"
	        "       %s [options] HOST PORT        one master (also HOST:PORT)\n"
	        "\n"
	        "  -W, --workers            the master's workers\n"
	        "  -T, --tasks              the master's tasks\n"
	        "  -A, --able-workers, --categories  the master's categories\n"
	        "  -Q, --statistics         the masters the catalog knows (the default)\n"
	        "  -M, --project-name=P     catalog listing: only masters whose whole project\n"
	        "                           name matches the regular expression P\n"
	        "      --where=EXPR         catalog listing: only masters for which the JX\n"
	        "                           expression EXPR is true\n"
	        "  -C, --catalog=H:P[,...]  catalog servers (default $CATALOG_HOST, "
	        "localhost:9097)\n"
	        "  -P, --password=FILE      the master's password\n"
	        "      --ssl-fingerprint=HEX, --ssl-ca=FILE, --ssl-no-verify  TLS to the master\n"
	        "  -l, --verbose, --json    print the records as JSON instead of a table\n"
	        "  -t, --timeout=SECONDS    give up after this long (default 10)\n"
	        "      --live               HOST PORT: a view of the master's workers, tasks\n"
	        "                           and categories, refreshed until q, Ctrl-C or the\n"
	        "                           master goes away\n"
	        "      --live-interval=S    seconds between two refreshes (default 2)\n"
	        "  -O, --debug-rotate-max=SIZE  the -o file becomes FILE.old at SIZE (0: never)\n"
	        "  -d, --debug=SUBSYS  -o, --debug-file=FILE  -v, --version  -h, --help\n",
	        prog, prog);
}

static void init(struct work_queue_status_opts *o)
{
	memset(o, 0, sizeof *o);
	o->what = "master";
	o->timeout = 10;
	o->port = 9123;
	o->live_interval = 2;
}

void work_queue_status_opts_clear(struct work_queue_status_opts *o)
{
	free(o->host);
	catalog_expr_delete(o->where);
	catalog_project_delete(o->project_re);
	init(o);
}

static int parse_one(struct work_queue_status_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	switch (c) {
	case 'Q': o->what = "master"; break;
	case 'l': o->json = 1; break;
	case OPT_WHERE: {
		struct catalog_expr *e = catalog_expr_parse_option(arg, err, errlen);
		if (!e)
			return HTC_EPARSE;
		catalog_expr_delete(o->where);
		o->where = e;
		break;
	}
	case 'R':
	case OPT_CAPACITY:
		snprintf(err, errlen,
		         "%s: a CCTools work_queue_status option that is not supported here "
		         "(doc/compatibility.md)",
		         c == 'R' ? "-R" : "--capacity");
		return HTC_EPARSE;
	case 'O': { /* --debug-rotate-max: the -o file becomes FILE.old at this size */
		int64_t bytes = -1;
		if (units_parse_bytes(arg, &bytes) < 0 || bytes < 0) {
			snprintf(err, errlen,
			         "-O %s: expected a size such as 10M (0: never rotate)", arg);
			return HTC_EPARSE;
		}
		debug_config_file_size(bytes);
		break;
	}
	case 'W': o->what = "workers"; break;
	case 'T': o->what = "tasks"; break;
	case 'A': o->what = "categories"; break;
	case 'M': {
		char *why = NULL;
		struct catalog_project *p = catalog_project_create(arg, &why);
		if (!p) {
			snprintf(err, errlen, "-M: %s", why);
			free(why);
			return HTC_EPARSE;
		}
		catalog_project_delete(o->project_re);
		o->project_re = p;
		o->project = arg;
		break;
	}
	case 'C': o->catalog = arg; break;
	case 'P': o->password = arg; break;
	case OPT_FP: o->ssl_fingerprint = arg; break;
	case OPT_CA: o->ssl_ca = arg; break;
	case OPT_NO_VERIFY: o->ssl_no_verify = 1; break;
	case OPT_JSON: o->json = 1; break;
	case OPT_LIVE: o->live = 1; break;
	case OPT_LIVE_INTERVAL:
		if (str_to_double(arg, &o->live_interval) < 0 || o->live_interval < 0.1 ||
		    o->live_interval > 3600) {
			snprintf(err, errlen,
			         "--live-interval %s: expected seconds from 0.1 to 3600", arg);
			return HTC_EPARSE;
		}
		break;
	case 't':
		if (str_to_double(arg, &o->timeout) < 0 || o->timeout <= 0 || o->timeout > 3600) {
			snprintf(err, errlen, "-t %s: expected a number of seconds in (0, 3600]",
			         arg);
			return HTC_EPARSE;
		}
		break;
	default: {
		int r = cli_common_option(c, argv, "work_queue_status",
		                          work_queue_status_opts_usage, err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	}
	return 0;
}

/* The master: HOST PORT, HOST:PORT, HOST (port 9123), or none (the catalog's listing). */
static int parse_master(struct work_queue_status_opts *o, int rest, char *const *args, char *err,
                        size_t errlen)
{
	if (rest == 0) {
		if (strcmp(o->what, "master")) {
			snprintf(err, errlen,
			         "-W, -T and -A need a master: HOST PORT (see --help)");
			return HTC_EPARSE;
		}
		return 0;
	}
	if (rest > 2) {
		snprintf(err, errlen, "unexpected argument '%s' (see --help)", args[2]);
		return HTC_EPARSE;
	}
	if (o->where || o->project) {
		snprintf(err, errlen, "%s filters the catalog's listing: not with HOST PORT",
		         o->where ? "--where" : "-M");
		return HTC_EPARSE;
	}
	o->host = xstrdup(args[0]);
	char *colon = strrchr(o->host, ':');
	const char *portarg = rest == 2 ? args[1] : NULL;
	if (rest == 1 && colon) {
		*colon = 0;
		portarg = colon + 1;
	}
	int64_t port = 9123;
	if (portarg && (str_to_int64(portarg, &port) < 0 || port < 1 || port > 65535)) {
		snprintf(err, errlen, "port '%s': expected 1..65535", portarg);
		return HTC_EPARSE;
	}
	o->port = (int)port;
	return 0;
}

int work_queue_status_opts_parse(int argc, char *argv[], struct work_queue_status_opts *o,
                                 char *err, size_t errlen)
{
	init(o);
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	while ((c = getopt_long(argc, argv, "+:QlRWTAM:C:P:t:O:d:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			goto out;
	}
	r = parse_master(o, argc - optind, argv + optind, err, errlen);
	if (r == 0 && o->live && !o->host) {
		snprintf(err, errlen, "--live needs a master: HOST PORT (see --help)");
		r = HTC_EPARSE;
	} else if (r == 0 && o->live && o->json) {
		snprintf(err, errlen, "--live shows tables: not with --json or -l");
		r = HTC_EPARSE;
	}
out:
	if (r != 0)
		work_queue_status_opts_clear(o);
	return r;
}
