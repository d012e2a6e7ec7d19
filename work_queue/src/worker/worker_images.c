/* worker_images.c: the images a worker holds for tasks (see worker_images.h): two small sets (the
 * image names that ran, the archives loaded), the ids the engine had at start, and the removal of
 * an archive's image when the archive leaves the cache. */
#include "worker_images.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uthash.h>

#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

#define MAX_REPORTED 1000 /* WQ_OBJECTS_MAX: names and archives per `images` message */

struct entry {
	char *s;
	char *ref; /* archives: the image loaded from it */
	UT_hash_handle hh;
};

struct worker_images {
	struct docker_api *api;
	char *state;
	bool engine_down;
	struct entry *names;    /* image names that ran */
	struct entry *archives; /* archive objects whose image is loaded */
	struct entry *before;   /* image ids in the engine when the worker started */
	struct entry *pending;  /* image refs whose removal failed (in use): retried at exit */
};

static void entry_free(struct entry *e)
{
	free(e->s);
	free(e->ref);
	free(e);
}

/* Adds S (with REF, may be NULL) to SET: true if it was not there. A full set is not grown
 * (it is what one message can carry): the image is then just not reported. */
static bool set_add_ref(struct entry **set, const char *s, const char *ref)
{
	struct entry *e;
	HASH_FIND_STR(*set, s, e);
	if (e || HASH_COUNT(*set) >= MAX_REPORTED)
		return false;
	e = xcalloc(1, sizeof *e);
	e->s = xstrdup(s);
	e->ref = ref ? xstrdup(ref) : NULL;
	HASH_ADD_KEYPTR(hh, *set, e->s, strlen(e->s), e);
	return true;
}

static bool set_add(struct entry **set, const char *s)
{
	return set_add_ref(set, s, NULL);
}

static bool set_del(struct entry **set, const char *s)
{
	struct entry *e;
	HASH_FIND_STR(*set, s, e);
	if (!e)
		return false;
	HASH_DEL(*set, e);
	entry_free(e);
	return true;
}

static bool set_has(struct entry *set, const char *s)
{
	struct entry *e;
	HASH_FIND_STR(set, s, e);
	return e != NULL;
}

static void set_free(struct entry **set)
{
	struct entry *e, *tmp;
	HASH_ITER(hh, *set, e, tmp)
	{
		HASH_DEL(*set, e);
		entry_free(e);
	}
}

struct worker_images *worker_images_create(struct docker_api *api, const char *state_dir)
{
	struct worker_images *im = xcalloc(1, sizeof *im);
	im->api = api;
	im->state = xstrdup(state_dir);
	json_t *list = NULL;
	char *err = NULL;
	if (docker_api_call(api, "GET", "/images/json?all=1", NULL, NULL, &list, &err) < 0) {
		/* then nothing is known to be the node's own: no image is ever removed */
		warn("%s: images loaded from archives will not be removed", err);
		free(err);
		im->before = NULL;
		set_add(&im->before, "*");
		return im;
	}
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
	{
		const char *id = json_string_value(json_object_get(x, "Id"));
		if (id)
			set_add(&im->before, id);
	}
	json_decref(list);
	return im;
}

/* The id of image REF, or NULL (caller frees). */
static char *image_id(struct docker_api *api, const char *ref)
{
	char *path = xasprintf("/images/%s/json", ref);
	json_t *j = NULL;
	char *err = NULL;
	char *id = NULL;
	if (docker_api_call(api, "GET", path, NULL, NULL, &j, &err) == 0) {
		const char *s = json_string_value(json_object_get(j, "Id"));
		id = s ? xstrdup(s) : NULL;
	}
	free(err);
	json_decref(j);
	free(path);
	return id;
}

/* Removes REF from the engine unless it was there at start. 0, -EEXIST (in use), or another
 * negative code (warned). */
static int remove_image(struct worker_images *im, const char *ref)
{
	char *id = image_id(im->api, ref);
	if (!id) {
		debug(D_WORKER, "image %s is no longer in the engine", ref);
		return 0;
	}
	if (set_has(im->before, id) || set_has(im->before, "*")) {
		debug(D_WORKER, "image %s (%.19s) was in the engine before the worker: kept", ref,
		      id);
		free(id);
		return 0;
	}
	char *path = xasprintf("/images/%s", ref);
	char *err = NULL;
	int r = docker_api_call(im->api, "DELETE", path, NULL, NULL, NULL, &err);
	if (r == 0)
		notice("removed image %s (%.19s): its archive left the cache", ref, id);
	else if (r == -EEXIST)
		debug(D_WORKER, "image %s still in use, removed later: %s", ref, err);
	else
		warn("cannot remove image %s: %s", ref, err);
	free(err);
	free(path);
	free(id);
	return r;
}

void worker_images_delete(struct worker_images *im, bool drop_loaded)
{
	if (!im)
		return;
	struct entry *e, *tmp;
	HASH_ITER(hh, im->pending, e, tmp)
	remove_image(im, e->s);
	if (drop_loaded) {
		/* their archives go with the workspace */
		HASH_ITER(hh, im->archives, e, tmp)
		if (e->ref && !set_has(im->pending, e->ref))
			remove_image(im, e->ref);
	}
	set_free(&im->pending);
	set_free(&im->names);
	set_free(&im->archives);
	set_free(&im->before);
	free(im->state);
	free(im);
}

bool worker_images_note(struct worker_images *im, const char *name, const char *key,
                        const json_t *rec)
{
	if (!rec)
		return false;
	if (key) {
		const char *ref = json_string_value(json_object_get(rec, "image"));
		return ref && set_add_ref(&im->archives, key, ref);
	}
	if (name && json_object_get(rec, "run_s"))
		return set_add(&im->names, name);
	return false;
}

bool worker_images_have(struct worker_images *im, const char *name)
{
	return set_add(&im->names, name);
}

/* The image the runners recorded for archive KEY (caller frees), or NULL; the record is
 * removed so that a later task loads the archive again. */
static char *take_record(const struct worker_images *im, const char *key)
{
	char *p = xasprintf("%s/%s.image", im->state, key);
	FILE *f = fopen(p, "re");
	char *ref = NULL;
	if (f) {
		char line[1024];
		if (fgets(line, sizeof line, f) && *str_trim(line))
			ref = xstrdup(str_trim(line));
		fclose(f);
		unlink(p);
	}
	free(p);
	return ref;
}

bool worker_images_archive_removed(struct worker_images *im, const char *key)
{
	bool changed = set_del(&im->archives, key);
	char *ref = take_record(im, key);
	if (ref && remove_image(im, ref) == -EEXIST)
		set_add(&im->pending, ref);
	free(ref);
	return changed;
}

bool worker_images_set_engine(struct worker_images *im, bool up)
{
	bool changed = im->engine_down == up;
	im->engine_down = !up;
	return changed;
}

bool worker_images_engine_up(const struct worker_images *im)
{
	return !im->engine_down;
}

json_t *worker_images_message(const struct worker_images *im)
{
	json_t *names = json_array();
	json_t *archives = json_array();
	struct entry *e, *tmp;
	HASH_ITER(hh, im->names, e, tmp)
	json_array_append_new(names, json_string(e->s));
	HASH_ITER(hh, im->archives, e, tmp)
	json_array_append_new(archives, json_string(e->s));
	return json_pack("{s:s,s:b,s:o,s:o}", "m", "images", "engine", !im->engine_down, "names",
	                 names, "archives", archives);
}
