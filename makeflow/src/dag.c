/* dag.c: construction and teardown of the in-memory workflow (dag.h): the
 * interned file table, the node array, categories, shared environment
 * snapshots and interned strings. Edge building and cycle detection live in
 * dag_check.c. */
#include "dag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "htc_error.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

struct dag_string {
	UT_hash_handle hh;
	char s[];
};

static void resources_unset(struct dag_resources *r)
{
	r->cores = r->memory = r->disk = r->gpus = r->wall_time = -1;
}

int64_t *dag_resources_field(struct dag_resources *r, int k)
{
	switch (k) {
	case 0: return &r->cores;
	case 1: return &r->memory;
	case 2: return &r->disk;
	case 3: return &r->gpus;
	default: return &r->wall_time;
	}
}

struct dag *dag_create(const char *filename)
{
	struct dag *d = xcalloc(1, sizeof *d);
	d->filename = xstrdup(filename ? filename : "(workflow)");
	d->max_depth = -1;
	d->default_category = dag_category_get_or_create(d, DAG_DEFAULT_CATEGORY);
	return d;
}

void dag_delete(struct dag *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nnodes; i++) {
		struct dag_node *n = d->nodes[i];
		free(n->command);
		free(n->workflow);
		free(n->workflow_args);
		for (int j = 0; j < n->ninputs; j++)
			free(n->inputs[j].remote_name);
		for (int j = 0; j < n->noutputs; j++)
			free(n->outputs[j].remote_name);
		free(n->inputs);
		free(n->outputs);
		free(n->parents);
		free(n->children);
		dag_env_unref(n->env);
		free(n);
	}
	free(d->nodes);
	struct dag_file *f, *ftmp;
	HASH_ITER(hh, d->files, f, ftmp)
	{
		HASH_DELETE(hh, d->files, f);
		free(f->consumers);
		free(f);
	}
	struct dag_category *c, *ctmp;
	HASH_ITER(hh, d->categories, c, ctmp)
	{
		HASH_DELETE(hh, d->categories, c);
		free(c->name);
		dag_env_unref(c->environment);
		free(c);
	}
	struct dag_string *s, *stmp;
	HASH_ITER(hh, d->strings, s, stmp)
	{
		HASH_DELETE(hh, d->strings, s);
		free(s);
	}
	free(d->inputs);
	free(d->outputs);
	free(d->filename);
	free(d);
}

void dag_error(const struct dag *d, int line, char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	int off;
	if (line > 0)
		off = snprintf(err, errlen, "%s:%d: ", d->filename, line);
	else
		off = snprintf(err, errlen, "%s: ", d->filename);
	if (off < 0 || (size_t)off >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + off, errlen - (size_t)off, fmt, ap);
	va_end(ap);
}

/* ---- files ------------------------------------------------------------- */

struct dag_file *dag_file_lookup(const struct dag *d, const char *name)
{
	struct dag_file *f = NULL;
	HASH_FIND_STR(d->files, name, f);
	return f;
}

struct dag_file *dag_file_get_or_create(struct dag *d, const char *name)
{
	struct dag_file *f = dag_file_lookup(d, name);
	if (f)
		return f;
	size_t len = strlen(name);
	f = xcalloc(1, sizeof *f + len + 1);
	memcpy(f->name, name, len + 1);
	f->size_hint = -1;
	HASH_ADD_KEYPTR(hh, d->files, f->name, len, f);
	d->nfiles++;
	return f;
}

/* ---- categories -------------------------------------------------------- */

struct dag_category *dag_category_lookup(const struct dag *d, const char *name)
{
	struct dag_category *c = NULL;
	HASH_FIND_STR(d->categories, name, c);
	return c;
}

struct dag_category *dag_category_get_or_create(struct dag *d, const char *name)
{
	struct dag_category *c = dag_category_lookup(d, name);
	if (c)
		return c;
	c = xcalloc(1, sizeof *c);
	c->name = xstrdup(name);
	c->mode = DAG_MODE_FIXED;
	resources_unset(&c->max);
	HASH_ADD_KEYPTR(hh, d->categories, c->name, strlen(c->name), c);
	return c;
}

struct dag_category *dag_categories(const struct dag *d)
{
	return d->categories;
}

struct dag_category *dag_category_next(const struct dag_category *c)
{
	return c ? c->hh.next : NULL;
}

static const struct {
	const char *name;
	enum dag_category_mode mode;
} mode_names[] = {
    {"FIXED", DAG_MODE_FIXED},         {"MAX", DAG_MODE_MAX},
    {"MIN_WASTE", DAG_MODE_MIN_WASTE}, {"MAX_THROUGHPUT", DAG_MODE_MAX_THROUGHPUT},
    {"WASTE", DAG_MODE_MIN_WASTE},     {"THROUGHPUT", DAG_MODE_MAX_THROUGHPUT},
};

int dag_category_mode_parse(const char *s, enum dag_category_mode *mode)
{
	for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++) {
		if (strcasecmp(s, mode_names[i].name) == 0) {
			*mode = mode_names[i].mode;
			return 0;
		}
	}
	return HTC_EPARSE;
}

const char *dag_category_mode_name(enum dag_category_mode mode)
{
	switch (mode) {
	case DAG_MODE_FIXED: return "FIXED";
	case DAG_MODE_MAX: return "MAX";
	case DAG_MODE_MIN_WASTE: return "MIN_WASTE";
	case DAG_MODE_MAX_THROUGHPUT: return "MAX_THROUGHPUT";
	}
	return "FIXED";
}

/* ---- nodes ------------------------------------------------------------- */

struct dag_node *dag_node_add(struct dag *d, int line, const char *command,
                              struct dag_category *category)
{
	VEC_RESERVE(d->nodes, d->nodes_cap, (size_t)d->nnodes + 1);
	struct dag_node *n = xcalloc(1, sizeof *n);
	n->id = d->nnodes;
	n->line = line;
	n->command = xstrdup(command ? command : "");
	n->category = category ? category : d->default_category;
	resources_unset(&n->resources);
	n->depth = -1;
	d->nodes[d->nnodes++] = n;
	d->finalized = 0;
	return n;
}

void dag_node_set_workflow(struct dag_node *n, const char *workflow, const char *args)
{
	free(n->workflow);
	free(n->workflow_args);
	n->workflow = xstrdup(workflow);
	n->workflow_args = xstrdup(args);
}

/* TEXT interned in D (NULL for NULL). */
static const char *intern(struct dag *d, const char *text)
{
	if (!text)
		return NULL;
	struct dag_string *s = NULL;
	HASH_FIND_STR(d->strings, text, s);
	if (!s) {
		size_t len = strlen(text);
		s = xmalloc(sizeof *s + len + 1);
		memcpy(s->s, text, len + 1);
		HASH_ADD_KEYPTR(hh, d->strings, s->s, len, s);
	}
	return s->s;
}

void dag_node_set_batch_options(struct dag *d, struct dag_node *n, const char *options)
{
	n->batch_options = intern(d, options);
}

void dag_node_set_container(struct dag *d, struct dag_node *n, const char *image,
                            const char *archive, enum dag_container_mode mode)
{
	n->container_image = intern(d, image);
	n->container_archive = intern(d, archive);
	n->container_mode = (uint8_t)mode;
}

void dag_node_set_env(struct dag_node *n, struct dag_env *env)
{
	if (env)
		dag_env_ref(env);
	dag_env_unref(n->env);
	n->env = env;
}

static void ref_append(struct dag_file_ref **arr, int *count, int *cap, struct dag_file *f,
                       const char *remote)
{
	VEC_RESERVE_FIRST(*arr, *cap, (size_t)*count + 1, 1);
	(*arr)[*count].file = f;
	(*arr)[*count].remote_name = remote ? xstrdup(remote) : NULL;
	(*count)++;
}

int dag_node_add_input(struct dag *d, struct dag_node *n, struct dag_file *f, const char *remote)
{
	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i].file == f)
			return 0;
	ref_append(&n->inputs, &n->ninputs, &n->inputs_cap, f, remote);
	VEC_RESERVE_FIRST(f->consumers, f->consumers_cap, (size_t)f->nconsumers + 1, 1);
	f->consumers[f->nconsumers++] = n;
	d->finalized = 0;
	return 0;
}

int dag_node_add_output(struct dag *d, struct dag_node *n, struct dag_file *f, const char *remote,
                        char *err, size_t errlen)
{
	if (f->producer == n)
		return 0;
	if (f->producer) {
		if (d->json)
			dag_error(d, 0, err, errlen, "file '%s' is produced by rules %d and %d",
			          f->name, f->producer->line, n->line);
		else
			dag_error(d, n->line, err, errlen,
			          "file '%s' is produced by rules at lines %d and %d", f->name,
			          f->producer->line, n->line);
		return HTC_EDUP;
	}
	f->producer = n;
	ref_append(&n->outputs, &n->noutputs, &n->outputs_cap, f, remote);
	d->finalized = 0;
	return 0;
}

/* ---- environment snapshots ------------------------------------------- */

struct dag_env *dag_env_create(char *const *vars, int count)
{
	struct dag_env *e = xcalloc(1, sizeof *e);
	e->refcount = 1;
	e->count = count;
	e->vars = xcalloc((size_t)(count > 0 ? count : 1), sizeof *e->vars);
	for (int i = 0; i < count; i++)
		e->vars[i] = xstrdup(vars[i]);
	return e;
}

struct dag_env *dag_env_ref(struct dag_env *e)
{
	if (e)
		e->refcount++;
	return e;
}

void dag_env_unref(struct dag_env *e)
{
	if (!e || --e->refcount > 0)
		return;
	for (int i = 0; i < e->count; i++)
		free(e->vars[i]);
	free(e->vars);
	free(e);
}

const char *dag_env_get(const struct dag_env *e, const char *name)
{
	if (!e)
		return NULL;
	size_t len = strlen(name);
	for (int i = 0; i < e->count; i++)
		if (strncmp(e->vars[i], name, len) == 0 && e->vars[i][len] == '=')
			return e->vars[i] + len + 1;
	return NULL;
}

int dag_env_equal(const struct dag_env *a, const struct dag_env *b)
{
	int ca = a ? a->count : 0, cb = b ? b->count : 0;
	if (ca != cb)
		return 0;
	for (int i = 0; i < ca; i++)
		if (strcmp(a->vars[i], b->vars[i]) != 0)
			return 0;
	return 1;
}

/* ---- workflow inputs and outputs ------------------------------------ */

static void file_list_add(struct dag_file ***arr, int *count, struct dag_file *f)
{
	/* grow by powers of two */
	if ((*count & (*count - 1)) == 0)
		VEC_RESIZE(*arr, *count ? (size_t)*count * 2 : 1);
	(*arr)[(*count)++] = f;
}

void dag_add_extra_input(struct dag *d, struct dag_file *f)
{
	if (f->is_extra_input)
		return;
	f->is_extra_input = 1;
	file_list_add(&d->inputs, &d->ninputs, f);
}

void dag_add_final_output(struct dag *d, struct dag_file *f)
{
	d->outputs_declared = 1;
	if (f->is_final_output)
		return;
	f->is_final_output = 1;
	file_list_add(&d->outputs, &d->noutputs, f);
	d->finalized = 0;
}
