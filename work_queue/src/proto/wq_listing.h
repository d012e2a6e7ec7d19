/* wq_listing.h: the listing of a directory tree as the Work Queue protocol defines it
 * (doc/work-queue-protocol.md section 5.5): one line per entry, sorted by path with strcmp,
 * "d PATH\n" or "f X SIZE SHA256 PATH\n", whose SHA-256 is the name of a D- object and the
 * `listing` of dir_end. A listing is built either by walking a directory fd without following
 * any symbolic link, or entry by entry from what a directory transfer announced. */
#ifndef HTC_WQ_LISTING_H
#define HTC_WQ_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

/* Limits of one directory (section 2.4 and 6): entries, components per path, path bytes. */
#define WQ_LISTING_MAX_ENTRIES 100000
#define WQ_LISTING_MAX_DEPTH   64
#define WQ_LISTING_MAX_PATH    1024

/* One entry. PATH is relative to the listed directory (no leading "./"). For a directory only
 * PATH and is_dir are meaningful. Owned by the listing. */
struct wq_listing_entry {
	const char *path;
	bool is_dir;
	bool exec;
	uint64_t size;
	char sha256[SHA256_HEX_SIZE];
};

struct wq_listing;

/* Walk flags. */
#define WQ_LISTING_NO_HASH      0x1 /* do not read files: sizes only (no text, no hash) */
#define WQ_LISTING_FOLLOW_LINKS 0x2 /* master side: follow links; a cycle is HTC_ECYCLE */

/* An empty listing. Never NULL. Free with wq_listing_delete. */
struct wq_listing *wq_listing_create(void);
/* Frees L; NULL is accepted. */
void wq_listing_delete(struct wq_listing *l);

/* Adds a directory or a file, in the order of a directory transfer: PATH's parent must be the
 * root or a directory added earlier. Returns 0; HTC_EPARSE for a path that is empty, absolute,
 * has an empty, "." or ".." component, a control character, or is over WQ_LISTING_MAX_PATH
 * bytes / WQ_LISTING_MAX_DEPTH components; HTC_EDUP for a path added twice; HTC_EUNDEF when
 * the parent is not a directory of the listing; HTC_ELIMIT past WQ_LISTING_MAX_ENTRIES; for a
 * file, HTC_EPARSE when SHA256HEX is not 64 lowercase hex digits. L is unchanged on error. */
int wq_listing_add_dir(struct wq_listing *l, const char *path);
int wq_listing_add_file(struct wq_listing *l, const char *path, bool exec, uint64_t size,
                        const char *sha256hex);

/* Number of entries, and the sum of file sizes. */
size_t wq_listing_count(const struct wq_listing *l);
uint64_t wq_listing_bytes(const struct wq_listing *l);
/* True if PATH is a directory of the listing ("" is the root). */
bool wq_listing_has_dir(const struct wq_listing *l, const char *path);

/* Entry I (0 .. count-1) in sorted order: parents always come before their children. The
 * pointer is valid until L is modified or deleted. */
const struct wq_listing_entry *wq_listing_get(struct wq_listing *l, size_t i);

/* The listing text (caller frees; *LEN gets its length if LEN is not NULL) or its SHA-256 in
 * OUT_HEX. Both return NULL / -EINVAL for a listing walked with WQ_LISTING_NO_HASH. The hash
 * is streamed line by line; the text of 100,000 entries can be ~10 MB. */
char *wq_listing_text(struct wq_listing *l, size_t *len);
int wq_listing_hash(struct wq_listing *l, char out_hex[SHA256_HEX_SIZE]);

/* Walks the directory open as DIRFD (not closed; its offset is not used) and builds its
 * listing in *OUT (caller deletes). Every directory is opened with O_NOFOLLOW and read with
 * fdopendir; every file is opened with O_NOFOLLOW | O_NONBLOCK and hashed in chunks. Returns 0,
 * or an error with *WHY set to a text (caller frees) naming LABEL/PATH (LABEL may be NULL):
 *   -ELOOP   "is a symbolic link: PATH" (only without WQ_LISTING_FOLLOW_LINKS)
 *   -EINVAL  "is not a regular file: PATH" (FIFO, socket, device)
 *   HTC_EPARSE "name with a control character: PATH" (a name the protocol cannot carry)
 *   HTC_ELIMIT "more than 100000 entries: PATH", "deeper than 64 levels: PATH",
 *              "path longer than 1024 bytes: PATH"
 *   HTC_ECYCLE "directory cycle: PATH" (WQ_LISTING_FOLLOW_LINKS only)
 *   -errno   "PATH: strerror"
 * *OUT is NULL on error. Blocking: meant for a worker thread; touches no shared state. */
int wq_listing_walk(int dirfd, const char *label, int flags, struct wq_listing **out, char **why);

/* Hashes everything from the start of FD to its end with SHA-256 in 64 KiB chunks (pread, so
 * the offset is not used) and gives its size. Returns 0 or -errno. */
int wq_listing_hash_fd(int fd, char out_hex[SHA256_HEX_SIZE], uint64_t *size);

#endif
