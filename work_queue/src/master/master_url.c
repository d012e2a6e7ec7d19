/* master_url.c: the master's HEAD request for a URL input and the `U-` object name made from it
 * (doc/work-queue-protocol.md 5.5). Only the headers of the last response (after redirects)
 * count. master_url_head reports a failed request (the task then fails); master_url_validator turns
 * it into an empty validator, so the URL is then cached by name alone. */
#include "master_url.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "config.h"
#include "curl_init.h"
#include "debug.h"
#include "sha256.h"
#include "xalloc.h"
#include "banned.h"

#define HEAD_MAX_REDIRECTS 5

struct head {
	char etag[MASTER_URL_VALIDATOR_MAX];
	char lm[MASTER_URL_VALIDATOR_MAX];
};

/* Copies the value of header LINE (LEN bytes) into OUT if its name is NAME; values too long
 * for OUT are dropped (no validator rather than a cut one). */
static void take(const char *line, size_t len, const char *name, char *out, size_t outsize)
{
	size_t n = strlen(name);
	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return;
	const char *v = line + n + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vl = (size_t)(end - v);
	if (vl == 0 || vl >= outsize) {
		out[0] = 0;
		return;
	}
	memcpy(out, v, vl);
	out[vl] = 0;
}

static size_t on_header(char *b, size_t size, size_t n, void *arg)
{
	struct head *h = arg;
	size_t len = size * n;
	if (len >= 5 && !strncmp(b, "HTTP/", 5)) {
		/* a new response (after a redirect or a 100): forget the previous one */
		h->etag[0] = h->lm[0] = 0;
		return len;
	}
	take(b, len, "etag", h->etag, sizeof h->etag);
	take(b, len, "last-modified", h->lm, sizeof h->lm);
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	const atomic_int *stop = arg;
	return stop && atomic_load(stop) ? 1 : 0;
}

int master_url_head(const char *url, long timeout_ms, const atomic_int *stop, char **validator,
                    char **why)
{
	*validator = NULL;
	*why = NULL;
	if (!url || (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))) {
		*why = xstrdup("only http and https URLs are fetched");
		return -EINVAL;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		*why = xstrdup("cannot set up libcurl");
		return -ENOMEM;
	}
	struct head h;
	h.etag[0] = h.lm[0] = 0;
	char errbuf[CURL_ERROR_SIZE];
	errbuf[0] = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)HEAD_MAX_REDIRECTS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "htc-master/" HTC_VERSION);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (stop) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)stop);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_off_t clen = -1;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
	curl_easy_cleanup(c);
	if (code == 405 || code == 501) {
		/* The server does not answer HEAD: no validator, the worker's GET decides. */
		debug(D_WQ, "HEAD %s: HTTP %ld, no validator", url, code);
		*validator = xstrdup("");
		return 0;
	}
	if (rc == CURLE_HTTP_RETURNED_ERROR || (rc == CURLE_OK && (code < 200 || code > 299))) {
		*why = xasprintf("HTTP %ld for its HEAD request", code);
		return -ENOENT;
	}
	if (rc != CURLE_OK) {
		const char *e = errbuf[0] ? errbuf : curl_easy_strerror(rc);
		int err = rc == CURLE_OPERATION_TIMEDOUT    ? -ETIMEDOUT
		          : rc == CURLE_COULDNT_CONNECT     ? -ECONNREFUSED
		          : rc == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED
		                                            : -EIO;
		*why = xasprintf("its HEAD request failed: %s", e);
		return err;
	}
	char *v;
	if (h.etag[0])
		v = xasprintf("etag:%s", h.etag);
	else if (h.lm[0] && clen >= 0)
		v = xasprintf("lm:%s;%lld", h.lm, (long long)clen);
	else if (h.lm[0])
		v = xasprintf("lm:%s;", h.lm);
	else
		v = xstrdup("");
	debug(D_WQ, "HEAD %s: validator \"%s\"", url, v);
	*validator = v;
	return 0;
}

char *master_url_validator(const char *url, long timeout_ms)
{
	curl_init_once();
	char *v = NULL, *why = NULL;
	if (master_url_head(url, timeout_ms, NULL, &v, &why) < 0) {
		debug(D_WQ, "HEAD %s: %s: no validator", url ? url : "(null)", why);
		free(why);
		return xstrdup("");
	}
	return v;
}

int master_url_object_name(const char *url, const char *validator,
                           char name[MASTER_URL_OBJECT_SIZE])
{
	if (!url)
		return -EINVAL;
	char *text = xasprintf("%s\n%s", url, validator ? validator : "");
	char hex[SHA256_HEX_SIZE];
	int rc = sha256_buffer(text, strlen(text), hex);
	free(text);
	if (rc < 0)
		return rc;
	snprintf(name, MASTER_URL_OBJECT_SIZE, "U-%s", hex);
	return 0;
}

int master_url_object(const char *url, long timeout_ms, char name[MASTER_URL_OBJECT_SIZE])
{
	char *v = master_url_validator(url, timeout_ms);
	int rc = master_url_object_name(url, v, name);
	free(v);
	return rc;
}
