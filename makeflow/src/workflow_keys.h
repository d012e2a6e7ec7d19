/* workflow_keys.h: the one table of the keys a workflow may hold, in the JSON
 * form (top level, rules, categories, resources, file objects) and the
 * resource names shared with the Make-like form, each with its status: built
 * here, or known from CCTools' JSON/JX Makeflow but not built yet. Front ends
 * refuse a key that no row knows and say "not supported" for the others. */
#ifndef MAKEFLOW_WORKFLOW_KEYS_H
#define MAKEFLOW_WORKFLOW_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Where a key may appear. */
enum workflow_key_place {
	WORKFLOW_KEY_TOP = 0,   /* the workflow object */
	WORKFLOW_KEY_RULE,      /* an element of "rules" */
	WORKFLOW_KEY_CATEGORY,  /* a value of "categories" */
	WORKFLOW_KEY_RESOURCES, /* a "resources" object */
	WORKFLOW_KEY_FILE,      /* an object in "inputs" / "outputs" */
	WORKFLOW_KEY_CONTAINER, /* a rule's "container" object */
};

enum workflow_key_status {
	WORKFLOW_KEY_SUPPORTED = 0,
	WORKFLOW_KEY_UNSUPPORTED, /* CCTools knows it; this makeflow does not build it */
};

struct workflow_key {
	enum workflow_key_place place;
	const char *name;
	enum workflow_key_status status;
	/* resources: index in struct dag_resources order (0..4), else -1 */
	int resource;
	/* what to do instead, for unsupported keys; NULL if nothing to say */
	const char *hint;
};

/* The row for NAME at PLACE, or NULL if no row knows it. */
const struct workflow_key *workflow_key_find(enum workflow_key_place place, const char *name);

/* Human name of PLACE for messages ("a rule", "a category"...). */
const char *workflow_key_place_name(enum workflow_key_place place);

/* Writes into BUF (SIZE bytes) the message for a key that is refused at
 * PLACE: "unknown key 'comand' in a rule (did you mean 'command'?)" or "key
 * 'makeflow' in a rule is not supported here (...)". Returns BUF. */
const char *workflow_key_refusal(enum workflow_key_place place, const char *name, char *buf,
                                 size_t size);

/* Parses resource K (0 cores, 1 memory MB, 2 disk MB, 3 gpus, 4 wall time s)
 * from TEXT with the rules of both forms: cores and gpus whole numbers,
 * memory and disk with optional units (2G), wall time with s m h d w.
 * Negative values and fractions of cores are refused. Returns 0 or -1. */
int workflow_resource_parse(int k, const char *text, int64_t *out);

/* The line (from 1) of the one place where "KEY" followed by ':' occurs in
 * the file PATH, or 0 when it occurs nowhere or more than once, or the file
 * cannot be read (JSON parsers keep no positions; this gives the real line
 * when it is certain). Reads at most MAX_BYTES bytes. */
int workflow_key_line(const char *path, const char *key, size_t max_bytes);

#endif
