/* makeflow_analyze_opts.h: the command line of makeflow_analyze, parsed into one struct: what
 * to print about the workflow (-k, -i, -I, -O) or where to bundle it (-b) and the workflow with its
 * form. Parsing never exits, so every option and error text is tested on its own. */
#ifndef MAKEFLOW_ANALYZE_OPTS_H
#define MAKEFLOW_ANALYZE_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "workflow_load.h"

struct makeflow_analyze_opts {
	int mode;                   /* 'k' (default), 'i', 'I', 'O' or 'b': the last one given */
	const char *bundle_dir;     /* -b DIR (points into ARGV) */
	struct workflow_source src; /* path: the one argument (points into ARGV), or "Makeflow" */
};

/* Parses ARGV into O (which it initialises), handling -d, -v and -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed), CLI_USAGE (getopt printed an unknown
 * option or a missing value on stderr) or HTC_EPARSE with the message in ERR. Only CLI_DONE
 * leaves anything in O to free (with makeflow_analyze_opts_clear). */
int makeflow_analyze_opts_parse(int argc, char *argv[], struct makeflow_analyze_opts *o, char *err,
                                size_t errlen);

/* Frees what O owns and re-initialises it. */
void makeflow_analyze_opts_clear(struct makeflow_analyze_opts *o);

/* Writes the usage text, naming the program PROG. */
void makeflow_analyze_opts_usage(FILE *out, const char *prog);

#endif
