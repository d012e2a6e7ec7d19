/* engine_wrapper.c: the wrappers given on the command line: a rule's command put inside each
 * wrapper in turn, and the wrapper's own input and output files added to every rule. The
 * substitutions follow the Makeflow tradition ("%%", "{}", "[]"), with the rule's command
 * quoted so that one wrapper inside another still runs it whole. */
#include "engine_wrapper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

char *engine_wrap_name(const char *name, int id)
{
	char num[16];
	snprintf(num, sizeof num, "%d", id);
	return str_replace_all(name, "%%", num);
}

/* One wrapper W around INNER. */
static char *wrap_one(const char *w, const char *inner, int id)
{
	char *wrapper = engine_wrap_name(w, id);
	char *out;
	if (strstr(wrapper, "{}")) {
		out = str_replace_all(wrapper, "{}", inner);
	} else {
		char *q = str_escape_shell(inner);
		if (strstr(wrapper, "[]"))
			out = str_replace_all(wrapper, "[]", q);
		else
			out = xasprintf("%s /bin/sh -c %s", wrapper, q);
		free(q);
	}
	free(wrapper);
	return out;
}

char *engine_wrap_command(const char *const *wrappers, const char *command, int id)
{
	if (!wrappers || !*wrappers)
		return NULL;
	char *cmd = xstrdup(command);
	for (const char *const *w = wrappers; *w; w++) {
		char *next = wrap_one(*w, cmd, id);
		free(cmd);
		cmd = next;
	}
	return cmd;
}

int engine_wrap_dag(struct dag *d, const char *const *inputs, const char *const *outputs, char *err,
                    size_t errlen)
{
	if ((!inputs || !*inputs) && (!outputs || !*outputs))
		return 0;
	for (int i = 0; i < d->nnodes; i++) {
		struct dag_node *n = d->nodes[i];
		for (const char *const *p = inputs; p && *p; p++) {
			char *name = engine_wrap_name(*p, n->id);
			dag_node_add_input(d, n, dag_file_get_or_create(d, name), NULL);
			free(name);
		}
		for (const char *const *p = outputs; p && *p; p++) {
			char *name = engine_wrap_name(*p, n->id);
			char why[512];
			int r = dag_node_add_output(d, n, dag_file_get_or_create(d, name), NULL,
			                            why, sizeof why);
			if (r < 0) {
				snprintf(
				    err, errlen,
				    "--wrapper-output %s: %s (use %%%% in the name to give each "
				    "rule its own file)",
				    *p, why);
				free(name);
				return r;
			}
			free(name);
		}
	}
	char why[1024];
	int r = dag_finalize(d, why, sizeof why);
	if (r < 0)
		snprintf(err, errlen, "with the wrapper files: %s", why);
	return r;
}
