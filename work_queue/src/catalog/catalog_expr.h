/* catalog_expr.h: the filter expressions CCTools clients send to a catalog (catalog_query -w,
 * work_queue_status): a small subset of JX over one record's fields, parsed once into a tree
 * and evaluated against each record. Parsing and evaluation are bounded (length, depth, nodes)
 * and never run anything: there are no function calls. doc/catalog.md, section 3. */
#ifndef HTC_CATALOG_EXPR_H
#define HTC_CATALOG_EXPR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CATALOG_EXPR_MAX_TEXT       4096 /* bytes of expression */
#define CATALOG_EXPR_MAX_DEPTH      64   /* nesting of operators and parentheses */
#define CATALOG_EXPR_MAX_NODES      512
#define CATALOG_EXPR_MAX_PATTERN    256 /* bytes of a like() pattern */
#define CATALOG_EXPR_MAX_GROUPS     8   /* nesting of ( ) in a like() pattern */
#define CATALOG_EXPR_MAX_GROUPS_STR "8"

struct catalog_expr;

/* Parses the LEN bytes of TEXT: literals (true false null, integers, reals, "strings" with
 * JSON escapes), field names ([A-Za-z_][A-Za-z0-9_]*, a field the record lacks is null),
 * parentheses, unary not ! and -, binary * / % (% on integers only) + - < <= > >= == != and
 * && or ||, with JX's precedence, and like(VALUE, "ERE"). Returns the tree (caller deletes), or
 * NULL with a one-line reason naming the byte offset in *ERR (caller frees). */
struct catalog_expr *catalog_expr_parse(const char *text, size_t len, char **err);
/* The same for the value TEXT of a command-line option: NULL with "--where TEXT: why" in ERR
 * (at most ERRLEN bytes) when it does not parse. */
struct catalog_expr *catalog_expr_parse_option(const char *text, char *err, size_t errlen);

/* NULL is accepted. */
void catalog_expr_delete(struct catalog_expr *e);

/* True if E evaluated over RECORD (a JSON object) gives the boolean true; an error during
 * evaluation (a type mismatch, a division by zero) gives false, as in CCTools. */
bool catalog_expr_match(const struct catalog_expr *e, const json_t *record);

#endif
