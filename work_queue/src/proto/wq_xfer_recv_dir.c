/* wq_xfer_recv_dir.c: incoming directory transfers (doc/work-queue-protocol.md section 5.4):
 * dir_begin, dir_mkdir and dir_end/dir_abort checked as the protocol says, members received as
 * file transfers into a temporary tree, the listing hashed and compared, and the tree renamed
 * into place or removed, off the loop. */
#include "wq_xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "wq_name.h"
#include "wq_xfer_recv_internal.h"
#include "xalloc.h"
#include "banned.h"

/* ---- directories --------------------------------------------------------------------------- */

static void d_free(struct in_dir *d)
{
	struct wq_xfer_in *i = d->in;
	HASH_DEL(i->dirs, d);
	if (!d->closed && i->nopen_dirs > 0)
		i->nopen_dirs--;
	struct name_ent *n, *tmp;
	HASH_ITER(hh, d->names, n, tmp)
	{
		HASH_DEL(d->names, n);
		free(n);
	}
	if (d->dirfd_owned && d->dirfd >= 0)
		close(d->dirfd);
	wq_listing_delete(d->listing);
	free(d->fail_text);
	free(d->tmp_path);
	free(d->final_path);
	json_decref(d->msg);
	free(d);
	i->live--;
}

void wq_xr_dir_fail(struct in_dir *d, int status, enum wq_xfer_error_code code, const char *text,
                    bool send)
{
	if (d->failed)
		return;
	d->failed = true;
	d->fail_status = status;
	d->fail_code = code;
	d->fail_text = xstrdup(text);
	if (send)
		wq_xr_send_xfer_error(d->in, d->id, code, text);
}

static void d_remove(struct in_dir *d)
{
	if (d->sink) {
		d->sink_ops->abort(d->sink);
		return;
	}
	if (d->dirfd_owned && d->dirfd >= 0) {
		close(d->dirfd);
		d->dirfd = -1;
	}
	if (d->tmp_path)
		tree_remove(d->tmp_path);
}

static void d_work(uv_work_t *w)
{
	struct in_dir *d = w->data;
	if (d->failed || d->aborted) {
		d->result = d->failed ? d->fail_status : -ECANCELED;
		d_remove(d);
		return;
	}
	if (d->sink) {
		d->result =
		    d->sink_ops->finish_dir(d->sink, d->listing, (uint64_t)d->entries, d->want);
		if (d->result == 0)
			memcpy(d->hex, d->want, SHA256_HEX_SIZE);
		return;
	}
	d->result = 0;
	if (wq_listing_count(d->listing) != (size_t)d->entries)
		d->result = HTC_ECORRUPT;
	else if (wq_listing_hash(d->listing, d->hex) < 0)
		d->result = -EIO;
	else if (strcmp(d->hex, d->want) != 0)
		d->result = HTC_ECORRUPT;
	else if (d->target.kind == WQ_TARGET_OBJECT && strcmp(d->target.object + 2, d->hex) != 0)
		d->result = HTC_ECORRUPT;
	if (d->result == 0) {
		if (d->dirfd_owned && d->dirfd >= 0) {
			close(d->dirfd);
			d->dirfd = -1;
		}
		if (d->tmp_path && d->final_path && rename(d->tmp_path, d->final_path) < 0)
			d->result = -errno;
	}
	if (d->result < 0)
		d_remove(d);
}

static void d_after(uv_work_t *w, int status)
{
	(void)status;
	struct in_dir *d = w->data;
	struct wq_xfer_in *i = d->in;
	d->busy = false;
	i->busy--;
	const char *text = "";
	if (d->result == HTC_ECORRUPT) {
		text = "directory does not match its entry count or listing hash";
		wq_xr_send_xfer_error(i, d->id, WQ_XERR_CORRUPT, text);
	} else if (d->result < 0 && d->failed) {
		text = d->fail_text;
		if (!d->aborted)
			wq_xr_send_xfer_error(i, d->id, d->fail_code, text);
	} else if (d->result == -ECANCELED) {
		text = d->fail_text ? d->fail_text : "aborted";
	} else if (d->result < 0) {
		text = htc_strerror(d->result);
		wq_xr_send_xfer_error(i, d->id, wq_xr_code_of(d->result), text);
	}
	if (i->cb.recv_end && (!i->deleted || d->sink)) {
		struct wq_xfer_incoming in = {
		    .id = d->id,
		    .is_dir = true,
		    .target = &d->target,
		    .sha256 = d->result == 0 ? d->hex : NULL,
		    .entries = (uint64_t)(d->entries > 0 ? d->entries : 0),
		    .tmp_path = d->tmp_path,
		    .sink = d->sink,
		    .tag = d->tag,
		};
		i->cb.recv_end(i, &in, d->result, text, i->user);
	}
	d_free(d);
	wq_xr_maybe_free_in(i);
}

void wq_xr_dir_maybe_finish(struct in_dir *d)
{
	struct wq_xfer_in *i = d->in;
	if (!d->end || d->members > 0 || d->busy)
		return;
	if (d->refused) {
		d_free(d);
		wq_xr_maybe_free_in(i);
		return;
	}
	d->busy = true;
	i->busy++;
	d->work.data = d;
	if (uv_queue_work(i->loop, &d->work, d_work, d_after) < 0) {
		d_work(&d->work);
		d_after(&d->work, 0);
	}
}

/* Checks a new member NAME of D (limits, duplicates, announced parent) and records it. Returns
 * 0, or -1 after a violation. */
int wq_xr_member_check(struct in_dir *d, const char *name)
{
	struct wq_xfer_in *i = d->in;
	if (d->nnames >= WQ_LISTING_MAX_ENTRIES) {
		wq_xr_violation(i, "directory %u: more than %d entries", d->id,
		                WQ_LISTING_MAX_ENTRIES);
		return -1;
	}
	struct name_ent *n = NULL;
	HASH_FIND_STR(d->names, name, n);
	const char *slash = strrchr(name, '/');
	bool parent_ok = true;
	if (!n && slash) {
		char *parent = xstrdup(name);
		parent[slash - name] = 0;
		parent_ok = wq_listing_has_dir(d->listing, parent);
		free(parent);
	}
	if (n || !parent_ok) {
		char *q = wq_msg_escape(name, strlen(name), 64, true);
		if (n)
			wq_xr_violation(i, "directory %u: member \"%s\" sent twice", d->id, q);
		else
			wq_xr_violation(
			    i, "directory %u: member \"%s\": its parent directory was not sent",
			    d->id, q);
		free(q);
		return -1;
	}
	size_t len = strlen(name);
	n = xmalloc(sizeof *n + len + 1);
	memcpy(n->name, name, len + 1);
	HASH_ADD_STR(d->names, name, n);
	d->nnames++;
	return 0;
}

static struct in_dir *dir_lookup(struct wq_xfer_in *i, int64_t id, const char *m)
{
	struct in_dir *d = NULL;
	uint32_t key = (uint32_t)id;
	HASH_FIND(hh, i->dirs, &key, sizeof key, d);
	if (!d || d->closed) {
		wq_xr_violation(i, "message \"%s\" for directory %u which is not open", m, key);
		return NULL;
	}
	return d;
}

/* The target of dir_begin (section 5.3): a D- object or a task input from the master, a task
 * output from a worker. */
static void parse_dir_target(struct wq_xfer_in *i, struct wq_msg_v *v, const json_t *msg,
                             struct wq_target *t)
{
	json_t *o = NULL;
	if (wq_msg_object(v, msg, "target", WQ_REQ, &o) != 0)
		return;
	v->where = "target";
	t->offset = -1;
	static const char *const keeps[] = {"run", "worker", NULL};
	if (json_object_get(o, "object")) {
		t->kind = WQ_TARGET_OBJECT;
		int keep = 0;
		if (i->is_master)
			wq_msg_fail(v, NULL, "a cache object target is not allowed from a worker");
		else if (wq_msg_str(v, o, "object", WQ_REQ, WQ_OBJECT_NAME_LEN, &t->object, NULL) ==
		             0 &&
		         (!wq_name_is_object(t->object) || t->object[0] != 'D'))
			wq_msg_fail(v, "object",
			            "expected a directory object name (D- and 64 hex digits)");
		else if (wq_msg_enum(v, o, "keep", WQ_REQ, keeps, &keep) == 0)
			t->keep = (enum wq_keep)keep;
	} else if (json_object_get(o, "task")) {
		wq_msg_int(v, o, "task", WQ_REQ, 1, WQ_MAX_ID, &t->task);
		const char *key = i->is_master ? "output" : "input";
		t->kind = i->is_master ? WQ_TARGET_OUTPUT : WQ_TARGET_INPUT;
		wq_msg_int(v, o, key, WQ_REQ, 0, WQ_FILES_MAX - 1, &t->index);
	} else {
		wq_msg_fail(v, NULL, "not a directory transfer target");
	}
	v->where = NULL;
}

void wq_xr_on_dir_begin(struct wq_xfer_in *i, json_t *msg)
{
	struct wq_msg_v v = {.m = "dir_begin"};
	int64_t id = 0;
	struct wq_target t;
	memset(&t, 0, sizeof t);
	wq_msg_int(&v, msg, "dir", WQ_REQ, 1, WQ_MAX_XFER_ID, &id);
	parse_dir_target(i, &v, msg, &t);
	if (v.why) {
		wq_xr_violation(i, "%s", v.why);
		free(v.why);
		return;
	}
	if (wq_xr_check_id(i, id) < 0)
		return;
	if (i->nopen_dirs >= WQ_XFER_MAX_OPEN_DIRS) {
		wq_xr_violation(i, "more than %d open directory transfer", WQ_XFER_MAX_OPEN_DIRS);
		return;
	}
	struct in_dir *d = xcalloc(1, sizeof *d);
	d->id = (uint32_t)id;
	d->in = i;
	d->msg = json_incref(msg);
	d->target = t;
	d->dirfd = -1;
	d->listing = wq_listing_create();
	HASH_ADD(hh, i->dirs, id, sizeof d->id, d);
	i->nopen_dirs++;
	i->live++;
	struct wq_xfer_dest dest = {.fd = -1, .dirfd = -1};
	struct wq_xfer_refusal r = {.code = WQ_XERR_IO};
	struct wq_xfer_incoming in = {.id = d->id, .is_dir = true, .target = &d->target};
	snprintf(r.text, sizeof r.text, "no destination for directories");
	if (!i->cb.recv_begin || i->cb.recv_begin(i, &in, &dest, &r, i->user) != 0) {
		wq_xr_send_xfer_error(i, d->id, r.code, r.text);
		d->refused = true;
		return;
	}
	d->tag = dest.tag;
	d->sink = dest.sink;
	d->sink_ops = dest.sink_ops;
	d->tmp_path = dest.tmp_path ? xstrdup(dest.tmp_path) : NULL;
	d->final_path = dest.final_path ? xstrdup(dest.final_path) : NULL;
	if (d->sink) {
		d->dirfd = d->sink_ops->dirfd(d->sink);
	} else if (dest.dirfd >= 0) {
		d->dirfd = dest.dirfd;
		d->dirfd_owned = true;
	} else if (d->tmp_path) {
		int fd = -1;
		if (mkdir(d->tmp_path, 0755) == 0)
			fd = open(d->tmp_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno == EDQUOT ? ENOSPC : errno;
			char *text = xasprintf("%s: %s", d->tmp_path, strerror(e));
			wq_xr_dir_fail(d, -e, wq_xr_code_of(-e), text, true);
			free(text);
		}
		d->dirfd = fd;
		d->dirfd_owned = true;
	}
	if (d->dirfd < 0 && !d->failed)
		wq_xr_dir_fail(d, -EINVAL, WQ_XERR_IO, "no destination directory", true);
}

void wq_xr_on_dir_mkdir(struct wq_xfer_in *i, json_t *msg)
{
	struct wq_msg_v v = {.m = "dir_mkdir"};
	int64_t id = 0;
	const char *member = NULL;
	wq_msg_int(&v, msg, "dir", WQ_REQ, 1, WQ_MAX_XFER_ID, &id);
	wq_msg_str(&v, msg, "member", WQ_REQ, WQ_NAME_MAX, &member, NULL);
	if (v.why) {
		wq_xr_violation(i, "%s", v.why);
		free(v.why);
		return;
	}
	struct in_dir *d = dir_lookup(i, id, "dir_mkdir");
	if (!d || d->refused || d->failed)
		return;
	char *why = NULL;
	if (wq_name_check(WQ_NAME_MEMBER, member, &why) != 0) {
		if (i->is_master)
			wq_xr_violation(i, "%s", why);
		else
			wq_xr_dir_fail(d, HTC_EPARSE, WQ_XERR_BAD_NAME, why, true);
		free(why);
		return;
	}
	if (wq_xr_member_check(d, member) < 0)
		return;
	int fd = mkdir_beneath(d->dirfd, member, 0755);
	if (fd < 0) {
		char *text = xasprintf("%s: %s", member, htc_strerror(fd));
		wq_xr_dir_fail(d, fd, wq_xr_code_of(fd), text, true);
		free(text);
		return;
	}
	close(fd);
	wq_listing_add_dir(d->listing, member);
}

void wq_xr_on_dir_end(struct wq_xfer_in *i, json_t *msg, bool abort)
{
	struct wq_msg_v v = {.m = abort ? "dir_abort" : "dir_end"};
	int64_t id = 0, entries = 0;
	const char *listing = NULL, *reason = NULL;
	wq_msg_int(&v, msg, "dir", WQ_REQ, 1, WQ_MAX_XFER_ID, &id);
	if (abort) {
		wq_msg_str(&v, msg, "reason", WQ_REQ, WQ_TEXT_RECV_MAX, &reason, NULL);
	} else {
		wq_msg_int(&v, msg, "entries", WQ_REQ, 0, WQ_LISTING_MAX_ENTRIES, &entries);
		if (wq_msg_str(&v, msg, "listing", WQ_REQ, 64, &listing, NULL) == 0 &&
		    (strlen(listing) != 64 || strspn(listing, "0123456789abcdef") != 64))
			wq_msg_fail(&v, "listing", "expected 64 lowercase hex digits");
	}
	if (v.why) {
		wq_xr_violation(i, "%s", v.why);
		free(v.why);
		return;
	}
	struct in_dir *d = dir_lookup(i, id, v.m);
	if (!d)
		return;
	struct in_xfer *x, *tmp;
	if (!abort) {
		HASH_ITER(hh, i->xfers, x, tmp)
		{
			if (x->dir == d && !x->closed) {
				wq_xr_violation(
				    i, "directory %u: dir_end while transfer %u is still open",
				    d->id, x->id);
				return;
			}
		}
	}
	d->closed = true;
	i->nopen_dirs--;
	d->end = true;
	d->entries = entries;
	if (listing)
		memcpy(d->want, listing, SHA256_HEX_SIZE);
	if (abort) {
		d->aborted = true;
		if (!d->fail_text)
			d->fail_text = xstrdup(reason);
		/* members left open by the sender are aborted with it */
		HASH_ITER(hh, i->xfers, x, tmp)
		{
			if (x->dir != d || x->closed)
				continue;
			x->closed = true;
			i->nopen--;
			if (x->refused || (x->failed && !x->busy)) {
				wq_xr_x_done(x, -ECANCELED, "aborted");
			} else if (!x->failed) {
				x->end = END_ABORT;
				wq_xr_x_kick(x);
			}
		}
	}
	wq_xr_dir_maybe_finish(d);
}
