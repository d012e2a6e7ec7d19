/* catalog_query_main.c: the catalog_query tool. It asks the catalog servers of a host list for
 * the records matching a filter (project, type, any KEY=VALUE) and prints them as a table or as
 * the JSON array the server returned (doc/catalog.md, section 7). Options: catalog_query_opts. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "catalog_client.h"
#include "catalog_query_opts.h"
#include "cli.h"
#include "debug.h"
#include "timeutil.h"

#include "banned.h"

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
	debug_config_program("catalog_query");
	struct catalog_query_opts o;
	char err[1024] = "";
	int r = catalog_query_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0)
		fatal("%s", err);
	char *why = NULL;
	json_t *a = catalog_query(o.catalog, o.filter, o.timeout, &why);
	if (!a) {
		fprintf(stderr, "catalog_query: %s\n", why);
		free(why);
		catalog_query_opts_clear(&o);
		return 2;
	}
	if (o.where) { /* -w EXPR is evaluated here, whatever the server */
		json_t *kept = json_array();
		size_t i;
		json_t *rec;
		json_array_foreach(a, i, rec) if (catalog_expr_match(o.where, rec))
		    json_array_append(kept, rec);
		json_decref(a);
		a = kept;
	}
	if (o.table) {
		print_table(a);
	} else {
		char *text = json_dumps(a, JSON_INDENT(1));
		printf("%s\n", text ? text : "[]");
		free(text);
	}
	json_decref(a);
	catalog_query_opts_clear(&o);
	debug_close();
	return 0;
}
