/* jx_pos.c: where in the text each value of an evaluation came from. The
 * evaluator notes the objects and lists it builds, and the place of each
 * member and item it puts in them, so that a consumer of the result (a
 * workflow loader) can name the line and column of a value it refuses. A
 * value shared by several places (a literal used in a loop, a symbol) is
 * found through its container and key, never by its address alone. Noted
 * containers are held by a reference, so that their addresses cannot be
 * reused by other values. */
#include "jx.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "jx_internal.h"
#include "xalloc.h"
#include "banned.h"

/* The key: a tag ('v' a container, 'm' a member, 'i' an item), the
 * container's address, then the member name or the item index. */
struct jx_pos_entry {
	char *key;
	size_t keylen;
	json_t *held; /* the container, for 'v' entries */
	int line;
	int column;
	UT_hash_handle hh;
};

struct jx_pos {
	struct jx_pos_entry *map;
};

struct jx_pos *jx_pos_create(void)
{
	return xcalloc(1, sizeof(struct jx_pos));
}

void jx_pos_delete(struct jx_pos *pos)
{
	if (!pos)
		return;
	struct jx_pos_entry *e, *tmp;
	HASH_ITER(hh, pos->map, e, tmp)
	{
		HASH_DEL(pos->map, e);
		json_decref(e->held);
		free(e->key);
		free(e);
	}
	free(pos);
}

/* Builds the key into a new buffer (caller frees). */
static char *make_key(char tag, const json_t *v, const void *extra, size_t extralen, size_t *len)
{
	*len = 1 + sizeof v + extralen;
	char *k = xmalloc(*len);
	k[0] = tag;
	memcpy(k + 1, &v, sizeof v);
	if (extralen)
		memcpy(k + 1 + sizeof v, extra, extralen);
	return k;
}

static void note(struct jx_pos *pos, char tag, json_t *v, const void *extra, size_t extralen,
                 int line, int column)
{
	if (!pos || !v || line <= 0)
		return;
	size_t len;
	char *k = make_key(tag, v, extra, extralen, &len);
	struct jx_pos_entry *e;
	HASH_FIND(hh, pos->map, k, len, e);
	if (e) {
		free(k);
		return;
	}
	e = xcalloc(1, sizeof *e);
	e->key = k;
	e->keylen = len;
	e->held = tag == 'v' ? json_incref(v) : NULL;
	e->line = line;
	e->column = column;
	HASH_ADD_KEYPTR(hh, pos->map, e->key, e->keylen, e);
}

static int find(const struct jx_pos *pos, char tag, const json_t *v, const void *extra,
                size_t extralen, int *line, int *column)
{
	if (!pos || !v)
		return 0;
	size_t len;
	char *k = make_key(tag, v, extra, extralen, &len);
	struct jx_pos_entry *e;
	HASH_FIND(hh, pos->map, k, len, e);
	free(k);
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
		note(pos, 'v', v, NULL, 0, line, column);
}

void jx_pos_note_member(struct jx_pos *pos, json_t *obj, const char *name, int line, int column)
{
	note(pos, 'm', obj, name, strlen(name), line, column);
}

void jx_pos_note_item(struct jx_pos *pos, json_t *list, size_t index, int line, int column)
{
	note(pos, 'i', list, &index, sizeof index, line, column);
}

int jx_pos_find(const struct jx_pos *pos, const json_t *v, int *line, int *column)
{
	return find(pos, 'v', v, NULL, 0, line, column);
}

int jx_pos_find_member(const struct jx_pos *pos, const json_t *obj, const char *name, int *line,
                       int *column)
{
	return find(pos, 'm', obj, name, strlen(name), line, column);
}

int jx_pos_find_item(const struct jx_pos *pos, const json_t *list, size_t index, int *line,
                     int *column)
{
	return find(pos, 'i', list, &index, sizeof index, line, column);
}
