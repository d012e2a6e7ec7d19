/* worker_docker.c: containers for work_queue_worker (see worker_docker.h): the checks at start,
 * the shared container of --docker-preserve, the runner's argv, and the runner itself, which
 * creates (or execs in) a container, copies its output and exits with its status. */
#include "worker_docker.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "debug.h"
#include "path.h"
#include "stringtools.h"
#include "timeutil.h"
#include "docker_api.h"
#include "xalloc.h"

#include "banned.h"

extern char **environ;

#define PIDS_LIMIT 4096
#define SHARED_CMD "while :; do sleep 3600; done"

struct worker_docker {
	struct docker_api *api;
	char *image;
	bool shared;
	bool nest;
	char *workdir;
	char *shared_id;
	char host[256];
	char exe[PATH_MAX]; /* the runner: this program (resolved /proc/self/exe) */
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

/* Removes the containers labelled by a worker or runner of this host whose pid is gone. */
static void remove_stale(struct worker_docker *d)
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
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
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
	int r = docker_api_image_exists(api, image, &e);
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
	d->image = xstrdup(image);
	d->shared = shared;
	find_runner(d);
	if (gethostname(d->host, sizeof d->host - 1) < 0)
		snprintf(d->host, sizeof d->host, "localhost");
	if (docker_api_nestable(api, &d->nest, &e) < 0) {
		warn("%s: containers are not nested in the tasks' cgroups", e);
		free(e);
		d->nest = false;
	}
	remove_stale(d);
	debug(D_WORKER, "docker at %s: image %s, %s containers%s", docker_api_socket(api), image,
	      shared ? "one shared" : "per-task", d->nest ? ", nested in the tasks' cgroups" : "");
	return d;
}

static json_t *labels_json(const char *host)
{
	char pid[32];
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	return json_pack("{s:s,s:s}", WORKER_DOCKER_LABEL_PID, pid, WORKER_DOCKER_LABEL_HOST, host);
}

static char *user_string(void)
{
	return xasprintf("%ld:%ld", (long)getuid(), (long)getgid());
}

int worker_docker_start(struct worker_docker *d, const char *workdir, char **err)
{
	*err = NULL;
	free(d->workdir);
	d->workdir = xstrdup(workdir);
	if (!d->shared)
		return 0;
	char *name = xasprintf("wq-worker-%ld", (long)getpid());
	char *bind = xasprintf("%s:%s", workdir, workdir);
	char *user = user_string();
	json_t *cfg = json_pack("{s:s,s:[s,s,s],s:s,s:s,s:o,s:{s:[s]}}", "Image", d->image, "Cmd",
	                        "/bin/sh", "-c", SHARED_CMD, "WorkingDir", workdir, "User", user,
	                        "Labels", labels_json(d->host), "HostConfig", "Binds", bind);
	free(bind);
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
	/* the stopped containers of runners killed with SIGKILL (a cancelled task, a limit) */
	remove_stale(d);
	free(d->shared_id);
	free(d->workdir);
	free(d->image);
	docker_api_delete(d->api);
	free(d);
}

/* ---- the runner's argv -------------------------------------------------------------------- */

char **worker_docker_argv(const struct worker_docker *d, const char *sandbox_work_dir,
                          const char *const *env, const char *command)
{
	(void)env; /* the runner's own environment: spec.env */
	char **v = xcalloc(24, sizeof *v);
	int n = 0;
	v[n++] = xstrdup(worker_docker_runner_path(d));
	v[n++] = xstrdup("--container-run");
	v[n++] = xstrdup("--socket");
	v[n++] = xstrdup(docker_api_socket(d->api));
	v[n++] = xstrdup("--image");
	v[n++] = xstrdup(d->image);
	if (d->shared_id) {
		v[n++] = xstrdup("--shared");
		v[n++] = xstrdup(d->shared_id);
	}
	if (d->nest)
		v[n++] = xstrdup("--nest");
	v[n++] = xstrdup("--workdir");
	v[n++] = xstrdup(sandbox_work_dir);
	if (!d->shared_id) {
		/* the sandbox (work, tmp) read-write; the cache read-only (cached directories are
		 * links into it) */
		v[n++] = xstrdup("--bind");
		v[n++] = path_dirname(sandbox_work_dir);
		char *cache = d->workdir ? path_join(d->workdir, "cache") : NULL;
		if (cache && path_exists(cache)) {
			v[n++] = xstrdup("--bind-ro");
			v[n++] = cache;
		} else {
			free(cache);
		}
	}
	v[n++] = xstrdup("--");
	v[n++] = xstrdup("/bin/sh");
	v[n++] = xstrdup("-c");
	v[n++] = xstrdup(command);
	v[n] = NULL;
	return v;
}

void worker_docker_argv_free(char **argv)
{
	str_free_argv(argv);
}

/* ---- the runner --------------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static int runner_fail(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "work_queue_worker --container-run: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
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

int worker_docker_runner_main(int argc, char **argv)
{
	const char *sock = NULL, *image = NULL, *shared = NULL, *workdir = NULL;
	bool nest = false;
	json_t *binds = json_array();
	int i = 2;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--nest") == 0) {
			nest = true;
			continue;
		}
		if (i + 1 >= argc) {
			json_decref(binds);
			return runner_fail("%s: needs a value%s", a, "");
		}
		const char *v = argv[++i];
		if (strcmp(a, "--socket") == 0) {
			sock = v;
		} else if (strcmp(a, "--image") == 0) {
			image = v;
		} else if (strcmp(a, "--shared") == 0) {
			shared = v;
		} else if (strcmp(a, "--workdir") == 0) {
			workdir = v;
		} else if (strcmp(a, "--bind") == 0 || strcmp(a, "--bind-ro") == 0) {
			if (!path_is_absolute(v)) {
				json_decref(binds);
				return runner_fail("%s %s: not an absolute path", a, v);
			}
			char *b = xasprintf("%s:%s%s", v, v, a[6] ? ":ro" : "");
			json_array_append_new(binds, json_string(b));
			free(b);
		} else {
			json_decref(binds);
			return runner_fail("unknown option %s%s", a, "");
		}
	}
	if (!image || !workdir || i >= argc) {
		json_decref(binds);
		return runner_fail(
		    "usage: --container-run [--socket S] --image IMG [--shared ID] "
		    "[--nest] --workdir DIR [--bind DIR] [--bind-ro DIR] -- CMD...%s%s",
		    "", "");
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* the worker's -d flags do not reach the runner; DOCKER_API_DEBUG=all turns them on */
	const char *dbg = getenv("DOCKER_API_DEBUG");
	if (dbg && *dbg)
		debug_flags_set(dbg);

	char *err = NULL;
	struct docker_api *api = docker_api_create(sock, &err);
	if (!api) {
		json_decref(binds);
		int st = runner_fail("%s%s", err, "");
		free(err);
		return st;
	}
	json_t *cmd = json_array();
	for (int k = i; k < argc; k++)
		json_array_append_new(cmd, json_string(argv[k]));
	json_t *env = json_array();
	for (char **e = environ; *e; e++)
		json_array_append_new(env, json_string(*e));
	char *user = user_string();
	int status = -1, r;
	double mem_mb = env_number("MEMORY");
	if (shared) {
		json_t *cfg =
		    json_pack("{s:b,s:b,s:o,s:o,s:s,s:s}", "AttachStdout", 1, "AttachStderr", 1,
		              "Cmd", cmd, "Env", env, "WorkingDir", workdir, "User", user);
		r = docker_api_exec(api, shared, cfg, STDOUT_FILENO, STDERR_FILENO, &stop_signal,
		                    &status, &err);
		json_decref(cfg);
		json_decref(binds);
	} else {
		double cores = env_number("CORES");
		char host[256] = "";
		if (gethostname(host, sizeof host - 1) < 0)
			snprintf(host, sizeof host, "localhost");
		json_t *hc = json_pack("{s:o,s:b,s:I}", "Binds", binds, "AutoRemove", 0,
		                       "PidsLimit", (json_int_t)PIDS_LIMIT);
		if (mem_mb >= 6) {
			json_int_t bytes = (json_int_t)(mem_mb * 1024 * 1024);
			json_object_set_new(hc, "Memory", json_integer(bytes));
			json_object_set_new(hc, "MemorySwap", json_integer(bytes));
		}
		if (cores > 0)
			json_object_set_new(hc, "NanoCpus",
			                    json_integer((json_int_t)(cores * 1e9)));
		char *cg = nest ? own_memory_cgroup() : NULL;
		if (cg)
			json_object_set_new(hc, "CgroupParent", json_string(cg));
		json_t *cfg = json_pack("{s:s,s:o,s:o,s:s,s:s,s:o,s:b,s:b,s:b,s:o}", "Image", image,
		                        "Cmd", cmd, "Env", env, "WorkingDir", workdir, "User", user,
		                        "Labels", labels_json(host), "AttachStdout", 1,
		                        "AttachStderr", 1, "Tty", 0, "HostConfig", hc);
		char *id = NULL;
		r = docker_api_create_container(api, NULL, cfg, &id, &err);
		json_decref(cfg);
		debug(D_WORKER, "container %.12s of %s%s%s", id ? id : "-", image,
		      cg ? " in cgroup " : "", cg ? cg : "");
		if (r == 0) {
			r = docker_api_run(api, id, false, STDOUT_FILENO, STDERR_FILENO,
			                   &stop_signal, &status, &err);
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
			if (docker_api_remove(api, id, &e2) < 0) {
				warn("%s", e2);
				free(e2);
			}
		}
		if (oom) {
			fprintf(stderr,
			        "work_queue_worker: container %.12s was killed for lack of memory "
			        "(OOMKilled; limit %.0f MB)\n",
			        id, mem_mb);
			status = WORKER_DOCKER_EXIT_OOM;
		}
		if (cg)
			remove_mirrored_groups(cg);
		free(cg);
		free(id);
	}
	free(user);
	docker_api_delete(api);
	if (r < 0) {
		int st = runner_fail("%s%s", err, "");
		free(err);
		return stop_signal ? 128 + stop_signal : st;
	}
	if (stop_signal)
		return 128 + stop_signal;
	return status < 0 || status > 255 ? WORKER_DOCKER_EXIT_DOCKER : status;
}
