/* catalog_update_opts.c: parses the command line of catalog_update (getopt_long, with the
 * options every program shares through cli.h) into struct catalog_update_opts. See
 * catalog_update_opts.h. */
#include "catalog_update_opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"

#include "banned.h"

enum { OPT_UDP = 256, OPT_HTTP };

static const struct option longopts[] = {
    {"catalog", required_argument, 0, 'C'},
    {"file", required_argument, 0, 'f'},
    {"udp", no_argument, 0, OPT_UDP},
    {"http", no_argument, 0, OPT_HTTP},
    {"timeout", required_argument, 0, 't'},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void catalog_update_opts_usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options] FILE|-\n"
	        "       %s [options] -f FILE\n"
	        "Sends the JSON record in FILE (or standard input) to the catalog servers.\n\n"
	        "  -C, -c, --catalog=HOST:PORT[,...]  catalog servers (default $CATALOG_HOST, "
	        "else %s)\n"
	        "  -f, --file=FILE            the record (instead of the FILE argument)\n"
	        "      --udp                  send a UDP datagram (no reply)\n"
	        "      --http                 send POST /update (the server's answer is checked)\n"
	        "                             (default: UDP below %d bytes, else HTTP)\n"
	        "  -t, --timeout=SECONDS      give up after this long (default 5)\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 sent; 1 bad option or record; 2 not delivered to some host.\n",
	        prog, prog, CATALOG_DEFAULT_HOST, CATALOG_UDP_THRESHOLD, debug_flags_help());
}

static int parse_one(struct catalog_update_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	switch (c) {
	case 'C':
	case 'c': o->catalog = arg; break;
	case 'f': o->path = arg; break;
	case OPT_UDP: o->mode = CATALOG_SEND_UDP; break;
	case OPT_HTTP: o->mode = CATALOG_SEND_HTTP; break;
	case 't':
		if (str_to_double(arg, &o->timeout) < 0 || o->timeout <= 0 || o->timeout > 3600) {
			snprintf(err, errlen, "-t %s: expected a number of seconds in (0, 3600]",
			         arg);
			return HTC_EPARSE;
		}
		break;
	default: {
		int r = cli_common_option(c, argv, "catalog_update", catalog_update_opts_usage, err,
		                          errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	}
	return 0;
}

int catalog_update_opts_parse(int argc, char *argv[], struct catalog_update_opts *o, char *err,
                              size_t errlen)
{
	*o = (struct catalog_update_opts){.mode = CATALOG_SEND_AUTO, .timeout = 5};
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c;
	while ((c = getopt_long(argc, argv, ":C:c:f:t:d:o:vh", longopts, NULL)) != -1) {
		int r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			return r;
	}
	if (argc - optind != (o->path ? 0 : 1)) {
		snprintf(err, errlen,
		         o->path ? "-f FILE and a FILE argument: give one record"
		                 : "expected one FILE (or - for standard input); see --help");
		return HTC_EPARSE;
	}
	if (!o->path)
		o->path = argv[optind];
	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int n;
	char *why = NULL;
	if (catalog_hosts_parse(o->catalog, hosts, CATALOG_MAX_HOSTS, &n, &why) < 0) {
		snprintf(err, errlen, "%s", why ? why : "");
		free(why);
		return HTC_EPARSE;
	}
	return CLI_DONE;
}
