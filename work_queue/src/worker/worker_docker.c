/* worker_docker.c: containers for work_queue_worker (see worker_docker.h): the checks at start,
 * the shared container of --docker-preserve, and the argv of the runner (worker_runner.c), which
 * creates (or execs in) a container, copies its output and exits with its status. */
#include "worker_docker.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atomic_file.h"
#include "debug.h"
#include "path.h"
#include "stringtools.h"
#include "timeutil.h"
#include "docker_api.h"
#include "worker_ahead.h"
#include "worker_images.h"
#include "worker_runner_agent.h"
#include "worker_runner_ahead.h"
#include "worker_runner_image.h"
#include "xalloc.h"

#include "banned.h"

#define SHARED_CMD "while :; do sleep 3600; done"

struct worker_docker {
	struct docker_api *api;
	char *image;
	bool shared;
	bool nest;
	char *workdir;
	char *shared_id;
	char *agent_socket; /* the socket name of the shared container's agent, in
	                       workdir/containers */
	struct worker_images *images;
	bool keep_images;             /* --keep-cache: the archives stay, their images too */
	bool no_ahead;                /* --no-containers-ahead */
	struct worker_aheads *aheads; /* containers made ahead (worker_ahead.h) */
	char host[256];
	char exe[PATH_MAX]; /* the runner: this program (resolved /proc/self/exe) */
	char *agent;        /* htc_container_agent beside it, or NULL (worker_runner_agent.h) */
};

const char *worker_docker_runner_path(const struct worker_docker *d)
{
	return d->exe;
}

/* Resolves /proc/self/exe into D->exe. */
static void find_runner(struct worker_docker *d)
{
	ssize_t n = readlink("/proc/self/exe", d->exe, sizeof d->exe - 1);
	if (n <= 0)
		snprintf(d->exe, sizeof d->exe, "/proc/self/exe");
	else
		d->exe[n] = 0;
}

/* Removes the containers labelled by a worker or runner of this host whose pid is gone, and
 * with OWN those labelled with this process (the shared containers of its images). */
static void remove_stale(struct worker_docker *d, bool own)
{
	json_t *list = NULL;
	char *err = NULL;
	if (docker_api_list(d->api, WORKER_DOCKER_LABEL_PID, &list, &err) < 0) {
		warn("%s", err);
		free(err);
		return;
	}
	size_t i;
	json_t *c;
	json_array_foreach(list, i, c)
	{
		json_t *labels = json_object_get(c, "Labels");
		const char *host =
		    json_string_value(json_object_get(labels, WORKER_DOCKER_LABEL_HOST));
		const char *pids =
		    json_string_value(json_object_get(labels, WORKER_DOCKER_LABEL_PID));
		const char *id = json_string_value(json_object_get(c, "Id"));
		int64_t pid;
		if (!host || !pids || !id || strcmp(host, d->host) != 0 ||
		    str_to_int64(pids, &pid) < 0 || pid <= 0)
			continue;
		if (!(own && pid == (int64_t)getpid()) &&
		    (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		if (docker_api_remove(d->api, id, &err) < 0) {
			warn("%s", err);
			free(err);
			err = NULL;
		} else {
			notice("removed container %.12s left by pid %" PRId64 ", which is gone", id,
			       pid);
		}
	}
	json_decref(list);
}

struct worker_docker *worker_docker_create(const char *image, bool shared, char **err)
{
	*err = NULL;
	struct docker_api *api = docker_api_create(NULL, err);
	if (!api)
		return NULL;
	char *e = NULL;
	if (docker_api_ping(api, &e) < 0) {
		*err = xasprintf(
		    "the Docker Engine does not answer at %s (set DOCKER_HOST=unix:///path "
		    "for another socket): %s",
		    docker_api_socket(api), e);
		free(e);
		docker_api_delete(api);
		return NULL;
	}
	int r = image ? docker_api_image_exists(api, image, &e) : 0;
	if (r < 0) {
		if (r == -ENOENT)
			*err = xasprintf(
			    "the image %s is not on this machine (%s); load it with docker "
			    "load or docker import (the worker never pulls)",
			    image, e);
		else
			*err = xasprintf("the image %s: %s", image, e);
		free(e);
		docker_api_delete(api);
		return NULL;
	}
	struct worker_docker *d = xcalloc(1, sizeof *d);
	d->api = api;
	d->image = image ? xstrdup(image) : NULL;
	d->shared = shared;
	find_runner(d);
	d->agent = runner_agent_program();
	if (gethostname(d->host, sizeof d->host - 1) < 0)
		snprintf(d->host, sizeof d->host, "localhost");
	if (docker_api_nestable(api, &d->nest, &e) < 0) {
		warn("%s: containers are not nested in the tasks' cgroups", e);
		free(e);
		d->nest = false;
	}
	remove_stale(d, false);
	debug(D_WORKER, "docker at %s: image %s, %s containers%s", docker_api_socket(api),
	      image ? image : "(none: the tasks name theirs)", shared ? "one shared" : "per-task",
	      d->nest ? ", nested in the tasks' cgroups" : "");
	return d;
}

json_t *worker_docker_labels(const char *host)
{
	char pid[32];
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	return json_pack("{s:s,s:s}", WORKER_DOCKER_LABEL_PID, pid, WORKER_DOCKER_LABEL_HOST, host);
}

json_t *worker_docker_shared_cmd(const char *agent, const char *state, const char *name,
                                 json_t *binds)
{
	if (!agent)
		return json_pack("[s,s,s]", "/bin/sh", "-c", SHARED_CMD);
	json_array_append_new(binds, json_sprintf("%s:%s:ro", agent, RUNNER_AGENT_IN_CONTAINER));
	char *sock = runner_agent_socket_name(name);
	json_t *cmd = json_pack("[s,s,s]", RUNNER_AGENT_IN_CONTAINER, state, sock);
	free(sock);
	return cmd;
}

char *worker_docker_user(void)
{
	return xasprintf("%ld:%ld", (long)getuid(), (long)getgid());
}

int worker_docker_start(struct worker_docker *d, const char *workdir, char **err)
{
	*err = NULL;
	free(d->workdir);
	d->workdir = xstrdup(workdir);
	if (!d->images) {
		char *state = path_join(workdir, "containers");
		d->images = worker_images_create(d->api, state);
		d->aheads = worker_aheads_create(state);
		free(state);
		if (d->image) /* checked by worker_docker_create */
			worker_images_have(d->images, d->image);
	}
	if (!d->shared || !d->image)
		return 0;
	char *name = xasprintf("wq-worker-%ld", (long)getpid());
	json_t *binds = json_array();
	json_array_append_new(binds, json_sprintf("%s:%s", workdir, workdir));
	/* with the agent, tasks are handed to it (worker_runner_agent.h); else execs in a loop */
	free(d->agent_socket);
	d->agent_socket = NULL;
	char *state = path_join(workdir, "containers");
	const char *agent =
	    d->agent && (mkdir(state, 0700) == 0 || errno == EEXIST) ? d->agent : NULL;
	json_t *cmd = worker_docker_shared_cmd(agent, state, name, binds);
	if (agent)
		d->agent_socket = runner_agent_socket_name(name);
	free(state);
	char *user = worker_docker_user();
	json_t *cfg = json_pack("{s:s,s:o,s:s,s:s,s:o,s:{s:o}}", "Image", d->image, "Cmd", cmd,
	                        "WorkingDir", workdir, "User", user, "Labels",
	                        worker_docker_labels(d->host), "HostConfig", "Binds", binds);
	free(user);
	char *e = NULL;
	int r = docker_api_create_container(d->api, name, cfg, &d->shared_id, &e);
	json_decref(cfg);
	if (r == 0) {
		r = docker_api_start(d->api, d->shared_id, &e);
		if (r < 0) {
			char *e2 = NULL;
			docker_api_remove(d->api, d->shared_id, &e2);
			free(e2);
			free(d->shared_id);
			d->shared_id = NULL;
		}
	}
	if (r < 0) {
		*err = xasprintf("--docker-preserve %s: cannot start the shared container %s: %s",
		                 d->image, name, e);
		free(e);
	} else {
		debug(D_WORKER, "shared container %s (%.12s) of %s started", name, d->shared_id,
		      d->image);
	}
	free(name);
	return r;
}

void worker_docker_delete(struct worker_docker *d)
{
	if (!d)
		return;
	if (d->shared_id) {
		char *e = NULL;
		if (docker_api_remove(d->api, d->shared_id, &e) < 0) {
			warn("%s", e);
			free(e);
		} else {
			debug(D_WORKER, "shared container %.12s removed", d->shared_id);
		}
	}
	/* the stopped containers of runners killed with SIGKILL (a cancelled task, a limit), and
	 * the shared containers of the images tasks named */
	remove_stale(d, true);
	/* those the shared containers used, now, and those loaded from archives of a cache that
	 * goes with the workspace */
	worker_images_delete(d->images, !d->keep_images);
	worker_aheads_delete(d->aheads);
	free(d->shared_id);
	free(d->agent_socket);
	free(d->agent);
	free(d->workdir);
	free(d->image);
	docker_api_delete(d->api);
	free(d);
}

/* ---- the runner's argv -------------------------------------------------------------------- */

/* The runner and its engine: the first words of every runner argv. */
static void argv_head(const struct worker_docker *d, char **v, int *n)
{
	v[(*n)++] = xstrdup(worker_docker_runner_path(d));
	v[(*n)++] = xstrdup("--container-run");
	v[(*n)++] = xstrdup("--socket");
	v[(*n)++] = xstrdup(docker_api_socket(d->api));
}

/* The task's own container's binds (the sandbox read-write; the cache read-only, as cached
 * directories are links into it), then the command. */
static void argv_tail(const struct worker_docker *d, char **v, int *n, const char *sandbox_work_dir,
                      bool own_binds, const char *command)
{
	if (own_binds) {
		v[(*n)++] = xstrdup("--bind");
		v[(*n)++] = path_dirname(sandbox_work_dir);
		char *cache = d->workdir ? path_join(d->workdir, "cache") : NULL;
		if (cache && path_exists(cache)) {
			v[(*n)++] = xstrdup("--bind-ro");
			v[(*n)++] = cache;
		} else {
			free(cache);
		}
	}
	v[(*n)++] = xstrdup("--");
	v[(*n)++] = xstrdup("/bin/sh");
	v[(*n)++] = xstrdup("-c");
	v[(*n)++] = xstrdup(command);
	v[*n] = NULL;
}

/* The agent's client (D->agent) with the words HEAD (NH, taken), "--", then the runner argv V
 * of N words (taken). */
static char **client_before(const struct worker_docker *d, char **head, int nh, char **v, int n)
{
	char **w = xcalloc((size_t)(n + nh + 3), sizeof *w);
	int k = 0;
	w[k++] = xstrdup(d->agent);
	for (int i = 0; i < nh; i++)
		w[k++] = head[i];
	w[k++] = xstrdup("--");
	for (int i = 0; i < n; i++)
		w[k++] = v[i];
	w[k] = NULL;
	free(v);
	return w;
}

/* V (a runner argv of N words) behind the agent's client: `htc_container_agent --run STATE
 * SOCKET IMAGE WORKDIR -- V...`, which hands the task to the shared container's agent without
 * starting the runner (12 ms of the worker's start-up), or becomes the runner when no agent
 * answers yet. Takes V; returns the new argv. */
static char **behind_client(const struct worker_docker *d, char **v, int n, const char *socket,
                            const char *image, const char *sandbox_work_dir)
{
	char *head[] = {xstrdup("--run"), path_join(d->workdir, "containers"), xstrdup(socket),
	                xstrdup(image), xstrdup(sandbox_work_dir)};
	return client_before(d, head, 5, v, n);
}

bool worker_docker_can_make_ahead(const struct worker_docker *d)
{
	return d->agent && d->nest && d->aheads && !d->no_ahead;
}

void worker_docker_set_no_ahead(struct worker_docker *d, bool no)
{
	d->no_ahead = no;
}

void worker_docker_set_engine_cgroups(struct worker_docker *d, bool engine)
{
	if (engine)
		d->nest = false;
}

bool worker_docker_nests(const struct worker_docker *d)
{
	return d->nest;
}

struct docker_api *worker_docker_api(const struct worker_docker *d)
{
	return d->api;
}

char **worker_docker_ahead_argv(const struct worker_docker *d, char **v, pid_t maker,
                                const char *dir, const char *sandbox_work_dir)
{
	int n = 0;
	while (v[n])
		n++;
	char *head[] = {xstrdup("--run-task"), xasprintf("%ld", (long)maker), xstrdup(dir),
	                xstrdup(RUNNER_AHEAD_SOCKET), xstrdup(sandbox_work_dir)};
	return client_before(d, head, 5, v, n);
}

struct worker_aheads *worker_docker_aheads(struct worker_docker *d)
{
	return d->aheads;
}

char **worker_docker_argv(const struct worker_docker *d, const char *sandbox_work_dir,
                          const char *const *env, const char *command)
{
	(void)env; /* the runner's own environment: spec.env */
	char **v = xcalloc(24, sizeof *v);
	int n = 0;
	argv_head(d, v, &n);
	v[n++] = xstrdup("--image");
	v[n++] = xstrdup(d->image);
	if (d->shared_id) {
		v[n++] = xstrdup("--shared");
		v[n++] = xstrdup(d->shared_id);
		if (d->agent_socket && d->workdir) {
			v[n++] = xstrdup("--state");
			v[n++] = path_join(d->workdir, "containers");
			v[n++] = xstrdup("--agent");
			v[n++] = xstrdup(d->agent_socket);
		}
	}
	if (d->nest)
		v[n++] = xstrdup("--nest");
	v[n++] = xstrdup("--workdir");
	v[n++] = xstrdup(sandbox_work_dir);
	argv_tail(d, v, &n, sandbox_work_dir, !d->shared_id, command);
	if (d->shared_id && d->agent_socket && d->workdir && d->agent)
		v = behind_client(d, v, n, d->agent_socket, d->image, sandbox_work_dir);
	return v;
}

void worker_docker_argv_free(char **argv)
{
	str_free_argv(argv);
}

void worker_docker_keep_images(struct worker_docker *d, bool keep)
{
	d->keep_images = keep;
}

struct worker_images *worker_docker_images(struct worker_docker *d)
{
	return d->images;
}

const char *worker_docker_image(const struct worker_docker *d)
{
	return d->image;
}

bool worker_docker_shared(const struct worker_docker *d)
{
	return d->shared_id != NULL;
}

char **worker_docker_argv_spec(const struct worker_docker *d, const char *sandbox_work_dir,
                               const char *command, const struct worker_container_spec *c)
{
	char **v = xcalloc(32, sizeof *v);
	int n = 0;
	argv_head(d, v, &n);
	if (c->archive) {
		v[n++] = xstrdup("--load");
		v[n++] = xstrdup(c->archive);
		v[n++] = xstrdup("--key");
		v[n++] = xstrdup(c->key);
	} else {
		v[n++] = xstrdup("--image");
		v[n++] = xstrdup(c->image);
	}
	v[n++] = xstrdup("--state");
	v[n++] = d->workdir ? path_join(d->workdir, "containers") : xstrdup("/tmp");
	v[n++] = xstrdup("--owner");
	v[n++] = xasprintf("%ld", (long)getpid());
	if (d->nest && !c->shared)
		v[n++] = xstrdup("--nest");
	v[n++] = xstrdup("--workdir");
	v[n++] = xstrdup(sandbox_work_dir);
	if (c->shared) {
		/* the worker's workdir: every sandbox of the worker is seen in the one container */
		v[n++] = xstrdup("--shared-image");
		v[n++] = xstrdup("--bind");
		v[n++] = xstrdup(d->workdir ? d->workdir : sandbox_work_dir);
	}
	argv_tail(d, v, &n, sandbox_work_dir, !c->shared, command);
	if (c->shared && !c->archive && d->agent && d->workdir) {
		/* an image by name: its container's name, hence its agent's socket, is known here
		 */
		char owner[32];
		snprintf(owner, sizeof owner, "%ld", (long)getpid());
		char *name = runner_image_shared_name(owner, c->image);
		char *sock = runner_agent_socket_name(name);
		v = behind_client(d, v, n, sock, c->image, sandbox_work_dir);
		free(sock);
		free(name);
	}
	return v;
}

void worker_container_record_write(const char *workdir, const char *name, json_t *rec)
{
	char *dir = path_dirname(workdir);
	char *p = path_join(dir, name);
	char *text = json_dumps(rec, JSON_COMPACT);
	if (text && atomic_file_write(p, text, strlen(text), 0644) < 0)
		debug(D_WORKER, "cannot write %s", p);
	free(text);
	free(p);
	free(dir);
}

/* The JSON object in the file NAME of SANDBOX (at most 4 KiB), or NULL. */
static json_t *read_object(const char *sandbox, const char *name)
{
	char *p = path_join(sandbox, name);
	json_error_t e;
	json_t *j = NULL;
	struct stat st;
	if (stat(p, &st) == 0 && st.st_size <= 4096)
		j = json_load_file(p, JSON_REJECT_DUPLICATES, &e);
	free(p);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

json_t *worker_container_record_read(const char *sandbox)
{
	json_t *j = read_object(sandbox, WORKER_CONTAINER_RECORD);
	/* a container made ahead: its maker's record (image, create_s), completed by the task's */
	json_t *ahead = read_object(sandbox, RUNNER_AHEAD_RECORD);
	if (ahead && j && json_is_true(json_object_get(j, "made_ahead"))) {
		json_object_update(ahead, j);
		json_decref(j);
		return ahead;
	}
	json_decref(ahead);
	return j;
}

const char *worker_container_engine_lost(const json_t *rec)
{
	if (!json_is_true(json_object_get(rec, "engine_lost")))
		return NULL;
	const char *text = json_string_value(json_object_get(rec, "engine_error"));
	return text ? text : "the container engine stopped answering";
}

const char *worker_docker_socket(const struct worker_docker *d)
{
	return docker_api_socket(d->api);
}
