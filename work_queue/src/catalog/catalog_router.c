/* catalog_router.c: finds the route of an HTTP request in the catalog server's table (see
 * catalog_router.h): an exact path or a prefix, then the method. */
#include "catalog_router.h"

#include <stdio.h>
#include <string.h>

#include "banned.h"

static bool path_matches(const struct catalog_route *r, const char *path, const char **arg)
{
	size_t n = strlen(r->path);
	if (r->prefix ? strncmp(path, r->path, n) != 0 : strcmp(path, r->path) != 0)
		return false;
	*arg = path + (r->prefix ? n : strlen(path));
	return true;
}

const struct catalog_route *catalog_router_find(const struct catalog_route *routes, size_t n,
                                                const char *method, const char *path,
                                                const char **arg, int *status, char *allow,
                                                size_t allowlen)
{
	bool path_known = false;
	size_t used = 0;
	if (allowlen)
		allow[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const char *a;
		if (!path_matches(&routes[i], path, &a))
			continue;
		if (!strcmp(routes[i].method, method)) {
			*arg = a;
			return &routes[i];
		}
		path_known = true;
		if (allowlen > used && !strstr(allow, routes[i].method)) {
			int w = snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "",
			                 routes[i].method);
			if (w > 0)
				used +=
				    (size_t)w < allowlen - used ? (size_t)w : allowlen - used - 1;
		}
	}
	*status = path_known ? 405 : 404;
	return NULL;
}
