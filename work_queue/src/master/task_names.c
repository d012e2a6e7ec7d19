/* task_names.c: the index of a task's file names (task_names.h). Each entry is a string that is
 * a name of a direction, or a directory prefix of one (the part before one of its '/'), or
 * both: a new name clashes when it is already a name, when it is the prefix of a name (that name
 * lies inside it), or when one of its own prefixes is a name (it lies inside that one). */
#include "task_names.h"

#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "wq_name.h"
#include "xalloc.h"
#include "banned.h"

struct entry {
	char *key;
	char *inside[2]; /* a name of the direction this is a prefix of, or NULL */
	unsigned char name[2];
	UT_hash_handle hh;
};

struct task_names {
	struct entry *map;
	size_t count[2];
	void *last[2];
};

static struct entry *get(struct task_names *ix, const char *key, size_t len, int make)
{
	struct entry *e;
	HASH_FIND(hh, ix->map, key, len, e);
	if (!e && make) {
		e = xcalloc(1, sizeof *e);
		e->key = xstrndup(key, len);
		HASH_ADD_KEYPTR(hh, ix->map, e->key, len, e);
	}
	return e;
}

static int clash(int kind, const char *a, const char *b, char **why)
{
	const char *pair[2] = {a, b};
	int r = wq_name_check_list(kind, pair, 2, why, NULL);
	return r < 0 ? r : -1; /* the pair always clashes when this is called */
}

int task_names_add(struct task_names **ixp, int dir, int kind, const char *name, char **why)
{
	if (!*ixp)
		*ixp = xcalloc(1, sizeof **ixp);
	struct task_names *ix = *ixp;
	size_t len = strlen(name);
	struct entry *e = get(ix, name, len, 0);
	if (e && e->name[dir])
		return clash(kind, name, name, why);
	if (e && e->inside[dir])
		return clash(kind, name, e->inside[dir], why);
	for (size_t i = 1; i < len; i++) {
		if (name[i] != '/')
			continue;
		struct entry *p = get(ix, name, i, 0);
		if (p && p->name[dir])
			return clash(kind, p->key, name, why);
	}
	e = get(ix, name, len, 1);
	e->name[dir] = 1;
	for (size_t i = 1; i < len; i++) {
		if (name[i] != '/')
			continue;
		struct entry *p = get(ix, name, i, 1);
		if (!p->inside[dir])
			p->inside[dir] = xstrdup(name);
	}
	ix->count[dir]++;
	return 0;
}

size_t task_names_count(const struct task_names *ix, int dir)
{
	return ix ? ix->count[dir] : 0;
}

void *task_names_last(const struct task_names *ix, int dir)
{
	return ix ? ix->last[dir] : NULL;
}

void task_names_set_last(struct task_names *ix, int dir, void *last)
{
	if (ix)
		ix->last[dir] = last;
}

void task_names_free(struct task_names *ix)
{
	if (!ix)
		return;
	struct entry *e, *tmp;
	HASH_ITER(hh, ix->map, e, tmp)
	{
		HASH_DEL(ix->map, e);
		free(e->inside[0]);
		free(e->inside[1]);
		free(e->key);
		free(e);
	}
	free(ix);
}
