/* jx_funcs.c: the built-in functions of JX (range, format, template, join,
 * len, keys, values, items, basename, dirname, ceil, floor, escape, select,
 * project, listdir). Arity is checked by the parser; each function checks
 * its argument types and charges its work to the evaluation limits. */
#include "jx_internal.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* ---- helpers -------------------------------------------------------------- */

/* A growing output string. */
struct out {
	char *s;
	size_t len, cap;
};

static void out_put(struct out *o, const char *data, size_t n)
{
	VEC_RESERVE(o->s, o->cap, o->len + n + 1);
	memcpy(o->s + o->len, data, n);
	o->len += n;
	o->s[o->len] = 0;
}

static void out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

/* Turns the buffer into a string value (charging it) and frees it. */
static json_t *out_finish(struct jx_eval *ev, const struct jx_node *at, struct out *o)
{
	json_t *r = jx_make_string(ev, at, o->s ? o->s : "", o->len);
	free(o->s);
	return r;
}

/* Position of argument i for messages (the call itself if absent). */
static const struct jx_node *argn(const struct jx_node *call, size_t i)
{
	return i < call->nkids ? call->kids[i] : call;
}

static int need(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t i,
                json_type type, const char *what)
{
	if (json_typeof(args[i]) == type)
		return 0;
	return jx_fail(ev, argn(call, i), "%s(): argument %zu must be %s, got a %s",
	               call->func->name, i + 1, what, jx_type_name(args[i]));
}

/* ---- range, len, keys, values, items --------------------------------------------- */

static json_t *fn_range(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	json_int_t v[3] = {0, 0, 1};
	for (size_t i = 0; i < n; i++) {
		if (need(ev, call, args, i, JSON_INTEGER, "an integer") < 0)
			return NULL;
		v[n == 1 ? 1 : i] = json_integer_value(args[i]);
	}
	json_int_t a = v[0], b = v[1], step = v[2];
	if (step == 0) {
		jx_fail(ev, argn(call, 2), "range(): step must not be zero");
		return NULL;
	}
	uint64_t count = 0;
	if (step > 0 && a < b)
		count = ((uint64_t)b - (uint64_t)a - 1) / (uint64_t)step + 1;
	else if (step < 0 && a > b)
		count = ((uint64_t)a - (uint64_t)b - 1) / (0 - (uint64_t)step) + 1;
	if (count > JX_MAX_ELEMENTS) {
		jx_fail(ev, call, "range(): %llu elements is more than the limit of %d",
		        (unsigned long long)count, JX_MAX_ELEMENTS);
		return NULL;
	}
	json_t *r = json_array();
	for (uint64_t i = 0; i < count; i++) {
		json_int_t x = (json_int_t)((uint64_t)a + i * (uint64_t)step);
		if (jx_list_add(ev, call, r, json_integer(x)) < 0) {
			json_decref(r);
			return NULL;
		}
	}
	return r;
}

static json_t *fn_len(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	json_t *x = args[0];
	if (json_is_array(x))
		return json_integer((json_int_t)json_array_size(x));
	if (json_is_object(x))
		return json_integer((json_int_t)json_object_size(x));
	if (json_is_string(x))
		return json_integer((json_int_t)json_string_length(x));
	jx_fail(ev, argn(call, 0), "len(): needs a list, object or string, got a %s",
	        jx_type_name(x));
	return NULL;
}

/* keys (what 0), values (1), items (2) */
static json_t *object_parts(struct jx_eval *ev, const struct jx_node *call, json_t **args, int what)
{
	if (need(ev, call, args, 0, JSON_OBJECT, "an object") < 0)
		return NULL;
	json_t *r = json_array();
	const char *k;
	json_t *v;
	json_object_foreach(args[0], k, v)
	{
		json_t *item;
		if (what == 0) {
			item = jx_make_string(ev, call, k, strlen(k));
		} else if (what == 1) {
			item = json_incref(v);
		} else {
			item = json_array();
			json_t *ks = jx_make_string(ev, call, k, strlen(k));
			if (!ks || jx_list_add(ev, call, item, ks) < 0 ||
			    jx_list_add(ev, call, item, json_incref(v)) < 0) {
				json_decref(item);
				item = NULL;
			}
		}
		if (!item || jx_list_add(ev, call, r, item) < 0) {
			json_decref(r);
			return NULL;
		}
	}
	return r;
}

static json_t *fn_keys(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	return object_parts(ev, call, args, 0);
}

static json_t *fn_values(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	return object_parts(ev, call, args, 1);
}

static json_t *fn_items(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	return object_parts(ev, call, args, 2);
}

/* ---- format, template, join, escape ----------------------------------------------- */

#define FORMAT_MAX_WIDTH 4096

static json_t *fn_format(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	const char *f = json_string_value(args[0]);
	struct out o = {0};
	size_t next = 1;
	while (*f) {
		if (*f != '%') {
			size_t run = strcspn(f, "%");
			out_put(&o, f, run);
			f += run;
			continue;
		}
		if (f[1] == '%') {
			out_put(&o, "%", 1);
			f += 2;
			continue;
		}
		/* %[flags][width][.precision]conversion */
		char spec[32];
		size_t sl = 0;
		spec[sl++] = '%';
		const char *p = f + 1;
		while (*p && strchr("-+ 0#", *p) && sl < 8)
			spec[sl++] = *p++;
		long width = 0, prec = -1;
		while (*p >= '0' && *p <= '9' && width <= FORMAT_MAX_WIDTH)
			width = width * 10 + (*p++ - '0');
		if (*p == '.') {
			p++;
			prec = 0;
			while (*p >= '0' && *p <= '9' && prec <= FORMAT_MAX_WIDTH)
				prec = prec * 10 + (*p++ - '0');
		}
		if (width > FORMAT_MAX_WIDTH || prec > FORMAT_MAX_WIDTH) {
			jx_fail(ev, call, "format(): width or precision above %d",
			        FORMAT_MAX_WIDTH);
			goto fail;
		}
		spec[sl] = 0;
		char conv = *p;
		if (!conv || !strchr("dsfge", conv)) {
			jx_fail(ev, call, "format(): unsupported conversion '%%%.1s'", p);
			goto fail;
		}
		if ((conv == 's' && strspn(spec + 1, "-") != sl - 1) ||
		    (conv == 'd' && memchr(spec, '#', sl))) {
			jx_fail(ev, call, "format(): flag not allowed with '%%%c'", conv);
			goto fail;
		}
		if (width)
			sl += (size_t)snprintf(spec + sl, sizeof spec - sl, "%ld", width);
		if (prec >= 0)
			sl += (size_t)snprintf(spec + sl, sizeof spec - sl, ".%ld", prec);
		if (next >= n) {
			jx_fail(ev, call, "format(): not enough arguments for the format");
			goto fail;
		}
		json_t *a = args[next];
		const struct jx_node *an = argn(call, next);
		next++;
		char *text = NULL;
		if (conv == 'd') {
			if (!json_is_integer(a)) {
				jx_fail(ev, an, "format(): %%d needs an integer, got a %s",
				        jx_type_name(a));
				goto fail;
			}
			snprintf(spec + sl, sizeof spec - sl, "%s", JSON_INTEGER_FORMAT);
			text = xasprintf(spec, json_integer_value(a));
		} else if (conv == 's') {
			char *s = jx_scalar_text(ev, an, a, "format");
			if (!s)
				goto fail;
			snprintf(spec + sl, sizeof spec - sl, "s");
			text = xasprintf(spec, s);
			free(s);
		} else {
			if (!json_is_number(a)) {
				jx_fail(ev, an, "format(): %%%c needs a number, got a %s", conv,
				        jx_type_name(a));
				goto fail;
			}
			snprintf(spec + sl, sizeof spec - sl, "%c", conv);
			text = xasprintf(spec, json_number_value(a));
		}
		out_str(&o, text);
		free(text);
		f = p + 1;
		if (jx_charge_work(ev, call, 1) < 0 || o.len > JX_MAX_BYTES) {
			jx_charge_bytes(ev, call, o.len);
			goto fail;
		}
	}
	if (next < n) {
		jx_fail(ev, argn(call, next), "format(): %zu argument%s not used by the format",
		        n - next, n - next == 1 ? "" : "s");
		goto fail;
	}
	return out_finish(ev, call, &o);
fail:
	free(o.s);
	return NULL;
}

static int is_name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

static json_t *fn_template(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0 ||
	    (n > 1 && need(ev, call, args, 1, JSON_OBJECT, "an object") < 0))
		return NULL;
	const char *s = json_string_value(args[0]);
	struct out o = {0};
	while (*s) {
		size_t run = strcspn(s, "{}");
		out_put(&o, s, run);
		s += run;
		if (!*s)
			break;
		if (s[0] == s[1]) { /* "{{" or "}}" */
			out_put(&o, s, 1);
			s += 2;
			continue;
		}
		if (*s == '}') {
			jx_fail(ev, argn(call, 0), "template(): unmatched '}' (write '}}')");
			goto fail;
		}
		const char *name = ++s;
		while (is_name_char(*s, s == name))
			s++;
		if (*s != '}' || s == name) {
			jx_fail(ev, argn(call, 0),
			        "template(): '{' must be followed by a name and '}' (write '{{')");
			goto fail;
		}
		char *key = xstrndup(name, (size_t)(s - name));
		s++;
		json_t *v = n > 1 ? json_object_get(args[1], key) : NULL;
		if (!v)
			v = jx_lookup(ev, key);
		if (!v) {
			jx_fail(ev, argn(call, 0), "template(): undefined name '%.100s'", key);
			free(key);
			goto fail;
		}
		free(key);
		char *text = jx_scalar_text(ev, argn(call, 0), v, "template");
		if (!text)
			goto fail;
		out_str(&o, text);
		free(text);
		if (o.len > JX_MAX_BYTES) {
			jx_charge_bytes(ev, call, o.len);
			goto fail;
		}
	}
	return out_finish(ev, call, &o);
fail:
	free(o.s);
	return NULL;
}

static json_t *fn_join(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	if (need(ev, call, args, 0, JSON_ARRAY, "a list") < 0 ||
	    (n > 1 && need(ev, call, args, 1, JSON_STRING, "a string") < 0))
		return NULL;
	const char *sep = n > 1 ? json_string_value(args[1]) : " ";
	struct out o = {0};
	for (size_t i = 0; i < json_array_size(args[0]); i++) {
		json_t *x = json_array_get(args[0], i);
		if (json_is_array(x) || json_is_object(x)) {
			jx_fail(ev, argn(call, 0), "join(): item %zu is a %s, not text", i,
			        jx_type_name(x));
			goto fail;
		}
		char *text = jx_scalar_text(ev, call, x, "join");
		if (i)
			out_str(&o, sep);
		out_str(&o, text);
		free(text);
		if (o.len > JX_MAX_BYTES) {
			jx_charge_bytes(ev, call, o.len);
			goto fail;
		}
	}
	return out_finish(ev, call, &o);
fail:
	free(o.s);
	return NULL;
}

static json_t *fn_escape(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	struct out o = {0};
	out_put(&o, "'", 1);
	for (const char *s = json_string_value(args[0]); *s; s++) {
		if (*s == '\'')
			out_str(&o, "'\\''");
		else
			out_put(&o, s, 1);
	}
	out_put(&o, "'", 1);
	return out_finish(ev, call, &o);
}

/* ---- paths ------------------------------------------------------------------ */

static json_t *fn_basename(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	const char *s = json_string_value(args[0]);
	size_t end = strlen(s);
	if (end == 0)
		return jx_make_string(ev, call, ".", 1);
	while (end > 1 && s[end - 1] == '/')
		end--;
	if (end == 1 && s[0] == '/')
		return jx_make_string(ev, call, "/", 1);
	size_t start = end;
	while (start > 0 && s[start - 1] != '/')
		start--;
	return jx_make_string(ev, call, s + start, end - start);
}

static json_t *fn_dirname(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	const char *s = json_string_value(args[0]);
	size_t end = strlen(s);
	while (end > 1 && s[end - 1] == '/')
		end--;
	while (end > 0 && s[end - 1] != '/')
		end--;
	if (end == 0)
		return jx_make_string(ev, call, ".", 1);
	while (end > 1 && s[end - 1] == '/')
		end--;
	return jx_make_string(ev, call, s, end);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* fetch(path): the JSON document in a local file, as CCTools' fetch reads
 * one. It is read as plain JSON, never evaluated, so a file cannot fetch
 * itself without end; URLs are refused (no network access here). */
static json_t *fn_fetch(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	const char *path = json_string_value(args[0]);
	if (strstr(path, "://")) {
		jx_fail(ev, argn(call, 0),
		        "fetch(): \"%.200s\" is a URL; only local files can be fetched here "
		        "(download it first)",
		        path);
		return NULL;
	}
	struct stat st;
	if (stat(path, &st) == 0 && jx_charge_bytes(ev, call, (size_t)st.st_size) < 0)
		return NULL;
	struct jx_error err;
	json_t *v = jx_eval_file_at(path, NULL, 1, NULL, &err);
	if (!v) {
		char msg[sizeof err.message + sizeof err.file + 32];
		jx_error_format(&err, msg, sizeof msg);
		jx_fail(ev, argn(call, 0), "fetch(): %s", msg);
	}
	return v;
}

static json_t *fn_listdir(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_STRING, "a string") < 0)
		return NULL;
	const char *path = json_string_value(args[0]);
	DIR *d = opendir(path);
	if (!d) {
		jx_fail(ev, argn(call, 0), "listdir(): cannot list \"%.200s\": %s", path,
		        strerror(errno));
		return NULL;
	}
	char **names = NULL;
	size_t count = 0, cap = 0;
	json_t *r = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (count >= JX_MAX_ELEMENTS) {
			jx_fail(ev, call, "listdir(): more than %d entries", JX_MAX_ELEMENTS);
			goto out;
		}
		VEC_PUSH(names, count, cap, xstrdup(e->d_name));
	}
	qsort(names, count, sizeof *names, entry_cmp);
	r = json_array();
	for (size_t i = 0; i < count; i++) {
		json_t *s = jx_make_string(ev, call, names[i], strlen(names[i]));
		if (!s || jx_list_add(ev, call, r, s) < 0) {
			json_decref(r);
			r = NULL;
			break;
		}
	}
out:
	closedir(d);
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
	return r;
}

/* ---- numbers ------------------------------------------------------------------ */

static json_t *round_to_int(struct jx_eval *ev, const struct jx_node *call, json_t **args,
                            double (*round_fn)(double))
{
	json_t *x = args[0];
	if (json_is_integer(x))
		return json_incref(x);
	if (!json_is_real(x)) {
		jx_fail(ev, argn(call, 0), "%s(): needs a number, got a %s", call->func->name,
		        jx_type_name(x));
		return NULL;
	}
	double d = round_fn(json_real_value(x));
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
		jx_fail(ev, argn(call, 0), "%s(): result out of integer range", call->func->name);
		return NULL;
	}
	return json_integer((json_int_t)d);
}

static json_t *fn_ceil(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	return round_to_int(ev, call, args, ceil);
}

static json_t *fn_floor(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	return round_to_int(ev, call, args, floor);
}

/* ---- select, project --------------------------------------------------------------- */

static json_t *fn_select(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_ARRAY, "a list") < 0 ||
	    need(ev, call, args, 1, JSON_STRING, "a string") < 0)
		return NULL;
	const char *key = json_string_value(args[1]);
	json_t *r = json_array();
	for (size_t i = 0; i < json_array_size(args[0]); i++) {
		json_t *x = json_array_get(args[0], i);
		if (!json_is_object(x)) {
			jx_fail(ev, argn(call, 0), "select(): item %zu is a %s, not an object", i,
			        jx_type_name(x));
			goto fail;
		}
		json_t *v = json_object_get(x, key);
		int eq = v ? jx_equal(ev, call, v, args[2]) : 0;
		if (eq < 0 || (eq && jx_list_add(ev, call, r, json_incref(x)) < 0))
			goto fail;
	}
	return r;
fail:
	json_decref(r);
	return NULL;
}

static json_t *fn_project(struct jx_eval *ev, const struct jx_node *call, json_t **args, size_t n)
{
	(void)n;
	if (need(ev, call, args, 0, JSON_ARRAY, "a list") < 0 ||
	    need(ev, call, args, 1, JSON_STRING, "a string") < 0)
		return NULL;
	const char *key = json_string_value(args[1]);
	json_t *r = json_array();
	for (size_t i = 0; i < json_array_size(args[0]); i++) {
		json_t *x = json_array_get(args[0], i);
		json_t *v = json_is_object(x) ? json_object_get(x, key) : NULL;
		if (!v) {
			if (json_is_object(x))
				jx_fail(ev, argn(call, 0),
				        "project(): item %zu has no key \"%.100s\"", i, key);
			else
				jx_fail(ev, argn(call, 0),
				        "project(): item %zu is a %s, not an object", i,
				        jx_type_name(x));
			goto fail;
		}
		if (jx_list_add(ev, call, r, json_incref(v)) < 0)
			goto fail;
	}
	return r;
fail:
	json_decref(r);
	return NULL;
}

/* ---- table ---------------------------------------------------------------------- */

static const struct jx_func funcs[] = {
    {"range", 1, 3, fn_range},     {"format", 1, 10000, fn_format}, {"template", 1, 2, fn_template},
    {"join", 1, 2, fn_join},       {"len", 1, 1, fn_len},           {"keys", 1, 1, fn_keys},
    {"values", 1, 1, fn_values},   {"items", 1, 1, fn_items},       {"basename", 1, 1, fn_basename},
    {"dirname", 1, 1, fn_dirname}, {"ceil", 1, 1, fn_ceil},         {"floor", 1, 1, fn_floor},
    {"escape", 1, 1, fn_escape},   {"select", 3, 3, fn_select},     {"project", 2, 2, fn_project},
    {"listdir", 1, 1, fn_listdir}, {"fetch", 1, 1, fn_fetch},
};

const struct jx_func *jx_func_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
		if (!strcmp(funcs[i].name, name))
			return &funcs[i];
	return NULL;
}
