/* fuzz_wq_msg.c: libFuzzer target for the Work Queue message validators. The
 * first input byte chooses the negotiated capabilities, the direction and the
 * connection state; the rest is decoded as a MSG payload and handed to every
 * validator, and its strings to wq_name_check, whose accepted names must not
 * escape their directory. Nothing may crash, leak or accept an invalid name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "htc_error.h"
#include "path.h"
#include "wq_msg.h"
#include "wq_name.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An accepted name must stay below its root and hold no ".." component. */
static void check_name(const char *s)
{
	for (int k = WQ_NAME_INPUT; k <= WQ_NAME_MEMBER; k++) {
		char *why = NULL;
		int rc = wq_name_check((enum wq_name_kind)k, s, &why);
		if (rc == 0) {
			if (why || path_escapes_root(s) || strstr(s, "//") || s[0] == '/' ||
			    strcmp(s, "..") == 0 || strncmp(s, "../", 3) == 0 ||
			    strstr(s, "/../") ||
			    (strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0) ||
			    strlen(s) > WQ_NAME_MAX)
				abort();
		} else if (rc != HTC_EPARSE || !why) {
			abort();
		}
		free(why);
	}
}

static void check_why(int rc, char *why)
{
	if ((rc != 0) != (why != NULL))
		abort();
	free(why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned caps = data[0] & 7;
	enum wq_dir dir = (enum wq_dir)((data[0] >> 3) & 3);
	enum wq_state st = (enum wq_state)((data[0] >> 5) % 5);
	data++;
	size--;

	/* the raw bytes as one name */
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	check_name(s);
	char *esc = wq_msg_escape(s, size, 64, size & 1);
	free(esc);
	free(s);

	json_error_t err;
	json_t *msg = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
	if (!msg)
		return 0;
	if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "m"))) {
		json_decref(msg);
		return 0;
	}
	char *why = NULL;
	int rc = wq_msg_allowed(json_string_value(json_object_get(msg, "m")), dir, st, &why);
	check_why(rc, why);

	struct wq_hello h;
	rc = wq_msg_hello_parse(msg, dir == WQ_DIR_M2W, &h, &why);
	if (rc == 0) {
		json_t *again = wq_msg_hello_build(&h);
		json_decref(again);
	}
	wq_msg_hello_free(&h);
	free(why);

	struct wq_error e;
	rc = wq_msg_error_parse(msg, &e, &why);
	check_why(rc, why);
	wq_msg_error_free(&e);

	struct wq_task_msg *t = NULL;
	rc = wq_msg_task_parse(msg, caps, &t, &why);
	if (rc == 0) {
		for (size_t i = 0; i < t->ninputs; i++)
			check_name(t->inputs[i].name);
		for (size_t i = 0; i < t->noutputs; i++)
			check_name(t->outputs[i].name);
		if (t->stdout_max > WQ_STDOUT_MAX || t->ninputs > WQ_FILES_MAX)
			abort();
	}
	if ((rc == HTC_EPROTO) != (t == NULL))
		abort();
	check_why(rc, why);
	wq_task_msg_free(t);

	struct wq_xfer_begin *xb = NULL;
	rc = wq_msg_xfer_begin_parse(msg, dir, caps, &xb, &why);
	if (rc == 0 && xb->target.kind == WQ_TARGET_MEMBER)
		check_name(xb->target.member);
	check_why(rc, why);
	wq_xfer_begin_free(xb);

	struct wq_xfer_end *xe = NULL;
	check_why(wq_msg_xfer_end_parse(msg, &xe, &why), why);
	wq_xfer_end_free(xe);
	xe = NULL;
	check_why(wq_msg_xfer_abort_parse(msg, &xe, &why), why);
	wq_xfer_end_free(xe);

	struct wq_xfer_error *xr = NULL;
	check_why(wq_msg_xfer_error_parse(msg, &xr, &why), why);
	wq_xfer_error_free(xr);

	struct wq_task_done *d = NULL;
	check_why(wq_msg_task_done_parse(msg, &d, &why), why);
	wq_task_done_free(d);

	struct wq_capacity *c = NULL;
	check_why(wq_msg_capacity_parse(msg, &c, &why), why);
	wq_capacity_free(c);

	struct wq_identity *id = NULL;
	check_why(wq_msg_identity_parse(msg, &id, &why), why);
	wq_identity_free(id);

	struct worker_cache_list *cl = NULL;
	rc = wq_msg_cache_have_parse(msg, &cl, &why);
	if (rc == 0)
		for (size_t i = 0; i < cl->n; i++)
			if (!wq_name_is_object(cl->names[i]))
				abort();
	check_why(rc, why);
	worker_cache_list_free(cl);
	cl = NULL;
	check_why(wq_msg_cache_drop_parse(msg, &cl, &why), why);
	worker_cache_list_free(cl);

	struct wq_images *im = NULL;
	rc = wq_msg_images_parse(msg, &im, &why);
	if (rc == 0)
		for (size_t i = 0; i < im->narchives; i++)
			if (!wq_name_is_object(im->archives[i]))
				abort();
	check_why(rc, why);
	wq_images_free(im);

	/* every string value of the message as a name */
	const char *key;
	json_t *val;
	json_object_foreach(msg, key, val)
	{
		if (json_is_string(val))
			check_name(json_string_value(val));
	}
	json_decref(msg);
	return 0;
}
