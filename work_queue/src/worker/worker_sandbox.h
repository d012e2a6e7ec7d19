/* worker_sandbox.h: the worker's task sandboxes (doc/work-queue-protocol.md section 6):
 * WORKDIR/tasks/<id>.<try>/{work,tmp}. Every access inside one goes through beneath.h, which
 * never follows a symbolic link; inputs are written, cache objects placed and outputs checked
 * through these. */
#ifndef HTC_WORKER_SANDBOX_H
#define HTC_WORKER_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "beneath.h"

/* ---- task sandboxes --------------------------------------------------------------------- */

/* A sandbox. It only holds fds and paths; every function below touches the disk and nothing
 * else, so a sandbox may be used from one libuv worker thread at a time. */
struct worker_sandbox;

/* Creates WORKDIR/tasks/<ID>.<TRY> (mode 0700; an old one of the same name is removed first),
 * reusing a recycled sandbox of WORKDIR when there is one (see worker_sandbox_recycle), with a
 * `work` directory (0755: the task's cwd) and a private `tmp` directory (0700: its
 * TMPDIR). WORKDIR_FD is the worker's open workdir and WORKDIR its absolute path. HOW is used
 * for every later resolution. Returns NULL with errno set on failure (nothing is left on
 * disk). Free with worker_sandbox_delete. */
struct worker_sandbox *worker_sandbox_create(int workdir_fd, const char *workdir, uint64_t id,
                                             unsigned try_, enum beneath_resolve how);
/* Closes the fds and frees SB, leaving the files (see worker_sandbox_remove); NULL is accepted. */
void worker_sandbox_delete(struct worker_sandbox *sb);
/* Removes the sandbox directory and everything in it, never following a link. Returns 0 or
 * -errno. SB stays valid (for worker_sandbox_delete). */
int worker_sandbox_remove(struct worker_sandbox *sb);

/* Empties SB for reuse and keeps it in a per-process pool (at most 64) from which a later
 * worker_sandbox_create of the same WORKDIR takes it: everything in work and tmp is removed, and
 * everything else in the sandbox but a `stdout` that is still a plain file with one link
 * (truncated to 0 bytes); work, tmp and the sandbox get their modes back. The directory waits
 * as WORKDIR/tasks/.free.<N>. When it cannot be emptied (or the pool is full) it is removed as
 * by worker_sandbox_remove. Returns 0 or -errno. SB stays valid (for worker_sandbox_delete). */
int worker_sandbox_recycle(struct worker_sandbox *sb);
/* The same for a sandbox expected to be small, cheap enough for the caller's thread: at most
 * MAX_ENTRIES entries are removed and none is a directory. 0 (pooled); -EAGAIN when it held more
 * (what was removed stays removed: finish with worker_sandbox_recycle); other -errno as
 * worker_sandbox_recycle's, but SB is then left in place (worker_sandbox_recycle removes it). */
int worker_sandbox_recycle_small(struct worker_sandbox *sb, int max_entries);
/* Forgets the pooled sandboxes of WORKDIR (NULL: of every workdir) without touching the disk:
 * for a worker about to remove its workdir. */
void worker_sandbox_pool_forget(const char *workdir);
/* Absolute paths (owned by SB) and fds (owned by SB) of the sandbox, its work and tmp. */
const char *worker_sandbox_path(const struct worker_sandbox *sb);
const char *worker_sandbox_work_path(const struct worker_sandbox *sb);
const char *worker_sandbox_tmp_path(const struct worker_sandbox *sb);
int worker_sandbox_work_fd(const struct worker_sandbox *sb);
int worker_sandbox_fd(const struct worker_sandbox *sb);

/* Per-task inputs (section 5.4): a file is received as `.in.<XFER>` in the sandbox directory
 * (not in work), then moved to NAME beneath work. tmp_open creates the file (mode 0755 when
 * EXEC, else 0644) and returns a writable fd; tmp_mkdir creates a directory `.in.<XFER>` for a
 * directory transfer and returns its fd (members are made with mkdir_beneath and
 * create_beneath on it); tmp_commit renames it to NAME beneath work (-EEXIST if NAME is
 * taken); tmp_discard removes it (a missing one is fine). All return -errno on failure. */
int worker_sandbox_tmp_open(struct worker_sandbox *sb, uint64_t xfer, bool exec);
int worker_sandbox_tmp_mkdir(struct worker_sandbox *sb, uint64_t xfer);
int worker_sandbox_tmp_commit(struct worker_sandbox *sb, uint64_t xfer, const char *name);
int worker_sandbox_tmp_discard(struct worker_sandbox *sb, uint64_t xfer);

/* Places the cache FILE object OBJECT (an entry of CACHE_DIRFD) at NAME beneath work with
 * linkat, or copies it (mode 0555) when linkat fails with EXDEV. A dropped object stays
 * readable through the sandbox's hard link. Returns 0 or -errno (-EEXIST if NAME is taken). */
int worker_sandbox_link_file(struct worker_sandbox *sb, int cache_dirfd, const char *object,
                             const char *name);
/* Places the cache DIRECTORY object OBJECT (an entry of CACHE_DIRFD) at NAME beneath work as a
 * tree of its own: its directories made (0755: the task may add to them), its files linked
 * with linkat, or copied (0555 or 0444) when the cache is on another file system. A task sees
 * a directory like any other (`find NAME`, `cp -r NAME` enter it); a dropped object stays
 * readable through the links. Returns 0 or -errno (-EEXIST if NAME is taken). */
int worker_sandbox_link_dir(struct worker_sandbox *sb, int cache_dirfd, const char *object,
                            const char *name);

/* Checks output NAME beneath work. A regular file (a directory when WANT_DIR) gives 0 and
 * *FD_OUT an O_RDONLY fd of it (caller closes; FD_OUT may be NULL). Otherwise returns a
 * negative code and sets *MISSING (caller frees) to the text of the missing output:
 *   "is a symbolic link: NAME"     (-ELOOP; for a directory, "is a symbolic link: NAME/member")
 *   "is not a regular file: NAME"  (-EINVAL: FIFO, socket, device, or a directory as a file)
 *   "is not a directory: NAME"     (-ENOTDIR: a file where a directory output was expected)
 *   "does not exist: NAME"         (-ENOENT, also when a parent is not a directory)
 *   "cannot open: NAME: strerror"  (any other -errno)
 * A directory is also walked (wq_listing_walk, no hashing), so a link, FIFO or other special
 * file anywhere inside, or a tree over the limits, is reported here. */
int worker_sandbox_check_output(struct worker_sandbox *sb, const char *name, bool want_dir,
                                int *fd_out, char **missing);
/* The same check beneath any directory fd. */
int worker_sandbox_check_beneath(int dirfd, const char *name, bool want_dir,
                                 enum beneath_resolve how, int *fd_out, char **missing);

#endif
