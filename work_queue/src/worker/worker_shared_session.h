/* worker_shared_session.h: the worker's side of a shared store during a session
 * (doc/work-queue-protocol.md 5.12): the lock of an object while the master sends it, its
 * publication afterwards (`store_have`), and `cache_take` answered by linking the object from
 * the store into the worker's own cache (`cache_taken`). Disk work runs in the loop's thread
 * pool. */
#ifndef HTC_WORKER_SHARED_SESSION_H
#define HTC_WORKER_SHARED_SESSION_H

#include <stdbool.h>

#include <jansson.h>

struct worker;
struct worker_opts;
struct worker_session;
struct worker_shared;
struct worker_shared_cache;

/* Opens the store of --shared-cache (O->shared_cache, made absolute) with its size limit.
 * Returns NULL with *ERR set (caller frees). Blocking: at start. */
struct worker_shared *worker_shared_open(const struct worker_opts *o, char **err);
/* Frees SH: locks still held are released. Jobs in the thread pool must have ended. NULL ok. */
void worker_shared_delete(struct worker_shared *sh);
/* The store's identity (32 hex). */
const char *worker_shared_id(const struct worker_shared *sh);
/* The store itself (owned by SH), for the URL fetcher (worker_fetch_set_store). */
struct worker_shared_cache *worker_shared_store(const struct worker_shared *sh);

/* The master began sending object NAME (accepted into the cache): its lock is taken when free,
 * so that workers told to take it wait for it. Nothing for a U- object. */
void worker_shared_recv_begin(struct worker *w, const char *name);
/* The transfer of NAME ended (OK: it is in the worker's cache): it is published into the store
 * (in a thread), `store_have` follows on the session that is current then, and the lock is
 * released. Also called for an object the master sends that the cache already holds. */
void worker_shared_recv_end(struct worker *w, const char *name, bool ok);

/* After cache_have: tells the master of session S (with `shared_cache`) what the store
 * already holds, in `store_have` messages of at most 1,000 objects. Blocking (reads the
 * store's directory once). */
void worker_shared_announce(struct worker_session *s);

/* `cache_take` MSG on session S (with `shared_cache` negotiated; a violation otherwise). */
void worker_shared_on_take(struct worker_session *s, json_t *msg);

#endif
