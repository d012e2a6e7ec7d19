/* dag.h: the in-memory workflow: rules (nodes), the files that connect them,
 * and the categories that size them. The front ends (parser.h) fill it; the
 * engine reads it and keeps its own per-node and per-file state in the slots
 * marked "engine". Built to hold millions of rules: file names are interned
 * once, environment snapshots are shared between rules, and nodes carry small
 * arrays rather than hash tables.
 *
 * Life cycle: dag_create, then dag_node_add / dag_node_add_input /
 * dag_node_add_output per rule, then dag_finalize (edges, checks, depths),
 * then the structure is read-only except for the engine slots. */
#ifndef MAKEFLOW_DAG_H
#define MAKEFLOW_DAG_H

#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

/* Name of the category rules belong to when none is given. */
#define DAG_DEFAULT_CATEGORY "default"

/* Allocation modes of a category (doc/allocation: FIXED is the default). */
enum dag_category_mode {
	DAG_MODE_FIXED = 0,
	DAG_MODE_MAX,
	DAG_MODE_MIN_WASTE,
	DAG_MODE_MAX_THROUGHPUT,
};

/* What a rule does when it exhausts its first allocation (JSON
 * "allocation"): retry with the maximum (AUTO), go straight to the maximum
 * (MAX), or fail (ERROR). The Makeflow language always gives AUTO. */
enum dag_allocation {
	DAG_ALLOCATION_AUTO = 0,
	DAG_ALLOCATION_MAX,
	DAG_ALLOCATION_ERROR,
};

/* Resource quantities; every field is -1 when unset. */
struct dag_resources {
	int64_t cores;
	int64_t memory; /* MB */
	int64_t disk;   /* MB */
	int64_t gpus;
	int64_t wall_time; /* seconds */
};

/* Field K of R, in the order cores, memory, disk, gpus, wall_time (K = 0..4,
 * the same order as the DAG_RES_* bits), so front ends can loop over them. */
#define DAG_NRESOURCES 5
int64_t *dag_resources_field(struct dag_resources *r, int k);

/* Bits of dag_node.explicit_resources: which fields the rule itself set. */
#define DAG_RES_CORES     0x01
#define DAG_RES_MEMORY    0x02
#define DAG_RES_DISK      0x04
#define DAG_RES_GPUS      0x08
#define DAG_RES_WALL_TIME 0x10

/* An immutable, reference-counted environment: COUNT strings "NAME=value".
 * Many rules point at the same one; never modify it after creation. */
struct dag_env {
	int refcount;
	int count;
	char **vars;
};

struct dag_node;

/* A file of the workflow, interned by name in dag.files. */
struct dag_file {
	struct dag_node *producer;   /* rule that creates it, or NULL */
	struct dag_node **consumers; /* rules that read it, in file order */
	int nconsumers;
	int consumers_cap;       /* private: allocated slots */
	int64_t size_hint;       /* bytes, from .SIZE; -1 when unknown */
	int64_t ref_count;       /* engine (garbage collector); dag_finalize
	                          * sets it to nconsumers */
	int state;               /* engine: file state; 0 initially */
	uint8_t is_final_output; /* set by dag_finalize (see struct dag) */
	uint8_t is_source;       /* set by dag_finalize: no producer */
	uint8_t is_extra_input;  /* named in MAKEFLOW_INPUTS */
	void *engine;            /* engine: anything; NULL initially */
	UT_hash_handle hh;       /* private: dag.files, keyed by name */
	char name[];             /* the name on the submit host */
};

/* One input or output of a rule. */
struct dag_file_ref {
	struct dag_file *file;
	char *remote_name; /* name in the task sandbox, NULL if not renamed */
};

/* A category: a named group of rules sharing resource limits. */
struct dag_category {
	char *name;
	enum dag_category_mode mode;
	uint8_t mode_set; /* the workflow gave the mode (.MAKEFLOW MODE / JSON "mode") */
	/* The category's resources. In the Makeflow language a category's value
	 * is the LAST one assigned in the file (applies to all its rules, even
	 * those above the assignment); redefinitions warn. */
	struct dag_resources max;
	int max_line[5];             /* private: line of the last assignment per field */
	struct dag_env *environment; /* JSON "environment" of the category, or NULL */
	UT_hash_handle hh;           /* private: dag.categories, keyed by name */
};

/* A rule. */
struct dag_node {
	int id;                     /* 0..n-1 in file order */
	int line;                   /* line of the rule header; for JSON the rule index */
	char *command;              /* after substitution, without a LOCAL prefix */
	uint8_t local;              /* run on the submit host (LOCAL or BATCH_LOCAL) */
	uint8_t explicit_resources; /* DAG_RES_* bits set by the rule itself */
	uint8_t allocation;         /* enum dag_allocation */
	char *workflow;             /* nested workflow file (MAKEFLOW cmd), else NULL */
	char *workflow_args;        /* rest of the MAKEFLOW command line, or NULL */

	struct dag_file_ref *inputs;
	struct dag_file_ref *outputs;
	int ninputs, noutputs;
	int inputs_cap, outputs_cap; /* private */

	struct dag_category *category; /* never NULL after dag_node_add */
	/* Requested resources: the rule's own values (explicit_resources), then
	 * its category's, then the default category's (filled by dag_finalize);
	 * -1 = unset. */
	struct dag_resources resources;
	const char *batch_options; /* interned in the dag; NULL if none */
	/* CONTAINER, CONTAINER_IMAGE_TAR (interned; NULL if unset) and CONTAINER_MODE
	 * (enum dag_container_mode) of the rule's scope (doc/makeflow-language.md) */
	const char *container_image;
	const char *container_archive;
	uint8_t container_mode;
	struct dag_env *env; /* shared snapshot; NULL = empty */

	/* Built by dag_finalize. */
	struct dag_node **parents;  /* distinct producers of the inputs */
	struct dag_node **children; /* distinct consumers of the outputs */
	int nparents, nchildren;
	int depth; /* longest path from a rule without parents (0) */

	/* Engine slots: untouched by this module (zero initially). */
	int state;
	int unfinished_parents;
	int engine_int;
	void *engine;
};

struct dag_string; /* private: interned strings */

struct dag {
	char *filename;         /* workflow file name, used in messages */
	struct dag_file *files; /* uthash by name; iterate with f->hh.next */
	int nfiles;
	struct dag_node **nodes; /* in file order; nodes[i]->id == i */
	int nnodes;
	int nodes_cap;                   /* private */
	struct dag_category *categories; /* uthash by name, insertion order */
	struct dag_category *default_category;

	/* MAKEFLOW_INPUTS / MAKEFLOW_OUTPUTS. When outputs_declared is 0, every
	 * produced file that no rule consumes is a final output (dag_finalize
	 * sets is_final_output; outputs then lists them). */
	struct dag_file **inputs;
	int ninputs;
	struct dag_file **outputs;
	int noutputs;
	int outputs_declared;

	int finalized;
	int max_depth;              /* after dag_finalize; -1 for an empty dag */
	int json;                   /* private: messages name rule indexes, not lines */
	struct dag_string *strings; /* private */
};

/* Creates an empty dag whose messages name FILENAME (copied). Never NULL. */
struct dag *dag_create(const char *filename);
/* Frees everything, including the nodes, files and snapshots. NULL is fine. */
void dag_delete(struct dag *d);

/* The file NAME, or NULL. */
struct dag_file *dag_file_lookup(const struct dag *d, const char *name);
/* The file NAME, created (no producer, no consumers) if new. */
struct dag_file *dag_file_get_or_create(struct dag *d, const char *name);

/* The category NAME, or NULL. */
struct dag_category *dag_category_lookup(const struct dag *d, const char *name);
/* The category NAME, created (mode FIXED, resources unset) if new. */
struct dag_category *dag_category_get_or_create(struct dag *d, const char *name);
/* Iteration in creation order: for (c = dag_categories(d); c; c = dag_category_next(c)). */
struct dag_category *dag_categories(const struct dag *d);
struct dag_category *dag_category_next(const struct dag_category *c);
/* Parses "FIXED", "MAX", "MIN_WASTE", "MAX_THROUGHPUT" (case-insensitive;
 * "WASTE" and "THROUGHPUT" also accepted). Returns 0 or HTC_EPARSE. */
int dag_category_mode_parse(const char *s, enum dag_category_mode *mode);
/* Static upper-case name of a mode. */
const char *dag_category_mode_name(enum dag_category_mode mode);

/* Appends a rule at LINE with COMMAND (copied), in CATEGORY (NULL = the
 * default category). Resources unset, no files. Never NULL. */
struct dag_node *dag_node_add(struct dag *d, int line, const char *command,
                              struct dag_category *category);
/* Sets a nested workflow (both copied; ARGS may be NULL). */
void dag_node_set_workflow(struct dag_node *n, const char *workflow, const char *args);
/* Sets the batch options (interned; NULL clears). */
void dag_node_set_batch_options(struct dag *d, struct dag_node *n, const char *options);

enum dag_container_mode {
	DAG_CONTAINER_UNSET = 0, /* the image given decides (task mode), or --docker */
	DAG_CONTAINER_NONE,      /* no container, whatever the defaults */
	DAG_CONTAINER_TASK,      /* a container of its own */
	DAG_CONTAINER_SHARED,    /* one container per image kept by the worker */
};
/* Sets N's container (IMAGE or ARCHIVE may be NULL; both are interned in D). */
void dag_node_set_container(struct dag *d, struct dag_node *n, const char *image,
                            const char *archive, enum dag_container_mode mode);
/* Replaces the node's snapshot with ENV (takes a new reference; NULL ok). */
void dag_node_set_env(struct dag_node *n, struct dag_env *env);

/* Adds FILE as an input of N; REMOTE (copied, may be NULL) is its sandbox
 * name. A file already an input of N is not added twice (returns 0).
 * Returns 0. */
int dag_node_add_input(struct dag *d, struct dag_node *n, struct dag_file *f, const char *remote);
/* Adds FILE as an output of N. Listing it twice in one rule is harmless. If
 * another rule already produces it, writes "FILE:LINE: file 'x' is produced
 * by rules at lines A and B" into ERR and returns HTC_EDUP. */
int dag_node_add_output(struct dag *d, struct dag_node *n, struct dag_file *f, const char *remote,
                        char *err, size_t errlen);

/* Environment snapshots. dag_env_create copies COUNT "NAME=value" strings
 * and returns a snapshot with refcount 1. */
struct dag_env *dag_env_create(char *const *vars, int count);
struct dag_env *dag_env_ref(struct dag_env *e);
void dag_env_unref(struct dag_env *e); /* NULL is fine */
/* Value of NAME in E (pointer into E), or NULL. */
const char *dag_env_get(const struct dag_env *e, const char *name);
/* 1 if A and B hold the same strings in the same order (NULL = empty). */
int dag_env_equal(const struct dag_env *a, const struct dag_env *b);

/* Records MAKEFLOW_INPUTS / MAKEFLOW_OUTPUTS (a file listed twice is kept
 * once). dag_add_final_output also sets outputs_declared. */
void dag_add_extra_input(struct dag *d, struct dag_file *f);
void dag_add_final_output(struct dag *d, struct dag_file *f);

/* Builds parents/children, fills resources from categories, marks source
 * and final-output files, sets ref_count = nconsumers, checks for cycles and
 * computes depths. Iterative: safe for millions of rules. On a cycle writes
 * "FILE:LINE: cycle: a -> b -> a" (each file is needed to make the next;
 * LINE is the line of a rule on the cycle) and returns HTC_ECYCLE. Returns 0
 * or an error; calling it twice is harmless. */
int dag_finalize(struct dag *d, char *err, size_t errlen);

/* After dag_finalize: *MAX_DEPTH receives the largest node depth (-1 for an
 * empty dag) and *WIDTHS (if not NULL) a new array of max_depth+1 counts of
 * nodes per depth (caller frees; NULL for an empty dag). Returns 0, or
 * -EINVAL if the dag is not finalized. */
int dag_topological_depth(const struct dag *d, int *max_depth, int **widths);

/* Writes "FILE:LINE: " + message into ERR (LINE 0: "FILE: "). Used by the
 * front ends so every message has the same shape. */
void dag_error(const struct dag *d, int line, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
