/* parser.h: the front ends that build a struct dag: the Make-like Makeflow
 * language (doc/makeflow-language.md), read as a stream, and the JSON form of
 * a workflow (after JX evaluation). Every error comes back as one line
 * "FILE:LINE: message" (JSON: "FILE: rule N: message") and a NULL dag. */
#ifndef MAKEFLOW_PARSER_H
#define MAKEFLOW_PARSER_H

#include <stddef.h>

#include <jansson.h>

#include "dag.h"

/* Nesting of variable references allowed by default. */
#define DAG_PARSE_MAX_DEPTH 100

/* The memory budget of one parse when nothing else is said
 * (doc/makeflow-language.md, "Limits"): 1 GiB, or half of the process's
 * address-space or data limit (RLIMIT_AS, RLIMIT_DATA) when that is lower. */
#define DAG_PARSE_MEMORY (1024UL * 1024 * 1024)
size_t dag_parse_default_memory(void);

struct dag_parse_options {
	/* Do not consult the process environment for undefined variables. */
	int ignore_environment;
	/* NULL-terminated "NAME=value" strings assigned as global variables
	 * before the first line (values are taken literally). May be NULL. */
	const char *const *defines;
	/* The memory budget in bytes; 0 selects dag_parse_default_memory().
	 * Everything the parse holds counts against it: the current line (of
	 * any length, continuations included), its expansion, variable values,
	 * and the rules, files and environments it builds. Passing it is an
	 * error "FILE:LINE: ... memory budget ..." and the parse stops. */
	size_t max_memory;
	/* Extra caps for programs embedding the parser (the fuzzer); 0 means
	 * the budget alone. max_line: bytes in one logical line; max_depth:
	 * nesting of substitutions (0 = DAG_PARSE_MAX_DEPTH); max_expansion:
	 * bytes produced by expanding one line or value. */
	size_t max_line;
	int max_depth;
	size_t max_expansion;
};

/* Parses the workflow file PATH. OPTS may be NULL. Returns a finalized dag
 * (caller frees with dag_delete), or NULL with the first error in ERR. */
struct dag *dag_from_file(const char *path, const struct dag_parse_options *opts, char *err,
                          size_t errlen);

/* Same for the NUL-terminated TEXT, with NAME used as the file name in
 * messages. */
struct dag *dag_from_string(const char *text, const char *name,
                            const struct dag_parse_options *opts, char *err, size_t errlen);
/* Same for LEN bytes of DATA (any bytes; a NUL byte is an error). */
struct dag *dag_from_buffer(const char *data, size_t len, const char *name,
                            const struct dag_parse_options *opts, char *err, size_t errlen);

/* Builds a finalized dag from an evaluated JSON workflow (object with
 * "rules", optional "environment", "categories", "default_category";
 * "define" is ignored). FILENAME names the source in messages. Returns NULL
 * with "FILE: rule N: message" (or "FILE: message") in ERR. Does not take
 * ownership of WORKFLOW. */
struct dag *dag_from_json(json_t *workflow, const char *filename, char *err, size_t errlen);

#endif
