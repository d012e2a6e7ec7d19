/* catalog_server_opts.h: the command line of catalog_server, parsed into one struct: the port,
 * the port file, the limits of the record store and of the connections. Parsing never exits,
 * so every option and error text is tested without opening a socket (doc/catalog.md). */
#ifndef HTC_CATALOG_SERVER_OPTS_H
#define HTC_CATALOG_SERVER_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog_store.h"

#define CATALOG_SERVER_DEFAULT_PORT              9097
#define CATALOG_SERVER_DEFAULT_MAX_CONNECTIONS   256
#define CATALOG_SERVER_DEFAULT_IDLE_TIMEOUT_S    5
#define CATALOG_SERVER_DEFAULT_REQUEST_TIMEOUT_S 30

struct catalog_server_opts {
	int port;                          /* -p; 0: any free port */
	const char *port_file;             /* -Z (points into ARGV); NULL: none */
	struct catalog_store_limits store; /* -T, --max-records, --max-bytes */
	int max_connections;
	int64_t idle_timeout_ms;    /* --idle-timeout, given in seconds */
	int64_t request_timeout_ms; /* -T, given in seconds: the whole of one request */
	int seccomp; /* 1 (default): lock the process down once listening; 0: --no-seccomp */
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed) or HTC_EPARSE with the message in ERR.
 * O owns nothing. */
int catalog_server_opts_parse(int argc, char *argv[], struct catalog_server_opts *o, char *err,
                              size_t errlen);

/* Writes the usage text, naming the program PROG. */
void catalog_server_opts_usage(FILE *out, const char *prog);

#endif
