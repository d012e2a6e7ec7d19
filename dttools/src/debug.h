/* debug.h: the one logging facility. Messages belong to named subsystems
 * that are switched on with -d (e.g. "-d all", "-d wq,batch") and written to
 * stderr or to the file given with -o. A disabled debug() call costs one
 * load and one branch: the arguments are not evaluated.
 *
 * The enabled set is process-wide (one logging configuration per program);
 * it is the only global state dttools keeps. */
#ifndef HTC_DEBUG_H
#define HTC_DEBUG_H

#include <stdint.h>

#define D_NOTICE   (UINT64_C(1) << 0)  /* always on: warnings and errors */
#define D_DTTOOLS  (UINT64_C(1) << 1)  /* "dttools" */
#define D_MAKEFLOW (UINT64_C(1) << 2)  /* "makeflow" */
#define D_DAG      (UINT64_C(1) << 3)  /* "dag": parser and DAG */
#define D_LOG      (UINT64_C(1) << 4)  /* "log": transaction log */
#define D_BATCH    (UINT64_C(1) << 5)  /* "batch": drivers */
#define D_WQ       (UINT64_C(1) << 6)  /* "wq": work queue master */
#define D_WORKER   (UINT64_C(1) << 7)  /* "worker" */
#define D_CATALOG  (UINT64_C(1) << 8)  /* "catalog" */
#define D_RMON     (UINT64_C(1) << 9)  /* "rmon": resource monitor */
#define D_NET      (UINT64_C(1) << 10) /* "net": sockets, links */
#define D_JX       (UINT64_C(1) << 11) /* "jx" */
#define D_FACTORY  (UINT64_C(1) << 12) /* "factory" */
#define D_HTTP     (UINT64_C(1) << 13) /* "http": curl-driven drivers */
#define D_ALLOC    (UINT64_C(1) << 14) /* "alloc": category allocation */
#define D_ALL      (~UINT64_C(0))

extern uint64_t debug_enabled_flags;

/* Enables the subsystems in a comma-separated list ("all", "wq,batch";
 * "none" clears). Returns 0, or -EINVAL naming nothing enabled for an
 * unknown name (the valid names are listed by debug_flags_help()). */
int debug_flags_set(const char *list);
/* Comma-separated list of valid subsystem names (static string). */
const char *debug_flags_help(void);
/* Sends output to FILE (appending) instead of stderr; NULL or "-" means
 * stderr. Returns 0 or -errno. */
int debug_config_file(const char *path);
/* Rotation of the -o file (--debug-rotate-max): once it holds BYTES or more it is renamed
 * FILE.old (replacing the one before) and a new FILE is started. 0 (the default) never
 * rotates. Returns 0 or -EINVAL for a negative size. */
int debug_config_file_size(int64_t bytes);
/* Sets the program name shown on each line. */
void debug_config_program(const char *name);
/* Closes a log file opened by debug_config_file. */
void debug_close(void);

void debug_write(uint64_t flags, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define debug(flags, ...)                                                                          \
	do {                                                                                       \
		if (debug_enabled_flags & (flags))                                                 \
			debug_write((flags), __VA_ARGS__);                                         \
	} while (0)

/* Always printed (to the log and, when logging to a file, also stderr). */
void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The C library has a warn() of its own (err.h): in a program that loads ours as a shared
 * library, the dynamic linker would bind the library's calls to that one (the C library comes
 * first in the search order), printing "PROG: MESSAGE: strerror(errno)". So the symbol is
 * htc_warn and warn names it. */
#define warn htc_warn
void htc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For main() only: print the message and exit(1). Library code returns
 * errors instead. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
