/* k8s_yaml.c: the YAML that kubeconfig files are written in, read into a jansson tree by
 * our own parser (k8s_yaml.h), so that no YAML library is needed. It reads the block style
 * (mappings, sequences, a sequence written at its key's indentation, "- key: value" items),
 * plain, single- and double-quoted scalars, literal and folded block scalars (| and >), flow
 * collections on one line ([a, b], {k: v}), comments and the document markers; anchors,
 * aliases, tags and multi-line flow or quoted values are refused with the file and line. */
#include "k8s_yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buffer.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

struct line {
	int indent;       /* spaces before the text */
	const char *text; /* after the indentation, up to (not including) the newline */
	size_t len;
	int no; /* 1-based line number */
};

struct yp {
	struct line *l;
	size_t n, pos;
	const char *name;
	char *err;
};

static void fail(struct yp *y, int no, const char *fmt, const char *arg)
{
	if (y->err)
		return;
	char *what = xasprintf(fmt, arg ? arg : "");
	y->err = xasprintf("%s:%d: %s", y->name, no, what);
	free(what);
}

/* ---- scalars -------------------------------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A plain scalar's meaning: null, a boolean, or the text. */
static json_t *plain(const char *s, size_t n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
		if (n == strlen(nulls[i]) && !memcmp(s, nulls[i], n))
			return json_null();
	if ((n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4))))
		return json_true();
	if ((n == 5 &&
	     (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5))))
		return json_false();
	return json_stringn(s, n);
}

/* Appends code point CP as UTF-8. */
static void put_utf8(struct buffer *b, uint32_t cp)
{
	char u[4];
	size_t k;
	if (cp < 0x80) {
		u[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		k = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		k = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		k = 4;
	}
	buffer_putlstring(b, u, k);
}

/* A quoted scalar starting at S[*I] (the quote); *I ends after the closing quote. */
static json_t *quoted(struct yp *y, int no, const char *s, size_t n, size_t *i)
{
	char q = s[*i];
	struct buffer b;
	buffer_init(&b, 0);
	size_t k = *i + 1;
	for (;;) {
		if (k >= n) {
			buffer_free(&b);
			fail(y, no, "a quoted value must end on its line%s", NULL);
			return NULL;
		}
		char c = s[k];
		if (c == q) {
			if (q == '\'' && k + 1 < n && s[k + 1] == '\'') { /* '' is one quote */
				buffer_putlstring(&b, "'", 1);
				k += 2;
				continue;
			}
			k++;
			break;
		}
		if (q == '"' && c == '\\' && k + 1 < n) {
			char e = s[k + 1];
			k += 2;
			static const char from[] = "0abtnvfre \"/\\";
			static const char to[] = "\0\a\b\t\n\v\f\r\x1b \"/\\";
			const char *simple = e ? strchr(from, e) : NULL;
			if (simple) {
				buffer_putlstring(&b, &to[simple - from], 1);
				continue;
			}
			int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
			uint32_t cp = 0;
			for (int d = 0; d < digits; d++) {
				int h = k < n ? str_hex_digit((unsigned char)s[k]) : -1;
				if (h < 0) {
					digits = -1;
					break;
				}
				cp = cp * 16 + (uint32_t)h;
				k++;
			}
			if (digits <= 0 || cp > 0x10FFFF) {
				buffer_free(&b);
				fail(y, no, "a bad escape in a double-quoted value%s", NULL);
				return NULL;
			}
			put_utf8(&b, cp);
			continue;
		}
		buffer_putlstring(&b, &c, 1);
		k++;
	}
	*i = k;
	json_t *v = json_stringn(buffer_tostring(&b), buffer_len(&b));
	buffer_free(&b);
	return v;
}

/* After a value: only blanks and a comment may follow on the line. */
static bool rest_is_empty(const char *s, size_t n, size_t i)
{
	while (i < n && is_blank(s[i]))
		i++;
	return i >= n || s[i] == '#';
}

/* The end of a plain scalar starting at S[I]: before " #", ": " or the end; in a flow
 * collection also before ',' ']' '}'. Trailing blanks are cut. */
static size_t plain_end(const char *s, size_t n, size_t i, bool flow)
{
	size_t k = i;
	while (k < n) {
		if (s[k] == '#' && k > i && is_blank(s[k - 1]))
			break;
		if (flow && (s[k] == ',' || s[k] == ']' || s[k] == '}'))
			break;
		if (s[k] == ':' && (k + 1 >= n || is_blank(s[k + 1]) || (flow && s[k + 1] == ',')))
			break; /* ": " never belongs to a plain value */
		k++;
	}
	while (k > i && is_blank(s[k - 1]))
		k--;
	return k;
}

static json_t *flow(struct yp *y, int no, const char *s, size_t n, size_t *i, int depth);

/* One value inside a flow collection, or the whole of an inline value when !IN_FLOW. */
static json_t *flow_value(struct yp *y, int no, const char *s, size_t n, size_t *i, int depth,
                          bool in_flow)
{
	while (*i < n && is_blank(s[*i]))
		(*i)++;
	if (*i >= n)
		return json_null();
	char c = s[*i];
	if (c == '&' || c == '*' || c == '!') {
		fail(y, no, "anchors, aliases and tags are not read here (found '%s')",
		     c == '&'   ? "&"
		     : c == '*' ? "*"
		                : "!");
		return NULL;
	}
	if (c == '"' || c == '\'')
		return quoted(y, no, s, n, i);
	if (c == '[' || c == '{')
		return flow(y, no, s, n, i, depth + 1);
	size_t e = plain_end(s, n, *i, in_flow);
	json_t *v = plain(s + *i, e - *i);
	*i = e;
	return v;
}

/* A flow collection starting at S[*I] ('[' or '{'), on one line. */
static json_t *flow(struct yp *y, int no, const char *s, size_t n, size_t *i, int depth)
{
	if (depth > K8S_YAML_MAX_DEPTH) {
		fail(y, no, "nested deeper than %s levels", "64");
		return NULL;
	}
	bool map = s[*i] == '{';
	char close = map ? '}' : ']';
	json_t *out = map ? json_object() : json_array();
	(*i)++;
	for (;;) {
		while (*i < n && is_blank(s[*i]))
			(*i)++;
		if (*i >= n) {
			fail(y, no, "a [...] or {...} value must end on its line%s", NULL);
			break;
		}
		if (s[*i] == close) {
			(*i)++;
			return out;
		}
		json_t *k = flow_value(y, no, s, n, i, depth, true);
		if (!k)
			break;
		json_t *v = NULL;
		if (map) {
			while (*i < n && is_blank(s[*i]))
				(*i)++;
			if (*i < n && s[*i] == ':') {
				(*i)++;
				v = flow_value(y, no, s, n, i, depth, true);
				if (!v) {
					json_decref(k);
					break;
				}
			} else {
				v = json_null();
			}
			if (!json_is_string(k)) {
				fail(y, no, "a key of a {...} value must be a string%s", NULL);
				json_decref(k);
				json_decref(v);
				break;
			}
			json_object_set_new(out, json_string_value(k), v);
			json_decref(k);
		} else {
			json_array_append_new(out, k);
		}
		while (*i < n && is_blank(s[*i]))
			(*i)++;
		if (*i < n && s[*i] == ',')
			(*i)++;
		else if (*i < n && s[*i] != close) {
			fail(y, no, "expected ',' or the end of a [...] or {...} value%s", NULL);
			break;
		}
	}
	json_decref(out);
	return NULL;
}

/* ---- block structure ------------------------------------------------------------------ */

/* Where the ':' of a "KEY: value" entry is in L (not inside quotes), or -1. */
static long entry_colon(const struct line *l)
{
	const char *s = l->text;
	size_t n = l->len, i = 0;
	if (n && (s[0] == '"' || s[0] == '\'')) {
		char q = s[0];
		for (i = 1; i < n; i++) {
			if (s[i] == q) {
				if (q == '\'' && i + 1 < n && s[i + 1] == '\'') {
					i++;
					continue;
				}
				break;
			}
			if (q == '"' && s[i] == '\\')
				i++;
		}
		i++;
		while (i < n && is_blank(s[i]))
			i++;
		return i < n && s[i] == ':' && (i + 1 >= n || is_blank(s[i + 1])) ? (long)i : -1;
	}
	if (n && (s[0] == '[' || s[0] == '{' || s[0] == '#'))
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] == '#' && i > 0 && is_blank(s[i - 1]))
			return -1;
		if (s[i] == ':' && (i + 1 >= n || is_blank(s[i + 1])))
			return (long)i;
	}
	return -1;
}

static bool is_item(const struct line *l)
{
	return l->len >= 1 && l->text[0] == '-' && (l->len == 1 || is_blank(l->text[1]));
}

static json_t *block(struct yp *y, int depth);

/* Moves past empty and comment-only lines (kept for block scalars only). */
static void skip_empty(struct yp *y)
{
	while (y->pos < y->n && y->l[y->pos].len == 0)
		y->pos++;
}

/* A block scalar (| or >) introduced on line NO with INDICATOR, its lines those after the
 * current one indented more than PARENT. */
static json_t *block_scalar(struct yp *y, int no, const char *indicator, size_t ilen, int parent)
{
	bool folded = indicator[0] == '>';
	char chomp = 0;
	for (size_t k = 1; k < ilen && !is_blank(indicator[k]) && indicator[k] != '#'; k++) {
		if (indicator[k] == '-' || indicator[k] == '+')
			chomp = indicator[k];
		else if (indicator[k] < '1' || indicator[k] > '9') {
			fail(y, no, "a bad block scalar indicator%s", NULL);
			return NULL;
		}
	}
	struct buffer b;
	buffer_init(&b, 0);
	int ind = -1;
	size_t blank_run = 0;
	bool first = true;
	while (y->pos < y->n) {
		const struct line *l = &y->l[y->pos];
		if (l->len == 0) { /* an empty line belongs to the scalar */
			blank_run++;
			y->pos++;
			continue;
		}
		if (l->indent <= parent)
			break;
		if (ind < 0)
			ind = l->indent;
		if (l->indent < ind)
			break;
		if (!first) {
			if (folded && blank_run == 0)
				buffer_putlstring(&b, " ", 1);
			else
				buffer_putlstring(&b, "\n", 1);
		}
		for (size_t k = 0; k < blank_run; k++)
			buffer_putlstring(&b, "\n", 1);
		blank_run = 0;
		for (int k = ind; k < l->indent; k++)
			buffer_putlstring(&b, " ", 1);
		buffer_putlstring(&b, l->text, l->len);
		first = false;
		y->pos++;
	}
	if (!first && chomp != '-')
		buffer_putlstring(&b, "\n", 1);
	if (chomp == '+')
		for (size_t k = 0; k < blank_run; k++)
			buffer_putlstring(&b, "\n", 1);
	json_t *v = json_stringn(buffer_tostring(&b), buffer_len(&b));
	buffer_free(&b);
	return v;
}

/* The value after "KEY:" or "- " (the text from S[I] on line L), whose nested block, if any,
 * is on the following lines indented more than PARENT (or, for a key, a sequence at PARENT). */
static json_t *inline_or_nested(struct yp *y, const struct line *l, size_t i, int parent,
                                bool after_key, int depth)
{
	const char *s = l->text;
	size_t n = l->len;
	while (i < n && is_blank(s[i]))
		i++;
	if (i >= n || s[i] == '#') {
		skip_empty(y);
		if (y->pos < y->n) {
			const struct line *nx = &y->l[y->pos];
			if (nx->indent > parent ||
			    (after_key && nx->indent == parent && is_item(nx)))
				return block(y, depth + 1);
		}
		return json_null();
	}
	if (s[i] == '|' || s[i] == '>')
		return block_scalar(y, l->no, s + i, n - i, parent);
	json_t *v = flow_value(y, l->no, s, n, &i, depth, false);
	if (v && !rest_is_empty(s, n, i)) {
		json_decref(v);
		fail(y, l->no, "unexpected text after a value%s", NULL);
		return NULL;
	}
	return v;
}

static json_t *mapping(struct yp *y, int ind, int depth)
{
	json_t *out = json_object();
	while (!y->err && (skip_empty(y), y->pos < y->n)) {
		struct line *l = &y->l[y->pos];
		if (l->indent < ind)
			break;
		if (l->indent > ind) {
			fail(y, l->no, "unexpected indentation%s", NULL);
			break;
		}
		if (is_item(l)) /* a sequence at its key's indentation ends the mapping */
			break;
		long c = entry_colon(l);
		if (c < 0) {
			fail(y, l->no, "expected \"key: value\"%s", NULL);
			break;
		}
		size_t i = 0;
		json_t *k = NULL;
		if (l->text[0] == '"' || l->text[0] == '\'')
			k = quoted(y, l->no, l->text, l->len, &i);
		else
			k = plain(l->text, (size_t)c);
		if (!k)
			break;
		char *key = json_is_string(k) ? xstrdup(json_string_value(k))
		            : json_is_null(k) ? xstrdup("null")
		            : json_is_true(k) ? xstrdup("true")
		                              : xstrdup("false");
		json_decref(k);
		if (json_object_get(out, key)) {
			fail(y, l->no, "key \"%s\" given twice", key);
			free(key);
			break;
		}
		y->pos++;
		json_t *v = inline_or_nested(y, l, (size_t)c + 1, ind, true, depth);
		if (!v) {
			free(key);
			break;
		}
		json_object_set_new(out, key, v);
		free(key);
	}
	if (y->err) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *sequence(struct yp *y, int ind, int depth)
{
	json_t *out = json_array();
	while (!y->err && (skip_empty(y), y->pos < y->n)) {
		struct line *l = &y->l[y->pos];
		if (l->indent < ind)
			break;
		if (l->indent > ind) {
			fail(y, l->no, "unexpected indentation%s", NULL);
			break;
		}
		if (!is_item(l))
			break;
		size_t i = 1;
		while (i < l->len && is_blank(l->text[i]))
			i++;
		json_t *v;
		struct line rest = {ind + (int)i, l->text + i, l->len - i, l->no};
		if (i < l->len && l->text[i] != '#' &&
		    (is_item(&rest) || entry_colon(&rest) >= 0)) {
			/* "- key: value" or "- - x": a nested block starting on this line, at the
			 * column of its first character */
			*l = rest;
			v = block(y, depth + 1);
		} else {
			y->pos++;
			v = inline_or_nested(y, l, i, ind, false, depth);
		}
		if (!v)
			break;
		json_array_append_new(out, v);
	}
	if (y->err) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* The block node at the current line. */
static json_t *block(struct yp *y, int depth)
{
	if (depth > K8S_YAML_MAX_DEPTH) {
		fail(y, y->l[y->pos].no, "nested deeper than %s levels", "64");
		return NULL;
	}
	struct line *l = &y->l[y->pos];
	if (is_item(l))
		return sequence(y, l->indent, depth);
	if (entry_colon(l) >= 0)
		return mapping(y, l->indent, depth);
	/* a lone value: one line */
	y->pos++;
	size_t i = 0;
	json_t *v = flow_value(y, l->no, l->text, l->len, &i, depth, false);
	if (v && !rest_is_empty(l->text, l->len, i)) {
		json_decref(v);
		fail(y, l->no, "unexpected text after a value%s", NULL);
		return NULL;
	}
	return v;
}

/* ---- lines ------------------------------------------------------------------------------ */

/* Splits TEXT into lines of the first document: blank and comment-only lines are kept empty
 * (len 0; block scalars need them), a tab in the indentation is refused. */
static int split(struct yp *y, const char *text, size_t len)
{
	size_t cap = 0;
	bool started = false;
	int no = 0;
	for (size_t p = 0; p < len;) {
		const char *s = text + p;
		const char *nl = memchr(s, '\n', len - p);
		size_t n = nl ? (size_t)(nl - s) : len - p;
		p += n + (nl ? 1 : 0);
		no++;
		if (n && s[n - 1] == '\r')
			n--;
		size_t ind = 0;
		while (ind < n && s[ind] == ' ')
			ind++;
		if (ind < n && s[ind] == '\t') {
			size_t k = ind;
			while (k < n && is_blank(s[k]))
				k++;
			if (k < n && s[k] != '#') {
				fail(y, no, "a tab in the indentation%s", NULL);
				return -1;
			}
		}
		const char *t = s + ind;
		size_t tl = n - ind;
		while (tl && is_blank(t[tl - 1]))
			tl--;
		bool comment = tl == 0 || t[0] == '#';
		if (ind == 0 && !comment && tl >= 3 &&
		    (!memcmp(t, "---", 3) || !memcmp(t, "...", 3)) && (tl == 3 || is_blank(t[3]))) {
			if (started || t[0] == '.')
				break; /* the first document only */
			started = true;
			continue;
		}
		if (ind == 0 && !started && tl && t[0] == '%')
			continue; /* a directive */
		if (!comment)
			started = true;
		if (y->n == cap) {
			cap = cap ? 2 * cap : 64;
			y->l = xrealloc(y->l, cap * sizeof *y->l);
		}
		y->l[y->n++] = (struct line){(int)ind, t, comment ? 0 : tl, no};
	}
	return 0;
}

json_t *k8s_yaml_parse(const char *text, size_t len, const char *name, char **err)
{
	struct yp y = {.name = name};
	*err = NULL;
	json_t *out = NULL;
	if (memchr(text, '\0', len)) {
		*err = xasprintf("%s: a NUL byte: not a YAML text", name);
		return NULL;
	}
	/* a kubeconfig written as JSON (which is YAML in flow style, over many lines) */
	size_t f = 0;
	while (f < len && (is_blank(text[f]) || text[f] == '\n' || text[f] == '\r'))
		f++;
	if (f < len && (text[f] == '{' || text[f] == '[')) {
		json_error_t je;
		json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		if (!j)
			*err = xasprintf("%s:%d: %s", name, je.line, je.text);
		return j;
	}
	if (split(&y, text, len) == 0) {
		while (y.pos < y.n && y.l[y.pos].len == 0)
			y.pos++;
		if (y.pos >= y.n) {
			out = json_object(); /* an empty document */
		} else {
			out = block(&y, 0);
			while (out && y.pos < y.n && y.l[y.pos].len == 0)
				y.pos++;
			if (out && y.pos < y.n) {
				fail(&y, y.l[y.pos].no, "unexpected text at the top level%s", NULL);
				json_decref(out);
				out = NULL;
			}
		}
	}
	free(y.l);
	if (!out) {
		*err = y.err ? y.err : xasprintf("%s: cannot parse it as YAML", name);
		return NULL;
	}
	free(y.err);
	if (json_is_null(out)) {
		json_decref(out);
		out = json_object();
	}
	return out;
}

int k8s_read_file(const char *path, size_t cap, char **text, size_t *len)
{
	*text = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct buffer b;
	buffer_init(&b, cap);
	char chunk[8192];
	int e = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			break;
		}
		if (n == 0)
			break;
		e = buffer_putlstring(&b, chunk, (size_t)n);
		if (e < 0)
			break;
	}
	close(fd);
	if (e < 0) {
		buffer_free(&b);
		return e;
	}
	*len = buffer_len(&b);
	*text = xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	return 0;
}

json_t *k8s_yaml_load(const char *path, char **err)
{
	char *text = NULL;
	size_t len = 0;
	int e = k8s_read_file(path, K8S_YAML_MAX_BYTES, &text, &len);
	if (e < 0) {
		*err = xasprintf("%s: %s", path,
		                 e == HTC_ETOOBIG ? "larger than 4 MiB" : htc_strerror(e));
		return NULL;
	}
	json_t *j = k8s_yaml_parse(text, len, path, err);
	free(text);
	return j;
}
