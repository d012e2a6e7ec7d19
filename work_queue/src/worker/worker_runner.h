/* worker_runner.h: the container runner, work_queue_worker's hidden --container-run mode. The
 * worker starts each task of --docker or --docker-preserve as this runner (worker_docker_argv)
 * under the resource monitor; the runner runs the task in a container and exits with its status
 * (doc/work-queue-docker.md, "The runner"). */
#ifndef HTC_WORKER_RUNNER_H
#define HTC_WORKER_RUNNER_H

/* Runs the task that ARGV describes (ARGV[1] is "--container-run"; worker_runner_opts.h) and
 * returns the process's exit status: the task's, 128 + N after signal N, or
 * WORKER_DOCKER_EXIT_DOCKER / WORKER_DOCKER_EXIT_OOM with a message on stderr. */
int worker_runner_main(int argc, char **argv);

#endif
