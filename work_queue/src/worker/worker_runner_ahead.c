/* worker_runner_ahead.c: the runner's --ahead mode (see worker_runner_ahead.h). */
#include "worker_runner_ahead.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "path.h"
#include "timeutil.h"
#include "worker_docker.h"
#include "worker_runner_agent.h"
#include "xalloc.h"

#include "banned.h"

static double now_s(void)
{
	return (double)time_monotonic_us() / 1e6;
}

/* Removes what the agent left in DIR, then DIR. */
static void remove_dir(const char *dir)
{
	char *sock = path_join(dir, RUNNER_AHEAD_SOCKET);
	unlink(sock);
	free(sock);
	if (rmdir(dir) < 0 && errno != ENOENT)
		debug(D_WORKER, "cannot remove %s: %s", dir, strerror(errno));
}

int runner_ahead_bind_to_worker(void)
{
	pid_t parent = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent || parent == 1)
		return -ESRCH;
	return 0;
}

int runner_ahead(struct docker_api *api, const struct worker_runner_opts *o, const char *image,
                 json_t *hc, json_t *rec, char **err)
{
	*err = NULL;
	char *agent = runner_agent_program();
	if (!agent) {
		json_decref(hc);
		*err = xstrdup("htc_container_agent is not installed beside the worker");
		return -ENOENT;
	}
	char *state = path_dirname(o->ahead); /* the worker's state directory, made at first use */
	if (mkdir(state, 0700) < 0 && errno != EEXIST)
		debug(D_WORKER, "cannot make %s: %s", state, strerror(errno));
	free(state);
	if (mkdir(o->ahead, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		*err = xasprintf("cannot make %s: %s", o->ahead, strerror(e));
		json_decref(hc);
		free(agent);
		return -e;
	}
	json_t *binds = json_object_get(hc, "Binds");
	json_array_append_new(binds, json_sprintf("%s:%s", o->ahead, o->ahead));
	json_array_append_new(binds, json_sprintf("%s:%s:ro", agent, RUNNER_AGENT_IN_CONTAINER));
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) < 0)
		snprintf(host, sizeof host, "localhost");
	char *user = worker_docker_user();
	/* labelled with this process: a runner killed with -9 leaves a container that any worker
	 * of the host removes (its pid is gone) */
	json_t *cfg = json_pack("{s:s,s:[s,s,s,s],s:s,s:s,s:o,s:o}", "Image", image, "Cmd",
	                        RUNNER_AGENT_IN_CONTAINER, "--once", o->ahead, RUNNER_AHEAD_SOCKET,
	                        "WorkingDir", o->workdir, "User", user, "Labels",
	                        worker_docker_labels(host), "HostConfig", hc);
	free(user);
	free(agent);
	char *id = NULL;
	double t0 = now_s();
	int r = docker_api_create_container(api, NULL, cfg, &id, err);
	json_decref(cfg);
	if (r < 0) {
		remove_dir(o->ahead);
		return r;
	}
	json_object_set_new(rec, "create_s", json_real(now_s() - t0));
	json_object_set_new(rec, "mode", json_string("task"));
	json_object_set_new(rec, "made_ahead", json_true());
	worker_container_record_write(o->workdir, RUNNER_AHEAD_RECORD, rec);
	/* starts it and waits for its end: the agent's one task done, or a stop (SIGTERM from the
	 * worker: the task will not come), which kills it */
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int status = -1;
	t0 = now_s();
	r = docker_api_run(api, id, false, devnull >= 0 ? devnull : STDERR_FILENO, STDERR_FILENO,
	                   &runner_agent_stop, &status, err);
	if (devnull >= 0)
		close(devnull);
	debug(D_WORKER, "container %.12s made ahead: ended after %.2f s (status %d)", id,
	      now_s() - t0, status);
	char *e2 = NULL;
	if (docker_api_remove(api, id, &e2) < 0) {
		warn("%s", e2);
		free(e2);
	}
	remove_dir(o->ahead);
	free(id);
	return r;
}
