/* engine_wrapper.h: --wrapper, --wrapper-input and --wrapper-output (doc/makeflow-archive.md,
 * "Wrappers"): the command every rule runs inside the wrappers, and the files the wrappers
 * add to every rule. Internal to the makeflow engine. */
#ifndef MAKEFLOW_ENGINE_WRAPPER_H
#define MAKEFLOW_ENGINE_WRAPPER_H

#include <stddef.h>

#include "dag.h"

/* COMMAND inside the NULL-terminated WRAPPERS, the first given innermost. In each wrapper
 * "%%" becomes ID; then "{}" is replaced by the command as it is, else "[]" by the command
 * quoted as one shell word, else " /bin/sh -c 'COMMAND'" is appended. Returns NULL when there
 * are no wrappers, else a new string (caller frees). */
char *engine_wrap_command(const char *const *wrappers, const char *command, int id);

/* NAME with every "%%" replaced by ID (caller frees). */
char *engine_wrap_name(const char *name, int id);

/* Adds every file of INPUTS and OUTPUTS (NULL-terminated; either may be NULL), "%%" expanded,
 * to every rule of D, then finalizes D again. Returns 0, or an HTC_E* error with the message
 * (naming the option and the rule) in ERR. */
int engine_wrap_dag(struct dag *d, const char *const *inputs, const char *const *outputs, char *err,
                    size_t errlen);

#endif
