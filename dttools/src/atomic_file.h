/* atomic_file.h: crash-safe replacement of a whole file. Readers see either
 * the old content or the new content, never a mix, and after a successful
 * return the new content survives a power loss. Used for state files such as
 * checkpoints and catalogs. */
#ifndef HTC_ATOMIC_FILE_H
#define HTC_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Replaces the file PATH with the LEN bytes at DATA. The data is written to a
 * new temporary file in the same directory (".NAME.tmp.XXXXXX"), which gets
 * permission bits MODE exactly (the umask does not apply) and is fsynced,
 * then renamed over PATH, and finally the directory is fsynced.
 *
 * Returns 0, or -errno. On any failure before the rename the temporary file
 * is removed and PATH keeps its old content (or stays absent). If only the
 * final directory fsync fails, PATH already has the new content but its
 * durability is not guaranteed; that -errno is returned too. */
int atomic_file_write(const char *path, const void *data, size_t len, mode_t mode);

/* Flushes the directory DIR itself (its entries: creations, renames,
 * removals) to stable storage. Returns 0 or -errno. */
int fsync_dir(const char *dir);

#endif
