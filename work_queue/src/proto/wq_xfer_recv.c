/* wq_xfer_recv.c: the receiving half of the Work Queue transfer engine (doc/work-queue-protocol.md
 * sections 5.4 and 7.4) for files: a table of open incoming transfers per connection, every rule
 * of 5.4 checked as a violation with its fixed text, and DATA written, inflated and hashed in
 * libuv worker threads with receive backpressure. Directories are in wq_xfer_recv_dir.c. */
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

/* ---- helpers ----------------------------------------------------------------------------- */

void wq_xr_violation(struct wq_xfer_in *i, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void wq_xr_violation(struct wq_xfer_in *i, const char *fmt, ...)
{
	char text[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (!i->dead)
		wq_conn_violation(i->c, "proto", "%s", text);
	i->dead = true;
}

static const char *code_name(enum wq_xfer_error_code code)
{
	static const char *const names[] = {"disk_full", "io",   "corrupt",
	                                    "bad_name",  "have", "no_task"};
	return names[code];
}

void wq_xr_send_xfer_error(struct wq_xfer_in *i, uint32_t id, enum wq_xfer_error_code code,
                           const char *text)
{
	if (i->dead || i->deleted)
		return;
	size_t n = wq_msg_utf8_cut(text, strlen(text), WQ_TEXT_SEND_MAX);
	json_t *m = json_pack("{s:s, s:I, s:s, s:s%}", "m", "xfer_error", "id", (json_int_t)id,
	                      "code", code_name(code), "text", text, n);
	if (m)
		wq_conn_send_msg(i->c, m);
	json_decref(m);
	debug(D_WQ, "%s: transfer %u: xfer_error %s: %s", wq_conn_name(i->c), id, code_name(code),
	      text);
}

enum wq_xfer_error_code wq_xr_code_of(int status)
{
	if (status == -ENOSPC)
		return WQ_XERR_DISK_FULL;
	if (status == HTC_ECORRUPT)
		return WQ_XERR_CORRUPT;
	return WQ_XERR_IO;
}

/* Checks that ID is above every id seen; raises the violation otherwise. */
int wq_xr_check_id(struct wq_xfer_in *i, int64_t id)
{
	if ((uint64_t)id <= i->last_id) {
		wq_xr_violation(i, "transfer %u: id not above the last one (%u)", (uint32_t)id,
		                i->last_id);
		return -1;
	}
	i->last_id = (uint32_t)id;
	return 0;
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
}

void wq_xr_maybe_free_in(struct wq_xfer_in *i)
{
	if (i->deleted && i->busy == 0 && i->live == 0) {
		free_chunks(i->pool);
		free(i);
	}
}

/* A chunk for at least WANT bytes: from the pool when WANT is a full chunk. */
static struct chunk *chunk_get(struct wq_xfer_in *i, size_t want)
{
	struct chunk *c;
	if (want >= RECV_CHUNK_CAP && i->pool) {
		c = i->pool;
		i->pool = c->next;
		i->npool--;
	} else {
		size_t cap = want >= RECV_CHUNK_CAP ? RECV_CHUNK_CAP : want;
		c = xmalloc(sizeof *c + cap);
		c->cap = cap;
	}
	c->next = NULL;
	c->len = 0;
	return c;
}

/* Gives back the list C: full-size chunks to the pool (up to its limit), the others freed. */
static void chunks_put(struct wq_xfer_in *i, struct chunk *c)
{
	while (c) {
		struct chunk *n = c->next;
		if (c->cap == RECV_CHUNK_CAP && i->npool < RECV_POOL_LIMIT) {
			c->next = i->pool;
			i->pool = c;
			i->npool++;
		} else {
			free(c);
		}
		c = n;
	}
}

static void update_backpressure(struct wq_xfer_in *i)
{
	if (i->pending > i->peak)
		i->peak = i->pending;
	if (i->dead || i->deleted)
		return;
	if (!i->paused && i->pending > WQ_XFER_RECV_HIGH) {
		i->paused = true;
		wq_conn_pause_reading(i->c);
	} else if (i->paused && i->pending < WQ_XFER_RECV_LOW) {
		i->paused = false;
		wq_conn_resume_reading(i->c);
	}
}

/* ---- thread side of a file --------------------------------------------------------------- */

/* Closes and removes the destination of X (thread). */
static void x_cleanup(struct in_xfer *x)
{
	if (x->cleaned)
		return;
	x->cleaned = true;
	if (x->fd >= 0) {
		close(x->fd);
		x->fd = -1;
	}
	if (x->sink)
		x->sink_ops->abort(x->sink);
	if (x->tmp_path)
		unlink(x->tmp_path);
	else if (x->dir && x->dir->dirfd >= 0)
		unlinkat(x->dir->dirfd, x->b->target.member, 0);
}

/* Writes LEN bytes of content, hashing them too when HASH (otherwise the hashing work of the
 * same batch does). A sink is given the bytes through its store function: the hash is this
 * transfer's, computed once. */
static int x_store(struct in_xfer *x, const uint8_t *data, size_t len, bool hash)
{
	if (x->out + len > (uint64_t)x->b->size)
		return HTC_EPROTO;
	x->out += len;
	if (hash && sha256_ctx_update(x->sha, data, len) < 0)
		return -EIO;
	if (x->sink) {
		int r = x->sink_ops->store(x->sink, data, len);
		return r == HTC_ETOOBIG ? HTC_EPROTO : r;
	}
	return full_write(x->fd, data, len);
}

static int x_consume(struct in_xfer *x, const uint8_t *data, size_t len)
{
	if (x->b->enc == WQ_ENC_NONE)
		return x_store(x, data, len, true);
	if (!x->zbuf)
		x->zbuf = xmalloc(WQ_XFER_INFLATE_BUF);
	x->z.next_in = (Bytef *)data;
	x->z.avail_in = (uInt)len;
	while (x->z.avail_in > 0) {
		if (x->z_end)
			return HTC_EPROTO; /* bytes after the end of the stream */
		x->z.next_out = x->zbuf;
		x->z.avail_out = WQ_XFER_INFLATE_BUF;
		int zr = inflate(&x->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return HTC_EPROTO;
		size_t n = WQ_XFER_INFLATE_BUF - x->z.avail_out;
		if (n) {
			int r = x_store(x, x->zbuf, n, true);
			if (r < 0)
				return r;
		}
		if (zr == Z_STREAM_END)
			x->z_end = true;
		else if (zr == Z_BUF_ERROR && n == 0)
			return HTC_EPROTO;
	}
	/* output may remain buffered inside zlib with no input left */
	while (!x->z_end) {
		x->z.next_out = x->zbuf;
		x->z.avail_out = WQ_XFER_INFLATE_BUF;
		int zr = inflate(&x->z, Z_NO_FLUSH);
		size_t n = WQ_XFER_INFLATE_BUF - x->z.avail_out;
		if (n) {
			int r = x_store(x, x->zbuf, n, true);
			if (r < 0)
				return r;
		}
		if (zr == Z_STREAM_END)
			x->z_end = true;
		else if (zr != Z_OK || n == 0)
			break;
	}
	return 0;
}

static int x_finish(struct in_xfer *x)
{
	if (x->b->enc == WQ_ENC_ZLIB && (!x->z_end || x->out != (uint64_t)x->b->size))
		return HTC_EPROTO;
	if (sha256_ctx_final(x->sha, x->hex) < 0)
		return -EIO;
	if (strcmp(x->hex, x->want) != 0)
		return HTC_ECORRUPT;
	const char *obj = x->b->target.kind == WQ_TARGET_OBJECT ? x->b->target.object : NULL;
	if (obj && obj[0] == 'F' && strcmp(obj + 2, x->hex) != 0)
		return HTC_ECORRUPT;
	if (x->sink)
		return x->sink_ops->finish_file(x->sink, x->hex, x->want);
	if (x->fsync && fsync(x->fd) < 0)
		return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -errno;
	int r = close(x->fd);
	x->fd = -1;
	if (r < 0)
		return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -errno;
	if (x->tmp_path && x->final_path && rename(x->tmp_path, x->final_path) < 0)
		return -errno;
	x->cleaned = true;
	return 0;
}

static void x_work(uv_work_t *w)
{
	struct in_xfer *x = w->data;
	for (struct chunk *c = x->batch; c; c = c->next)
		if (x->result == 0 && x->end != END_ABORT)
			x->result = x_consume(x, c->data, c->len);
	if (x->result == 0 && x->end_in_batch && x->end == END_FINISH)
		x->result = x_finish(x);
	if (x->result < 0 || (x->end_in_batch && x->end == END_ABORT))
		x_cleanup(x);
}

/* A batch in the middle of a plain transfer is written by this work while x_hash_work hashes
 * it in another thread: the two run side by side on the same (read-only) chunks. */
static void x_write_work(uv_work_t *w)
{
	struct in_xfer *x = w->data;
	for (struct chunk *c = x->batch; c && x->result == 0; c = c->next)
		x->result = x_store(x, c->data, c->len, false);
	if (x->result < 0)
		x_cleanup(x);
}

static void x_hash_work(uv_work_t *w)
{
	struct in_xfer *x = w->data;
	for (struct chunk *c = x->batch; c && x->hresult == 0; c = c->next)
		if (sha256_ctx_update(x->sha, c->data, c->len) < 0)
			x->hresult = -EIO;
}

/* ---- loop side of a file ----------------------------------------------------------------------
 */

static void x_free(struct in_xfer *x)
{
	struct wq_xfer_in *i = x->in;
	HASH_DEL(i->xfers, x);
	if (!x->closed && i->nopen > 0)
		i->nopen--;
	i->pending -= x->pending_bytes;
	chunks_put(i, x->pending);
	if (x->fd >= 0)
		close(x->fd);
	sha256_ctx_delete(x->sha);
	if (x->z_init)
		inflateEnd(&x->z);
	free(x->zbuf);
	free(x->tmp_path);
	free(x->final_path);
	free(x->reason);
	wq_xfer_begin_free(x->b);
	free(x);
	i->live--;
}

/* The transfer is over for good: tell the owner (or its directory) and free it. */
void wq_xr_x_done(struct in_xfer *x, int status, const char *text)
{
	struct wq_xfer_in *i = x->in;
	struct in_dir *d = x->dir;
	if (d) {
		if (status == 0 && !d->failed) {
			wq_listing_add_file(d->listing, x->b->target.member, x->b->exec,
			                    (uint64_t)x->b->size, x->hex);
		} else if (!d->failed) {
			d->failed = true;
			d->fail_status = status;
			d->fail_code = wq_xr_code_of(status);
			d->fail_text = xasprintf("member %s: %s", x->b->target.member, text);
		}
		d->members--;
	} else if (!x->refused && i->cb.recv_end && (!i->deleted || x->sink)) {
		struct wq_xfer_incoming in = {
		    .id = x->id,
		    .target = &x->b->target,
		    .size = x->b->size,
		    .exec = x->b->exec,
		    .enc = x->b->enc,
		    .sha256 = status == 0 ? x->hex : NULL,
		    .tmp_path = x->tmp_path,
		    .sink = x->sink,
		    .tag = x->tag,
		};
		i->cb.recv_end(i, &in, status, text, i->user);
	}
	x_free(x);
	if (d)
		wq_xr_dir_maybe_finish(d);
	wq_xr_maybe_free_in(i);
}

static void x_after(uv_work_t *w, int status)
{
	(void)status;
	struct in_xfer *x = w->data;
	struct wq_xfer_in *i = x->in;
	i->busy--;
	if (--x->nwork > 0)
		return; /* the other half of the batch is still running */
	x->busy = false;
	if (x->hresult < 0 && x->result == 0) {
		x->result = x->hresult;
		x_cleanup(x); /* blocking, but only after a failure of the hash itself */
	}
	i->pending -= x->batch_bytes;
	chunks_put(i, x->batch);
	x->batch = NULL;
	x->batch_bytes = 0;
	update_backpressure(i);
	if (x->end_in_batch)
		x->end_done = true;
	if (i->deleted) {
		if (x->end_done) {
			bool ok = x->end == END_FINISH && x->result == 0;
			wq_xr_x_done(x, ok ? 0 : -ECANCELED, "connection closed");
		} else {
			x->end = END_ABORT;
			wq_xr_x_kick(x);
		}
		return;
	}
	if (x->result < 0 && !x->result_seen) {
		x->result_seen = true;
		if (x->result == HTC_EPROTO) {
			wq_xr_violation(
			    i, "transfer %u: compressed data does not match its declared size",
			    x->id);
			wq_xr_x_done(x, HTC_EPROTO,
			             "compressed data does not match its declared size");
			return;
		}
		if (x->result == HTC_ECORRUPT) {
			wq_xr_send_xfer_error(i, x->id, WQ_XERR_CORRUPT,
			                      "content does not match its SHA-256");
			wq_xr_x_done(x, HTC_ECORRUPT, "content does not match its SHA-256");
			return;
		}
		char *t = xasprintf("%s: %s", x->tmp_path ? x->tmp_path : "write",
		                    htc_strerror(x->result));
		wq_xr_send_xfer_error(i, x->id, wq_xr_code_of(x->result), t);
		x->failed = true;
		if (x->closed) {
			wq_xr_x_done(x, x->result, t);
		} else {
			chunks_put(i, x->pending);
			i->pending -= x->pending_bytes;
			x->pending = x->pending_last = NULL;
			x->pending_bytes = 0;
			update_backpressure(i);
		}
		free(t);
		return;
	}
	if (x->failed) {
		if (x->closed)
			wq_xr_x_done(x, x->result, htc_strerror(x->result));
		return;
	}
	if (x->end_done) {
		if (x->end == END_ABORT)
			wq_xr_x_done(x, -ECANCELED, x->reason ? x->reason : "aborted");
		else if (x->result < 0)
			wq_xr_x_done(x, x->result, htc_strerror(x->result));
		else
			wq_xr_x_done(x, 0, "");
		return;
	}
	wq_xr_x_kick(x);
}

static void x_queue(struct in_xfer *x, uv_work_t *w, uv_work_cb fn)
{
	w->data = x;
	if (uv_queue_work(x->in->loop, w, fn, x_after) < 0) {
		fn(w);
		x_after(w, 0);
	}
}

void wq_xr_x_kick(struct in_xfer *x)
{
	struct wq_xfer_in *i = x->in;
	if (x->busy || x->end_done)
		return;
	if (!x->pending && x->end == END_NONE)
		return;
	x->batch = x->pending;
	x->batch_bytes = x->pending_bytes;
	x->pending = x->pending_last = NULL;
	x->pending_bytes = 0;
	x->end_in_batch = x->end != END_NONE;
	x->busy = true;
	/* plain data before the end: hash and write side by side; otherwise one work in order */
	bool split = x->b->enc == WQ_ENC_NONE && !x->end_in_batch && x->result == 0 &&
	             x->batch_bytes >= RECV_SPLIT_MIN;
	x->nwork = split ? 2 : 1;
	i->busy += (size_t)x->nwork;
	if (split)
		x_queue(x, &x->hwork, x_hash_work);
	x_queue(x, &x->work, split ? x_write_work : x_work);
}

/* ---- file messages ------------------------------------------------------------------------- */

static void on_xfer_begin(struct wq_xfer_in *i, json_t *msg)
{
	struct wq_xfer_begin *b = NULL;
	char *why = NULL;
	int r =
	    wq_msg_xfer_begin_parse(msg, i->is_master ? WQ_DIR_W2M : WQ_DIR_M2W, i->caps, &b, &why);
	if (r == HTC_EPROTO || !b) {
		wq_xr_violation(i, "%s", why ? why : "malformed xfer_begin");
		free(why);
		return;
	}
	struct in_dir *d = NULL;
	if (wq_xr_check_id(i, b->xfer) < 0)
		goto fail;
	if (i->nopen >= WQ_XFER_MAX_OPEN) {
		wq_xr_violation(i, "more than %d open transfers", WQ_XFER_MAX_OPEN);
		goto fail;
	}
	if (b->target.kind == WQ_TARGET_MEMBER) {
		uint32_t key = (uint32_t)b->target.dir;
		HASH_FIND(hh, i->dirs, &key, sizeof key, d);
		if (!d || d->closed) {
			wq_xr_violation(i, "transfer %u: directory %u is not open",
			                (uint32_t)b->xfer, key);
			goto fail;
		}
		if (r == HTC_EPARSE && i->is_master) {
			wq_xr_violation(i, "%s", why);
			goto fail;
		}
		if (r == 0 && !d->refused && !d->failed &&
		    wq_xr_member_check(d, b->target.member) < 0)
			goto fail;
	}
	struct in_xfer *x = xcalloc(1, sizeof *x);
	x->id = (uint32_t)b->xfer;
	x->in = i;
	x->b = b;
	x->fd = -1;
	x->dir = d;
	HASH_ADD(hh, i->xfers, id, sizeof x->id, x);
	i->nopen++;
	i->live++;
	if (d) {
		d->members++;
		if (d->refused || d->failed) {
			x->refused = true; /* discarded with its directory, silently */
		} else if (r == HTC_EPARSE) {
			wq_xr_send_xfer_error(i, x->id, WQ_XERR_BAD_NAME, why);
			x->refused = true;
			wq_xr_dir_fail(d, HTC_EPARSE, WQ_XERR_BAD_NAME, why, false);
		} else if (i->member_check) {
			struct wq_xfer_refusal rf = {.code = WQ_XERR_IO};
			snprintf(rf.text, sizeof rf.text, "refused");
			if (i->member_check(i, d->tag, d->dirfd, b->size, &rf, i->user) != 0) {
				char *t = xasprintf("%s: %s", b->target.member, rf.text);
				wq_xr_send_xfer_error(i, x->id, rf.code, t);
				x->refused = true;
				wq_xr_dir_fail(d, -ENOSPC, rf.code, t, false);
				free(t);
			}
		}
		if (!x->refused) {
			int fd = create_beneath(d->dirfd, b->target.member, b->exec);
			if (fd < 0) {
				char *t = xasprintf("%s: %s", b->target.member, htc_strerror(fd));
				wq_xr_send_xfer_error(i, x->id, wq_xr_code_of(fd), t);
				x->refused = true;
				wq_xr_dir_fail(d, fd, wq_xr_code_of(fd), t, false);
				free(t);
			}
			x->fd = fd;
		}
	} else {
		struct wq_xfer_dest dest = {.fd = -1, .dirfd = -1};
		struct wq_xfer_refusal rf = {.code = WQ_XERR_IO};
		struct wq_xfer_incoming in = {.id = x->id,
		                              .target = &b->target,
		                              .size = b->size,
		                              .exec = b->exec,
		                              .enc = b->enc};
		snprintf(rf.text, sizeof rf.text, "no destination for transfers");
		if (!i->cb.recv_begin || i->cb.recv_begin(i, &in, &dest, &rf, i->user) != 0) {
			wq_xr_send_xfer_error(i, x->id, rf.code, rf.text);
			x->refused = true;
		} else {
			x->tag = dest.tag;
			x->sink = dest.sink;
			x->sink_ops = dest.sink_ops;
			x->fsync = dest.fsync;
			x->fd = dest.fd;
			x->tmp_path = dest.tmp_path ? xstrdup(dest.tmp_path) : NULL;
			x->final_path = dest.final_path ? xstrdup(dest.final_path) : NULL;
			if (!x->sink && x->fd < 0 && x->tmp_path) {
				mode_t mode = b->exec ? 0755 : 0644;
				x->fd = open(x->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				             mode);
				if (x->fd >= 0)
					fchmod(x->fd, mode);
			}
			if (!x->sink && x->fd < 0) {
				int e = x->tmp_path ? (errno == EDQUOT ? ENOSPC : errno) : EINVAL;
				char *t =
				    xasprintf("%s: %s", x->tmp_path ? x->tmp_path : "destination",
				              strerror(e));
				wq_xr_send_xfer_error(i, x->id, wq_xr_code_of(-e), t);
				x->failed = true;
				x->result = -e;
				x->result_seen = true;
				x->cleaned = true;
				free(t);
			}
		}
	}
	free(why);
	if (x->refused || x->failed)
		return;
	x->sha = sha256_ctx_create();
	if (b->enc == WQ_ENC_ZLIB) {
		memset(&x->z, 0, sizeof x->z);
		x->z_init = inflateInit(&x->z) == Z_OK;
	}
	if (!x->sha || (b->enc == WQ_ENC_ZLIB && !x->z_init)) {
		wq_xr_send_xfer_error(i, x->id, WQ_XERR_IO, "out of memory");
		x->failed = true;
		x->result = -ENOMEM;
		x->result_seen = true;
		x_cleanup(x); /* blocking, but only on this rare path */
	}
	debug(D_WQ, "%s: receiving transfer %u: %lld bytes%s", wq_conn_name(i->c), x->id,
	      (long long)b->size, b->enc == WQ_ENC_ZLIB ? ", zlib" : "");
	return;
fail:
	free(why);
	wq_xfer_begin_free(b);
}

static void on_xfer_end(struct wq_xfer_in *i, json_t *msg, bool abort)
{
	struct wq_xfer_end *e = NULL;
	char *why = NULL;
	int r =
	    abort ? wq_msg_xfer_abort_parse(msg, &e, &why) : wq_msg_xfer_end_parse(msg, &e, &why);
	if (r < 0) {
		wq_xr_violation(i, "%s", why);
		free(why);
		return;
	}
	uint32_t id = (uint32_t)e->xfer;
	struct in_xfer *x = NULL;
	HASH_FIND(hh, i->xfers, &id, sizeof id, x);
	if (!x || x->closed) {
		wq_xr_violation(i, "message \"%s\" for transfer %u which is not open",
		                abort ? "xfer_abort" : "xfer_end", id);
		goto out;
	}
	if (x->refused) {
		x->closed = true;
		i->nopen--;
		wq_xr_x_done(x, -ECANCELED, "refused");
		goto out;
	}
	if (x->failed) {
		x->closed = true;
		i->nopen--;
		if (!x->busy)
			wq_xr_x_done(x, x->result, htc_strerror(x->result));
		goto out;
	}
	if (!abort && x->b->enc == WQ_ENC_NONE && x->raw < (uint64_t)x->b->size) {
		wq_xr_violation(i, "transfer %u: ended after %llu of its declared %lld bytes", id,
		                (unsigned long long)x->raw, (long long)x->b->size);
		goto out;
	}
	x->closed = true;
	i->nopen--;
	if (abort) {
		x->end = END_ABORT;
		x->reason = xstrdup(e->reason);
	} else {
		x->end = END_FINISH;
		memcpy(x->want, e->sha256, SHA256_HEX_SIZE);
	}
	wq_xr_x_kick(x);
out:
	wq_xfer_end_free(e);
}

/* ---- public entry points -----------------------------------------------------------------------
 */

struct wq_xfer_in *wq_xfer_in_create(uv_loop_t *loop, struct wq_conn *c, bool is_master,
                                     unsigned caps, const struct wq_xfer_in_callbacks *cb,
                                     void *user)
{
	struct wq_xfer_in *i = xcalloc(1, sizeof *i);
	i->loop = loop;
	i->c = c;
	i->is_master = is_master;
	i->caps = caps;
	if (cb)
		i->cb = *cb;
	i->user = user;
	if (c)
		wq_conn_set_data_pieces(c, true); /* DATA bytes are appended to chunks anyway */
	return i;
}

void wq_xfer_in_set_member_check(struct wq_xfer_in *i, wq_xfer_member_fn *fn)
{
	if (i)
		i->member_check = fn;
}

void wq_xfer_in_delete(struct wq_xfer_in *i)
{
	if (!i)
		return;
	i->deleted = true;
	/* Held busy while its transfers end: the last one to finish (a refused transfer ends
	 * right here) would otherwise free I in the middle of these loops. */
	i->busy++;
	struct in_dir *d, *dtmp;
	HASH_ITER(hh, i->dirs, d, dtmp)
	{
		d->end = true;
		if (!d->failed)
			d->aborted = true;
	}
	struct in_xfer *x, *tmp;
	HASH_ITER(hh, i->xfers, x, tmp)
	{
		if (x->busy)
			continue;
		if (x->refused) {
			wq_xr_x_done(x, -ECANCELED, "connection closed");
			continue;
		}
		x->end = END_ABORT;
		wq_xr_x_kick(x);
	}
	HASH_ITER(hh, i->dirs, d, dtmp)
	{
		wq_xr_dir_maybe_finish(d);
	}
	i->busy--;
	wq_xr_maybe_free_in(i);
}

int wq_xfer_in_message_id(struct wq_xfer_in *i, json_t *msg, enum wq_msg_id id)
{
	switch (id) {
	case WQ_MSG_XFER_BEGIN:
	case WQ_MSG_XFER_END:
	case WQ_MSG_XFER_ABORT:
	case WQ_MSG_DIR_BEGIN:
	case WQ_MSG_DIR_MKDIR:
	case WQ_MSG_DIR_END:
	case WQ_MSG_DIR_ABORT: break;
	default: return 0;
	}
	if (i->dead || i->deleted)
		return 1;
	switch (id) {
	case WQ_MSG_XFER_BEGIN: on_xfer_begin(i, msg); break;
	case WQ_MSG_XFER_END:
	case WQ_MSG_XFER_ABORT: on_xfer_end(i, msg, id == WQ_MSG_XFER_ABORT); break;
	case WQ_MSG_DIR_BEGIN: wq_xr_on_dir_begin(i, msg); break;
	case WQ_MSG_DIR_MKDIR: wq_xr_on_dir_mkdir(i, msg); break;
	default: wq_xr_on_dir_end(i, msg, id == WQ_MSG_DIR_ABORT); break;
	}
	return 1;
}

int wq_xfer_in_message(struct wq_xfer_in *i, json_t *msg, const char *name)
{
	return wq_xfer_in_message_id(i, msg, wq_msg_lookup(name));
}

void wq_xfer_in_data(struct wq_xfer_in *i, uint32_t xfer, const uint8_t *bytes, size_t len)
{
	if (i->dead || i->deleted || len == 0)
		return;
	struct in_xfer *x = NULL;
	HASH_FIND(hh, i->xfers, &xfer, sizeof xfer, x);
	if (!x || x->closed) {
		wq_xr_violation(i, "data for transfer %u which is not open", xfer);
		return;
	}
	if (x->refused || x->failed)
		return;
	x->raw += len;
	uint64_t size = (uint64_t)x->b->size;
	if (x->b->enc == WQ_ENC_NONE && x->raw > size) {
		wq_xr_violation(i, "transfer %u: more data than its declared %llu bytes", xfer,
		                (unsigned long long)size);
		return;
	}
	if (x->b->enc == WQ_ENC_ZLIB && x->raw > size + size / 16 + 1024) {
		wq_xr_violation(i, "transfer %u: compressed data does not match its declared size",
		                xfer);
		return;
	}
	struct chunk *c = x->pending_last;
	if (!c || c->cap - c->len < len) {
		/* a chunk sized for what remains of a small plain transfer, else a full one */
		size_t want = RECV_CHUNK_CAP;
		if (x->b->enc == WQ_ENC_NONE && size - (x->raw - len) < want)
			want = (size_t)(size - (x->raw - len));
		c = chunk_get(i, want);
		if (x->pending_last)
			x->pending_last->next = c;
		else
			x->pending = c;
		x->pending_last = c;
	}
	memcpy(c->data + c->len, bytes, len);
	c->len += len;
	x->pending_bytes += len;
	i->pending += len;
	update_backpressure(i);
	wq_xr_x_kick(x);
}

size_t wq_xfer_in_pending_bytes(const struct wq_xfer_in *i)
{
	return i->pending;
}

size_t wq_xfer_in_pending_peak(const struct wq_xfer_in *i)
{
	return i->peak;
}

size_t wq_xfer_in_open(const struct wq_xfer_in *i)
{
	return i->nopen;
}
