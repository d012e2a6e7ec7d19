/* catalog_query_opts.h: the command line of catalog_query, parsed into one struct: the catalog
 * servers, the filter the records must match, the output form and the timeout. Parsing never
 * exits, so every option and error text is tested without a catalog (doc/catalog.md). */
#ifndef HTC_CATALOG_QUERY_OPTS_H
#define HTC_CATALOG_QUERY_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "catalog_expr.h"
#include "catalog_filter.h"

struct catalog_query_opts {
	const char *catalog;           /* -C (points into ARGV); NULL: the default catalogs */
	struct catalog_filter *filter; /* -N, --type, --field, in order; owned */
	struct catalog_expr *where;    /* -w EXPR (JX, all of them joined by and); owned, or NULL */
	char *where_text;              /* their text; owned */
	int table;                     /* --table; else the JSON array (as CCTools prints it) */
	double timeout;                /* -t, seconds (default 10) */
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h, and
 * checks the host list of -C. Returns CLI_DONE (run), CLI_EXIT (help or version printed) or
 * HTC_EPARSE with the message in ERR. Only CLI_DONE leaves anything in O to free (with
 * catalog_query_opts_clear). */
int catalog_query_opts_parse(int argc, char *argv[], struct catalog_query_opts *o, char *err,
                             size_t errlen);

/* Frees what O owns. */
void catalog_query_opts_clear(struct catalog_query_opts *o);

/* Writes the usage text, naming the program PROG. */
void catalog_query_opts_usage(FILE *out, const char *prog);

#endif
