/* catalog_project.h: the -M PATTERN of the worker, factory and status tools, with its CCTools
 * meaning: a POSIX extended regular expression that must match a master's whole project name
 * ("myproj" selects myproj only, "myproj.*" also myproj2). See doc/catalog.md. */
#ifndef HTC_CATALOG_PROJECT_H
#define HTC_CATALOG_PROJECT_H

#include <stdbool.h>

struct catalog_project;

/* Compiles PATTERN. NULL with a one-line reason in *ERR (caller frees) when it is not a valid
 * expression. */
struct catalog_project *catalog_project_create(const char *pattern, char **err);
/* True when NAME (NULL: no project) is matched whole by P. */
bool catalog_project_match(const struct catalog_project *p, const char *name);
/* The pattern's text when it holds no special character (the one project it names, which a
 * catalog can filter on), else NULL. */
const char *catalog_project_literal(const struct catalog_project *p);
/* NULL is accepted. */
void catalog_project_delete(struct catalog_project *p);

#endif
