/* engine_longcmd.h: rules whose command is too long to be one argument of `sh -c` (the kernel
 * refuses an argument over 128 KiB at exec) run from a script file instead
 * (doc/makeflow-language.md, "Long commands"). */
#ifndef ENGINE_LONGCMD_H
#define ENGINE_LONGCMD_H

#include <stddef.h>

/* Commands longer than this many bytes are run from a script: well under the kernel's
 * 128 KiB per argument, so that the wrappers around a command (resource_monitor, --wrapper)
 * still fit. */
#define ENGINE_LONGCMD_MAX (64 * 1024)

/* What a long command becomes: the command to submit instead, and the script, which a job
 * that does not run here must receive as an input file (INPUT_LOCAL, sent as INPUT_REMOTE,
 * NULL when the driver keeps names). Strings owned by the struct. */
struct engine_longcmd {
	char *command;
	char *script;       /* the script's path (relative to makeflow's directory) */
	char *input_remote; /* name in the job's sandbox, or NULL */
	int needs_input;    /* the script is an input file of the job */
};

/* For rule ID of the workflow whose transaction log is LOG_PATH: if CMD is longer than
 * ENGINE_LONGCMD_MAX, writes it to NAME.cmds/rule-ID.sh in makeflow's directory (NAME:
 * the log's file name) and fills OUT. RUNS_HERE: the job
 * runs on this host in makeflow's directory (it is given the script's absolute path);
 * otherwise the script is an input file, named makeflow-cmd-ID.sh in the job's sandbox when
 * RENAME (the driver may rename files), else under its own path. Returns 0 when CMD is short
 * (OUT zeroed, nothing written), 1 when OUT is filled, or -errno when the script cannot be
 * written. */
int engine_longcmd_prepare(const char *log_path, int id, const char *cmd, int runs_here, int rename,
                           struct engine_longcmd *out);
/* Frees the strings of L (not L). */
void engine_longcmd_clear(struct engine_longcmd *l);
/* Removes the script of rule ID, and the directory NAME.cmds once it is empty. */
void engine_longcmd_done(const char *log_path, int id);

#endif
