/* makeflow_monitor_opts.h: the command line of makeflow_monitor, parsed into one struct: the
 * interval between two looks at the logs (-t), sorting by progress (-S), hiding finished
 * workflows (-H), a single look (--once) and the logs to watch. Parsing never exits, so every
 * option and error text is tested on its own. */
#ifndef MAKEFLOW_MONITOR_OPTS_H
#define MAKEFLOW_MONITOR_OPTS_H

#include <stddef.h>
#include <stdio.h>

/* The interval is at least this long, and at most a day. */
#define MAKEFLOW_MONITOR_MIN_INTERVAL 0.01

struct makeflow_monitor_opts {
	double interval;   /* seconds between two looks (-t), default 1 */
	int sort;          /* -S: show the logs in order of progress, least first */
	int hide_finished; /* -H: stop showing a workflow once it ended; exit when all did */
	int once;          /* --once: show each log once, as it is now, and exit */
	char **logs;       /* the transaction logs (point into ARGV) */
	int nlogs;
};

/* Parses ARGV into O (which it initialises), handling -d -o -v -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed), CLI_USAGE (getopt printed an unknown
 * option or a missing value on stderr; no log given), or HTC_EPARSE with the message in ERR. */
int makeflow_monitor_opts_parse(int argc, char *argv[], struct makeflow_monitor_opts *o, char *err,
                                size_t errlen);

/* Writes the usage text, naming the program PROG. */
void makeflow_monitor_opts_usage(FILE *out, const char *prog);

#endif
