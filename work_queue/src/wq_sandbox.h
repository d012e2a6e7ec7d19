/* wq_sandbox.h: the worker's task sandboxes (doc/work-queue-protocol.md section 6):
 * WORKDIR/tasks/<id>.<try>/{work,tmp}, and every file-system access beneath a directory fd that
 * never follows a symbolic link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a walk with
 * O_NOFOLLOW). Inputs are written, cache objects placed and outputs checked through these. */
#ifndef HTC_WQ_SANDBOX_H
#define HTC_WQ_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How a name is resolved beneath a directory fd. AUTO uses openat2 and falls back to the walk
 * when the kernel (or a seccomp filter) refuses it with ENOSYS, EPERM or E2BIG. The walk opens
 * each intermediate component with O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC and the last with
 * O_NOFOLLOW|O_NONBLOCK. All three give the same results. */
enum wq_resolve {
	WQ_RESOLVE_AUTO = 0,
	WQ_RESOLVE_OPENAT2,
	WQ_RESOLVE_WALK,
};

/* ---- resolution beneath a directory fd (thread-safe, blocking) ------------------------------ */

/* Opens NAME beneath DIRFD without following any symbolic link and without leaving DIRFD.
 * FLAGS are open(2) flags; O_NOFOLLOW and O_CLOEXEC are added, and O_NONBLOCK when O_CREAT is
 * not given (a FIFO does not block). MODE is used with O_CREAT. Before any system call NAME is
 * refused when empty, absolute (-EXDEV), or holding a ".." component (-EXDEV) or an empty or
 * "." component (-EINVAL). Returns an fd, or -errno: -ELOOP when a component is a symbolic
 * link (a magic /proc link too), -ENOENT, -ENOTDIR, -EEXIST (with O_EXCL), ... */
int wq_open_beneath(int dirfd, const char *name, int flags, mode_t mode, enum wq_resolve how);

/* Makes directory NAME beneath DIRFD and every missing parent (mkdirat, then openat with
 * O_NOFOLLOW|O_DIRECTORY: an existing component that is a link gives -ELOOP). MODE is applied
 * to the directories it creates (before umask). Returns an O_RDONLY|O_DIRECTORY fd of NAME, or
 * -errno. An empty NAME gives a new fd of DIRFD itself. */
int wq_mkdir_beneath(int dirfd, const char *name, mode_t mode);

/* Creates file NAME beneath DIRFD with O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW and mode 0755 when
 * EXEC, else 0644 (exactly: fchmod after creation). Missing parent directories are made with
 * mode 0755. Returns a writable fd, or -errno (-EEXIST if anything is already there). */
int wq_create_beneath(int dirfd, const char *name, bool exec);

/* Writes LEN bytes at BUF to FD, all of them (retrying short writes and EINTR). Returns 0,
 * -ENOSPC for a full file system or quota (ENOSPC, EDQUOT, EFBIG), or another -errno. */
int wq_write_all(int fd, const void *buf, size_t len);

/* Renames SRC_NAME (a plain entry of SRC_DIRFD, no slash) to NAME beneath DST_DIRFD, making
 * NAME's missing parents (mode 0755). Never replaces anything (RENAME_NOREPLACE): -EEXIST. */
int wq_rename_beneath(int src_dirfd, const char *src_name, int dst_dirfd, const char *name);

/* Gives owner write and search permission to every directory of the tree open as DIRFD
 * (never following links), so that a tree with 0555 or 0000 directories can be removed by a
 * non-root worker. Returns 0 or the first -errno. */
int wq_tree_make_writable(int dirfd);

/* Removes PATH like path_rm_rf (which never follows links), and when that fails for lack of
 * permission, makes the tree writable and tries again. Returns 0 or -errno. */
int wq_remove_tree(const char *path);

/* ---- task sandboxes --------------------------------------------------------------------- */

/* A sandbox. It only holds fds and paths; every function below touches the disk and nothing
 * else, so a sandbox may be used from one libuv worker thread at a time. */
struct wq_sandbox;

/* Creates WORKDIR/tasks/<ID>.<TRY> (mode 0700; an old one of the same name is removed first),
 * reusing a recycled sandbox of WORKDIR when there is one (see wq_sandbox_recycle), with a
 * `work` directory (0755: the task's cwd) and a private `tmp` directory (0700: its
 * TMPDIR). WORKDIR_FD is the worker's open workdir and WORKDIR its absolute path. HOW is used
 * for every later resolution. Returns NULL with errno set on failure (nothing is left on
 * disk). Free with wq_sandbox_delete. */
struct wq_sandbox *wq_sandbox_create(int workdir_fd, const char *workdir, uint64_t id,
                                     unsigned try_, enum wq_resolve how);
/* Closes the fds and frees SB, leaving the files (see wq_sandbox_remove); NULL is accepted. */
void wq_sandbox_delete(struct wq_sandbox *sb);
/* Removes the sandbox directory and everything in it, never following a link. Returns 0 or
 * -errno. SB stays valid (for wq_sandbox_delete). */
int wq_sandbox_remove(struct wq_sandbox *sb);

/* Empties SB for reuse and keeps it in a per-process pool (at most 64) from which a later
 * wq_sandbox_create of the same WORKDIR takes it: everything in work and tmp is removed, and
 * everything else in the sandbox but a `stdout` that is still a plain file with one link
 * (truncated to 0 bytes); work, tmp and the sandbox get their modes back. The directory waits
 * as WORKDIR/tasks/.free.<N>. When it cannot be emptied (or the pool is full) it is removed as
 * by wq_sandbox_remove. Returns 0 or -errno. SB stays valid (for wq_sandbox_delete). */
int wq_sandbox_recycle(struct wq_sandbox *sb);
/* The same for a sandbox expected to be small, cheap enough for the caller's thread: at most
 * MAX_ENTRIES entries are removed and none is a directory. 0 (pooled); -EAGAIN when it held more
 * (what was removed stays removed: finish with wq_sandbox_recycle); other -errno as
 * wq_sandbox_recycle's, but SB is then left in place (wq_sandbox_recycle removes it). */
int wq_sandbox_recycle_small(struct wq_sandbox *sb, int max_entries);
/* Forgets the pooled sandboxes of WORKDIR (NULL: of every workdir) without touching the disk:
 * for a worker about to remove its workdir. */
void wq_sandbox_pool_forget(const char *workdir);
/* Absolute paths (owned by SB) and fds (owned by SB) of the sandbox, its work and tmp. */
const char *wq_sandbox_path(const struct wq_sandbox *sb);
const char *wq_sandbox_work_path(const struct wq_sandbox *sb);
const char *wq_sandbox_tmp_path(const struct wq_sandbox *sb);
int wq_sandbox_work_fd(const struct wq_sandbox *sb);
int wq_sandbox_fd(const struct wq_sandbox *sb);

/* Per-task inputs (section 5.4): a file is received as `.in.<XFER>` in the sandbox directory
 * (not in work), then moved to NAME beneath work. tmp_open creates the file (mode 0755 when
 * EXEC, else 0644) and returns a writable fd; tmp_mkdir creates a directory `.in.<XFER>` for a
 * directory transfer and returns its fd (members are made with wq_mkdir_beneath and
 * wq_create_beneath on it); tmp_commit renames it to NAME beneath work (-EEXIST if NAME is
 * taken); tmp_discard removes it (a missing one is fine). All return -errno on failure. */
int wq_sandbox_tmp_open(struct wq_sandbox *sb, uint64_t xfer, bool exec);
int wq_sandbox_tmp_mkdir(struct wq_sandbox *sb, uint64_t xfer);
int wq_sandbox_tmp_commit(struct wq_sandbox *sb, uint64_t xfer, const char *name);
int wq_sandbox_tmp_discard(struct wq_sandbox *sb, uint64_t xfer);

/* Places the cache FILE object OBJECT (an entry of CACHE_DIRFD) at NAME beneath work with
 * linkat, or copies it (mode 0555) when linkat fails with EXDEV. A dropped object stays
 * readable through the sandbox's hard link. Returns 0 or -errno (-EEXIST if NAME is taken). */
int wq_sandbox_link_file(struct wq_sandbox *sb, int cache_dirfd, const char *object,
                         const char *name);
/* Places the cache DIRECTORY object at NAME beneath work as a symbolic link, created by the
 * worker, to CACHE_PATH/OBJECT (CACHE_PATH absolute). Returns 0 or -errno. */
int wq_sandbox_link_dir(struct wq_sandbox *sb, const char *cache_path, const char *object,
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
int wq_sandbox_check_output(struct wq_sandbox *sb, const char *name, bool want_dir, int *fd_out,
                            char **missing);
/* The same check beneath any directory fd. */
int wq_check_output_beneath(int dirfd, const char *name, bool want_dir, enum wq_resolve how,
                            int *fd_out, char **missing);

#endif
