/* catalog_router.h: the table of HTTP routes of the catalog server. A route names a method and
 * an exact path or a path prefix ("/query/" followed by an argument); the router finds the one
 * a request asks for, or says 404 or 405 with the methods the path allows. A new page (an HTML
 * status page) is one more row of the server's table. */
#ifndef HTC_CATALOG_ROUTER_H
#define HTC_CATALOG_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

/* A handler: CTX is the caller's request, ARG the rest of the path after a prefix ("" for an
 * exact path), not decoded. */
typedef void (*catalog_route_fn)(void *ctx, const char *arg);

struct catalog_route {
	const char *method; /* "GET", "POST" */
	const char *path;   /* "/query.json", or a prefix ending in '/' when PREFIX */
	bool prefix;
	catalog_route_fn fn;
};

/* The route of ROUTES (N rows, tried in order) for METHOD and PATH, with *ARG set to the rest
 * of PATH after the route's path. NULL when none: *STATUS is 404 (no route has that path) or
 * 405 (another method has), and ALLOW (ALLOWLEN bytes) holds the allowed methods joined by
 * ", " (empty for 404). */
const struct catalog_route *catalog_router_find(const struct catalog_route *routes, size_t n,
                                                const char *method, const char *path,
                                                const char **arg, int *status, char *allow,
                                                size_t allowlen);

#endif
