/* dag_json.h: the JSON workflow front end with source positions: like
 * dag_from_json (parser.h), with the positions the JX evaluator noted, so
 * that rules carry their real line and every refusal names the line and
 * column of the offending value. */
#ifndef MAKEFLOW_DAG_JSON_H
#define MAKEFLOW_DAG_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "dag.h"
#include "jx.h"

/* As dag_from_json, with POS (may be NULL: then rules are named by index)
 * from jx_eval_file_at. Messages are "FILE:LINE:COL: rule N: message" where
 * a position is known. */
struct dag *dag_from_json_at(json_t *workflow, const char *filename, const struct jx_pos *pos,
                             char *err, size_t errlen);

#endif
