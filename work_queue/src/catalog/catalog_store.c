/* catalog_store.c: the catalog's record table, a uthash keyed by the record identity
 * (type|address|name|port) that keeps insertion order. Each entry holds the decoded record
 * (with address and lastheard set by the server), its text size for the byte cap, and its
 * expiry instant. */
#include "catalog_store.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

struct entry {
	char *key;
	json_t *record;
	size_t bytes;
	int64_t expires_us;
	UT_hash_handle hh;
};

struct catalog_store {
	struct catalog_store_limits limits;
	struct entry *table;
	size_t bytes;
};

struct catalog_store *catalog_store_create(const struct catalog_store_limits *limits)
{
	struct catalog_store *s = xcalloc(1, sizeof *s);
	if (limits) {
		s->limits = *limits;
	} else {
		s->limits.lifetime_s = CATALOG_DEFAULT_LIFETIME;
		s->limits.max_records = CATALOG_DEFAULT_MAX_RECORDS;
		s->limits.max_bytes = CATALOG_DEFAULT_MAX_BYTES;
	}
	return s;
}

static void entry_remove(struct catalog_store *s, struct entry *e)
{
	HASH_DEL(s->table, e);
	s->bytes -= e->bytes;
	json_decref(e->record);
	free(e->key);
	free(e);
}

void catalog_store_delete(struct catalog_store *s)
{
	if (!s)
		return;
	struct entry *e, *tmp;
	HASH_ITER(hh, s->table, e, tmp)
	{
		entry_remove(s, e);
	}
	free(s);
}

/* A string field: present (or not REQUIRED), a string of 1..MAX bytes without control
 * characters; CHARSET, if set, lists the allowed punctuation besides letters and digits. */
static int check_string(json_t *rec, const char *key, bool required, size_t max,
                        const char *charset, const char **out, char **err)
{
	json_t *v = json_object_get(rec, key);
	*out = NULL;
	if (!v) {
		if (!required)
			return 0;
		*err = xasprintf("missing required key \"%s\"", key);
		return HTC_EPARSE;
	}
	if (!json_is_string(v)) {
		*err = xasprintf("key \"%s\" must be a string", key);
		return HTC_EPARSE;
	}
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n < 1 || n > max) {
		*err = xasprintf("key \"%s\" must have 1..%zu bytes (has %zu)", key, max, n);
		return HTC_EPARSE;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = charset ? (isalnum(c) || strchr(charset, c)) : (c >= 0x20 && c != 0x7f);
		if (!ok || c == 0) {
			*err =
			    xasprintf("key \"%s\" has a character not allowed at byte %zu", key, i);
			return HTC_EPARSE;
		}
	}
	*out = s;
	return 0;
}

/* Decodes and validates; on success *REC holds the record and *KEY its identity. */
static int validate(struct catalog_store *s, const char *text, size_t len, const char *address,
                    json_t **rec_out, char **key_out, int64_t *lifetime_s, char **err)
{
	json_error_t jerr;
	json_t *rec = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!rec) {
		*err = xasprintf("invalid JSON at byte %d (line %d): %s", jerr.position, jerr.line,
		                 jerr.text);
		return HTC_EPARSE;
	}
	int rc;
	if (!json_is_object(rec)) {
		*err = xstrdup("the update is not a JSON object");
		rc = HTC_EPARSE;
		goto fail;
	}
	const char *type, *name, *project;
	rc = check_string(rec, "type", true, 64, "_.-", &type, err);
	if (rc < 0)
		goto fail;
	rc = check_string(rec, "name", true, 255, NULL, &name, err);
	if (rc < 0)
		goto fail;
	rc = check_string(rec, "project", !strcmp(type, "wq_master"), 255, NULL, &project, err);
	if (rc < 0)
		goto fail;
	json_t *port = json_object_get(rec, "port");
	if (!port) {
		*err = xstrdup("missing required key \"port\"");
		rc = HTC_EPARSE;
		goto fail;
	}
	if (!json_is_integer(port) || json_integer_value(port) < 0 ||
	    json_integer_value(port) > 65535) {
		*err = xstrdup("key \"port\" must be an integer in 0..65535");
		rc = HTC_EPARSE;
		goto fail;
	}
	*lifetime_s = s->limits.lifetime_s;
	json_t *lt = json_object_get(rec, "lifetime");
	if (lt) {
		if (!json_is_integer(lt) || json_integer_value(lt) < 1) {
			*err = xstrdup("key \"lifetime\" must be an integer >= 1 (seconds)");
			rc = HTC_EPARSE;
			goto fail;
		}
		if (json_integer_value(lt) < *lifetime_s)
			*lifetime_s = json_integer_value(lt);
	}
	*key_out = xasprintf("%s|%s|%s|%" JSON_INTEGER_FORMAT, type, address, name,
	                     json_integer_value(port));
	*rec_out = rec;
	return 0;
fail:
	json_decref(rec);
	return rc;
}

int catalog_store_update(struct catalog_store *s, const char *text, size_t len, const char *address,
                         int64_t now_us, char **key, char **err)
{
	json_t *rec = NULL;
	char *k = NULL;
	int64_t lifetime_s = 0;
	*err = NULL;
	if (key)
		*key = NULL;
	int rc = validate(s, text, len, address, &rec, &k, &lifetime_s, err);
	if (rc < 0)
		return rc;

	struct entry *e = NULL;
	HASH_FIND_STR(s->table, k, e);
	if (e && e->expires_us <= now_us) {
		entry_remove(s, e);
		e = NULL;
	}
	size_t old_bytes = e ? e->bytes : 0;
	if (!e && HASH_COUNT(s->table) >= s->limits.max_records) {
		*err = xasprintf("catalog full: %zu records (limit)", s->limits.max_records);
		rc = HTC_ELIMIT;
		goto fail;
	}
	if (s->bytes - old_bytes + len > s->limits.max_bytes) {
		*err = xasprintf("catalog full: %zu bytes stored (limit %zu)", s->bytes,
		                 s->limits.max_bytes);
		rc = HTC_ELIMIT;
		goto fail;
	}
	json_object_set_new(rec, "address", json_string(address));
	json_object_set_new(rec, "lastheard", json_integer(now_us / 1000000));
	if (e) {
		json_decref(e->record);
		free(k);
		rc = CATALOG_UPDATE_REPLACED;
	} else {
		e = xcalloc(1, sizeof *e);
		e->key = k;
		HASH_ADD_KEYPTR(hh, s->table, e->key, strlen(e->key), e);
		rc = CATALOG_UPDATE_NEW;
	}
	e->record = rec;
	s->bytes = s->bytes - old_bytes + len;
	e->bytes = len;
	e->expires_us = now_us + lifetime_s * 1000000;
	if (key)
		*key = xstrdup(e->key);
	return rc;
fail:
	json_decref(rec);
	free(k);
	return rc;
}

int catalog_store_expire(struct catalog_store *s, int64_t now_us)
{
	int n = 0;
	struct entry *e, *tmp;
	HASH_ITER(hh, s->table, e, tmp)
	{
		if (e->expires_us <= now_us) {
			entry_remove(s, e);
			n++;
		}
	}
	return n;
}

json_t *catalog_store_query(struct catalog_store *s, const struct catalog_filter *filter,
                            int64_t now_us)
{
	json_t *a = json_array();
	struct entry *e, *tmp;
	HASH_ITER(hh, s->table, e, tmp)
	{
		if (e->expires_us > now_us && catalog_filter_match(filter, e->record))
			json_array_append(a, e->record);
	}
	return a;
}

size_t catalog_store_count(const struct catalog_store *s)
{
	return HASH_COUNT(s->table);
}

size_t catalog_store_bytes(const struct catalog_store *s)
{
	return s->bytes;
}

int64_t catalog_store_next_expiry(const struct catalog_store *s)
{
	int64_t t = INT64_MAX;
	const struct entry *e;
	for (e = s->table; e; e = e->hh.next)
		if (e->expires_us < t)
			t = e->expires_us;
	return t;
}
