/* vec.c: the one out-of-line part of the growable arrays of vec.h, the report of a capacity
 * that would overflow. It aborts like xalloc's exhaustion report, since no caller can go on
 * with an array it could not grow. */
#include "vec.h"

#include <stdio.h>
#include <stdlib.h>

#include "banned.h"

void vec_overflow(size_t need, size_t elem)
{
	fprintf(stderr, "fatal: an array of %zu elements of %zu bytes is too large\n", need, elem);
	abort();
}
