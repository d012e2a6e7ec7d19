/* catalog_http.h: an incremental parser for the HTTP/1.x requests the catalog server accepts,
 * with hard caps on the request line, the headers and the body, plus URL decoding. The server
 * feeds it whatever bytes arrive; it reports "need more", "complete" or an HTTP error status
 * with a one-line reason. */
#ifndef HTC_CATALOG_HTTP_H
#define HTC_CATALOG_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define CATALOG_HTTP_MAX_LINE    8192      /* request line */
#define CATALOG_HTTP_MAX_HEADERS 16384     /* request line + headers */
#define CATALOG_HTTP_MAX_NLINES  100       /* header lines */
#define CATALOG_HTTP_MAX_BODY    (1 << 20) /* default body cap */

/* Results of catalog_http_request_feed. */
enum {
	CATALOG_HTTP_MORE = 0,     /* need more bytes */
	CATALOG_HTTP_COMPLETE = 1, /* a whole request was read */
	CATALOG_HTTP_ERROR = -1    /* see catalog_http_request_status/_error */
};

struct catalog_http_request;

/* A parser for one request whose body may have at most MAX_BODY bytes. Never NULL. */
struct catalog_http_request *catalog_http_request_create(size_t max_body);
/* NULL is accepted. */
void catalog_http_request_delete(struct catalog_http_request *r);

/* Feeds LEN bytes. Returns CATALOG_HTTP_MORE, CATALOG_HTTP_COMPLETE (bytes after the request
 * are ignored) or CATALOG_HTTP_ERROR; once complete or in error, further calls return the same
 * result and consume nothing. */
int catalog_http_request_feed(struct catalog_http_request *r, const char *data, size_t len);

/* After an error: the HTTP status (400, 408, 411, 413, 414, 431, 501, 505) and the reason
 * (static or owned by R). */
int catalog_http_request_status(const struct catalog_http_request *r);
const char *catalog_http_request_error(const struct catalog_http_request *r);

/* True once the header is complete (the body may still be arriving). */
bool catalog_http_request_header_done(const struct catalog_http_request *r);
/* True if an Accept header of the request names text/html (a browser asking for a page). */
bool catalog_http_request_accepts_html(const struct catalog_http_request *r);
/* True if the client sent "Expect: 100-continue" in an HTTP/1.1 request. */
bool catalog_http_request_expect_continue(const struct catalog_http_request *r);

/* Parts of the request, valid once the header is done; owned by R. METHOD as sent ("GET");
 * PATH the target before any '?', not decoded; QUERY the text after '?' ("" if none). */
const char *catalog_http_request_method(const struct catalog_http_request *r);
const char *catalog_http_request_path(const struct catalog_http_request *r);
const char *catalog_http_request_query(const struct catalog_http_request *r);
/* 0 for HTTP/1.0, 1 for HTTP/1.1. */
int catalog_http_request_minor(const struct catalog_http_request *r);
/* The body (NUL-terminated, may contain NULs) and its length; "" and 0 if none. */
const char *catalog_http_request_body(const struct catalog_http_request *r, size_t *len);

/* Decodes LEN bytes of URL-encoded text (%XX escapes, '+' for space) into a new string in
 * *OUT (caller frees). Returns 0, or HTC_EPARSE for a bad escape or an encoded NUL (*OUT is
 * then NULL). */
int catalog_http_url_decode(const char *s, size_t len, char **out);

/* The standard reason phrase of STATUS ("Not Found"); "Unknown" for others. */
const char *catalog_http_reason(int status);

#endif
