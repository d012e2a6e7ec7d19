/* catalog_store.h: the catalog server's table of live records. It validates an update (a JSON
 * text), stamps it with the sender's address and the time, keys it by type|address|name|port,
 * enforces the caps on records and bytes, expires records past their lifetime, and answers
 * filtered queries. Time is passed in by the caller (an injectable clock). */
#ifndef HTC_CATALOG_STORE_H
#define HTC_CATALOG_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog_filter.h"

#define CATALOG_DEFAULT_LIFETIME    1800
#define CATALOG_DEFAULT_MAX_RECORDS 10000
#define CATALOG_DEFAULT_MAX_BYTES   (64 << 20)

struct catalog_store_limits {
	int64_t lifetime_s; /* longest lifetime of a record (-T) */
	size_t max_records;
	size_t max_bytes; /* sum of the update texts' lengths */
};

struct catalog_store;

/* A store with LIMITS (NULL: the defaults). Never NULL. */
struct catalog_store *catalog_store_create(const struct catalog_store_limits *limits);
/* NULL is accepted. */
void catalog_store_delete(struct catalog_store *s);

/* Outcome of an update. */
enum catalog_update_result { CATALOG_UPDATE_NEW = 1, CATALOG_UPDATE_REPLACED = 2 };

/* Validates the LEN bytes at TEXT as a record sent from ADDRESS (an IP address text) and stores
 * it at NOW_US (microseconds since the epoch). Returns CATALOG_UPDATE_NEW or _REPLACED and, if
 * KEY is not NULL, the record's identity in *KEY (caller frees); HTC_EPARSE (bad JSON, not an
 * object, missing or invalid key) or HTC_ELIMIT (table full) with a one-line reason in *ERR
 * (caller frees). */
int catalog_store_update(struct catalog_store *s, const char *text, size_t len, const char *address,
                         int64_t now_us, char **key, char **err);

/* Removes the records whose lifetime has passed at NOW_US. Returns how many were removed. */
int catalog_store_expire(struct catalog_store *s, int64_t now_us);

/* A new JSON array (caller decrefs) of the records live at NOW_US that match FILTER (NULL: all),
 * in the order their identities were first stored. The records are shared with the store:
 * serialise the array before the store changes. */
json_t *catalog_store_query(struct catalog_store *s, const struct catalog_filter *filter,
                            int64_t now_us);

/* Number of records held (including expired ones not yet removed), and their bytes. */
size_t catalog_store_count(const struct catalog_store *s);
size_t catalog_store_bytes(const struct catalog_store *s);

/* The earliest expiry instant (microseconds) of any record, or INT64_MAX when empty. */
int64_t catalog_store_next_expiry(const struct catalog_store *s);

#endif
