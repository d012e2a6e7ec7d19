/* engine_mounts.h: --mounts FILE and --cache-dir DIR (doc/makeflow-archive.md, "Mounts"):
 * before a run, each TARGET of the mount file is made a link to a copy, in the cache
 * directory, of its SOURCE (a local file or directory, or an http/https URL). Internal to the
 * makeflow engine. */
#ifndef MAKEFLOW_ENGINE_MOUNTS_H
#define MAKEFLOW_ENGINE_MOUNTS_H

#include <stddef.h>

#include "dag.h"

/* One line of a mount file. */
struct engine_mount {
	char *target;
	char *source;
	int line;
	int is_url;
};

/* Reads the mount file PATH: "TARGET SOURCE" per line; blank lines and lines starting with
 * '#' are skipped. Checks each line by itself (words, target form, a local source exists).
 * Returns 0 with *MOUNTS (caller frees with engine_mounts_free) and *N, or HTC_EPARSE /
 * -errno with "PATH:LINE: ..." in ERR. */
int engine_mounts_parse(const char *path, struct engine_mount **mounts, size_t *n, char *err,
                        size_t errlen);
void engine_mounts_free(struct engine_mount *mounts, size_t n);

/* The cache directory used when --cache-dir is not given, for the workflow WORKFLOW
 * (relative to the working directory, one per workflow; caller frees). */
char *engine_mounts_default_cache(const char *workflow);

/* Applies the mount file PATH with the cache directory CACHE_DIR: fills the cache (a URL
 * already in it is not fetched again; local sources are copied again) and links every
 * target to its copy. With D, a target that a rule of D creates is refused. Returns 0, or an
 * error with the message in ERR. */
int engine_mounts_apply(const char *path, const char *cache_dir, const struct dag *d, char *err,
                        size_t errlen);

/* Undoes engine_mounts_apply: removes the targets of PATH that are links into CACHE_DIR, then
 * CACHE_DIR. Returns 0, or an error with the message in ERR. */
int engine_mounts_clean(const char *path, const char *cache_dir, char *err, size_t errlen);

#endif
