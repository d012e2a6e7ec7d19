/* makeflow_opts.h: the command line of the makeflow program, parsed into one struct: the
 * engine's options, the workflow and its form, the batch driver's options, and whether to
 * clean instead of run. Parsing never exits, so every option and error text is tested without
 * running a workflow. Option names follow the Makeflow tradition. */
#ifndef MAKEFLOW_OPTS_H
#define MAKEFLOW_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "engine.h"
#include "workflow_load.h"

/* The strings that are not owned point into the ARGV given to the parser (or the
 * environment). */
struct makeflow_opts {
	struct engine_options engine; /* batch_opts and log_path point into this struct;
	                                 self_exe is left to the caller */
	struct workflow_source src;   /* path: the one argument, default "Makeflow" */
	enum engine_clean_mode clean; /* -c, --clean[=MODE]; 0: run the workflow */
	char **batch_opts;            /* "key=value", NULL-terminated; owned */
	size_t n_batch_opts, cap_batch_opts;
	char *log_path; /* -l, or WORKFLOW.makeflowlog; owned */
	char *wq_only;  /* the first Work Queue option given ("-p 9"), owned; NULL if none */
	/* --wrapper, --wrapper-input, --wrapper-output: NULL-terminated arrays (owned) of
	 * strings in ARGV; --archive*: the archive directory (owned) */
	const char **wrap[3];
	size_t n_wrap[3], cap_wrap[3];
	char *archive_dir;
	int archive_bare; /* an --archive* option was given without =DIR */
	char *nc_only;    /* the first -N, -M or -C ("-N foo"): Work Queue options, or where -a
	                     advertises; owned; NULL if none */

	/* CCTools compatibility (makeflow_opts_compat.c) */
	char **words; /* the command line with --argv expanded; owned */
	int n_words;
	char *argv_workflow;         /* MAKEFLOW of an --argv file; owned */
	const char *port_file;       /* -Z, the last one given */
	const char *batch_log;       /* -L, the last one given */
	const char *change_dir;      /* -X: main changes to it once the workflow is read */
	const char *local_port_file; /* -Z without -T wq: written "0" (no master listens) */
	const char *slurm_only;      /* the first Slurm-only option given, which no batch type
	                                here uses yet: main warns; NULL if none */
	int disable_cache;           /* --disable-cache (cache=no for -T wq) */
	const char *k8s_only;        /* the first option for -T k8s given; NULL if none */
	const char *report_path;     /* --report FILE: the HTML run report written at the end */
	const char *mesos_only;      /* --mesos-master given; NULL if not */
};

/* Parses ARGV into O (which it initialises; MAKEFLOW_BATCH_QUEUE_TYPE gives the default batch
 * type), handling -d, -o, -v and -h through cli.h, and checks that the workflow can be read.
 * Returns CLI_DONE (run), CLI_EXIT (help or version printed), CLI_USAGE (getopt printed an
 * unknown option or a missing value on stderr) or HTC_EPARSE with the message in ERR. Only
 * CLI_DONE leaves anything in O to free (with makeflow_opts_clear). */
int makeflow_opts_parse(int argc, char *argv[], struct makeflow_opts *o, char *err, size_t errlen);

/* Prints the warnings the command line deserves that do not stop the run (the Slurm-only
 * options with another batch type) on stderr. */
void makeflow_opts_warn(const struct makeflow_opts *o);

/* Frees what O owns and re-initialises it. */
void makeflow_opts_clear(struct makeflow_opts *o);

/* Writes the usage text, naming the program PROG. */
void makeflow_opts_usage(FILE *out, const char *prog);

#endif
