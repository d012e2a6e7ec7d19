/* scaler_status.c: turns the master's status (its `scaler` section, doc/work-queue-api.md
 * section 5) into a struct scaler_input, and a scaler_input back into the JSON document the
 * --scaler-hook command reads. Missing or mistyped keys count as unknown (-1) or 0, so an older
 * master still gives the totals. */
#include "scaler.h"

#include <errno.h>
#include <string.h>

#include "vec.h"
#include "xalloc.h"

#include "banned.h"

static double num(const json_t *o, const char *k, double dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

static struct scaler_vec vec_of(const json_t *o)
{
	struct scaler_vec r = {{num(o, "cores", -1), num(o, "memory", -1), num(o, "disk", -1)}};
	return r;
}

/* The size one task of the category is given: declared, else first allocation, else the
 * measured peak, field by field (a value <= 0 is unknown). */
static struct scaler_vec cat_size(const json_t *c)
{
	struct scaler_vec d = vec_of(json_object_get(c, "declared"));
	struct scaler_vec f = vec_of(json_object_get(c, "first_allocation"));
	struct scaler_vec m = vec_of(json_object_get(c, "measured"));
	struct scaler_vec r;
	for (int i = 0; i < SC_NRES; i++)
		r.v[i] = d.v[i] > 0 ? d.v[i] : f.v[i] > 0 ? f.v[i] : m.v[i] > 0 ? m.v[i] : -1;
	return r;
}

static void add_category(struct scaler_input *in, size_t *cap, const json_t *c)
{
	const char *name = json_string_value(json_object_get(c, "name"));
	if (!name)
		return;
	const json_t *run = json_object_get(c, "running");
	const json_t *rt = json_object_get(c, "run_time");
	struct scaler_category sc = {
	    .name = xstrdup(name),
	    .waiting = (int64_t)num(c, "waiting", 0),
	    .running = (int64_t)num(run, "count", 0),
	    .size = cat_size(c),
	    .declared = num(json_object_get(c, "declared"), "cores", -1) > 0,
	    .cores_avg = num(json_object_get(c, "measured"), "cores_avg", -1),
	    .done = (int64_t)num(rt, "count", 0),
	    .rt_mean = num(rt, "mean", -1),
	    .rt_sd = num(rt, "stddev", -1),
	    .running_mean_age = num(run, "mean_age", 0),
	};
	VEC_PUSH(in->cats, in->n_cats, *cap, sc);
}

static void add_worker(struct scaler_input *in, size_t *cap, const json_t *w,
                       const char *token_prefix)
{
	const char *id = json_string_value(json_object_get(w, "id"));
	if (!id)
		return;
	const char *state = json_string_value(json_object_get(w, "state"));
	struct scaler_worker sw = {
	    .id = xstrdup(id),
	    .total = vec_of(json_object_get(w, "total")),
	    .free = vec_of(json_object_get(w, "free")),
	    .tasks = (int)num(w, "tasks", 0),
	    .idle_s = num(w, "idle_s", 0),
	    .draining = state && !strcmp(state, "DRAINING"),
	};
	size_t i;
	const json_t *l;
	json_array_foreach(json_object_get(w, "labels"), i, l)
	{
		const char *s = json_string_value(l);
		if (s && token_prefix && !strncmp(s, token_prefix, strlen(token_prefix))) {
			sw.ours = true;
			sw.token = xstrdup(s);
		}
	}
	VEC_PUSH(in->workers, in->n_workers, *cap, sw);
}

int scaler_input_add_status(struct scaler_input *in, const json_t *status, const char *token_prefix)
{
	if (!json_is_object(status))
		return -EINVAL;
	in->tasks_waiting += (int64_t)num(status, "tasks_waiting", 0);
	in->tasks_running +=
	    (int64_t)num(status, "tasks_running", num(status, "tasks_on_workers", 0));
	const json_t *sc = json_object_get(status, "scaler");
	in->workers_active +=
	    (int64_t)num(json_object_get(sc, "workers_summary"), "active",
	                 num(status, "workers_connected", num(status, "workers", 0)));
	size_t cap = in->n_cats, i;
	const json_t *v;
	json_array_foreach(json_object_get(sc, "categories"), i, v) add_category(in, &cap, v);
	cap = in->n_workers;
	json_array_foreach(json_object_get(sc, "worker_rows"), i, v)
	    add_worker(in, &cap, v, token_prefix);
	return 0;
}

static json_t *vec_json(const struct scaler_vec *v)
{
	return json_pack("{s:f,s:f,s:f}", "cores", v->v[SC_CORES], "memory", v->v[SC_MEMORY],
	                 "disk", v->v[SC_DISK]);
}

json_t *scaler_input_json(const struct scaler_input *in)
{
	json_t *cats = json_array();
	for (size_t i = 0; i < in->n_cats; i++) {
		const struct scaler_category *c = &in->cats[i];
		json_array_append_new(
		    cats,
		    json_pack("{s:s,s:I,s:I,s:o,s:f,s:I,s:f,s:f,s:f}", "name", c->name, "waiting",
		              (json_int_t)c->waiting, "running", (json_int_t)c->running, "size",
		              vec_json(&c->size), "cores_avg", c->cores_avg, "done",
		              (json_int_t)c->done, "run_time_mean", c->rt_mean, "run_time_stddev",
		              c->rt_sd, "running_mean_age", c->running_mean_age));
	}
	json_t *ws = json_array();
	for (size_t i = 0; i < in->n_workers; i++) {
		const struct scaler_worker *w = &in->workers[i];
		json_array_append_new(ws, json_pack("{s:s,s:o,s:o,s:i,s:f,s:b,s:b}", "id", w->id,
		                                    "total", vec_json(&w->total), "free",
		                                    vec_json(&w->free), "tasks", w->tasks, "idle_s",
		                                    w->idle_s, "draining", w->draining, "ours",
		                                    w->ours));
	}
	return json_pack(
	    "{s:f,s:I,s:I,s:I,s:o,s:o,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:o,s:f,s:f,s:f,s:f}}", "now",
	    in->now, "tasks_waiting", (json_int_t)in->tasks_waiting, "tasks_running",
	    (json_int_t)in->tasks_running, "workers_active", (json_int_t)in->workers_active,
	    "categories", cats, "workers", ws, "factory", "pool", in->pool, "pending", in->pending,
	    "draining", in->draining, "min_workers", in->min_workers, "max_workers",
	    in->max_workers, "workers_per_cycle", in->per_cycle, "worker_size",
	    vec_json(&in->worker_size), "latency", in->latency, "last_action", in->last_action,
	    "last_start", in->last_start, "cpu_load", scaler_cpu_load(in));
}
