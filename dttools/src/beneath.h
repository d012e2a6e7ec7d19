/* beneath.h: every file-system access beneath a directory fd without following a symbolic link
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a walk with O_NOFOLLOW), and the removal of
 * trees with unwritable directories. Thread-safe and blocking. */
#ifndef HTC_BENEATH_H
#define HTC_BENEATH_H

#include <stdbool.h>
#include <sys/types.h>

/* How a name is resolved beneath a directory fd. AUTO uses openat2 and falls back to the walk
 * when the kernel (or a seccomp filter) refuses it with ENOSYS, EPERM or E2BIG. The walk opens
 * each intermediate component with O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC and the last with
 * O_NOFOLLOW|O_NONBLOCK. All three give the same results. */
enum beneath_resolve {
	BENEATH_RESOLVE_AUTO = 0,
	BENEATH_RESOLVE_OPENAT2,
	BENEATH_RESOLVE_WALK,
};

/* ---- resolution beneath a directory fd (thread-safe, blocking) ------------------------------ */

/* Opens NAME beneath DIRFD without following any symbolic link and without leaving DIRFD.
 * FLAGS are open(2) flags; O_NOFOLLOW and O_CLOEXEC are added, and O_NONBLOCK when O_CREAT is
 * not given (a FIFO does not block). MODE is used with O_CREAT. Before any system call NAME is
 * refused when empty, absolute (-EXDEV), or holding a ".." component (-EXDEV) or an empty or
 * "." component (-EINVAL). Returns an fd, or -errno: -ELOOP when a component is a symbolic
 * link (a magic /proc link too), -ENOENT, -ENOTDIR, -EEXIST (with O_EXCL), ... */
int open_beneath(int dirfd, const char *name, int flags, mode_t mode, enum beneath_resolve how);

/* Makes directory NAME beneath DIRFD and every missing parent (mkdirat, then openat with
 * O_NOFOLLOW|O_DIRECTORY: an existing component that is a link gives -ELOOP). MODE is applied
 * to the directories it creates (before umask). Returns an O_RDONLY|O_DIRECTORY fd of NAME, or
 * -errno. An empty NAME gives a new fd of DIRFD itself. */
int mkdir_beneath(int dirfd, const char *name, mode_t mode);

/* Creates file NAME beneath DIRFD with O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW and mode 0755 when
 * EXEC, else 0644 (exactly: fchmod after creation). Missing parent directories are made with
 * mode 0755. Returns a writable fd, or -errno (-EEXIST if anything is already there). */
int create_beneath(int dirfd, const char *name, bool exec);

/* Renames SRC_NAME (a plain entry of SRC_DIRFD, no slash) to NAME beneath DST_DIRFD, making
 * NAME's missing parents (mode 0755). Never replaces anything (RENAME_NOREPLACE): -EEXIST. */
int rename_beneath(int src_dirfd, const char *src_name, int dst_dirfd, const char *name);

/* Gives owner write and search permission to every directory of the tree open as DIRFD
 * (never following links), so that a tree with 0555 or 0000 directories can be removed by a
 * non-root worker. Returns 0 or the first -errno. */
int tree_make_writable(int dirfd);

/* Removes PATH like path_rm_rf (which never follows links), and when that fails for lack of
 * permission, makes the tree writable and tries again. Returns 0 or -errno. */
int tree_remove(const char *path);

/* Checks NAME before any system call: 0, or -EINVAL (NULL, empty unless ALLOW_EMPTY, an empty
 * or "." component), -EXDEV (absolute, or a ".." component), -ENAMETOOLONG. */
int beneath_check_name(const char *name, bool allow_empty);

/* Splits NAME at its last slash: *PARENT gets a copy of the part before (or "" without a
 * slash; caller frees), and the return value points at the last component in NAME. */
const char *beneath_split_last(const char *name, char **parent);

#endif
