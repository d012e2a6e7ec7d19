/* wq_msg_images.c: the validator of the worker's `images` message (doc/work-queue-protocol.md
 * section 5.2, capability `images`): whether its container engine answers, the image names it
 * holds for tasks and the image archives it has loaded, each list capped at WQ_OBJECTS_MAX. */
#include "wq_msg.h"

#include <stdio.h>
#include <stdlib.h>

#include "docker_name.h"
#include "htc_error.h"
#include "wq_name.h"
#include "xalloc.h"
#include "banned.h"

/* KEY of MSG, an array of at most WQ_OBJECTS_MAX strings each accepted by OK, into *OUT / *N. */
static void string_list(struct wq_msg_v *v, const json_t *msg, const char *key,
                        bool (*ok)(const char *), const char *expected, const char ***out,
                        size_t *n)
{
	json_t *a = NULL;
	if (wq_msg_array(v, msg, key, WQ_REQ, WQ_OBJECTS_MAX, &a) != 0)
		return;
	*out = xcalloc(json_array_size(a) + 1, sizeof **out);
	char where[48];
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x)
	{
		const char *s = json_string_value(x);
		if (!s || !ok(s)) {
			snprintf(where, sizeof where, "%s[%zu]", key, i);
			v->where = where;
			wq_msg_fail(v, NULL, "expected %s", expected);
			v->where = NULL;
			return;
		}
		(*out)[(*n)++] = s;
	}
}

static bool is_archive(const char *s)
{
	return wq_name_is_object(s) && s[0] == 'F';
}

int wq_msg_images_parse(const json_t *msg, struct wq_images **out, char **why)
{
	struct wq_msg_v v = {.m = "images"};
	struct wq_images *im = xcalloc(1, sizeof *im);
	*out = NULL;
	*why = NULL;
	wq_msg_bool(&v, msg, "engine", WQ_REQ, &im->engine);
	if (!v.why)
		string_list(&v, msg, "names", docker_image_name_ok, "an image name", &im->names,
		            &im->nnames);
	if (!v.why)
		string_list(&v, msg, "archives", is_archive,
		            "a file object name (F- and 64 hex digits)", &im->archives,
		            &im->narchives);
	if (v.why) {
		*why = v.why;
		wq_images_free(im);
		return HTC_EPROTO;
	}
	im->msg = json_incref((json_t *)msg);
	*out = im;
	return 0;
}

void wq_images_free(struct wq_images *im)
{
	if (!im)
		return;
	free(im->names);
	free(im->archives);
	json_decref(im->msg);
	free(im);
}
