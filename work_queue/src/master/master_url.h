/* master_url.h: the master's side of URL inputs (doc/work-queue-protocol.md 5.5): a HEAD request at
 * submission gives the VALIDATOR text (`etag:` plus the ETag, or `lm:` plus Last-Modified, `;`
 * and Content-Length), and the cache object name is `U-` plus the SHA-256 of URL "\n" VALIDATOR.
 * The HEAD request is blocking (bounded by its timeout): the master runs it in libuv's thread
 * pool (master_prepare.c), never on its loop thread. */
#ifndef HTC_MASTER_URL_H
#define HTC_MASTER_URL_H

#include <stdatomic.h>
#include <stddef.h>

#define MASTER_URL_HEAD_TIMEOUT_MS 5000 /* the whole HEAD request, redirects included */
#define MASTER_URL_OBJECT_SIZE     67   /* "U-" + 64 hex + NUL */
#define MASTER_URL_VALIDATOR_MAX   1100 /* longest validator kept; a longer header gives none */

/* The HEAD request of URL, at most TIMEOUT_MS (redirects followed, at most 5, http and https
 * only); a non-zero *STOP (if STOP is not NULL) ends it early. Returns 0 with *VALIDATOR (new
 * string, caller frees; empty when the answer has neither ETag nor Last-Modified, or when the
 * server does not do HEAD: 405, 501), or a negative error with *WHY (new string, caller frees)
 * saying why: -EINVAL another scheme, -ENOENT an HTTP status >= 400 ("HTTP 404 for its HEAD
 * request"), -ETIMEDOUT, -ECONNREFUSED, -ECANCELED (stopped), -EIO otherwise (libcurl's text).
 * Blocking; thread-safe after curl_init_once. */
int master_url_head(const char *url, long timeout_ms, const atomic_int *stop, char **validator,
                    char **why);

/* The validator of URL from a HEAD request taking at most TIMEOUT_MS (redirects followed, at
 * most 5, http and https only). Returns a new string (caller frees), empty when the request
 * fails (connection, timeout, HTTP status >= 400, another scheme) or the answer has neither
 * ETag nor Last-Modified. Never NULL. Blocking. */
char *master_url_validator(const char *url, long timeout_ms);

/* NAME gets "U-" + hex SHA-256 of URL "\n" VALIDATOR (VALIDATOR NULL is ""). 0 or -errno. */
int master_url_object_name(const char *url, const char *validator,
                           char name[MASTER_URL_OBJECT_SIZE]);

/* Both: the object name of URL after a HEAD request of at most TIMEOUT_MS. 0 or -errno.
 * Blocking. */
int master_url_object(const char *url, long timeout_ms, char name[MASTER_URL_OBJECT_SIZE]);

#endif
