/* workflow_load.c: read a workflow in any of its forms (Make-like, JSON, JX)
 * into a finalized dag; see workflow_load.h. */
#include "workflow_load.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "dag_json.h"
#include "jx.h"
#include "parser.h"
#include "units.h"
#include "workflow_nested.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

static json_t *jx_symbols(const struct workflow_source *src, char *err, size_t errlen)
{
	struct jx_error je;
	json_t *syms = NULL;
	if (src->jx_args) {
		syms = jx_load_args(src->jx_args, &je);
		if (!syms) {
			jx_error_format(&je, err, errlen);
			return NULL;
		}
	} else {
		syms = json_object();
	}
	for (const char *const *d = src->jx_defines; d && *d; d++) {
		const char *eq = strchr(*d, '=');
		if (!eq || eq == *d) {
			snprintf(err, errlen, "--jx-define '%s': expected VAR=EXPR", *d);
			json_decref(syms);
			return NULL;
		}
		char *name = xstrndup(*d, (size_t)(eq - *d));
		json_t *v = jx_eval_expr(eq + 1, syms, &je);
		if (!v) {
			char msg[600];
			jx_error_format(&je, msg, sizeof msg);
			snprintf(err, errlen, "--jx-define %s: %s", name, msg);
			free(name);
			json_decref(syms);
			return NULL;
		}
		json_object_set_new(syms, name, v);
		free(name);
	}
	return syms;
}

/* Rewrites control characters of a message as \xNN, so that a workflow
 * full of binary garbage cannot send control sequences to the terminal. */
static void sanitize_message(char *msg, size_t len)
{
	char out[4096];
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)msg; *p && n + 5 < sizeof out; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", *p);
		} else {
			out[n++] = (char)*p;
		}
	}
	out[n] = 0;
	snprintf(msg, len, "%s", out);
}

static struct dag *load(const struct workflow_source *src, char *err, size_t errlen);

struct dag *workflow_load(const struct workflow_source *src, char *err, size_t errlen)
{
	struct dag *d = load(src, err, errlen);
	if (d && workflow_nested_check(d, src->path, err, errlen) < 0) {
		dag_delete(d);
		d = NULL;
	}
	if (!d && errlen > 0)
		sanitize_message(err, errlen);
	return d;
}

/* The parse memory budget: --parse-memory, else MAKEFLOW_PARSE_MEMORY, else
 * the parser's default. Returns 0 with *BYTES set, or -1 with a message. */
static int parse_budget(const struct workflow_source *src, size_t *bytes, char *err, size_t errlen)
{
	const char *text = src->parse_memory;
	const char *what = "--parse-memory";
	if (!text) {
		text = getenv("MAKEFLOW_PARSE_MEMORY");
		what = "MAKEFLOW_PARSE_MEMORY";
	}
	if (!text || !*text) {
		*bytes = dag_parse_default_memory();
		return 0;
	}
	int64_t v;
	if (units_parse_bytes(text, &v) != 0 || v < 65536 || (uint64_t)v > SIZE_MAX) {
		snprintf(err, errlen, "%s %s: expected a size of at least 64K, such as 512M or 4G",
		         what, text);
		return -1;
	}
	*bytes = (size_t)v;
	return 0;
}

static struct dag *load(const struct workflow_source *src, char *err, size_t errlen)
{
	size_t budget;
	if (parse_budget(src, &budget, err, errlen) < 0)
		return NULL;
	if (src->format == WORKFLOW_MAKE) {
		if (src->jx_args || (src->jx_defines && src->jx_defines[0])) {
			snprintf(err, errlen, "--jx-args and --jx-define need --jx");
			return NULL;
		}
		struct dag_parse_options opts = {.max_memory = budget};
		return dag_from_file(src->path, &opts, err, errlen);
	}
	/* a decoded JSON tree takes several times its text: a quarter of the
	 * budget for the text (JX has its own caps, doc/jx.md) */
	struct stat st;
	if (stat(src->path, &st) == 0 && (uint64_t)st.st_size > budget / 4) {
		char size[32];
		units_format_bytes((int64_t)budget, size, sizeof size);
		snprintf(err, errlen,
		         "%s: %lld bytes of JSON need more than the memory budget of %s (raise it "
		         "with --parse-memory or MAKEFLOW_PARSE_MEMORY)",
		         src->path, (long long)st.st_size, size);
		return NULL;
	}
	json_t *wf = NULL;
	struct jx_pos *pos = NULL;
	struct jx_error xe;
	if (src->format == WORKFLOW_JSON) {
		if (src->jx_args || (src->jx_defines && src->jx_defines[0])) {
			snprintf(err, errlen, "--jx-args and --jx-define need --jx");
			return NULL;
		}
		/* read by the JX parser, as CCTools does: positions of values, trailing
		 * commas; anything but plain JSON is refused */
		wf = jx_eval_file_at(src->path, NULL, 1, &pos, &xe);
	} else {
		json_t *syms = jx_symbols(src, err, errlen);
		if (!syms)
			return NULL;
		wf = jx_eval_file_at(src->path, syms, 0, &pos, &xe);
		json_decref(syms);
	}
	if (!wf) {
		jx_error_format(&xe, err, errlen);
		return NULL;
	}
	struct dag *d = dag_from_json_at(wf, src->path, pos, err, errlen);
	json_decref(wf);
	jx_pos_delete(pos);
	return d;
}

int workflow_source_getopt(struct workflow_source *src, int c, const char *arg)
{
	switch (c) {
	case WORKFLOW_OPT_JSON: src->format = WORKFLOW_JSON; return 1;
	case WORKFLOW_OPT_JX: src->format = WORKFLOW_JX; return 1;
	case WORKFLOW_OPT_JX_ARGS: src->jx_args = arg; return 1;
	case WORKFLOW_OPT_PARSE_MEMORY: src->parse_memory = arg; return 1;
	case WORKFLOW_OPT_JX_DEFINE: {
		size_t n = 0;
		while (src->jx_defines && src->jx_defines[n])
			n++;
		const char **list = (void *)src->jx_defines;
		VEC_RESIZE(list, n + 2);
		list[n] = arg;
		list[n + 1] = NULL;
		src->jx_defines = list;
		return 1;
	}
	default: return 0;
	}
}

void workflow_source_free(struct workflow_source *src)
{
	free((void *)src->jx_defines);
	src->jx_defines = NULL;
}
