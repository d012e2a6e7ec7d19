/* worker_shared_cache.h: the store that workers on one file system share (`--shared-cache DIR`,
 * doc/work-queue-shared-cache.md): its identity, one OFD lock per object, objects published
 * from a worker's cache by a hard link (or a checked copy), taken back the same way, stale
 * temporaries swept, and unused objects trimmed to a size limit. */
#ifndef HTC_WORKER_SHARED_CACHE_H
#define HTC_WORKER_SHARED_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#define WORKER_SHARED_CACHE_ID_LEN 32 /* hex digits of a store's identity */

/* THREADING: after worker_shared_cache_open returns, the struct is only read (its fds, paths
 * and id never change) and its temporary counter is atomic, so every function below except
 * open and close may run in any thread, several at once. */
struct worker_shared_cache;

/* The lease timeout on NFS when none is given (seconds). */
#define WORKER_SHARED_CACHE_LEASE_S 30.0

/* Opens the store in DIR, creating DIR, its directories and its identity when missing (the
 * identity under an OFD lock of DIR/.lock, so that two workers starting together agree), and
 * sweeps stale temporaries. LIMIT is the size cap in bytes (0: none). With LEASE_TIMEOUT_S > 0,
 * and on NFS (with WORKER_SHARED_CACHE_LEASE_S when 0), objects are locked with lease files
 * in DIR/leases (worker_shared_lease.h) instead of OFD locks. Returns NULL with *WHY set
 * (caller frees) on failure. Blocking: call it at start. */
struct worker_shared_cache *worker_shared_cache_open(const char *dir, uint64_t limit,
                                                     double lease_timeout_s, char **why);
/* The lease timeout in force, or 0 with OFD locks. */
double worker_shared_cache_lease_timeout(const struct worker_shared_cache *s);
/* Closes S (the store stays). NULL is ok. */
void worker_shared_cache_close(struct worker_shared_cache *s);

/* The store's identity (32 lowercase hex), its directory, and an fd of DIR/objects (owned by
 * S). */
const char *worker_shared_cache_id(const struct worker_shared_cache *s);
const char *worker_shared_cache_dir(const struct worker_shared_cache *s);
int worker_shared_cache_objects_fd(const struct worker_shared_cache *s);

/* Takes the write lock of object NAME (an OFD lock of DIR/locks/NAME, or the lease
 * DIR/leases/NAME). With WAIT it blocks until the lock is free (a thread, never the loop);
 * without, a lock held elsewhere gives -EAGAIN. Returns the fd that holds the lock (give it to
 * worker_shared_cache_unlock) or -errno. The kernel releases an OFD lock when the fd is closed
 * or the process dies; a lease of a dead process is broken after its timeout. */
int worker_shared_cache_lock(const struct worker_shared_cache *s, const char *name, bool wait);
/* Releases a lock from worker_shared_cache_lock (closes FD). A negative FD is ignored. */
void worker_shared_cache_unlock(const struct worker_shared_cache *s, int fd);

/* Puts object NAME (an F- or U- file object), complete and checked in directory SRC_DIRFD,
 * into the store: one linkat(2), or across file systems a copy into DIR/.partial (locked while
 * written), hashed, checked against NAME when it is an F- name (a U- name is not a content
 * hash) and renamed into place. A D- object (a directory tree) is made in DIR/.partial (under
 * its writer's flock) from hard links of its files, or from copies checked against NAME
 * across file systems, its directories made read-only, and renamed into place. Returns 1 when
 * added, 0 when the store already had it, or -errno (HTC_ECORRUPT: the copy does not match
 * NAME). Then trims the store to its limit. Blocking (a copy may be long): a thread. */
int worker_shared_cache_publish(struct worker_shared_cache *s, int src_dirfd, const char *name);

/* Waits for object NAME: takes its lock (blocking: a writer of the store holds it while it
 * receives the object) and looks for it. Returns the lock's fd (>= 0, the object is there with
 * SIZE bytes, and stays while the lock is held) or -ENOENT (not in the store), -EFBIG (there
 * with another size) or another -errno, the lock then released. For a D- object only its
 * presence as a directory is checked here; its size, by worker_shared_cache_take_dir. Blocking:
 * a thread. */
int worker_shared_cache_await(const struct worker_shared_cache *s, const char *name, uint64_t size);

struct wq_listing;
/* With the lock of D- object NAME held (worker_shared_cache_await): walks the store's tree,
 * hashing every file, and fills the empty directory DST_DIRFD with it: directories made (mode
 * 0700), files hard-linked, or copied across file systems. *OUT gets the hashed listing
 * (caller deletes), for the caller to check against NAME (worker_cache_partial_finish_dir).
 * Returns 0, -EFBIG when its files do not add up to SIZE bytes, or -errno. Blocking: a
 * thread. */
int worker_shared_cache_take_dir(const struct worker_shared_cache *s, const char *name,
                                 uint64_t size, int dst_dirfd, struct wq_listing **out);

/* Deletes the temporaries of DIR/.partial that no process holds a lock on (their writer died).
 * Returns how many were deleted, or -errno. */
int worker_shared_cache_sweep(const struct worker_shared_cache *s);

/* The users of object NAME: its link count less the store's own link (each worker's cache and
 * each sandbox that links it on this file system); for a D- object, the largest of its files'.
 * -errno when it is not there. */
int worker_shared_cache_users(const struct worker_shared_cache *s, const char *name);

/* Deletes objects nobody uses (link count 1, lock free), the one whose links changed least
 * recently first, until the store holds at most LIMIT bytes. Returns how many were deleted or
 * -errno. */
int worker_shared_cache_trim(const struct worker_shared_cache *s, uint64_t limit);

/* Calls CB once per object of the store (name, bytes), in no order; stops at CB's first
 * negative return. Returns 0, that value, or -errno. */
int worker_shared_cache_foreach(const struct worker_shared_cache *s,
                                int (*cb)(const char *name, uint64_t size, void *arg), void *arg);

/* Objects in the store and their bytes. Returns 0 or -errno. */
int worker_shared_cache_stat(const struct worker_shared_cache *s, uint64_t *count, uint64_t *bytes);

#endif
