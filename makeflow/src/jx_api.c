/* jx_api.c: the public entry points of jx.h: evaluating a whole JX document
 * (with its top-level "define" section and command-line overrides), a single
 * expression, a file, or a --jx-args file, and formatting errors. */
#include "jx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "jx_internal.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

void jx_error_vset(struct jx_error *err, const char *file, int line, int column, const char *fmt,
                   va_list ap)
{
	snprintf(err->file, sizeof err->file, "%s", file ? file : "");
	err->line = line;
	err->column = column;
	vsnprintf(err->message, sizeof err->message, fmt, ap);
}

void jx_error_set(struct jx_error *err, const char *file, int line, int column, const char *fmt,
                  ...)
{
	va_list ap;
	va_start(ap, fmt);
	jx_error_vset(err, file, line, column, fmt, ap);
	va_end(ap);
}

char *jx_error_format(const struct jx_error *err, char *buf, size_t size)
{
	if (!size)
		return buf;
	if (err->line > 0)
		snprintf(buf, size, "%s:%d:%d: %s", err->file, err->line, err->column,
		         err->message);
	else
		snprintf(buf, size, "%s: %s", err->file, err->message);
	return buf;
}

static int is_define_key(const struct jx_node *k)
{
	return k->kind == JXN_LITERAL && json_is_string(k->value) &&
	       !strcmp(json_string_value(k->value), "define");
}

/* Binds one define entry: an override from `defines` wins over the text. */
static int bind_define(struct jx_eval *ev, const struct jx_node *at, json_t *symbols, json_t *defs,
                       json_t *defines, const char *name, json_t *value)
{
	json_t *over = defines ? json_object_get(defines, name) : NULL;
	if (over) {
		json_decref(value);
		value = json_incref(over);
	}
	if (json_object_get(defs, name)) {
		json_decref(value);
		return jx_fail(ev, at, "duplicate define \"%.100s\"", name);
	}
	json_object_set(symbols, name, value);
	return jx_object_add(ev, at, defs, name, value);
}

/* Evaluates the "define" member's value into `defs`, entry by entry, each
 * entry seeing the ones before it. */
static int eval_defines(struct jx_eval *ev, const struct jx_node *dn, json_t *symbols, json_t *defs,
                        json_t *defines)
{
	if (dn->kind != JXN_OBJECT) {
		json_t *v = jx_eval_node(ev, dn);
		if (!v)
			return -1;
		int rc = 0;
		if (!json_is_object(v)) {
			rc = jx_fail(ev, dn, "\"define\" must be an object, got a %s",
			             jx_type_name(v));
		} else {
			const char *k;
			json_t *x;
			json_object_foreach(v, k, x)
			{
				if ((rc = bind_define(ev, dn, symbols, defs, defines, k,
				                      json_incref(x))) < 0)
					break;
			}
		}
		json_decref(v);
		return rc;
	}
	for (size_t i = 0; i + 1 < dn->nkids; i += 2) {
		json_t *key = jx_eval_node(ev, dn->kids[i]);
		if (!key)
			return -1;
		if (!json_is_string(key)) {
			jx_fail(ev, dn->kids[i], "define name must be a string, got a %s",
			        jx_type_name(key));
			json_decref(key);
			return -1;
		}
		const char *name = json_string_value(key);
		json_t *value;
		if (defines && json_object_get(defines, name))
			value = json_incref(json_object_get(defines, name));
		else
			value = jx_eval_node(ev, dn->kids[i + 1]);
		int rc =
		    value ? bind_define(ev, dn->kids[i], symbols, defs, defines, name, value) : -1;
		json_decref(key);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* A top-level object: "define" first, then the other members in order. */
static json_t *eval_document(struct jx_eval *ev, const struct jx_node *root, json_t *symbols,
                             json_t *defines)
{
	const struct jx_node *dn = NULL;
	for (size_t i = 0; i + 1 < root->nkids; i += 2) {
		if (!is_define_key(root->kids[i]))
			continue;
		if (dn) {
			jx_fail(ev, root->kids[i], "duplicate key \"define\"");
			return NULL;
		}
		dn = root->kids[i + 1];
	}
	json_t *defs = json_object();
	json_t *out = json_object();
	jx_pos_note(ev->pos, out, root->line, root->column);
	ev->symbols = symbols;
	if (dn && eval_defines(ev, dn, symbols, defs, defines) < 0)
		goto fail;
	for (size_t i = 0; i + 1 < root->nkids; i += 2) {
		const struct jx_node *kn = root->kids[i], *vn = root->kids[i + 1];
		if (vn == dn) {
			if (jx_object_add(ev, kn, out, "define", json_incref(defs)) < 0)
				goto fail;
			continue;
		}
		json_t *key = jx_eval_node(ev, kn);
		if (!key)
			goto fail;
		int rc = -1;
		if (!json_is_string(key))
			jx_fail(ev, kn, "object key must be a string, got a %s", jx_type_name(key));
		else if (json_object_get(out, json_string_value(key)))
			jx_fail(ev, kn, "duplicate key \"%.100s\"", json_string_value(key));
		else {
			json_t *v = jx_eval_node(ev, vn);
			if (v)
				jx_pos_note_member(ev->pos, out, json_string_value(key), v,
				                   vn->line, vn->column);
			rc = v ? jx_object_add(ev, vn, out, json_string_value(key), v) : -1;
		}
		json_decref(key);
		if (rc < 0)
			goto fail;
	}
	json_decref(defs);
	return out;
fail:
	json_decref(defs);
	json_decref(out);
	return NULL;
}

/* Refuses the first node of AST that plain JSON does not have. */
static int check_json_only(const struct jx_ast *ast, struct jx_error *err, const char *file)
{
	for (size_t i = 0; i < ast->nnodes; i++) {
		const struct jx_node *n = ast->nodes[i];
		if (n->kind == JXN_LITERAL || n->kind == JXN_LIST || n->kind == JXN_OBJECT)
			continue;
		const char *what = n->kind == JXN_SYMBOL ? "a symbol"
		                   : n->kind == JXN_CALL ? "a function call"
		                   : n->kind == JXN_COMP || n->kind == JXN_FOR || n->kind == JXN_IF
		                       ? "a comprehension"
		                       : "an expression";
		jx_error_set(err, file, n->line, n->column,
		             "%s%s%s is not plain JSON (use --jx to evaluate JX)", what,
		             n->name ? " " : "", n->name ? n->name : "");
		return -1;
	}
	return 0;
}

/* Parses and evaluates text; `document` selects the "define" handling. With
 * json_only (and no "define" handling) the text must be plain JSON; with pos,
 * positions of values are noted there. */
static json_t *eval_text_at(const char *text, const char *file, json_t *symbols, int document,
                            int json_only, struct jx_pos *pos, struct jx_error *err);

static json_t *eval_text(const char *text, const char *file, json_t *symbols, int document,
                         struct jx_error *err)
{
	return eval_text_at(text, file, symbols, document, 0, NULL, err);
}

static json_t *eval_text_at(const char *text, const char *file, json_t *symbols, int document,
                            int json_only, struct jx_pos *pos, struct jx_error *err)
{
	struct jx_error local;
	if (!err)
		err = &local;
	memset(err, 0, sizeof *err);
	if (!text) {
		jx_error_set(err, file, 0, 0, "no text to evaluate");
		return NULL;
	}
	if (symbols && !json_is_object(symbols)) {
		jx_error_set(err, file, 0, 0, "symbols must be a JSON object");
		return NULL;
	}
	struct jx_ast *ast = jx_parse(text, file, err);
	if (!ast)
		return NULL;
	if (json_only && check_json_only(ast, err, file) < 0) {
		jx_ast_delete(ast);
		return NULL;
	}
	struct jx_eval ev = {0};
	ev.file = file;
	ev.err = err;
	ev.pos = pos;
	json_t *result;
	if (document && ast->root->kind == JXN_OBJECT) {
		json_t *scope = symbols ? json_copy(symbols) : json_object();
		result = eval_document(&ev, ast->root, scope, symbols);
		json_decref(scope);
	} else {
		ev.symbols = symbols;
		result = jx_eval_node(&ev, ast->root);
	}
	if (result && jx_check_value(&ev, ast->root, result) < 0) {
		json_decref(result);
		result = NULL;
	}
	debug(D_JX, "%s: %s after %llu steps, %llu elements, %llu string bytes", file,
	      result ? "evaluated" : "failed", (unsigned long long)ev.work,
	      (unsigned long long)ev.elements, (unsigned long long)ev.bytes);
	jx_ast_delete(ast);
	return result;
}

json_t *jx_eval_string(const char *text, const char *filename, json_t *defines,
                       struct jx_error *err)
{
	return eval_text(text, filename ? filename : "<string>", defines, 1, err);
}

json_t *jx_eval_expr(const char *text, json_t *symbols, struct jx_error *err)
{
	return eval_text(text, "<expression>", symbols, 0, err);
}

/* Reads a whole file (at most JX_MAX_FILE bytes, no NUL bytes). Returns the
 * NUL-terminated text (caller frees) or NULL with *err filled. */
static char *read_file(const char *path, struct jx_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		jx_error_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *text = xmalloc(cap);
	for (;;) {
		if (len + 1 == cap) {
			if (cap > JX_MAX_FILE) {
				jx_error_set(err, path, 0, 0, "file larger than %u MiB",
				             JX_MAX_FILE >> 20);
				goto fail;
			}
			VEC_RESERVE(text, cap, cap + 1);
		}
		size_t n = fread(text + len, 1, cap - 1 - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		jx_error_set(err, path, 0, 0, "cannot read: %s", strerror(errno));
		goto fail;
	}
	if (len > JX_MAX_FILE) {
		jx_error_set(err, path, 0, 0, "file larger than %u MiB", JX_MAX_FILE >> 20);
		goto fail;
	}
	text[len] = 0;
	const char *nul = memchr(text, 0, len);
	if (nul) {
		int line = 1, column = 1;
		for (const char *c = text; c < nul; c++) {
			if (*c == '\n') {
				line++;
				column = 1;
			} else {
				column++;
			}
		}
		jx_error_set(err, path, line, column, "NUL byte in input");
		goto fail;
	}
	fclose(f);
	return text;
fail:
	fclose(f);
	free(text);
	return NULL;
}

json_t *jx_eval_file(const char *path, json_t *defines, struct jx_error *err)
{
	struct jx_error local;
	if (!err)
		err = &local;
	memset(err, 0, sizeof *err);
	char *text = read_file(path, err);
	if (!text)
		return NULL;
	json_t *v = jx_eval_string(text, path, defines, err);
	free(text);
	return v;
}

json_t *jx_eval_file_at(const char *path, json_t *defines, int json_only, struct jx_pos **pos,
                        struct jx_error *err)
{
	struct jx_error local;
	if (!err)
		err = &local;
	memset(err, 0, sizeof *err);
	if (pos)
		*pos = NULL;
	char *text = read_file(path, err);
	if (!text)
		return NULL;
	struct jx_pos *p = pos ? jx_pos_create() : NULL;
	json_t *v =
	    eval_text_at(text, path, json_only ? NULL : defines, !json_only, json_only, p, err);
	free(text);
	if (!v)
		jx_pos_delete(p);
	else if (pos)
		*pos = p;
	return v;
}

json_t *jx_load_args(const char *path, struct jx_error *err)
{
	struct jx_error local;
	if (!err)
		err = &local;
	json_t *v = jx_eval_file(path, NULL, err);
	if (v && !json_is_object(v)) {
		jx_error_set(err, path, 0, 0, "arguments file must hold an object, not a %s",
		             jx_type_name(v));
		json_decref(v);
		return NULL;
	}
	return v;
}
