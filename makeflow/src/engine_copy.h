/* engine_copy.h: copies of files and directory trees for the archive and the mounts
 * (engine_archive.c, engine_mounts.c), and the atomic placement of a copy under its final
 * name. Internal to the makeflow engine. */
#ifndef MAKEFLOW_ENGINE_COPY_H
#define MAKEFLOW_ENGINE_COPY_H

/* Copies SRC (a regular file, a directory tree or a symbolic link, which is followed at the
 * top and copied as a link below it) to DST, which must not exist. File modes are kept;
 * with SYNC each file is flushed to disk. Returns 0 or -errno (DST may then be partly
 * written: the caller removes it). */
int engine_copy(const char *src, const char *dst, int sync);

/* Copies SRC to a temporary name beside DST, then renames it over DST (a directory at DST is
 * removed first), so DST is never seen half written. Returns 0 or -errno. */
int engine_copy_replace(const char *src, const char *dst);

#endif
