/* catalog_html.c: the catalog server's HTML page. Masters (type wq_master) come first, one row
 * each with their project, address, workers and tasks; other records follow with their type and
 * name. Every text from a record is escaped: a record's fields come from anyone who can send an
 * update. See catalog_html.h. */
#include "catalog_html.h"

#include <stdio.h>
#include <string.h>

#include "buffer.h"
#include "xalloc.h"

#include "banned.h"

static void esc(struct buffer *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': buffer_putstring(b, "&amp;"); break;
		case '<': buffer_putstring(b, "&lt;"); break;
		case '>': buffer_putstring(b, "&gt;"); break;
		case '"': buffer_putstring(b, "&quot;"); break;
		case '\'': buffer_putstring(b, "&#39;"); break;
		default: buffer_putc(b, (unsigned char)*s < 0x20 ? '?' : *s); break;
		}
	}
}

static void cell_str(struct buffer *b, const json_t *rec, const char *key)
{
	const json_t *v = json_object_get(rec, key);
	buffer_putstring(b, "<td>");
	if (json_is_string(v))
		esc(b, json_string_value(v));
	else if (json_is_integer(v))
		buffer_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		buffer_putstring(b, "-");
	buffer_putstring(b, "</td>");
}

/* The first of two keys that holds an integer, as a right-aligned cell. */
static void cell_int(struct buffer *b, const json_t *rec, const char *key, const char *alt)
{
	const json_t *v = json_object_get(rec, key);
	if (!json_is_integer(v) && alt)
		v = json_object_get(rec, alt);
	if (json_is_integer(v))
		buffer_printf(b, "<td class=n>%" JSON_INTEGER_FORMAT "</td>",
		              json_integer_value(v));
	else
		buffer_putstring(b, "<td class=n>-</td>");
}

static void age_cell(struct buffer *b, const json_t *rec, int64_t now_us)
{
	const json_t *v = json_object_get(rec, "lastheard");
	if (json_is_integer(v))
		buffer_printf(b, "<td class=n>%llds</td>",
		              (long long)(now_us / 1000000 - json_integer_value(v)));
	else
		buffer_putstring(b, "<td class=n>-</td>");
}

char *catalog_html_page(const json_t *records, int64_t now_us, const char *version, size_t *len)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	                     "<meta http-equiv=\"refresh\" content=\"10\">\n"
	                     "<title>catalog_server</title>\n<style>\n"
	                     "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
	                     "table{border-collapse:collapse;font-size:.9em;margin-bottom:1.5em}"
	                     "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
	                     "th{background:#f3f3f3}td.n{text-align:right}\n"
	                     "</style></head><body>\n<h1>catalog_server ");
	esc(&b, version);
	size_t n = json_array_size(records), masters = 0;
	for (size_t i = 0; i < n; i++) {
		const char *t =
		    json_string_value(json_object_get(json_array_get(records, i), "type"));
		masters += t && !strcmp(t, "wq_master");
	}
	buffer_printf(&b, "</h1>\n<p id=\"counts\">%zu records, %zu Work Queue masters.</p>\n", n,
	              masters);
	buffer_putstring(&b, "<h2>Work Queue masters</h2>\n<table id=\"masters\"><tr>"
	                     "<th>project</th><th>master</th><th>address</th><th>owner</th>"
	                     "<th>workers</th><th>waiting</th><th>running</th><th>done</th>"
	                     "<th>version</th><th>heard</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const json_t *rec = json_array_get(records, i);
		const char *t = json_string_value(json_object_get(rec, "type"));
		if (!t || strcmp(t, "wq_master"))
			continue;
		buffer_putstring(&b, "<tr class=\"master\">");
		cell_str(&b, rec, "project");
		buffer_putstring(&b, "<td>");
		const char *name = json_string_value(json_object_get(rec, "name"));
		esc(&b, name ? name : "?");
		buffer_printf(&b, ":%" JSON_INTEGER_FORMAT "</td>",
		              json_integer_value(json_object_get(rec, "port")));
		cell_str(&b, rec, "address");
		cell_str(&b, rec, "owner");
		cell_int(&b, rec, "workers_connected", "workers");
		cell_int(&b, rec, "tasks_waiting", NULL);
		cell_int(&b, rec, "tasks_running", "tasks_on_workers");
		cell_int(&b, rec, "tasks_done", "tasks_complete");
		cell_str(&b, rec, "version");
		age_cell(&b, rec, now_us);
		buffer_putstring(&b, "</tr>\n");
	}
	if (masters == 0)
		buffer_putstring(&b, "<tr><td colspan=10>(none)</td></tr>\n");
	buffer_putstring(&b, "</table>\n<h2>Other records</h2>\n<table id=\"others\"><tr>"
	                     "<th>type</th><th>name</th><th>port</th><th>address</th>"
	                     "<th>heard</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const json_t *rec = json_array_get(records, i);
		const char *t = json_string_value(json_object_get(rec, "type"));
		if (t && !strcmp(t, "wq_master"))
			continue;
		buffer_putstring(&b, "<tr>");
		cell_str(&b, rec, "type");
		cell_str(&b, rec, "name");
		cell_str(&b, rec, "port");
		cell_str(&b, rec, "address");
		age_cell(&b, rec, now_us);
		buffer_putstring(&b, "</tr>\n");
	}
	buffer_putstring(&b, "</table>\n<p>The same records as JSON: <a href=\"/query.json\">"
	                     "/query.json</a>; as text: <a href=\"/query.text\">/query.text</a>."
	                     "</p>\n</body></html>\n");
	return buffer_steal(&b, len);
}
