/* wq_factory_cmd.c: builds the worker command of work_queue_factory (wq_factory_cmd.h). Names
 * that come from the factory's own options are quoted for the shell; the -E text and the
 * --wrapper prefixes are shell text by definition and go in as given, as in CCTools. */
#include "wq_factory_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

/* The -P part (" -P '/abs/pw'"), "" without a password; NULL on failure. */
static char *password_part(const char *password, char *err, size_t errlen)
{
	if (!password)
		return xstrdup("");
	char *abs;
	if (password[0] == '/') {
		abs = xstrdup(password);
	} else {
		char cwd[4096];
		if (!getcwd(cwd, sizeof cwd)) {
			snprintf(err, errlen, "cannot read the current directory: %s",
			         strerror(errno));
			return NULL;
		}
		abs = xasprintf("%s/%s", cwd, password);
	}
	char *q = str_escape_shell(abs);
	char *part = xasprintf(" -P %s", q);
	free(q);
	free(abs);
	return part;
}

char *wq_factory_worker_command(const struct wq_factory_cmd *c, char *err, size_t errlen)
{
	char *pw = password_part(c->password, err, errlen);
	if (!pw)
		return NULL;
	char *where;
	if (c->project) {
		char *p = str_escape_shell(c->project);
		char *cat = c->catalog ? str_escape_shell(c->catalog) : NULL;
		where = xasprintf("-M %s%s%s", p, cat ? " -C " : "", cat ? cat : "");
		free(p);
		free(cat);
	} else {
		char *h = str_escape_shell(c->host);
		where = xasprintf("%s %d", h, c->port);
		free(h);
	}
	char *bin = str_escape_shell(c->binary);
	const char *extra = c->extra && *c->extra ? c->extra : NULL;
	char *tok = c->token ? str_escape_shell(c->token) : NULL;
	char *cmd = xasprintf("%s%s%s%s -t %lld%s%s%s %s", bin, c->size ? c->size : "",
	                      tok ? " --feature " : "", tok ? tok : "", (long long)c->timeout, pw,
	                      extra ? " " : "", extra ? extra : "", where);
	free(tok);
	free(bin);
	free(where);
	free(pw);
	if (c->n_wrappers == 0) {
		/* the worker replaces the shell: a signal to the job reaches it directly */
		char *e = xasprintf("exec %s", cmd);
		free(cmd);
		return e;
	}
	for (size_t i = 0; i < c->n_wrappers; i++) {
		char *w = xasprintf("%s %s", c->wrappers[i], cmd);
		free(cmd);
		cmd = w;
	}
	return cmd;
}
