/* engine_nested.h: how the engine starts and stops a nested workflow: the
 * job's command (every word quoted, JX arguments passed in a file, never
 * pasted into the command), its environment, and the guard that makes a
 * nested makeflow stop its own jobs when its parent goes away. */
#ifndef MAKEFLOW_ENGINE_NESTED_H
#define MAKEFLOW_ENGINE_NESTED_H

#include <stddef.h>

#include "dag.h"

struct engine_nested_job {
	char *command;   /* the job's command */
	char *args_file; /* the --jx-args file written for the job (an input), or NULL */
	char *env[3];    /* "MAKEFLOW_NESTED_CHAIN=...", "MAKEFLOW_NESTED_FROM=...", NULL */
};

/* Prepares rule N (a nested workflow) of D for submission: writes its "args"
 * to WORKFLOW.ID.args.jx, and builds the command
 *   [cd DIR &&] exec SELF -T local -l WORKFLOW.ID.makeflowlog [--jx [--jx-args FILE]] WORKFLOW
 * Returns 0, or -1 with a message in ERR (the args file cannot be written). */
int engine_nested_prepare(const char *self_exe, const struct dag *d, const struct dag_node *n,
                          struct engine_nested_job *j, char *err, size_t errlen);
void engine_nested_clear(struct engine_nested_job *j);
/* makeflow --clean=MODE of a parent: cleans nested rule N's workflow the same way, by running
 * its makeflow with --clean=MODE on its own log (nothing when that log does not exist: the
 * child never ran), and removes the arguments file of a JX child. 0, or -1 (said). */
int engine_nested_clean(const char *self_exe, const struct dag *d, const struct dag_node *n,
                        const char *mode);

/* In a makeflow started by a nested workflow rule (MAKEFLOW_NESTED_FROM is
 * set), splits the process in two before anything runs: a guard that the
 * parent's batch system sees as the job, and the makeflow that runs the
 * workflow in its own process group. When the guard dies (the parent
 * removed the job, or the parent itself died), the makeflow receives
 * SIGTERM and removes its own jobs, as on Ctrl-C. Returns -1 in the process
 * that goes on running the workflow; in the guard, the makeflow's exit
 * status once it has ended. */
int engine_nested_guard(void);

#endif
