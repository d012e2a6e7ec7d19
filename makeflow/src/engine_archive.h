/* engine_archive.h: --archive, --archive-read, --archive-write (doc/makeflow-archive.md): the
 * outputs of completed rules kept in a directory under a key made of what determines them
 * (command, environment, input contents, output names), and restored instead of running a
 * rule whose key is there. Internal to the makeflow engine. */
#ifndef MAKEFLOW_ENGINE_ARCHIVE_H
#define MAKEFLOW_ENGINE_ARCHIVE_H

#include <stddef.h>

#include "dag.h"
#include "sha256.h"

struct engine_archive;

/* An archive in DIR (created if missing): READ restores
 * archived rules, WRITE stores completed ones. NULL with the reason in ERR. Delete with
 * engine_archive_delete (NULL is fine). */
struct engine_archive *engine_archive_create(const char *dir, int read, int write, char *err,
                                             size_t errlen);
void engine_archive_delete(struct engine_archive *a);

/* The key of N run as COMMAND (64 hex digits into KEY). Returns 0, or -errno when an input
 * cannot be read (then the rule is neither restored nor stored). */
int engine_archive_key(struct engine_archive *a, const struct dag_node *n, const char *command,
                       char key[SHA256_HEX_SIZE]);

/* Before N runs as COMMAND: computes its key and, when reading and the key is archived,
 * copies the archived outputs into place. Returns 1 when the outputs were restored (the rule
 * need not run), else 0. */
int engine_archive_lookup(struct engine_archive *a, const struct dag_node *n, const char *command);

/* After N succeeded: when writing, stores its outputs under the key lookup computed, as one
 * entry that appears whole or not at all. Returns 0, or -errno after a warning. */
int engine_archive_store(struct engine_archive *a, const struct dag_node *n);

/* Says (notice) how many rules were restored and stored, if any. NULL is fine. */
void engine_archive_report(const struct engine_archive *a);

/* The directory of the entry of KEY (caller frees). */
char *engine_archive_entry(const struct engine_archive *a, const char *key);

#endif
