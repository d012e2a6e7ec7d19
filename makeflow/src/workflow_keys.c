/* workflow_keys.c: the table of every key a JSON/JX workflow may hold, with
 * whether this makeflow builds it, and the resource value rules that the
 * JSON and the Make-like forms share. Other features add their keys here, so
 * that an unknown key is always an error and a CCTools key always says
 * whether it is supported. */
#include "workflow_keys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "xalloc.h"
#include "banned.h"

#define S WORKFLOW_KEY_SUPPORTED
#define U WORKFLOW_KEY_UNSUPPORTED

static const struct workflow_key keys[] = {
    /* the workflow object */
    {WORKFLOW_KEY_TOP, "rules", S, -1, NULL},
    {WORKFLOW_KEY_TOP, "define", S, -1, NULL},
    {WORKFLOW_KEY_TOP, "environment", S, -1, NULL},
    {WORKFLOW_KEY_TOP, "categories", S, -1, NULL},
    {WORKFLOW_KEY_TOP, "default_category", S, -1, NULL},
    /* a rule */
    {WORKFLOW_KEY_RULE, "command", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "workflow", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "args", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "inputs", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "outputs", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "local_job", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "category", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "resources", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "allocation", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "environment", S, -1, NULL},
    {WORKFLOW_KEY_RULE, "makeflow", U, -1,
     "CCTools' older form of a nested workflow; write \"workflow\": FILE and \"args\": {...}"},
    {WORKFLOW_KEY_RULE, "container", S, -1, NULL},
    /* a category */
    {WORKFLOW_KEY_CATEGORY, "resources", S, -1, NULL},
    {WORKFLOW_KEY_CATEGORY, "environment", S, -1, NULL},
    {WORKFLOW_KEY_CATEGORY, "mode", S, -1, NULL},
    {WORKFLOW_KEY_CATEGORY, "allocation", U, -1,
     "a category's allocation is chosen with \"mode\" or makeflow --allocation"},
    /* resources */
    {WORKFLOW_KEY_RESOURCES, "cores", S, 0, NULL},
    {WORKFLOW_KEY_RESOURCES, "memory", S, 1, NULL},
    {WORKFLOW_KEY_RESOURCES, "disk", S, 2, NULL},
    {WORKFLOW_KEY_RESOURCES, "gpus", S, 3, NULL},
    {WORKFLOW_KEY_RESOURCES, "wall-time", S, 4, NULL},
    {WORKFLOW_KEY_RESOURCES, "wall_time", S, 4, NULL},
    /* a file object */
    {WORKFLOW_KEY_FILE, "dag_name", S, -1, NULL},
    {WORKFLOW_KEY_FILE, "task_name", S, -1, NULL},
    /* a container object */
    {WORKFLOW_KEY_CONTAINER, "type", S, -1, NULL},
    {WORKFLOW_KEY_CONTAINER, "image", S, -1, NULL},
    {WORKFLOW_KEY_CONTAINER, "image_tar", S, -1, NULL},
    {WORKFLOW_KEY_CONTAINER, "mode", S, -1, NULL},
};

#undef S
#undef U

#define NKEYS (sizeof keys / sizeof keys[0])

const struct workflow_key *workflow_key_find(enum workflow_key_place place, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].place == place && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

const char *workflow_key_place_name(enum workflow_key_place place)
{
	switch (place) {
	case WORKFLOW_KEY_TOP: return "the workflow";
	case WORKFLOW_KEY_RULE: return "a rule";
	case WORKFLOW_KEY_CATEGORY: return "a category";
	case WORKFLOW_KEY_RESOURCES: return "'resources'";
	case WORKFLOW_KEY_FILE: return "a file object";
	case WORKFLOW_KEY_CONTAINER: return "'container'";
	}
	return "the workflow";
}

/* Edit distance of A and B, stopping early above 3 (names are short). */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 40 || lb > 40)
		return 99;
	int row[41];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int cost =
			    tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1])
			        ? 0
			        : 1;
			int best = diag + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *workflow_key_refusal(enum workflow_key_place place, const char *name, char *buf,
                                 size_t size)
{
	const struct workflow_key *k = workflow_key_find(place, name);
	const char *where = workflow_key_place_name(place);
	if (k && k->status == WORKFLOW_KEY_UNSUPPORTED) {
		snprintf(buf, size, "key '%s' in %s is not supported by this makeflow%s%s%s", name,
		         where, k->hint ? " (" : "", k->hint ? k->hint : "", k->hint ? ")" : "");
		return buf;
	}
	const char *best = NULL;
	int bestd = 3;
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].place != place || keys[i].status != WORKFLOW_KEY_SUPPORTED)
			continue;
		int d = distance(name, keys[i].name);
		if (d < bestd) {
			bestd = d;
			best = keys[i].name;
		}
	}
	/* a short name is as close to many others: list the keys instead */
	if (best && strlen(name) >= 5) {
		snprintf(buf, size, "unknown key '%s' in %s (did you mean '%s'?)", name, where,
		         best);
		return buf;
	}
	int n = snprintf(buf, size, "unknown key '%s' in %s (known:", name, where);
	const char *sep = " ";
	for (size_t i = 0; i < NKEYS && n > 0 && (size_t)n < size; i++) {
		if (keys[i].place != place || keys[i].status != WORKFLOW_KEY_SUPPORTED)
			continue;
		n += snprintf(buf + n, size - (size_t)n, "%s%s", sep, keys[i].name);
		sep = ", ";
	}
	if (n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ")");
	return buf;
}

int workflow_resource_parse(int k, const char *text, int64_t *out)
{
	if (k == 1 || k == 2)
		return units_parse_mb(text, out) == 0 ? 0 : -1;
	if (k == 4)
		return units_parse_seconds(text, out) == 0 ? 0 : -1;
	if (k != 0 && k != 3)
		return -1;
	const char *s = text;
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	while (isspace((unsigned char)*end))
		end++;
	if (*end || errno)
		return -1;
	*out = v;
	return 0;
}

int workflow_key_line(const char *path, const char *key, size_t max_bytes)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	size_t klen = strlen(key);
	int line = 1, found = 0, found_line = 0;
	size_t read = 0;
	/* a small matcher for '"' KEY '"' [spaces] ':' across the stream */
	enum { OUT, IN, AFTER } st = OUT;
	size_t pos = 0;
	int c;
	int start_line = 0;
	while ((c = getc(f)) != EOF && read++ < max_bytes) {
		if (st == IN) {
			if (pos < klen && c == (unsigned char)key[pos]) {
				pos++;
			} else if (pos == klen && c == '"') {
				st = AFTER;
			} else {
				st = c == '"' ? IN : OUT;
				pos = 0;
				start_line = line;
			}
		} else if (st == AFTER) {
			if (c == ':') {
				found++;
				found_line = start_line;
				st = OUT;
			} else if (!isspace(c)) {
				st = c == '"' ? IN : OUT;
				pos = 0;
				start_line = line;
			}
		} else if (c == '"') {
			st = IN;
			pos = 0;
			start_line = line;
		}
		if (c == '\n')
			line++;
	}
	fclose(f);
	return found == 1 ? found_line : 0;
}
