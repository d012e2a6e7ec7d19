/* workflow_nested.c: the meaning of nested workflow rules before they run
 * (see workflow_nested.h): JX or Make-like sub-workflow, working directory,
 * and the recursion and depth checks on the chain of parent workflows. */
#include "workflow_nested.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

int workflow_nested_max(void)
{
	const char *s = getenv(WORKFLOW_NESTED_MAX_ENV);
	int64_t v;
	if (s && *s && str_to_int64(s, &v) == 0 && v >= 0 && v <= 1000)
		return (int)v;
	return WORKFLOW_NESTED_DEFAULT_MAX;
}

int workflow_nested_json_args(const struct dag_node *n)
{
	/* the Make-like form keeps the rest of the MAKEFLOW line, which ends its
	 * command; the JSON form's command is "MAKEFLOW FILE" and its args an object */
	return n->workflow && n->workflow_args && n->workflow_args[0] == '{' &&
	       !str_has_suffix(n->command, n->workflow_args);
}

int workflow_nested_is_jx(const struct dag *d, const struct dag_node *n)
{
	(void)d;
	if (!n->workflow)
		return 0;
	if (workflow_nested_json_args(n))
		return 1;
	return str_has_suffix(n->workflow, ".jx") || str_has_suffix(n->workflow, ".json");
}

/* The words after the file of a Make-like MAKEFLOW rule (caller frees with
 * str_free_argv), or NULL when there are none. */
static char **make_words(const struct dag *d, const struct dag_node *n, int *count)
{
	*count = 0;
	(void)d;
	if (!n->workflow_args || workflow_nested_json_args(n))
		return NULL;
	char **w = str_split_ws(n->workflow_args, count);
	if (*count == 0) {
		str_free_argv(w);
		return NULL;
	}
	return w;
}

char *workflow_nested_dir(const struct dag *d, const struct dag_node *n)
{
	int count;
	char **w = make_words(d, n, &count);
	if (!w)
		return NULL;
	char *dir = xstrdup(w[0]);
	str_free_argv(w);
	return dir;
}

/* The real path of P (caller frees), or NULL when it does not exist yet. */
static char *real(const char *p)
{
	char buf[PATH_MAX];
	if (!realpath(p, buf))
		return NULL;
	return xstrdup(buf);
}

/* 1 if the chain text CHAIN holds the line PATH. */
static int chain_has(const char *chain, const char *path)
{
	size_t len = strlen(path);
	for (const char *s = chain; s && *s;) {
		const char *nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		if (l == len && memcmp(s, path, len) == 0)
			return 1;
		s = nl ? nl + 1 : s + l;
	}
	return 0;
}

static int chain_depth(const char *chain)
{
	int depth = 0;
	for (const char *s = chain; s && *s; s++)
		if (*s == '\n' || s[1] == 0)
			depth++;
	return depth;
}

/* The chain written as "A -> B -> C" for messages (caller frees). */
static char *chain_text(const char *chain, const char *last)
{
	char *t = str_replace_all(chain ? chain : "", "\n", " -> ");
	char *out = xasprintf("%s%s%s", t, *t ? " -> " : "", last);
	free(t);
	return out;
}

int workflow_nested_check(const struct dag *d, const char *path, char *err, size_t errlen)
{
	const char *chain = getenv(WORKFLOW_NESTED_CHAIN_ENV);
	const char *from = getenv(WORKFLOW_NESTED_FROM_ENV);
	int max = workflow_nested_max();
	int depth = chain_depth(chain);
	char *self = real(path);
	int rc = -1;
	if (self && chain_has(chain, self)) {
		char *t = chain_text(chain, self);
		snprintf(err, errlen, "%s%s%s: a nested workflow calls itself (%s)",
		         from ? from : path, from ? ": nested workflow " : "", from ? path : "", t);
		free(t);
		goto out;
	}
	if (depth > max) {
		snprintf(err, errlen,
		         "%s%s%s: nested workflows deeper than %d levels (set %s to change the "
		         "limit)",
		         from ? from : path, from ? ": nested workflow " : "", from ? path : "",
		         max, WORKFLOW_NESTED_MAX_ENV);
		goto out;
	}
	for (int i = 0; i < d->nnodes; i++) {
		const struct dag_node *n = d->nodes[i];
		if (!n->workflow)
			continue;
		int count;
		char **w = make_words(d, n, &count);
		str_free_argv(w);
		if (count > 1) {
			snprintf(err, errlen,
			         "%s:%d: MAKEFLOW takes a workflow file and at most a working "
			         "directory (got %d more words)",
			         path, n->line, count);
			goto out;
		}
		if (depth + 1 > max) {
			snprintf(
			    err, errlen,
			    "%s:%d: nested workflow '%s' would be %d levels deep, more than %d "
			    "(set %s to change the limit)",
			    path, n->line, n->workflow, depth + 1, max, WORKFLOW_NESTED_MAX_ENV);
			goto out;
		}
		char *sub = real(n->workflow);
		int loop = sub && ((self && !strcmp(sub, self)) || chain_has(chain, sub));
		if (loop) {
			char *t = chain_text(chain, self ? self : path);
			snprintf(
			    err, errlen,
			    "%s:%d: nested workflow '%s' calls a workflow already running (%s -> "
			    "%s)",
			    path, n->line, n->workflow, t, sub);
			free(t);
		}
		free(sub);
		if (loop)
			goto out;
	}
	rc = 0;
out:
	free(self);
	return rc;
}

void workflow_nested_env(const char *path, const struct dag_node *n, char **chain, char **from)
{
	const char *up = getenv(WORKFLOW_NESTED_CHAIN_ENV);
	char *self = real(path);
	*chain = xasprintf("%s=%s%s%s", WORKFLOW_NESTED_CHAIN_ENV, up && *up ? up : "",
	                   up && *up ? "\n" : "", self ? self : path);
	*from = xasprintf("%s=%s:%d", WORKFLOW_NESTED_FROM_ENV, path, n->line);
	free(self);
}
