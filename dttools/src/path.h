/* path.h: lexical path manipulation (basename, dirname, join, normalize) and
 * a few filesystem helpers (mkdir -p, rm -rf, existence, size). The lexical
 * functions never touch the filesystem; path_escapes_root is what sandboxes
 * use to refuse names that would leave their directory. */
#ifndef HTC_PATH_H
#define HTC_PATH_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The last component of P with POSIX basename semantics: trailing slashes are
 * ignored, "/" gives "/", "" gives ".", "a/" gives "a", "/a/b/" gives "b".
 * Caller frees. */
char *path_basename(const char *p);

/* Everything before the last component of P with POSIX dirname semantics:
 * "/" gives "/", "a" and "a/" give ".", "/a" gives "/", "/a/b/" gives "/a",
 * "" gives ".". Caller frees. */
char *path_dirname(const char *p);

/* A joined with B by exactly one '/' (slashes at the end of A and the start
 * of B are merged). B is always treated as relative to A, so joining with an
 * absolute B never discards A. An empty A gives a copy of B and an empty B a
 * copy of A. Caller frees. */
char *path_join(const char *a, const char *b);

/* True if P starts with '/'. */
bool path_is_absolute(const char *p);

/* Lexical normalization: repeated slashes collapse, "." components vanish,
 * and ".." removes the preceding component, without looking at the
 * filesystem (symlinks are not resolved). A trailing slash is dropped. An
 * absolute path stays absolute and ".." at the root stays at the root; a
 * relative path keeps the ".." components that cannot be resolved at its
 * start ("../a"). An empty result is ".". If ESCAPES is not NULL it is set to
 * true when some ".." climbed above the start of P (above the root for an
 * absolute P), false otherwise. Caller frees. */
char *path_normalize(const char *p, bool *escapes);

/* True if P must not be used as a name inside a sandbox: P is absolute, or
 * its lexical normalization climbs above its start ("..", "a/../../b").
 * Paths that go down and come back ("a/../b") are fine. The empty path is
 * not an escape. */
bool path_escapes_root(const char *p);

/* Creates directory P and any missing parents with MODE (before umask).
 * Existing directories are fine. Returns 0, or -errno (-ENOTDIR or -EEXIST
 * if a component exists and is not a directory). */
int path_mkdir_p(const char *p, mode_t mode);

/* Removes P and, if it is a directory, everything below it. Symbolic links
 * are removed, never followed, so nothing outside P is touched. A missing P
 * is success. Returns 0 or the first -errno met (removal of the rest is still
 * attempted). */
int path_rm_rf(const char *p);

/* True if something exists at P (a dangling symbolic link counts: lstat). */
bool path_exists(const char *p);

/* The size in bytes of the file at P (following symbolic links), or -errno. */
int64_t path_file_size(const char *p);

/* The program NAME: in the directory of the executable BESIDE (when not NULL), else in $PATH.
 * An executable path (caller frees), or NULL. */
char *path_find_program(const char *beside, const char *name);

/* A directory stream over DFD, which it then owns; when none can be made DFD is closed and
 * NULL returned with -errno in *ERR. */
DIR *path_fdopendir(int dfd, int *err);
/* A stream over directory NAME relative to DIRFD ("." for DIRFD itself, which stays open and
 * keeps its own offset), or NULL with -errno in *ERR. */
DIR *path_opendir_at(int dirfd, const char *name, int *err);

#endif
