/* catalog_query_main.c: the catalog_query tool. It asks the catalog servers of a host list for
 * the records matching a filter (project, type, any KEY=VALUE) and prints them as a table or as
 * the JSON array the server returned (doc/catalog.md, section 7). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "catalog_client.h"
#include "catalog_filter.h"
#include "debug.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options]\n"
	        "Lists the records of a catalog server.\n\n"
	        "  -C, --catalog=HOST:PORT[,...]  catalog servers (default $CATALOG_HOST, else "
	        "%s)\n"
	        "  -N, --project=NAME         only records of this project\n"
	        "      --type=TYPE            only records of this type (wq_master, ...)\n"
	        "  -w, --where=KEY=VALUE      only records whose KEY has VALUE (repeatable)\n"
	        "      --json                 print the JSON array\n"
	        "  -t, --timeout=SECONDS      give up after this long (default 10)\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 answered (even with no records); 1 bad option; 2 no catalog "
	        "answered.\n",
	        prog, CATALOG_DEFAULT_HOST, debug_flags_help());
}

static void add_term(struct catalog_filter *f, const char *key, const char *value)
{
	char *err = NULL;
	if (catalog_filter_add(f, key, value, &err) < 0)
		fatal("%s", err);
}

/* A scalar field as text for the table, "-" when missing. */
static void field(json_t *rec, const char *key, char *buf, size_t size)
{
	json_t *v = json_object_get(rec, key);
	if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, size, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	else
		snprintf(buf, size, "-");
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void print_table(json_t *a)
{
	printf("%-12s %-36s %-20s %-15s %6s %7s %7s %7s\n", "TYPE", "NAME:PORT", "PROJECT",
	       "ADDRESS", "AGE", "WORKERS", "WAITING", "RUNNING");
	int64_t now = time_now_us() / 1000000;
	size_t i;
	json_t *rec;
	json_array_foreach(a, i, rec)
	{
		char type[80], name[300], port[16], project[300], addr[64], w[24], q[24], r[24];
		field(rec, "type", type, sizeof type);
		field(rec, "name", name, sizeof name);
		field(rec, "port", port, sizeof port);
		field(rec, "project", project, sizeof project);
		field(rec, "address", addr, sizeof addr);
		field(rec, "workers", w, sizeof w);
		field(rec, "tasks_waiting", q, sizeof q);
		field(rec, "tasks_running", r, sizeof r);
		char hp[320];
		snprintf(hp, sizeof hp, "%s:%s", name, port);
		char age[TIME_DURATION_SIZE];
		time_format_duration(now - json_integer_value(json_object_get(rec, "lastheard")),
		                     age, sizeof age);
		printf("%-12s %-36s %-20s %-15s %6s %7s %7s %7s\n", type, hp, project, addr, age, w,
		       q, r);
	}
}

int main(int argc, char **argv)
{
	const char *list = NULL;
	int json = 0;
	double timeout = 10;
	struct catalog_filter *f = catalog_filter_create();

	debug_config_program("catalog_query");
	enum { OPT_TYPE = 256, OPT_JSON };
	static const struct option longopts[] = {
	    {"catalog", required_argument, 0, 'C'},
	    {"project", required_argument, 0, 'N'},
	    {"type", required_argument, 0, OPT_TYPE},
	    {"where", required_argument, 0, 'w'},
	    {"json", no_argument, 0, OPT_JSON},
	    {"timeout", required_argument, 0, 't'},
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":C:N:w:t:d:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C': list = optarg; break;
		case 'N': add_term(f, "project", optarg); break;
		case OPT_TYPE: add_term(f, "type", optarg); break;
		case 'w': {
			const char *eq = strchr(optarg, '=');
			if (!eq)
				fatal("--where %s: expected KEY=VALUE", optarg);
			char *key = xstrndup(optarg, (size_t)(eq - optarg));
			add_term(f, key, eq + 1);
			free(key);
			break;
		}
		case OPT_JSON: json = 1; break;
		case 't':
			if (str_to_double(optarg, &timeout) < 0 || timeout <= 0 || timeout > 3600)
				fatal("-t %s: expected a number of seconds in (0, 3600]", optarg);
			break;
		default: {
			char err[256];
			int r = cli_common_option(c, argv, "catalog_query", usage, err, sizeof err);
			if (r == CLI_EXIT)
				return 0;
			if (r == CLI_FAIL)
				fatal("%s", err);
			break;
		}
		}
	}
	if (optind < argc)
		fatal("unexpected argument '%s' (see --help)", argv[optind]);

	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int n;
	char *err = NULL;
	if (catalog_hosts_parse(list, hosts, CATALOG_MAX_HOSTS, &n, &err) < 0)
		fatal("%s", err);

	json_t *a = catalog_query(list, f, timeout, &err);
	catalog_filter_delete(f);
	if (!a) {
		fprintf(stderr, "catalog_query: %s\n", err);
		free(err);
		return 2;
	}
	if (json) {
		char *text = json_dumps(a, JSON_INDENT(1));
		printf("%s\n", text ? text : "[]");
		free(text);
	} else {
		print_table(a);
	}
	json_decref(a);
	debug_close();
	return 0;
}
