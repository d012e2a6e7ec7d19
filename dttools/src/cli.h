/* cli.h: the command-line options every program of the project shares (-d, -o, -v, -h) and
 * getopt's two error returns, handled in one place so that each program words them the same
 * way. A program calls cli_common_option from the default branch of its getopt_long switch;
 * its optstring must start with "+:" (or ":") so that getopt reports errors as ':' and '?'. */
#ifndef HTC_CLI_H
#define HTC_CLI_H

#include <stddef.h>
#include <stdio.h>

/* The getopt_long rows of the options cli_common_option handles, for every program's table:
 * --debug (-d), --debug-file (-o), --version (-v), --help (-h). */
/* clang-format off */
#define CLI_LONG_OPTIONS                                                                           \
	{"debug", required_argument, 0, 'd'},                                                      \
	{"debug-file", required_argument, 0, 'o'},                                                 \
	{"version", no_argument, 0, 'v'},                                                          \
	{"help", no_argument, 0, 'h'}
/* clang-format on */

/* What the caller does next. */
enum cli_result {
	CLI_DONE = 0,  /* handled (-d, -o): go on parsing */
	CLI_EXIT = 1,  /* help or version printed: exit 0 */
	CLI_FAIL = 2,  /* ERR holds a one-line message: exit with an error */
	CLI_USAGE = 3, /* getopt printed what is wrong itself (a parser that leaves opterr at 1):
	                * print the usage on stderr and exit with an error */
};

/* Each program parses its command line in a module PROG_opts.c into a struct, with
 * PROG_opts_parse(argc, argv, &opts, err, errlen). It never exits: it returns CLI_DONE to run
 * the program, CLI_EXIT once help or the version has been printed (exit 0), CLI_USAGE as
 * above, or HTC_EPARSE with a one-line message in ERR that main prints before it exits. */

/* Handles C, a getopt_long return, with getopt's optarg, optind and optopt:
 *   'd'  debug subsystems (debug_flags_set); an unknown name fails, listing the valid ones;
 *   'o'  debug output file (debug_config_file);
 *   'v'  prints "PROG VERSION";
 *   'h'  calls USAGE(stdout, argv[0]);
 *   ':'  "option X needs a value (see --help)";
 *   anything else: "unknown option X (see --help)". */
int cli_common_option(int c, char *const argv[], const char *prog,
                      void (*usage)(FILE *out, const char *argv0), char *err, size_t errlen);

/* Writes the message FMT into ERR (at most ERRLEN bytes) and returns HTC_EPARSE: the one
 * failure of an option parser. */
int cli_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
