/* master_status.c: the status documents of the Work Queue master (doc/work-queue-api.md
 * section 5): `master`, `workers`, `tasks` and `categories` as JSON, returned by
 * work_queue_status() and sent to status clients as `query_reply` batches (protocol 5.11). */
#include "master_internal.h"
#include "master_images.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "category.h"
#include "debug.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

#define QUERY_BATCH 500 /* items per query_reply (well under 4 MiB for these objects) */

static const char *mtask_state_name(enum mtask_state s)
{
	switch (s) {
	case MTASK_READY: return "WAITING";
	case MTASK_SENDING: return "SENDING";
	case MTASK_RUNNING: return "RUNNING";
	case MTASK_RECEIVING: return "RECEIVING";
	case MTASK_DONE: return "DONE";
	case MTASK_CANCELLING: return "CANCELLING";
	case MTASK_PREPARING: return "PREPARING";
	}
	return "UNKNOWN";
}

static const char *mworker_state_name(enum mworker_state s)
{
	switch (s) {
	case MW_HANDSHAKE: return "HANDSHAKE";
	case MW_INIT: return "INIT";
	case MW_ACTIVE: return "ACTIVE";
	case MW_DRAINING: return "DRAINING";
	case MW_CLOSING: return "CLOSING";
	}
	return "UNKNOWN";
}

/* The IPv4 addresses workers may reach the master at (workers connect over IPv4): the one
 * bound, or those of every interface but loopback. */
static json_t *interfaces_list(const struct work_queue *q)
{
	json_t *a = json_array();
	if (q->listen_addr[0]) {
		json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "interface", "", "host",
		                                   q->listen_addr, "family", "AF_INET"));
		return a;
	}
	uv_interface_address_t *ifs = NULL;
	int n = 0;
	if (uv_interface_addresses(&ifs, &n) != 0)
		return a;
	for (int i = 0; i < n; i++) {
		char ip[64];
		if (ifs[i].is_internal || ifs[i].address.address4.sin_family != AF_INET ||
		    uv_ip4_name(&ifs[i].address.address4, ip, sizeof ip) != 0)
			continue;
		json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "interface", ifs[i].name,
		                                   "host", ip, "family", "AF_INET"));
	}
	uv_free_interface_addresses(ifs, n);
	return a;
}

/* The record's network_interfaces, made once: the record is built every second while the
 * master advertises. */
static json_t *interfaces_json(struct work_queue *q)
{
	if (!q->net_ifaces)
		q->net_ifaces = interfaces_list(q);
	return json_incref(q->net_ifaces);
}

/* Most worker rows in the `master` document's scaler section; the summary counts them all. */
#define SCALER_WORKER_ROWS 1000

static json_t *box_json(const struct master_sched_box *b);
static json_t *free_json(struct mworker *w);

/* One worker as a scaler sees it: capacity, free resources, tasks, idle time, labels. */
static json_t *scaler_worker_row(struct mworker *w, double now)
{
	json_t *labels = json_array();
	for (int i = 0; i < w->nlabels; i++)
		json_array_append_new(labels, json_string(w->labels[i]));
	double idle = w->assigned ? 0 : now - w->idle_since;
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:f,s:o}", "id", w->id, "host",
	                 w->host ? w->host : "", "state", mworker_state_name(w->state), "total",
	                 box_json(&w->total), "free", free_json(w), "tasks", w->ntasks, "idle_s",
	                 idle > 0 ? idle : 0.0, "labels", labels);
}

static int longer_idle_first(const void *a, const void *b)
{
	double x = json_real_value(json_object_get(*(json_t *const *)a, "idle_s"));
	double y = json_real_value(json_object_get(*(json_t *const *)b, "idle_s"));
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Orders the rows of A by idle time, longest first. */
static void sort_by_idle(json_t *a)
{
	size_t n = json_array_size(a);
	if (n < 2)
		return;
	json_t **v = xcalloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(a, i));
	qsort(v, n, sizeof *v, longer_idle_first);
	json_array_clear(a);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, v[i]);
	free(v);
}

/* The `scaler` section: categories (master_scalestat.c) and the workers, summed, with at most
 * SCALER_WORKER_ROWS rows (idle workers first, longest idle first) when ROWS is set. */
static json_t *scaler_section(struct work_queue *q, bool rows)
{
	double now = master_queue_now();
	int64_t n = 0, idle = 0, draining = 0;
	double idle_cores = 0, free_cores = 0;
	json_t *idle_rows = json_array(), *busy_rows = json_array();
	for (struct mworker *w = q->workers; w; w = w->next) {
		if (w->status_client || !w->sw ||
		    (w->state != MW_ACTIVE && w->state != MW_DRAINING))
			continue;
		n++;
		struct master_sched_box fr;
		master_sched_worker_free(w->sw, &fr);
		free_cores += fr.cores;
		if (w->state == MW_DRAINING)
			draining++;
		else if (!w->assigned) {
			idle++;
			idle_cores += w->total.cores;
		}
		/* the idle ones are the scaler's candidates to drain: all of them up to the cap,
		 * whatever their place in the list; busy rows fill what is left */
		json_t *into = w->assigned ? busy_rows : idle_rows;
		if (rows && json_array_size(into) < SCALER_WORKER_ROWS)
			json_array_append_new(into, scaler_worker_row(w, now));
	}
	json_t *o = json_pack(
	    "{s:o,s:{s:I,s:I,s:I,s:f,s:f}}", "categories", master_scalestat_categories(q, now),
	    "workers_summary", "active", (json_int_t)n, "idle", (json_int_t)idle, "draining",
	    (json_int_t)draining, "idle_cores", idle_cores, "free_cores", free_cores);
	if (rows) {
		sort_by_idle(idle_rows);
		size_t room = SCALER_WORKER_ROWS - json_array_size(idle_rows);
		for (size_t i = 0; i < room && i < json_array_size(busy_rows); i++)
			json_array_append(idle_rows, json_array_get(busy_rows, i));
		json_object_set_new(o, "worker_rows", idle_rows);
		json_object_set_new(o, "worker_rows_truncated",
		                    json_boolean(n > SCALER_WORKER_ROWS));
	} else {
		json_decref(idle_rows);
	}
	json_decref(busy_rows);
	return o;
}

static json_t *master_item(struct work_queue *q, bool rows)
{
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	json_t *o = json_object();
	json_object_set_new(o, "type", json_string("wq_master"));
	json_object_set_new(o, "project", q->project ? json_string(q->project) : json_null());
	json_object_set_new(o, "name", json_string(host));
	json_object_set_new(o, "host", json_string(host));
	json_object_set_new(o, "port", json_integer(q->port));
	json_object_set_new(o, "version", json_string("htc 0.1.0"));
	json_object_set_new(o, "started", json_integer(s.time_when_started));
	json_object_set_new(o, "workers_connected", json_integer(s.workers_connected));
	json_object_set_new(o, "workers", json_integer(s.workers_connected));
	json_object_set_new(o, "workers_init", json_integer(s.workers_init));
	json_object_set_new(o, "workers_idle", json_integer(s.workers_idle));
	json_object_set_new(o, "workers_busy", json_integer(s.workers_busy));
	json_object_set_new(o, "workers_joined", json_integer(s.workers_joined));
	json_object_set_new(o, "workers_removed", json_integer(s.workers_removed));
	json_object_set_new(o, "workers_lost", json_integer(s.workers_lost));
	json_object_set_new(o, "tasks_waiting", json_integer(s.tasks_waiting));
	json_object_set_new(o, "tasks_on_workers", json_integer(s.tasks_on_workers));
	json_object_set_new(o, "tasks_running", json_integer(s.tasks_running));
	json_object_set_new(o, "tasks_queued_on_workers", json_integer(s.tasks_queued_on_workers));
	json_object_set_new(o, "tasks_with_results", json_integer(s.tasks_with_results));
	json_object_set_new(o, "tasks_submitted", json_integer(s.tasks_submitted));
	json_object_set_new(o, "tasks_dispatched", json_integer(s.tasks_dispatched));
	json_object_set_new(o, "tasks_done", json_integer(s.tasks_done));
	json_object_set_new(o, "tasks_failed", json_integer(s.tasks_failed));
	json_object_set_new(o, "tasks_cancelled", json_integer(s.tasks_cancelled));
	json_object_set_new(o, "tasks_exhausted_attempts",
	                    json_integer(s.tasks_exhausted_attempts));
	json_object_set_new(o, "bytes_sent", json_integer(s.bytes_sent));
	json_object_set_new(o, "bytes_received", json_integer(s.bytes_received));
	json_object_set_new(o, "objects_taken", json_integer(s.objects_taken));
	json_object_set_new(o, "total_cores", json_real(s.total_cores));
	json_object_set_new(o, "total_memory", json_integer(s.total_memory));
	json_object_set_new(o, "total_disk", json_integer(s.total_disk));
	json_object_set_new(o, "total_gpus", json_integer(s.total_gpus));
	json_object_set_new(o, "committed_cores", json_real(s.committed_cores));
	json_object_set_new(o, "committed_memory", json_integer(s.committed_memory));
	json_object_set_new(o, "committed_disk", json_integer(s.committed_disk));
	json_object_set_new(o, "committed_gpus", json_integer(s.committed_gpus));
	json_object_set_new(o, "priority", json_integer(q->priority));
	json_object_set_new(o, "manager_preferred_connection",
	                    json_string(q->preferred_connection));
	json_object_set_new(o, "network_interfaces", interfaces_json(q));
	json_object_set_new(o, "scaler", scaler_section(q, rows));
	return o;
}

static json_t *box_json(const struct master_sched_box *b)
{
	return json_pack("{s:f,s:I,s:I,s:I}", "cores", b->cores, "memory", (json_int_t)b->memory,
	                 "disk", (json_int_t)b->disk, "gpus", (json_int_t)b->gpus);
}

static json_t *free_json(struct mworker *w)
{
	struct master_sched_box fr = {0};
	if (w->sw)
		master_sched_worker_free(w->sw, &fr);
	return box_json(&fr);
}

static json_t *workers_items(struct work_queue *q)
{
	json_t *a = json_array();
	for (struct mworker *w = q->workers; w; w = w->next) {
		if (w->status_client)
			continue;
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:i}", "id", w->id, "host",
		                      w->host ? w->host : "", "address", w->addr, "state",
		                      mworker_state_name(w->state), "tasks_running", w->ntasks);
		json_object_set_new(o, "total", box_json(&w->total));
		if (w->sw) {
			struct master_sched_box fr, used;
			master_sched_worker_free(w->sw, &fr);
			used.cores = w->total.cores - fr.cores;
			used.memory = w->total.memory - fr.memory;
			used.disk = w->total.disk - fr.disk;
			used.gpus = w->total.gpus - fr.gpus;
			json_object_set_new(o, "in_use", box_json(&used));
		}
		/* a worker that reports its images says whether its container engine answers */
		if (w->images)
			json_object_set_new(o, "container_engine",
			                    json_boolean(master_images_engine_up(w)));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *tasks_items(struct work_queue *q)
{
	json_t *a = json_array();
	struct mtask *m, *tmp;
	HASH_ITER(hh, q->tasks, m, tmp)
	{
		struct work_queue_task *t = m->t;
		json_t *o =
		    json_pack("{s:i,s:s,s:s,s:s,s:i}", "id", m->id, "tag", t->tag ? t->tag : "",
		              "category", t->category ? t->category : "default", "state",
		              mtask_state_name(m->state), "try", m->try_);
		if (m->w) {
			json_object_set_new(o, "worker", json_string(m->w->id));
			struct master_sched_box b;
			master_sched_task_box(m->st, &b);
			json_object_set_new(o, "resources", box_json(&b));
		}
		json_array_append_new(a, o);
	}
	return a;
}

json_t *master_status_items(struct work_queue *q, const char *what)
{
	if (!q || !what)
		return NULL;
	if (!strcmp(what, "master")) {
		json_t *a = json_array();
		json_array_append_new(a, master_item(q, true));
		return a;
	}
	if (!strcmp(what, "workers"))
		return workers_items(q);
	if (!strcmp(what, "tasks"))
		return tasks_items(q);
	if (!strcmp(what, "categories"))
		return master_scalestat_category_items(q);
	return NULL;
}

json_t *master_status_record(struct work_queue *q)
{
	return master_item(q, false);
}

void master_status_query(struct mworker *w, json_t *msg)
{
	static const char *const whats[] = {"master",     "workers", "tasks",
	                                    "categories", "drain",   NULL};
	struct wq_msg_v v = {"query", NULL, NULL};
	int what = 0;
	if (wq_msg_enum(&v, msg, "what", WQ_REQ, whats, &what) < 0) {
		wq_conn_violation(w->c, "proto", "%s", v.why);
		free(v.why);
		return;
	}
	json_t *items;
	if (!strcmp(whats[what], "drain")) {
		/* a scaler asks for a worker to be drained (work_queue_drain_worker) */
		const char *id = json_string_value(json_object_get(msg, "worker"));
		if (!id || !*id || strlen(id) > 255) {
			wq_conn_violation(w->c, "proto",
			                  "query drain: `worker` must be a string of 1..255 bytes");
			return;
		}
		int n = master_worker_drain(w->q, id);
		notice("%s: asked to drain %s: %d worker%s told", w->label, id, n < 0 ? 0 : n,
		       n == 1 ? "" : "s");
		items = json_pack("[{s:s,s:i}]", "worker", id, "drained", n < 0 ? 0 : n);
	} else {
		items = master_status_items(w->q, whats[what]);
	}
	size_t n = json_array_size(items);
	size_t i = 0;
	do {
		json_t *batch = json_array();
		for (size_t k = 0; k < QUERY_BATCH && i < n; k++, i++)
			json_array_append(batch, json_array_get(items, i));
		json_t *reply = json_pack("{s:s,s:s,s:o,s:b}", "m", "query_reply", "what",
		                          whats[what], "items", batch, "more", i < n);
		int rc = wq_conn_send_msg(w->c, reply);
		json_decref(reply);
		if (rc < 0) {
			debug(D_WQ, "%s: query reply not sent: %s", MW_NAME(w), htc_strerror(rc));
			break;
		}
	} while (i < n);
	json_decref(items);
}
