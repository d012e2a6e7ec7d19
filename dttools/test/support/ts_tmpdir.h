/* ts_tmpdir.h: the temporary directory of a test, and small file helpers: a fresh directory
 * under $TMPDIR (or /tmp) made at set-up and removed with everything in it at teardown, so that
 * tests never share files and leave nothing behind. Failures fail the running cmocka test. */
#ifndef HTC_TS_TMPDIR_H
#define HTC_TS_TMPDIR_H

#include <stddef.h>

/* Makes a new empty directory $TMPDIR/NAME.XXXXXX (/tmp when TMPDIR is unset or empty), mode
 * 0700, and returns its absolute path (caller frees with ts_tmpdir_remove). */
char *ts_tmpdir_create(const char *name);
/* The same under PARENT (for a test that needs a given file system, e.g. /dev/shm). */
char *ts_tmpdir_create_in(const char *parent, const char *name);

/* Removes DIR and everything beneath it (links are removed, never followed; read-only
 * directories are made writable first) and frees DIR. NULL is accepted. Fails the test when
 * something is left. */
void ts_tmpdir_remove(char *dir);

/* Writes TEXT into PATH (created or truncated, mode 0644). */
void ts_write_file(const char *path, const char *text);

/* The content of PATH as a NUL-terminated string (caller frees), *LEN its length when LEN is not
 * NULL; NULL when PATH cannot be opened. At most 1 MiB is read. */
char *ts_read_file(const char *path, size_t *len);

#endif
