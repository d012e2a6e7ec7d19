/* parser.c: the statement level of the Makeflow language: rule headers and
 * commands, rule-local '@' lines, assignments, export, categories, resource
 * variables and '.MAKEFLOW' / '.SIZE' directives, building a struct dag as
 * the file is read (doc/makeflow-language.md). Lines come from parser_lex.c. */
#include "parser.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "debug.h"
#include "docker_name.h"
#include "htc_error.h"
#include "parser_internal.h"
#include "units.h"
#include "workflow_keys.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

enum special {
	SP_NONE,
	SP_CATEGORY,
	SP_CORES,
	SP_MEMORY,
	SP_DISK,
	SP_GPUS,
	SP_WALL_TIME,
	SP_BATCH_LOCAL,
	SP_INPUTS,
	SP_OUTPUTS,
};

static const char *const resource_names[] = {"CORES", "MEMORY", "DISK", "GPUS", "WALL_TIME"};

static enum special special_of(const char *name)
{
	static const struct {
		const char *name;
		enum special sp;
	} table[] = {
	    {"CATEGORY", SP_CATEGORY},
	    {"CORES", SP_CORES},
	    {"MEMORY", SP_MEMORY},
	    {"DISK", SP_DISK},
	    {"GPUS", SP_GPUS},
	    {"WALL_TIME", SP_WALL_TIME},
	    {"BATCH_LOCAL", SP_BATCH_LOCAL},
	    {"MAKEFLOW_INPUTS", SP_INPUTS},
	    {"MAKEFLOW_OUTPUTS", SP_OUTPUTS},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(name, table[i].name) == 0)
			return table[i].sp;
	return SP_NONE;
}

/* ---- variable scopes ------------------------------------------------ */

static struct pvar *var_find(struct pvar *table, const char *name)
{
	struct pvar *v = NULL;
	HASH_FIND_STR(table, name, v);
	return v;
}

/* Sets NAME = VALUE in TABLE, counting the bytes against the budget (a
 * replaced value is given back). Returns 0 or -1 (error set at LINE). */
static int var_set(struct parser *p, int line, struct pvar **table, const char *name,
                   const char *value)
{
	struct pvar *v = var_find(*table, name);
	size_t vlen = strlen(value);
	if (!v) {
		size_t len = strlen(name);
		if (parser_charge(p, line, sizeof *v + len + 1) < 0)
			return -1;
		v = xcalloc(1, sizeof *v + len + 1);
		memcpy(v->name, name, len + 1);
		HASH_ADD_KEYPTR(hh, *table, v->name, len, v);
	} else if (v->value) {
		p->held -= strlen(v->value) + 1;
	}
	free(v->value);
	v->value = NULL;
	if (parser_charge(p, line, vlen + 1) < 0) {
		v->value = xstrdup("");
		return -1;
	}
	v->value = xstrdup(value);
	return 0;
}

static void vars_free(struct parser *p, struct pvar **table)
{
	struct pvar *v, *tmp;
	HASH_ITER(hh, *table, v, tmp)
	{
		HASH_DELETE(hh, *table, v);
		p->held -= sizeof *v + strlen(v->name) + 1 + (v->value ? strlen(v->value) + 1 : 0);
		free(v->value);
		free(v);
	}
}

static struct pcat *pcat_get(struct parser *p, const char *name)
{
	struct pcat *c = NULL;
	HASH_FIND_STR(p->cats, name, c);
	if (c)
		return c;
	c = xcalloc(1, sizeof *c);
	c->cat = dag_category_get_or_create(p->dag, name);
	HASH_ADD_KEYPTR(hh, p->cats, c->cat->name, strlen(c->cat->name), c);
	return c;
}

static struct pcat *rule_pcat(struct parser *p)
{
	return p->rule_pending && p->rule_cat ? p->rule_cat : p->cur;
}

const char *parser_lookup(struct parser *p, const char *name, int use_env)
{
	struct pvar *v;
	if (strcmp(name, "CATEGORY") == 0)
		return rule_pcat(p)->cat->name;
	if (p->rule_pending && (v = var_find(p->locals, name)))
		return v->value;
	if ((v = var_find(rule_pcat(p)->vars, name)))
		return v->value;
	if ((v = var_find(p->globals, name)))
		return v->value;
	return use_env ? getenv(name) : NULL;
}

static int is_true(const char *s, int *out)
{
	static const char *const yes[] = {"true", "yes", "1", "on"};
	static const char *const no[] = {"false", "no", "0", "off", ""};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		if (strcasecmp(s, yes[i]) == 0)
			return *out = 1, 0;
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		if (strcasecmp(s, no[i]) == 0)
			return *out = 0, 0;
	return -1;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

/* Parses resource K from TEXT into *OUT, with the rules the JSON form
 * shares (workflow_keys.h). */
static int parse_resource(struct parser *p, int line, int k, const char *text, int64_t *out)
{
	if (workflow_resource_parse(k, text, out) != 0)
		return perr(p, line, "bad %s value '%s'", resource_names[k], text);
	return 0;
}

/* The file NAME of the dag, counting a new one against the budget. NULL
 * with the error set when the budget is passed. */
static struct dag_file *pfile(struct parser *p, int line, const char *name)
{
	int before = p->dag->nfiles;
	struct dag_file *f = dag_file_get_or_create(p->dag, name);
	if (p->dag->nfiles != before &&
	    parser_charge(p, line, sizeof *f + strlen(name) + 1 + 2 * sizeof(void *)) < 0)
		return NULL;
	return f;
}

/* ---- assignments ---------------------------------------------------- */

static int set_category(struct parser *p, int line, const char *value, int local)
{
	const char *s = value;
	if (!*s) /* CATEGORY= goes back to the default category */
		value = s = DAG_DEFAULT_CATEGORY;
	for (; *s; s++)
		if (isspace((unsigned char)*s) || (unsigned char)*s < 0x20)
			return perr(p, line, "bad category name '%s'", value);
	struct pcat *c = pcat_get(p, value);
	if (local)
		p->rule_cat = c;
	else
		p->cur = c;
	p->gen++;
	return 0;
}

/* Stores the variable NAME = VALUE (already expanded) in the right scope,
 * applying the meaning of special names. */
static int assign(struct parser *p, int line, const char *name, const char *value, int local)
{
	enum special sp = special_of(name);
	char num[32];
	p->gen++;
	if (sp == SP_CATEGORY)
		return set_category(p, line, value, local);
	if (sp >= SP_CORES && sp <= SP_WALL_TIME) {
		int k = sp - SP_CORES;
		int64_t v;
		if (parse_resource(p, line, k, value, &v) < 0)
			return -1;
		snprintf(num, sizeof num, "%lld", (long long)v);
		value = num;
		if (local) {
			*dag_resources_field(&p->rule_res, k) = v;
			p->rule_res_bits |= (uint8_t)(1u << k);
		} else {
			struct dag_category *c = p->cur->cat;
			int64_t *f = dag_resources_field(&c->max, k);
			if (*f >= 0 && *f != v)
				warn("%s:%d: category '%s' %s redefined from %lld (line %d) to "
				     "%lld; the last value applies to all rules of the category",
				     p->dag->filename, line, c->name, resource_names[k],
				     (long long)*f, c->max_line[k], (long long)v);
			*f = v;
			c->max_line[k] = line;
		}
	} else if (sp == SP_BATCH_LOCAL) {
		int b;
		if (is_true(value, &b) < 0)
			return perr(p, line, "bad BATCH_LOCAL value '%s' (use true or false)",
			            value);
	} else if (sp == SP_INPUTS || sp == SP_OUTPUTS) {
		if (local)
			return perr(p, line, "%s cannot be set for one rule", name);
		if (sp == SP_INPUTS)
			p->inputs_line = line;
		else
			p->outputs_line = line;
	}
	if (local)
		return var_set(p, line, &p->locals, name, value);
	else if (p->cur->cat == p->dag->default_category || sp == SP_INPUTS || sp == SP_OUTPUTS)
		return var_set(p, line, &p->globals, name, value);
	return var_set(p, line, &p->cur->vars, name, value);
}

/* TEXT is "NAME=value" or "NAME+=value" (unexpanded). */
static int assignment(struct parser *p, char *text, int local, const char **assigned)
{
	int line = p->line;
	char *eq = strchr(text, '=');
	if (!eq)
		return perr(p, line, "expected a rule, an assignment or a directive");
	int append = eq > text && eq[-1] == '+';
	char *name_end = append ? eq - 1 : eq;
	*name_end = 0;
	char *name = trim(text);
	if (!parser_is_name(name, strlen(name)))
		return perr(p, line, "bad variable name '%s'", name);
	char *raw = trim(eq + 1);
	struct buffer *out = &p->tmp;
	buffer_clear(out);
	if (append) {
		const char *old = parser_lookup(p, name, p->use_env);
		if (old && *old) {
			if (buffer_putstring(out, old) != 0 || buffer_putc(out, ' ') != 0)
				return parser_too_big(p, line);
			if (parser_budget(p, line, 0) < 0)
				return -1;
		}
	}
	if (parser_expand(p, raw, strlen(raw), out, XMODE_VALUE, line, 0) < 0)
		return -1;
	char *value = xstrdup(buffer_tostring(out));
	int rc = assign(p, line, name, special_of(name) == SP_NONE ? value : trim(value), local);
	free(value);
	if (assigned)
		*assigned = name;
	return rc;
}

/* ---- export ------------------------------------------------------------ */

static void export_name(struct parser *p, const char *name)
{
	struct pexport *e = NULL;
	HASH_FIND_STR(p->exports, name, e);
	if (e)
		return;
	size_t len = strlen(name);
	e = xcalloc(1, sizeof *e + len + 1);
	memcpy(e->name, name, len + 1);
	HASH_ADD_KEYPTR(hh, p->exports, e->name, len, e);
	p->gen++;
}

static int export_line(struct parser *p, char *rest)
{
	rest = trim(rest);
	if (!*rest)
		return perr(p, p->line, "export needs a variable name");
	if (strchr(rest, '=')) {
		const char *name = NULL;
		if (assignment(p, rest, 0, &name) < 0)
			return -1;
		export_name(p, name);
		return 0;
	}
	for (char *s = rest; *s;) {
		char *w = s;
		while (*s && !isspace((unsigned char)*s))
			s++;
		char *end = s;
		while (isspace((unsigned char)*s))
			s++;
		*end = 0;
		if (!parser_is_name(w, strlen(w)))
			return perr(p, p->line, "bad variable name '%s' in export", w);
		export_name(p, w);
	}
	return 0;
}

/* ---- directives ------------------------------------------------------ */

static int directive(struct parser *p, const char *text, int local)
{
	int line = p->line, rc = -1;
	struct buffer *out = &p->tmp;
	buffer_clear(out);
	if (parser_expand(p, text, strlen(text), out, XMODE_COMMAND, line, 0) < 0)
		return -1;
	struct pword *w = NULL;
	int n = parser_split_words(p, buffer_tostring(out), line, 0, &w);
	if (n < 0)
		return -1;
	const char *dir = n > 0 ? w[0].name : "";
	if (strcmp(dir, ".SIZE") == 0) {
		int64_t size;
		if (local)
			perr(p, line, ".SIZE cannot be used for one rule");
		else if (n != 3)
			perr(p, line, ".SIZE needs a file name and a size");
		else if (units_parse_bytes(w[2].name, &size) != 0)
			perr(p, line, "bad .SIZE value '%s'", w[2].name);
		else {
			struct dag_file *f = pfile(p, line, w[1].name);
			if (f) {
				f->size_hint = size;
				rc = 0;
			}
		}
	} else if (strcmp(dir, ".MAKEFLOW") == 0) {
		const char *what = n > 1 ? w[1].name : "";
		enum special sp = special_of(what);
		enum dag_category_mode mode;
		if (n < 2)
			perr(p, line, ".MAKEFLOW needs a directive name");
		else if (strcmp(what, "MODE") == 0) {
			if (local)
				perr(p, line, ".MAKEFLOW MODE applies to a category, not one rule");
			else if (n != 3)
				perr(p, line, ".MAKEFLOW MODE needs one value");
			else if (dag_category_mode_parse(w[2].name, &mode) != 0)
				perr(p, line,
				     "bad .MAKEFLOW MODE '%s' (FIXED, MAX, MIN_WASTE or "
				     "MAX_THROUGHPUT)",
				     w[2].name);
			else {
				p->cur->cat->mode = mode;
				p->cur->cat->mode_set = 1;
				rc = 0;
			}
		} else if (sp >= SP_CATEGORY && sp <= SP_WALL_TIME) {
			if (n != 3)
				perr(p, line, ".MAKEFLOW %s needs one value", what);
			else
				rc = assign(p, line, what, w[2].name, local);
		} else if (strcmp(what, "MPI_PROCESSES") == 0)
			perr(p, line,
			     ".MAKEFLOW MPI_PROCESSES is not supported by this makeflow (no batch "
			     "type here starts MPI jobs; start them in the command, as with srun)");
		else
			perr(p, line, "unknown directive '.MAKEFLOW %s'", what);
	} else
		perr(p, line, "unknown directive '%s'", dir);
	parser_words_free(w, n);
	return rc;
}

/* ---- rules ----------------------------------------------------------- */

/* Position of the ':' that makes TEXT a rule header, or NULL. */
static char *header_colon(char *text)
{
	char quote = 0;
	for (char *s = text; *s; s++) {
		if (quote == '\'') {
			if (*s == '\'')
				quote = 0;
		} else if (*s == '\\' && s[1]) {
			s++;
		} else if (quote == '"') {
			if (*s == '"')
				quote = 0;
		} else if (*s == '\'' || *s == '"') {
			quote = *s;
		} else if (*s == '=') {
			return NULL;
		} else if (*s == ':') {
			return s;
		}
	}
	return NULL;
}

static void rule_reset(struct parser *p)
{
	p->rule_pending = 0;
	free(p->rule_targets);
	free(p->rule_sources);
	p->rule_targets = p->rule_sources = NULL;
	p->rule_cat = NULL;
	p->rule_res.cores = p->rule_res.memory = p->rule_res.disk = -1;
	p->rule_res.gpus = p->rule_res.wall_time = -1;
	p->rule_res_bits = 0;
	p->rule_bare_line = 0;
	if (p->locals)
		p->gen++;
	vars_free(p, &p->locals);
}

static int header(struct parser *p, char *text, char *colon)
{
	*colon = 0;
	p->rule_pending = 1;
	p->rule_line = p->line;
	p->rule_targets = xstrdup(text);
	p->rule_sources = xstrdup(colon + 1);
	return 0;
}

static void snap_push(char ***v, int *n, int *cap, const char *name, const char *value)
{
	VEC_PUSH(*v, *n, *cap, xasprintf("%s=%s", name, value));
}

/* The environment of the rule being completed, shared when unchanged. */
static struct dag_env *snapshot(struct parser *p)
{
	struct pcat *cat = rule_pcat(p);
	if (p->snap && p->snap_gen == p->gen && p->snap_cat == cat && !p->locals)
		return p->snap;
	char **v = NULL;
	int n = 0, cap = 0;
	for (struct pexport *e = p->exports; e; e = e->hh.next) {
		if (strcmp(e->name, "CATEGORY") == 0)
			continue;
		int sp = special_of(e->name);
		if (sp >= SP_CORES && sp <= SP_WALL_TIME)
			continue;
		const char *value = parser_lookup(p, e->name, p->use_env);
		if (value)
			snap_push(&v, &n, &cap, e->name, value);
	}
	snap_push(&v, &n, &cap, "CATEGORY", cat->cat->name);
	for (int k = 0; k < 5; k++) {
		const char *value = parser_lookup(p, resource_names[k], 0);
		if (value)
			snap_push(&v, &n, &cap, resource_names[k], value);
	}
	const char *cores = parser_lookup(p, "CORES", 0);
	struct pexport *omp = NULL;
	HASH_FIND_STR(p->exports, "OMP_NUM_THREADS", omp);
	if (cores && !(omp && parser_lookup(p, "OMP_NUM_THREADS", p->use_env)))
		snap_push(&v, &n, &cap, "OMP_NUM_THREADS", cores);
	struct dag_env tmp = {.refcount = 1, .count = n, .vars = v};
	if (!p->snap || !dag_env_equal(p->snap, &tmp)) {
		uint64_t bytes = sizeof *p->snap;
		for (int i = 0; i < n; i++)
			bytes += strlen(v[i]) + 1 + sizeof(char *);
		p->held += bytes; /* checked by the caller */
		dag_env_unref(p->snap);
		p->snap = xcalloc(1, sizeof *p->snap);
		*p->snap = tmp;
	} else {
		for (int i = 0; i < n; i++)
			free(v[i]);
		free(v);
	}
	p->snap_gen = p->gen;
	p->snap_cat = cat;
	return p->snap;
}

static int rule_container(struct parser *p, int line, struct dag_node *node);

static int add_files(struct parser *p, struct dag_node *node, const char *raw, int outputs)
{
	struct buffer *out = &p->tmp;
	buffer_clear(out);
	if (parser_expand(p, raw, strlen(raw), out, XMODE_COMMAND, p->rule_line, 0) < 0)
		return -1;
	struct pword *w;
	int n = parser_split_words(p, buffer_tostring(out), p->rule_line, SPLIT_RENAME, &w);
	if (n < 0)
		return -1;
	int rc = 0;
	if (outputs && n == 0)
		rc = perr(p, p->rule_line, "rule has no targets");
	for (int i = 0; i < n && rc == 0; i++) {
		struct dag_file *f = pfile(p, p->rule_line, w[i].name);
		if (!f || parser_charge(p, p->rule_line,
		                        sizeof(struct dag_file_ref) + 2 * sizeof(void *) +
		                            (w[i].remote ? strlen(w[i].remote) + 1 : 0)) < 0) {
			rc = -1;
			break;
		}
		if (outputs)
			rc = dag_node_add_output(p->dag, node, f, w[i].remote, p->err, p->errlen);
		else
			rc = dag_node_add_input(p->dag, node, f, w[i].remote);
		if (rc) {
			p->failed = 1;
			rc = -1;
		}
	}
	parser_words_free(w, n);
	return rc;
}

/* Strips WORD and following spaces from the start of *S if present. */
static int take_word(char **s, const char *word)
{
	size_t n = strlen(word);
	if (strncmp(*s, word, n) != 0 || ((*s)[n] && !isspace((unsigned char)(*s)[n])))
		return 0;
	*s += n;
	while (isspace((unsigned char)**s))
		(*s)++;
	return 1;
}

static int command(struct parser *p, const char *text)
{
	int line = p->rule_line;
	struct buffer *out = &p->tmp;
	buffer_clear(out);
	if (parser_expand(p, text, strlen(text), out, XMODE_COMMAND, p->line, 0) < 0)
		return -1;
	char *cmd_copy = xstrdup(buffer_tostring(out));
	char *cmd = trim(cmd_copy);
	int local = take_word(&cmd, "LOCAL");
	int rc = -1;
	if (!*cmd) {
		perr(p, p->line, "empty command for the rule at line %d", line);
		goto out;
	}
	if (parser_charge(p, line, sizeof(struct dag_node) + sizeof(void *) + strlen(cmd) + 1) < 0)
		goto out;
	struct dag_node *node = dag_node_add(p->dag, line, cmd, rule_pcat(p)->cat);
	char *sub = cmd;
	if (take_word(&sub, "MAKEFLOW")) {
		struct pword *w;
		int n = parser_split_words(p, sub, p->line, 0, &w);
		if (n < 0)
			goto out;
		if (n == 0) {
			parser_words_free(w, n);
			perr(p, p->line, "MAKEFLOW needs a workflow file");
			goto out;
		}
		const char *args = sub;
		while (*args && !isspace((unsigned char)*args))
			args++; /* good enough: the first word is the file */
		while (isspace((unsigned char)*args))
			args++;
		dag_node_set_workflow(node, w[0].name, *args ? args : NULL);
		struct dag_file *f = pfile(p, line, w[0].name);
		if (f)
			dag_node_add_input(p->dag, node, f, NULL);
		parser_words_free(w, n);
		if (!f || parser_charge(p, line, strlen(sub) + 2) < 0)
			goto out;
	}
	if (add_files(p, node, p->rule_targets, 1) < 0 ||
	    add_files(p, node, p->rule_sources, 0) < 0)
		goto out;
	const char *bl = parser_lookup(p, "BATCH_LOCAL", 0);
	int b = 0;
	if (bl)
		is_true(bl, &b);
	node->local = (uint8_t)(local || b);
	for (int k = 0; k < 5; k++)
		if (p->rule_res_bits & (1u << k))
			*dag_resources_field(&node->resources, k) =
			    *dag_resources_field(&p->rule_res, k);
	node->explicit_resources = p->rule_res_bits;
	if (rule_container(p, line, node) < 0)
		goto out;
	const char *bo = parser_lookup(p, "BATCH_OPTIONS", 0);
	if (bo && *bo) {
		dag_node_set_batch_options(p->dag, node, bo);
		if (parser_charge(p, line, strlen(bo) + 1) < 0) /* at most: they are interned */
			goto out;
	}
	dag_node_set_env(node, snapshot(p));
	if (parser_budget(p, line, 0) < 0)
		goto out;
	rc = 0;
out:
	free(cmd_copy);
	rule_reset(p);
	p->last_was_command = 1;
	return rc;
}

/* CONTAINER, CONTAINER_IMAGE_TAR and CONTAINER_MODE in the rule's scope (the rule, its
 * category, the workflow): checked and set on NODE; the archive becomes an input of the rule.
 * 0, or -1 with the error at LINE. */
static int rule_container(struct parser *p, int line, struct dag_node *node)
{
	const char *image = parser_lookup(p, "CONTAINER", 0);
	const char *archive = parser_lookup(p, "CONTAINER_IMAGE_TAR", 0);
	const char *mode = parser_lookup(p, "CONTAINER_MODE", 0);
	if (image && !*image)
		image = NULL;
	if (archive && !*archive)
		archive = NULL;
	if (!image && !archive && (!mode || !*mode))
		return 0;
	static const char *const modes[] = {"", "none", "task", "shared"};
	enum dag_container_mode m = DAG_CONTAINER_UNSET;
	for (int k = 1; mode && *mode && k < 4; k++)
		if (strcmp(mode, modes[k]) == 0)
			m = (enum dag_container_mode)k;
	if (mode && *mode && m == DAG_CONTAINER_UNSET)
		return perr(p, line, "CONTAINER_MODE='%s': expected none, task or shared", mode);
	if (image && !docker_image_name_ok(image))
		return perr(
		    p, line,
		    "CONTAINER='%s': not an image name (1-%d letters, digits and . _ - / : @, "
		    "starting with a letter or digit)",
		    image, DOCKER_IMAGE_NAME_MAX);
	if (image && archive)
		return perr(
		    p, line,
		    "CONTAINER='%s' and CONTAINER_IMAGE_TAR='%s' both apply: name the image or "
		    "its archive, not both",
		    image, archive);
	if (archive) {
		struct dag_file *f = pfile(p, line, archive);
		if (!f)
			return -1;
		dag_node_add_input(p->dag, node, f, NULL);
	}
	dag_node_set_container(p->dag, node, image, archive, m);
	return parser_charge(p, line,
	                     (image ? strlen(image) : 0) + (archive ? strlen(archive) : 0));
}

/* ---- statements ------------------------------------------------------ */

/* 1 if TEXT has the shape "NAME=..." or "NAME+=...". */
static int is_assignment(const char *text)
{
	const char *eq = strchr(text, '=');
	if (!eq)
		return 0;
	const char *a = text, *b = eq > text && eq[-1] == '+' ? eq - 1 : eq;
	while (a < b && isspace((unsigned char)*a))
		a++;
	while (b > a && isspace((unsigned char)b[-1]))
		b--;
	return parser_is_name(a, (size_t)(b - a));
}

/* The error of a rule that ends without a command at LINE (its header's
 * line). A rule-local NAME=value line may have been meant as the command. */
static int rule_without_command(struct parser *p)
{
	if (p->rule_bare_line)
		return perr(p, p->rule_line,
		            "rule has no command (line %d was read as a rule-local assignment; a "
		            "command line starts with a tab)",
		            p->rule_bare_line);
	return perr(p, p->rule_line, "rule has no command");
}

/* The pending rule is followed by TEXT, which is not a command line. When
 * TEXT is not a rule header it was most likely meant as the command: say that
 * a command line starts with a tab. */
static int no_command(struct parser *p, const char *text, int is_header)
{
	if (is_header)
		return rule_without_command(p);
	const char *what = "is not indented";
	if ((unsigned char)text[0] == 0xc2 && (unsigned char)text[1] == 0xa0)
		what = "starts with a no-break space";
	int show = (int)strnlen(text, 40);
	return perr(p, p->rule_line,
	            "rule has no command (line %d '%.*s%s' %s: a command line starts with a "
	            "tab)",
	            p->line, show, text, text[show] ? "..." : "", what);
}

static int statement(struct parser *p)
{
	char *text = (char *)buffer_tostring(&p->logic);
	if (p->lead == '\t' || p->lead == ' ') {
		if (!p->rule_pending) {
			if (p->last_was_command)
				return perr(p, p->line,
				            "a rule has only one command line (join commands with "
				            "';' or '&&')");
			return perr(p, p->line, "command line outside of a rule");
		}
		return command(p, text);
	}
	p->last_was_command = 0;
	if (p->lead == '@') {
		if (!p->rule_pending)
			return perr(p, p->line,
			            "'@' line outside of a rule (it goes between a rule and its "
			            "command)");
		char *body = trim(text + 1);
		if (body[0] == '.')
			return directive(p, body, 1);
		return assignment(p, body, 1, NULL);
	}
	char *colon = header_colon(text);
	if (p->rule_pending && !colon && is_assignment(text)) {
		/* NAME=value between a rule and its command is local to the rule,
		 * as with '@' */
		if (!p->rule_bare_line)
			p->rule_bare_line = p->line;
		return assignment(p, trim(text), 1, NULL);
	}
	if (p->rule_pending)
		return no_command(p, text, colon != NULL);
	if (colon)
		return header(p, text, colon);
	char *s = trim(text);
	if (take_word(&s, "export"))
		return export_line(p, s);
	if (s[0] == '.')
		return directive(p, s, 0);
	return assignment(p, s, 0, NULL);
}

static int workflow_files(struct parser *p, const char *name, int line, int outputs)
{
	struct pvar *v = var_find(p->globals, name);
	if (!v)
		return 0;
	struct pword *w;
	int n = parser_split_words(p, v->value, line, SPLIT_SKIP_EMPTY, &w);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct dag_file *f = pfile(p, line, w[i].name);
		if (!f)
			break;
		if (outputs)
			dag_add_final_output(p->dag, f);
		else
			dag_add_extra_input(p->dag, f);
	}
	if (outputs && n == 0)
		p->dag->outputs_declared = 1;
	parser_words_free(w, n);
	return 0;
}

/* The default category takes CORES, MEMORY and DISK from the process
 * environment when the workflow does not set them (other categories fall back
 * to the default category's values). */
static int default_resources_from_environment(struct parser *p)
{
	static const int kinds[] = {0, 1, 2}; /* CORES MEMORY DISK */
	struct dag_category *c = p->dag->default_category;
	for (size_t i = 0; p->use_env && i < sizeof kinds / sizeof kinds[0]; i++) {
		int k = kinds[i];
		int64_t *f = dag_resources_field(&c->max, k);
		const char *text = getenv(resource_names[k]);
		if (*f >= 0 || !text || !*text)
			continue;
		if (workflow_resource_parse(k, text, f) != 0) {
			*f = -1;
			p->failed = 1;
			if (p->err && p->errlen)
				snprintf(p->err, p->errlen,
				         "%s: bad %s value '%s' in the environment (it gives the "
				         "default category's %s when the workflow does not)",
				         p->dag->filename, resource_names[k], text,
				         resource_names[k]);
			return -1;
		}
		debug(D_DAG, "%s: default category %s=%lld from the environment", p->dag->filename,
		      resource_names[k], (long long)*f);
	}
	return 0;
}

static struct dag *parse(struct parser *p, const struct dag_parse_options *opts)
{
	struct dag_parse_options none = {0};
	if (!opts)
		opts = &none;
	p->budget = opts->max_memory ? opts->max_memory : dag_parse_default_memory();
	p->line_capped = opts->max_line && opts->max_line < p->budget;
	p->max_line = p->line_capped ? opts->max_line : (size_t)p->budget;
	p->max_depth = opts->max_depth > 0 ? opts->max_depth : DAG_PARSE_MAX_DEPTH;
	p->expansion_capped = opts->max_expansion && opts->max_expansion < p->budget;
	p->max_expansion = p->expansion_capped ? opts->max_expansion : (size_t)p->budget;
	/* not memory but time: all substituted text together, copied once each */
	p->expanded_cap = p->expansion_capped ? (uint64_t)p->max_expansion * 256 : p->budget * 16;
	p->use_env = !opts->ignore_environment;
	buffer_init(&p->phys, p->max_line);
	buffer_init(&p->logic, p->max_line);
	buffer_init(&p->tmp, p->max_expansion);
	p->cur = pcat_get(p, DAG_DEFAULT_CATEGORY);
	rule_reset(p);
	if (p->err && p->errlen)
		p->err[0] = 0;
	for (const char *const *d = opts->defines; d && *d; d++) {
		const char *eq = strchr(*d, '=');
		char *name = xstrndup(*d, eq ? (size_t)(eq - *d) : strlen(*d));
		if (!parser_is_name(name, strlen(name)))
			perr(p, 0, "bad variable name '%s' in a definition", name);
		else
			var_set(p, 0, &p->globals, name, eq ? eq + 1 : "");
		free(name);
		if (p->failed)
			break;
	}
	int r = 0;
	while (!p->failed && (r = parser_read_line(p)) > 0)
		if (statement(p) < 0)
			break;
	if (!p->failed && p->rule_pending)
		rule_without_command(p);
	if (!p->failed)
		default_resources_from_environment(p);
	if (!p->failed)
		workflow_files(p, "MAKEFLOW_INPUTS", p->inputs_line, 0);
	if (!p->failed)
		workflow_files(p, "MAKEFLOW_OUTPUTS", p->outputs_line, 1);
	if (!p->failed && dag_finalize(p->dag, p->err, p->errlen) != 0)
		p->failed = 1;

	struct dag *d = p->dag;
	rule_reset(p);
	vars_free(p, &p->globals);
	struct pcat *c, *ctmp;
	HASH_ITER(hh, p->cats, c, ctmp)
	{
		HASH_DELETE(hh, p->cats, c);
		vars_free(p, &c->vars);
		free(c);
	}
	struct pexport *e, *etmp;
	HASH_ITER(hh, p->exports, e, etmp)
	{
		HASH_DELETE(hh, p->exports, e);
		free(e);
	}
	dag_env_unref(p->snap);
	buffer_free(&p->phys);
	buffer_free(&p->logic);
	buffer_free(&p->tmp);
	free(p->rbuf);
	if (p->failed) {
		dag_delete(d);
		return NULL;
	}
	debug(D_DAG, "%s: %d rules, %d files", d->filename, d->nnodes, d->nfiles);
	return d;
}

size_t dag_parse_default_memory(void)
{
	uint64_t budget = DAG_PARSE_MEMORY;
	static const int which[] = {RLIMIT_AS, RLIMIT_DATA};
	for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
		struct rlimit rl;
		if (getrlimit(which[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur / 2 < budget)
			budget = rl.rlim_cur / 2;
	}
	return (size_t)budget;
}

struct dag *dag_from_file(const char *path, const struct dag_parse_options *opts, char *err,
                          size_t errlen)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct parser p = {.dag = dag_create(path), .err = err, .errlen = errlen, .fp = fp};
	struct dag *d = parse(&p, opts);
	fclose(fp);
	return d;
}

struct dag *dag_from_buffer(const char *data, size_t len, const char *name,
                            const struct dag_parse_options *opts, char *err, size_t errlen)
{
	struct parser p = {.dag = dag_create(name),
	                   .err = err,
	                   .errlen = errlen,
	                   .data = data ? data : "",
	                   .data_len = data ? len : 0};
	return parse(&p, opts);
}

struct dag *dag_from_string(const char *text, const char *name,
                            const struct dag_parse_options *opts, char *err, size_t errlen)
{
	return dag_from_buffer(text, text ? strlen(text) : 0, name, opts, err, errlen);
}
