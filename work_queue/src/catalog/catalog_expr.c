/* catalog_expr.c: a bounded recursive-descent parser and evaluator for the JX subset that CCTools
 * catalog clients send as query filters (see catalog_expr.h). Values are evaluated without
 * copying the record: strings point into it or into the tree, except for concatenations. */
#include "catalog_expr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#include "banned.h"

enum op {
	OP_LIT,
	OP_FIELD,
	OP_LIKE,
	OP_NEG,
	OP_NOT,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_ADD,
	OP_SUB,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_EQ,
	OP_NE,
	OP_AND,
	OP_OR,
};

struct node {
	enum op op;
	json_t *lit; /* OP_LIT */
	char *field; /* OP_FIELD */
	regex_t *re; /* OP_LIKE (a is the subject) */
	struct node *a, *b;
};

struct catalog_expr {
	struct node *root;
};

struct parser {
	const char *s;
	size_t len, pos;
	int depth, nodes;
	char *err;
};

/* ---- values -------------------------------------------------------------------------------- */

enum vtype { V_ERR, V_NULL, V_BOOL, V_INT, V_DBL, V_STR };

struct val {
	enum vtype t;
	bool b;
	int64_t i;
	double d;
	const char *s;
	char *owned; /* a concatenation, freed by val_free */
};

static void val_free(struct val *v)
{
	free(v->owned);
	v->owned = NULL;
}

static struct val from_json(const json_t *j)
{
	struct val v = {.t = V_NULL};
	if (json_is_boolean(j)) {
		v.t = V_BOOL;
		v.b = json_is_true(j);
	} else if (json_is_integer(j)) {
		v.t = V_INT;
		v.i = json_integer_value(j);
	} else if (json_is_real(j)) {
		v.t = V_DBL;
		v.d = json_real_value(j);
	} else if (json_is_string(j)) {
		v.t = V_STR;
		v.s = json_string_value(j);
	} else if (j && !json_is_null(j)) {
		v.t = V_ERR; /* arrays and objects take part in no operator here */
	}
	return v;
}

static bool numeric(const struct val *v)
{
	return v->t == V_INT || v->t == V_DBL;
}

static double num(const struct val *v)
{
	return v->t == V_INT ? (double)v->i : v->d;
}

static struct val eval(const struct node *n, const json_t *rec);

static struct val arith(enum op op, struct val x, struct val y)
{
	struct val r = {.t = V_ERR};
	if (op == OP_ADD && x.t == V_STR && y.t == V_STR) {
		r.t = V_STR;
		r.owned = xasprintf("%s%s", x.s, y.s);
		r.s = r.owned;
		return r;
	}
	if (!numeric(&x) || !numeric(&y))
		return r;
	if (x.t == V_INT && y.t == V_INT) {
		int64_t a = x.i, b = y.i, c;
		r.t = V_INT;
		switch (op) {
		case OP_ADD:
			if (__builtin_add_overflow(a, b, &c))
				r.t = V_ERR;
			r.i = c;
			break;
		case OP_SUB:
			if (__builtin_sub_overflow(a, b, &c))
				r.t = V_ERR;
			r.i = c;
			break;
		case OP_MUL:
			if (__builtin_mul_overflow(a, b, &c))
				r.t = V_ERR;
			r.i = c;
			break;
		case OP_DIV:
		case OP_MOD:
			if (b == 0 || (a == INT64_MIN && b == -1))
				r.t = V_ERR;
			else
				r.i = op == OP_DIV ? a / b : a % b;
			break;
		default: r.t = V_ERR;
		}
		return r;
	}
	double a = num(&x), b = num(&y);
	r.t = V_DBL;
	switch (op) {
	case OP_ADD: r.d = a + b; break;
	case OP_SUB: r.d = a - b; break;
	case OP_MUL: r.d = a * b; break;
	case OP_DIV:
		if (b == 0)
			r.t = V_ERR;
		else
			r.d = a / b;
		break;
	default: r.t = V_ERR;
	}
	return r;
}

/* == and != over any types: values of incompatible types are unequal. */
static bool equal(const struct val *x, const struct val *y)
{
	if (numeric(x) && numeric(y))
		return x->t == V_INT && y->t == V_INT ? x->i == y->i : num(x) == num(y);
	if (x->t != y->t)
		return false;
	switch (x->t) {
	case V_NULL: return true;
	case V_BOOL: return x->b == y->b;
	case V_STR: return strcmp(x->s, y->s) == 0;
	default: return false;
	}
}

static struct val compare(enum op op, struct val x, struct val y)
{
	struct val r = {.t = V_BOOL};
	if (x.t == V_ERR || y.t == V_ERR) {
		r.t = V_ERR;
		return r;
	}
	if (op == OP_EQ || op == OP_NE) {
		r.b = equal(&x, &y) == (op == OP_EQ);
		return r;
	}
	int c;
	if (numeric(&x) && numeric(&y)) {
		double a = num(&x), b = num(&y);
		if (x.t == V_INT && y.t == V_INT)
			c = x.i < y.i ? -1 : x.i > y.i;
		else
			c = a < b ? -1 : a > b;
	} else if (x.t == V_STR && y.t == V_STR) {
		c = strcmp(x.s, y.s);
	} else {
		r.t = V_ERR; /* a string against a number, or null, or a boolean */
		return r;
	}
	r.b = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
	return r;
}

static struct val eval(const struct node *n, const json_t *rec)
{
	struct val r = {.t = V_ERR};
	switch (n->op) {
	case OP_LIT: return from_json(n->lit);
	case OP_FIELD: return from_json(json_object_get(rec, n->field));
	case OP_LIKE: {
		struct val x = eval(n->a, rec);
		if (x.t == V_STR) {
			r.t = V_BOOL;
			r.b = regexec(n->re, x.s, 0, NULL, 0) == 0;
		}
		val_free(&x);
		return r;
	}
	case OP_NEG: {
		struct val x = eval(n->a, rec);
		if (x.t == V_INT && x.i != INT64_MIN) {
			r.t = V_INT;
			r.i = -x.i;
		} else if (x.t == V_DBL) {
			r.t = V_DBL;
			r.d = -x.d;
		}
		val_free(&x);
		return r;
	}
	case OP_NOT: {
		struct val x = eval(n->a, rec);
		if (x.t == V_BOOL) {
			r.t = V_BOOL;
			r.b = !x.b;
		}
		val_free(&x);
		return r;
	}
	case OP_AND:
	case OP_OR: {
		/* both sides must be booleans; the right one is not evaluated once decided */
		struct val x = eval(n->a, rec);
		if (x.t != V_BOOL) {
			val_free(&x);
			return r;
		}
		if (x.b == (n->op == OP_OR))
			return x;
		struct val y = eval(n->b, rec);
		if (y.t != V_BOOL) {
			val_free(&y);
			return r;
		}
		return y;
	}
	default: break;
	}
	struct val x = eval(n->a, rec), y = eval(n->b, rec);
	if (n->op >= OP_LT)
		r = compare(n->op, x, y);
	else
		r = arith(n->op, x, y);
	val_free(&x);
	val_free(&y);
	return r;
}

bool catalog_expr_match(const struct catalog_expr *e, const json_t *record)
{
	if (!e)
		return true;
	struct val v = eval(e->root, record);
	bool ok = v.t == V_BOOL && v.b;
	val_free(&v);
	return ok;
}

/* ---- parsing ------------------------------------------------------------------------------- */

static void node_free(struct node *n)
{
	if (!n)
		return;
	json_decref(n->lit);
	free(n->field);
	if (n->re) {
		regfree(n->re);
		free(n->re);
	}
	node_free(n->a);
	node_free(n->b);
	free(n);
}

static void __attribute__((format(printf, 2, 3))) fail(struct parser *p, const char *fmt, ...)
{
	if (p->err)
		return;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	p->err = xasprintf("expression: %s at byte %zu", msg, p->pos);
}

static struct node *mk(struct parser *p, enum op op, struct node *a, struct node *b)
{
	if (++p->nodes > CATALOG_EXPR_MAX_NODES) {
		fail(p, "more than %d terms", CATALOG_EXPR_MAX_NODES);
		node_free(a);
		node_free(b);
		return NULL;
	}
	struct node *n = xcalloc(1, sizeof *n);
	n->op = op;
	n->a = a;
	n->b = b;
	return n;
}

static void skip_space(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];
		if (c == '#') { /* a comment runs to the end of the line */
			while (p->pos < p->len && p->s[p->pos] != '\n')
				p->pos++;
		} else if (isspace((unsigned char)c)) {
			p->pos++;
		} else {
			break;
		}
	}
}

static bool is_ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Consumes the symbol TOK if it comes next (a word only as a whole word). */
static bool accept(struct parser *p, const char *tok)
{
	skip_space(p);
	size_t n = strlen(tok);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, tok, n) != 0)
		return false;
	if (is_ident_start(tok[0]) && p->pos + n < p->len && is_ident(p->s[p->pos + n]))
		return false;
	/* "<" is not the start of "<=", "!" not of "!=", "=" alone is no operator */
	if (n == 1 && strchr("<>!", tok[0]) && p->pos + 1 < p->len && p->s[p->pos + 1] == '=')
		return false;
	p->pos += n;
	return true;
}

static struct node *parse_or(struct parser *p);

static struct node *parse_string(struct parser *p)
{
	size_t start = p->pos; /* at the opening quote */
	size_t i = start + 1;
	while (i < p->len && p->s[i] != '"') {
		if (p->s[i] == '\\')
			i++;
		i++;
	}
	if (i >= p->len) {
		fail(p, "unterminated string");
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(p->s + start, i + 1 - start, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!json_is_string(j)) {
		json_decref(j);
		fail(p, "bad string (%s)", je.text);
		return NULL;
	}
	p->pos = i + 1;
	struct node *n = mk(p, OP_LIT, NULL, NULL);
	if (n)
		n->lit = j;
	else
		json_decref(j);
	return n;
}

static struct node *parse_number(struct parser *p)
{
	size_t i = p->pos;
	bool real = false;
	while (i < p->len && (isdigit((unsigned char)p->s[i]) || strchr(".eE", p->s[i]) ||
	                      ((p->s[i] == '+' || p->s[i] == '-') && i > p->pos &&
	                       (p->s[i - 1] == 'e' || p->s[i - 1] == 'E')))) {
		if (!isdigit((unsigned char)p->s[i]))
			real = true;
		i++;
	}
	char buf[64];
	size_t n = i - p->pos;
	if (n >= sizeof buf) {
		fail(p, "number too long");
		return NULL;
	}
	memcpy(buf, p->s + p->pos, n);
	buf[n] = 0;
	char *end;
	errno = 0;
	json_t *j;
	if (real) {
		double d = strtod(buf, &end);
		j = *end || !isfinite(d) ? NULL : json_real(d);
	} else {
		long long v = strtoll(buf, &end, 10);
		j = *end || errno ? NULL : json_integer(v);
	}
	if (!j) {
		fail(p, "bad number \"%s\"", buf);
		return NULL;
	}
	p->pos = i;
	struct node *nd = mk(p, OP_LIT, NULL, NULL);
	if (nd)
		nd->lit = j;
	else
		json_decref(j);
	return nd;
}

/* like(SUBJECT, "REGEX"): the only function; the pattern must be a string literal. */
static struct node *parse_like(struct parser *p)
{
	struct node *subject = parse_or(p);
	if (!subject)
		return NULL;
	if (!accept(p, ",")) {
		fail(p, "like() takes a value and a pattern");
		node_free(subject);
		return NULL;
	}
	skip_space(p);
	struct node *pat = p->pos < p->len && p->s[p->pos] == '"' ? parse_string(p) : NULL;
	if (!pat) {
		fail(p, "the pattern of like() must be a string");
		node_free(subject);
		return NULL;
	}
	if (!accept(p, ")")) {
		fail(p, "expected ) after the pattern of like()");
		node_free(subject);
		node_free(pat);
		return NULL;
	}
	if (json_string_length(pat->lit) > CATALOG_EXPR_MAX_PATTERN) {
		fail(p, "the pattern of like() is over %d bytes", CATALOG_EXPR_MAX_PATTERN);
		node_free(subject);
		node_free(pat);
		return NULL;
	}
	/* What makes regcomp build a huge automaton from a few bytes is refused: an interval
	 * ({m,n}: "((a{1,255}){1,255}){1,255}" takes gigabytes) and groups nested more than
	 * CATALOG_EXPR_MAX_GROUPS deep (glibc copies the body of each "+", so "((a+)+)+..." doubles
	 * per level, and "a+++..." per "+"), and a repetition right after another; a
	 * back-reference (\1) is refused too, as matching it can take exponential time. */
	const char *ps = json_string_value(pat->lit);
	const char *why = NULL;
	int depth = 0, repeat = 0;
	for (size_t k = 0; ps[k] && !why; k++) {
		int was_repeat = repeat;
		repeat = ps[k] == '*' || ps[k] == '+' || ps[k] == '?';
		if (repeat && was_repeat)
			why = "may not repeat a repetition (as in a** or a+?)";
		else if (ps[k] == '\\' && ps[k + 1]) {
			k++;
			if (ps[k] >= '1' && ps[k] <= '9')
				why = "may not use a back-reference";
			continue;
		}
		if (ps[k] == '{')
			why = "may not use a {m,n} interval (write \\{ for a brace)";
		else if (ps[k] == '(' && ++depth > CATALOG_EXPR_MAX_GROUPS)
			why = "may not nest groups more than " CATALOG_EXPR_MAX_GROUPS_STR " deep";
		else if (ps[k] == ')' && depth > 0)
			depth--;
	}
	if (why) {
		fail(p, "the pattern of like() %s", why);
		node_free(subject);
		node_free(pat);
		return NULL;
	}
	regex_t *re = xmalloc(sizeof *re);
	if (regcomp(re, json_string_value(pat->lit), REG_EXTENDED | REG_NOSUB) != 0) {
		free(re);
		fail(p, "bad pattern \"%s\"", json_string_value(pat->lit));
		node_free(subject);
		node_free(pat);
		return NULL;
	}
	node_free(pat);
	struct node *n = mk(p, OP_LIKE, subject, NULL);
	if (n)
		n->re = re;
	else {
		regfree(re);
		free(re);
	}
	return n;
}

static struct node *parse_primary(struct parser *p)
{
	skip_space(p);
	if (p->pos >= p->len) {
		fail(p, "unexpected end");
		return NULL;
	}
	char c = p->s[p->pos];
	if (c == '(') {
		p->pos++;
		struct node *n = parse_or(p);
		if (n && !accept(p, ")")) {
			fail(p, "expected )");
			node_free(n);
			return NULL;
		}
		return n;
	}
	if (c == '"')
		return parse_string(p);
	if (isdigit((unsigned char)c) ||
	    (c == '.' && p->pos + 1 < p->len && isdigit((unsigned char)p->s[p->pos + 1])))
		return parse_number(p);
	if (!is_ident_start(c)) {
		fail(p, "unexpected '%c'", c);
		return NULL;
	}
	size_t start = p->pos;
	while (p->pos < p->len && is_ident(p->s[p->pos]))
		p->pos++;
	size_t n = p->pos - start;
	const char *w = p->s + start;
	json_t *lit = NULL;
	if (n == 4 && !memcmp(w, "true", 4))
		lit = json_true();
	else if (n == 5 && !memcmp(w, "false", 5))
		lit = json_false();
	else if (n == 4 && !memcmp(w, "null", 4))
		lit = json_null();
	if (lit) {
		struct node *nd = mk(p, OP_LIT, NULL, NULL);
		if (nd)
			nd->lit = lit;
		return nd;
	}
	if (accept(p, "(")) {
		if (n == 4 && !memcmp(w, "like", 4))
			return parse_like(p);
		p->pos = start;
		fail(p, "function %.*s() is not supported (only like())", (int)n, w);
		return NULL;
	}
	struct node *nd = mk(p, OP_FIELD, NULL, NULL);
	if (nd)
		nd->field = xstrndup(w, n);
	return nd;
}

static struct node *parse_unary(struct parser *p)
{
	if (++p->depth > CATALOG_EXPR_MAX_DEPTH) {
		fail(p, "nested deeper than %d", CATALOG_EXPR_MAX_DEPTH);
		return NULL;
	}
	struct node *n;
	if (accept(p, "-")) {
		struct node *a = parse_unary(p);
		n = a ? mk(p, OP_NEG, a, NULL) : NULL;
	} else {
		n = parse_primary(p);
	}
	p->depth--;
	return n;
}

/* One level of left-associative binary operators. */
struct level {
	const char *tok[6];
	enum op op[6];
};

static const struct level levels[] = {
    {{"*", "/", "%"}, {OP_MUL, OP_DIV, OP_MOD}},
    {{"+", "-"}, {OP_ADD, OP_SUB}},
    {{"==", "!=", "<=", ">=", "<", ">"}, {OP_EQ, OP_NE, OP_LE, OP_GE, OP_LT, OP_GT}},
};

static struct node *parse_not(struct parser *p);

static struct node *parse_level(struct parser *p, int k)
{
	struct node *a = k < 0 ? parse_unary(p) : parse_level(p, k - 1);
	while (a && k >= 0) {
		int found = -1;
		for (int i = 0; i < 6 && levels[k].tok[i]; i++)
			if (accept(p, levels[k].tok[i])) {
				found = i;
				break;
			}
		if (found < 0)
			break;
		struct node *b = parse_level(p, k - 1);
		if (!b) {
			node_free(a);
			return NULL;
		}
		a = mk(p, levels[k].op[found], a, b);
	}
	return a;
}

static struct node *parse_not(struct parser *p)
{
	if (accept(p, "not") || accept(p, "!")) {
		if (++p->depth > CATALOG_EXPR_MAX_DEPTH) {
			fail(p, "nested deeper than %d", CATALOG_EXPR_MAX_DEPTH);
			return NULL;
		}
		struct node *a = parse_not(p);
		p->depth--;
		return a ? mk(p, OP_NOT, a, NULL) : NULL;
	}
	return parse_level(p, 2);
}

static struct node *parse_and(struct parser *p)
{
	struct node *a = parse_not(p);
	while (a && (accept(p, "and") || accept(p, "&&"))) {
		struct node *b = parse_not(p);
		if (!b) {
			node_free(a);
			return NULL;
		}
		a = mk(p, OP_AND, a, b);
	}
	return a;
}

static struct node *parse_or(struct parser *p)
{
	if (++p->depth > CATALOG_EXPR_MAX_DEPTH) {
		fail(p, "nested deeper than %d", CATALOG_EXPR_MAX_DEPTH);
		return NULL;
	}
	struct node *a = parse_and(p);
	while (a && (accept(p, "or") || accept(p, "||"))) {
		struct node *b = parse_and(p);
		if (!b) {
			node_free(a);
			a = NULL;
			break;
		}
		a = mk(p, OP_OR, a, b);
	}
	p->depth--;
	return a;
}

struct catalog_expr *catalog_expr_parse(const char *text, size_t len, char **err)
{
	struct parser p = {.s = text, .len = len};
	*err = NULL;
	if (len > CATALOG_EXPR_MAX_TEXT) {
		*err = xasprintf("expression: %zu bytes (limit %d)", len, CATALOG_EXPR_MAX_TEXT);
		return NULL;
	}
	if (memchr(text, 0, len)) {
		*err = xstrdup("expression: contains a NUL byte");
		return NULL;
	}
	struct node *root = parse_or(&p);
	if (root) {
		skip_space(&p);
		if (p.pos < p.len)
			fail(&p, "unexpected '%c'", p.s[p.pos]);
	}
	if (p.err) {
		node_free(root);
		*err = p.err;
		return NULL;
	}
	struct catalog_expr *e = xmalloc(sizeof *e);
	e->root = root;
	return e;
}

void catalog_expr_delete(struct catalog_expr *e)
{
	if (!e)
		return;
	node_free(e->root);
	free(e);
}

struct catalog_expr *catalog_expr_parse_option(const char *text, char *err, size_t errlen)
{
	char *why = NULL;
	struct catalog_expr *e = catalog_expr_parse(text, strlen(text), &why);
	if (!e)
		snprintf(err, errlen, "--where %s: %s", text, why ? why : "bad expression");
	free(why);
	return e;
}
