/* wq_xfer_send.c: the sending half of the Work Queue transfer engine (doc/work-queue-protocol.md
 * section 5.4): files, buffers and directory trees become xfer_begin / DATA / xfer_end and dir_*
 * messages, at most 4 open at once. A send is known to its caller by a handle given when it is
 * queued; its id on the wire is given when it begins, so that ids rise in the order the peer sees
 * them even though a directory's members, known only once it begins, go before what was queued
 * after it. Reading, hashing and deflating happen in libuv
 * worker threads, one chunk per transfer at a time, paused while the write queue is too long. */
#include "wq_xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utlist.h>
#include <zlib.h>

#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "path.h"
#include "wq_frame.h"
#include "wq_listing.h"
#include "wq_name.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* Plain file data is read straight into zero-copy DATA buffers of the connection, up to this many
 * 256 KiB chunks per trip to a worker thread; the next trip starts before these are sent. */
#define SEND_BATCH 4

enum item_kind { ITEM_FILE, ITEM_DIR };

enum item_state {
	ST_NEW,      /* not prepared yet */
	ST_PREP,     /* opening / walking / trying compression in a thread */
	ST_READY,    /* may begin when its turn comes */
	ST_OPEN,     /* xfer_begin (dir_begin) sent */
	ST_FINISHED, /* completed; waiting for its work to return before being freed */
};

struct item {
	struct item *prev, *next; /* in waiting or open */
	struct wq_xfer_out *o;
	enum item_kind kind;
	enum item_state state;
	uint32_t id;     /* on the wire: 0 until it begins */
	uint32_t handle; /* the caller's, given when queued */
	void *tag;
	bool reported; /* its sent callback was called */
	json_t *target;
	int flags;
	char *path;
	int fd;
	uint8_t *buf; /* buffer source (owned), or NULL */
	size_t buflen;
	bool is_buffer;
	int64_t size;
	bool exec;
	bool zlib;
	struct item *dir; /* member of this directory */
	char *member;     /* member path */
	/* thread state */
	bool busy;
	uv_work_t work;
	uint64_t offset; /* uncompressed bytes consumed */
	uint64_t base;   /* file position of the first byte sent (range sends) */
	uint64_t wire;
	struct sha256_ctx *sha;
	z_stream z;
	bool z_init;
	uint8_t *rbuf;        /* read buffer, WQ_XFER_CHUNK */
	const uint8_t *chunk; /* the chunk read last (rbuf or inside buf) */
	size_t chunk_len;
	uint8_t *bufs[SEND_BATCH]; /* plain file chunks read by the last work (wq_conn buffers) */
	size_t blen[SEND_BATCH];
	size_t nbufs;
	uint8_t *out; /* bytes to send as DATA after the work */
	size_t out_len, out_cap;
	int err;         /* work result: 0 or -errno / HTC_* */
	char *err_text;  /* reason of a failure (xfer_abort or FAILED) */
	bool short_read; /* the file ended before SIZE */
	bool refused;    /* xfer_error received while busy */
	enum wq_xfer_error_code refuse_code;
	char *refuse_text;
	bool cancel;     /* directory failed: abort at the next step */
	bool named_hash; /* an F- object: hex is its name, the content is not hashed here */
	bool fd_given;   /* the caller opened the file (the worker's outputs, in its sandbox) */
	char hex[SHA256_HEX_SIZE];
	/* directories */
	struct wq_listing *walk; /* from the thread */
	struct wq_listing *sent; /* what was sent, for dir_end */
	size_t members_left;     /* member files not yet finished */
	size_t entries;
	uint64_t dir_bytes;
	bool dir_failed;
	enum wq_xfer_outcome dir_outcome;
	enum wq_xfer_error_code dir_code;
	char *dir_text;
};

struct wq_xfer_out {
	uv_loop_t *loop;
	struct wq_conn *c;
	bool zlib_ok;
	struct wq_xfer_out_callbacks cb;
	void *user;
	uint32_t last_id;     /* the last id used on the wire */
	uint32_t last_handle; /* the last handle given */
	struct item *waiting; /* not yet begun: the open directory's members, then queue order */
	struct item *open;    /* begun files and directories */
	size_t nopen_files, nopen_dirs;
	size_t busy;  /* items with work in a thread */
	size_t guard; /* synchronous sections that may call back: delete is deferred to their end */
	bool deleted, dead;
	bool pumping, repump;
};

static void pump(struct wq_xfer_out *o);
static void start_work(struct wq_xfer_out *o, struct item *it, uv_work_cb fn);

/* The code passed when a transfer was not refused (it is then meaningless). */
#define NOCODE WQ_XERR_IO

/* ---- small helpers ----------------------------------------------------------------------- */

json_t *wq_xfer_target_object(const char *name, enum wq_keep keep)
{
	return json_pack("{s:s, s:s}", "object", name, "keep",
	                 keep == WQ_KEEP_WORKER ? "worker" : "run");
}

json_t *wq_xfer_target_input(int64_t task, int64_t index)
{
	return json_pack("{s:I, s:I}", "task", (json_int_t)task, "input", (json_int_t)index);
}

json_t *wq_xfer_target_output(int64_t task, int64_t index)
{
	return json_pack("{s:I, s:I}", "task", (json_int_t)task, "output", (json_int_t)index);
}

json_t *wq_xfer_target_stdout(int64_t task)
{
	return json_pack("{s:I, s:b}", "task", (json_int_t)task, "stdout", 1);
}

bool wq_xfer_compressed_name(const char *path)
{
	static const char *const exts[] = {".gz",  ".bz2", ".xz",  ".zst", ".zip",
	                                   ".tgz", ".bam", ".jpg", ".png", NULL};
	if (!path)
		return false;
	size_t n = strlen(path);
	for (int i = 0; exts[i]; i++) {
		size_t e = strlen(exts[i]);
		if (n >= e && strcasecmp(path + n - e, exts[i]) == 0)
			return true;
	}
	return false;
}

static void drop_bufs(struct item *it)
{
	for (size_t k = 0; k < it->nbufs; k++)
		wq_conn_data_buffer_free(it->bufs[k]);
	it->nbufs = 0;
}

static void item_free(struct item *it)
{
	if (!it)
		return;
	drop_bufs(it);
	json_decref(it->target);
	free(it->path);
	if (it->fd >= 0)
		close(it->fd);
	free(it->buf);
	free(it->member);
	sha256_ctx_delete(it->sha);
	if (it->z_init)
		deflateEnd(&it->z);
	free(it->rbuf);
	free(it->out);
	free(it->err_text);
	free(it->refuse_text);
	wq_listing_delete(it->walk);
	wq_listing_delete(it->sent);
	free(it->dir_text);
	free(it);
}

static void maybe_free_out(struct wq_xfer_out *o)
{
	if (o->deleted && o->busy == 0 && o->guard == 0)
		free(o);
}

static void drop_items(struct wq_xfer_out *o);

/* A section that may call the user back, who may delete O: O and its items stay allocated
 * until the section ends. */
static void hold(struct wq_xfer_out *o)
{
	o->guard++;
}

static void release(struct wq_xfer_out *o)
{
	if (--o->guard > 0 || !o->deleted)
		return;
	drop_items(o);
	maybe_free_out(o);
}

/* Sends MSG (a new reference, consumed). On a send failure the sender stops for good. */
static int send_msg(struct wq_xfer_out *o, json_t *msg)
{
	if (!msg)
		return -ENOMEM;
	int r = o->dead ? -ENOTCONN : wq_conn_send_msg(o->c, msg);
	json_decref(msg);
	if (r < 0 && !o->dead) {
		debug(D_WQ, "%s: transfer sender stops: %s", wq_conn_name(o->c), htc_strerror(r));
		o->dead = true;
	}
	return r;
}

static void report(struct wq_xfer_out *o, struct item *it, enum wq_xfer_outcome outcome,
                   enum wq_xfer_error_code code, const char *text)
{
	if (o->deleted || !o->cb.sent)
		return;
	it->reported = true;
	struct wq_xfer_sent r = {
	    .id = it->id,
	    .handle = it->handle,
	    .tag = it->tag,
	    .is_dir = it->kind == ITEM_DIR,
	    .outcome = outcome,
	    .code = code,
	    .text = text ? text : "",
	    .bytes = it->kind == ITEM_DIR ? it->dir_bytes : (uint64_t)(it->size > 0 ? it->size : 0),
	    .wire_bytes = it->wire,
	    .zlib = it->zlib,
	    .sha256 = outcome == WQ_XFER_SENT ? it->hex : NULL,
	    .entries = it->entries,
	};
	o->cb.sent(o, &r, o->user);
}

/* ---- queueing --------------------------------------------------------------------------- */

static struct item *item_new(struct wq_xfer_out *o, enum item_kind kind, json_t *target, int flags,
                             void *tag)
{
	struct item *it = xcalloc(1, sizeof *it);
	it->o = o;
	it->kind = kind;
	it->handle = ++o->last_handle;
	it->tag = tag;
	it->target = json_incref(target);
	it->flags = flags;
	it->fd = -1;
	it->size = -1;
	it->exec = (flags & WQ_XFER_EXEC) != 0;
	DL_APPEND(o->waiting, it);
	return it;
}

static int send_file_at(struct wq_xfer_out *o, const char *path, int fd, int64_t start,
                        int64_t size, json_t *target, int flags, void *tag, uint32_t *id)
{
	if (!o || (!path && fd < 0) || !json_is_object(target) || o->last_handle == UINT32_MAX)
		return -EINVAL;
	struct item *it = item_new(o, ITEM_FILE, target, flags, tag);
	it->base = (uint64_t)start;
	it->path = path ? xstrdup(path) : NULL;
	it->fd = path ? -1 : fd;
	it->fd_given = !path;
	it->size = size;
	/* An F- object is named by the SHA-256 of its content, and the receiver checks every byte
	 * against the name (section 5.4): hashing here as well could only produce the same verdict
	 * (a file changed since it was named fails the name check either way), so xfer_end
	 * carries the name's hash and the sender spends no CPU on it. */
	const char *obj = json_string_value(json_object_get(target, "object"));
	if (obj && obj[0] == 'F' && wq_name_is_object(obj)) {
		it->named_hash = true;
		memcpy(it->hex, obj + 2, SHA256_HEX_SIZE);
	}
	if (id)
		*id = it->handle;
	pump(o);
	return 0;
}

int wq_xfer_send_file(struct wq_xfer_out *o, const char *path, int fd, int64_t size, json_t *target,
                      int flags, void *tag, uint32_t *id)
{
	return send_file_at(o, path, fd, 0, size, target, flags, tag, id);
}

int wq_xfer_send_file_range(struct wq_xfer_out *o, int fd, int64_t start, int64_t size,
                            json_t *target, int flags, void *tag, uint32_t *id)
{
	if (fd < 0 || start < 0 || size < 0)
		return -EINVAL;
	return send_file_at(o, NULL, fd, start, size, target, flags, tag, id);
}

int wq_xfer_send_buffer(struct wq_xfer_out *o, const void *buf, size_t len, json_t *target,
                        int flags, void *tag, uint32_t *id)
{
	if (!o || (!buf && len) || !json_is_object(target) || len > (size_t)WQ_MAX_ID ||
	    o->last_handle == UINT32_MAX)
		return -EINVAL;
	struct item *it = item_new(o, ITEM_FILE, target, flags, tag);
	it->is_buffer = true;
	it->buf = xmalloc(len ? len : 1);
	if (len)
		memcpy(it->buf, buf, len);
	it->buflen = len;
	it->size = (int64_t)len;
	if (id)
		*id = it->handle;
	pump(o);
	return 0;
}

int wq_xfer_send_dir(struct wq_xfer_out *o, const char *path, json_t *target, int flags, void *tag,
                     uint32_t *id)
{
	if (!o || !path || !json_is_object(target) || o->last_handle == UINT32_MAX)
		return -EINVAL;
	struct item *it = item_new(o, ITEM_DIR, target, flags, tag);
	it->path = xstrdup(path);
	if (id)
		*id = it->handle;
	pump(o);
	return 0;
}

size_t wq_xfer_out_pending(const struct wq_xfer_out *o)
{
	size_t n = 0;
	const struct item *it;
	DL_FOREACH(o->waiting, it) n++;
	DL_FOREACH(o->open, it) n++;
	return n;
}

/* ---- work in threads ----------------------------------------------------------------------- */

/* Appends the deflate output of LEN bytes at DATA (FINISH on the last ones) to IT->out. */
static int deflate_chunk(struct item *it, const uint8_t *data, size_t len, int flush)
{
	bool finish = flush == Z_FINISH;
	it->z.next_in = (Bytef *)data;
	it->z.avail_in = (uInt)len;
	for (;;) {
		(void)VEC_RESERVE_MAX(it->out, it->out_cap, it->out_len + 65536,
		                      WQ_XFER_CHUNK + 65536, SIZE_MAX);
		it->z.next_out = it->out + it->out_len;
		it->z.avail_out = (uInt)(it->out_cap - it->out_len);
		int zr = deflate(&it->z, flush);
		it->out_len = it->out_cap - it->z.avail_out;
		if (zr == Z_STREAM_END)
			return 0;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return -EIO;
		if (!finish && it->z.avail_in == 0 && it->z.avail_out > 0)
			return 0;
	}
}

/* Reads the next chunk of a file into IT->rbuf (or points into the buffer) and hashes it. Sets
 * *DATA and *LEN. */
static int read_chunk(struct item *it, const uint8_t **data, size_t *len)
{
	uint64_t want = (uint64_t)it->size - it->offset;
	if (want > WQ_XFER_CHUNK)
		want = WQ_XFER_CHUNK;
	if (it->is_buffer) {
		*data = it->buf + it->offset;
		*len = (size_t)want;
	} else {
		if (!it->rbuf)
			it->rbuf = xmalloc(WQ_XFER_CHUNK);
		ssize_t r =
		    full_pread(it->fd, it->rbuf, (size_t)want, (off_t)(it->base + it->offset));
		if (r < 0)
			return (int)r;
		size_t got = (size_t)r;
		if (got < want) {
			it->short_read = true;
			return 0;
		}
		*data = it->rbuf;
		*len = got;
	}
	if (!it->named_hash && sha256_ctx_update(it->sha, *data, *len) < 0)
		return -EIO;
	it->offset += *len;
	it->chunk = *data;
	it->chunk_len = *len;
	return 0;
}

/* Preparation of a file: open, size, and the compression decision on the first chunk. */
static void prep_file(struct item *it)
{
	if (!it->is_buffer && it->fd < 0) {
		int fl = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
		if (it->dir && !(it->dir->flags & WQ_XFER_FOLLOW_LINKS))
			fl |= O_NOFOLLOW;
		it->fd = open(it->path, fl);
		if (it->fd < 0) {
			it->err = -errno;
			it->err_text = xasprintf("%s: %s", it->path, strerror(errno));
			return;
		}
	}
	if (!it->is_buffer) {
		struct stat st;
		if (fstat(it->fd, &st) < 0) {
			it->err = -errno;
			it->err_text =
			    xasprintf("%s: %s", it->path ? it->path : "fd", strerror(errno));
			return;
		}
		if (!S_ISREG(st.st_mode)) {
			it->err = -EINVAL;
			it->err_text =
			    xasprintf("is not a regular file: %s", it->path ? it->path : "fd");
			return;
		}
		if (it->size < 0)
			it->size = st.st_size;
	}
	it->sha = sha256_ctx_create();
	if (!it->sha) {
		it->err = -ENOMEM;
		it->err_text = xstrdup("cannot create a SHA-256 context");
		return;
	}
	bool want_zlib = (it->flags & WQ_XFER_ZLIB) && it->o->zlib_ok &&
	                 it->size >= WQ_XFER_ZLIB_MIN && !wq_xfer_compressed_name(it->path);
	if (!want_zlib)
		return;
	/* the first block decides: compress only if it shrinks */
	const uint8_t *data = NULL;
	size_t len = 0;
	int r = read_chunk(it, &data, &len);
	if (r < 0 || it->short_read) {
		it->err = r;
		return;
	}
	if (deflateInit(&it->z, 1) != Z_OK)
		return;
	it->z_init = true;
	bool last = it->offset == (uint64_t)it->size;
	if (deflate_chunk(it, data, len, last ? Z_FINISH : Z_SYNC_FLUSH) == 0 &&
	    it->out_len < len) {
		it->zlib = true;
		return;
	}
	deflateEnd(&it->z);
	it->z_init = false;
	/* send this first block plain */
	if (it->out_cap < len) {
		VEC_RESIZE(it->out, len);
		it->out_cap = len;
	}
	memcpy(it->out, data, len);
	it->out_len = len;
}

static void prep_dir(struct item *it)
{
	int fd = open(it->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	                            ((it->flags & WQ_XFER_FOLLOW_LINKS) ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		it->err = -errno;
		it->err_text = xasprintf("%s: %s", it->path, strerror(errno));
		return;
	}
	/* sizes only: the hashes of dir_end are those of what is actually sent. (wq_listing's
	 * NO_HASH walk does not follow links yet, so a following walk also hashes.) */
	int fl = (it->flags & WQ_XFER_FOLLOW_LINKS) ? WQ_LISTING_FOLLOW_LINKS : WQ_LISTING_NO_HASH;
	char *why = NULL;
	it->err = wq_listing_walk(fd, it->path, fl, &it->walk, &why);
	close(fd);
	if (it->err < 0)
		it->err_text = why ? why : xstrdup(htc_strerror(it->err));
	else
		free(why);
}

static void work_prep(uv_work_t *w)
{
	struct item *it = w->data;
	if (it->kind == ITEM_DIR)
		prep_dir(it);
	else
		prep_file(it);
}

/* Reads up to SEND_BATCH chunks of a plain file into DATA buffers and hashes them. */
static int read_bufs(struct item *it)
{
	while (it->nbufs < SEND_BATCH && it->offset < (uint64_t)it->size) {
		uint64_t want = (uint64_t)it->size - it->offset;
		if (want > WQ_XFER_CHUNK)
			want = WQ_XFER_CHUNK;
		uint8_t *b = wq_conn_data_buffer_new();
		it->bufs[it->nbufs++] = b;
		ssize_t r = full_pread(it->fd, b, (size_t)want, (off_t)(it->base + it->offset));
		if (r < 0)
			return (int)r;
		size_t got = (size_t)r;
		if (got < want) {
			it->short_read = true;
			return 0;
		}
		if (!it->named_hash && sha256_ctx_update(it->sha, b, got) < 0)
			return -EIO;
		it->blen[it->nbufs - 1] = got;
		it->offset += got;
	}
	return 0;
}

static void work_chunk(uv_work_t *w)
{
	struct item *it = w->data;
	const uint8_t *data = NULL;
	size_t len = 0;
	it->out_len = 0;
	it->chunk_len = 0;
	if (!it->zlib && !it->is_buffer) {
		int e = read_bufs(it);
		if (e < 0) {
			it->err = e;
			it->err_text = xasprintf("read error: %s", strerror(-e));
		}
		return;
	}
	int r = read_chunk(it, &data, &len);
	if (r < 0) {
		it->err = r;
		it->err_text = xasprintf("read error: %s", strerror(-r));
		return;
	}
	if (it->short_read)
		return;
	if (it->zlib) {
		if (deflate_chunk(it, data, len,
		                  it->offset == (uint64_t)it->size ? Z_FINISH : Z_NO_FLUSH) < 0) {
			it->err = -EIO;
			it->err_text = xstrdup("zlib compression failed");
		}
	}
	/* plain data is sent straight from the chunk (rbuf or the buffer) */
}

/* ---- completion --------------------------------------------------------------------------- */

static void dir_member_done(struct item *m, bool ok, const char *text);

static void finish_item(struct wq_xfer_out *o, struct item *it, enum wq_xfer_outcome outcome,
                        enum wq_xfer_error_code code, const char *text)
{
	if (it->state == ST_OPEN) {
		DL_DELETE(o->open, it);
		if (it->kind == ITEM_FILE)
			o->nopen_files--;
		else
			o->nopen_dirs--;
	} else if (it->state != ST_FINISHED) {
		DL_DELETE(o->waiting, it);
	}
	it->state = ST_FINISHED;
	if (it->fd >= 0) {
		close(it->fd);
		it->fd = -1;
	}
	if (it->dir)
		dir_member_done(it, outcome == WQ_XFER_SENT, text);
	else
		report(o, it, outcome, code, text);
	if (!it->busy)
		item_free(it);
}

static void send_abort(struct wq_xfer_out *o, uint32_t id, const char *reason, bool dir)
{
	size_t n = wq_msg_utf8_cut(reason, strlen(reason), WQ_TEXT_SEND_MAX);
	send_msg(o, json_pack("{s:s, s:I, s:s%}", "m", dir ? "dir_abort" : "xfer_abort",
	                      dir ? "dir" : "xfer", (json_int_t)id, "reason", reason, n));
}

/* A member of directory D has ended: fail D, or finish it when nothing is left. */
static void dir_check_end(struct wq_xfer_out *o, struct item *d);

static void dir_fail(struct wq_xfer_out *o, struct item *d, enum wq_xfer_outcome outcome,
                     enum wq_xfer_error_code code, const char *text)
{
	if (!d->dir_failed) {
		d->dir_failed = true;
		d->dir_outcome = outcome;
		d->dir_code = code;
		d->dir_text = xstrdup(text ? text : "");
	}
	/* members not begun yet are dropped; open ones abort at their next step */
	struct item *it, *tmp;
	DL_FOREACH_SAFE(o->waiting, it, tmp)
	{
		if (it->dir == d) {
			DL_DELETE(o->waiting, it);
			it->state = ST_FINISHED;
			d->members_left--;
			if (!it->busy)
				item_free(it);
		}
	}
	DL_FOREACH(o->open, it)
	{
		if (it->dir == d)
			it->cancel = true;
	}
}

static void dir_member_done(struct item *m, bool ok, const char *text)
{
	struct item *d = m->dir;
	struct wq_xfer_out *o = m->o;
	d->members_left--;
	if (ok) {
		d->dir_bytes += (uint64_t)m->size;
		wq_listing_add_file(d->sent, m->member, m->exec, (uint64_t)m->size, m->hex);
	} else if (!d->dir_failed) {
		enum wq_xfer_outcome oc = m->refused ? WQ_XFER_REFUSED : WQ_XFER_ABORTED;
		char *t = xasprintf("member %s: %s", m->member, text ? text : "failed");
		dir_fail(o, d, oc, m->refuse_code, t);
		free(t);
	}
	dir_check_end(o, d);
}

static void dir_check_end(struct wq_xfer_out *o, struct item *d)
{
	if (d->state != ST_OPEN || d->members_left > 0)
		return;
	if (d->dir_failed) {
		send_abort(o, d->id, d->dir_text, true);
		char *t = xstrdup(d->dir_text);
		finish_item(o, d, d->dir_outcome, d->dir_code, t);
		free(t);
		return;
	}
	if (wq_listing_hash(d->sent, d->hex) < 0) {
		send_abort(o, d->id, "cannot hash the listing", true);
		finish_item(o, d, WQ_XFER_ABORTED, NOCODE, "cannot hash the listing");
		return;
	}
	d->entries = wq_listing_count(d->sent);
	send_msg(o, json_pack("{s:s, s:I, s:I, s:s}", "m", "dir_end", "dir", (json_int_t)d->id,
	                      "entries", (json_int_t)d->entries, "listing", d->hex));
	finish_item(o, d, WQ_XFER_SENT, NOCODE, "");
}

/* Sends IT->out as DATA frames. */
static void send_out(struct wq_xfer_out *o, struct item *it, const uint8_t *data, size_t len)
{
	while (len > 0 && !o->dead) {
		size_t n = len > WQ_MAX_DATA ? WQ_MAX_DATA : len;
		int r = wq_conn_send_data(o->c, it->id, data, n);
		if (r < 0) {
			debug(D_WQ, "%s: transfer sender stops: %s", wq_conn_name(o->c),
			      htc_strerror(r));
			o->dead = true;
			return;
		}
		it->wire += n;
		data += n;
		len -= n;
	}
}

/* Sends the N buffers BUFS (LENS bytes each) as DATA frames; they are taken in every case. */
static void send_bufs(struct wq_xfer_out *o, struct item *it, uint8_t **bufs, const size_t *lens,
                      size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (o->dead) {
			wq_conn_data_buffer_free(bufs[k]);
			continue;
		}
		int r = wq_conn_send_data_buffer(o->c, it->id, bufs[k], lens[k]);
		if (r < 0) {
			debug(D_WQ, "%s: transfer sender stops: %s", wq_conn_name(o->c),
			      htc_strerror(r));
			o->dead = true;
			continue;
		}
		it->wire += lens[k];
	}
}

/* The plain chunks of IT just read, when more remain and nothing stands in the way: the next
 * read starts in a thread before these are handed to the socket, so reading and hashing overlap
 * with sending. Returns false when after_chunk must handle the item instead. */
static bool send_ahead(struct wq_xfer_out *o, struct item *it)
{
	if (!it->nbufs || it->refused || it->cancel || it->err < 0 || it->short_read ||
	    it->offset >= (uint64_t)it->size || o->dead || wq_conn_write_blocked(o->c))
		return false;
	uint8_t *bufs[SEND_BATCH];
	size_t lens[SEND_BATCH], n = it->nbufs, bytes = 0;
	for (size_t k = 0; k < n; k++)
		bytes += it->blen[k] + WQ_FRAME_HEADER_SIZE;
	/* the queue stays within WQ_CONN_QUEUE_HIGH plus one batch */
	if (wq_conn_write_queue_size(o->c) + bytes > WQ_CONN_QUEUE_HIGH)
		return false;
	memcpy(bufs, it->bufs, n * sizeof *bufs);
	memcpy(lens, it->blen, n * sizeof *lens);
	it->nbufs = 0;
	start_work(o, it, work_chunk);
	send_bufs(o, it, bufs, lens, n);
	return true;
}

/* After a chunk of an open transfer: send its bytes, then end or abort if it is over. */
static void after_chunk(struct wq_xfer_out *o, struct item *it, const uint8_t *plain,
                        size_t plain_len)
{
	if (it->refused || it->cancel || it->err < 0 || it->short_read)
		drop_bufs(it);
	if (it->refused) {
		send_abort(o, it->id, "refused by the receiver", false);
		finish_item(o, it, WQ_XFER_REFUSED, it->refuse_code, it->refuse_text);
		return;
	}
	if (it->cancel) {
		send_abort(o, it->id, "the directory transfer failed", false);
		finish_item(o, it, WQ_XFER_ABORTED, NOCODE, "directory failed");
		return;
	}
	if (it->err < 0 || it->short_read) {
		const char *why = it->err_text ? it->err_text : WQ_XFER_ABORT_CHANGED;
		char *t = xstrdup(why);
		send_abort(o, it->id, t, false);
		finish_item(o, it, WQ_XFER_ABORTED, NOCODE, t);
		free(t);
		return;
	}
	if (it->out_len)
		send_out(o, it, it->out, it->out_len);
	else if (it->nbufs)
		send_bufs(o, it, it->bufs, it->blen, it->nbufs);
	else if (plain_len)
		send_out(o, it, plain, plain_len);
	it->nbufs = 0;
	it->out_len = 0;
	if (it->offset == (uint64_t)it->size) {
		if (!it->named_hash && sha256_ctx_final(it->sha, it->hex) < 0) {
			send_abort(o, it->id, "cannot compute SHA-256", false);
			finish_item(o, it, WQ_XFER_ABORTED, NOCODE, "cannot compute SHA-256");
			return;
		}
		send_msg(o, json_pack("{s:s, s:I, s:s}", "m", "xfer_end", "xfer",
		                      (json_int_t)it->id, "sha256", it->hex));
		finish_item(o, it, WQ_XFER_SENT, NOCODE, "");
	}
}

static void after_work(uv_work_t *w, int status)
{
	struct item *it = w->data;
	struct wq_xfer_out *o = it->o;
	it->busy = false;
	o->busy--;
	if (o->deleted || it->state == ST_FINISHED) {
		if (it->state == ST_FINISHED || o->deleted)
			item_free(it);
		maybe_free_out(o);
		return;
	}
	if (status == UV_ECANCELED) {
		it->err = -ECANCELED;
		it->err_text = xstrdup("cancelled");
	}
	hold(o);
	if (it->state == ST_PREP) {
		it->state = ST_READY;
	} else if (it->state == ST_OPEN && !send_ahead(o, it)) {
		bool plain = !it->zlib && !it->short_read && it->err == 0;
		after_chunk(o, it, plain ? it->chunk : NULL, plain ? it->chunk_len : 0);
	}
	pump(o);
	release(o);
}

static void start_work(struct wq_xfer_out *o, struct item *it, uv_work_cb fn)
{
	it->busy = true;
	o->busy++;
	it->work.data = it;
	int r = uv_queue_work(o->loop, &it->work, fn, after_work);
	if (r < 0) {
		/* only for invalid arguments; run inline rather than stall */
		fn(&it->work);
		after_work(&it->work, 0);
	}
}

/* Whether FN for IT is cheap enough to run on the loop rather than in the thread pool, whose
 * round trip (a wakeup of a pool thread, then of the loop) costs more: preparing a descriptor
 * the caller opened is one fstat, and a whole plain file of at most INLINE_READ_MAX one pread of
 * a file the caller just checked. A path is opened and read in the pool (the master's inputs may
 * be on a network file system), and so is a file that may be compressed, whose first block is
 * read to decide. */
#define INLINE_READ_MAX (64 * 1024)
static bool cheap_work(const struct item *it, uv_work_cb fn)
{
	if (it->kind != ITEM_FILE || it->is_buffer || !it->fd_given)
		return false;
	if (fn == work_prep) {
		if (!(it->flags & WQ_XFER_ZLIB))
			return true;
		/* below WQ_XFER_ZLIB_MIN nothing is compressed, so nothing is read to decide */
		struct stat st;
		return fstat(it->fd, &st) == 0 && S_ISREG(st.st_mode) &&
		       st.st_size < WQ_XFER_ZLIB_MIN;
	}
	return fn == work_chunk && !it->zlib && it->offset == 0 && it->size >= 0 &&
	       it->size <= INLINE_READ_MAX;
}

/* start_work, or FN and its after_work at once when cheap_work says so (then true: the lists
 * may have changed). Not for send_ahead, whose read must follow the send of the batch before. */
static bool start_or_run(struct wq_xfer_out *o, struct item *it, uv_work_cb fn)
{
	if (!cheap_work(it, fn)) {
		start_work(o, it, fn);
		return false;
	}
	it->busy = true;
	o->busy++;
	it->work.data = it;
	fn(&it->work);
	after_work(&it->work, 0);
	return true;
}

/* ---- beginning ---------------------------------------------------------------------------- */

/* Gives IT the next id on the wire; false (IT failed) when the connection has used them all. */
static bool take_wire_id(struct wq_xfer_out *o, struct item *it)
{
	if (o->last_id == UINT32_MAX) {
		if (it->err == 0) {
			it->err = -EOVERFLOW;
			it->err_text = xstrdup("every transfer id of this connection was used");
		}
		return false;
	}
	it->id = ++o->last_id;
	return true;
}

static void begin_file(struct wq_xfer_out *o, struct item *it)
{
	if (it->err < 0 || !take_wire_id(o, it)) {
		/* not open: nothing was sent */
		finish_item(o, it, WQ_XFER_FAILED, NOCODE,
		            it->err_text ? it->err_text : htc_strerror(it->err));
		return;
	}
	DL_DELETE(o->waiting, it);
	DL_APPEND(o->open, it);
	it->state = ST_OPEN;
	o->nopen_files++;
	json_t *target = it->target;
	send_msg(o, json_pack("{s:s, s:I, s:O, s:I, s:s, s:b}", "m", "xfer_begin", "xfer",
	                      (json_int_t)it->id, "target", target, "size", (json_int_t)it->size,
	                      "enc", it->zlib ? "zlib" : "none", "exec", it->exec));
	debug(D_WQ, "%s: transfer %u begins: %lld bytes%s", wq_conn_name(o->c), it->id,
	      (long long)it->size, it->zlib ? ", zlib" : "");
	if (it->out_len || it->offset == (uint64_t)it->size)
		after_chunk(o, it, NULL, 0); /* the first block read by prep, or size 0 */
}

static void begin_dir(struct wq_xfer_out *o, struct item *d)
{
	if (d->err < 0 || !take_wire_id(o, d)) {
		finish_item(o, d, WQ_XFER_FAILED, NOCODE,
		            d->err_text ? d->err_text : htc_strerror(d->err));
		return;
	}
	DL_DELETE(o->waiting, d);
	DL_APPEND(o->open, d);
	d->state = ST_OPEN;
	o->nopen_dirs++;
	d->sent = wq_listing_create();
	send_msg(o, json_pack("{s:s, s:I, s:O}", "m", "dir_begin", "dir", (json_int_t)d->id,
	                      "target", d->target));
	/* the members go first: the directory holds the only directory slot until they end */
	struct item *rest = o->waiting;
	o->waiting = NULL;
	size_t n = wq_listing_count(d->walk);
	for (size_t i = 0; i < n && !o->dead; i++) {
		const struct wq_listing_entry *e = wq_listing_get(d->walk, i);
		if (e->is_dir) {
			wq_listing_add_dir(d->sent, e->path);
			send_msg(o, json_pack("{s:s, s:I, s:s}", "m", "dir_mkdir", "dir",
			                      (json_int_t)d->id, "member", e->path));
			continue;
		}
		json_t *t = json_pack("{s:I, s:s}", "dir", (json_int_t)d->id, "member", e->path);
		int fl = (d->flags & WQ_XFER_ZLIB) | (e->exec ? WQ_XFER_EXEC : 0);
		struct item *m = item_new(o, ITEM_FILE, t, fl, NULL);
		json_decref(t);
		m->dir = d;
		m->member = xstrdup(e->path);
		m->path = path_join(d->path, e->path);
		m->size = (int64_t)e->size;
		d->members_left++;
	}
	DL_CONCAT(o->waiting, rest);
	wq_listing_delete(d->walk);
	d->walk = NULL;
	dir_check_end(o, d);
}

static void pump_once(struct wq_xfer_out *o)
{
	/* prepare the first few waiting items */
	size_t k = 0;
	struct item *it, *tmp;
	DL_FOREACH(o->waiting, it)
	{
		if (k++ >= WQ_XFER_MAX_OPEN)
			break;
		if (it->state == ST_NEW) {
			if (it->kind == ITEM_FILE && it->is_buffer && !(it->flags & WQ_XFER_ZLIB)) {
				it->sha = sha256_ctx_create();
				it->state = it->sha ? ST_READY : ST_PREP;
				if (!it->sha)
					start_work(o, it, work_prep);
			} else {
				it->state = ST_PREP;
				if (start_or_run(o, it, work_prep)) {
					o->repump = true; /* the list may have changed */
					break;
				}
			}
		}
	}
	/* begin in order (ids on the wire are given as they begin) */
	while (!o->dead && (it = o->waiting) && it->state == ST_READY) {
		if (it->kind == ITEM_FILE) {
			if (o->nopen_files >= WQ_XFER_MAX_OPEN && it->err == 0)
				break;
			begin_file(o, it);
		} else {
			if (o->nopen_dirs >= WQ_XFER_MAX_OPEN_DIRS && it->err == 0)
				break;
			begin_dir(o, it);
		}
		if (o->deleted)
			return;
		o->repump = true; /* prepare the items that moved up */
	}
	/* read the next chunks */
	DL_FOREACH_SAFE(o->open, it, tmp)
	{
		if (o->dead || wq_conn_write_blocked(o->c))
			break;
		if (it->kind != ITEM_FILE || it->busy || it->state != ST_OPEN)
			continue;
		if (it->cancel || it->refused) {
			after_chunk(o, it, NULL, 0); /* may change the lists: start over */
			o->repump = true;
			break;
		}
		if (it->offset < (uint64_t)it->size && start_or_run(o, it, work_chunk)) {
			o->repump = true; /* the list may have changed */
			break;
		}
	}
}

static void pump(struct wq_xfer_out *o)
{
	if (o->deleted)
		return;
	if (o->pumping) {
		o->repump = true;
		return;
	}
	o->pumping = true;
	hold(o);
	do {
		o->repump = false;
		pump_once(o);
	} while (o->repump && !o->deleted);
	o->pumping = false;
	release(o);
}

/* ---- public entry points ----------------------------------------------------------------------
 */

struct wq_xfer_out *wq_xfer_out_create(uv_loop_t *loop, struct wq_conn *c, bool zlib_ok,
                                       const struct wq_xfer_out_callbacks *cb, void *user)
{
	struct wq_xfer_out *o = xcalloc(1, sizeof *o);
	o->loop = loop;
	o->c = c;
	o->zlib_ok = zlib_ok;
	if (cb)
		o->cb = *cb;
	o->user = user;
	return o;
}

void wq_xfer_out_delete(struct wq_xfer_out *o)
{
	if (!o)
		return;
	o->deleted = true;
	if (o->guard > 0)
		return; /* inside a callback: the section's end drops the items */
	drop_items(o);
	maybe_free_out(o);
}

/* Gives the owner back the tag of an item that never reached its sent callback. */
static void drop_tag(struct wq_xfer_out *o, struct item *it)
{
	if (it->tag && !it->reported && o->cb.dropped)
		o->cb.dropped(o, it->tag, o->user);
	it->tag = NULL;
}

/* Frees the items that no thread holds; busy ones are freed when their work comes back. */
static void drop_items(struct wq_xfer_out *o)
{
	struct item *it, *tmp;
	DL_FOREACH_SAFE(o->waiting, it, tmp)
	{
		DL_DELETE(o->waiting, it);
		it->state = ST_FINISHED;
		drop_tag(o, it);
		if (!it->busy)
			item_free(it);
	}
	DL_FOREACH_SAFE(o->open, it, tmp)
	{
		DL_DELETE(o->open, it);
		it->state = ST_FINISHED;
		drop_tag(o, it);
		if (!it->busy)
			item_free(it);
	}
}

int wq_xfer_out_abort(struct wq_xfer_out *o, uint32_t handle, const char *reason)
{
	if (!o || o->deleted)
		return -ENOENT;
	if (!reason)
		reason = "aborted";
	struct item *it;
	DL_SEARCH_SCALAR(o->waiting, it, handle, handle);
	if (!it)
		DL_SEARCH_SCALAR(o->open, it, handle, handle);
	if (!it || it->dir)
		return -ENOENT;
	hold(o);
	if (it->state != ST_OPEN) {
		finish_item(o, it, WQ_XFER_ABORTED, NOCODE, reason); /* never announced */
	} else if (it->kind == ITEM_DIR) {
		dir_fail(o, it, WQ_XFER_ABORTED, NOCODE, reason);
		dir_check_end(o, it);
	} else {
		if (it->err == 0) {
			it->err = -ECANCELED;
			free(it->err_text);
			it->err_text = xstrdup(reason);
		}
		if (!it->busy)
			after_chunk(o, it, NULL, 0);
	}
	pump(o);
	release(o);
	return 0;
}

void wq_xfer_out_writable(struct wq_xfer_out *o)
{
	if (o)
		pump(o);
}

int wq_xfer_out_message(struct wq_xfer_out *o, json_t *msg, const char *name)
{
	if (strcmp(name, "xfer_error") != 0)
		return 0;
	struct wq_xfer_error *e = NULL;
	char *why = NULL;
	int r = wq_msg_xfer_error_parse(msg, &e, &why);
	if (r < 0) {
		wq_conn_violation(o->c, "proto", "%s", why);
		free(why);
		return HTC_EPROTO;
	}
	uint32_t id = (uint32_t)e->id;
	struct item *it;
	DL_SEARCH_SCALAR(o->open, it, id, id);
	if (!it) {
		if (o->cb.peer_error)
			o->cb.peer_error(o, id, e->code, e->text, o->user);
		wq_xfer_error_free(e);
		return 0;
	}
	debug(D_WQ, "%s: transfer %u refused by the peer: %s", wq_conn_name(o->c), id, e->text);
	hold(o);
	if (it->kind == ITEM_DIR) {
		it->refuse_code = e->code;
		dir_fail(o, it, WQ_XFER_REFUSED, e->code, e->text);
		dir_check_end(o, it);
	} else {
		it->refused = true;
		it->refuse_code = e->code;
		free(it->refuse_text);
		it->refuse_text = xstrdup(e->text);
		if (!it->busy)
			after_chunk(o, it, NULL, 0);
	}
	wq_xfer_error_free(e);
	pump(o);
	release(o);
	return 0;
}
