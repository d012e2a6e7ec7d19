/* catalog_cctools.h: the catalog queries of CCTools clients (catalog_query, work_queue_status,
 * a CCTools worker's -M): GET /query/BASE64 where BASE64 encodes a JX filter expression, and
 * the answers in the forms they parse: a JSON array written one record a line, and the
 * "key value" text of /query.text. doc/catalog.md, section 3. */
#ifndef HTC_CATALOG_CCTOOLS_H
#define HTC_CATALOG_CCTOOLS_H

#include <jansson.h>
#include <stddef.h>

#include "catalog_expr.h"

/* Decodes ARG, the path after "/query/" (standard base64, '=' padding optional, %XX escapes
 * allowed), and parses it as a filter expression. Returns the expression (caller deletes), or
 * NULL with a one-line reason in *ERR (caller frees). */
struct catalog_expr *catalog_cctools_parse_query(const char *arg, char **err);

/* A new array (caller decrefs) of the records of RECORDS that match E, each a copy with the
 * CCTools names of two keys added: "lastheardfrom" (of "lastheard") and "tasks_complete" (of
 * "tasks_done"), when the record has the one and not the other. */
json_t *catalog_cctools_select(const json_t *records, const struct catalog_expr *e);

/* RECORDS as CCTools writes them: "[\n" REC ",\n" REC ... "\n]\n" (JSON), or for the text
 * form one "key value" line per field and an empty line after each record. Caller frees;
 * *LEN is the length. */
char *catalog_cctools_json(const json_t *records, size_t *len);
char *catalog_cctools_text(const json_t *records, size_t *len);

#endif
