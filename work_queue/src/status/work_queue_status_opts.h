/* work_queue_status_opts.h: the command line of work_queue_status, parsed into one struct: what
 * to list (the catalog's masters, or a master's summary, workers, tasks or categories), the
 * master's address and credentials, and the output form. Parsing never exits, so every option
 * and error text is tested without a master. */
#ifndef HTC_WORK_QUEUE_STATUS_OPTS_H
#define HTC_WORK_QUEUE_STATUS_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "catalog_expr.h"
#include "catalog_project.h"

/* The strings that are not owned point into the ARGV given to the parser. */
struct work_queue_status_opts {
	const char *what;    /* "master" (default), "workers" -W, "tasks" -T, "categories" -A */
	const char *catalog; /* -C; NULL: the default catalogs */
	const char *project; /* -M: catalog listing of the projects it matches */
	struct catalog_project
	    *project_re; /* -M compiled (a whole-name regular expression); owned */
	const char *password;
	const char *ssl_fingerprint;
	const char *ssl_ca;
	int ssl_no_verify;
	int json;
	struct catalog_expr *where; /* --where EXPR: a JX filter of the catalog listing; owned */
	double timeout;             /* -t, seconds (default 10) */
	char *host; /* HOST of HOST PORT or HOST:PORT, owned; NULL: list the catalog's masters */
	int port;   /* default 9123 */
	int live;   /* --live: the refreshing view of the master (status_live.h) */
	double live_interval; /* --live-interval, seconds (default 2) */
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed) or HTC_EPARSE with the message in ERR.
 * Only CLI_DONE leaves anything in O to free (with work_queue_status_opts_clear). */
int work_queue_status_opts_parse(int argc, char *argv[], struct work_queue_status_opts *o,
                                 char *err, size_t errlen);

/* Frees what O owns and re-initialises it. */
void work_queue_status_opts_clear(struct work_queue_status_opts *o);

/* Writes the usage text, naming the program PROG. */
void work_queue_status_opts_usage(FILE *out, const char *prog);

#endif
