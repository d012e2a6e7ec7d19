/* worker_runner_opts.h: the arguments of the container runner, the hidden mode of
 * work_queue_worker that runs one task in a container (worker_runner.h): the worker builds them
 * (worker_docker_argv), this parses them back into one struct. Parsing never exits, so every
 * argument and error text is tested without Docker (doc/work-queue-docker.md). */
#ifndef HTC_WORKER_RUNNER_OPTS_H
#define HTC_WORKER_RUNNER_OPTS_H

#include <stdbool.h>
#include <stddef.h>

/* The strings that are not owned point into the ARGV given to the parser. */
struct worker_runner_opts {
	const char *socket;  /* --socket; NULL: DOCKER_HOST or the default socket */
	const char *image;   /* --image, required */
	const char *shared;  /* --shared ID: exec in this container instead of a new one */
	const char *agent;   /* --agent NAME: with --shared, the container's agent listens on the
	                      * socket NAME in --state (worker_runner_agent.h) */
	bool shared_image;   /* --shared-image: exec in the worker's container of the image, made
	                      * at first use (named after --owner and the image) */
	const char *load;    /* --load ARCHIVE: a `docker save` archive to load first, once */
	const char *key;     /* --key KEY: names the archive's loaded image in --state */
	const char *state;   /* --state DIR: the worker's records of loaded images, and locks */
	const char *owner;   /* --owner PID: the worker, whose containers these are */
	bool nest;           /* --nest: the container's cgroup under the task's memory group */
	const char *ahead;   /* --ahead DIR: make the task's own container ahead of the task, its
	                      * agent listening in DIR, and wait until it ends (worker_runner.h) */
	const char *workdir; /* --workdir, required */
	char **binds;        /* "DIR:DIR" (--bind) and "DIR:DIR:ro" (--bind-ro), in order; owned */
	size_t n_binds;
	char *const *cmd; /* the words after --, NULL-terminated (at least one) */
	int n_cmd;
};

/* Parses ARGV, whose ARGV[1] is "--container-run", into O (which it initialises): the
 * arguments up to "--", then the command. Returns 0, or HTC_EPARSE with the message in ERR
 * (the runner prints it after "work_queue_worker --container-run: " and exits with status
 * WORKER_DOCKER_EXIT_DOCKER). Only 0 leaves anything in O to free (with
 * worker_runner_opts_clear). */
int worker_runner_opts_parse(int argc, char *argv[], struct worker_runner_opts *o, char *err,
                             size_t errlen);

/* Frees what O owns and re-initialises it. */
void worker_runner_opts_clear(struct worker_runner_opts *o);

#endif
