/* master_images.c: what the master knows of the images its workers hold (see master_images.h):
 * the image names and loaded archives of each worker's last `images` report, the @containers
 * feature withdrawn while its engine is down, and the state of a task's image on a worker for the
 * scheduler (held, on its way, absent). */
#include "master_images.h"

#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "master_internal.h"
#include "xalloc.h"
#include "banned.h"

struct iname {
	char *name;
	UT_hash_handle hh;
};

struct master_images {
	bool engine_down;
	struct iname *names;    /* image names */
	struct iname *archives; /* archive objects whose image is loaded */
};

static void set_free(struct iname **set)
{
	struct iname *e, *tmp;
	HASH_ITER(hh, *set, e, tmp)
	{
		HASH_DEL(*set, e);
		free(e->name);
		free(e);
	}
}

static void set_fill(struct iname **set, const char **names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct iname *e;
		HASH_FIND_STR(*set, names[i], e);
		if (e)
			continue;
		e = xcalloc(1, sizeof *e);
		e->name = xstrdup(names[i]);
		HASH_ADD_KEYPTR(hh, *set, e->name, strlen(e->name), e);
	}
}

static bool set_has(struct iname *set, const char *name)
{
	struct iname *e;
	HASH_FIND_STR(set, name, e);
	return e != NULL;
}

void master_images_free(struct master_images *im)
{
	if (!im)
		return;
	set_free(&im->names);
	set_free(&im->archives);
	free(im);
}

bool master_images_engine_up(const struct mworker *w)
{
	return !w->images || !w->images->engine_down;
}

/* The worker's labels in the scheduler: all of them, or without @containers while its engine is
 * down. */
static void apply_features(struct mworker *w)
{
	if (!w->sw)
		return;
	const char **v = xcalloc((size_t)w->nlabels + 1, sizeof *v);
	int n = 0;
	for (int k = 0; k < w->nlabels; k++)
		if (!w->images->engine_down ||
		    strcmp(w->labels[k], WORK_QUEUE_CONTAINERS_FEATURE) != 0)
			v[n++] = w->labels[k];
	master_sched_worker_set_features(w->q->sched, w->sw, v, n);
	free(v);
}

void master_images_on_message(struct mworker *w, json_t *msg)
{
	if (!(w->caps & WQ_CAP_IMAGES)) {
		wq_conn_violation(w->c, "proto",
		                  "message \"images\" without the capability \"images\"");
		return;
	}
	struct wq_images *r = NULL;
	char *why = NULL;
	if (wq_msg_images_parse(msg, &r, &why) < 0) {
		wq_conn_violation(w->c, "proto", "%s", why);
		free(why);
		return;
	}
	if (!w->images)
		w->images = xcalloc(1, sizeof *w->images);
	struct master_images *im = w->images;
	set_free(&im->names);
	set_free(&im->archives);
	set_fill(&im->names, r->names, r->nnames);
	set_fill(&im->archives, r->archives, r->narchives);
	bool was_down = im->engine_down;
	im->engine_down = !r->engine;
	debug(D_WQ, "%s: images: %zu named, %zu archives loaded, engine %s", MW_NAME(w), r->nnames,
	      r->narchives, r->engine ? "up" : "down");
	if (was_down != im->engine_down) {
		if (im->engine_down)
			warn("%s: its container engine does not answer: no container task "
			     "goes there until it does",
			     w->label);
		else
			notice("%s: its container engine answers again", w->label);
		apply_features(w);
	}
	wq_images_free(r);
	master_queue_request_pass(w->q);
}

/* The cache object of M's image archive, or NULL. */
static const char *archive_object(const struct mtask *m)
{
	const struct work_queue_task *t = m->t;
	int i = 0;
	for (const struct work_queue_file *f = t->inputs; f && i < m->n_inputs; f = f->next, i++)
		if (f->remote && strcmp(f->remote, t->container_archive) == 0)
			return m->objects[i];
	return NULL;
}

enum master_sched_image_state master_images_state(void *worker_data, void *task_data, void *arg)
{
	(void)arg;
	struct mworker *w = worker_data;
	const struct mtask *m = task_data;
	const struct work_queue_task *t = m->t;
	if (t->container_image)
		return w->images && set_has(w->images->names, t->container_image)
		           ? MASTER_SCHED_IMAGE_HELD
		           : MASTER_SCHED_IMAGE_ABSENT;
	if (!t->container_archive)
		return MASTER_SCHED_IMAGE_ABSENT;
	const char *obj = archive_object(m);
	if (!obj)
		return MASTER_SCHED_IMAGE_ABSENT;
	struct mobject *o = master_worker_object_find(w, obj);
	if (o)
		return o->present ? MASTER_SCHED_IMAGE_HELD : MASTER_SCHED_IMAGE_COMING;
	return w->images && set_has(w->images->archives, obj) ? MASTER_SCHED_IMAGE_HELD
	                                                      : MASTER_SCHED_IMAGE_ABSENT;
}
