/* work_queue_factory_opts.h: the command line of work_queue_factory, parsed into one struct:
 * which master or project to serve, the worker limits and size, and the batch system. Parsing
 * never exits, so every option and error text is tested without starting a worker
 * (doc/work-queue-factory.md lists the options). */
#ifndef HTC_WORK_QUEUE_FACTORY_OPTS_H
#define HTC_WORK_QUEUE_FACTORY_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scaler.h"
#include "wq_factory.h"

/* The strings that are not owned point into the ARGV given to the parser. */
struct catalog_project;

struct work_queue_factory_opts {
	const char *type;                   /* -T, default "local" */
	const char *host;                   /* HOST of HOST PORT; NULL with -M */
	int port;                           /* PORT */
	const char *port_arg;               /* PORT as given */
	const char *project;                /* -M: a regular expression over whole project names */
	struct catalog_project *project_re; /* -M compiled (catalog_project.h); owned */
	const char *catalog;                /* -C; NULL: the default catalogs */
	const char *password;               /* -P */
	const char *binary;    /* --worker-binary; NULL: beside this program, else from PATH */
	const char *k8s_image; /* --k8s-image (-T k8s): the worker is mounted into it */
	const char *k8s_worker_image; /* --k8s-worker-image (-T k8s): it holds the worker */
	struct wq_factory_limits limits;
	int64_t timeout; /* -t, seconds the workers stay idle (default 300) */
	double period;   /* --period, seconds (default 5) */
	char *size;      /* the workers' size options as given, e.g. " --cores 2 --memory 4096";
	                    owned, "" when none */
	const char *mesos_master; /* --mesos-master HOST:PORT (-T mesos); NULL: none */
	const char **batch_opts;  /* --batch-option KEY=VALUE; the array is owned */
	size_t n_batch_opts, cap_batch_opts;
	const char *extra; /* -E, --extra-options: shell text added to each worker's options
	                      (the last given wins, as in CCTools); NULL: none */
	const char **env;  /* --env NAME=VALUE for each worker's environment, NULL-terminated
	                      (NULL when none); the array is owned */
	size_t n_env, cap_env;
	const char **wrappers; /* --wrapper PREFIX, in the order given; the array is owned */
	size_t n_wrappers, cap_wrappers;
	double memory_mb, disk_mb;   /* --memory, --disk of each worker; -1 when not given */
	const char *scaler;          /* --scaler: hta (default), queue, hpa:TARGET[:WINDOW] */
	const char *scaler_hook;     /* --scaler-hook CMD, or NULL */
	double hook_timeout;         /* --scaler-hook-timeout, seconds (default 10) */
	const char *modelled_load;   /* --modelled-load FILE, or NULL */
	const char *pool_record;     /* --pool-record FILE; NULL: wq_factory_sweep_default_path() */
	const char **wrapper_inputs; /* --wrapper-input FILE: input files of each worker job,
	                                NULL-terminated (NULL when none); the array is owned */
	size_t n_wrapper_inputs, cap_wrapper_inputs;
};

/* Parses ARGV into O (which it initialises), handling -d, -o, -v and -h through cli.h. Returns
 * CLI_DONE (run), CLI_EXIT (help or version printed) or HTC_EPARSE with the message in ERR.
 * Only CLI_DONE leaves anything in O to free (with work_queue_factory_opts_clear). */
int work_queue_factory_opts_parse(int argc, char *argv[], struct work_queue_factory_opts *o,
                                  char *err, size_t errlen);

/* Frees what O owns and re-initialises it. */
void work_queue_factory_opts_clear(struct work_queue_factory_opts *o);

/* Writes the usage text, naming the program PROG. */
void work_queue_factory_opts_usage(FILE *out, const char *prog);

#endif
