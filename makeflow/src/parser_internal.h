/* parser_internal.h: state shared by the pieces of the Makeflow-language
 * parser: the streaming line reader and substitution engine (parser_lex.c)
 * and the statement handlers (parser.c). Not for use outside the parser. */
#ifndef MAKEFLOW_PARSER_INTERNAL_H
#define MAKEFLOW_PARSER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uthash.h>

#include "buffer.h"
#include "dag.h"
#include "parser.h"

#define PARSER_READ_BLOCK (64 * 1024)

/* A variable binding. */
struct pvar {
	char *value;
	UT_hash_handle hh;
	char name[];
};

/* Variables assigned while a category was current. */
struct pcat {
	struct dag_category *cat;
	struct pvar *vars;
	UT_hash_handle hh; /* keyed by cat->name */
};

/* A name given to export, in export order. */
struct pexport {
	UT_hash_handle hh;
	char name[];
};

/* How expand() treats quotes and backslashes. */
enum xmode {
	XMODE_COMMAND, /* quotes and backslashes kept for the shell */
	XMODE_VALUE,   /* quotes kept, escapes turned into characters */
};

/* One file named in a list: local name and optional remote name. */
struct pword {
	char *name;
	char *remote;
};

struct parser {
	struct dag *dag;
	char *err;
	size_t errlen;
	int failed;

	/* limits */
	size_t max_line; /* cap of one logical line (the budget if not set) */
	int max_depth;
	size_t max_expansion;              /* cap of one expansion (the budget if not set) */
	int line_capped, expansion_capped; /* max_line / max_expansion were given */
	uint64_t expanded_total;           /* substituted bytes so far (a CPU guard) */
	uint64_t expanded_cap;
	uint64_t budget; /* bytes the parse may hold (struct dag_parse_options) */
	uint64_t held;   /* bytes held for the rest of the parse: values, the dag */
	int use_env;

	/* input: DATA is the whole text, or the current block of FP */
	FILE *fp;
	char *rbuf;
	const char *data;
	size_t data_len, data_pos;
	int phys_line; /* number of the last physical line read */
	int eof;
	struct buffer phys;  /* last physical line, without newline */
	struct buffer logic; /* current logical line */
	int line;            /* first physical line of the logical line */
	char lead;           /* first character of the logical line */

	/* variables */
	struct pvar *globals;
	struct pcat *cats;
	struct pcat *cur;    /* current category; its vars unused for default */
	struct pvar *locals; /* rule-local (@) bindings of the pending rule */
	struct pexport *exports;
	unsigned gen; /* bumped on every change to variables */

	/* the pending rule: header seen, command not yet */
	int rule_pending;
	int rule_line;
	int rule_bare_line; /* first rule-local NAME=value line without '@', or 0 */
	int last_was_command;
	char *rule_targets, *rule_sources;
	struct pcat *rule_cat; /* from @CATEGORY, else NULL */
	struct dag_resources rule_res;
	uint8_t rule_res_bits;

	/* environment snapshot sharing */
	struct dag_env *snap;
	unsigned snap_gen;
	struct pcat *snap_cat;

	/* MAKEFLOW_INPUTS / MAKEFLOW_OUTPUTS as last assigned */
	int inputs_line, outputs_line;

	/* scratch */
	struct buffer tmp;
};

/* Records the first error "FILE:LINE: message"; returns -1. */
int perr(struct parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Checks the budget: the bytes held, the working line buffers and EXTRA
 * bytes about to be used. Returns 0, or -1 with the budget error at LINE. */
int parser_budget(struct parser *p, int line, uint64_t extra);
/* The error for an expansion past its cap (the budget unless max_expansion
 * was given); returns -1. */
int parser_too_big(struct parser *p, int line);
/* Counts N more bytes as held and checks the budget. */
int parser_charge(struct parser *p, int line, uint64_t n);

/* Reads the next non-blank logical line into p->logic (comments removed,
 * continuations joined), sets p->line and p->lead. Returns 1, 0 at end of
 * input, or -1 on error. */
int parser_read_line(struct parser *p);

/* Appends the expansion of S[0..N) to OUT. Returns 0 or -1 (error set). */
int parser_expand(struct parser *p, const char *s, size_t n, struct buffer *out, enum xmode mode,
                  int line, int depth);

/* Flags of parser_split_words. */
enum {
	SPLIT_RENAME = 1,     /* "a->b", "a -> b", "a ->b", "a-> b" name a remote name */
	SPLIT_SKIP_EMPTY = 2, /* an empty quoted word ("" or '') is no word, not an error */
};

/* Splits expanded text into file words (quotes stripped, escapes applied,
 * "a->b" split when FLAGS has SPLIT_RENAME). Returns the count (>= 0) with a
 * new array in *WORDS that the caller frees with parser_words_free, or -1
 * (error set). */
int parser_split_words(struct parser *p, const char *s, int line, int flags, struct pword **words);
void parser_words_free(struct pword *words, int count);

/* Value of NAME as seen now (rule-local, category, global, environment if
 * USE_ENV), or NULL. CATEGORY gives the current category name. */
const char *parser_lookup(struct parser *p, const char *name, int use_env);

/* 1 if S[0..N) is a variable name. */
int parser_is_name(const char *s, size_t n);

#endif
