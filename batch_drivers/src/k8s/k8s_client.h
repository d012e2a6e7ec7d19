/* k8s_client.h: requests to a Kubernetes API server over HTTPS with libcurl (doc/kubernetes.md,
 * section 2). Calls block; retries 429, 5xx and refused connections with backoff; every error
 * text names the call (verb and path) and quotes the server's Status message. One client is
 * used by one thread at a time. */
#ifndef HTC_K8S_CLIENT_H
#define HTC_K8S_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "k8s_config.h"

#define K8S_BODY_MAX       (16 * 1024 * 1024) /* cap of one answer */
#define K8S_CONNECT_MS     5000
#define K8S_TIMEOUT_MS     30000 /* one non-watch request */
#define K8S_RETRY_MS       30000 /* retries of one call, in all */
#define K8S_BACKOFF_MIN_MS 250
#define K8S_BACKOFF_MAX_MS 8000

struct k8s_client;

struct k8s_client_options {
	long connect_ms; /* <= 0: the defaults above */
	long timeout_ms;
	long retry_ms; /* 0: K8S_RETRY_MS; < 0: no retries */
};

/* Takes the configuration (stolen; freed with the client). Reads nothing yet: a missing CA or
 * certificate file shows in the first call's error. */
struct k8s_client *k8s_client_create(struct k8s_config *cfg, const struct k8s_client_options *o);
void k8s_client_delete(struct k8s_client *k);
const struct k8s_config *k8s_client_config(const struct k8s_client *k);

/* METHOD PATH (e.g. "/api/v1/namespaces/default/pods?labelSelector=a%3Db") with BODY (NULL:
 * none) as JSON. 0 for a 2xx answer, *REPLY (when not NULL) the parsed JSON (new reference;
 * NULL for an empty answer). Otherwise a negative code and *ERR (caller frees), see
 * k8s_error_text; *STATUS (when not NULL) is the HTTP status, 0 when there was no answer.
 * Codes: -ENOENT 404, -EEXIST 409, HTC_EAUTH 401/403, -ESTALE 410, -EINVAL 400/422,
 * -ECONNREFUSED / -ETIMEDOUT / -EIO without an answer, -EAGAIN 429 or 5xx after the retries. */
int k8s_call(struct k8s_client *k, const char *method, const char *path, json_t *body, long *status,
             json_t **reply, char **err);

/* The error text of an answer: "kubernetes METHOD PATH: STATUS REASON: MESSAGE" from a
 * Status BODY (LEN bytes; may be NULL), or its first 200 bytes when it is not a Status. */
char *k8s_error_text(const char *method, const char *path, long status, const char *body,
                     size_t len);
/* The project code for an HTTP status (see k8s_call). */
int k8s_status_code(long status);

/* Percent-encodes S for a query parameter (caller frees). */
char *k8s_escape(const char *s);

/* ---- for the watch (k8s_watch.c) ---- */

/* The stream callback: N bytes of the answer's body; returns false to stop. */
typedef bool (*k8s_stream_fn)(const char *data, size_t n, void *arg);
/* GET PATH as a stream: the body goes to FN as it arrives (an error answer's body is kept
 * for *ERR instead). Returns when the server ends the stream (0 with a 2xx status), FN or
 * STOP (polled about once a second; may be NULL) stops it (0), or on an error (as k8s_call,
 * without retries). */
int k8s_stream(struct k8s_client *k, const char *path, k8s_stream_fn fn, void *arg,
               volatile int *stop, long *status, char **err);

#endif
