/* worker_fetch.h: the worker's fetcher of URL inputs (doc/work-queue-protocol.md 5.5, 5.6): a task
 * input `from: "url"` is downloaded by the worker itself with libcurl into its cache under the
 * input's `U-` object name. Downloads run in the libuv thread pool, so the loop never blocks;
 * tasks that need the same object at once share one download. */
#ifndef HTC_WORKER_FETCH_H
#define HTC_WORKER_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct worker_cache;
struct worker_fetch;
struct worker_shared_cache;

/* Defaults of struct worker_fetch_opts (a field left 0 takes its default). */
#define WORKER_FETCH_CONNECT_TIMEOUT_S 30 /* TCP and TLS connection set-up */
#define WORKER_FETCH_LOW_SPEED_TIME_S  60 /* fail after this long below LOW_SPEED_LIMIT */
#define WORKER_FETCH_LOW_SPEED_LIMIT   1  /* bytes per second */
#define WORKER_FETCH_MAX_REDIRECTS     5
#define WORKER_FETCH_MAX_ACTIVE        2 /* downloads at once (threads of the libuv pool) */

struct worker_fetch_opts {
	long connect_timeout_s;
	long low_speed_time_s;
	long low_speed_limit;
	long max_redirects;
	int max_active;
};

/* Called on the loop once per download that ended while the fetcher lives: STATUS 0 (OBJECT is
 * now complete in the cache, SIZE bytes) or a negative error with TEXT saying why, meant for
 * `task_done` `missing.text` ("HTTP 404 for URL", the curl error, a refused scheme, a size over
 * the limit). TEXT and OBJECT are valid during the call only. A download whose every user
 * released it calls back only if it nevertheless completed (status 0). The callback may call
 * worker_fetch_want and worker_fetch_release, but not worker_fetch_delete. */
typedef void (*worker_fetch_done_fn)(const char *object, int status, uint64_t size,
                                     const char *text, void *arg);

/* A fetcher storing into CACHE (borrowed: it must outlive every download, including those
 * still running in the thread pool after worker_fetch_delete; run the loop before deleting the
 * cache). O may be NULL (defaults). Never NULL. Loop thread. */
struct worker_fetch *worker_fetch_create(uv_loop_t *loop, struct worker_cache *cache,
                                         const struct worker_fetch_opts *o,
                                         worker_fetch_done_fn done, void *arg);

/* Shared downloads (worker_fetch_want_shared) started from now on go through STORE (borrowed,
 * NULL: none; it must outlive every download, like the cache): an object the store holds is
 * linked (or copied) from it into the cache without a request, and one fetched is published
 * into it. While one worker of the store fetches an object, the others' downloads of it wait
 * in their threads for its lock (a cancel takes effect once the lock is obtained), then take
 * it. Loop thread. */
void worker_fetch_set_store(struct worker_fetch *f, struct worker_shared_cache *store);

/* One more user of OBJECT (a valid `U-` name) fetched from URL: starts the download, or joins
 * the one already running for OBJECT. SIZE_LIMIT is the most bytes the download may store (the
 * worker's free disk; 0 fails it). Every error, including a URL whose scheme is not http or
 * https, is reported through the callback, never from here, so this returns 0, or -EINVAL for
 * a bad argument. Each successful call is matched by one worker_fetch_release, or by the
 * callback. */
int worker_fetch_want(struct worker_fetch *f, const char *url, const char *object,
                      uint64_t size_limit);
/* The same; with SHARE (the master said the object's name holds the server's validator, so it
 * names one version of the content) the download goes through the store, if one is set. A URL
 * cached under its URL alone is never shared: it would outlive the run in the store. */
int worker_fetch_want_shared(struct worker_fetch *f, const char *url, const char *object,
                             uint64_t size_limit, bool share);

/* One user less of OBJECT: the last one cancels the download (its partial data is deleted).
 * Unknown names are ignored. NULL F is accepted. */
void worker_fetch_release(struct worker_fetch *f, const char *object);

/* Downloads of OBJECT running or waiting (0 or 1), and of all objects, for tests and logs. */
bool worker_fetch_busy(const struct worker_fetch *f, const char *object);
int worker_fetch_count(const struct worker_fetch *f);

/* Cancels every download and frees F; downloads still in the thread pool end there on their
 * own and clean up without calling back. NULL is accepted. */
void worker_fetch_delete(struct worker_fetch *f);

#endif
