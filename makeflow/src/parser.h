/* parser.h: the front ends that build a struct dag: the Make-like Makeflow
 * language (doc/makeflow-language.md), read as a stream, and the JSON form of
 * a workflow (after JX evaluation). Every error comes back as one line
 * "FILE:LINE: message" (JSON: "FILE: rule N: message") and a NULL dag. */
#ifndef MAKEFLOW_PARSER_H
#define MAKEFLOW_PARSER_H

#include <stddef.h>

#include <jansson.h>

#include "dag.h"

/* Default hard caps (see struct dag_parse_options). */
#define DAG_PARSE_MAX_LINE      (1024 * 1024)
#define DAG_PARSE_MAX_DEPTH     100
#define DAG_PARSE_MAX_EXPANSION (16 * 1024 * 1024)

struct dag_parse_options {
	/* Do not consult the process environment for undefined variables. */
	int ignore_environment;
	/* NULL-terminated "NAME=value" strings assigned as global variables
	 * before the first line (values are taken literally). May be NULL. */
	const char *const *defines;
	/* Caps; 0 selects the default. max_line: bytes in one logical line
	 * (continuations included); max_depth: nesting of substitutions;
	 * max_expansion: bytes produced by expanding one line or value. */
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
