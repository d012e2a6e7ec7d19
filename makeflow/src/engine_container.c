/* engine_container.c: rules in containers (see engine_container.h). */
#include "engine_container.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer.h"
#include "path.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

bool engine_container_of(const struct engine_options *o, const struct dag_node *n,
                         struct engine_container *c)
{
	memset(c, 0, sizeof *c);
	if (n->container_mode == DAG_CONTAINER_NONE || n->local)
		return false;
	c->image = n->container_image;
	c->archive = n->container_archive;
	if (!c->image && !c->archive) {
		c->image = o->docker_tar ? NULL : o->docker_image;
		c->archive = o->docker_tar;
	}
	c->shared = n->container_mode == DAG_CONTAINER_SHARED;
	return c->image || c->archive;
}

static void put_word(struct buffer *b, const char *word)
{
	char *q = str_escape_shell(word);
	buffer_printf(b, "%s ", q);
	free(q);
}

/* A key of the archive at PATH for the runner's records: its absolute path, size and
 * modification time, so that a changed archive is loaded again. */
static char *archive_key(const char *path)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	stat(path, &st);
	char *abs = path_is_absolute(path) ? xstrdup(path) : NULL;
	if (!abs) {
		char cwd[4096];
		abs = getcwd(cwd, sizeof cwd) ? path_join(cwd, path) : xstrdup(path);
	}
	uint64_t h = 1469598103934665603ULL;
	for (const unsigned char *p = (const unsigned char *)abs; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	free(abs);
	return xasprintf("A-%016" PRIx64 "-%jd-%jd", h, (intmax_t)st.st_size,
	                 (intmax_t)st.st_mtime);
}

char *engine_container_apply(const struct engine_options *o, const struct engine_container *c,
                             bool driver_runs_containers, const char *command,
                             struct batch_job_spec *spec, struct batch_file *in, size_t *n_in,
                             const char *log_path, char **err)
{
	*err = NULL;
	if (driver_runs_containers) {
		spec->container_image = c->archive ? NULL : c->image;
		spec->container_archive = c->archive;
		spec->container_shared = c->shared;
		for (size_t i = 0; c->archive && i < *n_in; i++)
			if (strcmp(in[i].local_name, c->archive) == 0) {
				memmove(&in[i], &in[i + 1], (*n_in - i - 1) * sizeof *in);
				(*n_in)--;
				break;
			}
		spec->n_inputs = *n_in;
		return NULL;
	}
	char *runner = path_find_program(o->self_exe, "work_queue_worker");
	if (!runner) {
		*err = xstrdup("cannot find work_queue_worker (beside makeflow or in PATH), which "
		               "runs rules in containers");
		return NULL;
	}
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd)) {
		free(runner);
		*err = xstrdup("cannot read the current directory");
		return NULL;
	}
	struct buffer b;
	buffer_init(&b, 0);
	put_word(&b, runner);
	buffer_printf(&b, "--container-run ");
	if (c->archive) {
		char *key = archive_key(c->archive);
		char *state = xasprintf("%s.containers", log_path ? log_path : "makeflow");
		char *archive =
		    path_is_absolute(c->archive) ? xstrdup(c->archive) : path_join(cwd, c->archive);
		char *owner = xasprintf("%ld", (long)getpid());
		buffer_printf(&b, "--load ");
		put_word(&b, archive);
		buffer_printf(&b, "--key %s --state ", key);
		put_word(&b, state);
		buffer_printf(&b, "--owner %s ", owner);
		free(key);
		free(state);
		free(archive);
		free(owner);
	} else {
		buffer_printf(&b, "--image ");
		put_word(&b, c->image);
	}
	buffer_printf(&b, "--workdir ");
	put_word(&b, cwd);
	buffer_printf(&b, "--bind ");
	put_word(&b, cwd);
	buffer_printf(&b, "-- /bin/sh -c ");
	put_word(&b, command);
	free(runner);
	char *out = xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	str_trim(out);
	return out;
}
