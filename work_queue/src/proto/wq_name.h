/* wq_name.h: the name sandboxing rules of the Work Queue protocol (section 6
 * of doc/work-queue-protocol.md): checks of input, output and directory member
 * names on their bytes, before any filesystem call, of the uniqueness and
 * prefix rule within one task, and of cache object names. */
#ifndef WQ_NAME_H
#define WQ_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define WQ_NAME_MAX            1024 /* bytes of a whole name */
#define WQ_NAME_COMPONENT_MAX  255  /* bytes of one component */
#define WQ_NAME_COMPONENTS_MAX 64   /* components of one name */
#define WQ_OBJECT_NAME_LEN     66   /* "F-" and 64 hex digits */

/* What a name is, for the reply texts: "input name", "output name" or
 * "member name". */
enum wq_name_kind {
	WQ_NAME_INPUT,
	WQ_NAME_OUTPUT,
	WQ_NAME_MEMBER,
};

/* Checks NAME (a NUL-terminated string) against rules 1 to 3 of section 6.
 * Returns 0 if it is acceptable. Otherwise returns HTC_EPARSE and, if WHY is
 * not NULL, sets *WHY to the reply text, e.g.
 *   input name "../x": ".." is not allowed
 * The name in the text is quoted, with control characters, invalid UTF-8,
 * '"' and '\' escaped (\x0a, \", \\) and, past 64 bytes, cut at a character
 * boundary and ended with "…". *WHY is allocated: the caller frees it. */
int wq_name_check(enum wq_name_kind kind, const char *name, char **why);

/* Checks N names of one kind of one task: each with wq_name_check, then rule
 * 4 (no name twice, no name a directory prefix of another, as "a" and "a/b").
 * Returns 0, or HTC_EPARSE with *WHY (caller frees) saying which names. If
 * BAD_INDEX is not NULL it receives the index of an offending name. */
int wq_name_check_list(enum wq_name_kind kind, const char *const *names, size_t n, char **why,
                       size_t *bad_index);

/* True if NAME is a cache object name: exactly ^[FDU]-[0-9a-f]{64}$. */
bool wq_name_is_object(const char *name);

/* The label of a kind ("input name", "output name", "member name"). */
const char *wq_name_kind_label(enum wq_name_kind kind);

#endif
