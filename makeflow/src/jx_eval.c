/* jx_eval.c: evaluation of a JX syntax tree into jansson values: symbols,
 * operators, indexing, slicing, calls and list comprehensions, with the
 * accounting that keeps any input within the limits of jx.h. */
#include "jx_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* ---- errors and accounting ------------------------------------------------- */

int jx_fail_pos(struct jx_eval *ev, int line, int column, const char *fmt, ...)
{
	if (!ev->failed) {
		va_list ap;
		va_start(ap, fmt);
		jx_error_vset(ev->err, ev->file, line, column, fmt, ap);
		va_end(ap);
		ev->failed = 1;
	}
	return -1;
}

int jx_fail(struct jx_eval *ev, const struct jx_node *at, const char *fmt, ...)
{
	if (!ev->failed) {
		va_list ap;
		va_start(ap, fmt);
		jx_error_vset(ev->err, ev->file, at ? at->line : 0, at ? at->column : 0, fmt, ap);
		va_end(ap);
		ev->failed = 1;
	}
	return -1;
}

int jx_charge_work(struct jx_eval *ev, const struct jx_node *at, uint64_t amount)
{
	ev->work += amount;
	if (ev->work > JX_MAX_WORK)
		return jx_fail(ev, at, "evaluation too long (more than %d steps)", JX_MAX_WORK);
	return 0;
}

int jx_charge_bytes(struct jx_eval *ev, const struct jx_node *at, size_t amount)
{
	ev->bytes += amount;
	if (ev->bytes > JX_MAX_BYTES)
		return jx_fail(ev, at, "too much string data (more than %u MiB)",
		               JX_MAX_BYTES >> 20);
	return jx_charge_work(ev, at, amount / 64);
}

/* Counts the nodes of v (as a tree, shared parts counted each time they
 * appear) into *size and checks that containers stay within the nesting
 * limit, v's own containers being at `level`. */
static int walk(struct jx_eval *ev, const struct jx_node *at, json_t *v, int level, uint64_t *size)
{
	if (++*size > JX_MAX_ELEMENTS)
		return jx_fail(ev, at, "value too large (more than %d elements)", JX_MAX_ELEMENTS);
	if (json_is_array(v)) {
		if (level > JX_MAX_NESTING)
			return jx_fail(ev, at, "value nested deeper than %d levels",
			               JX_MAX_NESTING);
		for (size_t i = 0; i < json_array_size(v); i++)
			if (walk(ev, at, json_array_get(v, i), level + 1, size) < 0)
				return -1;
	} else if (json_is_object(v)) {
		if (level > JX_MAX_NESTING)
			return jx_fail(ev, at, "value nested deeper than %d levels",
			               JX_MAX_NESTING);
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) if (walk(ev, at, x, level + 1, size) < 0) return -1;
	}
	return 0;
}

int jx_check_value(struct jx_eval *ev, const struct jx_node *at, json_t *v)
{
	uint64_t size = 0;
	if (walk(ev, at, v, 1, &size) < 0)
		return -1;
	return jx_charge_work(ev, at, size);
}

void jx_release(struct jx_eval *ev, json_t *v)
{
	/* a container about to be freed gives its slots back, so temporaries
	 * (such as the range() of an inner loop) do not use up the budget */
	if (v && v->refcount == 1 && (json_is_array(v) || json_is_object(v))) {
		size_t n = json_is_array(v) ? json_array_size(v) : json_object_size(v);
		ev->elements = ev->elements > n ? ev->elements - n : 0;
	}
	json_decref(v);
}

/* Charges one new slot holding `item` at level 2 of a new container. */
static int charge_slot(struct jx_eval *ev, const struct jx_node *at, json_t *item)
{
	if (++ev->elements > JX_MAX_ELEMENTS)
		return jx_fail(ev, at, "too many elements (more than %d)", JX_MAX_ELEMENTS);
	if (!json_is_array(item) && !json_is_object(item))
		return jx_charge_work(ev, at, 1);
	uint64_t size = 0;
	if (walk(ev, at, item, 2, &size) < 0)
		return -1;
	return jx_charge_work(ev, at, size);
}

int jx_list_add(struct jx_eval *ev, const struct jx_node *at, json_t *list, json_t *item)
{
	if (charge_slot(ev, at, item) < 0) {
		json_decref(item);
		return -1;
	}
	json_array_append_new(list, item);
	return 0;
}

int jx_object_add(struct jx_eval *ev, const struct jx_node *at, json_t *obj, const char *key,
                  json_t *value)
{
	if (charge_slot(ev, at, value) < 0) {
		json_decref(value);
		return -1;
	}
	json_object_set_new(obj, key, value);
	return 0;
}

json_t *jx_make_string(struct jx_eval *ev, const struct jx_node *at, const char *s, size_t len)
{
	if (jx_charge_bytes(ev, at, len) < 0)
		return NULL;
	json_t *v = json_stringn(s, len);
	if (!v)
		jx_fail(ev, at, "result is not a valid UTF-8 string");
	return v;
}

json_t *jx_make_real(struct jx_eval *ev, const struct jx_node *at, double d)
{
	if (!isfinite(d)) {
		jx_fail(ev, at, "floating-point result out of range");
		return NULL;
	}
	return json_real(d);
}

const char *jx_type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "list";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "value";
}

/* Shortest "%g" form that reads back as the same double. */
static void real_text(double d, char *buf, size_t size)
{
	snprintf(buf, size, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, size, "%.17g", d);
}

char *jx_scalar_text(struct jx_eval *ev, const struct jx_node *at, json_t *v, const char *what)
{
	char buf[64];
	switch (json_typeof(v)) {
	case JSON_STRING: return xstrdup(json_string_value(v));
	case JSON_INTEGER:
		snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL: real_text(json_real_value(v), buf, sizeof buf); break;
	case JSON_TRUE: return xstrdup("true");
	case JSON_FALSE: return xstrdup("false");
	case JSON_NULL: return xstrdup("null");
	default: jx_fail(ev, at, "%s: cannot use a %s as text", what, jx_type_name(v)); return NULL;
	}
	return xstrdup(buf);
}

int jx_equal(struct jx_eval *ev, const struct jx_node *at, json_t *x, json_t *y)
{
	if (jx_charge_work(ev, at, 1) < 0)
		return -1;
	if (json_is_number(x) && json_is_number(y)) {
		if (json_is_integer(x) && json_is_integer(y))
			return json_integer_value(x) == json_integer_value(y);
		return json_number_value(x) == json_number_value(y);
	}
	if (json_typeof(x) != json_typeof(y))
		return 0;
	switch (json_typeof(x)) {
	case JSON_STRING: {
		size_t n = json_string_length(x);
		if (jx_charge_work(ev, at, n / 64) < 0)
			return -1;
		return n == json_string_length(y) &&
		       !memcmp(json_string_value(x), json_string_value(y), n);
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(x);
		if (n != json_array_size(y))
			return 0;
		for (size_t i = 0; i < n; i++) {
			int r = jx_equal(ev, at, json_array_get(x, i), json_array_get(y, i));
			if (r <= 0)
				return r;
		}
		return 1;
	}
	case JSON_OBJECT: {
		if (json_object_size(x) != json_object_size(y))
			return 0;
		const char *k;
		json_t *xv;
		json_object_foreach(x, k, xv)
		{
			json_t *yv = json_object_get(y, k);
			if (!yv)
				return 0;
			int r = jx_equal(ev, at, xv, yv);
			if (r <= 0)
				return r;
		}
		return 1;
	}
	default: return 1; /* true, false, null */
	}
}

json_t *jx_lookup(const struct jx_eval *ev, const char *name)
{
	for (const struct jx_frame *f = ev->frames; f; f = f->up)
		if (!strcmp(f->name, name))
			return f->value;
	return ev->symbols ? json_object_get(ev->symbols, name) : NULL;
}

/* ---- operators --------------------------------------------------------------- */

static const char *op_text(enum jx_tok t)
{
	switch (t) {
	case JXT_AND: return "and";
	case JXT_OR: return "or";
	case JXT_NOT: return "not";
	case JXT_PLUS: return "+";
	case JXT_MINUS: return "-";
	case JXT_STAR: return "*";
	case JXT_SLASH: return "/";
	case JXT_PERCENT: return "%";
	case JXT_EQ: return "==";
	case JXT_NE: return "!=";
	case JXT_LT: return "<";
	case JXT_LE: return "<=";
	case JXT_GT: return ">";
	case JXT_GE: return ">=";
	default: return "?";
	}
}

static json_t *concat_text(struct jx_eval *ev, const struct jx_op *op, json_t *x, json_t *y)
{
	struct jx_node where = {.line = op->line, .column = op->column};
	char *a = jx_scalar_text(ev, &where, x, "+");
	char *b = jx_scalar_text(ev, &where, y, "+");
	size_t na = strlen(a), nb = strlen(b);
	json_t *r = NULL;
	if (jx_charge_bytes(ev, &where, na + nb) == 0) {
		VEC_RESIZE(a, na + nb + 1);
		memcpy(a + na, b, nb + 1);
		r = json_stringn_nocheck(a, na + nb);
	}
	free(a);
	free(b);
	return r;
}

static json_t *concat_lists(struct jx_eval *ev, const struct jx_node *at, json_t *x, json_t *y)
{
	json_t *r = json_array();
	json_t *parts[2] = {x, y};
	for (int p = 0; p < 2; p++) {
		for (size_t i = 0; i < json_array_size(parts[p]); i++) {
			if (jx_list_add(ev, at, r, json_incref(json_array_get(parts[p], i))) < 0) {
				json_decref(r);
				return NULL;
			}
		}
	}
	return r;
}

static json_t *integer_op(struct jx_eval *ev, const struct jx_op *op, json_int_t a, json_int_t b)
{
	json_int_t r = 0;
	int overflow = 0;
	switch (op->tok) {
	case JXT_PLUS: overflow = __builtin_add_overflow(a, b, &r); break;
	case JXT_MINUS: overflow = __builtin_sub_overflow(a, b, &r); break;
	case JXT_STAR: overflow = __builtin_mul_overflow(a, b, &r); break;
	case JXT_SLASH:
	case JXT_PERCENT:
		if (b == 0) {
			jx_fail_pos(ev, op->line, op->column, "division by zero");
			return NULL;
		}
		if (b == -1) /* avoids INT64_MIN / -1 */
			overflow = op->tok == JXT_SLASH && __builtin_sub_overflow(0, a, &r);
		else
			r = op->tok == JXT_SLASH ? a / b : a % b;
		break;
	default: break;
	}
	if (overflow) {
		jx_fail_pos(ev, op->line, op->column, "integer overflow in '%s'", op_text(op->tok));
		return NULL;
	}
	return json_integer(r);
}

static json_t *real_op(struct jx_eval *ev, const struct jx_op *op, double a, double b)
{
	double r = 0;
	switch (op->tok) {
	case JXT_PLUS: r = a + b; break;
	case JXT_MINUS: r = a - b; break;
	case JXT_STAR: r = a * b; break;
	case JXT_SLASH:
	case JXT_PERCENT:
		if (b == 0) {
			jx_fail_pos(ev, op->line, op->column, "division by zero");
			return NULL;
		}
		r = op->tok == JXT_SLASH ? a / b : fmod(a, b);
		break;
	default: break;
	}
	if (!isfinite(r)) {
		jx_fail_pos(ev, op->line, op->column, "floating-point result of '%s' out of range",
		            op_text(op->tok));
		return NULL;
	}
	return json_real(r);
}

static json_t *compare(struct jx_eval *ev, const struct jx_op *op, json_t *x, json_t *y)
{
	if (op->tok == JXT_EQ || op->tok == JXT_NE) {
		struct jx_node where = {.line = op->line, .column = op->column};
		int r = jx_equal(ev, &where, x, y);
		if (r < 0)
			return NULL;
		return json_boolean(op->tok == JXT_EQ ? r : !r);
	}
	int c;
	if (json_is_integer(x) && json_is_integer(y)) {
		json_int_t a = json_integer_value(x), b = json_integer_value(y);
		c = (a > b) - (a < b);
	} else if (json_is_number(x) && json_is_number(y)) {
		double a = json_number_value(x), b = json_number_value(y);
		c = (a > b) - (a < b);
	} else if (json_is_string(x) && json_is_string(y)) {
		c = strcmp(json_string_value(x), json_string_value(y));
		c = (c > 0) - (c < 0);
	} else {
		jx_fail_pos(ev, op->line, op->column, "cannot compare %s and %s with '%s'",
		            jx_type_name(x), jx_type_name(y), op_text(op->tok));
		return NULL;
	}
	switch (op->tok) {
	case JXT_LT: return json_boolean(c < 0);
	case JXT_LE: return json_boolean(c <= 0);
	case JXT_GT: return json_boolean(c > 0);
	default: return json_boolean(c >= 0);
	}
}

/* Applies a binary operator other than 'and' and 'or'. */
static json_t *binary(struct jx_eval *ev, const struct jx_op *op, json_t *x, json_t *y)
{
	switch (op->tok) {
	case JXT_EQ:
	case JXT_NE:
	case JXT_LT:
	case JXT_LE:
	case JXT_GT:
	case JXT_GE: return compare(ev, op, x, y);
	default: break;
	}
	if (json_is_integer(x) && json_is_integer(y))
		return integer_op(ev, op, json_integer_value(x), json_integer_value(y));
	if (json_is_number(x) && json_is_number(y))
		return real_op(ev, op, json_number_value(x), json_number_value(y));
	if (op->tok == JXT_PLUS) {
		if ((json_is_string(x) && (json_is_string(y) || json_is_number(y))) ||
		    (json_is_number(x) && json_is_string(y)))
			return concat_text(ev, op, x, y);
		if (json_is_array(x) && json_is_array(y)) {
			struct jx_node where = {.line = op->line, .column = op->column};
			return concat_lists(ev, &where, x, y);
		}
	}
	jx_fail_pos(ev, op->line, op->column, "cannot apply '%s' to %s and %s", op_text(op->tok),
	            jx_type_name(x), jx_type_name(y));
	return NULL;
}

static json_t *eval_chain(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *acc = jx_eval_node(ev, n->kids[0]);
	for (size_t i = 1; acc && i < n->nkids; i++) {
		const struct jx_op *op = &n->ops[i - 1];
		if (op->tok == JXT_AND || op->tok == JXT_OR) {
			if (!json_is_boolean(acc)) {
				jx_fail(ev, n->kids[i - 1], "'%s' needs booleans, got a %s",
				        op_text(op->tok), jx_type_name(acc));
				break;
			}
			/* a chain holds one precedence level, so the rest is the same operator */
			if (json_is_true(acc) == (op->tok == JXT_OR))
				return acc;
			json_decref(acc);
			acc = jx_eval_node(ev, n->kids[i]);
			if (acc && !json_is_boolean(acc)) {
				jx_fail(ev, n->kids[i], "'%s' needs booleans, got a %s",
				        op_text(op->tok), jx_type_name(acc));
				break;
			}
			continue;
		}
		json_t *rhs = jx_eval_node(ev, n->kids[i]);
		if (!rhs)
			break;
		json_t *r = binary(ev, op, acc, rhs);
		jx_release(ev, acc);
		jx_release(ev, rhs);
		acc = r;
	}
	if (ev->failed) {
		json_decref(acc);
		return NULL;
	}
	return acc;
}

static json_t *eval_unary(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *v = jx_eval_node(ev, n->a);
	if (!v)
		return NULL;
	json_t *r = NULL;
	if (n->op == JXT_NOT) {
		if (json_is_boolean(v))
			r = json_boolean(json_is_false(v));
		else
			jx_fail(ev, n, "'not' needs a boolean, got a %s", jx_type_name(v));
	} else if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (n->op == JXT_PLUS)
			r = json_incref(v);
		else if (i == INT64_MIN)
			jx_fail(ev, n, "integer overflow in unary '-'");
		else
			r = json_integer(-i);
	} else if (json_is_real(v)) {
		r = n->op == JXT_PLUS ? json_incref(v) : json_real(-json_real_value(v));
	} else {
		jx_fail(ev, n, "unary '%s' needs a number, got a %s", op_text(n->op),
		        jx_type_name(v));
	}
	json_decref(v);
	return r;
}

/* ---- indexing and slicing ---------------------------------------------------- */

static int get_index(struct jx_eval *ev, const struct jx_node *at, json_t *v, json_int_t *out)
{
	if (!json_is_integer(v))
		return jx_fail(ev, at, "index must be an integer, got a %s", jx_type_name(v));
	*out = json_integer_value(v);
	return 0;
}

static json_t *eval_index(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *base = jx_eval_node(ev, n->a);
	if (!base)
		return NULL;
	json_t *key = jx_eval_node(ev, n->b);
	json_t *r = NULL;
	if (!key)
		goto out;
	if (json_is_object(base)) {
		if (!json_is_string(key)) {
			jx_fail(ev, n->b, "object key must be a string, got a %s",
			        jx_type_name(key));
		} else if (!(r = json_object_get(base, json_string_value(key)))) {
			jx_fail(ev, n, "no key \"%.100s\" in object", json_string_value(key));
		} else {
			json_incref(r);
		}
		goto out;
	}
	if (!json_is_array(base) && !json_is_string(base)) {
		jx_fail(ev, n, "cannot index a %s", jx_type_name(base));
		goto out;
	}
	json_int_t i = 0;
	if (get_index(ev, n->b, key, &i) < 0)
		goto out;
	json_int_t len =
	    (json_int_t)(json_is_array(base) ? json_array_size(base) : json_string_length(base));
	if (i < 0)
		i += len;
	if (i < 0 || i >= len) {
		jx_fail(ev, n,
		        "index %" JSON_INTEGER_FORMAT " out of range (length %" JSON_INTEGER_FORMAT
		        ")",
		        json_integer_value(key), len);
		goto out;
	}
	if (json_is_array(base))
		r = json_incref(json_array_get(base, (size_t)i));
	else
		r = jx_make_string(ev, n, json_string_value(base) + i, 1);
out:
	jx_release(ev, base);
	json_decref(key);
	return r;
}

/* Resolves a slice bound like Python: negative counts from the end, and the
 * result is clamped to 0..len. */
static int slice_bound(struct jx_eval *ev, const struct jx_node *bn, json_int_t len,
                       json_int_t dflt, json_int_t *out)
{
	if (!bn) {
		*out = dflt;
		return 0;
	}
	json_t *v = jx_eval_node(ev, bn);
	if (!v)
		return -1;
	json_int_t i = dflt;
	int is_null = json_is_null(v);
	int rc = is_null ? 0 : get_index(ev, bn, v, &i);
	json_decref(v);
	if (rc < 0)
		return -1;
	if (!is_null && i < 0)
		i = i < -len ? 0 : i + len;
	*out = i > len ? len : i;
	return 0;
}

static json_t *eval_slice(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *base = jx_eval_node(ev, n->a);
	if (!base)
		return NULL;
	json_t *r = NULL;
	if (!json_is_array(base) && !json_is_string(base)) {
		jx_fail(ev, n, "cannot slice a %s", jx_type_name(base));
		goto out;
	}
	json_int_t len =
	    (json_int_t)(json_is_array(base) ? json_array_size(base) : json_string_length(base));
	json_int_t a, b;
	if (slice_bound(ev, n->b, len, 0, &a) < 0 || slice_bound(ev, n->c, len, len, &b) < 0)
		goto out;
	if (b < a)
		b = a;
	if (json_is_string(base)) {
		r = jx_make_string(ev, n, json_string_value(base) + a, (size_t)(b - a));
		goto out;
	}
	r = json_array();
	for (json_int_t i = a; i < b; i++) {
		if (jx_list_add(ev, n, r, json_incref(json_array_get(base, (size_t)i))) < 0) {
			json_decref(r);
			r = NULL;
			break;
		}
	}
out:
	jx_release(ev, base);
	return r;
}

/* ---- containers, comprehensions, calls ----------------------------------------- */

/* Runs comprehension clauses from `clause` on, appending results to out. */
static int comp_run(struct jx_eval *ev, const struct jx_node *comp, size_t clause, json_t *out)
{
	if (clause == comp->nkids) {
		json_t *item = jx_eval_node(ev, comp->a);
		if (!item)
			return -1;
		jx_pos_note_item(ev->pos, out, json_array_size(out), item, comp->a->line,
		                 comp->a->column);
		return jx_list_add(ev, comp->a, out, item);
	}
	const struct jx_node *c = comp->kids[clause];
	json_t *v = jx_eval_node(ev, c->a);
	if (!v)
		return -1;
	if (c->kind == JXN_IF) {
		if (!json_is_boolean(v)) {
			jx_fail(ev, c->a, "'if' condition must be a boolean, got a %s",
			        jx_type_name(v));
			json_decref(v);
			return -1;
		}
		int take = json_is_true(v);
		json_decref(v);
		return take ? comp_run(ev, comp, clause + 1, out) : 0;
	}
	if (!json_is_array(v)) {
		jx_fail(ev, c->a, "'for' needs a list, got a %s", jx_type_name(v));
		json_decref(v);
		return -1;
	}
	const struct jx_frame *saved = ev->frames;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
		struct jx_frame f = {c->name, json_array_get(v, i), saved};
		ev->frames = &f;
		rc = jx_charge_work(ev, c, 1);
		if (rc == 0)
			rc = comp_run(ev, comp, clause + 1, out);
		ev->frames = saved;
	}
	jx_release(ev, v);
	return rc;
}

static json_t *eval_list(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *r = json_array();
	jx_pos_note(ev->pos, r, n->line, n->column);
	for (size_t i = 0; i < n->nkids; i++) {
		const struct jx_node *k = n->kids[i];
		if (k->kind == JXN_COMP) {
			if (comp_run(ev, k, 0, r) < 0)
				goto fail;
			continue;
		}
		json_t *item = jx_eval_node(ev, k);
		if (item)
			jx_pos_note_item(ev->pos, r, json_array_size(r), item, k->line, k->column);
		if (!item || jx_list_add(ev, k, r, item) < 0)
			goto fail;
	}
	return r;
fail:
	json_decref(r);
	return NULL;
}

static json_t *eval_object(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *r = json_object();
	jx_pos_note(ev->pos, r, n->line, n->column);
	for (size_t i = 0; i + 1 < n->nkids; i += 2) {
		json_t *key = jx_eval_node(ev, n->kids[i]);
		if (!key)
			goto fail;
		if (!json_is_string(key)) {
			jx_fail(ev, n->kids[i], "object key must be a string, got a %s",
			        jx_type_name(key));
			json_decref(key);
			goto fail;
		}
		const char *k = json_string_value(key);
		if (json_object_get(r, k)) {
			jx_fail(ev, n->kids[i], "duplicate key \"%.100s\"", k);
			json_decref(key);
			goto fail;
		}
		json_t *value = jx_eval_node(ev, n->kids[i + 1]);
		if (value)
			jx_pos_note_member(ev->pos, r, k, value, n->kids[i + 1]->line,
			                   n->kids[i + 1]->column);
		int rc = value ? jx_object_add(ev, n->kids[i + 1], r, k, value) : -1;
		json_decref(key);
		if (rc < 0)
			goto fail;
	}
	return r;
fail:
	json_decref(r);
	return NULL;
}

static json_t *eval_cond(struct jx_eval *ev, const struct jx_node *n)
{
	json_t *c = jx_eval_node(ev, n->a);
	if (!c)
		return NULL;
	if (!json_is_boolean(c)) {
		jx_fail(ev, n->a, "condition must be a boolean, got a %s", jx_type_name(c));
		json_decref(c);
		return NULL;
	}
	int t = json_is_true(c);
	json_decref(c);
	return jx_eval_node(ev, t ? n->b : n->c);
}

static json_t *eval_call(struct jx_eval *ev, const struct jx_node *n)
{
	json_t **args = xcalloc(n->nkids ? n->nkids : 1, sizeof *args);
	json_t *r = NULL;
	size_t i;
	for (i = 0; i < n->nkids; i++)
		if (!(args[i] = jx_eval_node(ev, n->kids[i])))
			break;
	if (i == n->nkids) {
		r = n->func->fn(ev, n, args, n->nkids);
		if (!r && !ev->failed)
			jx_fail(ev, n, "%s() failed", n->func->name);
	}
	for (size_t j = 0; j < n->nkids; j++)
		jx_release(ev, args[j]);
	free(args);
	return r;
}

json_t *jx_eval_node(struct jx_eval *ev, const struct jx_node *n)
{
	if (ev->failed || jx_charge_work(ev, n, 1) < 0)
		return NULL;
	switch (n->kind) {
	case JXN_LITERAL: return json_incref(n->value);
	case JXN_SYMBOL: {
		json_t *v = jx_lookup(ev, n->name);
		if (!v)
			jx_fail(ev, n, "undefined symbol '%.100s'", n->name);
		return json_incref(v);
	}
	case JXN_LIST: return eval_list(ev, n);
	case JXN_OBJECT: return eval_object(ev, n);
	case JXN_UNARY: return eval_unary(ev, n);
	case JXN_CHAIN: return eval_chain(ev, n);
	case JXN_COND: return eval_cond(ev, n);
	case JXN_INDEX: return eval_index(ev, n);
	case JXN_SLICE: return eval_slice(ev, n);
	case JXN_CALL: return eval_call(ev, n);
	case JXN_COMP: {
		/* only reached for a comprehension outside a list, which the
		 * parser never builds; evaluate it as a list of its own */
		json_t *r = json_array();
		if (comp_run(ev, n, 0, r) < 0) {
			json_decref(r);
			return NULL;
		}
		return r;
	}
	case JXN_FOR:
	case JXN_IF: break;
	}
	jx_fail(ev, n, "internal error: unexpected syntax node");
	return NULL;
}
