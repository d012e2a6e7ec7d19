/* catalog_server.h: the catalog server. One single-threaded libuv loop listens on one port
 * number for JSON status updates (UDP datagrams, or HTTP POST /update) from masters, factories
 * and makeflows, and answers HTTP queries (GET /query.json) about the records still alive. The
 * protocol, limits and logging are described in doc/catalog.md. */
#ifndef HTC_CATALOG_SERVER_H
#define HTC_CATALOG_SERVER_H

#include <stddef.h>

#include "catalog_server_opts.h"

/* Binds the TCP and UDP port of O (0: one free for both), writes the port file, and serves on
 * the default libuv loop until SIGTERM or SIGINT. Returns 0, or a negative code with a message
 * in ERR when the port cannot be bound or listened on or the port file cannot be written. */
int catalog_server_run(const struct catalog_server_opts *o, char *err, size_t errlen);

#endif
