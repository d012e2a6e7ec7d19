/* k8s_factory.c: the k8s driver options of work_queue_factory -T k8s (k8s_factory.h). */
#include "k8s_factory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

static void add(struct k8s_factory_out *o, size_t *n, char *kv)
{
	o->opts = xrealloc(o->opts, (*n + 2) * sizeof *o->opts);
	o->opts[(*n)++] = kv;
	o->opts[*n] = NULL;
}

/* FNV-1a, 64 bits: a short stable name for the master */
static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

/* The value following OPT ("--cores") among the words of SIZE, or NULL. */
static char *size_value(const char *size, const char *opt)
{
	char **w = str_split_ws(size, NULL);
	char *v = NULL;
	for (size_t i = 0; w[i] && w[i + 1]; i++)
		if (!strcmp(w[i], opt))
			v = xstrdup(w[i + 1]);
	str_free_argv(w);
	return v;
}

int k8s_factory_setup(const struct k8s_factory_in *in, struct k8s_factory_out *out, char *err,
                      size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (in->image && in->worker_image) {
		snprintf(err, errlen,
		         "--k8s-image and --k8s-worker-image: give one (the image holds the "
		         "worker, or the worker is mounted into the image)");
		return -EINVAL;
	}
	size_t n = 0;
	if (in->image) {
		/* the worker of this host, mounted at the same path: the image must hold the
		 * libraries it needs */
		char *real = realpath(in->binary, NULL);
		if (!real || access(real, X_OK) != 0) {
			snprintf(err, errlen,
			         "--k8s-image %s: the worker %s is mounted into the pods, but it "
			         "cannot be found here: %s",
			         in->image, in->binary, strerror(errno ? errno : ENOENT));
			free(real);
			return -EINVAL;
		}
		add(out, &n, xasprintf("image=%s", in->image));
		add(out, &n, xasprintf("mount=%s", real));
		out->binary = real;
	} else {
		const char *image = in->worker_image ? in->worker_image : K8S_FACTORY_DEFAULT_IMAGE;
		add(out, &n, xasprintf("image=%s", image));
		out->binary = xstrdup(in->given_binary ? in->given_binary : "work_queue_worker");
	}
	add(out, &n, xstrdup("host-network=yes"));
	add(out, &n, xasprintf("owner=wqf-%016" PRIx64, fnv(in->master)));
	char *cores = size_value(in->size, "--cores"), *memory = size_value(in->size, "--memory");
	if (!cores && !memory) {
		/* one large worker per node: the pod gets the node's allocatable, the worker
		 * offers what its pod has */
		add(out, &n, xstrdup("whole-node=yes"));
		out->size = xasprintf("%s --cores \"$CORES\" --memory \"$MEMORY\"", in->size);
	} else {
		if (cores)
			add(out, &n, xasprintf("default-cores=%s", cores));
		if (memory)
			add(out, &n, xasprintf("default-memory=%s", memory));
		out->size = xstrdup(in->size);
	}
	free(cores);
	free(memory);
	return 0;
}

void k8s_factory_out_clear(struct k8s_factory_out *out)
{
	for (size_t i = 0; out->opts && out->opts[i]; i++)
		free(out->opts[i]);
	free(out->opts);
	free(out->binary);
	free(out->size);
	memset(out, 0, sizeof *out);
}
