/* jx.h: the JX expression language, JSON extended with symbols, operators,
 * function calls and list comprehensions, evaluated into plain jansson
 * values. Makeflow uses it to read --jx workflows, --jx-args files and
 * --jx-define expressions; doc/jx.md is the language reference. */
#ifndef HTC_JX_H
#define HTC_JX_H

#include <stddef.h>

#include <jansson.h>

/* Hard limits. Input that exceeds one is an error, never a crash or hang.
 * They may be lowered at compile time (-DJX_MAX_WORK=...), e.g. to keep
 * fuzzing fast. */
#ifndef JX_MAX_NESTING
#define JX_MAX_NESTING 1000 /* brackets, unary operators, ... in the text; value depth */
#endif
#ifndef JX_MAX_ELEMENTS
#define JX_MAX_ELEMENTS 10000000 /* values placed into lists/objects by one evaluation */
#endif
#ifndef JX_MAX_WORK
#define JX_MAX_WORK 100000000 /* evaluation steps of one evaluation (a few seconds) */
#endif
#ifndef JX_MAX_BYTES
#define JX_MAX_BYTES (256u << 20) /* string bytes produced by one evaluation */
#endif
#ifndef JX_MAX_FILE
#define JX_MAX_FILE (64u << 20) /* size of a file read by jx_eval_file */
#endif

/* Where and why an evaluation failed. `message` is the bare description;
 * jx_error_format() gives the usual "FILE:LINE:COL: message" line. Line and
 * column count from 1; they are 0 when the failure has no position (for
 * example a file that cannot be read). */
struct jx_error {
	char file[256];
	int line;
	int column;
	char message[512];
};

/* Parses and evaluates JX text. `defines` (may be NULL) is a JSON object of
 * extra symbols that override the text's own top-level "define" entries.
 * The top-level object's "define" member (if present) is evaluated first, in
 * order, each entry able to use earlier ones; then every other member is
 * evaluated with those symbols in scope. `filename` (may be NULL) is used in
 * error messages only. Returns a new reference (caller json_decref's) or NULL
 * with *err filled (err may be NULL). The result may share unchanged
 * sub-values with `defines` and with itself: treat it as read-only, or
 * json_deep_copy() it before modifying it in place. */
json_t *jx_eval_string(const char *text, const char *filename, json_t *defines,
                       struct jx_error *err);

/* Reads the file at `path` (at most JX_MAX_FILE bytes) and evaluates it as
 * jx_eval_string() does. */
json_t *jx_eval_file(const char *path, json_t *defines, struct jx_error *err);

/* Evaluates one standalone expression (for --jx-define VAR=EXPR) with the
 * members of `symbols` (a JSON object, may be NULL) in scope; no "define"
 * handling. Returns a new reference or NULL with *err filled. */
json_t *jx_eval_expr(const char *text, json_t *symbols, struct jx_error *err);

/* Reads a --jx-args file: a JX/JSON object whose members become symbols.
 * Returns a new reference to the evaluated object, or NULL with *err filled
 * (also when the file does not evaluate to an object). */
json_t *jx_load_args(const char *path, struct jx_error *err);

/* Where the values of an evaluation came from in its text (jx_pos.c). */
struct jx_pos;

/* Like jx_eval_file(), and when POS is not NULL also sets *POS (caller
 * deletes with jx_pos_delete) to the positions of the objects and lists the
 * text builds and of the values placed in them. With JSON_ONLY the text must
 * be plain JSON (trailing commas and '#' comments allowed, as CCTools' --json
 * reads it): a symbol, operator, call or comprehension is an error, and
 * "define" is not evaluated. */
json_t *jx_eval_file_at(const char *path, json_t *defines, int json_only, struct jx_pos **pos,
                        struct jx_error *err);

/* The line and column (from 1) where the object or list V was written.
 * Returns 1, or 0 when V has no noted position (then *line and *column are
 * untouched). */
int jx_pos_find(const struct jx_pos *pos, const json_t *v, int *line, int *column);
/* The same for the value of member NAME of the object OBJ. */
int jx_pos_find_member(const struct jx_pos *pos, const json_t *obj, const char *name, int *line,
                       int *column);
/* The same for item INDEX of the list LIST. */
int jx_pos_find_item(const struct jx_pos *pos, const json_t *list, size_t index, int *line,
                     int *column);
void jx_pos_delete(struct jx_pos *pos);

/* Writes "FILE:LINE:COL: message" (or "FILE: message" without a position)
 * into buf, truncating to size. Returns buf. */
char *jx_error_format(const struct jx_error *err, char *buf, size_t size);

#endif
