/* base64.h: base64 decoding, the standard alphabet and the URL-safe one (- and _), with optional
 * '=' padding; used for CCTools' catalog queries and kubeconfig certificate data. */
#ifndef HTC_BASE64_H
#define HTC_BASE64_H

#include <stddef.h>

/* Decodes the N characters at S (blanks and newlines between them are skipped; '=' only at the
 * end, at most two). Returns a new NUL-terminated buffer (caller frees) with *LEN (if not NULL)
 * its length, or NULL when S is not base64. */
char *base64_decode(const char *s, size_t n, size_t *len);

#endif
