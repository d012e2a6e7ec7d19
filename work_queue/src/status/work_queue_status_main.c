/* work_queue_status_main.c: the work_queue_status program. Without a master it lists the masters
 * the catalog knows (project, address, tasks waiting/running/done, workers); given a master
 * (HOST PORT or HOST:PORT) it connects as a status client (doc/work-queue-protocol.md 5.11,
 * with the password or TLS the master needs) and lists its workers (-W), tasks (-T), categories
 * (-A) or its own summary (the default), as a table or as JSON. Options: work_queue_status_opts. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog_client.h"
#include "catalog_filter.h"
#include "cli.h"
#include "debug.h"
#include "status_client.h"
#include "status_live.h"
#include "work_queue_status_opts.h"
#include "wq_auth.h"
#include "wq_tls.h"
#include "xalloc.h"

#include "banned.h"

/* A scalar as table text; objects and arrays as compact JSON, cut at 40 bytes. Caller frees. */
static char *cell(const json_t *v)
{
	char *s;
	if (!v || json_is_null(v))
		s = xstrdup("-");
	else if (json_is_string(v))
		s = xstrdup(json_string_value(v));
	else if (json_is_integer(v))
		s = xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		s = xasprintf("%.3g", json_real_value(v));
	else if (json_is_boolean(v))
		s = xstrdup(json_is_true(v) ? "yes" : "no");
	else {
		s = json_dumps(v, JSON_COMPACT);
		if (!s)
			s = xstrdup("?");
		if (strlen(s) > 40)
			memcpy(s + 37, "...", 4);
	}
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ' ')
			*p = (*p == ' ') ? '_' : '?';
	return s;
}

/* Prints ITEMS as a table whose columns are the keys of the first item, in its order. */
static void print_items(const json_t *items)
{
	if (json_array_size(items) == 0) {
		printf("(none)\n");
		return;
	}
	const json_t *first = json_array_get(items, 0);
	size_t ncols = json_object_size(first), c = 0;
	const char **keys = xcalloc(ncols ? ncols : 1, sizeof *keys);
	size_t *width = xcalloc(ncols ? ncols : 1, sizeof *width);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)first, k, v)
	{
		keys[c] = k;
		width[c] = strlen(k);
		c++;
	}
	size_t n = json_array_size(items);
	for (size_t i = 0; i < n; i++)
		for (c = 0; c < ncols; c++) {
			char *s = cell(json_object_get(json_array_get(items, i), keys[c]));
			if (strlen(s) > width[c])
				width[c] = strlen(s);
			free(s);
		}
	for (c = 0; c < ncols; c++) {
		char *up = xstrdup(keys[c]);
		for (char *p = up; *p; p++)
			*p = (char)((*p >= 'a' && *p <= 'z') ? *p - 32 : *p);
		printf("%-*s%s", (int)width[c], up, c + 1 < ncols ? "  " : "\n");
		free(up);
	}
	for (size_t i = 0; i < n; i++)
		for (c = 0; c < ncols; c++) {
			char *s = cell(json_object_get(json_array_get(items, i), keys[c]));
			printf("%-*s%s", (int)width[c], s, c + 1 < ncols ? "  " : "\n");
			free(s);
		}
	free(keys);
	free(width);
}

/* The first of KEYS present in REC, or NULL. */
static const json_t *first_of(const json_t *rec, const char *const *keys)
{
	for (; *keys; keys++) {
		const json_t *v = json_object_get(rec, *keys);
		if (v)
			return v;
	}
	return NULL;
}

static int list_masters(const char *catalog, const struct catalog_project *project,
                        const struct catalog_expr *where, int json, double timeout)
{
	struct catalog_filter *f = catalog_filter_create();
	char *err = NULL;
	/* a plain name is filtered by the catalog too; a pattern only here */
	const char *literal = catalog_project_literal(project);
	if (catalog_filter_add(f, "type", "wq_master", &err) < 0 ||
	    (literal && catalog_filter_add(f, "project", literal, &err) < 0))
		fatal("%s", err);
	json_t *a = catalog_query(catalog, f, timeout, &err);
	catalog_filter_delete(f);
	if (!a)
		fatal("catalog %s: %s", catalog ? catalog : catalog_hosts_default(),
		      err ? err : "failed");
	if (where || project) { /* --where EXPR and -M are evaluated here, whatever the catalog */
		json_t *kept = json_array();
		size_t k;
		json_t *rec;
		json_array_foreach(a, k, rec)
		{
			const char *p = json_string_value(json_object_get(rec, "project"));
			if ((!where || catalog_expr_match(where, rec)) &&
			    (!project || catalog_project_match(project, p)))
				json_array_append(kept, rec);
		}
		json_decref(a);
		a = kept;
	}
	if (json) {
		char *s = json_dumps(a, JSON_INDENT(1));
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(a);
		return 0;
	}
	static const char *const waiting[] = {"tasks_waiting", NULL};
	static const char *const running[] = {"tasks_running", "tasks_on_workers", NULL};
	static const char *const done[] = {"tasks_done", "tasks_complete", NULL};
	static const char *const workers[] = {"workers_connected", "workers", NULL};
	json_t *rows = json_array();
	size_t i;
	json_t *rec;
	json_array_foreach(a, i, rec)
	{
		json_t *r = json_object();
		json_object_set(r, "project", json_object_get(rec, "project"));
		char *hp = xasprintf("%s:%" JSON_INTEGER_FORMAT,
		                     json_string_value(json_object_get(rec, "name"))
		                         ? json_string_value(json_object_get(rec, "name"))
		                         : "?",
		                     json_integer_value(json_object_get(rec, "port")));
		json_object_set_new(r, "master", json_string(hp));
		free(hp);
		json_object_set(r, "waiting", (json_t *)first_of(rec, waiting));
		json_object_set(r, "running", (json_t *)first_of(rec, running));
		json_object_set(r, "complete", (json_t *)first_of(rec, done));
		json_object_set(r, "workers", (json_t *)first_of(rec, workers));
		json_array_append_new(rows, r);
	}
	print_items(rows);
	json_decref(rows);
	json_decref(a);
	return 0;
}

/* Lists WHAT of the master at HOST:PORT. */
static int query_master(const char *host, int port, const char *what, const char *password,
                        struct wq_tls_config *tls, int json, double timeout)
{
	struct wq_auth_key *key = NULL;
	if (password) {
		char *why = NULL;
		key = wq_auth_key_load(password, &why);
		if (!key)
			fatal("%s", why ? why : "cannot read the password file");
	}
	struct wq_status_opts o = {.key = key, .tls = tls, .timeout_s = timeout};
	char *err = NULL;
	json_t *items = wq_status_query_run(host, port, what, &o, &err);
	wq_auth_key_delete(key);
	if (!items) {
		fprintf(stderr, "work_queue_status: %s:%d: %s\n", host, port, err);
		free(err);
		return 1;
	}
	if (json) {
		char *s = json_dumps(items, JSON_INDENT(1));
		printf("%s\n", s ? s : "[]");
		free(s);
	} else {
		print_items(items);
	}
	json_decref(items);
	return 0;
}

/* The TLS the options ask for, or NULL for none. */
static struct wq_tls_config *tls_config(const struct work_queue_status_opts *o)
{
	if (!o->ssl_fingerprint && !o->ssl_ca && !o->ssl_no_verify)
		return NULL;
	char *err = NULL;
	struct wq_tls_config *tls =
	    o->ssl_fingerprint
	        ? wq_tls_config_client_create(WQ_TLS_VERIFY_FINGERPRINT, o->ssl_fingerprint, &err)
	    : o->ssl_ca ? wq_tls_config_client_create(WQ_TLS_VERIFY_CA_FILE, o->ssl_ca, &err)
	                : wq_tls_config_client_create(WQ_TLS_VERIFY_NONE, NULL, &err);
	if (!tls)
		fatal("%s", err ? err : "cannot set up TLS");
	return tls;
}

/* --live: the refreshing view until q, a signal or the master's end; the reason on stderr.
 * Exit status 0 for q and signals, 1 when the master went away or could not be queried. */
static int live(const struct work_queue_status_opts *o, struct wq_tls_config *tls)
{
	struct wq_auth_key *key = NULL;
	if (o->password) {
		char *why = NULL;
		key = wq_auth_key_load(o->password, &why);
		if (!key)
			fatal("%s", why ? why : "cannot read the password file");
	}
	struct wq_status_opts q = {.key = key, .tls = tls, .timeout_s = o->timeout};
	struct status_live_opts lo = {
	    .host = o->host,
	    .port = o->port,
	    .interval_s = o->live_interval,
	    .q = &q,
	    .out = stdout,
	    .tty = isatty(STDOUT_FILENO),
	    .input_fd = STDIN_FILENO,
	};
	char msg[1024];
	enum status_live_end end = status_live_run(&lo, msg, sizeof msg);
	wq_auth_key_delete(key);
	fprintf(stderr, "work_queue_status: %s:%d: %s\n", o->host, o->port, msg);
	return end == STATUS_LIVE_QUIT || end == STATUS_LIVE_SIGNAL ? 0 : 1;
}

int main(int argc, char **argv)
{
	debug_config_program("work_queue_status");
	struct work_queue_status_opts o;
	char err[1024] = "";
	int r = work_queue_status_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0)
		fatal("%s", err);
	if (!o.host)
		return list_masters(o.catalog, o.project_re, o.where, o.json, o.timeout);
	struct wq_tls_config *tls = tls_config(&o);
	if (o.live) {
		r = live(&o, tls);
		wq_tls_config_delete(tls);
		work_queue_status_opts_clear(&o);
		return r;
	}
	r = query_master(o.host, o.port, o.what, o.password, tls, o.json, o.timeout);
	wq_tls_config_delete(tls);
	work_queue_status_opts_clear(&o);
	return r;
}
