/* workflow_load.h: one entry point that turns a workflow file into a
 * finalized dag, whatever its form: the Make-like language, JSON, or JX with
 * --jx-args and --jx-define. Shared by makeflow and its companion tools. */
#ifndef MAKEFLOW_WORKFLOW_LOAD_H
#define MAKEFLOW_WORKFLOW_LOAD_H

#include <stddef.h>

#include "dag.h"

enum workflow_format {
	WORKFLOW_MAKE = 0,
	WORKFLOW_JSON,
	WORKFLOW_JX,
};

struct workflow_source {
	const char *path;
	enum workflow_format format;
	const char *jx_args;           /* --jx-args FILE or NULL */
	const char *const *jx_defines; /* NULL-terminated "VAR=EXPR" list or NULL */
	/* --parse-memory SIZE, else NULL: the environment's MAKEFLOW_PARSE_MEMORY,
	 * else the parser's default (parser.h, doc/makeflow-language.md) */
	const char *parse_memory;
};

/* Loads and finalizes. Returns the dag (caller dag_delete's) or NULL with a
 * one-line message ("FILE:LINE: ...") in err. */
struct dag *workflow_load(const struct workflow_source *src, char *err, size_t errlen);

/* The workflow-form options every tool takes (--json, --jx, --jx-args=F,
 * --jx-define=V=E, --parse-memory=SIZE): put WORKFLOW_LONG_OPTIONS in the getopt_long table (the
 * caller includes <getopt.h>) and pass each result to workflow_source_getopt. */
enum {
	WORKFLOW_OPT_JSON = 2000,
	WORKFLOW_OPT_JX,
	WORKFLOW_OPT_JX_ARGS,
	WORKFLOW_OPT_JX_DEFINE,
	WORKFLOW_OPT_PARSE_MEMORY,
};
#define WORKFLOW_LONG_OPTIONS                                                                      \
	{"json", no_argument, 0, WORKFLOW_OPT_JSON}, {"jx", no_argument, 0, WORKFLOW_OPT_JX},      \
	    {"jx-args", required_argument, 0, WORKFLOW_OPT_JX_ARGS},                               \
	    {"jx-define", required_argument, 0, WORKFLOW_OPT_JX_DEFINE},                           \
	{                                                                                          \
		"parse-memory", required_argument, 0, WORKFLOW_OPT_PARSE_MEMORY                    \
	}

/* Applies getopt_long's result C (with ARG) to SRC. Returns 1 if C was one
 * of the workflow options, 0 otherwise. --jx-define values are appended to a
 * list the caller frees with workflow_source_free. */
int workflow_source_getopt(struct workflow_source *src, int c, const char *arg);
void workflow_source_free(struct workflow_source *src);

#endif
