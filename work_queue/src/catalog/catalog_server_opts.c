/* catalog_server_opts.c: parses the command line of catalog_server (getopt_long, with the
 * options every program shares through cli.h) into struct catalog_server_opts. See
 * catalog_server_opts.h. */
#include "catalog_server_opts.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"

#include "banned.h"

enum {
	OPT_MAX_RECORDS = 256,
	OPT_MAX_BYTES,
	OPT_MAX_CONNECTIONS,
	OPT_IDLE_TIMEOUT,
	OPT_NO_SECCOMP,
	OPT_NOT_HERE /* a CCTools option this server does not have */
};

/* The short CCTools options refused (b and S without an argument). */
#define NOT_HERE_SHORT "bBHILmMnOuU"

static const struct option longopts[] = {
    {"port", required_argument, 0, 'p'},
    {"port-file", required_argument, 0, 'Z'},
    {"lifetime", required_argument, 0, 'l'},
    {"timeout", required_argument, 0, 'T'},
    {"single", no_argument, 0, 'S'},
    /* CCTools options refused by name (doc/compatibility.md) */
    {"background", no_argument, 0, 'b'},
    {"pid-file", required_argument, 0, 'B'},
    {"history", required_argument, 0, 'H'},
    {"interface", required_argument, 0, 'I'},
    {"update-log", required_argument, 0, 'L'},
    {"max-jobs", required_argument, 0, 'm'},
    {"server-size", required_argument, 0, 'M'},
    {"name", required_argument, 0, 'n'},
    {"debug-rotate-max", required_argument, 0, 'O'},
    {"update-host", required_argument, 0, 'u'},
    {"update-interval", required_argument, 0, 'U'},
    {"max-records", required_argument, 0, OPT_MAX_RECORDS},
    {"max-bytes", required_argument, 0, OPT_MAX_BYTES},
    {"max-connections", required_argument, 0, OPT_MAX_CONNECTIONS},
    {"idle-timeout", required_argument, 0, OPT_IDLE_TIMEOUT},
    {"no-seccomp", no_argument, 0, OPT_NO_SECCOMP},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void catalog_server_opts_usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options]\n"
	        "Keeps the status records that Work Queue masters, factories and makeflows send "
	        "(UDP or\nHTTP POST /update) and answers HTTP queries (GET /query.json, and the "
	        "CCTools\n"
	        "clients' /query/BASE64 and /query.text).\n\n"
	        "  -p, --port=PORT            TCP and UDP port (default %d; 0 = any free port)\n"
	        "  -Z, --port-file=FILE       write the port number to FILE once listening\n"
	        "  -l, --lifetime=SECONDS     longest lifetime of a record (default %d)\n"
	        "  -T, --timeout=SECONDS      longest time to serve one request (default %d)\n"
	        "  -S, --single               one process serves everything (always so here)\n"
	        "      --max-records=N        most records kept (default %d)\n"
	        "      --max-bytes=BYTES      most bytes of records kept (default %d)\n"
	        "      --max-connections=N    most simultaneous TCP connections (default %d)\n"
	        "      --idle-timeout=SECONDS close a connection idle this long (default %d)\n"
	        "      --no-seccomp           do not refuse the calls a server never needs once "
	        "listening\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n",
	        prog, CATALOG_SERVER_DEFAULT_PORT, CATALOG_DEFAULT_LIFETIME,
	        CATALOG_SERVER_DEFAULT_REQUEST_TIMEOUT_S, CATALOG_DEFAULT_MAX_RECORDS,
	        CATALOG_DEFAULT_MAX_BYTES, CATALOG_SERVER_DEFAULT_MAX_CONNECTIONS,
	        CATALOG_SERVER_DEFAULT_IDLE_TIMEOUT_S, debug_flags_help());
}

/* An integer in LO..HI into *V. */
static int int_arg(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *v, char *err,
                   size_t errlen)
{
	if (str_to_int64(arg, v) < 0 || *v < lo || *v > hi) {
		snprintf(err, errlen, "%s %s: expected an integer between %" PRId64 " and %" PRId64,
		         opt, arg, lo, hi);
		return HTC_EPARSE;
	}
	return 0;
}

static int parse_one(struct catalog_server_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	int64_t v = 0;
	int r = 0;
	switch (c) {
	case 'p':
		r = int_arg("-p", arg, 0, 65535, &v, err, errlen);
		o->port = (int)v;
		break;
	case 'Z':
		if (!*arg) {
			snprintf(err, errlen, "-Z: empty file name");
			return HTC_EPARSE;
		}
		o->port_file = arg;
		break;
	case 'l':
		r = int_arg("-l", arg, 1, 365 * 86400, &v, err, errlen);
		o->store.lifetime_s = v;
		break;
	case 'T':
		r = int_arg("-T", arg, 1, 3600, &v, err, errlen);
		o->request_timeout_ms = v * 1000;
		break;
	case 'S': break; /* one process, as always here: the CCTools meaning holds */
	case OPT_MAX_RECORDS:
		r = int_arg("--max-records", arg, 1, 10000000, &v, err, errlen);
		o->store.max_records = (size_t)v;
		break;
	case OPT_MAX_BYTES:
		r = int_arg("--max-bytes", arg, 1024, INT64_MAX / 2, &v, err, errlen);
		o->store.max_bytes = (size_t)v;
		break;
	case OPT_MAX_CONNECTIONS:
		r = int_arg("--max-connections", arg, 1, 100000, &v, err, errlen);
		o->max_connections = (int)v;
		break;
	case OPT_IDLE_TIMEOUT:
		r = int_arg("--idle-timeout", arg, 1, 3600, &v, err, errlen);
		o->idle_timeout_ms = v * 1000;
		break;
	case OPT_NO_SECCOMP: o->seccomp = 0; break;
	default:
		r = cli_common_option(c, argv, "catalog_server", catalog_server_opts_usage, err,
		                      errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	return r;
}

int catalog_server_opts_parse(int argc, char *argv[], struct catalog_server_opts *o, char *err,
                              size_t errlen)
{
	*o = (struct catalog_server_opts){
	    .port = CATALOG_SERVER_DEFAULT_PORT,
	    .store = {CATALOG_DEFAULT_LIFETIME, CATALOG_DEFAULT_MAX_RECORDS,
	              CATALOG_DEFAULT_MAX_BYTES},
	    .max_connections = CATALOG_SERVER_DEFAULT_MAX_CONNECTIONS,
	    .idle_timeout_ms = CATALOG_SERVER_DEFAULT_IDLE_TIMEOUT_S * 1000,
	    .request_timeout_ms = CATALOG_SERVER_DEFAULT_REQUEST_TIMEOUT_S * 1000,
	    .seccomp = 1,
	};
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, li = -1;
	while ((c = getopt_long(argc, argv, ":p:Z:l:T:Sd:o:bB:H:I:L:m:M:n:O:u:U:vh", longopts,
	                        &li)) != -1) {
		if (c > 0 && c < 128 && strchr(NOT_HERE_SHORT, c)) {
			char name[64];
			if (li >= 0)
				snprintf(name, sizeof name, "--%s", longopts[li].name);
			else
				snprintf(name, sizeof name, "-%c", c);
			snprintf(err, errlen,
			         "%s: a CCTools catalog_server option that is not supported here "
			         "(doc/compatibility.md)",
			         name);
			return HTC_EPARSE;
		}
		li = -1;
		int r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
		return HTC_EPARSE;
	}
	return CLI_DONE;
}
