/* workflow_nested.h: what a nested workflow rule means before it runs: the
 * form of its sub-workflow (Make-like or JX), its working directory, and the
 * chain of parent workflows that every nested makeflow receives in its
 * environment, so that a workflow calling itself and unbounded nesting are
 * refused with the file and line of the rule. */
#ifndef MAKEFLOW_WORKFLOW_NESTED_H
#define MAKEFLOW_WORKFLOW_NESTED_H

#include <stddef.h>

#include "dag.h"

/* The real paths of the parent workflows, outermost first, one a line. */
#define WORKFLOW_NESTED_CHAIN_ENV "MAKEFLOW_NESTED_CHAIN"
/* "FILE:LINE" of the rule that started this makeflow. */
#define WORKFLOW_NESTED_FROM_ENV "MAKEFLOW_NESTED_FROM"
/* The deepest nesting allowed (a whole number from 0). */
#define WORKFLOW_NESTED_MAX_ENV     "MAKEFLOW_MAX_NESTING"
#define WORKFLOW_NESTED_DEFAULT_MAX 16

/* The nesting limit: MAKEFLOW_MAX_NESTING when it is a whole number, else 16. */
int workflow_nested_max(void);

/* 1 if rule N is a JSON/JX nested rule with "args" (its workflow_args hold
 * the JSON object). */
int workflow_nested_json_args(const struct dag_node *n);

/* 1 if rule N's sub-workflow is read as JX: a JSON rule with "args", or a
 * file whose name ends in .jx or .json. */
int workflow_nested_is_jx(const struct dag *d, const struct dag_node *n);

/* The working directory of a Make-like "MAKEFLOW FILE DIR" rule (caller
 * frees), NULL when there is none. */
char *workflow_nested_dir(const struct dag *d, const struct dag_node *n);

/* Checks the nested rules of D (read from PATH) against the chain in the
 * environment: a rule whose sub-workflow is PATH itself or one of its
 * parents, a rule deeper than the limit, a Make-like MAKEFLOW rule with more
 * than a file and a directory; and PATH itself when it is already in the
 * chain. Returns 0, or -1 with "FILE:LINE: ..." in ERR. */
int workflow_nested_check(const struct dag *d, const char *path, char *err, size_t errlen);

/* The environment entries for a sub-workflow started by rule N of the
 * workflow at PATH: "MAKEFLOW_NESTED_CHAIN=..." (this chain plus PATH) into
 * *CHAIN and "MAKEFLOW_NESTED_FROM=PATH:LINE" into *FROM (caller frees both). */
void workflow_nested_env(const char *path, const struct dag_node *n, char **chain, char **from);

#endif
