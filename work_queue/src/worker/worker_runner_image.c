/* worker_runner_image.c: images for the container runner (see worker_runner_image.h): the
 * once-per-worker load of a cached image archive and the shared container of each image. */
#include "worker_runner_image.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "atomic_file.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "worker_docker.h"
#include "xalloc.h"

#include "banned.h"

/* Takes the lock file STATE/NAME.lock, waiting for another runner that holds it. The fd, or a
 * negative code (-EINTR when STOP is set meanwhile). */
static int lock_state(const char *state, const char *name, volatile sig_atomic_t *stop)
{
	if (mkdir(state, 0700) < 0 && errno != EEXIST)
		return -errno;
	char *p = xasprintf("%s/%s.lock", state, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(p);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0) {
		int e = errno;
		if (e != EINTR || *stop) {
			close(fd);
			return e == EINTR ? -EINTR : -e;
		}
	}
	return fd;
}

/* The image recorded for KEY in STATE, or NULL. Caller frees. */
static char *read_record(const char *state, const char *key)
{
	char *p = xasprintf("%s/%s.image", state, key);
	FILE *f = fopen(p, "re");
	free(p);
	if (!f)
		return NULL;
	char line[1024];
	char *ref = fgets(line, sizeof line, f) ? xstrdup(str_trim(line)) : NULL;
	fclose(f);
	if (ref && !*ref) {
		free(ref);
		ref = NULL;
	}
	return ref;
}

static void write_record(const char *state, const char *key, const char *ref)
{
	char *p = xasprintf("%s/%s.image", state, key);
	char *text = xasprintf("%s\n", ref);
	if (atomic_file_write(p, text, strlen(text), 0600) < 0)
		warn("cannot record the image of %s in %s: %s", key, p, htc_strerror(-errno));
	free(text);
	free(p);
}

int runner_image_ready(struct docker_api *api, const struct worker_runner_opts *o,
                       volatile sig_atomic_t *stop, char **ref, char **err, json_t *rec)
{
	*ref = NULL;
	*err = NULL;
	if (!o->load) {
		*ref = xstrdup(o->image);
		json_object_set_new(rec, "image", json_string(*ref));
		return 0;
	}
	int fd = lock_state(o->state, o->key, stop);
	if (fd < 0) {
		*err = xasprintf("the image archive %s: cannot lock %s: %s", o->load, o->state,
		                 htc_strerror(fd));
		return fd;
	}
	int r = 0;
	char *have = read_record(o->state, o->key);
	char *e = NULL;
	if (have && docker_api_image_exists(api, have, &e) == 0) {
		*ref = have;
		debug(D_WORKER, "image %s of %s already loaded", have, o->key);
	} else {
		free(e);
		e = NULL;
		free(have);
		double t0 = (double)time_monotonic_us() / 1e6;
		r = docker_api_load(api, o->load, ref, &e);
		if (r < 0) {
			*err = xasprintf("the image archive %s (%s) cannot be loaded: %s", o->load,
			                 o->key, e);
		} else {
			write_record(o->state, o->key, *ref);
			json_object_set_new(rec, "load_s",
			                    json_real((double)time_monotonic_us() / 1e6 - t0));
			debug(D_WORKER, "loaded image %s from %s in %.2f s", *ref, o->load,
			      (double)time_monotonic_us() / 1e6 - t0);
		}
	}
	free(e);
	close(fd); /* releases the lock */
	if (*ref)
		json_object_set_new(rec, "image", json_string(*ref));
	return r;
}

/* FNV-1a of the image's name. */
char *runner_image_shared_name(const char *owner, const char *image)
{
	uint64_t h = 1469598103934665603ULL;
	for (const unsigned char *p = (const unsigned char *)image; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return xasprintf("wq-worker-%s-%016" PRIx64, owner, h);
}

/* The id of the running container NAME, or NULL (a stopped one is removed). */
static char *running_container(struct docker_api *api, const char *name)
{
	char *path = xasprintf("/containers/%s/json", name);
	json_t *j = NULL;
	char *e = NULL;
	char *id = NULL;
	if (docker_api_call(api, "GET", path, NULL, NULL, &j, &e) == 0) {
		const char *cid = json_string_value(json_object_get(j, "Id"));
		bool up = json_is_true(json_object_get(json_object_get(j, "State"), "Running"));
		if (cid && up) {
			id = xstrdup(cid);
		} else if (cid) {
			char *e2 = NULL;
			docker_api_remove(api, cid, &e2);
			free(e2);
		}
	}
	free(e);
	json_decref(j);
	free(path);
	return id;
}

int runner_image_shared(struct docker_api *api, const struct worker_runner_opts *o,
                        const char *image, const char *agent, volatile sig_atomic_t *stop,
                        char **id, char **err, json_t *rec)
{
	*id = NULL;
	*err = NULL;
	char *name = runner_image_shared_name(o->owner, image);
	int fd = lock_state(o->state, name, stop);
	if (fd < 0) {
		*err = xasprintf("the shared container of %s: cannot lock %s: %s", image, o->state,
		                 htc_strerror(fd));
		free(name);
		return fd;
	}
	int r = 0;
	*id = running_container(api, name);
	if (!*id) {
		char host[256] = "";
		if (gethostname(host, sizeof host - 1) < 0)
			snprintf(host, sizeof host, "localhost");
		json_t *binds = json_array();
		for (size_t i = 0; i < o->n_binds; i++)
			json_array_append_new(binds, json_string(o->binds[i]));
		char *user = worker_docker_user();
		json_t *cmd = worker_docker_shared_cmd(agent, o->state, name, binds);
		json_t *cfg = json_pack(
		    "{s:s,s:o,s:s,s:s,s:{s:s,s:s},s:{s:o}}", "Image", image, "Cmd", cmd,
		    "WorkingDir", o->workdir, "User", user, "Labels", WORKER_DOCKER_LABEL_PID,
		    o->owner, WORKER_DOCKER_LABEL_HOST, host, "HostConfig", "Binds", binds);
		free(user);
		char *e = NULL;
		double t0 = (double)time_monotonic_us() / 1e6;
		r = docker_api_create_container(api, name, cfg, id, &e);
		json_decref(cfg);
		if (r == 0 && (r = docker_api_start(api, *id, &e)) < 0) {
			char *e2 = NULL;
			docker_api_remove(api, *id, &e2);
			free(e2);
			free(*id);
			*id = NULL;
		}
		if (r < 0)
			*err = xasprintf("cannot start the shared container of %s: %s", image, e);
		else
			json_object_set_new(rec, "shared_start_s",
			                    json_real((double)time_monotonic_us() / 1e6 - t0));
		if (r == 0)
			debug(D_WORKER, "started the shared container %s of %s in %.2f s", name,
			      image, (double)time_monotonic_us() / 1e6 - t0);
		free(e);
	}
	close(fd);
	free(name);
	return r;
}
