/* worker_runner.c: the container runner (see worker_runner.h): it creates a container for the
 * task (or an exec in the shared one), copies its output to its own, forwards SIGTERM and
 * SIGINT by killing the container, and exits with the task's status. */
#include "worker_runner.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atomic_file.h"
#include "debug.h"
#include "docker_api.h"
#include "stringtools.h"
#include "timeutil.h"
#include "worker_ctr_memory.h"
#include "worker_docker.h"
#include "worker_runner_agent.h"
#include "worker_runner_ahead.h"
#include "worker_runner_image.h"
#include "worker_runner_opts.h"
#include "worker_task.h"
#include "xalloc.h"

#include "banned.h"

extern char **environ;

#define PIDS_LIMIT 4096

/* Prints MSG as the runner's error and returns the exit status that says Docker failed. */
static int fail(const char *msg)
{
	fprintf(stderr, "work_queue_worker --container-run: %s\n", msg);
	return WORKER_DOCKER_EXIT_DOCKER;
}

/* The runner's memory cgroup (from /proc/self/cgroup), or NULL at the root. Caller frees. */
static char *own_memory_cgroup(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return NULL;
	char line[4096];
	char *out = NULL;
	while (fgets(line, sizeof line, f)) {
		char *a = strchr(line, ':');
		char *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = 0;
		if (strcmp(a + 1, "memory") != 0)
			continue;
		char *p = str_trim(b + 1);
		if (strcmp(p, "/") != 0 && *p == '/')
			out = xstrdup(p);
		break;
	}
	fclose(f);
	return out;
}

/* With cgroup v1, Docker's cgroupfs driver makes the container's group at CG (our task's
 * memory group) in every hierarchy, and removes only the container's own group with it. Where
 * the task's group is elsewhere (a hierarchy in which this process sits at another path), CG
 * itself is left behind, empty: removed here. The memory group, which holds this runner, and
 * any group still in use are refused by the kernel and stay. Groups of a runner killed before
 * this are found later by the monitor's stale cleanup (doc/resource-monitor.md). */
static void remove_mirrored_groups(const char *cg)
{
	DIR *d = opendir("/sys/fs/cgroup");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char *dir = xasprintf("/sys/fs/cgroup/%s%s", de->d_name, cg);
		if (rmdir(dir) == 0)
			debug(D_WORKER, "removed %s, left by the container", dir);
		free(dir);
	}
	closedir(d);
}

static double env_number(const char *name)
{
	const char *s = getenv(name);
	double v;
	if (!s || str_to_double(s, &v) < 0)
		return 0;
	return v;
}

/* After a failed call: when the engine no longer answers, *ERR says so (naming its socket and
 * what the call met) and REC gets engine_lost and that text, so that the worker reports the
 * failure as its own (the task is retried) rather than the task's. */
static void engine_check(struct docker_api *api, char **err, json_t *rec)
{
	char *e = NULL;
	if (docker_api_ping(api, &e) == 0)
		return;
	char *text = xasprintf("the container engine at %s stopped answering (%s; then %s)",
	                       docker_api_socket(api), *err ? *err : "-", e ? e : "-");
	free(e);
	free(*err);
	*err = text;
	json_object_set_new(rec, "engine_lost", json_true());
	json_object_set_new(rec, "engine_error", json_string(text));
}

/* The task as an exec in the shared container. Takes CMD and ENV. */
static int run_shared(struct docker_api *api, const struct worker_runner_opts *o,
                      const char *shared, json_t *cmd, json_t *env, const char *user, int *status,
                      char **err)
{
	json_t *cfg = json_pack("{s:b,s:b,s:o,s:o,s:s,s:s}", "AttachStdout", 1, "AttachStderr", 1,
	                        "Cmd", cmd, "Env", env, "WorkingDir", o->workdir, "User", user);
	int r = docker_api_exec(api, shared, cfg, STDOUT_FILENO, STDERR_FILENO, &runner_agent_stop,
	                        status, err);
	json_decref(cfg);
	return r;
}

static double now_s(void);

/* How long a runner waits for the agent of a shared container it just started to listen. */
#define AGENT_WAIT_S 10

/* What a task the agent ran adds to the record REC (it started at T0). */
static void agent_record(json_t *rec, double t0)
{
	json_object_set_new(rec, "mode", json_string("shared"));
	json_object_set_new(rec, "agent", json_true());
	json_object_set_new(rec, "run_s", json_real(now_s() - t0));
}

/* A task of the worker's shared container of IMAGE (--shared-image): handed to the container's
 * agent when there is one (*RAN, *STATUS); else *SHARED gets the container's id, for an exec. */
static int run_shared_image(struct docker_api *api, const struct worker_runner_opts *o,
                            const char *image, int *status, char **err, json_t *rec, char **shared,
                            bool *ran)
{
	char *agent = runner_agent_program();
	char *name = runner_image_shared_name(o->owner, image);
	char *sock = runner_agent_socket_name(name);
	double t0 = now_s();
	int r = -ECONNREFUSED;
	if (agent)
		r = runner_agent_run(o->state, sock, o->workdir, o->cmd, 0, &runner_agent_stop,
		                     status, err);
	/* No agent answers: the container is made (or found) and its agent waited for. One found
	 * running whose agent never answers (its socket went with the worker's state, say) is
	 * replaced once, removed by its id, so that a container another runner has just made in
	 * its place is never removed. Without an agent, an exec in *SHARED. */
	for (int attempt = 0; r == -ECONNREFUSED; attempt++) {
		free(*shared);
		*shared = NULL;
		r = runner_image_shared(api, o, image, agent, &runner_agent_stop, shared, err, rec);
		if (r < 0 || !agent)
			break;
		t0 = now_s();
		r = runner_agent_run(o->state, sock, o->workdir, o->cmd, AGENT_WAIT_S,
		                     &runner_agent_stop, status, err);
		if (r != -ECONNREFUSED)
			break;
		if (attempt > 0 || json_object_get(rec, "shared_start_s") || runner_agent_stop) {
			debug(D_WORKER, "shared container %s: no agent answers; an exec", name);
			r = 0;
			break;
		}
		warn("shared container %s: its agent does not answer; replacing it", name);
		char *e2 = NULL;
		if (docker_api_remove(api, *shared, &e2) < 0)
			debug(D_WORKER, "%s", e2);
		free(e2);
	}
	*ran = r == 0 && *status >= 0; /* else an error, or an exec in *SHARED */
	if (*ran)
		agent_record(rec, t0);
	free(sock);
	free(name);
	free(agent);
	return r;
}

/* The HostConfig of the task's own container: its binds, MEMORY and CORES of its environment,
 * and the cgroup CG to nest in (NULL: Docker's default). WAIT: at its memory limit it waits
 * (the OOM killer off in its group, cgroup v1) for the worker to raise it. */
static json_t *host_config(const struct worker_runner_opts *o, double mem_mb, const char *cg,
                           bool wait)
{
	json_t *binds = json_array();
	for (size_t i = 0; i < o->n_binds; i++)
		json_array_append_new(binds, json_string(o->binds[i]));
	json_t *hc = json_pack("{s:o,s:b,s:I}", "Binds", binds, "AutoRemove", 0, "PidsLimit",
	                       (json_int_t)PIDS_LIMIT);
	if (mem_mb >= 6) {
		json_int_t bytes = (json_int_t)(mem_mb * 1024 * 1024);
		json_object_set_new(hc, "Memory", json_integer(bytes));
		json_object_set_new(hc, "MemorySwap", json_integer(bytes));
		if (wait)
			json_object_set_new(hc, "OomKillDisable", json_true());
	}
	double cores = env_number("CORES");
	if (cores > 0)
		json_object_set_new(hc, "NanoCpus", json_integer((json_int_t)(cores * 1e9)));
	if (cg)
		json_object_set_new(hc, "CgroupParent", json_string(cg));
	return hc;
}

/* The task in a container of its own, removed at the end; status WORKER_DOCKER_EXIT_OOM when
 * Docker says memory killed it. Takes CMD and ENV. */
static double now_s(void)
{
	return (double)time_monotonic_us() / 1e6;
}

static int run_own(struct docker_api *api, const struct worker_runner_opts *o, const char *image,
                   json_t *cmd, json_t *env, const char *user, int *status, char **err, json_t *rec)
{
	double mem_mb = env_number("MEMORY");
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) < 0)
		snprintf(host, sizeof host, "localhost");
	char *cg = o->nest ? own_memory_cgroup() : NULL;
	/* a task the worker may grow: nested in its cgroup, whose limit the worker raises, the
	 * container's own limit is the most it may grow to (not nested, it keeps its allocation) */
	double grow_mb = env_number(WORKER_TASK_CONTAINER_MAX_ENV);
	if (cg && grow_mb > mem_mb)
		mem_mb = grow_mb;
	/* the container's id goes to the worker's file (worker_ctr_memory.h): the worker changes
	 * the limits of a container it follows (not nested and may grow, or lent cores) through
	 * the engine, and removes one whose runner was killed with its task; not nested, one that
	 * may grow waits at its memory limit for the worker meanwhile */
	const char *id_file = getenv(WORKER_CTR_ID_ENV);
	bool followed = id_file && *id_file;
	bool waits = followed && !cg && grow_mb > mem_mb;
	json_t *cfg = json_pack("{s:s,s:o,s:o,s:s,s:s,s:o,s:b,s:b,s:b,s:o}", "Image", image, "Cmd",
	                        cmd, "Env", env, "WorkingDir", o->workdir, "User", user, "Labels",
	                        worker_docker_labels(host), "AttachStdout", 1, "AttachStderr", 1,
	                        "Tty", 0, "HostConfig", host_config(o, mem_mb, cg, waits));
	char *id = NULL;
	double t0 = now_s();
	int r = docker_api_create_container(api, NULL, cfg, &id, err);
	json_decref(cfg);
	json_object_set_new(rec, "create_s", json_real(now_s() - t0));
	if (r == 0 && followed) {
		int w = atomic_file_write(id_file, id, strlen(id), 0644);
		if (w < 0)
			debug(D_WORKER, "cannot write %s: %s", id_file, strerror(-w));
	}
	debug(D_WORKER, "container %.12s of %s%s%s", id ? id : "-", image, cg ? " in cgroup " : "",
	      cg ? cg : "");
	if (r == 0) {
		t0 = now_s();
		r = docker_api_run(api, id, false, STDOUT_FILENO, STDERR_FILENO, &runner_agent_stop,
		                   status, err);
		json_object_set_new(rec, "run_s", json_real(now_s() - t0));
		if (r < 0) {
			char *e2 = NULL;
			docker_api_remove(api, id, &e2);
			free(e2);
		}
	}
	bool oom = false;
	if (r == 0) {
		char *e2 = NULL;
		if (docker_api_oom_killed(api, id, &oom, &e2) < 0) {
			warn("%s", e2);
			free(e2);
			e2 = NULL;
		}
		t0 = now_s();
		if (docker_api_remove(api, id, &e2) < 0) {
			warn("%s", e2);
			free(e2);
		}
		json_object_set_new(rec, "delete_s", json_real(now_s() - t0));
	}
	/* On cgroup v1 Docker marks OOMKilled on any OOM event of the container's hierarchy: also
	 * when the task's cgroup above it reached its limit and the worker grew it, the process
	 * waiting meanwhile, not killed. A command that ended well was not killed. */
	if (oom && *status == 0) {
		debug(D_WORKER, "container %.12s: an OOM event, but its command succeeded", id);
		oom = false;
	}
	if (oom) {
		fprintf(stderr,
		        "work_queue_worker: container %.12s was killed for lack of memory "
		        "(OOMKilled; limit %.0f MB)\n",
		        id, mem_mb);
		*status = WORKER_DOCKER_EXIT_OOM;
	}
	if (cg)
		remove_mirrored_groups(cg);
	free(cg);
	free(id);
	return r;
}

int worker_runner_main(int argc, char **argv)
{
	struct worker_runner_opts o;
	char msg[1024];
	if (worker_runner_opts_parse(argc, argv, &o, msg, sizeof msg) < 0)
		return fail(msg);
	runner_agent_catch_stops();
	if (o.ahead && runner_ahead_bind_to_worker() < 0) {
		worker_runner_opts_clear(&o);
		return fail("--ahead: the worker is gone");
	}
	/* the worker's -d flags do not reach the runner; DOCKER_API_DEBUG=all turns them on */
	const char *dbg = getenv("DOCKER_API_DEBUG");
	if (dbg && *dbg)
		debug_flags_set(dbg);

	char *err = NULL;
	struct docker_api *api = docker_api_create(o.socket, &err);
	if (!api) {
		int st = fail(err);
		free(err);
		worker_runner_opts_clear(&o);
		return st;
	}
	json_t *cmd = json_array();
	for (int k = 0; k < o.n_cmd; k++)
		json_array_append_new(cmd, json_string(o.cmd[k]));
	json_t *env = json_array();
	for (char **e = environ; *e; e++)
		json_array_append_new(env, json_string(*e));
	char *user = worker_docker_user();
	int status = -1;
	char *image = NULL, *shared = NULL;
	json_t *rec = json_object();
	int r = runner_image_ready(api, &o, &runner_agent_stop, &image, &err, rec);
	if (o.ahead) {
		/* the task's own container, made before the task: not the task's process */
		if (r == 0)
			r = runner_ahead(api, &o, image,
			                 host_config(&o, env_number("MEMORY"), NULL, false), rec,
			                 &err);
		if (r < 0 && !runner_agent_stop)
			fprintf(stderr, "work_queue_worker --container-run --ahead %s: %s\n",
			        o.ahead, err);
		free(err);
		json_decref(rec);
		json_decref(cmd);
		json_decref(env);
		free(image);
		free(user);
		docker_api_delete(api);
		worker_runner_opts_clear(&o);
		return r < 0 ? WORKER_DOCKER_EXIT_DOCKER : 0;
	}
	bool ran = false;
	if (r == 0 && o.shared_image)
		r = run_shared_image(api, &o, image, &status, &err, rec, &shared, &ran);
	if (r == 0 && o.shared && o.agent) {
		/* the --docker-preserve container, made by the worker with its agent */
		double t0 = now_s();
		r = runner_agent_run(o.state, o.agent, o.workdir, o.cmd, AGENT_WAIT_S,
		                     &runner_agent_stop, &status, &err);
		if (r == -ECONNREFUSED) {
			debug(D_WORKER, "shared container %s: no agent answers; an exec", o.shared);
			r = 0;
		} else {
			ran = true;
			agent_record(rec, t0);
		}
	}
	if (r == 0 && !ran) {
		const char *in = o.shared ? o.shared : shared;
		json_object_set_new(rec, "mode", json_string(in ? "shared" : "task"));
		if (in) {
			double t0 = now_s();
			r = run_shared(api, &o, in, cmd, env, user, &status, &err);
			json_object_set_new(rec, "run_s", json_real(now_s() - t0));
		} else {
			r = run_own(api, &o, image, cmd, env, user, &status, &err, rec);
		}
	} else {
		json_decref(cmd);
		json_decref(env);
	}
	if (r < 0 && !runner_agent_stop)
		engine_check(api, &err, rec);
	worker_container_record_write(o.workdir, WORKER_CONTAINER_RECORD, rec);
	json_decref(rec);
	free(image);
	free(shared);
	free(user);
	docker_api_delete(api);
	worker_runner_opts_clear(&o);
	if (r < 0) {
		int st = fail(err);
		free(err);
		return runner_agent_stop ? 128 + runner_agent_stop : st;
	}
	if (runner_agent_stop)
		return 128 + runner_agent_stop;
	return status < 0 || status > 255 ? WORKER_DOCKER_EXIT_DOCKER : status;
}
