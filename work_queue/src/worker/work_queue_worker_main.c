/* work_queue_worker_main.c: the work_queue_worker program: parses the command line
 * (worker_opts), sets up logging and signal handling, and runs the worker (worker_conn) on one
 * libuv loop until it ends with the exit status of doc/work-queue-protocol.md section 1. */
#include <pthread.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <uv.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "rmonitor.h"
#include "worker_conn.h"
#include "worker_ahead.h"
#include "worker_docker.h"
#include "worker_opts.h"
#include "worker_runner.h"

#include "banned.h"

static void on_signal(uv_signal_t *h, int signum)
{
	worker_signal(h->data, signum);
}

/* Raises the soft limit on open descriptors to the hard one: every connection, transfer and
 * task holds some, and the resource monitor keeps the statistics files and cgroup.procs of
 * each pooled cgroup open (up to 64 groups, about 13 each with cgroup v1), which a soft limit of
 * 1,024 does not leave room for beside many concurrent tasks. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			debug(D_WORKER, "open descriptors: limit raised from %llu to %llu",
			      (unsigned long long)old, (unsigned long long)rl.rlim_max);
	}
}

/* Applies -o and -d. Returns 0, or -1 after printing what is wrong. */
static int set_up_debug(const struct worker_opts *o)
{
	if (o->debug_file && debug_config_file(o->debug_file) < 0) {
		fprintf(stderr, "work_queue_worker: cannot open the debug file %s\n",
		        o->debug_file);
		return -1;
	}
	debug_config_file_size(o->debug_rotate_max);
	if (o->debug_flags && debug_flags_set(o->debug_flags) < 0) {
		fprintf(stderr, "work_queue_worker: -d %s: unknown subsystem (valid: %s)\n",
		        o->debug_flags, debug_flags_help());
		return -1;
	}
	return 0;
}

/* --docker and --docker-preserve: Docker must answer and have the image, since running the
 * tasks outside the image the user asked for would be wrong. NULL after printing why. */
static struct worker_docker *set_up_docker(const struct worker_opts *o)
{
	char *why = NULL;
	struct worker_docker *dk = worker_docker_create(o->docker_image, o->docker_preserve, &why);
	if (!dk) {
		if (o->docker_image)
			fprintf(stderr, "work_queue_worker: %s %s: %s\n",
			        o->docker_preserve ? "--docker-preserve" : "--docker",
			        o->docker_image, why);
		else
			fprintf(stderr, "work_queue_worker: --containers: %s\n", why);
		free(why);
	}
	return dk;
}

/* Runs the worker on LOOP until it ends; returns its exit status. Deletes *DK (and sets it to
 * NULL) when its shared container cannot be started. */
static int run(uv_loop_t *loop, const struct worker_opts *o, struct worker_docker **dk)
{
	pid_t parent = getppid();
	char *why = NULL;
	struct worker *w = worker_create(loop, o, &why);
	if (!w) {
		fprintf(stderr, "work_queue_worker: %s\n", why ? why : "cannot start");
		free(why);
		uv_run(loop, UV_RUN_DEFAULT);
		return WORKER_EXIT_LOCAL;
	}
	if (*dk) {
		if (worker_docker_start(*dk, worker_workdir(w), &why) < 0) {
			fprintf(stderr, "work_queue_worker: %s\n", why);
			free(why);
			worker_docker_delete(*dk);
			*dk = NULL;
			worker_delete(w);
			uv_run(loop, UV_RUN_DEFAULT);
			return WORKER_EXIT_LOCAL;
		}
		worker_docker_keep_images(*dk, o->keep_cache);
		worker_docker_set_no_ahead(*dk, o->no_containers_ahead);
		worker_docker_set_engine_cgroups(*dk, o->container_cgroups_engine);
		worker_set_docker(w, *dk);
	}
	uv_signal_t sigterm, sigint;
	uv_signal_init(loop, &sigterm);
	uv_signal_init(loop, &sigint);
	sigterm.data = sigint.data = w;
	uv_signal_start(&sigterm, on_signal, SIGTERM);
	uv_signal_start(&sigint, on_signal, SIGINT);
	/* the signal handles do not keep the loop alive: it ends when the worker does */
	uv_unref((uv_handle_t *)&sigterm);
	uv_unref((uv_handle_t *)&sigint);
	if (o->parent_death) {
		/* the parent's exit sends SIGTERM, which drains; a parent already gone does now */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
			fatal("--parent-death: %s", strerror(errno));
		if (getppid() != parent)
			raise(SIGTERM);
	}

	worker_start(w);
	uv_run(loop, UV_RUN_DEFAULT);
	int status = worker_exit_status(w);

	/* The worker is ending: a SIGTERM or SIGINT from now on would find no handler (libuv puts
	 * back the default action when the handles close) and kill the process before it removes
	 * its shared container and its tasks' cgroups. They are blocked for the rest of the run. */
	sigset_t ending;
	sigemptyset(&ending);
	sigaddset(&ending, SIGTERM);
	sigaddset(&ending, SIGINT);
	pthread_sigmask(SIG_BLOCK, &ending, NULL);
	uv_close((uv_handle_t *)&sigterm, NULL);
	uv_close((uv_handle_t *)&sigint, NULL);
	worker_delete(w);
	if (*dk)
		worker_aheads_stop_all(worker_docker_aheads(*dk)); /* each removes its container */
	uv_run(loop, UV_RUN_DEFAULT);
	return status;
}

int main(int argc, char *argv[])
{
	debug_config_program("work_queue_worker");
	/* the hidden mode that runs one task in a container (worker_runner.h) */
	if (argc > 1 && strcmp(argv[1], "--container-run") == 0)
		return worker_runner_main(argc, argv);
	struct worker_opts o;
	char err[512] = "";
	int r = worker_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0) {
		fprintf(stderr, "work_queue_worker: %s\n", err);
		return WORKER_EXIT_LOCAL;
	}
	if (set_up_debug(&o) < 0) {
		worker_opts_clear(&o);
		return WORKER_EXIT_LOCAL;
	}
	raise_fd_limit();
	struct worker_docker *dk = NULL;
	if ((o.docker_image || o.containers) && !(dk = set_up_docker(&o))) {
		worker_opts_clear(&o);
		return WORKER_EXIT_LOCAL;
	}
	signal(SIGPIPE, SIG_IGN);
	/* cgroups left by the tasks of an earlier worker that was killed with -9 */
	int stale = rmonitor_cleanup_stale(NULL);
	if (stale > 0)
		debug(D_WORKER, "removed %d cgroups left by earlier workers", stale);

	uv_loop_t loop;
	uv_loop_init(&loop);
	rmonitor_prepare_pool(&loop);
	/* The worker's own calls: refused without a trace (doc/seccomp.md, "Daemons"). */
	if (o.seccomp != RMON_SECCOMP_OFF && (r = rmon_seccomp_lockdown(0, 1)) < 0)
		warn("cannot install the worker's seccomp filter: %s", htc_strerror(r));
	int status = run(&loop, &o, &dk);
	uv_loop_close(&loop);
	worker_docker_delete(dk);
	worker_opts_clear(&o);
	debug_close();
	return status;
}
