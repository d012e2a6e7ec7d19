/* worker_masters.c: orders the masters of a project found in the catalog (priority first,
 * then random, to spread workers) and expands each into the addresses its record tells
 * workers to use, so that worker_conn.c only walks a list. */
#include "worker_masters.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_project.h"
#include "xalloc.h"

#include "banned.h"

struct ranked {
	json_t *rec;
	json_int_t priority;
	long shuffle; /* random tie-breaker */
};

static int by_priority(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return (x->shuffle > y->shuffle) - (x->shuffle < y->shuffle);
}

static const char *str(const json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));
	return s && *s ? s : NULL;
}

static void add(json_t *out, const char *host, const char *name, json_int_t port,
                const char *project)
{
	json_array_append_new(out, json_pack("{s:s,s:s,s:I,s:s}", "host", host, "name",
	                                     name ? name : host, "port", port, "project", project));
}

/* The addresses of one master, in the order its record asks for. */
static void expand(json_t *out, const json_t *rec)
{
	const char *name = str(rec, "name");
	const char *addr = str(rec, "address");
	json_int_t port = json_integer_value(json_object_get(rec, "port"));
	const char *proj = str(rec, "project");
	const char *pref = str(rec, "manager_preferred_connection");
	if (!pref)
		pref = str(rec, "master_preferred_connection"); /* older masters */
	if (pref && !strcmp(pref, "by_hostname")) {
		if (name || addr)
			add(out, name ? name : addr, name, port, proj);
		return;
	}
	if (pref && !strcmp(pref, "by_apparent_ip")) {
		if (name || addr)
			add(out, addr ? addr : name, name, port, proj);
		return;
	}
	int addr_listed = 0;
	size_t i;
	json_t *ifa;
	json_array_foreach(json_object_get(rec, "network_interfaces"), i, ifa)
	{
		const char *h = str(ifa, "host");
		if (!h)
			continue;
		if (addr && !strcmp(h, addr))
			addr_listed = 1;
		add(out, h, name, port, proj);
	}
	if (addr && !addr_listed)
		add(out, addr, name, port, proj);
	else if (!addr && json_array_size(out) == 0 && name)
		add(out, name, name, port, proj);
}

json_t *worker_masters_order(const json_t *records, const struct catalog_project *project)
{
	size_t n = json_array_size(records), k = 0;
	struct ranked *r = xcalloc(n ? n : 1, sizeof *r);
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
	{
		const char *type = str(rec, "type");
		const char *proj = str(rec, "project");
		json_t *port = json_object_get(rec, "port");
		if (!type || strcmp(type, "wq_master") || !catalog_project_match(project, proj) ||
		    !json_is_integer(port) || json_integer_value(port) <= 0 ||
		    json_integer_value(port) > 65535)
			continue;
		json_t *p = json_object_get(rec, "priority");
		r[k].rec = rec;
		r[k].priority = json_is_integer(p) ? json_integer_value(p)
		                : json_is_real(p)  ? (json_int_t)json_real_value(p)
		                                   : 0;
		r[k].shuffle = random();
		k++;
	}
	qsort(r, k, sizeof *r, by_priority);
	json_t *out = json_array();
	for (i = 0; i < k; i++) {
		json_t *one = json_array();
		expand(one, r[i].rec);
		json_array_extend(out, one);
		json_decref(one);
	}
	free(r);
	return out;
}
