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
};

/* Loads and finalizes. Returns the dag (caller dag_delete's) or NULL with a
 * one-line message ("FILE:LINE: ...") in err. */
struct dag *workflow_load(const struct workflow_source *src, char *err, size_t errlen);

/* Common option handling for the tools: recognizes --json, --jx,
 * --jx-args=F, --jx-define=V=E in long-option callbacks. Returns 1 if OPT
 * (the long option name) was one of them and has been applied to SRC
 * (defines are appended to a list the caller frees with
 * workflow_source_free). */
int workflow_source_option(struct workflow_source *src, const char *opt, const char *arg);
void workflow_source_free(struct workflow_source *src);

#endif
