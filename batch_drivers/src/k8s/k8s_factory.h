/* k8s_factory.h: what work_queue_factory -T k8s gives the k8s driver (doc/kubernetes.md,
 * section 8): the worker pods' image and where the worker binary comes from, host networking
 * (the test pod network has no way to the host), the owner label that lets a restarted factory
 * find the pods of its earlier run, and the workers' size (one large worker per node unless
 * --cores or --memory say otherwise). */
#ifndef HTC_K8S_FACTORY_H
#define HTC_K8S_FACTORY_H

#include <stddef.h>

/* The image work_queue_factory -T k8s runs when neither --k8s-image nor --k8s-worker-image is
 * given: the one htc_worker_image makes by default. */
#define K8S_FACTORY_DEFAULT_IMAGE "htc-worker:local"

struct k8s_factory_in {
	const char *image;        /* --k8s-image: the worker binary is mounted from this host */
	const char *worker_image; /* --k8s-worker-image: the worker is in the image's PATH */
	const char *binary;       /* the worker binary on this host (absolute or not) */
	const char *given_binary; /* --worker-binary, or NULL */
	const char *master;       /* "HOST:PORT" or "project:NAME": names the owner */
	const char *size;         /* the workers' size options as given, "" when none */
};

struct k8s_factory_out {
	char *binary; /* the worker to run in the pod */
	char *size;   /* the size options of the worker command */
	char **opts;  /* driver options "key=value", NULL-terminated */
};

/* Fills OUT (free with k8s_factory_out_clear). 0, or -EINVAL with ERR (both image options,
 * a worker binary that cannot be found to mount). */
int k8s_factory_setup(const struct k8s_factory_in *in, struct k8s_factory_out *out, char *err,
                      size_t errlen);
void k8s_factory_out_clear(struct k8s_factory_out *out);

#endif
