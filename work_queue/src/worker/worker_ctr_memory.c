/* worker_ctr_memory.c: a task's own container followed by the worker (worker_ctr_memory.h):
 * its id from the runner's file, its first process from the engine, its memory and CPU
 * accounting groups from that process's /proc entry, its memory limit and CPU quota through the
 * engine's update call. */
#include "worker_ctr_memory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_api.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_cgroup.h"
#include "xalloc.h"
#include "banned.h"

struct worker_ctr_memory {
	struct docker_api *api;
	char *id_file, *root, *proc;
	char *id;
	char *dir;     /* its memory group, once found */
	char *cpu_dir; /* its CPU accounting group, or NULL (its CPU time unknown) */
	enum rmon_cg_version v;
};

struct worker_ctr_memory *worker_ctr_memory_create(struct docker_api *api, const char *id_file,
                                                   const char *root, const char *proc)
{
	struct worker_ctr_memory *c = xcalloc(1, sizeof *c);
	c->api = api;
	c->id_file = xstrdup(id_file);
	c->root = xstrdup(root ? root : "/sys/fs/cgroup");
	c->proc = xstrdup(proc ? proc : "/proc");
	return c;
}

void worker_ctr_memory_delete(struct worker_ctr_memory *c)
{
	if (!c)
		return;
	free(c->id_file);
	free(c->root);
	free(c->proc);
	free(c->id);
	free(c->dir);
	free(c->cpu_dir);
	free(c);
}

const char *worker_ctr_memory_id(const struct worker_ctr_memory *c)
{
	return c->id;
}

/* The id in the runner's file: 12 to 64 hexadecimal digits, else NULL (not written yet). */
static char *read_id(const char *path)
{
	char buf[128];
	if (rmon_read_file(path, buf, sizeof buf) <= 0)
		return NULL;
	size_t n = strspn(buf, "0123456789abcdef");
	if (n < 12 || n > 64 || (buf[n] && buf[n] != '\n'))
		return NULL;
	buf[n] = 0;
	return xstrdup(buf);
}

/* Finds the container's memory group: 1, 0 while it has no process yet, or an error. */
static int find_group(struct worker_ctr_memory *c, char **err)
{
	if (!c->id && !(c->id = read_id(c->id_file)))
		return 0;
	long pid = 0;
	int r = docker_api_container_pid(c->api, c->id, &pid, err);
	if (r < 0)
		return r == -ENOENT ? r : 0; /* the engine busy: tried again at the next reading */
	if (pid <= 0)
		return 0;
	c->v = rmon_cgroup_detect(c->root);
	char path[64], text[4096];
	snprintf(path, sizeof path, "%ld/cgroup", pid);
	char *p = path_join(c->proc, path);
	ssize_t n = rmon_read_file(p, text, sizeof text);
	free(p);
	if (n <= 0)
		return 0; /* it ended meanwhile: the runner reports it */
	char *dir = rmon_cgroup_memory_dir_of(c->root, c->v, text);
	/* The engine names its groups after the container (docker/ID, docker-ID.scope): a group
	 * without the id is not the container's (the worker sees another pid namespace). */
	if (!dir || !strstr(dir, c->id)) {
		*err =
		    xasprintf("container %.12s: its process %ld is in no memory group of its own "
		              "here (%s)",
		              c->id, pid, dir ? dir : "none");
		free(dir);
		return -ENOENT;
	}
	c->dir = dir;
	char *cpu = rmon_cgroup_cpu_dir_of(c->root, c->v, text);
	if (cpu && strstr(cpu, c->id))
		c->cpu_dir = cpu;
	else
		free(cpu);
	return 1;
}

/* DIR/FILE into BUF: its length, or <= 0. */
static ssize_t read_in(const char *dir, const char *file, char *buf, size_t size)
{
	char *p = path_join(dir, file);
	ssize_t n = rmon_read_file(p, buf, size);
	free(p);
	return n;
}

static int64_t read_int(const char *dir, const char *file)
{
	char buf[64];
	if (read_in(dir, file, buf, sizeof buf) <= 0)
		return -1;
	if (strncmp(buf, "max", 3) == 0)
		return INT64_MAX;
	return strtoll(buf, NULL, 10);
}

/* The value of KEY in a "key value" per line file DIR/FILE, or -1. */
static int64_t keyed(const char *dir, const char *file, const char *key)
{
	char buf[2048];
	if (read_in(dir, file, buf, sizeof buf) <= 0)
		return -1;
	size_t k = strlen(key);
	for (char *line = buf; line && *line;) {
		if (strncmp(line, key, k) == 0 && line[k] == ' ')
			return strtoll(line + k + 1, NULL, 10);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return -1;
}

int worker_ctr_memory_read(struct worker_ctr_memory *c, struct worker_ctr_memory_now *now,
                           char **err)
{
	if (!c->dir) {
		int r = find_group(c, err);
		if (r <= 0)
			return r;
	}
	bool v1 = c->v == RMON_CG_V1;
	int64_t usage = read_int(c->dir, v1 ? "memory.usage_in_bytes" : "memory.current");
	int64_t limit = read_int(c->dir, v1 ? "memory.limit_in_bytes" : "memory.max");
	if (usage < 0 || limit < 0)
		return 0; /* the group is gone: the container ended, the runner reports it */
	now->usage_mb = (double)usage / (1 << 20);
	/* v1 "no limit" is a page-rounded LONG_MAX */
	now->limit_mb = limit >= (INT64_MAX >> 1) ? -1 : limit >> 20;
	now->at_limit = false;
	now->cpu_s = -1;
	if (c->cpu_dir) {
		int64_t t = v1 ? read_int(c->cpu_dir, "cpuacct.usage")
		               : keyed(c->cpu_dir, "cpu.stat", "usage_usec");
		if (t >= 0)
			now->cpu_s = (double)t / (v1 ? 1e9 : 1e6);
	}
	if (v1 && now->limit_mb > 0)
		now->at_limit = keyed(c->dir, "memory.oom_control", "under_oom") > 0 &&
		                usage >= limit - limit / 50;
	return 1;
}

int worker_ctr_memory_set_limit(struct worker_ctr_memory *c, int64_t mb, char **err)
{
	if (!c->id) {
		*err = xstrdup("the container is not known yet");
		return -ENOENT;
	}
	return docker_api_update_memory(c->api, c->id, mb * (int64_t)(1 << 20), err);
}

int worker_ctr_memory_set_cores(struct worker_ctr_memory *c, double cores, char **err)
{
	if (!c->id) {
		*err = xstrdup("the container is not known yet");
		return -ENOENT;
	}
	return docker_api_update_cores(c->api, c->id, cores, err);
}

int worker_ctr_memory_remove(struct worker_ctr_memory *c, char **err)
{
	if (!c->id)
		return 0;
	return docker_api_remove(c->api, c->id, err);
}

struct left {
	uv_work_t req;
	char *socket, *id, *err;
	int outcome;
	worker_ctr_left_fn done;
	void *arg;
};

/* In the thread pool: nothing here touches the loop or logs. */
static void left_work(uv_work_t *w)
{
	struct left *l = w->data;
	struct docker_api *api = docker_api_create(l->socket, &l->err);
	if (!api) {
		l->outcome = -1;
		return;
	}
	l->outcome = docker_api_remove(api, l->id, &l->err) < 0 ? -1 : 1;
	docker_api_delete(api);
}

static void left_after(uv_work_t *w, int status)
{
	struct left *l = w->data;
	if (status < 0 && l->outcome == 0) {
		l->outcome = -1;
		l->err = xasprintf("its removal was cancelled: %s", uv_strerror(status));
	}
	if (l->done)
		l->done(l->outcome, l->err, l->arg);
	free(l->socket);
	free(l->id);
	free(l->err);
	free(l);
}

int worker_ctr_memory_remove_left_async(uv_loop_t *loop, const char *socket, const char *id_file,
                                        worker_ctr_left_fn done, void *arg, char **err)
{
	char *id = read_id(id_file);
	if (!id)
		return 0;
	struct left *l = xcalloc(1, sizeof *l);
	l->socket = socket ? xstrdup(socket) : NULL;
	l->id = id;
	l->done = done;
	l->arg = arg;
	l->req.data = l;
	int r = uv_queue_work(loop, &l->req, left_work, left_after);
	if (r < 0) {
		*err =
		    xasprintf("cannot queue the removal of container %s: %s", id, uv_strerror(r));
		free(l->socket);
		free(l->id);
		free(l);
		return -1;
	}
	return 1;
}

void worker_ctr_memory_let_kill(struct worker_ctr_memory *c)
{
	if (!c->dir || c->v != RMON_CG_V1)
		return;
	char *p = path_join(c->dir, "memory.oom_control");
	rmon_write_file(p, "0");
	free(p);
}
