/* k8s_client.c: the Kubernetes API client of k8s_client.h: one curl easy handle per request,
 * TLS and credentials from the k8s_config, a retry loop with exponential backoff and jitter
 * for 429, 5xx and refused connections, and error texts built from the server's Status. */
#include "k8s_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buffer.h"
#include "config.h"
#include "curl_init.h"
#include "debug.h"
#include "htc_error.h"
#include "k8s_yaml.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define QUOTE_MAX       200
#define RETRY_AFTER_MAX 30

struct k8s_client {
	struct k8s_config *cfg;
	long connect_ms, timeout_ms, retry_ms;
	uint64_t rng;
};

struct k8s_client *k8s_client_create(struct k8s_config *cfg, const struct k8s_client_options *o)
{
	curl_init_once();
	struct k8s_client *k = xcalloc(1, sizeof *k);
	k->cfg = cfg;
	k->connect_ms = o && o->connect_ms > 0 ? o->connect_ms : K8S_CONNECT_MS;
	k->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : K8S_TIMEOUT_MS;
	k->retry_ms = o && o->retry_ms ? o->retry_ms : K8S_RETRY_MS;
	k->rng = (uint64_t)time_monotonic_us() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15u;
	return k;
}

void k8s_client_delete(struct k8s_client *k)
{
	if (!k)
		return;
	k8s_config_delete(k->cfg);
	free(k);
}

const struct k8s_config *k8s_client_config(const struct k8s_client *k)
{
	return k->cfg;
}

char *k8s_escape(const char *s)
{
	curl_init_once();
	char *e = curl_easy_escape(NULL, s, 0);
	char *out = xstrdup(e ? e : "");
	curl_free(e);
	return out;
}

int k8s_status_code(long status)
{
	switch (status) {
	case 400:
	case 422: return -EINVAL;
	case 401:
	case 403: return HTC_EAUTH;
	case 404: return -ENOENT;
	case 409: return -EEXIST;
	case 410: return -ESTALE;
	case 429: return -EAGAIN;
	default: return status >= 500 ? -EAGAIN : -EIO;
	}
}

static const char *status_phrase(long st)
{
	switch (st) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "HTTP error";
	}
}

char *k8s_error_text(const char *method, const char *path, long status, const char *body,
                     size_t len)
{
	json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
	const char *kind = json_string_value(json_object_get(j, "kind"));
	const char *msg = json_string_value(json_object_get(j, "message"));
	const char *reason = json_string_value(json_object_get(j, "reason"));
	char *out;
	if (kind && strcmp(kind, "Status") == 0 && msg && *msg) {
		out = xasprintf("kubernetes %s %s: %ld %s: %s", method, path, status,
		                reason && *reason ? reason : status_phrase(status), msg);
	} else {
		size_t n = len < QUOTE_MAX ? len : QUOTE_MAX;
		char *q = xstrndup(body ? body : "", n);
		for (char *p = q; *p; p++)
			if (*p == '\n' || *p == '\r' || *p == '\t')
				*p = ' ';
		str_trim(q);
		out = xasprintf("kubernetes %s %s: %ld %s: %s%s", method, path, status,
		                reason && *reason ? reason : status_phrase(status),
		                *q ? q : "(an empty answer)", len > QUOTE_MAX ? "..." : "");
		free(q);
	}
	json_decref(j);
	return out;
}

/* ---- one request ------------------------------------------------------------------------ */

struct req {
	struct k8s_client *k;
	const char *method, *path;
	CURL *c;
	struct curl_slist *hdrs;
	char *body;
	struct buffer reply;
	bool too_big;
	long retry_after; /* seconds, from the header; 0: none */
	/* streams */
	k8s_stream_fn fn;
	void *arg;
	volatile int *stop;
	bool stopped;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;
	if (r->fn) {
		long st = 0;
		curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &st);
		if (st >= 200 && st < 300) {
			if (!r->fn(p, len, r->arg)) {
				r->stopped = true;
				return 0;
			}
			return len;
		}
	}
	if (buffer_putlstring(&r->reply, p, len) < 0) {
		r->too_big = true;
		return 0;
	}
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof name && strncasecmp(p, name, sizeof name - 1) == 0) {
		char *v = xstrndup(p + sizeof name - 1, len - (sizeof name - 1));
		long s = strtol(str_trim(v), NULL, 10);
		r->retry_after = s > 0 ? s : 0;
		free(v);
	}
	return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	struct req *r = arg;
	if (r->stop && *r->stop) {
		r->stopped = true;
		return 1;
	}
	return 0;
}

/* The bearer token: the configured one, or the file's (re-read each time, as the kubelet
 * rotates it). NULL with *ERR when the file cannot be read. */
static char *bearer(struct k8s_client *k, char **err)
{
	if (k->cfg->token)
		return xstrdup(k->cfg->token);
	if (!k->cfg->token_file)
		return NULL;
	char *t = NULL;
	size_t len;
	int e = k8s_read_file(k->cfg->token_file, 64 * 1024, &t, &len);
	if (e < 0) {
		*err = xasprintf("%s: token file %s: %s", k->cfg->source, k->cfg->token_file,
		                 htc_strerror(e));
		return NULL;
	}
	char *out = xstrdup(str_trim(t));
	free(t);
	return out;
}

static void set_blob(CURL *c, CURLoption opt, const char *pem)
{
	struct curl_blob b = {.data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};
	curl_easy_setopt(c, opt, &b);
}

static int req_init(struct req *r, struct k8s_client *k, const char *method, const char *path,
                    json_t *body, bool stream, char **err)
{
	memset(r, 0, sizeof *r);
	r->k = k;
	r->method = method;
	r->path = path;
	buffer_init(&r->reply, K8S_BODY_MAX);
	char *tok = bearer(k, err);
	if (!tok && *err)
		return HTC_EAUTH;
	r->c = curl_easy_init();
	CURL *c = r->c;
	char *url = xasprintf("%s%s", k->cfg->server, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, k->connect_ms);
	if (!stream)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, k->timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "htc-k8s/" HTC_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	if (stream) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
	}
	if (getenv("HTC_K8S_CURL_VERBOSE"))
		curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
	const struct k8s_config *cfg = k->cfg;
	if (cfg->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		if (cfg->ca_file)
			curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
		if (cfg->ca_pem)
			set_blob(c, CURLOPT_CAINFO_BLOB, cfg->ca_pem);
	}
	if (cfg->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, cfg->cert_file);
	if (cfg->cert_pem) {
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		set_blob(c, CURLOPT_SSLCERT_BLOB, cfg->cert_pem);
	}
	if (cfg->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, cfg->key_file);
	if (cfg->key_pem) {
		curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
		set_blob(c, CURLOPT_SSLKEY_BLOB, cfg->key_pem);
	}
	r->hdrs = curl_slist_append(r->hdrs, "Accept: application/json");
	if (tok) {
		char *h = xasprintf("Authorization: Bearer %s", tok);
		r->hdrs = curl_slist_append(r->hdrs, h);
		free(h);
		free(tok);
	}
	if (body) {
		r->body = json_dumps(body, JSON_COMPACT);
		r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
	}
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		if (!body)
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->hdrs);
	return 0;
}

static void req_free(struct req *r)
{
	if (r->c)
		curl_easy_cleanup(r->c);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	buffer_free(&r->reply);
}

/* Whether a failure without an answer is worth another try. */
static bool retry_transport(CURLcode cr)
{
	return cr == CURLE_COULDNT_CONNECT || cr == CURLE_SEND_ERROR || cr == CURLE_RECV_ERROR ||
	       cr == CURLE_GOT_NOTHING || cr == CURLE_PARTIAL_FILE ||
	       cr == CURLE_OPERATION_TIMEDOUT;
}

/* The outcome of a finished request: 0 for 2xx, else an error with *ERR. */
static int req_outcome(struct req *r, CURLcode cr, long *status, json_t **reply, char **err)
{
	long st = 0;
	curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &st);
	if (status)
		*status = st;
	if (reply)
		*reply = NULL;
	if (r->stopped)
		return 0;
	if (cr != CURLE_OK) {
		if (r->too_big) {
			*err = xasprintf("kubernetes %s %s: the answer is larger than %d bytes",
			                 r->method, r->path, K8S_BODY_MAX);
			return HTC_ETOOBIG;
		}
		const char *why = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cr);
		if (cr == CURLE_PEER_FAILED_VERIFICATION || cr == CURLE_SSL_CONNECT_ERROR ||
		    cr == CURLE_SSL_CERTPROBLEM || cr == CURLE_SSL_CACERT_BADFILE) {
			*err = xasprintf(
			    "kubernetes %s %s: TLS with %s failed (credentials of %s): %s",
			    r->method, r->path, r->k->cfg->server, r->k->cfg->source, why);
			return HTC_EAUTH;
		}
		if (st == 0) {
			*err = xasprintf("kubernetes %s %s: cannot reach %s: %s", r->method,
			                 r->path, r->k->cfg->server, why);
			if (cr == CURLE_OPERATION_TIMEDOUT)
				return -ETIMEDOUT;
			return cr == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
		}
		*err =
		    xasprintf("kubernetes %s %s: %s (after HTTP %ld)", r->method, r->path, why, st);
		return cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	if (st < 200 || st >= 300) {
		*err = k8s_error_text(r->method, r->path, st, buffer_tostring(&r->reply),
		                      buffer_len(&r->reply));
		if (st == 401 || st == 403) {
			char *more = xasprintf(
			    "%s (credentials of %s%s%s%s)", *err, r->k->cfg->source,
			    r->k->cfg->user ? ", user \"" : "",
			    r->k->cfg->user ? r->k->cfg->user : "", r->k->cfg->user ? "\"" : "");
			free(*err);
			*err = more;
		}
		return k8s_status_code(st);
	}
	if (reply && buffer_len(&r->reply) > 0) {
		json_error_t je;
		*reply = json_loadb(buffer_tostring(&r->reply), buffer_len(&r->reply), 0, &je);
		if (!*reply) {
			*err = xasprintf("kubernetes %s %s: the answer is not JSON: %s", r->method,
			                 r->path, je.text);
			return HTC_EPROTO;
		}
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Backoff DELAY plus up to a quarter of it at random. */
static long jitter(struct k8s_client *k, long delay)
{
	k->rng ^= k->rng << 13;
	k->rng ^= k->rng >> 7;
	k->rng ^= k->rng << 17;
	return delay + (long)(k->rng % (uint64_t)(delay / 4 + 1));
}

int k8s_call(struct k8s_client *k, const char *method, const char *path, json_t *body, long *status,
             json_t **reply, char **err)
{
	*err = NULL;
	int64_t start = time_monotonic_us();
	long delay = K8S_BACKOFF_MIN_MS;
	int tries = 0;
	for (;;) {
		struct req r;
		int e = req_init(&r, k, method, path, body, false, err);
		if (e < 0) {
			req_free(&r);
			return e;
		}
		CURLcode cr = curl_easy_perform(r.c);
		tries++;
		long st = 0;
		e = req_outcome(&r, cr, &st, reply, err);
		long retry_after = r.retry_after;
		req_free(&r);
		if (status)
			*status = st;
		debug(D_HTTP, "kubernetes %s %s: %ld (%d)", method, path, st, e);
		bool again =
		    e < 0 && ((st == 429 || st >= 500) || (st == 0 && retry_transport(cr)));
		if (!again)
			return e;
		long wait =
		    retry_after > 0
		        ? (retry_after > RETRY_AFTER_MAX ? RETRY_AFTER_MAX : retry_after) * 1000
		        : jitter(k, delay);
		long spent = (long)((time_monotonic_us() - start) / 1000);
		if (k->retry_ms < 0 || spent + wait > k->retry_ms) {
			if (tries > 1) {
				char *more = xasprintf("%s (gave up after %d tries in %.1f s)",
				                       *err, tries, spent / 1000.0);
				free(*err);
				*err = more;
			}
			return e;
		}
		debug(D_HTTP, "%s; trying again in %ld ms", *err, wait);
		free(*err);
		*err = NULL;
		sleep_ms(wait);
		delay = delay * 2 > K8S_BACKOFF_MAX_MS ? K8S_BACKOFF_MAX_MS : delay * 2;
	}
}

int k8s_stream(struct k8s_client *k, const char *path, k8s_stream_fn fn, void *arg,
               volatile int *stop, long *status, char **err)
{
	*err = NULL;
	struct req r;
	int e = req_init(&r, k, "GET", path, NULL, true, err);
	if (e < 0) {
		req_free(&r);
		return e;
	}
	r.fn = fn;
	r.arg = arg;
	r.stop = stop;
	CURLcode cr = curl_easy_perform(r.c);
	e = req_outcome(&r, cr, status, NULL, err);
	req_free(&r);
	return e;
}
