/* makeflow_viz_opts.h: the command line of makeflow_viz, parsed into one struct: the display
 * format (-D dot, json, svg or png) and the workflow with its form. Parsing never exits, so every
 * option and error text is tested on its own. */
#ifndef MAKEFLOW_VIZ_OPTS_H
#define MAKEFLOW_VIZ_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "workflow_load.h"

struct makeflow_viz_opts {
	const char *display;        /* "dot", "json", "svg" or "png" (points into ARGV) */
	struct workflow_source src; /* path: the one argument (points into ARGV), or "Makeflow" */
};

/* Parses ARGV into O (which it initialises), handling -v and -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed), CLI_USAGE (getopt printed an unknown
 * option or a missing value on stderr), HTC_EUNSUP when -D is missing or names an unknown
 * format (the message in ERR, which the program prints without "error:"), or HTC_EPARSE with
 * the message in ERR. Only CLI_DONE leaves anything in O to free (with
 * makeflow_viz_opts_clear). */
int makeflow_viz_opts_parse(int argc, char *argv[], struct makeflow_viz_opts *o, char *err,
                            size_t errlen);

/* Frees what O owns and re-initialises it. */
void makeflow_viz_opts_clear(struct makeflow_viz_opts *o);

/* Writes the usage text, naming the program PROG. */
void makeflow_viz_opts_usage(FILE *out, const char *prog);

#endif
