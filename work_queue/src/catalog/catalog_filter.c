/* catalog_filter.c: parsing and matching of catalog query filters. A term matches when the
 * record has the key and the value's text form equals the term's value; the text form of a
 * JSON scalar is fixed here (strings as themselves, integers in decimal, reals as %.17g). */
#include "catalog_filter.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "catalog_http.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

struct term {
	char *key;
	char *value;
};

struct catalog_filter {
	struct term terms[CATALOG_FILTER_MAX_TERMS];
	int n;
};

struct catalog_filter *catalog_filter_create(void)
{
	return xcalloc(1, sizeof(struct catalog_filter));
}

void catalog_filter_delete(struct catalog_filter *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++) {
		free(f->terms[i].key);
		free(f->terms[i].value);
	}
	free(f);
}

int catalog_filter_count(const struct catalog_filter *f)
{
	return f ? f->n : 0;
}

static bool key_ok(const char *k)
{
	size_t n = strlen(k);
	if (n < 1 || n > CATALOG_FILTER_MAX_KEY)
		return false;
	for (const char *p = k; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
			return false;
	return true;
}

int catalog_filter_add(struct catalog_filter *f, const char *key, const char *value, char **err)
{
	if (!key_ok(key)) {
		*err = xasprintf("bad filter key '%.80s' (expected 1..%d of [A-Za-z0-9_.-])", key,
		                 CATALOG_FILTER_MAX_KEY);
		return HTC_EPARSE;
	}
	if (strlen(value) > CATALOG_FILTER_MAX_VALUE) {
		*err = xasprintf("filter value of '%s' too long (limit %d bytes)", key,
		                 CATALOG_FILTER_MAX_VALUE);
		return HTC_ELIMIT;
	}
	if (f->n >= CATALOG_FILTER_MAX_TERMS) {
		*err = xasprintf("too many filter terms (limit %d)", CATALOG_FILTER_MAX_TERMS);
		return HTC_ELIMIT;
	}
	f->terms[f->n].key = xstrdup(key);
	f->terms[f->n].value = xstrdup(value);
	f->n++;
	return 0;
}

int catalog_filter_parse(const char *query, struct catalog_filter **out, char **err)
{
	struct catalog_filter *f = catalog_filter_create();
	*out = NULL;
	*err = NULL;
	const char *p = query;
	int rc = 0;
	while (*p) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		if (len == 0) { /* "a=1&&b=2" or a trailing '&': ignore empty terms */
			p += amp ? 1 : 0;
			if (!amp)
				break;
			continue;
		}
		const char *eq = memchr(p, '=', len);
		if (!eq) {
			*err = xasprintf("filter term '%.*s' has no '='",
			                 (int)(len > 80 ? 80 : len), p);
			rc = HTC_EPARSE;
			goto out;
		}
		char *key = NULL, *value = NULL;
		if (catalog_http_url_decode(p, (size_t)(eq - p), &key) < 0 ||
		    catalog_http_url_decode(eq + 1, len - (size_t)(eq - p) - 1, &value) < 0) {
			free(key);
			*err = xasprintf("bad %%-escape in filter term '%.*s'",
			                 (int)(len > 80 ? 80 : len), p);
			rc = HTC_EPARSE;
			goto out;
		}
		rc = catalog_filter_add(f, key, value, err);
		free(key);
		free(value);
		if (rc < 0)
			goto out;
		if (!amp)
			break;
		p = amp + 1;
	}
out:
	if (rc < 0) {
		catalog_filter_delete(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* Writes the text form of a scalar V into BUF; false for objects and arrays. */
static bool value_text(const json_t *v, char *buf, size_t size, const char **text)
{
	switch (json_typeof(v)) {
	case JSON_STRING: *text = json_string_value(v); return true;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		*text = buf;
		return true;
	case JSON_REAL:
		snprintf(buf, size, "%.17g", json_real_value(v));
		*text = buf;
		return true;
	case JSON_TRUE: *text = "true"; return true;
	case JSON_FALSE: *text = "false"; return true;
	case JSON_NULL: *text = "null"; return true;
	default: return false;
	}
}

bool catalog_filter_match(const struct catalog_filter *f, const json_t *record)
{
	if (!f)
		return true;
	if (!json_is_object(record))
		return false;
	for (int i = 0; i < f->n; i++) {
		const json_t *v = json_object_get(record, f->terms[i].key);
		char buf[64];
		const char *text;
		if (!v || !value_text(v, buf, sizeof buf, &text))
			return false;
		if (json_is_string(v)) {
			/* Strings may hold NULs: compare the whole length. */
			size_t n = json_string_length(v);
			if (n != strlen(f->terms[i].value) || memcmp(text, f->terms[i].value, n))
				return false;
		} else if (strcmp(text, f->terms[i].value)) {
			return false;
		}
	}
	return true;
}

static void put_encoded(struct buffer *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || strchr("-_.~", *p))
			buffer_putc(b, (char)*p);
		else
			buffer_printf(b, "%%%02X", *p);
	}
}

char *catalog_filter_to_query(const struct catalog_filter *f)
{
	struct buffer b;
	buffer_init(&b, 0);
	for (int i = 0; f && i < f->n; i++) {
		if (i)
			buffer_putc(&b, '&');
		put_encoded(&b, f->terms[i].key);
		buffer_putc(&b, '=');
		put_encoded(&b, f->terms[i].value);
	}
	return buffer_steal(&b, NULL);
}
