/* worker_cache.h: the worker's content-addressed cache in WORKDIR/cache (doc/work-queue-protocol.md
 * section 5.5): objects received into `.partial/`, verified against their name and renamed into
 * place read-only, an in-memory index of complete objects with sizes and keep classes, drops,
 * the master_id rule for `run` objects, a rescan at start, and free-space accounting (5.2). */
#ifndef HTC_WORKER_CACHE_H
#define HTC_WORKER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "wq_listing.h"
#include "wq_xfer.h"

#define WORKER_CACHE_NAME_LEN   66             /* "F-" + 64 hex */
#define WORKER_CACHE_HAVE_BATCH 1000           /* objects per cache_have message */
#define WQ_DISK_RESERVE_MIN     (100ULL << 20) /* bytes: the reserve is max(100 MB, 1 %); MB = 2^20 */

enum worker_cache_keep {
	WORKER_CACHE_KEEP_RUN = 0, /* deleted when the worker serves another master_id */
	WORKER_CACHE_KEEP_WORKER,  /* kept until the worker exits */
};

/* True if NAME matches ^[FDU]-[0-9a-f]{64}$. */
bool worker_cache_name_valid(const char *name);

/* The cache and its index.
 *
 * THREADING: a struct worker_cache (everything taking `struct worker_cache *`) belongs to the libuv
 * loop thread and must only be used there. The functions taking a `struct worker_cache_partial *`
 * and marked "thread-safe" touch only that partial and the disk: call them from a uv_queue_work
 * callback, one thread per partial at a time. */
struct worker_cache;
struct worker_cache_partial;

/* Opens (creating when needed) WORKDIR/cache with its `.partial` and `.trash` directories.
 * WORKDIR must be absolute. The index is empty until worker_cache_scan. Returns NULL with errno
 * set. Blocking (a few mkdir calls): call it at start. */
struct worker_cache *worker_cache_create(const char *workdir);
/* Closes and frees C (the files stay). Partials still open must have been ended. NULL is ok. */
void worker_cache_delete(struct worker_cache *c);

/* Absolute path of the cache directory, and an fd of it (both owned by C, never change: the
 * fd may be passed to worker threads, e.g. for worker_sandbox_link_file). */
const char *worker_cache_path(const struct worker_cache *c);
int worker_cache_fd(const struct worker_cache *c);

/* Rebuilds the index from the disk: empties `.partial` and `.trash`, deletes anything whose name is
 * not a cache name, F-/U- entries that are not regular files, D- entries that are not
 * directories or hold a link or special file, and, when VERIFY, every F- or D- object whose
 * content does not match its name (slow: reads everything). Keep classes come from the
 * `.keep/` markers. Returns the number of objects deleted (>= 0) or -errno. Blocking. */
int worker_cache_scan(struct worker_cache *c, bool verify);

/* Applies the master_id rule: if the `.master_id` file does not hold MASTER_ID, every complete
 * `run` object is deleted and MASTER_ID is written (atomic_file_write). Call it before sending
 * cache_have. Returns the number of objects deleted or -errno. Blocking (unlinks). */
int worker_cache_set_master(struct worker_cache *c, const char *master_id);

/* ---- index ------------------------------------------------------------------------------ */

struct worker_cache_item {
	char name[WORKER_CACHE_NAME_LEN + 1];
	uint64_t size;
	enum worker_cache_keep keep;
};

/* True if NAME is complete (not being received, not dropped). *SIZE gets its size if not
 * NULL. */
bool worker_cache_has(const struct worker_cache *c, const char *name, uint64_t *size);
/* Number of complete objects, their bytes, and the bytes reserved by partials being received. */
size_t worker_cache_count(const struct worker_cache *c);
uint64_t worker_cache_bytes(const struct worker_cache *c);
uint64_t worker_cache_reserved(const struct worker_cache *c);

/* Calls CB once per batch of at most WORKER_CACHE_HAVE_BATCH complete objects (the cache_have
 * messages), with LAST true on the final one; an empty cache gives one call with N == 0 and
 * LAST true. CB must not modify C. Returns 0 or the first negative value CB returned. */
typedef int (*worker_cache_batch_fn)(const struct worker_cache_item *items, size_t n, bool last,
                                     void *arg);
int worker_cache_foreach_batch(const struct worker_cache *c, worker_cache_batch_fn cb, void *arg);

/* Sandbox use of an object: a task that links NAME takes a reference and releases it when its
 * sandbox is removed. Only directory objects need it (a file object lives on through the
 * sandbox's hard link); a dropped directory object is deleted at its last release. ref returns
 * 0 or -ENOENT when NAME is not complete. */
int worker_cache_ref(struct worker_cache *c, const char *name);
void worker_cache_unref(struct worker_cache *c, const char *name);

/* cache_drop of one NAME: a file object is unlinked now (sandbox hard links keep the data); a
 * directory object is renamed into `.trash/` now, or at its last unref; a partial being
 * received is discarded when it ends. Unknown names are ignored. Returns 0 or -errno (the
 * object has left the index in any case). Call worker_cache_empty_trash afterwards, in a thread. */
int worker_cache_drop(struct worker_cache *c, const char *name);
/* Removes everything in `.trash/`. Thread-safe (disk only). Returns 0 or -errno. */
int worker_cache_empty_trash(int cache_fd, const char *cache_path);

/* ---- receiving an object ------------------------------------------------------------------ */

/* xfer_begin of an object: refuses an invalid NAME (HTC_EPARSE), an object present or being
 * received (HTC_EDUP: xfer_error `have`), and otherwise creates `.partial/<XFER>` (a file, or a
 * directory when NAME is a D- object) and reserves SIZE bytes. *OUT gets the partial. Returns
 * 0 or -errno. Loop thread. */
int worker_cache_begin(struct worker_cache *c, const char *name, enum worker_cache_keep keep,
                       uint64_t xfer, uint64_t size, struct worker_cache_partial **out);

/* Thread-safe: appends LEN bytes of a file object and hashes them. Returns 0; -ENOSPC when the
 * file system is full (the partial file is then already deleted); HTC_ETOOBIG when more than the
 * declared size arrives; another -errno for a write error. */
int worker_cache_partial_write(struct worker_cache_partial *p, const void *data, size_t len);

/* Thread-safe: appends LEN bytes of a file object like worker_cache_partial_write, but without
 * hashing them: the caller hashes exactly the bytes it stores (for instance in another thread,
 * while this write runs) and ends with worker_cache_partial_finish_hashed(). Same returns. */
int worker_cache_partial_store(struct worker_cache_partial *p, const void *data, size_t len);

/* Thread-safe: the directory fd of a D- partial (owned by the partial), in which members are
 * created with mkdir_beneath / create_beneath, or -1 for a file object. */
int worker_cache_partial_dirfd(const struct worker_cache_partial *p);

/* Thread-safe: xfer_end of a file object. Checks that the declared size arrived, that the
 * content hash equals SHA256HEX and, for an F- object, the name; then sets mode 0555 and renames
 * the file into place. Returns 0; HTC_ECORRUPT (xfer_error `corrupt`) or -errno, with the
 * partial deleted. */
int worker_cache_partial_finish(struct worker_cache_partial *p, const char *sha256hex);
/* Thread-safe: the same for a file filled with worker_cache_partial_store: HEX is the caller's
 * SHA-256 of the bytes it stored, SHA256HEX the one announced. Calling worker_cache_partial_finish
 * on such a partial (or this one on a hashed partial) fails with -EINVAL, partial deleted. */
int worker_cache_partial_finish_hashed(struct worker_cache_partial *p, const char *hex,
                                       const char *sha256hex);

/* Thread-safe: dir_end of a D- object. LISTING holds the entries received (built with
 * wq_listing_add_*), ENTRIES the count announced and LISTING_HEX the hash announced. Checks the
 * count, the listing hash against LISTING_HEX and the name, sets file modes 0555 or 0444 from
 * the listing and directories 0555, and renames the directory into place. Returns 0,
 * HTC_ECORRUPT or -errno (the partial is deleted on error). */
int worker_cache_partial_finish_dir(struct worker_cache_partial *p, struct wq_listing *listing,
                                    uint64_t entries, const char *listing_hex);

/* Thread-safe: completes a file object with a hard link of SRC_NAME in directory SRC_DIRFD (a
 * shared store's copy, already checked) instead of received bytes: the link is made under the
 * object's final name, and the partial's empty temporary file is removed. Returns 0, -EXDEV
 * (another file system: the partial is kept, to be filled with worker_cache_partial_write),
 * or another -errno (the partial deleted). */
int worker_cache_partial_link(struct worker_cache_partial *p, int src_dirfd, const char *src_name);

/* Thread-safe: deletes the partial's temporary file or directory (abort, error). */
int worker_cache_partial_abort(struct worker_cache_partial *p);

/* Loop thread: ends the transfer and frees P. COMMITTED is true when finish returned 0: the
 * object enters the index (unless dropped meanwhile, then it is deleted). Otherwise the
 * temporary data is removed if still there and the reservation released. Returns 0 or -errno. */
int worker_cache_end(struct worker_cache *c, struct worker_cache_partial *p, bool committed);

/* ---- free space (section 5.2 capacity) ---------------------------------------------------- */

struct wq_disk_info {
	uint64_t fs_total; /* bytes of the file system */
	uint64_t fs_avail; /* bytes available to the worker (f_bavail) */
	uint64_t reserve;  /* max(100 MB, 1 % of fs_total) */
	uint64_t usable;   /* fs_avail - reserve, or 0 */
	bool disk_full;    /* fs_avail < reserve */
};

/* Fills INFO from statvfs(PATH). Returns 0 or -errno. Blocking (one system call). */
int wq_disk_info(const char *path, struct wq_disk_info *info);
/* The reserve for a file system of TOTAL bytes. */
uint64_t wq_disk_reserve(uint64_t total);
/* capacity.disk_free in MB: min(usable, disk_total - cache - sandboxes), >= 0. */
int64_t wq_disk_free_mb(const struct wq_disk_info *info, uint64_t disk_total_bytes,
                        uint64_t cache_bytes, uint64_t sandbox_bytes);

/* The sink through which the transfer receiver fills a partial (its object is the struct
 * worker_cache_partial that worker_cache_begin gave): store, finish_hashed, dirfd, finish_dir and
 * abort above. The owner still calls worker_cache_end at recv_end. */
extern const struct wq_xfer_sink_ops worker_cache_sink_ops;

#endif
