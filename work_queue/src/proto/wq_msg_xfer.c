/* wq_msg_xfer.c: validators of the transfer and worker-description messages
 * of the Work Queue protocol: `xfer_begin` (with the targets of section 5.3),
 * `xfer_end`, `xfer_abort`, `xfer_error`, `capacity`, `identity`,
 * `cache_have` and `cache_drop`. */
#include "wq_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_name.h"
#include "xalloc.h"
#include "banned.h"

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Ends a validation: on a violation frees *P with FREE_FN and hands the text
 * over; otherwise takes a reference to MSG. */
#define FINISH(v, p, msg, free_fn, out, why)                                                       \
	do {                                                                                       \
		if ((v).why) {                                                                     \
			*(why) = (v).why;                                                          \
			free_fn(p);                                                                \
			return HTC_EPROTO;                                                         \
		}                                                                                  \
		(p)->msg = json_incref((json_t *)(msg));                                           \
		*(out) = (p);                                                                      \
		return 0;                                                                          \
	} while (0)

/* ---- transfers --------------------------------------------------------------- */

static void parse_target(struct wq_msg_v *v, const json_t *msg, enum wq_dir dir, unsigned caps,
                         struct wq_target *t)
{
	json_t *o = NULL;
	if (wq_msg_object(v, msg, "target", WQ_REQ, &o) != 0)
		return;
	bool from_master = dir == WQ_DIR_M2W || dir == WQ_DIR_M2S;
	const char *from = from_master ? "the master" : "a worker";
	v->where = "target";
	t->offset = -1;
	if (json_object_get(o, "object")) {
		t->kind = WQ_TARGET_OBJECT;
		static const char *const keeps[] = {"run", "worker", NULL};
		int keep = 0;
		if (!from_master) {
			wq_msg_fail(v, NULL, "a cache object target is not allowed from %s", from);
		} else if (wq_msg_str(v, o, "object", WQ_REQ, WQ_OBJECT_NAME_LEN, &t->object,
		                      NULL) == 0 &&
		           !wq_name_is_object(t->object)) {
			wq_msg_fail(v, "object",
			            "expected a cache object name (FDU- and 64 hex digits)");
		} else if (wq_msg_enum(v, o, "keep", WQ_REQ, keeps, &keep) == 0) {
			t->keep = (enum wq_keep)keep;
		}
	} else if (json_object_get(o, "dir")) {
		t->kind = WQ_TARGET_MEMBER;
		wq_msg_int(v, o, "dir", WQ_REQ, 1, WQ_MAX_XFER_ID, &t->dir);
		wq_msg_str(v, o, "member", WQ_REQ, SIZE_MAX, &t->member, NULL);
	} else if (json_object_get(o, "task")) {
		wq_msg_int(v, o, "task", WQ_REQ, 1, WQ_MAX_ID, &t->task);
		bool out = false;
		if (json_object_get(o, "input")) {
			t->kind = WQ_TARGET_INPUT;
			if (!from_master)
				wq_msg_fail(v, NULL, "an input target is not allowed from %s",
				            from);
			wq_msg_int(v, o, "input", WQ_REQ, 0, WQ_FILES_MAX - 1, &t->index);
		} else if (json_object_get(o, "output")) {
			t->kind = WQ_TARGET_OUTPUT;
			if (from_master)
				wq_msg_fail(v, NULL, "an output target is not allowed from %s",
				            from);
			wq_msg_int(v, o, "output", WQ_REQ, 0, WQ_FILES_MAX - 1, &t->index);
			if (wq_msg_int(v, o, "offset", 0, 0, WQ_MAX_ID, &t->offset) == 0 &&
			    !(caps & WQ_CAP_WATCH))
				wq_msg_fail(v, "offset", "needs the watch capability");
		} else if (json_object_get(o, "stdout")) {
			t->kind = WQ_TARGET_STDOUT;
			if (from_master)
				wq_msg_fail(v, NULL, "a stdout target is not allowed from %s",
				            from);
			if (wq_msg_bool(v, o, "stdout", WQ_REQ, &out) == 0 && !out)
				wq_msg_fail(v, "stdout", "expected true");
		} else {
			wq_msg_fail(v, NULL,
			            "expected \"input\", \"output\" or \"stdout\" with \"task\"");
		}
	} else {
		wq_msg_fail(v, NULL, "not a known transfer target");
	}
	v->where = NULL;
}

int wq_msg_xfer_begin_parse(const json_t *msg, enum wq_dir dir, unsigned caps,
                            struct wq_xfer_begin **out, char **why)
{
	struct wq_msg_v v = {.m = "xfer_begin"};
	struct wq_xfer_begin *x = xcalloc(1, sizeof *x);
	static const char *const encs[] = {"none", "zlib", NULL};
	*out = NULL;
	*why = NULL;
	wq_msg_int(&v, msg, "xfer", WQ_REQ, 1, WQ_MAX_XFER_ID, &x->xfer);
	parse_target(&v, msg, dir, caps, &x->target);
	wq_msg_int(&v, msg, "size", WQ_REQ, 0, WQ_MAX_ID, &x->size);
	int enc = 0;
	if (wq_msg_enum(&v, msg, "enc", WQ_REQ, encs, &enc) == 0) {
		x->enc = (enum wq_enc)enc;
		if (x->enc == WQ_ENC_ZLIB && !(caps & WQ_CAP_ZLIB))
			wq_msg_fail(&v, "enc", "\"zlib\" needs the zlib capability");
		else if (x->enc == WQ_ENC_ZLIB && x->size == 0)
			wq_msg_fail(&v, "enc", "\"zlib\" is not allowed for size 0");
	}
	wq_msg_bool(&v, msg, "exec", 0, &x->exec);
	if (v.why) {
		*why = v.why;
		wq_xfer_begin_free(x);
		return HTC_EPROTO;
	}
	x->msg = json_incref((json_t *)msg);
	*out = x;
	if (x->target.kind == WQ_TARGET_MEMBER &&
	    wq_name_check(WQ_NAME_MEMBER, x->target.member, why) != 0)
		return HTC_EPARSE;
	return 0;
}

void wq_xfer_begin_free(struct wq_xfer_begin *x)
{
	if (!x)
		return;
	json_decref(x->msg);
	free(x);
}

int wq_msg_xfer_end_parse(const json_t *msg, struct wq_xfer_end **out, char **why)
{
	struct wq_msg_v v = {.m = "xfer_end"};
	struct wq_xfer_end *x = xcalloc(1, sizeof *x);
	*out = NULL;
	*why = NULL;
	wq_msg_int(&v, msg, "xfer", WQ_REQ, 1, WQ_MAX_XFER_ID, &x->xfer);
	if (wq_msg_str(&v, msg, "sha256", WQ_REQ, 64, &x->sha256, NULL) == 0 &&
	    !is_hex(x->sha256, 64))
		wq_msg_fail(&v, "sha256", "expected 64 lowercase hex digits");
	FINISH(v, x, msg, wq_xfer_end_free, out, why);
}

int wq_msg_xfer_abort_parse(const json_t *msg, struct wq_xfer_end **out, char **why)
{
	struct wq_msg_v v = {.m = "xfer_abort"};
	struct wq_xfer_end *x = xcalloc(1, sizeof *x);
	*out = NULL;
	*why = NULL;
	wq_msg_int(&v, msg, "xfer", WQ_REQ, 1, WQ_MAX_XFER_ID, &x->xfer);
	wq_msg_str(&v, msg, "reason", WQ_REQ, WQ_TEXT_RECV_MAX, &x->reason, NULL);
	FINISH(v, x, msg, wq_xfer_end_free, out, why);
}

void wq_xfer_end_free(struct wq_xfer_end *x)
{
	if (!x)
		return;
	json_decref(x->msg);
	free(x);
}

int wq_msg_xfer_error_parse(const json_t *msg, struct wq_xfer_error **out, char **why)
{
	struct wq_msg_v v = {.m = "xfer_error"};
	struct wq_xfer_error *x = xcalloc(1, sizeof *x);
	static const char *const codes[] = {"disk_full", "io",      "corrupt", "bad_name",
	                                    "have",      "no_task", NULL};
	*out = NULL;
	*why = NULL;
	wq_msg_int(&v, msg, "id", WQ_REQ, 1, WQ_MAX_XFER_ID, &x->id);
	int code = 0;
	if (wq_msg_enum(&v, msg, "code", WQ_REQ, codes, &code) == 0)
		x->code = (enum wq_xfer_error_code)code;
	wq_msg_str(&v, msg, "text", WQ_REQ, WQ_TEXT_RECV_MAX, &x->text, NULL);
	FINISH(v, x, msg, wq_xfer_error_free, out, why);
}

void wq_xfer_error_free(struct wq_xfer_error *x)
{
	if (!x)
		return;
	json_decref(x->msg);
	free(x);
}

/* ---- worker description ------------------------------------------------------ */

static void parse_capacity_item(struct wq_msg_v *v, const json_t *msg, const char *key,
                                struct wq_capacity_item *it)
{
	json_t *o = NULL;
	static const char *const sources[] = {"measured", "declared", NULL};
	if (wq_msg_object(v, msg, key, WQ_REQ, &o) != 0)
		return;
	v->where = key;
	wq_msg_num(v, o, "total", WQ_REQ, 0, (double)WQ_MAX_ID, &it->total);
	int src = 0;
	if (wq_msg_enum(v, o, "source", WQ_REQ, sources, &src) == 0)
		it->declared = src == 1;
	v->where = NULL;
}

int wq_msg_capacity_parse(const json_t *msg, struct wq_capacity **out, char **why)
{
	struct wq_msg_v v = {.m = "capacity"};
	struct wq_capacity *c = xcalloc(1, sizeof *c);
	*out = NULL;
	*why = NULL;
	parse_capacity_item(&v, msg, "cores", &c->cores);
	parse_capacity_item(&v, msg, "memory", &c->memory);
	parse_capacity_item(&v, msg, "disk", &c->disk);
	parse_capacity_item(&v, msg, "gpus", &c->gpus);
	wq_msg_int(&v, msg, "disk_free", WQ_REQ, 0, WQ_MAX_ID, &c->disk_free);
	wq_msg_int(&v, msg, "cache", WQ_REQ, 0, WQ_MAX_ID, &c->cache);
	wq_msg_bool(&v, msg, "disk_full", WQ_REQ, &c->disk_full);
	FINISH(v, c, msg, wq_capacity_free, out, why);
}

void wq_capacity_free(struct wq_capacity *c)
{
	if (!c)
		return;
	json_decref(c->msg);
	free(c);
}

int wq_msg_identity_parse(const json_t *msg, struct wq_identity **out, char **why)
{
	struct wq_msg_v v = {.m = "identity"};
	struct wq_identity *id = xcalloc(1, sizeof *id);
	static const char *const cgroups[] = {"v1", "v2", "none", NULL};
	*out = NULL;
	*why = NULL;
	id->end_time = -1;
	wq_msg_str(&v, msg, "host", WQ_REQ, 255, &id->host, NULL);
	wq_msg_str(&v, msg, "os", WQ_REQ, 128, &id->os, NULL);
	wq_msg_str(&v, msg, "os_release", WQ_REQ, 128, &id->os_release, NULL);
	wq_msg_str(&v, msg, "arch", WQ_REQ, 128, &id->arch, NULL);
	wq_msg_str(&v, msg, "software", WQ_REQ, 128, &id->software, NULL);
	wq_msg_int(&v, msg, "pid", WQ_REQ, 1, INT32_MAX, &id->pid);
	wq_msg_str(&v, msg, "workdir", WQ_REQ, 4096, &id->workdir, NULL);
	json_t *labels = NULL;
	if (wq_msg_array(&v, msg, "labels", WQ_REQ, WQ_LABELS_MAX, &labels) == 0) {
		id->labels = xcalloc(json_array_size(labels) + 1, sizeof *id->labels);
		size_t i;
		json_t *x = NULL;
		json_array_foreach(labels, i, x)
		{
			if (!json_is_string(x) || json_string_length(x) > WQ_LABEL_MAX) {
				wq_msg_fail(&v, "labels", "expected strings of at most %d bytes",
				            WQ_LABEL_MAX);
				break;
			}
			id->labels[id->nlabels++] = json_string_value(x);
		}
	}
	wq_msg_int(&v, msg, "end_time", WQ_REQ | WQ_NULL, 0, WQ_MAX_ID, &id->end_time);
	wq_msg_bool(&v, msg, "docker", WQ_REQ, &id->docker);
	int cg = 0;
	if (wq_msg_enum(&v, msg, "cgroups", WQ_REQ, cgroups, &cg) == 0)
		id->cgroups = (enum wq_cgroups)cg;
	wq_msg_int(&v, msg, "max_tasks", 0, 1, WQ_MAX_ID, &id->max_tasks);
	wq_msg_int(&v, msg, "queue_max", 0, 1, WQ_QUEUE_MAX, &id->queue_max);
	wq_msg_int(&v, msg, "memory_grow_step", 0, 1, 1 << 24, &id->memory_grow_step);
	wq_msg_bool(&v, msg, "cpu_grow", 0, &id->cpu_grow);
	size_t store_len = 0;
	if (wq_msg_str(&v, msg, "store", 0, 32, &id->store, &store_len) == 0 &&
	    (store_len != 32 || strspn(id->store, "0123456789abcdef") != 32))
		wq_msg_fail(&v, "store", "expected 32 lowercase hex digits");
	FINISH(v, id, msg, wq_identity_free, out, why);
}

void wq_identity_free(struct wq_identity *i)
{
	if (!i)
		return;
	free(i->labels);
	json_decref(i->msg);
	free(i);
}

/* ---- cache ---------------------------------------------------------------------- */

static int parse_cache_list(const json_t *msg, bool have, const char *m,
                            struct worker_cache_list **out, char **why)
{
	struct wq_msg_v v = {.m = m};
	struct worker_cache_list *c = xcalloc(1, sizeof *c);
	*out = NULL;
	*why = NULL;
	json_t *a = NULL;
	if (wq_msg_array(&v, msg, "objects", WQ_REQ, WQ_OBJECTS_MAX, &a) == 0) {
		c->names = xcalloc(json_array_size(a) + 1, sizeof *c->names);
		c->sizes = xcalloc(json_array_size(a) + 1, sizeof *c->sizes);
		char where[32];
		size_t i;
		json_t *x = NULL;
		json_array_foreach(a, i, x)
		{
			snprintf(where, sizeof where, "objects[%zu]", i);
			v.where = where;
			json_t *name = have ? json_array_get(x, 0) : x;
			json_t *size = have ? json_array_get(x, 1) : NULL;
			if (have && (!json_is_array(x) || json_array_size(x) != 2)) {
				wq_msg_fail(&v, NULL, "expected [name, size]");
			} else if (!json_is_string(name) ||
			           !wq_name_is_object(json_string_value(name))) {
				wq_msg_fail(
				    &v, NULL,
				    "expected a cache object name (FDU- and 64 hex digits)");
			} else if (have &&
			           (!json_is_integer(size) || json_integer_value(size) < 0 ||
			            json_integer_value(size) > WQ_MAX_ID)) {
				wq_msg_fail(&v, NULL, "expected a size in 0..%lld",
				            (long long)WQ_MAX_ID);
			} else {
				c->names[c->n] = json_string_value(name);
				c->sizes[c->n] = have ? json_integer_value(size) : 0;
				c->n++;
			}
			v.where = NULL;
			if (v.why)
				break;
		}
	}
	if (have)
		wq_msg_bool(&v, msg, "last", WQ_REQ, &c->last);
	else
		wq_msg_str(&v, msg, "reason", 0, WQ_TEXT_RECV_MAX, &c->reason, NULL);
	FINISH(v, c, msg, worker_cache_list_free, out, why);
}

int wq_msg_cache_have_parse(const json_t *msg, struct worker_cache_list **out, char **why)
{
	return parse_cache_list(msg, true, "cache_have", out, why);
}

int wq_msg_store_have_parse(const json_t *msg, bool dirs, struct worker_cache_list **out,
                            char **why)
{
	int r = parse_cache_list(msg, true, "store_have", out, why);
	for (size_t i = 0; r == 0 && i < (*out)->n; i++) {
		char k = (*out)->names[i][0];
		if (k != 'F' && !(dirs && k == 'D')) {
			*why = xasprintf(
			    "message \"store_have\": key \"objects[%zu]\": expected a "
			    "%s",
			    i, dirs ? "file or directory object (F-, D-)" : "file object (F-)");
			worker_cache_list_free(*out);
			*out = NULL;
			r = HTC_EPROTO;
		}
	}
	return r;
}

int wq_msg_cache_take_parse(const json_t *msg, bool taken, bool dirs, struct wq_cache_take **out,
                            char **why)
{
	struct wq_msg_v v = {.m = taken ? "cache_taken" : "cache_take"};
	struct wq_cache_take *t = xcalloc(1, sizeof *t);
	*out = NULL;
	*why = NULL;
	if (wq_msg_str(&v, msg, "object", WQ_REQ, 66, &t->object, NULL) == 0 &&
	    (!wq_name_is_object(t->object) ||
	     (t->object[0] != 'F' && !(dirs && t->object[0] == 'D'))))
		wq_msg_fail(&v, "object",
		            dirs ? "expected a file or directory object name (F- or D- and 64 hex "
		                   "digits)"
		                 : "expected a file object name (F- and 64 hex digits)");
	wq_msg_int(&v, msg, "size", WQ_REQ, 0, WQ_MAX_ID, &t->size);
	if (taken) {
		wq_msg_bool(&v, msg, "ok", WQ_REQ, &t->ok);
		wq_msg_str(&v, msg, "text", 0, WQ_TEXT_RECV_MAX, &t->text, NULL);
	}
	FINISH(v, t, msg, wq_cache_take_free, out, why);
}

void wq_cache_take_free(struct wq_cache_take *t)
{
	if (!t)
		return;
	json_decref(t->msg);
	free(t);
}

int wq_msg_cache_drop_parse(const json_t *msg, struct worker_cache_list **out, char **why)
{
	return parse_cache_list(msg, false, "cache_drop", out, why);
}

void worker_cache_list_free(struct worker_cache_list *c)
{
	if (!c)
		return;
	free(c->names);
	free(c->sizes);
	json_decref(c->msg);
	free(c);
}
