/* dir_entries.h: the entries of an open directory, read straight with getdents64. A DIR
 * stream (fdopendir) costs an fstat, two fcntl calls, an allocation and a close per directory
 * besides the reads; programs that list small directories by the thousand (a worker emptying
 * and measuring each task's sandbox) spend more on that than on the entries. */
#ifndef HTC_DIR_ENTRIES_H
#define HTC_DIR_ENTRIES_H

/* Called for each entry but "." and ".."; TYPE is the d_type (DT_REG, DT_DIR, DT_UNKNOWN...).
 * Returns 0 to go on; anything else stops the listing and is returned by dir_entries. */
typedef int (*dir_entry_fn)(int dirfd, const char *name, unsigned char type, void *arg);

/* Calls FN for every entry of the directory open as DIRFD, from its start (DIRFD's offset is
 * moved: it is shared with every descriptor dup'd from it). Entries FN removes or adds while
 * the listing runs may or may not be seen, as with readdir. Returns 0, FN's non-zero value, or
 * -errno. */
int dir_entries(int dirfd, dir_entry_fn fn, void *arg);

#endif
