/* heap.h: a binary min-heap priority queue of (int64 key, pointer value)
 * pairs, for schedulers and timers that repeatedly take the smallest key.
 * Push and pop are O(log n); peek and size are O(1). */
#ifndef HTC_HEAP_H
#define HTC_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap;

/* A new empty heap with room for INITIAL_CAPACITY entries before it grows
 * (0 picks a small default). Never NULL (allocation failure aborts). Free
 * with heap_delete. */
struct heap *heap_create(size_t initial_capacity);
/* Frees the heap. The values are not freed: the caller owns them. NULL is
 * accepted. */
void heap_delete(struct heap *h);

/* Adds VALUE with priority KEY (smaller comes out first). VALUE may be NULL
 * and the heap does not take ownership. Returns 0 (growth failure aborts). */
int heap_push(struct heap *h, int64_t key, void *value);
/* Removes the entry with the smallest key and returns its value, storing its
 * key in *KEY if KEY is not NULL. Entries with equal keys come out in an
 * unspecified order (the heap is not stable). An empty heap returns NULL and
 * leaves *KEY untouched; use heap_size to tell that from a NULL value. */
void *heap_pop(struct heap *h, int64_t *key);
/* Like heap_pop but leaves the entry in the heap. */
void *heap_peek(const struct heap *h, int64_t *key);
/* The number of entries. */
size_t heap_size(const struct heap *h);

#endif
