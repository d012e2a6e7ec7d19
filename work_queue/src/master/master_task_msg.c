/* master_task_msg.c: the `task` message of a task for its worker (protocol section 5.3): its
 * command, environment, inputs (cached, per-task or URL), outputs, resources of its box and,
 * when it names one, its container. */
#include "master_internal.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "wq_msg.h"

#include "banned.h"

/* The task's `container` (section 5.3): its image by name, or the cache object of its image
 * archive input. */
static json_t *container_message(const struct work_queue_task *t, const struct mtask *m)
{
	const char *mode = t->container_mode == WORK_QUEUE_CONTAINER_SHARED ? "shared" : "task";
	if (t->container_image)
		return json_pack("{s:s,s:s}", "name", t->container_image, "mode", mode);
	int i = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next, i++)
		if (strcmp(f->remote, t->container_archive) == 0 && m->objects[i])
			return json_pack("{s:s,s:s}", "image", m->objects[i], "mode", mode);
	return json_pack("{s:s,s:s}", "image", "", "mode", mode); /* not reached: it is cached */
}

/* The memory (MB) a task may be grown to on a worker that grows tasks (`max_memory`, protocol
 * 5.6): its own memory_max; else, when the master chose its memory, its category's ceiling (the
 * explicit maximum, else the largest worker), at most this worker's memory; else -1. */
static int64_t growth_ceiling(const struct mworker *w, const struct mtask *m)
{
	const struct work_queue_task *t = m->t;
	int64_t max = t->memory_max;
	if (max < 0 && t->resources_requested->v[RM_MEMORY] >= 0)
		return -1; /* a declared value is a promise (doc/allocation.md) */
	if (max < 0) {
		struct rmsummary ceiling;
		rmsummary_init(&ceiling);
		category_allocation(master_sched_category(w->q->sched, t->category),
		                    t->resources_requested, CATEGORY_LEVEL_MAX, &ceiling);
		max = (int64_t)ceiling.v[RM_MEMORY];
	}
	if (max < 0 || max > w->total.memory)
		max = w->total.memory;
	return max;
}

json_t *master_task_message(struct mworker *w, struct mtask *m, const struct master_sched_box *box)
{
	struct work_queue_task *t = m->t;
	json_t *env = json_object();
	for (int i = 0; i < t->env_count; i++)
		if (t->env_values[i])
			json_object_set_new(env, t->env_names[i], json_string(t->env_values[i]));
	json_t *inputs = json_array();
	int i = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next, i++) {
		json_t *in = json_pack("{s:s}", "name", f->remote);
		if (f->kind == WORK_QUEUE_FILE_URL) {
			json_object_set_new(in, "from", json_string("url"));
			json_object_set_new(in, "url", json_string(f->source));
			json_object_set_new(in, "object", json_string(m->objects[i]));
			if (m->validated && m->validated[i])
				json_object_set_new(in, "validated", json_true());
		} else if (m->objects[i]) {
			json_object_set_new(in, "from", json_string("cache"));
			json_object_set_new(in, "object", json_string(m->objects[i]));
		} else {
			json_object_set_new(in, "from", json_string("task"));
			json_object_set_new(in, "dir",
			                    json_boolean(f->kind == WORK_QUEUE_FILE_DIRECTORY));
		}
		json_array_append_new(inputs, in);
	}
	json_t *outputs = json_array();
	bool can_watch = (w->caps & WQ_CAP_WATCH) != 0;
	for (struct work_queue_file *f = t->outputs; f; f = f->next) {
		const char *when = (f->flags & WORK_QUEUE_SUCCESS_ONLY)   ? "success"
		                   : (f->flags & WORK_QUEUE_FAILURE_ONLY) ? "failure"
		                                                          : "always";
		json_array_append_new(
		    outputs, json_pack("{s:s,s:s,s:b,s:b}", "name", f->remote, "when", when, "dir",
		                       f->kind == WORK_QUEUE_FILE_DIRECTORY, "watch",
		                       can_watch && (f->flags & WORK_QUEUE_WATCH) &&
		                           f->kind != WORK_QUEUE_FILE_DIRECTORY));
	}
	double cores = floor(box->cores * 1000 + 0.5) / 1000;
	if (cores <= 0)
		cores = 0.001;
	/* 0: no limit (the worker enforces none), for the sizes a try exhausted that the
	 * master had chosen */
	int64_t memory = (m->unlimited & (UINT64_C(1) << RM_MEMORY)) ? 0 : box->memory;
	int64_t disk = (m->unlimited & (UINT64_C(1) << RM_DISK)) ? 0 : box->disk;
	json_t *res = json_pack("{s:f,s:I,s:I,s:I}", "cores", cores, "memory",
	                        (json_int_t)(memory > 0 ? memory : 0), "disk",
	                        (json_int_t)(disk > 0 ? disk : 0), "gpus",
	                        (json_int_t)(box->gpus > 0 ? box->gpus : 0));
	json_t *msg = json_pack(
	    "{s:s,s:i,s:i,s:s,s:s,s:s,s:o,s:o,s:I,s:I,s:o,s:o}", "m", "task", "id", m->id, "try",
	    m->try_, "command", t->command_line ? t->command_line : "", "category",
	    t->category ? t->category : "default", "tag", t->tag ? t->tag : "", "env", env,
	    "resources", res, "wall_time",
	    (json_int_t)ceil(t->running_time_max > 0 ? t->running_time_max : 0), "stdout_max",
	    (json_int_t)WQ_STDOUT_DEFAULT, "inputs", inputs, "outputs", outputs);
	if (msg && m->queued && (w->caps & WQ_CAP_QUEUE))
		json_object_set_new(msg, "queued", json_true());
	if (msg && (t->container_image || t->container_archive))
		json_object_set_new(msg, "container", container_message(t, m));
	int64_t max = memory > 0 && (w->caps & WQ_CAP_GROW) ? growth_ceiling(w, m) : -1;
	if (msg && max > memory)
		json_object_set_new(msg, "max_memory", json_integer(max));
	return msg;
}
