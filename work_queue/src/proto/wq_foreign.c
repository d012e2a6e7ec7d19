/* wq_foreign.c: recognises CCTools Work Queue workers and masters from the first bytes they
 * send (see wq_foreign.h) and words the one line each side logs. */
#include "wq_foreign.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "banned.h"

/* Copies at most N bytes of the word at *P (up to a space or the end E) into OUT, printable
 * characters only, and moves *P past it and the spaces after it. */
static void word(const char **p, const char *e, char *out, size_t n)
{
	size_t o = 0;
	while (*p < e && **p != ' ') {
		if (o + 1 < n && **p > 0x20 && **p < 0x7f)
			out[o++] = **p;
		(*p)++;
	}
	out[o] = 0;
	while (*p < e && **p == ' ')
		(*p)++;
}

bool wq_foreign_cctools_worker(const uint8_t *data, size_t len, char *text, size_t size)
{
	static const char prefix[] = "workqueue ";
	size_t n = sizeof prefix - 1;
	if (len < n || memcmp(data, prefix, n) != 0)
		return false;
	const char *p = (const char *)data + n;
	const char *nl = memchr(p, '\n', len - n);
	const char *e = nl ? nl : (const char *)data + len;
	char proto[16], host[64], os[32], arch[32], version[32];
	word(&p, e, proto, sizeof proto);
	word(&p, e, host, sizeof host);
	word(&p, e, os, sizeof os);
	word(&p, e, arch, sizeof arch);
	word(&p, e, version, sizeof version);
	if (nl && version[0])
		snprintf(
		    text, size,
		    "a CCTools work_queue_worker (version %s, protocol %s, host %s) connected: "
		    "CCTools workers cannot serve this master; run this package's "
		    "work_queue_worker",
		    version, proto, host);
	else
		snprintf(text, size,
		         "a CCTools work_queue_worker connected: CCTools workers cannot serve this "
		         "master; run this package's work_queue_worker");
	return true;
}

bool wq_foreign_cctools_master(const char *data, size_t len, char *text, size_t size)
{
	if (!data || len == 0)
		return false;
	size_t i = 0;
	while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r'))
		i++;
	if (i == len || data[i] != '[')
		return false;
	json_t *a = json_loadb(data + i, len - i, 0, NULL);
	json_t *o = json_array_get(a, 0);
	const char *project = json_string_value(json_object_get(o, "project"));
	const char *version = json_string_value(json_object_get(o, "version"));
	bool whole = json_is_object(o) && (project || version);
	/* a truncated answer still shows its keys */
	bool keys = memmem(data, len, "\"project\"", 9) || memmem(data, len, "\"version\"", 9);
	if (!whole && !keys) {
		json_decref(a);
		return false;
	}
	char who[200] = "";
	if (version || project)
		snprintf(who, sizeof who, " (%s%s%s%s%s)", version ? "version " : "",
		         version ? version : "", version && project ? ", " : "",
		         project ? "project " : "", project ? project : "");
	for (char *q = who; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	snprintf(text, size, "a CCTools Work Queue master%s", who);
	json_decref(a);
	return true;
}
