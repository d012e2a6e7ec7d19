/* catalog_project.c: -M PATTERN, a regular expression over whole project names
 * (catalog_project.h). */
#include "catalog_project.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "banned.h"

struct catalog_project {
	char *pattern;
	int literal;
	regex_t re;
};

struct catalog_project *catalog_project_create(const char *pattern, char **err)
{
	struct catalog_project *p = xcalloc(1, sizeof *p);
	p->pattern = xstrdup(pattern);
	p->literal = strpbrk(pattern, ".[]()*+?{}|^$\\") == NULL;
	/* anchored at both ends: the whole name must match */
	char *whole = xasprintf("^(%s)$", pattern);
	int rc = regcomp(&p->re, whole, REG_EXTENDED | REG_NOSUB);
	free(whole);
	if (rc != 0) {
		char buf[256];
		regerror(rc, &p->re, buf, sizeof buf);
		*err = xasprintf("project name pattern \"%s\": %s", pattern, buf);
		free(p->pattern);
		free(p);
		return NULL;
	}
	return p;
}

bool catalog_project_match(const struct catalog_project *p, const char *name)
{
	return p && name && regexec(&p->re, name, 0, NULL, 0) == 0;
}

const char *catalog_project_literal(const struct catalog_project *p)
{
	return p && p->literal ? p->pattern : NULL;
}

void catalog_project_delete(struct catalog_project *p)
{
	if (!p)
		return;
	regfree(&p->re);
	free(p->pattern);
	free(p);
}
