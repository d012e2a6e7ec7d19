/* wq_factory_cmd.h: the shell command of every worker work_queue_factory starts: the worker
 * binary with its size, idle timeout, password, the extra options (-E) and the master, inside
 * the --wrapper prefixes (doc/work-queue-factory.md, "The worker command"). */
#ifndef HTC_WQ_FACTORY_CMD_H
#define HTC_WQ_FACTORY_CMD_H

#include <stddef.h>
#include <stdint.h>

/* What the command is made of; every string is the caller's. */
struct wq_factory_cmd {
	const char *binary; /* the worker program */
	const char *host;   /* HOST PORT of the master, or NULL with project */
	int port;
	const char *project;  /* -M PROJECT */
	const char *catalog;  /* -C of the worker with project; NULL: its default */
	const char *password; /* a password file (relative to the current directory), or NULL */
	const char *size;     /* " --cores 2 --memory 4096" or "" */
	int64_t timeout;      /* -t */
	const char *extra;    /* -E: shell text put before the master, as given; NULL: none */
	const char *const *wrappers; /* --wrapper prefixes in the order given; the last given is
	                                the outermost */
	size_t n_wrappers;
	const char *token; /* --feature TOKEN naming this worker's job, or NULL */
};

/* The command (caller frees): "exec BIN SIZE [--feature TOKEN] -t T [-P ABS] [EXTRA] MASTER", or
 * with wrappers "W2 W1 BIN ..." (no exec: a wrapper may be any shell text that takes a command
 * after it). NULL with ERR set when the current directory, needed for a relative password file,
 * cannot be read. */
char *wq_factory_worker_command(const struct wq_factory_cmd *c, char *err, size_t errlen);

#endif
