/* resource_monitor_opts.h: the command line of the resource_monitor program, parsed into one
 * struct: the limits, the outputs, the fields added to the summary, and what to run (a command,
 * a --sh text or a --pid to attach to). Parsing never exits, so every option and error text is
 * tested without running anything (doc/resource-monitor.md lists the options). */
#ifndef HTC_RESOURCE_MONITOR_OPTS_H
#define HTC_RESOURCE_MONITOR_OPTS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "rmonitor.h"
#include "rmsummary.h"

/* Most bytes read from a --limits-file. */
#define RESOURCE_MONITOR_LIMITS_FILE_MAX (1 << 20)

/* The strings that are not owned point into the ARGV given to the parser. */
struct resource_monitor_opts {
	struct rmsummary limits; /* -L and -l, later ones overriding earlier ones */
	int have_limits;
	int measure_only;
	double interval;      /* -i, seconds (default 1) */
	const char *template; /* -O; NULL: resource-pid-PID */
	int time_series;
	int report_files;
	char **extra_keys; /* -V KEY: VALUE, owned; the values as JSON text */
	char **extra_values;
	size_t n_extra, cap_extra; /* extra_values has cap_extra elements too */
	const char **measure_dirs; /* --measure-dir, NULL-terminated (the array is owned) */
	size_t n_measure_dirs, cap_measure_dirs;
	int pprint; /* 0 with --no-pprint */
	int compact;
	pid_t attach_pid; /* --pid; 0: run a command */
	enum rmonitor_cgroups cgroups;
	const char *cpuset;
	int seccomp; /* --seccomp: enum rmon_seccomp_profile, 0 (off) by default */
	const char *category;
	const char *task_id;
	const char *sh;
	/* What to run: the words after the options (or /bin/sh -c SH), NULL-terminated, with
	 * n_args the number of words after the options; NULL with --pid. The array is owned. */
	const char **cmd;
	int n_args;
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h. -l reads
 * its file and --measure-dir checks its directory here. Returns CLI_DONE (run), CLI_EXIT (help
 * or version printed) or HTC_EPARSE with the message in ERR (the program prints it after
 * "resource_monitor: " and exits with status 4). Only CLI_DONE leaves anything in O to free
 * (with resource_monitor_opts_clear). */
int resource_monitor_opts_parse(int argc, char *argv[], struct resource_monitor_opts *o, char *err,
                                size_t errlen);

/* Frees what O owns and re-initialises it. */
void resource_monitor_opts_clear(struct resource_monitor_opts *o);

/* Writes the usage text, naming the program PROG. */
void resource_monitor_opts_usage(FILE *out, const char *prog);

#endif
