/* jx_parse.c: the JX parser. A precedence-climbing parser builds a syntax
 * tree from the tokens of jx_lex.c; runs of same-precedence binary operators
 * become one flat chain node, and nesting is capped at JX_MAX_NESTING so
 * neither parsing nor evaluation can recurse without bound. */
#include "jx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* Binding strength, weakest first. */
enum {
	PREC_COND = 1, /* a ? b : c */
	PREC_OR = 2,
	PREC_AND = 3,
	PREC_NOT = 4, /* operand of 'not' */
	PREC_CMP = 5,
	PREC_ADD = 6,
	PREC_MUL = 7,
	PREC_UNARY = 8, /* operand of unary '-' and '+' */
};

struct parser {
	struct jx_lexer lx;
	struct jx_token tok; /* current token */
	struct jx_ast *ast;
	const char *file;
	struct jx_error *err;
	int nesting;
};

static struct jx_node *parse_expr(struct parser *p, int min_prec);

static int parse_fail(struct parser *p, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int parse_fail(struct parser *p, int line, int column, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jx_error_vset(p->err, p->file, line, column, fmt, ap);
	va_end(ap);
	return -1;
}

static int next(struct parser *p)
{
	free(p->tok.text);
	p->tok.text = NULL;
	return jx_lex_next(&p->lx, &p->tok);
}

/* Describes the current token for "expected X but found Y". */
static void describe(const struct jx_token *t, char *buf, size_t size)
{
	if (t->type == JXT_IDENT)
		snprintf(buf, size, "identifier '%.64s'", t->text);
	else
		snprintf(buf, size, "%s", jx_tok_name(t->type));
}

static int unexpected(struct parser *p, const char *wanted)
{
	char found[96];
	describe(&p->tok, found, sizeof found);
	if (wanted)
		return parse_fail(p, p->tok.line, p->tok.column, "expected %s but found %s", wanted,
		                  found);
	return parse_fail(p, p->tok.line, p->tok.column, "unexpected %s", found);
}

static int expect(struct parser *p, enum jx_tok type)
{
	if (p->tok.type != type)
		return unexpected(p, jx_tok_name(type));
	return next(p);
}

static int enter(struct parser *p, int line, int column)
{
	if (++p->nesting > JX_MAX_NESTING)
		return parse_fail(p, line, column, "nesting deeper than %d levels", JX_MAX_NESTING);
	return 0;
}

static struct jx_node *new_node(struct parser *p, enum jx_kind kind, int line, int column)
{
	struct jx_ast *ast = p->ast;
	VEC_RESERVE(ast->nodes, ast->capnodes, (size_t)ast->nnodes + 1);
	struct jx_node *n = xcalloc(1, sizeof *n);
	n->kind = kind;
	n->line = line;
	n->column = column;
	ast->nodes[ast->nnodes++] = n;
	return n;
}

static void add_kid(struct jx_node *n, struct jx_node *kid)
{
	if (n->nkids == n->capkids) {
		VEC_RESERVE_FIRST(n->kids, n->capkids, n->nkids + 1, 4);
		if (n->kind == JXN_CHAIN)
			VEC_RESIZE(n->ops, n->capkids);
	}
	n->kids[n->nkids++] = kid;
}

static struct jx_node *literal(struct parser *p, json_t *value, int line, int column)
{
	struct jx_node *n = new_node(p, JXN_LITERAL, line, column);
	n->value = value;
	return n;
}

static struct jx_node *parse_call(struct parser *p, int line, int column)
{
	struct jx_node *n = new_node(p, JXN_CALL, line, column);
	n->name = p->tok.text;
	p->tok.text = NULL;
	n->func = jx_func_lookup(n->name);
	if (!n->func) {
		parse_fail(p, line, column, "unknown function '%.64s'", n->name);
		return NULL;
	}
	if (next(p) < 0 || enter(p, line, column) < 0 || next(p) < 0) /* name, '(' */
		return NULL;
	if (p->tok.type != JXT_RPAREN) {
		for (;;) {
			struct jx_node *arg = parse_expr(p, 0);
			if (!arg)
				return NULL;
			add_kid(n, arg);
			if (p->tok.type != JXT_COMMA)
				break;
			if (next(p) < 0)
				return NULL;
			if (p->tok.type == JXT_RPAREN) /* a trailing comma, as CCTools allows */
				break;
		}
	}
	if (expect(p, JXT_RPAREN) < 0)
		return NULL;
	p->nesting--;
	const struct jx_func *f = n->func;
	if ((int)n->nkids < f->min_args || (int)n->nkids > f->max_args) {
		if (f->min_args == f->max_args)
			parse_fail(p, line, column, "%s() takes %d argument%s, got %zu", f->name,
			           f->min_args, f->min_args == 1 ? "" : "s", n->nkids);
		else
			parse_fail(p, line, column, "%s() takes %d to %d arguments, got %zu",
			           f->name, f->min_args, f->max_args, n->nkids);
		return NULL;
	}
	return n;
}

/* Parses the "for x in e" and "if c" clauses after a list item. */
static struct jx_node *parse_comprehension(struct parser *p, struct jx_node *item)
{
	struct jx_node *comp = new_node(p, JXN_COMP, item->line, item->column);
	comp->a = item;
	int entered = 0;
	while (p->tok.type == JXT_FOR || p->tok.type == JXT_IF) {
		int line = p->tok.line, column = p->tok.column;
		if (enter(p, line, column) < 0)
			return NULL;
		entered++;
		if (p->tok.type == JXT_FOR) {
			struct jx_node *f = new_node(p, JXN_FOR, line, column);
			if (next(p) < 0)
				return NULL;
			if (p->tok.type != JXT_IDENT) {
				unexpected(p, "a variable name");
				return NULL;
			}
			f->name = p->tok.text;
			p->tok.text = NULL;
			if (next(p) < 0 || expect(p, JXT_IN) < 0)
				return NULL;
			if (!(f->a = parse_expr(p, 0)))
				return NULL;
			add_kid(comp, f);
		} else {
			struct jx_node *c = new_node(p, JXN_IF, line, column);
			if (next(p) < 0 || !(c->a = parse_expr(p, 0)))
				return NULL;
			add_kid(comp, c);
		}
	}
	p->nesting -= entered;
	return comp;
}

static struct jx_node *parse_list(struct parser *p)
{
	struct jx_node *n = new_node(p, JXN_LIST, p->tok.line, p->tok.column);
	if (enter(p, n->line, n->column) < 0 || next(p) < 0)
		return NULL;
	if (p->tok.type != JXT_RBRACKET) {
		for (;;) {
			struct jx_node *item = parse_expr(p, 0);
			if (!item)
				return NULL;
			if (p->tok.type == JXT_FOR && !(item = parse_comprehension(p, item)))
				return NULL;
			add_kid(n, item);
			if (p->tok.type == JXT_RBRACKET)
				break;
			if (p->tok.type != JXT_COMMA) {
				unexpected(p, "',' or ']'");
				return NULL;
			}
			if (next(p) < 0)
				return NULL;
			if (p->tok.type == JXT_RBRACKET) /* a trailing comma, as CCTools allows */
				break;
		}
	}
	if (next(p) < 0)
		return NULL;
	p->nesting--;
	return n;
}

static struct jx_node *parse_object(struct parser *p)
{
	struct jx_node *n = new_node(p, JXN_OBJECT, p->tok.line, p->tok.column);
	if (enter(p, n->line, n->column) < 0 || next(p) < 0)
		return NULL;
	if (p->tok.type != JXT_RBRACE) {
		for (;;) {
			struct jx_node *key = parse_expr(p, 0);
			if (!key)
				return NULL;
			if (p->tok.type != JXT_COLON) {
				unexpected(p, "':' after an object key");
				return NULL;
			}
			if (next(p) < 0)
				return NULL;
			struct jx_node *value = parse_expr(p, 0);
			if (!value)
				return NULL;
			add_kid(n, key);
			add_kid(n, value);
			if (p->tok.type == JXT_RBRACE)
				break;
			if (p->tok.type != JXT_COMMA) {
				unexpected(p, "',' or '}'");
				return NULL;
			}
			if (next(p) < 0)
				return NULL;
			if (p->tok.type == JXT_RBRACE) /* a trailing comma, as CCTools allows */
				break;
		}
	}
	if (next(p) < 0)
		return NULL;
	p->nesting--;
	return n;
}

static struct jx_node *parse_primary(struct parser *p)
{
	int line = p->tok.line, column = p->tok.column;
	struct jx_node *n = NULL;
	switch (p->tok.type) {
	case JXT_INT:
		if (p->tok.ival > (uint64_t)INT64_MAX) {
			parse_fail(p, line, column, "integer out of range");
			return NULL;
		}
		n = literal(p, json_integer((json_int_t)p->tok.ival), line, column);
		break;
	case JXT_FLOAT: n = literal(p, json_real(p->tok.fval), line, column); break;
	case JXT_STRING:
		n = literal(p, json_stringn_nocheck(p->tok.text, p->tok.len), line, column);
		break;
	case JXT_NULL: n = literal(p, json_null(), line, column); break;
	case JXT_TRUE: n = literal(p, json_true(), line, column); break;
	case JXT_FALSE: n = literal(p, json_false(), line, column); break;
	case JXT_IDENT: {
		const char *after = p->lx.p;
		while (*after == ' ' || *after == '\t' || *after == '\n' || *after == '\r')
			after++;
		if (*after == '(')
			return parse_call(p, line, column);
		n = new_node(p, JXN_SYMBOL, line, column);
		n->name = p->tok.text;
		p->tok.text = NULL;
		break;
	}
	case JXT_LBRACKET: return parse_list(p);
	case JXT_LBRACE: return parse_object(p);
	case JXT_LPAREN:
		if (enter(p, line, column) < 0 || next(p) < 0 || !(n = parse_expr(p, 0)) ||
		    expect(p, JXT_RPAREN) < 0)
			return NULL;
		p->nesting--;
		return n;
	default: unexpected(p, NULL); return NULL;
	}
	if (n->kind == JXN_LITERAL && !n->value) {
		parse_fail(p, line, column, "invalid literal");
		return NULL;
	}
	if (next(p) < 0)
		return NULL;
	return n;
}

/* Indexing and slicing after a primary. Each one counts as a nesting level
 * because evaluation recurses through the chain. */
static struct jx_node *parse_postfix(struct parser *p, struct jx_node *n)
{
	int entered = 0;
	while (p->tok.type == JXT_LBRACKET) {
		int line = p->tok.line, column = p->tok.column;
		if (enter(p, line, column) < 0 || next(p) < 0)
			return NULL;
		entered++;
		struct jx_node *start = NULL, *end = NULL;
		if (p->tok.type != JXT_COLON && !(start = parse_expr(p, 0)))
			return NULL;
		struct jx_node *x;
		if (p->tok.type == JXT_COLON) {
			if (next(p) < 0)
				return NULL;
			if (p->tok.type != JXT_RBRACKET && !(end = parse_expr(p, 0)))
				return NULL;
			x = new_node(p, JXN_SLICE, line, column);
			x->c = end;
		} else {
			x = new_node(p, JXN_INDEX, line, column);
		}
		x->a = n;
		x->b = start;
		if (expect(p, JXT_RBRACKET) < 0)
			return NULL;
		n = x;
	}
	p->nesting -= entered;
	return n;
}

static struct jx_node *parse_prefix(struct parser *p)
{
	int line = p->tok.line, column = p->tok.column;
	enum jx_tok op = p->tok.type;
	if (op != JXT_MINUS && op != JXT_PLUS && op != JXT_NOT) {
		struct jx_node *n = parse_primary(p);
		return n ? parse_postfix(p, n) : NULL;
	}
	if (enter(p, line, column) < 0 || next(p) < 0)
		return NULL;
	if (op == JXT_MINUS && p->tok.type == JXT_INT && p->tok.ival == (uint64_t)INT64_MAX + 1) {
		/* the one integer literal that exists only negated */
		struct jx_node *n = literal(p, json_integer(INT64_MIN), line, column);
		if (next(p) < 0)
			return NULL;
		p->nesting--;
		return parse_postfix(p, n);
	}
	struct jx_node *operand = parse_expr(p, op == JXT_NOT ? PREC_NOT : PREC_UNARY);
	if (!operand)
		return NULL;
	p->nesting--;
	if (op == JXT_MINUS && operand->kind == JXN_LITERAL) {
		/* fold negative literals; no overflow is possible here */
		json_t *v = operand->value;
		if (json_is_integer(v) && json_integer_value(v) != INT64_MIN) {
			json_integer_set(v, -json_integer_value(v));
			operand->line = line;
			operand->column = column;
			return operand;
		}
		if (json_is_real(v)) {
			json_real_set(v, -json_real_value(v));
			operand->line = line;
			operand->column = column;
			return operand;
		}
	}
	struct jx_node *n = new_node(p, JXN_UNARY, line, column);
	n->op = op;
	n->a = operand;
	return n;
}

static int binary_prec(enum jx_tok t)
{
	switch (t) {
	case JXT_OR: return PREC_OR;
	case JXT_AND: return PREC_AND;
	case JXT_EQ:
	case JXT_NE:
	case JXT_LT:
	case JXT_LE:
	case JXT_GT:
	case JXT_GE: return PREC_CMP;
	case JXT_PLUS:
	case JXT_MINUS: return PREC_ADD;
	case JXT_STAR:
	case JXT_SLASH:
	case JXT_PERCENT: return PREC_MUL;
	default: return 0;
	}
}

static struct jx_node *parse_expr(struct parser *p, int min_prec)
{
	struct jx_node *left = parse_prefix(p);
	struct jx_node *chain = NULL;
	int chain_prec = 0;
	while (left) {
		int line = p->tok.line, column = p->tok.column;
		enum jx_tok t = p->tok.type;
		if (t == JXT_QUESTION && min_prec <= PREC_COND) {
			struct jx_node *c = new_node(p, JXN_COND, line, column);
			c->a = left;
			if (enter(p, line, column) < 0 || next(p) < 0 || !(c->b = parse_expr(p, 0)))
				return NULL;
			if (p->tok.type != JXT_COLON) {
				unexpected(p, "':' in a conditional");
				return NULL;
			}
			if (next(p) < 0 || !(c->c = parse_expr(p, PREC_COND)))
				return NULL;
			p->nesting--;
			left = c;
			continue;
		}
		int prec = binary_prec(t);
		if (!prec || prec < min_prec)
			break;
		if (next(p) < 0)
			return NULL;
		struct jx_node *right = parse_expr(p, prec + 1);
		if (!right)
			return NULL;
		if (!chain || chain != left || chain_prec != prec) {
			chain = new_node(p, JXN_CHAIN, left->line, left->column);
			chain_prec = prec;
			add_kid(chain, left);
		}
		chain->ops[chain->nkids - 1] = (struct jx_op){t, line, column};
		add_kid(chain, right);
		left = chain;
	}
	return left;
}

void jx_ast_delete(struct jx_ast *ast)
{
	if (!ast)
		return;
	for (size_t i = 0; i < ast->nnodes; i++) {
		struct jx_node *n = ast->nodes[i];
		json_decref(n->value);
		free(n->name);
		free(n->kids);
		free(n->ops);
		free(n);
	}
	free(ast->nodes);
	free(ast);
}

struct jx_ast *jx_parse(const char *text, const char *file, struct jx_error *err)
{
	struct parser p = {0};
	p.ast = xcalloc(1, sizeof *p.ast);
	p.file = file;
	p.err = err;
	jx_lex_init(&p.lx, text, file, err);
	if (next(&p) < 0)
		goto fail;
	if (p.tok.type == JXT_EOF) {
		parse_fail(&p, p.tok.line, p.tok.column, "empty input");
		goto fail;
	}
	p.ast->root = parse_expr(&p, 0);
	if (!p.ast->root)
		goto fail;
	if (p.tok.type != JXT_EOF) {
		unexpected(&p, "end of input");
		goto fail;
	}
	free(p.tok.text);
	return p.ast;
fail:
	free(p.tok.text);
	jx_ast_delete(p.ast);
	return NULL;
}
