/* report_dot.h: a workflow's DAG as Graphviz DOT, and its rendering by Graphviz's `dot` when it
 * is installed: shared by makeflow_viz (-D dot, -D svg, -D png) and the run report's DAG
 * section. */
#ifndef MAKEFLOW_REPORT_DOT_H
#define MAKEFLOW_REPORT_DOT_H

#include <stddef.h>
#include <stdio.h>

#include "dag.h"

/* Writes D as DOT to OUT: rules as boxes labelled with their command, files as ellipses
 * (sources grey, final outputs blue), edges file -> rule -> file. */
void report_dot_write(FILE *out, const struct dag *d);

/* Writes D as DOT with rules only (an edge from each parent), each filled with FILLS[id] (a
 * CSS colour, or NULL for white; FILLS may be NULL) and labelled "ID: command". */
void report_dot_write_rules(FILE *out, const struct dag *d, const char *const *fills,
                            const char *const *titles);

/* The path of Graphviz's `dot` on the PATH (caller frees), or NULL when it is not installed. */
char *report_dot_find(void);

/* Runs `DOT -TFORMAT` (FORMAT "svg", "png", ...) on the file IN, writing the file OUT. Returns
 * 0, or -1 with a message in ERR (dot missing, dot failed with its status and first line of
 * error output). */
int report_dot_render(const char *in, const char *format, const char *out, char *err,
                      size_t errlen);

#endif
