/* heap.c: array-backed binary min-heap (see heap.h). Entry i has children
 * 2i+1 and 2i+2; the array doubles when full. */
#include "heap.h"

#include <stdlib.h>

#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define HEAP_DEFAULT_CAPACITY 16

struct heap_entry {
	int64_t key;
	void *value;
};

struct heap {
	struct heap_entry *e;
	size_t n;
	size_t cap;
};

struct heap *heap_create(size_t initial_capacity)
{
	struct heap *h = xmalloc(sizeof *h);
	h->cap = initial_capacity ? initial_capacity : HEAP_DEFAULT_CAPACITY;
	h->n = 0;
	h->e = xmalloc(h->cap * sizeof *h->e);
	return h;
}

void heap_delete(struct heap *h)
{
	if (!h)
		return;
	free(h->e);
	free(h);
}

int heap_push(struct heap *h, int64_t key, void *value)
{
	VEC_RESERVE(h->e, h->cap, h->n + 1);
	size_t i = h->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->e[parent].key <= key)
			break;
		h->e[i] = h->e[parent];
		i = parent;
	}
	h->e[i].key = key;
	h->e[i].value = value;
	return 0;
}

void *heap_pop(struct heap *h, int64_t *key)
{
	if (h->n == 0)
		return NULL;
	struct heap_entry top = h->e[0];
	struct heap_entry last = h->e[--h->n];
	size_t i = 0;
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= h->n)
			break;
		if (child + 1 < h->n && h->e[child + 1].key < h->e[child].key)
			child++;
		if (last.key <= h->e[child].key)
			break;
		h->e[i] = h->e[child];
		i = child;
	}
	if (h->n > 0)
		h->e[i] = last;
	if (key)
		*key = top.key;
	return top.value;
}

void *heap_peek(const struct heap *h, int64_t *key)
{
	if (h->n == 0)
		return NULL;
	if (key)
		*key = h->e[0].key;
	return h->e[0].value;
}

size_t heap_size(const struct heap *h)
{
	return h->n;
}
