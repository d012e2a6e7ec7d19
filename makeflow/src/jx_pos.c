/* jx_pos.c: where in the text each value of an evaluation came from. The
 * evaluator notes the objects and lists it builds, and the place of each
 * member and item it puts in them, so that a consumer of the result (a
 * workflow loader) can name the line and column of a value it refuses. A
 * value shared by several places (a literal used in a loop, a symbol) is
 * found through its container and key, never by its address alone. Noted
 * containers are held by a reference, so that their addresses cannot be
 * reused by other values. Noting is an append; the first lookup sorts. */
#include "jx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jx_internal.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

/* A place: the container's address, a tag ('v' the container itself, 'm' a
 * member, 'i' an item) and the item index or a 64-bit hash of the member
 * name (a collision could only misplace an error message). */
struct jx_pos_key {
	const json_t *container;
	uint64_t sub;
	uint64_t tag;
};

struct jx_pos_entry {
	struct jx_pos_key key;
	int line;
	int column;
};

/* Notes are appended while evaluating (no hashing on that hot path); the
 * first lookup sorts them, later ones search. */
struct jx_pos {
	struct jx_pos_entry *entries;
	size_t count, cap;
	json_t **held; /* the noted containers, so their addresses are not reused */
	size_t nheld, capheld;
	int sorted;
};

struct jx_pos *jx_pos_create(void)
{
	return xcalloc(1, sizeof(struct jx_pos));
}

void jx_pos_delete(struct jx_pos *pos)
{
	if (!pos)
		return;
	for (size_t i = 0; i < pos->nheld; i++)
		json_decref(pos->held[i]);
	free(pos->held);
	free(pos->entries);
	free(pos);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}

static struct jx_pos_key make_key(char tag, const json_t *v, uint64_t sub)
{
	struct jx_pos_key k;
	memset(&k, 0, sizeof k);
	k.container = v;
	k.sub = sub;
	k.tag = (uint64_t)tag;
	return k;
}

static int key_cmp(const struct jx_pos_key *a, const struct jx_pos_key *b)
{
	uintptr_t pa = (uintptr_t)a->container, pb = (uintptr_t)b->container;
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (a->tag != b->tag)
		return a->tag < b->tag ? -1 : 1;
	if (a->sub != b->sub)
		return a->sub < b->sub ? -1 : 1;
	return 0;
}

static int entry_cmp(const void *x, const void *y)
{
	return key_cmp(&((const struct jx_pos_entry *)x)->key,
	               &((const struct jx_pos_entry *)y)->key);
}

/* Every noted place is new: containers are noted once, when they are built
 * (and held, so their address is not reused), members and items once each. */
static void note(struct jx_pos *pos, char tag, json_t *v, uint64_t sub, int line, int column)
{
	if (!pos || !v || line <= 0)
		return;
	VEC_RESERVE_FIRST(pos->entries, pos->cap, pos->count + 1, 1024);
	struct jx_pos_entry *e = &pos->entries[pos->count++];
	e->key = make_key(tag, v, sub);
	e->line = line;
	e->column = column;
	pos->sorted = 0;
	if (tag == 'v')
		VEC_PUSH(pos->held, pos->nheld, pos->capheld, json_incref(v));
}

static int find(const struct jx_pos *cpos, char tag, const json_t *v, uint64_t sub, int *line,
                int *column)
{
	if (!cpos || !v)
		return 0;
	/* sorting on the first lookup changes no answer: the positions are the
	 * same set, only their order */
	struct jx_pos *pos = (struct jx_pos *)cpos;
	if (!pos->sorted) {
		qsort(pos->entries, pos->count, sizeof *pos->entries, entry_cmp);
		pos->sorted = 1;
	}
	struct jx_pos_entry k = {.key = make_key(tag, v, sub)};
	const struct jx_pos_entry *e =
	    bsearch(&k, pos->entries, pos->count, sizeof *pos->entries, entry_cmp);
	if (!e)
		return 0;
	if (line)
		*line = e->line;
	if (column)
		*column = e->column;
	return 1;
}

void jx_pos_note(struct jx_pos *pos, json_t *v, int line, int column)
{
	if (json_is_object(v) || json_is_array(v))
		note(pos, 'v', v, 0, line, column);
}

/* A member or item that is itself an object or list is found through its
 * own entry (noted when it was built, at the same place): only scalars need
 * one. */
void jx_pos_note_member(struct jx_pos *pos, json_t *obj, const char *name, json_t *value, int line,
                        int column)
{
	if (!json_is_object(value) && !json_is_array(value))
		note(pos, 'm', obj, name_hash(name), line, column);
}

void jx_pos_note_item(struct jx_pos *pos, json_t *list, size_t index, json_t *value, int line,
                      int column)
{
	if (!json_is_object(value) && !json_is_array(value))
		note(pos, 'i', list, index, line, column);
}

int jx_pos_find(const struct jx_pos *pos, const json_t *v, int *line, int *column)
{
	return find(pos, 'v', v, 0, line, column);
}

int jx_pos_find_member(const struct jx_pos *pos, const json_t *obj, const char *name, int *line,
                       int *column)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, name) : NULL;
	if (json_is_object(v) || json_is_array(v))
		return find(pos, 'v', v, 0, line, column);
	return find(pos, 'm', obj, name_hash(name), line, column);
}

int jx_pos_find_item(const struct jx_pos *pos, const json_t *list, size_t index, int *line,
                     int *column)
{
	json_t *v = json_is_array(list) ? json_array_get(list, index) : NULL;
	if (json_is_object(v) || json_is_array(v))
		return find(pos, 'v', v, 0, line, column);
	return find(pos, 'i', list, index, line, column);
}
