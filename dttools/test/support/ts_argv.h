/* ts_argv.h: builds a program's argument vector from a test's NULL-terminated list of words, for
 * the tests of the option parsers (PROG_opts_parse takes argc and argv as main does). */
#ifndef HTC_TS_ARGV_H
#define HTC_TS_ARGV_H

#include <stdarg.h>

/* Fills ARGV (CAP entries) with PROG, then the words of AP up to its NULL, then NULL; returns
 * argc. More words than fit fail the test. */
int ts_argv(char **argv, int cap, const char *prog, va_list ap);

#endif
