/* cli.h: the command-line options every program of the project shares (-d, -o, -v, -h) and
 * getopt's two error returns, handled in one place so that each program words them the same
 * way. A program calls cli_common_option from the default branch of its getopt_long switch;
 * its optstring must start with "+:" (or ":") so that getopt reports errors as ':' and '?'. */
#ifndef HTC_CLI_H
#define HTC_CLI_H

#include <stddef.h>
#include <stdio.h>

/* What the caller does next. */
enum cli_result {
	CLI_DONE = 0, /* handled (-d, -o): go on parsing */
	CLI_EXIT = 1, /* help or version printed: exit 0 */
	CLI_FAIL = 2, /* ERR holds a one-line message: exit with an error */
};

/* Handles C, a getopt_long return, with getopt's optarg, optind and optopt:
 *   'd'  debug subsystems (debug_flags_set); an unknown name fails, listing the valid ones;
 *   'o'  debug output file (debug_config_file);
 *   'v'  prints "PROG VERSION";
 *   'h'  calls USAGE(stdout, argv[0]);
 *   ':'  "option X needs a value (see --help)";
 *   anything else: "unknown option X (see --help)". */
int cli_common_option(int c, char *const argv[], const char *prog,
                      void (*usage)(FILE *out, const char *argv0), char *err, size_t errlen);

#endif
