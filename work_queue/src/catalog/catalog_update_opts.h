/* catalog_update_opts.h: the command line of catalog_update, parsed into one struct: the
 * catalog servers, how to send (UDP, HTTP or by size), the timeout and the record's file.
 * Parsing never exits, so every option and error text is tested without a catalog
 * (doc/catalog.md). */
#ifndef HTC_CATALOG_UPDATE_OPTS_H
#define HTC_CATALOG_UPDATE_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "catalog_client.h"

/* The strings point into the ARGV given to the parser. */
struct catalog_update_opts {
	const char *catalog; /* -C; NULL: the default catalogs */
	enum catalog_send_mode mode;
	double timeout;   /* -t, seconds (default 5) */
	const char *path; /* the record's file, "-" for standard input */
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h, and
 * checks the host list of -C. Returns CLI_DONE (run), CLI_EXIT (help or version printed) or
 * HTC_EPARSE with the message in ERR. O owns nothing. */
int catalog_update_opts_parse(int argc, char *argv[], struct catalog_update_opts *o, char *err,
                              size_t errlen);

/* Writes the usage text, naming the program PROG. */
void catalog_update_opts_usage(FILE *out, const char *prog);

#endif
