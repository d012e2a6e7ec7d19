/* vec.h: growable arrays kept as a plain pointer, a count and a capacity in the caller's struct.
 * The macros reserve room, push, or resize exactly, with the element size taken from the pointer
 * and the byte count and the capacity's own type checked for overflow; the test for room is
 * inline and growth calls xrealloc directly, so a push costs what a hand-written one did. */
#ifndef HTC_VEC_H
#define HTC_VEC_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "htc_error.h"
#include "xalloc.h"

/* A first allocation holds at least this many elements. */
#define VEC_FIRST 8

/* Called when a capacity would pass what its type or size_t can hold: prints one line and
 * aborts, as xalloc does on exhaustion (growing past it is a bug, not a lack of memory). */
_Noreturn void vec_overflow(size_t need, size_t elem);

/* The largest value of the integer type of X (a capacity or count field). */
/* clang-format off */
#define VEC_TYPE_MAX(x)                                                                            \
	_Generic((x),                                                                              \
	    int: (size_t)INT_MAX,                                                                  \
	    unsigned: (size_t)UINT_MAX,                                                            \
	    long: (size_t)LONG_MAX,                                                                \
	    unsigned long: (size_t)ULONG_MAX,                                                      \
	    long long: (size_t)LLONG_MAX,                                                          \
	    unsigned long long: (size_t)ULLONG_MAX)
/* clang-format on */

/* The capacity that an array of elements of ELEM bytes and capacity CAP grows to for NEED > CAP
 * elements: CAP (FIRST when 0) doubled until it holds NEED, at most MAX (and what size_t can
 * count in bytes). Returns 0 when NEED itself is over the limit. */
static inline size_t vec_next_cap(size_t cap, size_t need, size_t elem, size_t first, size_t max)
{
	size_t lim = SIZE_MAX / elem;
	if (max > lim)
		max = lim;
	if (need > max)
		return 0;
	size_t n = cap ? cap : first ? first : 1;
	while (n < need)
		n = n > max / 2 ? max : n * 2;
	return n > max ? max : n;
}

/* Grows P to NEED elements or more (see vec_next_cap), aborting past the limit. */
static inline void *vec_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first,
                             size_t max)
{
	size_t n = vec_next_cap(*cap, need, elem, first, max);
	if (!n)
		vec_overflow(need, elem);
	*cap = n;
	return xrealloc(p, n * elem);
}

/* Room for NEED elements in the array P whose capacity is CAP (an lvalue of any integer
 * type). CAP (FIRST when 0) is doubled until it holds NEED; the old elements are kept. P and
 * CAP are evaluated more than once. */
#define VEC_RESERVE_FIRST(p, cap, need, first)                                                     \
	do {                                                                                       \
		size_t vec_need_ = (size_t)(need);                                                 \
		if (vec_need_ > (size_t)(cap)) {                                                   \
			size_t vec_cap_ = (size_t)(cap);                                           \
			(p) = vec_grow((p), &vec_cap_, vec_need_, sizeof *(p), (size_t)(first),    \
			               VEC_TYPE_MAX(cap));                                         \
			(cap) = vec_cap_;                                                          \
		}                                                                                  \
	} while (0)

/* VEC_RESERVE_FIRST with a first allocation of VEC_FIRST elements. */
#define VEC_RESERVE(p, cap, need) VEC_RESERVE_FIRST(p, cap, need, VEC_FIRST)

/* Appends X to P (count N, capacity CAP): VEC_RESERVE(P, CAP, N + 1), then P[N++] = X. */
#define VEC_PUSH(p, n, cap, x)                                                                     \
	do {                                                                                       \
		VEC_RESERVE(p, cap, (size_t)(n) + 1);                                              \
		(p)[(n)++] = (x);                                                                  \
	} while (0)

/* Room for NEED elements with a hard cap, for arrays that grow from input: as VEC_RESERVE, but
 * the first allocation holds FIRST elements and the capacity never passes MAX. Evaluates to 0,
 * or to HTC_ETOOBIG (P and CAP unchanged) when NEED is more than MAX. */
#define VEC_RESERVE_MAX(p, cap, need, first, max)                                                  \
	({                                                                                         \
		int vec_rc_ = 0;                                                                   \
		size_t vec_need_ = (size_t)(need);                                                 \
		if (vec_need_ > (size_t)(cap)) {                                                   \
			size_t vec_max_ = (size_t)(max);                                           \
			if (vec_max_ > VEC_TYPE_MAX(cap))                                          \
				vec_max_ = VEC_TYPE_MAX(cap);                                      \
			size_t vec_n_ = vec_next_cap((size_t)(cap), vec_need_, sizeof *(p),        \
			                             (size_t)(first), vec_max_);                   \
			if (vec_n_) {                                                              \
				(p) = xrealloc((p), vec_n_ * sizeof *(p));                         \
				(cap) = vec_n_;                                                    \
			} else {                                                                   \
				vec_rc_ = HTC_ETOOBIG;                                             \
			}                                                                          \
		}                                                                                  \
		vec_rc_;                                                                           \
	})

/* Resizes P to exactly N elements (N may be 0), for arrays that keep no capacity: the
 * overflow-checked form of p = xrealloc(p, n * sizeof *p). */
#define VEC_RESIZE(p, n)                                                                           \
	do {                                                                                       \
		size_t vec_n_ = (size_t)(n);                                                       \
		if (vec_n_ > SIZE_MAX / sizeof *(p))                                               \
			vec_overflow(vec_n_, sizeof *(p));                                         \
		(p) = xrealloc((p), vec_n_ * sizeof *(p));                                         \
	} while (0)

#endif
