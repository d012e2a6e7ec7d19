/* catalog_client.h: the client side of the catalog (doc/catalog.md): parsing catalog host
 * lists, sending status updates without blocking a libuv loop (used by the master, factories
 * and makeflow), and querying the catalog for records, either blocking with a timeout (tools,
 * the worker) or asynchronously from a libuv loop. */
#ifndef HTC_CATALOG_CLIENT_H
#define HTC_CATALOG_CLIENT_H

#include <jansson.h>
#include <uv.h>

#include "catalog_filter.h"

#define CATALOG_DEFAULT_PORT 9097
#define CATALOG_DEFAULT_HOST "localhost:9097"
#define CATALOG_MAX_HOSTS    16
/* Records whose compact JSON text is shorter than this go by UDP (mode AUTO). */
#define CATALOG_UDP_THRESHOLD 1200
/* Largest query answer accepted. */
#define CATALOG_MAX_RESPONSE (256 << 20)

struct catalog_host {
	char host[256];
	int port;
};

/* The host list used when none is given: $CATALOG_HOST if set and not empty, else
 * "localhost:9097". Static or environment string. */
const char *catalog_hosts_default(void);

/* Parses LIST ("HOST[:PORT][,HOST[:PORT]...]", NULL: catalog_hosts_default()) into HOSTS (room
 * for MAX entries), setting *N. Returns 0, or HTC_EPARSE / HTC_ELIMIT with a reason in *ERR
 * (caller frees). */
int catalog_hosts_parse(const char *list, struct catalog_host *hosts, int max, int *n, char **err);

enum catalog_send_mode { CATALOG_SEND_AUTO, CATALOG_SEND_UDP, CATALOG_SEND_HTTP };

/* ---- Asynchronous updates (for programs that run a libuv loop) ---- */

struct catalog_updater;

/* Called when a round of sends ends: FAILED of N hosts failed; DETAIL describes the last
 * failure ("" if none). */
typedef void (*catalog_updater_cb)(void *arg, int failed, int n, const char *detail);

/* An updater sending to the hosts of LIST (NULL: the default) from LOOP. Returns NULL with *ERR
 * set (caller frees) if LIST is invalid. CB may be NULL. */
struct catalog_updater *catalog_updater_create(uv_loop_t *loop, const char *list,
                                               catalog_updater_cb cb, void *arg, char **err);

/* Starts sending RECORD (a JSON object, not kept) to every host, never blocking. Returns 0,
 * -EBUSY if the previous round has not ended (nothing is sent; try at the next period), or
 * -EINVAL if RECORD cannot be encoded. Host names are resolved with uv_getaddrinfo, each send
 * has a 5 s timeout. */
int catalog_updater_send(struct catalog_updater *u, const json_t *record,
                         enum catalog_send_mode mode);

/* Cancels what is in flight (the callback is not called again) and frees U once the loop has
 * closed its handles: keep running LOOP until it has no handles before uv_loop_close. NULL is
 * accepted. */
void catalog_updater_delete(struct catalog_updater *u);

/* ---- Asynchronous query ---- */

struct catalog_query_op;

/* RECORDS: a JSON array the callee owns (json_decref it), or NULL with ERR saying why no host
 * answered. */
typedef void (*catalog_query_cb)(void *arg, json_t *records, const char *err);

/* Asks the hosts of LIST in order for the records matching FILTER (NULL: all) and calls CB once
 * from LOOP, within TIMEOUT_S seconds in total. Returns NULL with *ERR set for an invalid LIST. */
struct catalog_query_op *catalog_query_start(uv_loop_t *loop, const char *list,
                                             const struct catalog_filter *filter, double timeout_s,
                                             catalog_query_cb cb, void *arg, char **err);

/* Cancels a query whose callback has not run yet (it will not run); the loop finishes closing
 * its handles. */
void catalog_query_cancel(struct catalog_query_op *op);

/* ---- Blocking calls (run a private loop) ---- */

/* Queries the catalog; returns a JSON array (caller decrefs), or NULL with *ERR set (caller
 * frees). */
json_t *catalog_query(const char *list, const struct catalog_filter *filter, double timeout_s,
                      char **err);

/* Sends the record TEXT (LEN bytes of JSON) to every host of LIST. Returns 0 if every send
 * succeeded (for UDP: left this host), else the last error with *ERR set (caller frees). */
int catalog_update_send(const char *list, const char *text, size_t len, enum catalog_send_mode mode,
                        double timeout_s, char **err);

#endif
