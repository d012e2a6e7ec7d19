/* engine_advertise.c: -a/--advertise: the workflow's progress as a catalog record of type
 * "makeflow" under its -N project (the record CCTools makeflow sends: owner, batch type, start
 * time and the counts of rules), sent when the run starts, every ADVERTISE_INTERVAL_MS while it
 * runs, and once more at the end, which the run waits for (each send gives up after 5 s). */
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog_client.h"
#include "debug.h"
#include "engine_internal.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define ADVERTISE_INTERVAL_MS 60000

struct engine_advert {
	struct catalog_updater *u;
	uv_timer_t timer;
	int busy; /* a round of sends has not ended */
};

static json_t *record(struct engine *e)
{
	const char *type = e->opt->batch_type ? e->opt->batch_type : "local";
	struct passwd *pw = getpwuid(getuid());
	char started[32];
	snprintf(started, sizeof started, "%lld", (long long)e->start_us);
	int64_t total = e->dag->nnodes;
	int64_t running = e->n_running;
	int64_t waiting = total - e->n_complete - e->n_failed - e->n_aborted - running;
	json_t *r = json_object();
	char host[256] = "localhost";
	if (gethostname(host, sizeof host - 1) < 0)
		snprintf(host, sizeof host, "localhost");
	/* the catalog keys a record by type, address, name and port: the port of a makeflow
	 * record is its process id (mod 65536), so that two runs on one host are two records */
	json_object_set_new(r, "type", json_string("makeflow"));
	json_object_set_new(r, "name", json_string(host));
	json_object_set_new(r, "port", json_integer(getpid() & 0xffff));
	json_object_set_new(r, "pid", json_integer(getpid()));
	json_object_set_new(r, "project", json_string(e->opt->project));
	json_object_set_new(r, "owner", json_string(pw ? pw->pw_name : "unknown"));
	json_object_set_new(r, "batch_type", json_string(type));
	json_object_set_new(r, "time_started", json_string(started));
	json_object_set_new(r, "total", json_integer(total));
	json_object_set_new(r, "running", json_integer(running));
	json_object_set_new(r, "waiting", json_integer(waiting < 0 ? 0 : waiting));
	json_object_set_new(r, "completed", json_integer(e->n_complete));
	json_object_set_new(r, "failed", json_integer(e->n_failed));
	json_object_set_new(r, "aborted", json_integer(e->n_aborted));
	return r;
}

static void send_now(struct engine *e)
{
	struct engine_advert *a = e->advert;
	if (a->busy)
		return; /* the next period sends the news */
	json_t *r = record(e);
	if (catalog_updater_send(a->u, r, CATALOG_SEND_AUTO) == 0)
		a->busy = 1;
	json_decref(r);
}

static void on_sent(void *arg, int failed, int n, const char *detail)
{
	struct engine *e = arg;
	e->advert->busy = 0;
	if (failed)
		debug(D_MAKEFLOW, "advertise: %d of %d catalog updates failed: %s", failed, n,
		      detail);
}

static void on_timer(uv_timer_t *t)
{
	send_now(t->data);
}

int engine_advertise_start(struct engine *e)
{
	if (!e->opt->advertise)
		return 0;
	struct engine_advert *a = xcalloc(1, sizeof *a);
	char *err = NULL;
	a->u = catalog_updater_create(&e->loop, e->opt->catalog_hosts, on_sent, e, &err);
	if (!a->u) {
		fprintf(stderr, "makeflow: -a: catalog servers %s: %s\n",
		        e->opt->catalog_hosts ? e->opt->catalog_hosts : "(default)",
		        err ? err : "invalid");
		free(err);
		free(a);
		return -1;
	}
	e->advert = a;
	uv_timer_init(&e->loop, &a->timer);
	a->timer.data = e;
	uv_timer_start(&a->timer, on_timer, ADVERTISE_INTERVAL_MS, ADVERTISE_INTERVAL_MS);
	send_now(e);
	return 0;
}

/* Runs the loop until the round of sends in flight has ended. */
static void wait_sent(struct engine *e)
{
	while (e->advert->busy)
		if (uv_run(&e->loop, UV_RUN_ONCE) == 0 && e->advert->busy)
			break; /* nothing left that could end it */
}

static void advert_closed(uv_handle_t *h)
{
	free(h->data);
}

void engine_advertise_final(struct engine *e)
{
	struct engine_advert *a = e->advert;
	if (!a)
		return;
	uv_timer_stop(&a->timer);
	/* the round in flight ends (or times out) first, then the final state goes */
	wait_sent(e);
	send_now(e);
	wait_sent(e);
}

void engine_advertise_free(struct engine *e)
{
	struct engine_advert *a = e->advert;
	if (!a)
		return;
	catalog_updater_delete(a->u);
	a->timer.data = a;
	uv_close((uv_handle_t *)&a->timer, advert_closed); /* frees A */
	e->advert = NULL;
}
