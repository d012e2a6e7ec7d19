/* wq_msg_task.c: validators of the task messages of the Work Queue protocol:
 * `task` (M->W, sections 2.4, 5.3 and 5.6, with names checked by wq_name) and
 * `task_done` (W->M, every outcome and its keys). Each turns a decoded message
 * into a struct or gives the violation text. */
#include "wq_msg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_name.h"
#include "htc_error.h"
#include "wq_name.h"
#include "xalloc.h"
#include "banned.h"

/* A string of 1..MAX bytes. */
static int nonempty_str(struct wq_msg_v *v, const json_t *o, const char *key, int flags, size_t max,
                        const char **out)
{
	json_t *x = json_object_get(o, key);
	if (!x && !(flags & WQ_REQ))
		return 1;
	if (!x)
		return wq_msg_str(v, o, key, flags, max, out, NULL); /* missing key text */
	if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > max)
		return wq_msg_fail(v, key, "expected a string of 1..%zu bytes", max);
	*out = json_string_value(x);
	return 0;
}

static int object_name(struct wq_msg_v *v, const json_t *o, const char *key, const char *prefixes,
                       const char **out)
{
	int rc = wq_msg_str(v, o, key, WQ_REQ, WQ_OBJECT_NAME_LEN, out, NULL);
	if (rc)
		return rc;
	if (!wq_name_is_object(*out) || !strchr(prefixes, (*out)[0]))
		return wq_msg_fail(v, key, "expected a cache object name (%s- and 64 hex digits)",
		                   prefixes);
	return 0;
}

static bool env_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

static void parse_env(struct wq_msg_v *v, const json_t *msg, struct wq_task_msg *t)
{
	json_t *env = NULL;
	if (wq_msg_object(v, msg, "env", 0, &env) != 0)
		return;
	if (json_object_size(env) > WQ_ENV_MAX) {
		wq_msg_fail(v, "env", "more than %d entries", WQ_ENV_MAX);
		return;
	}
	t->env = xcalloc(json_object_size(env) + 1, sizeof *t->env);
	size_t total = 0;
	const char *name;
	json_t *val = NULL;
	json_object_foreach(env, name, val)
	{
		if (!env_name_ok(name)) {
			char *shown = wq_msg_escape(name, strlen(name), 64, true);
			wq_msg_fail(v, "env",
			            "name \"%s\" does not match ^[A-Za-z_][A-Za-z0-9_]{0,127}$",
			            shown);
			free(shown);
			return;
		}
		/* null unsets the variable in the task's environment */
		if (!json_is_null(val) &&
		    (!json_is_string(val) || json_string_length(val) > WQ_ENV_VALUE_MAX)) {
			char *k = xasprintf("env.%s", name);
			wq_msg_fail(v, k, "expected a string of at most %d bytes, or null",
			            WQ_ENV_VALUE_MAX);
			free(k);
			return;
		}
		total += strlen(name) + (json_is_string(val) ? json_string_length(val) : 0);
		if (total > WQ_ENV_TOTAL_MAX) {
			wq_msg_fail(v, "env", "names and values exceed %d bytes", WQ_ENV_TOTAL_MAX);
			return;
		}
		t->env[t->nenv++] = (struct wq_env_var){name, json_string_value(val)};
	}
}

static void parse_resources(struct wq_msg_v *v, const json_t *msg, struct wq_resources *r)
{
	json_t *res = NULL;
	if (wq_msg_object(v, msg, "resources", WQ_REQ, &res) != 0)
		return;
	v->where = "resources";
	json_t *c = json_object_get(res, "cores");
	if (!c) {
		wq_msg_int(v, res, "cores", WQ_REQ, 0, 0, &(int64_t){0}); /* missing key text */
	} else {
		double d = json_is_number(c) ? json_number_value(c) : NAN;
		if (!isfinite(d) || d <= 0 || d > WQ_CORES_MAX ||
		    fabs(d * 1000 - round(d * 1000)) > 1e-6)
			wq_msg_fail(v, "cores", "expected a number > 0 with at most 3 decimals");
		else
			r->cores = d;
	}
	wq_msg_int(v, res, "memory", WQ_REQ, 0, WQ_MAX_ID, &r->memory);
	wq_msg_int(v, res, "disk", WQ_REQ, 0, WQ_MAX_ID, &r->disk);
	wq_msg_int(v, res, "gpus", WQ_REQ, 0, WQ_MAX_ID, &r->gpus);
	v->where = NULL;
}

static void parse_inputs(struct wq_msg_v *v, const json_t *msg, unsigned caps,
                         struct wq_task_msg *t)
{
	json_t *a = NULL;
	if (wq_msg_array(v, msg, "inputs", 0, WQ_FILES_MAX, &a) != 0)
		return;
	t->inputs = xcalloc(json_array_size(a) + 1, sizeof *t->inputs);
	static const char *const froms[] = {"cache", "task", "url", NULL};
	char where[32];
	size_t i;
	json_t *x = NULL;
	json_array_foreach(a, i, x)
	{
		snprintf(where, sizeof where, "inputs[%zu]", i);
		v->where = where;
		struct wq_task_input *in = &t->inputs[i];
		int from = 0;
		if (!json_is_object(x)) {
			wq_msg_fail(v, NULL, "expected an object");
		} else if (wq_msg_str(v, x, "name", WQ_REQ, SIZE_MAX, &in->name, NULL) == 0 &&
		           wq_msg_enum(v, x, "from", WQ_REQ, froms, &from) == 0) {
			in->from = (enum wq_input_from)from;
			if (in->from == WQ_FROM_CACHE) {
				object_name(v, x, "object", "FDU", &in->object);
			} else if (in->from == WQ_FROM_TASK) {
				wq_msg_bool(v, x, "dir", 0, &in->dir);
			} else if (!(caps & WQ_CAP_FETCH)) {
				wq_msg_fail(v, "from", "\"url\" needs the fetch capability");
			} else {
				nonempty_str(v, x, "url", WQ_REQ, MASTER_URL_MAX, &in->url);
				object_name(v, x, "object", "U", &in->object);
				wq_msg_bool(v, x, "validated", 0, &in->validated);
			}
		}
		v->where = NULL;
		if (v->why)
			return;
		t->ninputs++;
	}
}

static void parse_outputs(struct wq_msg_v *v, const json_t *msg, unsigned caps,
                          struct wq_task_msg *t)
{
	json_t *a = NULL;
	if (wq_msg_array(v, msg, "outputs", 0, WQ_FILES_MAX, &a) != 0)
		return;
	t->outputs = xcalloc(json_array_size(a) + 1, sizeof *t->outputs);
	static const char *const whens[] = {"always", "success", "failure", NULL};
	char where[32];
	size_t i;
	json_t *x = NULL;
	json_array_foreach(a, i, x)
	{
		snprintf(where, sizeof where, "outputs[%zu]", i);
		v->where = where;
		struct wq_task_output *out = &t->outputs[i];
		int when = 0;
		if (!json_is_object(x)) {
			wq_msg_fail(v, NULL, "expected an object");
		} else if (wq_msg_str(v, x, "name", WQ_REQ, SIZE_MAX, &out->name, NULL) == 0) {
			if (wq_msg_enum(v, x, "when", 0, whens, &when) == 0)
				out->when = (enum wq_when)when;
			wq_msg_bool(v, x, "dir", 0, &out->dir);
			out->dir_ok = out->dir || (caps & WQ_CAP_DIROUT);
			if (wq_msg_bool(v, x, "watch", 0, &out->watch) == 0 && out->watch &&
			    !(caps & WQ_CAP_WATCH))
				wq_msg_fail(v, "watch", "needs the watch capability");
		}
		v->where = NULL;
		if (v->why)
			return;
		t->noutputs++;
	}
}

/* `container` (section 5.3): {image: OBJECT | name: NAME, mode}, with `containers` negotiated.
 * An `image` object must also be one of the task's cache inputs. */
static void parse_container(struct wq_msg_v *v, const json_t *msg, unsigned caps,
                            struct wq_task_msg *t)
{
	json_t *c = NULL;
	if (wq_msg_object(v, msg, "container", WQ_NULL, &c) != 0)
		return;
	if (!(caps & WQ_CAP_CONTAINERS)) {
		wq_msg_fail(v, "container", "needs the capability \"containers\"");
		return;
	}
	static const char *const modes[] = {"task", "shared", NULL};
	int mode = 0;
	v->where = "container";
	bool has_image = json_object_get(c, "image") != NULL;
	bool has_name = json_object_get(c, "name") != NULL;
	if (has_image == has_name) {
		wq_msg_fail(v, "image",
		            "expected exactly one of image (a cached archive) and name");
	} else if (has_image) {
		if (object_name(v, c, "image", "F", &t->container_image) == 0) {
			bool listed = false;
			for (size_t i = 0; i < t->ninputs && !listed; i++)
				listed = t->inputs[i].from == WQ_FROM_CACHE &&
				         strcmp(t->inputs[i].object, t->container_image) == 0;
			if (!listed)
				wq_msg_fail(v, "image",
				            "the object is not one of the task's cache inputs");
		}
	} else if (wq_msg_str(v, c, "name", WQ_REQ, DOCKER_IMAGE_NAME_MAX, &t->container_name,
	                      NULL) == 0 &&
	           !docker_image_name_ok(t->container_name)) {
		wq_msg_fail(v, "name", "expected an image name (letters, digits and . _ - / : @)");
	}
	if (wq_msg_enum(v, c, "mode", WQ_REQ, modes, &mode) == 0)
		t->container_mode = (enum wq_container_mode)mode;
	v->where = NULL;
	t->has_container = !v->why;
}

/* Rules 1-4 of section 6 for the names of one list. */
static int check_names(enum wq_name_kind kind, const char *const *names, size_t n, char **why)
{
	return wq_name_check_list(kind, names, n, why, NULL);
}

int wq_msg_task_parse(const json_t *msg, unsigned caps, struct wq_task_msg **out, char **why)
{
	struct wq_msg_v v = {.m = "task"};
	struct wq_task_msg *t = xcalloc(1, sizeof *t);
	t->category = "default";
	t->tag = "";
	t->stdout_max = WQ_STDOUT_DEFAULT;
	*out = NULL;
	*why = NULL;

	wq_msg_int(&v, msg, "id", WQ_REQ, 1, WQ_MAX_ID, &t->id);
	wq_msg_int(&v, msg, "try", WQ_REQ, 1, WQ_MAX_ID, &t->try_);
	nonempty_str(&v, msg, "command", WQ_REQ, WQ_COMMAND_MAX, &t->command);
	wq_msg_str(&v, msg, "category", 0, WQ_CATEGORY_MAX, &t->category, NULL);
	wq_msg_str(&v, msg, "tag", 0, WQ_TAG_MAX, &t->tag, NULL);
	if (!v.why)
		parse_env(&v, msg, t);
	if (!v.why)
		parse_resources(&v, msg, &t->resources);
	wq_msg_int(&v, msg, "wall_time", 0, 0, WQ_MAX_ID, &t->wall_time);
	if (wq_msg_int(&v, msg, "stdout_max", 0, 0, WQ_MAX_ID, &t->stdout_max) == 0 &&
	    t->stdout_max > WQ_STDOUT_MAX)
		t->stdout_max = WQ_STDOUT_MAX;
	if (!v.why)
		parse_inputs(&v, msg, caps, t);
	if (!v.why)
		parse_outputs(&v, msg, caps, t);
	if (!v.why)
		parse_container(&v, msg, caps, t);
	if (wq_msg_bool(&v, msg, "queued", 0, &t->queued) == 0 && t->queued &&
	    !(caps & WQ_CAP_QUEUE))
		wq_msg_fail(&v, "queued", "needs the capability \"queue\"");
	if (wq_msg_int(&v, msg, "max_memory", 0, 0, WQ_MAX_ID, &t->max_memory) == 0 &&
	    json_object_get(msg, "max_memory") && !(caps & WQ_CAP_GROW))
		wq_msg_fail(&v, "max_memory", "needs the capability \"grow\"");
	if (v.why) {
		*why = v.why;
		wq_task_msg_free(t);
		return HTC_EPROTO;
	}
	t->msg = json_incref((json_t *)msg);
	*out = t;

	const char **names = xcalloc(t->ninputs + t->noutputs + 1, sizeof *names);
	for (size_t i = 0; i < t->ninputs; i++)
		names[i] = t->inputs[i].name;
	int rc = check_names(WQ_NAME_INPUT, names, t->ninputs, why);
	if (rc == 0) {
		for (size_t i = 0; i < t->noutputs; i++)
			names[i] = t->outputs[i].name;
		rc = check_names(WQ_NAME_OUTPUT, names, t->noutputs, why);
	}
	free(names);
	return rc ? HTC_EPARSE : 0;
}

void wq_task_msg_free(struct wq_task_msg *t)
{
	if (!t)
		return;
	free(t->env);
	free(t->inputs);
	free(t->outputs);
	json_decref(t->msg);
	free(t);
}

/* ---- task_done ------------------------------------------------------------- */

static void parse_done_stdout(struct wq_msg_v *v, const json_t *msg, struct wq_task_done *d)
{
	json_t *s = NULL;
	d->stdout_head = -1;
	if (wq_msg_object(v, msg, "stdout", 0, &s) != 0)
		return;
	v->where = "stdout";
	wq_msg_int(v, s, "size", WQ_REQ, 0, WQ_MAX_ID, &d->stdout_size);
	wq_msg_bool(v, s, "truncated", WQ_REQ, &d->stdout_truncated);
	wq_msg_int(v, s, "head", 0, 0, WQ_MAX_ID, &d->stdout_head);
	wq_msg_int(v, s, "xfer", WQ_REQ, 0, WQ_MAX_XFER_ID, &d->stdout_xfer);
	v->where = NULL;
}

static void parse_done_outputs(struct wq_msg_v *v, const json_t *msg, struct wq_task_done *d)
{
	json_t *a = NULL;
	if (wq_msg_array(v, msg, "outputs", 0, WQ_FILES_MAX, &a) != 0)
		return;
	d->outputs = xcalloc(json_array_size(a) + 1, sizeof *d->outputs);
	char where[32];
	size_t i;
	json_t *x = NULL;
	json_array_foreach(a, i, x)
	{
		snprintf(where, sizeof where, "outputs[%zu]", i);
		v->where = where;
		struct wq_done_output *o = &d->outputs[i];
		o->size = -1;
		if (!json_is_object(x)) {
			wq_msg_fail(v, NULL, "expected an object");
			break;
		}
		wq_msg_int(v, x, "index", WQ_REQ, 0, WQ_FILES_MAX - 1, &o->index);
		int kinds = !!json_object_get(x, "xfer") + !!json_object_get(x, "dir") +
		            !!json_object_get(x, "missing") + !!json_object_get(x, "skipped");
		bool skipped = false;
		if (kinds != 1) {
			wq_msg_fail(
			    v, NULL,
			    "expected exactly one of \"xfer\", \"dir\", \"missing\", \"skipped\"");
		} else if (json_object_get(x, "xfer")) {
			o->kind = WQ_DONE_XFER;
			wq_msg_int(v, x, "xfer", WQ_REQ, 1, WQ_MAX_XFER_ID, &o->xfer);
			wq_msg_int(v, x, "size", 0, 0, WQ_MAX_ID, &o->size);
		} else if (json_object_get(x, "dir")) {
			o->kind = WQ_DONE_DIR;
			wq_msg_int(v, x, "dir", WQ_REQ, 1, WQ_MAX_XFER_ID, &o->xfer);
		} else if (json_object_get(x, "missing")) {
			o->kind = WQ_DONE_MISSING;
			wq_msg_str(v, x, "missing", WQ_REQ, WQ_TEXT_RECV_MAX, &o->text, NULL);
		} else if (wq_msg_bool(v, x, "skipped", WQ_REQ, &skipped) == 0) {
			o->kind = WQ_DONE_SKIPPED;
			if (!skipped)
				wq_msg_fail(v, "skipped", "expected true");
		}
		v->where = NULL;
		if (v->why)
			return;
		d->noutputs++;
	}
	v->where = NULL;
}

static void parse_done_times(struct wq_msg_v *v, const json_t *msg, struct wq_task_done *d)
{
	json_t *t = NULL;
	d->t_received = d->t_inputs_ready = d->t_started = d->t_ended = d->t_reported = -1;
	if (wq_msg_object(v, msg, "times", 0, &t) != 0)
		return;
	v->where = "times";
	wq_msg_int(v, t, "received", 0, 0, WQ_MAX_ID, &d->t_received);
	wq_msg_int(v, t, "inputs_ready", 0, 0, WQ_MAX_ID, &d->t_inputs_ready);
	wq_msg_int(v, t, "started", 0, 0, WQ_MAX_ID, &d->t_started);
	wq_msg_int(v, t, "ended", 0, 0, WQ_MAX_ID, &d->t_ended);
	wq_msg_int(v, t, "reported", 0, 0, WQ_MAX_ID, &d->t_reported);
	v->where = NULL;
}

static void parse_done_outcome(struct wq_msg_v *v, const json_t *msg, struct wq_task_done *d)
{
	json_t *a = NULL, *miss = NULL;
	size_t i;
	json_t *x = NULL;
	switch (d->outcome) {
	case WQ_OUTCOME_EXITED:
		wq_msg_int(v, msg, "exit_status", WQ_REQ, 0, 255, &d->exit_status);
		break;
	case WQ_OUTCOME_SIGNALED: wq_msg_int(v, msg, "signal", WQ_REQ, 1, 127, &d->signal); break;
	case WQ_OUTCOME_EXHAUSTED:
		wq_msg_int(v, msg, "signal", WQ_REQ, 1, 127, &d->signal);
		if (wq_msg_array(v, msg, "exhausted", WQ_REQ, 32, &a) != 0)
			break;
		d->exhausted = xcalloc(json_array_size(a) + 1, sizeof *d->exhausted);
		json_array_foreach(a, i, x)
		{
			if (!json_is_string(x) || json_string_length(x) > 64) {
				wq_msg_fail(
				    v, "exhausted",
				    "expected an array of resource names (at most 64 bytes)");
				break;
			}
			d->exhausted[d->nexhausted++] = json_string_value(x);
		}
		break;
	case WQ_OUTCOME_INPUT_MISSING:
		if (wq_msg_object(v, msg, "missing", WQ_REQ, &miss) != 0)
			break;
		v->where = "missing";
		wq_msg_int(v, miss, "input", WQ_REQ, 0, WQ_FILES_MAX - 1, &d->missing_input);
		wq_msg_str(v, miss, "text", WQ_REQ, WQ_TEXT_RECV_MAX, &d->text, NULL);
		v->where = NULL;
		break;
	case WQ_OUTCOME_SANDBOX_ERROR:
		wq_msg_str(v, msg, "text", WQ_REQ, WQ_TEXT_RECV_MAX, &d->text, NULL);
		break;
	}
}

int wq_msg_task_done_parse(const json_t *msg, struct wq_task_done **out, char **why)
{
	struct wq_msg_v v = {.m = "task_done"};
	struct wq_task_done *d = xcalloc(1, sizeof *d);
	static const char *const outcomes[] = {"exited",        "signaled",      "exhausted",
	                                       "input_missing", "sandbox_error", NULL};
	*out = NULL;
	*why = NULL;
	d->missing_input = -1;
	wq_msg_int(&v, msg, "id", WQ_REQ, 1, WQ_MAX_ID, &d->id);
	wq_msg_int(&v, msg, "try", WQ_REQ, 1, WQ_MAX_ID, &d->try_);
	int outcome = 0;
	if (wq_msg_enum(&v, msg, "outcome", WQ_REQ, outcomes, &outcome) == 0) {
		d->outcome = (enum wq_outcome)outcome;
		parse_done_outcome(&v, msg, d);
	}
	if (!v.why)
		parse_done_stdout(&v, msg, d);
	if (!v.why)
		parse_done_outputs(&v, msg, d);
	json_t *summary = NULL;
	if (wq_msg_object(&v, msg, "summary", WQ_NULL, &summary) == 0)
		d->summary = summary;
	json_t *container = NULL;
	if (wq_msg_object(&v, msg, "container", WQ_NULL, &container) == 0)
		d->container = container;
	json_t *grown = NULL;
	if (wq_msg_object(&v, msg, "grown", WQ_NULL, &grown) == 0)
		d->grown = grown;
	if (!v.why)
		parse_done_times(&v, msg, d);
	wq_msg_bool(&v, msg, "disk_full", 0, &d->disk_full);
	if (v.why) {
		*why = v.why;
		wq_task_done_free(d);
		return HTC_EPROTO;
	}
	d->msg = json_incref((json_t *)msg);
	*out = d;
	return 0;
}

void wq_task_done_free(struct wq_task_done *d)
{
	if (!d)
		return;
	free(d->exhausted);
	free(d->outputs);
	json_decref(d->msg);
	free(d);
}
