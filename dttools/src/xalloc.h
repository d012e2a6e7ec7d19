/* xalloc.h: checked allocation. These never return NULL: on exhaustion they
 * print one line naming the size and abort, because an out-of-memory HTC
 * daemon cannot do anything useful and must not corrupt state. Library code
 * that must survive allocation failure uses plain malloc and returns -ENOMEM. */
#ifndef HTC_XALLOC_H
#define HTC_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Duplicates a string; caller frees. NULL in gives NULL out. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a newly allocated string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
