/* catalog_cctools.c: decoding of CCTools catalog queries (/query/BASE64) and the two answer
 * forms CCTools clients read (see catalog_cctools.h). */
#include "catalog_cctools.h"

#include <string.h>

#include "buffer.h"
#include "base64.h"
#include "catalog_http.h"
#include "xalloc.h"

#include "banned.h"

struct catalog_expr *catalog_cctools_parse_query(const char *arg, char **err)
{
	*err = NULL;
	char *dec = NULL;
	if (catalog_http_url_decode(arg, strlen(arg), &dec) < 0) {
		*err = xstrdup("bad %-escape in the query");
		return NULL;
	}
	/* '+' is a base64 digit here, which URL decoding turned into a space */
	for (char *p = dec; *p; p++)
		if (*p == ' ')
			*p = '+';
	size_t n = strlen(dec), len = 0;
	if (n > (CATALOG_EXPR_MAX_TEXT + 2) / 3 * 4 + 4) {
		*err = xasprintf("query of %zu bytes (limit about %d)", n,
		                 CATALOG_EXPR_MAX_TEXT / 3 * 4);
		free(dec);
		return NULL;
	}
	char *text = base64_decode(dec, n, &len);
	free(dec);
	if (!text) {
		*err = xstrdup("the query is not base64 text");
		return NULL;
	}
	struct catalog_expr *e = catalog_expr_parse(text, len, err);
	free(text);
	return e;
}

json_t *catalog_cctools_select(const json_t *records, const struct catalog_expr *e)
{
	json_t *out = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	{
		json_t *c = json_copy(r); /* a shallow copy: only a key is added */
		json_t *lh = json_object_get(r, "lastheard");
		if (lh && !json_object_get(r, "lastheardfrom"))
			json_object_set(c, "lastheardfrom", lh);
		/* CCTools work_queue_status shows a master's completed tasks from this key */
		json_t *done = json_object_get(r, "tasks_done");
		if (done && !json_object_get(r, "tasks_complete"))
			json_object_set(c, "tasks_complete", done);
		if (catalog_expr_match(e, c))
			json_array_append(out, c);
		json_decref(c);
	}
	return out;
}

char *catalog_cctools_json(const json_t *records, size_t *len)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "[\n");
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	{
		char *t = json_dumps(r, JSON_COMPACT);
		if (!t)
			continue;
		buffer_printf(&b, "%s%s", i ? ",\n" : "", t);
		free(t);
	}
	buffer_putstring(&b, "\n]\n");
	return buffer_steal(&b, len);
}

/* Appends S with every control character (a line break would start a false field) as '?'. */
static void put_clean(struct buffer *b, const char *s)
{
	for (; *s; s++)
		buffer_putc(b, (unsigned char)*s < 0x20 ? '?' : *s);
}

char *catalog_cctools_text(const json_t *records, size_t *len)
{
	struct buffer b;
	buffer_init(&b, 0);
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	{
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)r, k, v)
		{
			char *t = json_is_string(v) ? NULL
			                            : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			put_clean(&b, k);
			buffer_putc(&b, ' ');
			put_clean(&b, json_is_string(v) ? json_string_value(v) : t ? t : "null");
			buffer_putc(&b, '\n');
			free(t);
		}
		buffer_putstring(&b, "\n");
	}
	return buffer_steal(&b, len);
}
