/* wq_name.c: the name sandboxing rules of section 6 of the Work Queue
 * protocol. Names are judged on their bytes alone (no filesystem call); the
 * reply texts are fixed by the protocol so that tests and peers can match
 * them. */
#include "wq_name.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_msg.h"
#include "xalloc.h"
#include "banned.h"

/* Bytes of the name shown in a reply text before it is shortened. */
#define WQ_NAME_SHOWN 64

const char *wq_name_kind_label(enum wq_name_kind kind)
{
	switch (kind) {
	case WQ_NAME_INPUT: return "input name";
	case WQ_NAME_OUTPUT: return "output name";
	case WQ_NAME_MEMBER: return "member name";
	}
	return "name";
}

static int refuse(enum wq_name_kind kind, const char *name, const char *reason, char **why)
{
	if (why) {
		char *shown = wq_msg_escape(name, strlen(name), WQ_NAME_SHOWN, true);
		*why = xasprintf("%s \"%s\": %s", wq_name_kind_label(kind), shown, reason);
		free(shown);
	}
	return HTC_EPARSE;
}

int wq_name_check(enum wq_name_kind kind, const char *name, char **why)
{
	if (why)
		*why = NULL;
	size_t len = strlen(name);
	if (len == 0)
		return refuse(kind, name, "empty names are not allowed", why);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c == 0x7f)
			return refuse(kind, name, "control characters are not allowed", why);
	}
	if (len > WQ_NAME_MAX)
		return refuse(kind, name, "longer than 1024 bytes", why);
	if (name[0] == '/')
		return refuse(kind, name, "absolute names are not allowed", why);

	size_t ncomp = 0;
	const char *p = name;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t clen = slash ? (size_t)(slash - p) : strlen(p);
		if (clen == 0 || (clen == 1 && p[0] == '.'))
			return refuse(kind, name, "empty or \".\" component", why);
		if (clen == 2 && p[0] == '.' && p[1] == '.')
			return refuse(kind, name, "\"..\" is not allowed", why);
		if (clen > WQ_NAME_COMPONENT_MAX)
			return refuse(kind, name, "a component is longer than 255 bytes", why);
		if (++ncomp > WQ_NAME_COMPONENTS_MAX)
			return refuse(kind, name, "more than 64 components", why);
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

/* Byte order in which '/' sorts before every other byte a valid name may hold,
 * so that all names below a directory "a" come right after "a" itself. */
static int name_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned ca = (unsigned char)*a, cb = (unsigned char)*b;
		if (ca == '/')
			ca = 1;
		if (cb == '/')
			cb = 1;
		if (ca != cb || ca == 0)
			return (int)ca - (int)cb;
	}
}

struct name_ref {
	const char *name;
	size_t index;
};

static int ref_cmp(const void *x, const void *y)
{
	const struct name_ref *a = x, *b = y;
	int c = name_cmp(a->name, b->name);
	if (c)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

int wq_name_check_list(enum wq_name_kind kind, const char *const *names, size_t n, char **why,
                       size_t *bad_index)
{
	if (why)
		*why = NULL;
	for (size_t i = 0; i < n; i++) {
		int rc = wq_name_check(kind, names[i], why);
		if (rc) {
			if (bad_index)
				*bad_index = i;
			return rc;
		}
	}
	if (n < 2)
		return 0;
	struct name_ref *refs = xmalloc(n * sizeof *refs);
	for (size_t i = 0; i < n; i++)
		refs[i] = (struct name_ref){names[i], i};
	qsort(refs, n, sizeof *refs, ref_cmp);
	int rc = 0;
	for (size_t i = 0; i + 1 < n && rc == 0; i++) {
		const char *a = refs[i].name, *b = refs[i + 1].name;
		size_t la = strlen(a);
		const char *reason = NULL;
		if (strcmp(a, b) == 0)
			reason = "given twice";
		else if (strncmp(a, b, la) == 0 && b[la] == '/')
			reason = "is a directory prefix of another";
		if (!reason)
			continue;
		if (bad_index)
			*bad_index = refs[i].index;
		if (why) {
			char *sa = wq_msg_escape(a, la, WQ_NAME_SHOWN, true);
			if (b[la] == '/') {
				char *sb = wq_msg_escape(b, strlen(b), WQ_NAME_SHOWN, true);
				*why = xasprintf("%s \"%s\": a directory prefix of \"%s\"",
				                 wq_name_kind_label(kind), sa, sb);
				free(sb);
			} else {
				*why = xasprintf("%s \"%s\": given twice", wq_name_kind_label(kind),
				                 sa);
			}
			free(sa);
		}
		rc = HTC_EPARSE;
	}
	free(refs);
	return rc;
}

bool wq_name_is_object(const char *name)
{
	if (!name || strlen(name) != WQ_OBJECT_NAME_LEN)
		return false;
	if ((name[0] != 'F' && name[0] != 'D' && name[0] != 'U') || name[1] != '-')
		return false;
	for (int i = 2; i < WQ_OBJECT_NAME_LEN; i++) {
		char c = name[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}
