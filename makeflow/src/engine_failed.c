/* engine_failed.c: what is kept of a rule that failed for good: its outputs moved to
 * makeflow.failed.N/ (or deleted with --do-not-save-failed-output), beside an INFO.json that
 * says what ran and how it ended, in the keys CCTools users read there (exit_code, command,
 * inputs, outputs, environment, category, resources). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "debug.h"
#include "engine_internal.h"
#include "path.h"
#include "xalloc.h"
#include "banned.h"

/* [{dag_name, size}] of REFS; size is null for a file that is not there. */
static json_t *file_list(const struct dag_file_ref *refs, int n, const char *dir)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		const char *name = refs[i].file->name;
		char *at = dir ? path_join(dir, name) : xstrdup(name);
		struct stat st;
		json_t *size = stat(at, &st) == 0 ? json_integer(st.st_size) : json_null();
		json_array_append_new(a, json_pack("{s:s, s:o}", "dag_name", name, "size", size));
		free(at);
	}
	return a;
}

static void put_resource(json_t *o, const char *key, int64_t v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

static int write_info(struct engine *e, struct dag_node *n, const char *dir)
{
	const struct node_extra *x = &e->extra[n->id];
	json_t *env = json_object();
	for (int i = 0; n->env && i < n->env->count; i++) {
		const char *eq = strchr(n->env->vars[i], '=');
		if (!eq)
			continue;
		char *k = xstrndup(n->env->vars[i], (size_t)(eq - n->env->vars[i]));
		json_object_set_new(env, k, json_string(eq + 1));
		free(k);
	}
	json_t *res = json_object();
	const struct batch_resources *a = &x->alloc;
	put_resource(res, "cores", a->cores >= 0 ? a->cores : n->resources.cores);
	put_resource(res, "memory", a->memory_mb >= 0 ? a->memory_mb : n->resources.memory);
	put_resource(res, "disk", a->disk_mb >= 0 ? a->disk_mb : n->resources.disk);
	put_resource(res, "gpus", a->gpus >= 0 ? a->gpus : n->resources.gpus);
	put_resource(res, "wall_time",
	             a->wall_time_s >= 0 ? a->wall_time_s : n->resources.wall_time);
	json_t *info = json_pack(
	    "{s:s, s:i, s:s, s:i, s:o, s:o, s:o, s:s, s:o, s:i}", "workflow", e->dag->filename,
	    "line", n->line, "command", n->command ? n->command : "", "exit_code",
	    x->last_signal ? 128 + x->last_signal : x->last_exit_code, "inputs",
	    file_list(n->inputs, n->ninputs, NULL), "outputs",
	    file_list(n->outputs, n->noutputs, dir), "environment", env, "category",
	    n->category ? n->category->name : "default", "resources", res, "attempts", x->attempts);
	if (x->last_signal)
		json_object_set_new(info, "signal", json_integer(x->last_signal));
	if (x->last_exhausted)
		json_object_set_new(info, "exhausted", json_true());
	if (x->last_error)
		json_object_set_new(info, "error", json_string(x->last_error));
	if (x->last_stderr)
		json_object_set_new(info, "stderr_tail", json_string(x->last_stderr));
	char *path = path_join(dir, "INFO.json");
	int r = json_dump_file(info, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (r < 0)
		warn("cannot write %s: %s", path, strerror(errno));
	free(path);
	json_decref(info);
	return r;
}

void engine_failed_keep(struct engine *e, struct dag_node *n)
{
	if (e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS)
		return;
	if (e->opt->no_save_failed_output) {
		/* --do-not-save-failed-output: deleted instead of kept aside */
		for (int i = 0; i < n->noutputs; i++)
			if (path_exists(n->outputs[i].file->name))
				path_rm_rf(n->outputs[i].file->name);
		return;
	}
	int any = 0;
	for (int i = 0; i < n->noutputs && !any; i++)
		any = path_exists(n->outputs[i].file->name);
	if (!any && e->extra[n->id].last_error)
		return; /* it never ran (it could not be submitted): nothing to keep */
	char dir[64];
	snprintf(dir, sizeof dir, "makeflow.failed.%d", n->id);
	path_rm_rf(dir);
	if (path_mkdir_p(dir, 0777) < 0) {
		warn("cannot make %s: %s", dir, strerror(errno));
		return;
	}
	int moved = 0;
	for (int i = 0; i < n->noutputs; i++) {
		const char *name = n->outputs[i].file->name;
		if (!path_exists(name))
			continue;
		char *dest = path_join(dir, name);
		char *destdir = path_dirname(dest);
		path_mkdir_p(destdir, 0777);
		if (rename(name, dest) < 0)
			warn("cannot move %s to %s: %s", name, dest, strerror(errno));
		else
			moved++;
		free(dest);
		free(destdir);
	}
	write_info(e, n, dir);
	notice("rule at line %d failed: %s%s/ (INFO.json says how)", n->line,
	       moved ? "its outputs were moved to " : "see ", dir);
}
