/* dag_json.c: builds a struct dag from the JSON form of a workflow (what a
 * --json file holds, or what the JX evaluator produced): rules with commands
 * or nested workflows, files with optional sandbox names, categories with
 * resources and environments. Errors name the line and column of the
 * offending value when the JX evaluator noted it, else the rule's index. */
#include "dag_json.h"
#include "parser.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "docker_name.h"
#include "workflow_keys.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

struct jctx {
	struct dag *dag;
	char *err;
	size_t errlen;
	int rule;                 /* index of the rule being read, -1 outside rules */
	const struct jx_pos *pos; /* positions of values, or NULL */
	/* the place an error is about, resolved only when an error is written:
	 * member at_name of at_obj, item at_index of at_list, or the container at */
	json_t *at, *at_obj, *at_list;
	const char *at_name;
	size_t at_index;
	/* environment under construction */
	char **vars;
	int nvars, capvars;
	struct dag_env *last;
	struct dag_env *global_env;
};

__attribute__((format(printf, 2, 3))) static int jerr(struct jctx *c, const char *fmt, ...)
{
	if (!c->err || !c->errlen)
		return -1;
	int off, line = 0, col = 0;
	int found = c->at_obj    ? jx_pos_find_member(c->pos, c->at_obj, c->at_name, &line, &col)
	            : c->at_list ? jx_pos_find_item(c->pos, c->at_list, c->at_index, &line, &col)
	                         : jx_pos_find(c->pos, c->at, &line, &col);
	if (found)
		off = c->rule >= 0
		          ? snprintf(c->err, c->errlen, "%s:%d:%d: rule %d: ", c->dag->filename,
		                     line, col, c->rule)
		          : snprintf(c->err, c->errlen, "%s:%d:%d: ", c->dag->filename, line, col);
	else if (c->rule >= 0)
		off = snprintf(c->err, c->errlen, "%s: rule %d: ", c->dag->filename, c->rule);
	else
		off = snprintf(c->err, c->errlen, "%s: ", c->dag->filename);
	if (off < 0 || (size_t)off >= c->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err + off, c->errlen - (size_t)off, fmt, ap);
	va_end(ap);
	return -1;
}

/* The next messages name the place of the object or list V, of member NAME
 * of OBJ (when OBJ has it), or of item I of LIST. Nothing is looked up until
 * a message is written. */
static void at(struct jctx *c, json_t *v)
{
	if (!v || !(json_is_object(v) || json_is_array(v)))
		return;
	c->at = v;
	c->at_obj = c->at_list = NULL;
}

static void at_member(struct jctx *c, json_t *obj, const char *name)
{
	if (!json_is_object(obj) || !json_object_get(obj, name))
		return;
	c->at_obj = obj;
	c->at_name = name;
	c->at_list = NULL;
}

static void at_item(struct jctx *c, json_t *list, size_t i)
{
	c->at_list = list;
	c->at_index = i;
	c->at_obj = NULL;
}

/* Refuses the first key of OBJ that the key table does not support at
 * PLACE, naming the line of the file when it is certain. */
static int check_keys(struct jctx *c, json_t *obj, enum workflow_key_place place)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		const struct workflow_key *k = workflow_key_find(place, key);
		if (k && k->status == WORKFLOW_KEY_SUPPORTED)
			continue;
		char msg[400];
		workflow_key_refusal(place, key, msg, sizeof msg);
		/* keys keep no position: the line where the key alone occurs, else
		 * the line of its object */
		int line = workflow_key_line(c->dag->filename, key, 64u << 20);
		if (line <= 0 && !jx_pos_find(c->pos, obj, &line, NULL))
			line = 0;
		if (!c->err || !c->errlen)
			return -1;
		int off = line > 0 ? snprintf(c->err, c->errlen, "%s:%d: ", c->dag->filename, line)
		                   : snprintf(c->err, c->errlen, "%s: ", c->dag->filename);
		if (off < 0 || (size_t)off >= c->errlen)
			return -1;
		if (c->rule >= 0)
			snprintf(c->err + off, c->errlen - (size_t)off, "rule %d: %s", c->rule,
			         msg);
		else
			snprintf(c->err + off, c->errlen - (size_t)off, "%s", msg);
		return -1;
	}
	return 0;
}

/* ---- environments --------------------------------------------------- */

static void env_put(struct jctx *c, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *entry = xasprintf("%s=%s", name, value);
	for (int i = 0; i < c->nvars; i++) {
		if (strncmp(c->vars[i], name, len) == 0 && c->vars[i][len] == '=') {
			free(c->vars[i]);
			c->vars[i] = entry;
			return;
		}
	}
	VEC_PUSH(c->vars, c->nvars, c->capvars, entry);
}

static void env_clear(struct jctx *c)
{
	for (int i = 0; i < c->nvars; i++)
		free(c->vars[i]);
	c->nvars = 0;
}

/* 1 if S is a variable name as in the Make-like form: letters, digits and
 * '_', not starting with a digit. */
static int valid_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/* Adds the members of the JSON object ENV (strings, numbers or booleans). */
static int env_add_object(struct jctx *c, json_t *env, const char *what)
{
	if (!env)
		return 0;
	at(c, env);
	if (!json_is_object(env))
		return jerr(c, "'%s' must be an object", what);
	const char *key;
	json_t *v;
	json_object_foreach(env, key, v)
	{
		char num[64];
		const char *value;
		at_member(c, env, key);
		if (json_is_string(v))
			value = json_string_value(v);
		else if (json_is_integer(v)) {
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
			value = num;
		} else if (json_is_real(v)) {
			snprintf(num, sizeof num, "%g", json_real_value(v));
			value = num;
		} else if (json_is_boolean(v))
			value = json_is_true(v) ? "true" : "false";
		else
			return jerr(c, "'%s' value of '%s' must be a string or a number", what,
			            key);
		if (!valid_name(key))
			return jerr(c, "bad variable name '%s' in '%s'", key, what);
		env_put(c, key, value);
	}
	return 0;
}

static struct dag_env *env_from_object(struct jctx *c, json_t *env, const char *what)
{
	env_clear(c);
	if (env_add_object(c, env, what) < 0)
		return NULL;
	struct dag_env *e = dag_env_create(c->vars, c->nvars);
	env_clear(c);
	return e;
}

/* ---- resources ------------------------------------------------------ */

static const char *const res_rule[] = {"a whole number", "MB or a size such as \"2G\"",
                                       "MB or a size such as \"2G\"", "a whole number",
                                       "seconds or a time such as \"1h\""};

/* Reads a "resources" object into R; sets *BITS for the fields present.
 * Values follow the rules of the Make-like form (workflow_keys.h): a number
 * is read as the text it prints as, so 1.5 cores is refused as "1.5" is. */
static int read_resources(struct jctx *c, json_t *obj, struct dag_resources *r, uint8_t *bits)
{
	if (!obj)
		return 0;
	at(c, obj);
	if (!json_is_object(obj))
		return jerr(c, "'resources' must be an object");
	if (check_keys(c, obj, WORKFLOW_KEY_RESOURCES) < 0)
		return -1;
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		int k = workflow_key_find(WORKFLOW_KEY_RESOURCES, key)->resource;
		at_member(c, obj, key);
		char text[64];
		const char *t = NULL;
		if (json_is_integer(v)) {
			snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
			t = text;
		} else if (json_is_real(v)) {
			snprintf(text, sizeof text, "%.17g", json_real_value(v));
			t = text;
		} else if (json_is_string(v)) {
			t = json_string_value(v);
		}
		int64_t value;
		if (!t || workflow_resource_parse(k, t, &value) < 0) {
			if (t)
				return jerr(c, "bad value '%.40s' for resource '%s' (expected %s)",
				            t, key, res_rule[k]);
			return jerr(c, "bad value for resource '%s' (expected %s)", key,
			            res_rule[k]);
		}
		*dag_resources_field(r, k) = value;
		if (bits)
			*bits |= (uint8_t)(1u << k);
	}
	return 0;
}

/* ---- categories ------------------------------------------------------ */

static int read_categories(struct jctx *c, json_t *cats)
{
	if (!cats)
		return 0;
	at(c, cats);
	if (!json_is_object(cats))
		return jerr(c, "'categories' must be an object");
	const char *name;
	json_t *obj;
	json_object_foreach(cats, name, obj)
	{
		at(c, obj);
		if (!*name)
			return jerr(c, "empty category name");
		for (const char *s = name; *s; s++)
			if (isspace((unsigned char)*s) || (unsigned char)*s < 0x20)
				return jerr(c, "bad category name '%s'", name);
		if (!json_is_object(obj))
			return jerr(c, "category '%s' must be an object", name);
		if (check_keys(c, obj, WORKFLOW_KEY_CATEGORY) < 0)
			return -1;
		struct dag_category *cat = dag_category_get_or_create(c->dag, name);
		if (read_resources(c, json_object_get(obj, "resources"), &cat->max, NULL) < 0)
			return -1;
		json_t *mode = json_object_get(obj, "mode");
		at_member(c, obj, "mode");
		if (mode && (!json_is_string(mode) ||
		             dag_category_mode_parse(json_string_value(mode), &cat->mode) != 0))
			return jerr(c, "bad 'mode' for category '%s'", name);
		if (mode)
			cat->mode_set = 1;
		json_t *env = json_object_get(obj, "environment");
		if (env) {
			struct dag_env *e = env_from_object(c, env, "environment");
			if (!e)
				return -1;
			dag_env_unref(cat->environment);
			cat->environment = e;
		}
	}
	return 0;
}

/* ---- rules ----------------------------------------------------------- */

static int read_files(struct jctx *c, struct dag_node *n, json_t *list, int outputs)
{
	const char *what = outputs ? "outputs" : "inputs";
	if (!list)
		return 0;
	at(c, list);
	if (!json_is_array(list))
		return jerr(c, "'%s' must be a list", what);
	size_t i;
	json_t *item;
	json_array_foreach(list, i, item)
	{
		const char *name = NULL, *remote = NULL;
		at_item(c, list, i);
		if (json_is_string(item)) {
			name = json_string_value(item);
		} else if (json_is_object(item)) {
			if (check_keys(c, item, WORKFLOW_KEY_FILE) < 0)
				return -1;
			json_t *dn = json_object_get(item, "dag_name");
			json_t *tn = json_object_get(item, "task_name");
			if (!json_is_string(dn))
				return jerr(c, "'%s' entry %zu needs a string 'dag_name'", what, i);
			if (tn && !json_is_string(tn))
				return jerr(c, "'%s' entry %zu: 'task_name' must be a string", what,
				            i);
			name = json_string_value(dn);
			remote = tn ? json_string_value(tn) : NULL;
			if (remote && !*remote)
				return jerr(c, "'%s' entry %zu: empty 'task_name'", what, i);
		} else {
			return jerr(c, "'%s' entries must be strings or objects", what);
		}
		if (!*name)
			return jerr(c, "empty file name in '%s'", what);
		for (const char *s = name; *s; s++)
			if ((unsigned char)*s < 0x20)
				return jerr(c, "file name in '%s' contains a control character",
				            what);
		if (remote && strcmp(remote, name) == 0)
			remote = NULL;
		struct dag_file *f = dag_file_get_or_create(c->dag, name);
		if (outputs) {
			if (dag_node_add_output(c->dag, n, f, remote, c->err, c->errlen) != 0)
				return -1;
		} else {
			dag_node_add_input(c->dag, n, f, remote);
		}
	}
	return 0;
}

static void set_rule_env(struct jctx *c, struct dag_node *n)
{
	/* global, category, rule were put by the caller; add the always
	 * exported values */
	env_put(c, "CATEGORY", n->category->name);
	static const char *const names[] = {"CORES", "MEMORY", "DISK", "GPUS", "WALL_TIME"};
	int64_t cores = -1;
	for (int k = 0; k < 5; k++) {
		int64_t v = *dag_resources_field(&n->resources, k);
		if (v < 0)
			v = *dag_resources_field(&n->category->max, k);
		if (v < 0)
			v = *dag_resources_field(&c->dag->default_category->max, k);
		if (v < 0)
			continue;
		char num[32];
		snprintf(num, sizeof num, "%lld", (long long)v);
		env_put(c, names[k], num);
		if (k == 0)
			cores = v;
	}
	int have_omp = 0;
	for (int i = 0; i < c->nvars; i++)
		if (strncmp(c->vars[i], "OMP_NUM_THREADS=", 16) == 0)
			have_omp = 1;
	if (cores >= 0 && !have_omp) {
		char num[32];
		snprintf(num, sizeof num, "%lld", (long long)cores);
		env_put(c, "OMP_NUM_THREADS", num);
	}
	struct dag_env tmp = {.refcount = 1, .count = c->nvars, .vars = c->vars};
	if (!c->last || !dag_env_equal(c->last, &tmp)) {
		dag_env_unref(c->last);
		c->last = dag_env_create(c->vars, c->nvars);
	}
	dag_node_set_env(n, c->last);
	env_clear(c);
}

/* A rule's "container": {"type": "docker", "image": NAME | "image_tar": FILE, "mode": "task" |
 * "shared" | "none"} (doc/makeflow-language.md "Containers"); the archive becomes an input. */
static int read_container(struct jctx *c, struct dag_node *n, json_t *o)
{
	if (!o)
		return 0;
	if (!json_is_object(o))
		return jerr(c, "'container' must be an object");
	if (check_keys(c, o, WORKFLOW_KEY_CONTAINER) < 0)
		return -1;
	json_t *type = json_object_get(o, "type");
	if (type && (!json_is_string(type) || strcmp(json_string_value(type), "docker") != 0))
		return jerr(c, "'container.type' must be \"docker\" (Singularity is not available "
		               "here)");
	json_t *image = json_object_get(o, "image"), *tar = json_object_get(o, "image_tar");
	json_t *mode = json_object_get(o, "mode");
	if ((image && !json_is_string(image)) || (tar && !json_is_string(tar)) ||
	    (mode && !json_is_string(mode)))
		return jerr(c, "'container' values must be strings");
	if (image && tar)
		return jerr(c, "'container' names the image or its archive (image_tar), not both");
	const char *img = image ? json_string_value(image) : NULL;
	if (img && !docker_image_name_ok(img))
		return jerr(c, "'container.image' '%s' is not an image name", img);
	static const char *const modes[] = {"", "none", "task", "shared"};
	enum dag_container_mode m = DAG_CONTAINER_UNSET;
	for (int k = 1; mode && k < 4; k++)
		if (strcmp(json_string_value(mode), modes[k]) == 0)
			m = (enum dag_container_mode)k;
	if (mode && m == DAG_CONTAINER_UNSET)
		return jerr(c, "'container.mode' must be \"none\", \"task\" or \"shared\"");
	if (!img && !tar && m != DAG_CONTAINER_NONE)
		return jerr(c, "'container' needs 'image' or 'image_tar' (or \"mode\": \"none\")");
	const char *archive = tar ? json_string_value(tar) : NULL;
	if (archive && !*archive)
		return jerr(c, "'container.image_tar' is empty");
	if (archive)
		dag_node_add_input(c->dag, n, dag_file_get_or_create(c->dag, archive), NULL);
	dag_node_set_container(c->dag, n, img, archive, m);
	return 0;
}

static int read_rule(struct jctx *c, json_t *r, struct dag_category *defcat)
{
	at(c, r);
	if (!json_is_object(r))
		return jerr(c, "must be an object");
	if (check_keys(c, r, WORKFLOW_KEY_RULE) < 0)
		return -1;
	json_t *cmd = json_object_get(r, "command");
	json_t *wf = json_object_get(r, "workflow");
	if (cmd && wf)
		return jerr(c, "has both 'command' and 'workflow'");
	if (!cmd && !wf)
		return jerr(c, "needs 'command' or 'workflow'");
	at_member(c, r, cmd ? "command" : "workflow");
	json_t *rule_obj = c->at_obj;
	const char *rule_name = c->at_name;
	if (cmd && !json_is_string(cmd))
		return jerr(c, "'command' must be a string");
	if (wf && !json_is_string(wf))
		return jerr(c, "'workflow' must be a string");
	const char *command = cmd ? json_string_value(cmd) : NULL;
	if (command) {
		while (isspace((unsigned char)*command))
			command++;
		if (!*command)
			return jerr(c, "empty 'command'");
	}
	if (wf && !*json_string_value(wf))
		return jerr(c, "empty 'workflow'");
	json_t *args = json_object_get(r, "args");
	at_member(c, r, "args");
	if (args && !wf)
		return jerr(c, "'args' belongs to a nested workflow: the rule needs 'workflow'");
	if (args && !json_is_object(args))
		return jerr(c, "'args' must be an object (the symbols of the nested workflow)");

	struct dag_category *cat = defcat;
	json_t *jc = json_object_get(r, "category");
	at_member(c, r, "category");
	if (jc) {
		if (!json_is_string(jc) || !*json_string_value(jc))
			return jerr(c, "'category' must be a non-empty string");
		for (const char *s = json_string_value(jc); *s; s++)
			if (isspace((unsigned char)*s) || (unsigned char)*s < 0x20)
				return jerr(c, "bad category name '%s'", json_string_value(jc));
		cat = dag_category_get_or_create(c->dag, json_string_value(jc));
	}
	json_t *local = json_object_get(r, "local_job");
	at_member(c, r, "local_job");
	if (local && !json_is_boolean(local))
		return jerr(c, "'local_job' must be true or false");
	json_t *alloc = json_object_get(r, "allocation");
	int allocation = DAG_ALLOCATION_AUTO;
	if (alloc) {
		at_member(c, r, "allocation");
		const char *a = json_is_string(alloc) ? json_string_value(alloc) : "";
		if (strcmp(a, "auto") == 0 || strcmp(a, "first") == 0)
			allocation = DAG_ALLOCATION_AUTO;
		else if (strcmp(a, "max") == 0)
			allocation = DAG_ALLOCATION_MAX;
		else if (strcmp(a, "error") == 0)
			allocation = DAG_ALLOCATION_ERROR;
		else
			return jerr(c, "'allocation' must be \"auto\", \"max\" or \"error\"");
	}

	at_member(c, rule_obj, rule_name);
	int line = c->rule;
	if (c->pos && !jx_pos_find(c->pos, r, &line, NULL))
		line = c->rule;
	char *wcmd = wf ? xasprintf("MAKEFLOW %s", json_string_value(wf)) : NULL;
	struct dag_node *n = dag_node_add(c->dag, line, command ? command : wcmd, cat);
	free(wcmd);
	n->local = (uint8_t)(local && json_is_true(local));
	n->allocation = (uint8_t)allocation;
	if (wf) {
		char *a = args ? json_dumps(args, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
		dag_node_set_workflow(n, json_string_value(wf), a);
		free(a);
		dag_node_add_input(c->dag, n, dag_file_get_or_create(c->dag, json_string_value(wf)),
		                   NULL);
	}
	at_member(c, r, "outputs");
	if (read_files(c, n, json_object_get(r, "outputs"), 1) < 0)
		return -1;
	at_member(c, r, "inputs");
	if (read_files(c, n, json_object_get(r, "inputs"), 0) < 0)
		return -1;
	at_member(c, r, "resources");
	if (read_resources(c, json_object_get(r, "resources"), &n->resources,
	                   &n->explicit_resources) < 0)
		return -1;
	at_member(c, r, "container");
	if (read_container(c, n, json_object_get(r, "container")) < 0)
		return -1;
	/* environment: global, then category, then rule */
	env_clear(c);
	for (int i = 0; c->global_env && i < c->global_env->count; i++) {
		char *eq = strchr(c->global_env->vars[i], '=');
		char *name =
		    xstrndup(c->global_env->vars[i], (size_t)(eq - c->global_env->vars[i]));
		env_put(c, name, eq + 1);
		free(name);
	}
	for (int i = 0; cat->environment && i < cat->environment->count; i++) {
		char *eq = strchr(cat->environment->vars[i], '=');
		char *name =
		    xstrndup(cat->environment->vars[i], (size_t)(eq - cat->environment->vars[i]));
		env_put(c, name, eq + 1);
		free(name);
	}
	at_member(c, r, "environment");
	if (env_add_object(c, json_object_get(r, "environment"), "environment") < 0)
		return -1;
	set_rule_env(c, n);
	at_member(c, rule_obj, rule_name);
	if (n->noutputs == 0) /* as "rule has no targets" in the Make-like form */
		return jerr(c, "has no outputs (a rule names at least one file in 'outputs')");
	return 0;
}

struct dag *dag_from_json(json_t *workflow, const char *filename, char *err, size_t errlen)
{
	return dag_from_json_at(workflow, filename, NULL, err, errlen);
}

struct dag *dag_from_json_at(json_t *workflow, const char *filename, const struct jx_pos *pos,
                             char *err, size_t errlen)
{
	struct jctx c = {
	    .dag = dag_create(filename), .err = err, .errlen = errlen, .rule = -1, .pos = pos};
	/* with positions, rules carry their real line and messages name lines */
	c.dag->json = pos ? 0 : 1;
	at(&c, workflow);
	int rc = -1;
	if (err && errlen)
		err[0] = 0;
	if (!json_is_object(workflow)) {
		jerr(&c, "a workflow must be a JSON object");
		goto out;
	}
	if (check_keys(&c, workflow, WORKFLOW_KEY_TOP) < 0)
		goto out;
	json_t *rules = json_object_get(workflow, "rules");
	at(&c, rules);
	if (!rules) {
		jerr(&c, "missing 'rules'");
		goto out;
	}
	if (!json_is_array(rules)) {
		jerr(&c, "'rules' must be a list");
		goto out;
	}
	json_t *env = json_object_get(workflow, "environment");
	if (env && !(c.global_env = env_from_object(&c, env, "environment")))
		goto out;
	if (read_categories(&c, json_object_get(workflow, "categories")) < 0)
		goto out;
	struct dag_category *defcat = c.dag->default_category;
	json_t *dc = json_object_get(workflow, "default_category");
	if (dc) {
		at_member(&c, workflow, "default_category");
		if (!json_is_string(dc) || !*json_string_value(dc)) {
			jerr(&c, "'default_category' must be a non-empty string");
			goto out;
		}
		defcat = dag_category_get_or_create(c.dag, json_string_value(dc));
	}
	size_t i;
	json_t *r;
	json_array_foreach(rules, i, r)
	{
		c.rule = (int)i;
		at_item(&c, rules, i);
		if (read_rule(&c, r, defcat) < 0)
			goto out;
	}
	c.rule = -1;
	if (dag_finalize(c.dag, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	env_clear(&c);
	free(c.vars);
	dag_env_unref(c.last);
	dag_env_unref(c.global_env);
	if (rc < 0) {
		dag_delete(c.dag);
		return NULL;
	}
	debug(D_DAG, "%s: %d rules from JSON", c.dag->filename, c.dag->nnodes);
	return c.dag;
}
