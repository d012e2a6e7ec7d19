/* engine_longcmd.c: a command too long for `sh -c` is written to a script beside the
 * transaction log (NAME.cmds/rule-ID.sh) and the job runs `sh SCRIPT`; a job that runs
 * elsewhere (Work Queue) receives the script as one more input file. */
#include "engine_longcmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "path.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

/* In makeflow's directory, named after the log (a relative name: a Work Queue job's input
 * files may not be absolute paths). */
static char *script_dir(const char *log_path)
{
	const char *base = strrchr(log_path, '/');
	return xasprintf("%s.cmds", base ? base + 1 : log_path);
}

static char *script_path(const char *log_path, int id)
{
	char *dir = script_dir(log_path);
	char *p = xasprintf("%s/rule-%d.sh", dir, id);
	free(dir);
	return p;
}

int engine_longcmd_prepare(const char *log_path, int id, const char *cmd, int runs_here, int rename,
                           struct engine_longcmd *out)
{
	memset(out, 0, sizeof *out);
	size_t len = strlen(cmd);
	if (len <= ENGINE_LONGCMD_MAX)
		return 0;
	char *dir = script_dir(log_path);
	int r = path_mkdir_p(dir, 0755);
	free(dir);
	if (r < 0)
		return r;
	char *script = script_path(log_path, id);
	/* a final newline, so that a command ending in a here-document or a comment is whole */
	char *text = xasprintf("%s\n", cmd);
	r = atomic_file_write(script, text, len + 1, 0644);
	free(text);
	if (r < 0) {
		free(script);
		return r;
	}
	out->script = script;
	if (runs_here) {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			r = -errno;
			engine_longcmd_clear(out);
			return r;
		}
		char *abs = path_join(cwd, script);
		char *q = str_escape_shell(abs);
		out->command = xasprintf("/bin/sh %s", q);
		free(q);
		free(abs);
		return 1;
	}
	out->needs_input = 1;
	if (rename) {
		out->input_remote = xasprintf("makeflow-cmd-%d.sh", id);
		out->command = xasprintf("/bin/sh %s", out->input_remote);
	} else {
		char *q = str_escape_shell(script);
		out->command = xasprintf("/bin/sh %s", q);
		free(q);
	}
	return 1;
}

void engine_longcmd_clear(struct engine_longcmd *l)
{
	free(l->command);
	free(l->script);
	free(l->input_remote);
	memset(l, 0, sizeof *l);
}

void engine_longcmd_done(const char *log_path, int id)
{
	char *script = script_path(log_path, id);
	unlink(script);
	free(script);
	char *dir = script_dir(log_path);
	rmdir(dir); /* fails while other scripts are there */
	free(dir);
}
