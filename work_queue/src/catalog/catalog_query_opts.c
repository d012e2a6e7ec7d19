/* catalog_query_opts.c: parses the command line of catalog_query (getopt_long, with the options
 * every program shares through cli.h) into struct catalog_query_opts. See catalog_query_opts.h. */
#include "catalog_query_opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_client.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

enum { OPT_TYPE = 256, OPT_JSON, OPT_TABLE, OPT_FIELD };

static const struct option longopts[] = {
    {"catalog", required_argument, 0, 'C'},
    {"field", required_argument, 0, OPT_FIELD},
    {"table", no_argument, 0, OPT_TABLE},
    {"debug-rotate-max", required_argument, 0, 'O'},
    {"project", required_argument, 0, 'N'},
    {"type", required_argument, 0, OPT_TYPE},
    {"where", required_argument, 0, 'w'},
    {"json", no_argument, 0, OPT_JSON},
    {"timeout", required_argument, 0, 't'},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void catalog_query_opts_usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options]\n"
	        "Lists the records of a catalog server.\n\n"
	        "  -C, -c, --catalog=HOST:PORT[,...]  catalog servers (default $CATALOG_HOST, "
	        "else %s)\n"
	        "  -N, --project=NAME         only records of this project\n"
	        "      --type=TYPE            only records of this type (wq_master, ...)\n"
	        "  -w, --where=EXPR           only records for which the JX expression EXPR is\n"
	        "                             true, e.g. 'type==\"wq_master\" and workers>0'\n"
	        "      --field=KEY=VALUE      only records whose KEY has VALUE (repeatable)\n"
	        "      --json                 print the JSON array (the default)\n"
	        "      --table                print a table\n"
	        "  -t, --timeout=SECONDS      give up after this long (default 10)\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 answered (even with no records); 1 bad option; 2 no catalog "
	        "answered.\n",
	        prog, CATALOG_DEFAULT_HOST, debug_flags_help());
}

void catalog_query_opts_clear(struct catalog_query_opts *o)
{
	catalog_filter_delete(o->filter);
	catalog_expr_delete(o->where);
	free(o->where_text);
	memset(o, 0, sizeof *o);
}

/* *WHY (freed here) as the message in ERR. */
static int fail(char *why, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", why ? why : "");
	free(why);
	return HTC_EPARSE;
}

static int add_term(struct catalog_query_opts *o, const char *key, const char *value, char *err,
                    size_t errlen)
{
	char *why = NULL;
	if (catalog_filter_add(o->filter, key, value, &why) < 0)
		return fail(why, err, errlen);
	return 0;
}

static int parse_one(struct catalog_query_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	switch (c) {
	case 'C':
	case 'c': o->catalog = arg; break;
	case 'N': return add_term(o, "project", arg, err, errlen);
	case OPT_TYPE: return add_term(o, "type", arg, err, errlen);
	case 'w': {
		/* repeated: all must hold */
		char *t = o->where_text ? xasprintf("%s and (%s)", o->where_text, arg)
		                        : xasprintf("(%s)", arg);
		free(o->where_text);
		o->where_text = t;
		struct catalog_expr *e = catalog_expr_parse_option(arg, err, errlen);
		if (!e)
			return HTC_EPARSE;
		catalog_expr_delete(e);
		return 0;
	}
	case 'O':
		snprintf(err, errlen,
		         "-O: a CCTools catalog_query option that is not supported here "
		         "(doc/compatibility.md)");
		return HTC_EPARSE;
	case OPT_FIELD: {
		const char *eq = strchr(arg, '=');
		if (!eq) {
			snprintf(err, errlen, "--field %s: expected KEY=VALUE", arg);
			return HTC_EPARSE;
		}
		char *key = xstrndup(arg, (size_t)(eq - arg));
		int r = add_term(o, key, eq + 1, err, errlen);
		free(key);
		return r;
	}
	case OPT_JSON: o->table = 0; break;
	case OPT_TABLE: o->table = 1; break;
	case 't':
		if (str_to_double(arg, &o->timeout) < 0 || o->timeout <= 0 || o->timeout > 3600) {
			snprintf(err, errlen, "-t %s: expected a number of seconds in (0, 3600]",
			         arg);
			return HTC_EPARSE;
		}
		break;
	default: {
		int r = cli_common_option(c, argv, "catalog_query", catalog_query_opts_usage, err,
		                          errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	}
	return 0;
}

int catalog_query_opts_parse(int argc, char *argv[], struct catalog_query_opts *o, char *err,
                             size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->timeout = 10;
	o->filter = catalog_filter_create();
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	while ((c = getopt_long(argc, argv, ":C:c:N:w:t:O:d:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			goto out;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
		r = HTC_EPARSE;
		goto out;
	}
	char *why = NULL;
	if (o->where_text) {
		o->where = catalog_expr_parse(o->where_text, strlen(o->where_text), &why);
		if (!o->where) {
			r = fail(why, err, errlen);
			goto out;
		}
	}
	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int n;
	if (catalog_hosts_parse(o->catalog, hosts, CATALOG_MAX_HOSTS, &n, &why) < 0)
		r = fail(why, err, errlen);
out:
	if (r != 0)
		catalog_query_opts_clear(o);
	return r;
}
