/* catalog_filter.h: the query filters of the catalog's /query.json: a URL query string of
 * KEY=VALUE terms, all of which a record must match (see doc/catalog.md, "Filter syntax"). */
#ifndef HTC_CATALOG_FILTER_H
#define HTC_CATALOG_FILTER_H

#include <jansson.h>
#include <stdbool.h>

#define CATALOG_FILTER_MAX_TERMS 32
#define CATALOG_FILTER_MAX_KEY   64
#define CATALOG_FILTER_MAX_VALUE 4096

struct catalog_filter;

/* Parses QUERY (the raw text after '?', "" for none). Returns 0 and a filter in *OUT (caller
 * deletes), or HTC_EPARSE / HTC_ELIMIT with a one-line reason in *ERR (caller frees). */
int catalog_filter_parse(const char *query, struct catalog_filter **out, char **err);
/* A filter from one KEY=VALUE text as typed on a command line (not URL-decoded): appends a
 * term to F. Returns 0, or HTC_EPARSE with *ERR set (caller frees). */
int catalog_filter_add(struct catalog_filter *f, const char *key, const char *value, char **err);
/* An empty filter (matches everything). Never NULL. */
struct catalog_filter *catalog_filter_create(void);
/* NULL is accepted. */
void catalog_filter_delete(struct catalog_filter *f);

/* True if RECORD (a JSON object) matches every term of F; a NULL F matches everything. */
bool catalog_filter_match(const struct catalog_filter *f, const json_t *record);

/* The filter as a URL query string (terms URL-encoded, joined by '&'), "" when empty. Caller
 * frees. */
char *catalog_filter_to_query(const struct catalog_filter *f);

/* Number of terms. */
int catalog_filter_count(const struct catalog_filter *f);

#endif
