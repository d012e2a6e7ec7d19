/* buffer.h: a growable byte and string buffer with a hard size cap. It is the
 * building block for anything assembled from network or file input, so every
 * append checks the cap and fails without changing the buffer when the cap
 * would be exceeded. */
#ifndef HTC_BUFFER_H
#define HTC_BUFFER_H

#include <stdarg.h>
#include <stddef.h>

/* A buffer may live on the stack or inside another struct. All fields are
 * private: use the functions below. The contents are always NUL-terminated
 * once anything has been appended (the NUL is not counted in the length). */
struct buffer {
	char *data;   /* private: storage, NULL until the first append */
	size_t len;   /* private: bytes in use, excluding the NUL */
	size_t alloc; /* private: bytes allocated for data */
	size_t cap;   /* private: the largest allowed len */
};

/* Initializes B as empty with a cap of CAP bytes of content (the terminating
 * NUL is not counted). CAP 0 means no cap; use it only for data that does not
 * come from outside the process. Allocates nothing. */
void buffer_init(struct buffer *b, size_t cap);
/* Frees the storage and leaves B empty (with the same cap), ready for reuse.
 * NULL is accepted. */
void buffer_free(struct buffer *b);

/* Appends N bytes from DATA (which may contain NULs). Returns 0, or
 * HTC_ETOOBIG if the result would exceed the cap; the buffer is then
 * unchanged. Allocation failure aborts (xalloc.h). */
int buffer_putlstring(struct buffer *b, const char *data, size_t n);
/* Appends the string S (without its NUL). Same returns as buffer_putlstring. */
int buffer_putstring(struct buffer *b, const char *s);
/* Appends one byte. Same returns as buffer_putlstring. */
int buffer_putc(struct buffer *b, char c);
/* Appends printf-formatted text. Same returns as buffer_putlstring; on
 * HTC_ETOOBIG nothing is appended (no partial text); -EINVAL for a formatting
 * error. */
int buffer_printf(struct buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buffer_vprintf(struct buffer *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* A NUL-terminated view of the contents, owned by the buffer: valid until the
 * next call that modifies B. An empty buffer gives "". */
const char *buffer_tostring(const struct buffer *b);
/* Number of content bytes (excluding the NUL). */
size_t buffer_len(const struct buffer *b);

/* Truncates the contents to their first N bytes (N larger than the length is
 * treated as the length). Keeps the storage. */
void buffer_rewind(struct buffer *b, size_t n);
/* Empties the buffer, keeping the storage; same as buffer_rewind(b, 0). */
void buffer_clear(struct buffer *b);

/* Hands the contents over to the caller as a NUL-terminated string that the
 * caller frees; the buffer is left empty (same cap) and owns nothing. If LEN is
 * not NULL it receives the content length. Never returns NULL. */
char *buffer_steal(struct buffer *b, size_t *len);

#endif
