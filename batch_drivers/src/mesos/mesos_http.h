/* mesos_http.h: HTTP POST requests with libcurl's multi interface driven by a libuv loop (socket
 * and timer callbacks), for the Mesos driver: one long streaming request (the subscription,
 * whose body is handed over as it arrives) and short calls, all on the caller's loop, never
 * blocking it. Answers of calls are kept up to MESOS_HTTP_BODY_MAX bytes. */
#ifndef HTC_MESOS_HTTP_H
#define HTC_MESOS_HTTP_H

#include <stddef.h>
#include <uv.h>

#define MESOS_HTTP_BODY_MAX   (64 * 1024)
#define MESOS_HTTP_CONNECT_MS 5000
#define MESOS_HTTP_HEADER_MAX 200

struct mesos_http;
struct mesos_http_req;

struct mesos_http_reply {
	long status;            /* HTTP status, 0 when there was no answer */
	int curl_code;          /* CURLcode; 0 when the transfer completed */
	const char *curl_error; /* why, when curl_code != 0 */
	const char *body;       /* the answer (not for a stream's 2xx body); NUL-terminated */
	size_t body_len;
	const char *stream_id; /* the Mesos-Stream-Id header, "" when absent */
	const char *location;  /* the Location header (of a redirect), "" when absent */
};

/* The end of a request (also a failure to connect). Not called after mesos_http_cancel. */
typedef void (*mesos_http_done_fn)(const struct mesos_http_reply *r, void *arg);
/* N bytes of a streaming answer with a 2xx status. Returns 0, or non-zero to end the request
 * (the done callback is then not called). */
typedef int (*mesos_http_data_fn)(struct mesos_http_req *req, const char *d, size_t n, void *arg);

/* A client on LOOP. NULL with errno set. */
struct mesos_http *mesos_http_new(uv_loop_t *loop);
/* Ends every request without calling their callbacks and frees the client (its handles close
 * from the loop). NULL is ok. May be called from a callback. */
void mesos_http_delete(struct mesos_http *h);

/* Every later request carries HTTP basic authentication as USER with PASSWORD (copied); USER
 * NULL: none. */
void mesos_http_set_auth(struct mesos_http *h, const char *user, const char *password);

/* POST BODY (JSON) to URL, with header "Mesos-Stream-Id: STREAM_ID" when not NULL.
 * DATA NULL: a call, whose answer is collected for DONE, ended after TIMEOUT_MS (> 0).
 * DATA set: a stream (no total timeout). Returns the request (owned by the client), or NULL. */
struct mesos_http_req *mesos_http_post(struct mesos_http *h, const char *url, const char *body,
                                       const char *stream_id, long timeout_ms,
                                       mesos_http_data_fn data, mesos_http_done_fn done, void *arg);
/* The Mesos-Stream-Id header of REQ's answer ("" before it came). */
const char *mesos_http_stream_id(const struct mesos_http_req *req);
/* Ends REQ without calling its callbacks. Not from inside a data callback (return non-zero
 * there instead). */
void mesos_http_cancel(struct mesos_http_req *req);

/* The URL a redirect's LOCATION names, relative to BASE (an absolute http(s) URL): an absolute
 * http(s) URL as is, "//host:port/path" with BASE's scheme (as a Mesos master names its
 * leader), "/path" on BASE's host. NULL for anything else. Caller frees. */
char *mesos_http_resolve(const char *base, const char *location);
/* The "host:port" of URL (the whole text when it has no scheme). Caller frees. */
char *mesos_http_authority(const char *url);

#endif
