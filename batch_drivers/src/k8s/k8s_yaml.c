/* k8s_yaml.c: YAML to jansson with libyaml's event parser (k8s_yaml.h). A recursive descent
 * over the events of the first document, depth-capped; every error names the file and the
 * line libyaml was at. */
#include "k8s_yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "buffer.h"
#include "htc_error.h"
#include "xalloc.h"

#include "banned.h"

struct yp {
	yaml_parser_t p;
	const char *name;
	char *err;
};

static void fail(struct yp *y, size_t line, const char *what)
{
	if (!y->err)
		y->err = xasprintf("%s:%zu: %s", y->name, line + 1, what);
}

static int next(struct yp *y, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&y->p, ev)) {
		char *m = xasprintf("YAML error: %s%s%s", y->p.problem ? y->p.problem : "unknown",
		                    y->p.context ? " " : "", y->p.context ? y->p.context : "");
		fail(y, y->p.problem_mark.line, m);
		free(m);
		return -1;
	}
	return 0;
}

static json_t *scalar(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		if (n == 0 || strcmp(v, "null") == 0 || strcmp(v, "~") == 0 ||
		    strcmp(v, "Null") == 0)
			return json_null();
		if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0)
			return json_true();
		if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0)
			return json_false();
	}
	return json_stringn(v, n);
}

/* The node starting with event EV (already read; this function deletes it). */
static json_t *node(struct yp *y, yaml_event_t *ev, int depth)
{
	size_t line = ev->start_mark.line;
	json_t *out = NULL;
	if (depth > K8S_YAML_MAX_DEPTH) {
		fail(y, line, "nested deeper than 64 levels");
		yaml_event_delete(ev);
		return NULL;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor ||
		    (ev->data.scalar.tag && !ev->data.scalar.plain_implicit &&
		     !ev->data.scalar.quoted_implicit)) {
			fail(y, line, "anchors and tags are not supported");
			break;
		}
		out = scalar(ev);
		if (!out)
			fail(y, line, "a scalar is not valid UTF-8");
		break;
	case YAML_ALIAS_EVENT: fail(y, line, "aliases (*name) are not supported"); break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		if (map ? ev->data.mapping_start.anchor != NULL
		        : ev->data.sequence_start.anchor != NULL) {
			fail(y, line, "anchors are not supported");
			break;
		}
		out = map ? json_object() : json_array();
		for (;;) {
			yaml_event_t k;
			if (next(y, &k) < 0)
				goto bad;
			if (k.type == YAML_SEQUENCE_END_EVENT || k.type == YAML_MAPPING_END_EVENT) {
				yaml_event_delete(&k);
				break;
			}
			if (!map) {
				json_t *v = node(y, &k, depth + 1);
				if (!v)
					goto bad;
				json_array_append_new(out, v);
				continue;
			}
			if (k.type != YAML_SCALAR_EVENT) {
				fail(y, k.start_mark.line, "a mapping key must be a plain string");
				yaml_event_delete(&k);
				goto bad;
			}
			size_t kline = k.start_mark.line;
			char *key = xstrdup((const char *)k.data.scalar.value);
			yaml_event_delete(&k);
			yaml_event_t ve;
			json_t *v = NULL;
			if (next(y, &ve) == 0)
				v = node(y, &ve, depth + 1);
			if (!v) {
				free(key);
				goto bad;
			}
			if (json_object_get(out, key)) {
				char *m = xasprintf("the key \"%s\" appears twice", key);
				fail(y, kline, m);
				free(m);
				free(key);
				json_decref(v);
				goto bad;
			}
			json_object_set_new(out, key, v);
			free(key);
		}
		break;
	bad:
		json_decref(out);
		out = NULL;
		break;
	}
	default: fail(y, line, "unexpected YAML event"); break;
	}
	yaml_event_delete(ev);
	return out;
}

json_t *k8s_yaml_parse(const char *text, size_t len, const char *name, char **err)
{
	struct yp y = {.name = name};
	*err = NULL;
	if (!yaml_parser_initialize(&y.p)) {
		*err = xasprintf("%s: cannot start the YAML parser", name);
		return NULL;
	}
	yaml_parser_set_input_string(&y.p, (const unsigned char *)text, len);
	json_t *out = NULL;
	yaml_event_t ev;
	/* STREAM-START, then DOCUMENT-START or STREAM-END (an empty file) */
	while (!out && !y.err && next(&y, &ev) == 0) {
		yaml_event_type_t t = ev.type;
		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (t == YAML_STREAM_END_EVENT || t == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			out = json_object();
			break;
		}
		out = node(&y, &ev, 0);
		if (!out)
			break;
	}
	yaml_parser_delete(&y.p);
	if (!out) {
		*err = y.err ? y.err : xasprintf("%s: cannot parse it as YAML", name);
		return NULL;
	}
	free(y.err);
	if (json_is_null(out)) {
		json_decref(out);
		out = json_object();
	}
	return out;
}

int k8s_read_file(const char *path, size_t cap, char **text, size_t *len)
{
	*text = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct buffer b;
	buffer_init(&b, cap);
	char chunk[8192];
	int e = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			break;
		}
		if (n == 0)
			break;
		e = buffer_putlstring(&b, chunk, (size_t)n);
		if (e < 0)
			break;
	}
	close(fd);
	if (e < 0) {
		buffer_free(&b);
		return e;
	}
	*len = buffer_len(&b);
	*text = xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	return 0;
}

json_t *k8s_yaml_load(const char *path, char **err)
{
	char *text = NULL;
	size_t len = 0;
	int e = k8s_read_file(path, K8S_YAML_MAX_BYTES, &text, &len);
	if (e < 0) {
		*err = xasprintf("%s: %s", path,
		                 e == HTC_ETOOBIG ? "larger than 4 MiB" : htc_strerror(e));
		return NULL;
	}
	json_t *j = k8s_yaml_parse(text, len, path, err);
	free(text);
	return j;
}
