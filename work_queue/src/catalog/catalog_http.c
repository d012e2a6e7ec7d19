/* catalog_http.c: the catalog server's incremental HTTP/1.x request parser. Header bytes are
 * collected into a capped buffer until the blank line, then the request line and the few
 * headers that matter (Content-Length, Transfer-Encoding, Expect) are parsed; the body is then
 * collected up to its declared length. */
#include "catalog_http.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buffer.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

enum state { ST_HEADER, ST_BODY, ST_DONE, ST_ERROR };

struct catalog_http_request {
	enum state state;
	struct buffer head;
	struct buffer body;
	size_t max_body;
	size_t content_length;
	int nlines;
	size_t line_start; /* offset in head of the current line */
	int status;
	char *error;
	char *method;
	char *path;
	char *query;
	int minor;
	bool expect_continue;
	bool accepts_html; /* an Accept header names text/html (a browser) */
};

struct catalog_http_request *catalog_http_request_create(size_t max_body)
{
	struct catalog_http_request *r = xcalloc(1, sizeof *r);
	buffer_init(&r->head, CATALOG_HTTP_MAX_HEADERS);
	r->max_body = max_body;
	r->state = ST_HEADER;
	return r;
}

void catalog_http_request_delete(struct catalog_http_request *r)
{
	if (!r)
		return;
	buffer_free(&r->head);
	buffer_free(&r->body);
	free(r->error);
	free(r->method);
	free(r->path);
	free(r->query);
	free(r);
}

static int fail(struct catalog_http_request *r, int status, char *msg)
{
	r->state = ST_ERROR;
	r->status = status;
	free(r->error);
	r->error = msg;
	return CATALOG_HTTP_ERROR;
}

static bool is_token_char(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Parses "METHOD TARGET HTTP/1.x" (LINE without its line end). */
static int parse_request_line(struct catalog_http_request *r, const char *line, size_t len)
{
	const char *sp1 = memchr(line, ' ', len);
	if (!sp1 || sp1 == line)
		return fail(r, 400,
		            xstrdup("malformed request line (expected METHOD TARGET VERSION)"));
	for (const char *p = line; p < sp1; p++)
		if (!is_token_char((unsigned char)*p))
			return fail(r, 400, xstrdup("malformed request line: bad method"));
	const char *target = sp1 + 1;
	const char *end = line + len;
	const char *sp2 = memchr(target, ' ', (size_t)(end - target));
	if (!sp2 || sp2 == target)
		return fail(r, 400,
		            xstrdup("malformed request line (expected METHOD TARGET VERSION)"));
	const char *version = sp2 + 1;
	size_t vlen = (size_t)(end - version);
	if (vlen != 8 || memcmp(version, "HTTP/1.", 7) != 0 ||
	    (version[7] != '0' && version[7] != '1')) {
		if (vlen >= 5 && memcmp(version, "HTTP/", 5) == 0)
			return fail(r, 505,
			            xstrdup("HTTP version not supported (1.0 and 1.1 are)"));
		return fail(r, 400, xstrdup("malformed request line: bad HTTP version"));
	}
	r->minor = version[7] - '0';
	for (const char *p = target; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return fail(r, 400, xstrdup("malformed request target"));
	if (*target != '/')
		return fail(r, 400, xstrdup("request target must start with '/'"));
	r->method = xstrndup(line, (size_t)(sp1 - line));
	const char *q = memchr(target, '?', (size_t)(sp2 - target));
	if (q) {
		r->path = xstrndup(target, (size_t)(q - target));
		r->query = xstrndup(q + 1, (size_t)(sp2 - q - 1));
	} else {
		r->path = xstrndup(target, (size_t)(sp2 - target));
		r->query = xstrdup("");
	}
	return 0;
}

/* Parses one "Name: value" header line (without line end). */
static int parse_header_line(struct catalog_http_request *r, char *line, bool *have_length)
{
	char *colon = strchr(line, ':');
	if (!colon || colon == line)
		return fail(r, 400, xasprintf("malformed header line (no name: value)"));
	for (char *p = line; p < colon; p++)
		if (!is_token_char((unsigned char)*p))
			return fail(r, 400, xstrdup("malformed header name"));
	*colon = 0;
	char *value = str_trim(colon + 1);
	if (!strcasecmp(line, "Content-Length")) {
		int64_t n;
		if (str_to_int64(value, &n) < 0 || n < 0 || value[0] == '+' || value[0] == '-')
			return fail(r, 400, xasprintf("bad Content-Length '%.64s'", value));
		if (*have_length && (size_t)n != r->content_length)
			return fail(r, 400, xstrdup("conflicting Content-Length headers"));
		if ((uint64_t)n > r->max_body)
			return fail(r, 413,
			            xasprintf("body too large: %lld bytes (limit %zu)",
			                      (long long)n, r->max_body));
		r->content_length = (size_t)n;
		*have_length = true;
	} else if (!strcasecmp(line, "Transfer-Encoding")) {
		return fail(r, 501,
		            xstrdup("Transfer-Encoding is not supported (send Content-Length)"));
	} else if (!strcasecmp(line, "Expect")) {
		if (!strcasecmp(value, "100-continue"))
			r->expect_continue = r->minor == 1;
		else
			return fail(r, 417, xstrdup("unsupported Expect header"));
	} else if (!strcasecmp(line, "Accept")) {
		r->accepts_html = r->accepts_html || strstr(value, "text/html") != NULL;
	}
	return 0;
}

/* Called with the whole header (request line, headers, blank line) in r->head. */
static int parse_head(struct catalog_http_request *r)
{
	char *text = xstrndup(buffer_tostring(&r->head), buffer_len(&r->head));
	int rc = 0;
	bool have_length = false;
	char *save = text;
	bool first = true;
	while (*save) {
		char *nl = strchr(save, '\n');
		if (!nl)
			break;
		*nl = 0;
		size_t len = (size_t)(nl - save);
		if (len && save[len - 1] == '\r')
			save[--len] = 0;
		if (memchr(save, 0, len) || strchr(save, '\r')) {
			rc = fail(r, 400, xstrdup("stray CR or NUL in the request header"));
			goto out;
		}
		if (first) {
			rc = parse_request_line(r, save, len);
			if (rc < 0)
				goto out;
			first = false;
		} else if (len > 0) {
			if (*save == ' ' || *save == '\t') {
				rc = fail(r, 400, xstrdup("obsolete header line folding"));
				goto out;
			}
			rc = parse_header_line(r, save, &have_length);
			if (rc < 0)
				goto out;
		}
		save = nl + 1;
	}
	if (!have_length && !strcmp(r->method, "POST")) {
		rc = fail(r, 411, xstrdup("length required (POST without Content-Length)"));
		goto out;
	}
	buffer_init(&r->body, r->content_length);
	r->state = r->content_length ? ST_BODY : ST_DONE;
out:
	free(text);
	return rc;
}

int catalog_http_request_feed(struct catalog_http_request *r, const char *data, size_t len)
{
	size_t i = 0;
	while (i < len && r->state == ST_HEADER) {
		char c = data[i++];
		if (buffer_putc(&r->head, c) < 0)
			return fail(r, 431,
			            xasprintf("request header too large (limit %d bytes)",
			                      CATALOG_HTTP_MAX_HEADERS));
		size_t n = buffer_len(&r->head);
		const char *h = buffer_tostring(&r->head);
		if (c != '\n') {
			if (r->nlines == 0 && n > CATALOG_HTTP_MAX_LINE)
				return fail(r, 414,
				            xasprintf("request line too long (limit %d bytes)",
				                      CATALOG_HTTP_MAX_LINE));
			continue;
		}
		/* End of a line: blank line ends the header. */
		size_t line_len = n - r->line_start;
		bool blank = line_len == 1 || (line_len == 2 && h[n - 2] == '\r');
		r->line_start = n;
		if (blank && r->nlines == 0) {
			/* Tolerate empty lines before the request line (RFC 9112 2.2). */
			buffer_clear(&r->head);
			r->line_start = 0;
			continue;
		}
		if (++r->nlines > CATALOG_HTTP_MAX_NLINES + 1)
			return fail(
			    r, 431,
			    xasprintf("too many header lines (limit %d)", CATALOG_HTTP_MAX_NLINES));
		if (blank && parse_head(r) < 0)
			return CATALOG_HTTP_ERROR;
	}
	if (r->state == ST_BODY && i < len) {
		size_t want = r->content_length - buffer_len(&r->body);
		size_t take = len - i < want ? len - i : want;
		if (buffer_putlstring(&r->body, data + i, take) < 0)
			return fail(r, 413, xstrdup("body too large"));
		if (buffer_len(&r->body) == r->content_length)
			r->state = ST_DONE;
	}
	switch (r->state) {
	case ST_DONE: return CATALOG_HTTP_COMPLETE;
	case ST_ERROR: return CATALOG_HTTP_ERROR;
	default: return CATALOG_HTTP_MORE;
	}
}

int catalog_http_request_status(const struct catalog_http_request *r)
{
	return r->state == ST_ERROR ? r->status : 200;
}

const char *catalog_http_request_error(const struct catalog_http_request *r)
{
	return r->error ? r->error : "";
}

bool catalog_http_request_header_done(const struct catalog_http_request *r)
{
	return r->state == ST_BODY || r->state == ST_DONE;
}

bool catalog_http_request_accepts_html(const struct catalog_http_request *r)
{
	return r->accepts_html;
}

bool catalog_http_request_expect_continue(const struct catalog_http_request *r)
{
	return r->expect_continue;
}

const char *catalog_http_request_method(const struct catalog_http_request *r)
{
	return r->method ? r->method : "";
}

const char *catalog_http_request_path(const struct catalog_http_request *r)
{
	return r->path ? r->path : "";
}

const char *catalog_http_request_query(const struct catalog_http_request *r)
{
	return r->query ? r->query : "";
}

int catalog_http_request_minor(const struct catalog_http_request *r)
{
	return r->minor;
}

const char *catalog_http_request_body(const struct catalog_http_request *r, size_t *len)
{
	if (len)
		*len = buffer_len(&r->body);
	return buffer_tostring(&r->body);
}

int catalog_http_url_decode(const char *s, size_t len, char **out)
{
	char *d = xmalloc(len + 1);
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '+') {
			d[j++] = ' ';
		} else if (c == '%') {
			int hi = i + 2 < len ? str_hex_digit((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < len ? str_hex_digit((unsigned char)s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(d);
				*out = NULL;
				return HTC_EPARSE;
			}
			d[j++] = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == 0) {
			free(d);
			*out = NULL;
			return HTC_EPARSE;
		} else {
			d[j++] = c;
		}
	}
	d[j] = 0;
	*out = d;
	return 0;
}

const char *catalog_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}
