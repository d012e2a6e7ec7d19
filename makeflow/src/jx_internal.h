/* jx_internal.h: private declarations shared by the JX lexer, parser,
 * evaluator and built-in functions (jx_*.c). Nothing outside those files
 * includes it; the public interface is jx.h. */
#ifndef HTC_JX_INTERNAL_H
#define HTC_JX_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jx.h"

/* ---- errors -------------------------------------------------------------- */

/* Fills *err with file, position and a printf-style message. */
void jx_error_set(struct jx_error *err, const char *file, int line, int column, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
void jx_error_vset(struct jx_error *err, const char *file, int line, int column, const char *fmt,
                   va_list ap) __attribute__((format(printf, 5, 0)));

/* ---- lexer --------------------------------------------------------------- */

enum jx_tok {
	JXT_EOF,
	JXT_INT,
	JXT_FLOAT,
	JXT_STRING,
	JXT_IDENT,
	JXT_NULL,
	JXT_TRUE,
	JXT_FALSE,
	JXT_AND,
	JXT_OR,
	JXT_NOT,
	JXT_FOR,
	JXT_IN,
	JXT_IF,
	JXT_LBRACKET,
	JXT_RBRACKET,
	JXT_LBRACE,
	JXT_RBRACE,
	JXT_LPAREN,
	JXT_RPAREN,
	JXT_COMMA,
	JXT_COLON,
	JXT_QUESTION,
	JXT_PLUS,
	JXT_MINUS,
	JXT_STAR,
	JXT_SLASH,
	JXT_PERCENT,
	JXT_EQ,
	JXT_NE,
	JXT_LT,
	JXT_LE,
	JXT_GT,
	JXT_GE,
};

struct jx_token {
	enum jx_tok type;
	int line;
	int column;
	uint64_t ival; /* JXT_INT: magnitude, at most 2^63 */
	double fval;   /* JXT_FLOAT */
	char *text;    /* JXT_STRING (decoded) and JXT_IDENT; owned by the token */
	size_t len;    /* length of text */
};

struct jx_lexer {
	const char *p; /* next unread byte; the text is NUL-terminated */
	int line;
	int column;
	const char *file;
	struct jx_error *err;
};

void jx_lex_init(struct jx_lexer *lx, const char *text, const char *file, struct jx_error *err);
/* Reads the next token into *tok (whose old text the caller has released).
 * Returns 0, or -1 with lx->err filled. */
int jx_lex_next(struct jx_lexer *lx, struct jx_token *tok);
/* Short description of a token kind for messages ("']'", "end of input"). */
const char *jx_tok_name(enum jx_tok type);

/* ---- syntax tree ----------------------------------------------------------- */

enum jx_kind {
	JXN_LITERAL, /* value */
	JXN_SYMBOL,  /* name */
	JXN_LIST,    /* kids: items (a JXN_COMP item is spliced) */
	JXN_OBJECT,  /* kids: key0, value0, key1, value1, ... */
	JXN_UNARY,   /* op, a */
	JXN_CHAIN,   /* kids: operands; ops[i] joins kids[i] and kids[i+1] */
	JXN_COND,    /* a ? b : c */
	JXN_INDEX,   /* a[b] */
	JXN_SLICE,   /* a[b:c], b and c may be NULL */
	JXN_CALL,    /* func, kids: arguments */
	JXN_COMP,    /* a for ...: kids are JXN_FOR and JXN_IF clauses */
	JXN_FOR,     /* for name in a */
	JXN_IF,      /* if a */
};

struct jx_func;

/* One operator of a JXN_CHAIN, with its position for error messages. */
struct jx_op {
	enum jx_tok tok;
	int line;
	int column;
};

struct jx_node {
	enum jx_kind kind;
	enum jx_tok op;
	int line;
	int column;
	json_t *value; /* owned */
	char *name;    /* owned */
	const struct jx_func *func;
	struct jx_node *a, *b, *c;
	struct jx_node **kids; /* owned array; the nodes belong to the tree */
	struct jx_op *ops;     /* owned array, JXN_CHAIN: nkids - 1 entries */
	size_t nkids;
	size_t capkids;
};

/* A parsed text. Every node is listed in `nodes`, so deleting the tree is
 * one flat loop whatever its shape. */
struct jx_ast {
	struct jx_node **nodes;
	size_t nnodes;
	size_t capnodes;
	struct jx_node *root;
};

/* Parses a whole text as one expression. Returns the tree (caller deletes
 * with jx_ast_delete) or NULL with *err filled. */
struct jx_ast *jx_parse(const char *text, const char *file, struct jx_error *err);
void jx_ast_delete(struct jx_ast *ast);

/* ---- evaluation ------------------------------------------------------------ */

/* A comprehension variable, innermost first. */
struct jx_frame {
	const char *name;
	json_t *value; /* borrowed */
	const struct jx_frame *up;
};

struct jx_eval {
	json_t *symbols; /* object, borrowed; may be NULL */
	const struct jx_frame *frames;
	const char *file;
	struct jx_error *err;
	int failed;
	uint64_t elements;
	uint64_t work;
	uint64_t bytes;
	struct jx_pos *pos; /* where to note positions of values, or NULL */
};

/* ---- positions (jx_pos.c) ---------------------------------------------------- */

struct jx_pos *jx_pos_create(void);
/* Notes that the object or list V was written at LINE:COLUMN, unless it
 * already has a place (other values are ignored). */
void jx_pos_note(struct jx_pos *pos, json_t *v, int line, int column);
/* Notes where the value of member NAME of OBJ, or of item INDEX of LIST, was
 * written. */
void jx_pos_note_member(struct jx_pos *pos, json_t *obj, const char *name, json_t *value, int line,
                        int column);
void jx_pos_note_item(struct jx_pos *pos, json_t *list, size_t index, json_t *value, int line,
                      int column);

/* Records an error at node `at` (the first error wins). Always returns -1. */
int jx_fail(struct jx_eval *ev, const struct jx_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same at an explicit position. */
int jx_fail_pos(struct jx_eval *ev, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Evaluates a node. Returns a new reference, or NULL after jx_fail. */
json_t *jx_eval_node(struct jx_eval *ev, const struct jx_node *n);
/* Looks a symbol up in the comprehension frames, then the symbol table.
 * Returns a borrowed reference or NULL. */
json_t *jx_lookup(const struct jx_eval *ev, const char *name);

/* Accounting against the limits in jx.h; each returns 0 or -1 after jx_fail. */
int jx_charge_work(struct jx_eval *ev, const struct jx_node *at, uint64_t amount);
int jx_charge_bytes(struct jx_eval *ev, const struct jx_node *at, size_t amount);
/* Appends `item` (stolen, even on failure) to `list`, charging its size and
 * checking its depth. */
int jx_list_add(struct jx_eval *ev, const struct jx_node *at, json_t *list, json_t *item);
/* The same for an object member; the key is copied. */
int jx_object_add(struct jx_eval *ev, const struct jx_node *at, json_t *obj, const char *key,
                  json_t *value);
/* Drops a reference to a temporary value (NULL is fine), returning the
 * element budget its container used if this frees it. */
void jx_release(struct jx_eval *ev, json_t *v);
/* Checks a finished value: at most JX_MAX_ELEMENTS values counted as a tree
 * and at most JX_MAX_NESTING levels deep. Returns 0 or -1 after jx_fail. */
int jx_check_value(struct jx_eval *ev, const struct jx_node *at, json_t *v);
/* Makes a string value from len bytes (must be valid UTF-8, no NUL),
 * charging its bytes. Returns a new reference or NULL after jx_fail. */
json_t *jx_make_string(struct jx_eval *ev, const struct jx_node *at, const char *s, size_t len);
/* Makes a float value, failing on NaN or infinity. */
json_t *jx_make_real(struct jx_eval *ev, const struct jx_node *at, double d);
/* Text of a scalar (string as is, numbers, true/false/null) for
 * concatenation, format("%s"), join and template. Returns a new string
 * (caller frees) or NULL after jx_fail for lists and objects. */
char *jx_scalar_text(struct jx_eval *ev, const struct jx_node *at, json_t *v, const char *what);
/* Deep equality; 1 == 1.0. Returns 1, 0, or -1 after jx_fail. */
int jx_equal(struct jx_eval *ev, const struct jx_node *at, json_t *x, json_t *y);
/* "integer", "string", ... for messages. */
const char *jx_type_name(json_t *v);

/* ---- built-in functions ------------------------------------------------------ */

typedef json_t *(*jx_func_fn)(struct jx_eval *ev, const struct jx_node *call, json_t **args,
                              size_t nargs);

struct jx_func {
	const char *name;
	int min_args;
	int max_args;
	jx_func_fn fn;
};

/* The built-in function called `name`, or NULL. */
const struct jx_func *jx_func_lookup(const char *name);

#endif
