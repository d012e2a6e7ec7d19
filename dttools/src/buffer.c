/* buffer.c: growable, capped byte buffer (see buffer.h). Storage grows by
 * doubling and always keeps room for a terminating NUL. */
#include "buffer.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define BUFFER_MIN_ALLOC 64

void buffer_init(struct buffer *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap ? cap : SIZE_MAX - 1;
}

void buffer_free(struct buffer *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
}

/* Makes room for N more content bytes plus the NUL, or fails on the cap. */
static int reserve(struct buffer *b, size_t n)
{
	if (n > b->cap - b->len)
		return HTC_ETOOBIG;
	size_t need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	return VEC_RESERVE_MAX(b->data, b->alloc, need, BUFFER_MIN_ALLOC, SIZE_MAX);
}

int buffer_putlstring(struct buffer *b, const char *data, size_t n)
{
	int r = reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int buffer_putstring(struct buffer *b, const char *s)
{
	return buffer_putlstring(b, s, strlen(s));
}

int buffer_putc(struct buffer *b, char c)
{
	return buffer_putlstring(b, &c, 1);
}

int buffer_vprintf(struct buffer *b, const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	char *dst = b->data ? b->data + b->len : NULL;
	size_t room = b->data ? b->alloc - b->len : 0;
	int n = vsnprintf(dst, room, fmt, copy);
	va_end(copy);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < room) {
		/* It fitted into the existing storage; still honour the cap. */
		if ((size_t)n > b->cap - b->len) {
			b->data[b->len] = 0;
			return HTC_ETOOBIG;
		}
		b->len += (size_t)n;
		return 0;
	}
	int r = reserve(b, (size_t)n);
	if (r < 0) {
		if (b->data)
			b->data[b->len] = 0;
		return r;
	}
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buffer_printf(struct buffer *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = buffer_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

const char *buffer_tostring(const struct buffer *b)
{
	return b->data ? b->data : "";
}

size_t buffer_len(const struct buffer *b)
{
	return b->len;
}

void buffer_rewind(struct buffer *b, size_t n)
{
	if (n < b->len) {
		b->len = n;
		b->data[n] = 0;
	}
}

void buffer_clear(struct buffer *b)
{
	buffer_rewind(b, 0);
}

char *buffer_steal(struct buffer *b, size_t *len)
{
	char *s = b->data;
	if (!s)
		s = xstrdup("");
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	return s;
}
