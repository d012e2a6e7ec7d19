/* engine_nested.c: starting and stopping nested workflows (engine_nested.h).
 * A sub-workflow's command is built from quoted words only; its JX arguments
 * travel in a file; and a nested makeflow keeps a guard process so that it
 * stops with its parent. */
#include "engine_nested.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.h"
#include "buffer.h"
#include "debug.h"
#include "path.h"
#include "stringtools.h"
#include "workflow_nested.h"
#include "xalloc.h"
#include "banned.h"

/* Appends " WORD" quoted for the shell. */
static void put_word(struct buffer *b, const char *word)
{
	char *q = str_escape_shell(word);
	buffer_printf(b, " %s", q);
	free(q);
}

/* P made absolute against CWD when CWD is not NULL (caller frees). */
static char *anchor(const char *cwd, const char *p)
{
	return cwd && !path_is_absolute(p) ? path_join(cwd, p) : xstrdup(p);
}

/* The command of engine_nested_prepare, with CLEAN (a --clean=MODE word) when not NULL. */
static int build(const char *self_exe, const struct dag *d, const struct dag_node *n,
                 const char *clean, struct engine_nested_job *j, char *err, size_t errlen)
{
	memset(j, 0, sizeof *j);
	int jx = workflow_nested_is_jx(d, n);
	if (jx && workflow_nested_json_args(n)) {
		j->args_file = xasprintf("%s.%d.args.jx", n->workflow, n->id);
		int rc = atomic_file_write(j->args_file, n->workflow_args, strlen(n->workflow_args),
		                           0644);
		if (rc < 0) {
			snprintf(err, errlen, "cannot write the arguments file %s: %s",
			         j->args_file, strerror(-rc));
			engine_nested_clear(j);
			return -1;
		}
	}
	char *dir = workflow_nested_dir(d, n);
	char cwdbuf[PATH_MAX];
	const char *cwd = dir && getcwd(cwdbuf, sizeof cwdbuf) ? cwdbuf : NULL;
	struct buffer b;
	buffer_init(&b, 0);
	if (dir) {
		char *q = str_escape_shell(dir);
		buffer_printf(&b, "cd %s &&", q);
		free(q);
	}
	buffer_printf(&b, "%sexec", dir ? " " : "");
	put_word(&b, self_exe ? self_exe : "makeflow");
	put_word(&b, "-T");
	put_word(&b, "local");
	char *log = xasprintf("%s.%d.makeflowlog", n->workflow, n->id);
	char *alog = anchor(cwd, log);
	put_word(&b, "-l");
	put_word(&b, alog);
	if (clean)
		put_word(&b, clean);
	if (jx)
		put_word(&b, "--jx");
	if (j->args_file) {
		char *aargs = anchor(cwd, j->args_file);
		put_word(&b, "--jx-args");
		put_word(&b, aargs);
		free(aargs);
	}
	char *wf = anchor(cwd, n->workflow);
	/* a file name that starts with '-' must not read as an option */
	put_word(&b, "--");
	put_word(&b, wf);
	j->command = xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	free(wf);
	free(alog);
	free(log);
	free(dir);
	workflow_nested_env(d->filename, n, &j->env[0], &j->env[1]);
	return 0;
}

int engine_nested_prepare(const char *self_exe, const struct dag *d, const struct dag_node *n,
                          struct engine_nested_job *j, char *err, size_t errlen)
{
	return build(self_exe, d, n, NULL, j, err, errlen);
}

int engine_nested_clean(const char *self_exe, const struct dag *d, const struct dag_node *n,
                        const char *mode)
{
	/* the child's log is beside the parent's workflow (build() anchors it there) */
	char *log = xasprintf("%s.%d.makeflowlog", n->workflow, n->id);
	int ran = path_exists(log);
	free(log);
	if (!ran)
		return 0; /* the child never ran: it made nothing */
	struct engine_nested_job j;
	char err[256];
	char *word = xasprintf("--clean=%s", mode);
	int r = build(self_exe, d, n, word, &j, err, sizeof err);
	free(word);
	if (r < 0) {
		warn("nested workflow %s: %s", n->workflow, err);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		warn("nested workflow %s: cannot start its clean: %s", n->workflow,
		     strerror(errno));
		engine_nested_clear(&j);
		return -1;
	}
	if (pid == 0) {
		/* the child makeflow's own guard needs to know it is nested */
		putenv(j.env[0]);
		putenv(j.env[1]);
		execl("/bin/sh", "sh", "-c", j.command, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* the arguments file is the run's own: the clean removes it too */
	if (j.args_file)
		unlink(j.args_file);
	engine_nested_clear(&j);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		warn("nested workflow %s: its clean failed", n->workflow);
		return -1;
	}
	notice("cleaned the nested workflow %s", n->workflow);
	return 0;
}

void engine_nested_clear(struct engine_nested_job *j)
{
	free(j->command);
	free(j->args_file);
	free(j->env[0]);
	free(j->env[1]);
	memset(j, 0, sizeof *j);
}

int engine_nested_guard(void)
{
	if (!getenv(WORKFLOW_NESTED_FROM_ENV))
		return -1;
	pid_t parent = getppid();
	/* the guard dies with the parent makeflow, whatever kills it */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -1;
	if (getppid() != parent)
		return 1;
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid_t guard = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		warn("nested workflow: cannot fork its guard (%s); it will not stop with its "
		     "parent",
		     strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, 0);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (getppid() != guard) /* the guard is already gone */
			return 1;
		return -1;
	}
	debug(D_MAKEFLOW, "nested workflow: guard %d runs the workflow as %d", (int)guard,
	      (int)pid);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(pid, sig);
			continue;
		}
		int status;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			if (WIFEXITED(status))
				return WEXITSTATUS(status);
			return 128 + WTERMSIG(status);
		}
	}
}
