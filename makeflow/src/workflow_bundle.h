/* workflow_bundle.h: makeflow_analyze -b DIR: a portable copy of a workflow in DIR, with every
 * file it needs that no rule makes, so that it runs on another machine (see doc/manual.md,
 * "Moving a workflow elsewhere"). */
#ifndef MAKEFLOW_WORKFLOW_BUNDLE_H
#define MAKEFLOW_WORKFLOW_BUNDLE_H

#include <stddef.h>
#include <stdio.h>

#include "dag.h"
#include "workflow_load.h"

/* Copies the workflow file of SRC (loaded as D), its --jx-args file and every source file of D
 * into DIR, which must not exist or be empty. Relative names keep their place; a name that is
 * absolute or leads out of the workflow's directory goes to the top of DIR under its base name
 * (NAME.1, NAME.2 ... when taken), and the copied workflow file names it there (each whole-word
 * occurrence, file lists and commands alike). One line "ORIGINAL<TAB>BUNDLED" per file goes to
 * OUT. Returns 0, or -1 with a message in ERR (a source that does not exist, DIR not empty, a
 * copy that failed); DIR may then hold part of the bundle. */
int workflow_bundle(const struct workflow_source *src, const struct dag *d, const char *dir,
                    FILE *out, char *err, size_t errlen);

/* In TEXT, replaces every occurrence of FROM that is a whole path word (the characters around it
 * cannot be part of a path) by TO. Returns a new string (caller frees). */
char *workflow_bundle_replace_word(const char *text, const char *from, const char *to);

#endif
