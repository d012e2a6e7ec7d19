/* worker_shared_session.c: a worker's use of its shared store during a session (protocol 5.12,
 * doc/work-queue-shared-cache.md). Objects the master sends are locked while they arrive and
 * published when they are in the worker's cache; objects the master says to take are awaited in
 * the store, linked (or copied and checked) into the cache, and reported with `cache_taken`.
 * Directory objects (capability `shared_dirs`) go the same way, as trees of linked files. */
#include "worker_shared_session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uthash.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "worker_cache.h"
#include "worker_opts.h"
#include "worker_session_internal.h"
#include "worker_shared_cache.h"
#include "wq_listing.h"
#include "wq_conn.h"
#include "xalloc.h"
#include "banned.h"

#define COPY_CHUNK  (256 * 1024)
#define TAKE_XFER_0 (UINT64_C(1) << 48) /* partial names of takes: above every transfer id */

/* The lock of an object being received from the master. */
struct held {
	char name[WORKER_CACHE_NAME_LEN + 1];
	int fd; /* -1: another process held it at xfer_begin */
	UT_hash_handle hh;
};

struct worker_shared {
	struct worker_shared_cache *store;
	struct held *held; /* by name */
	uint64_t take_seq;
};

struct job {
	uv_work_t req;
	struct worker *w;
	struct wq_conn *conn; /* the session's connection when the job began */
	char name[WORKER_CACHE_NAME_LEN + 1];
	int lock;                       /* publish: the lock to release at the end, or -1 */
	struct worker_cache_partial *p; /* take: the partial of the worker's cache */
	uint64_t size;
	int rc;
};

struct worker_shared *worker_shared_open(const struct worker_opts *o, char **err)
{
	char *dir = NULL;
	if (path_is_absolute(o->shared_cache)) {
		dir = xstrdup(o->shared_cache);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			*err = xasprintf("--shared-cache %s: %s", o->shared_cache, strerror(errno));
			return NULL;
		}
		dir = path_join(cwd, o->shared_cache);
	}
	char *why = NULL;
	struct worker_shared_cache *store = worker_shared_cache_open(
	    dir, (uint64_t)o->shared_cache_limit << 20, o->shared_cache_leases, &why);
	if (!store) {
		*err = xasprintf("--shared-cache %s: %s", o->shared_cache, why);
		free(why);
		free(dir);
		return NULL;
	}
	uint64_t n = 0, bytes = 0;
	worker_shared_cache_stat(store, &n, &bytes);
	double lease = worker_shared_cache_lease_timeout(store);
	notice("shared cache %s: store %s, %llu objects, %llu MB%s", dir,
	       worker_shared_cache_id(store), (unsigned long long)n,
	       (unsigned long long)(bytes >> 20), lease > 0 ? ", lease locks" : "");
	free(dir);
	struct worker_shared *sh = xcalloc(1, sizeof *sh);
	sh->store = store;
	return sh;
}

void worker_shared_delete(struct worker_shared *sh)
{
	if (!sh)
		return;
	struct held *h, *tmp;
	HASH_ITER(hh, sh->held, h, tmp)
	{
		HASH_DEL(sh->held, h);
		worker_shared_cache_unlock(sh->store, h->fd);
		free(h);
	}
	worker_shared_cache_close(sh->store);
	free(sh);
}

const char *worker_shared_id(const struct worker_shared *sh)
{
	return worker_shared_cache_id(sh->store);
}

struct worker_shared_cache *worker_shared_store(const struct worker_shared *sh)
{
	return sh->store;
}

/* ---- objects the master sends --------------------------------------------------------- */

void worker_shared_recv_begin(struct worker *w, const char *name)
{
	struct worker_shared *sh = worker_conn_shared(w);
	if (!sh || (name[0] != 'F' && name[0] != 'D'))
		return;
	struct held *h = NULL;
	HASH_FIND_STR(sh->held, name, h);
	if (h)
		return;
	h = xcalloc(1, sizeof *h);
	memcpy(h->name, name, sizeof h->name);
	h->fd = worker_shared_cache_lock(sh->store, name, false);
	if (h->fd < 0)
		debug(D_WORKER, "shared cache: %s: lock held elsewhere (%s): received privately",
		      name, strerror(-h->fd));
	HASH_ADD_STR(sh->held, name, h);
}

static void publish_work(uv_work_t *req)
{
	struct job *j = req->data;
	struct worker_shared *sh = worker_conn_shared(j->w);
	j->rc = worker_shared_cache_publish(sh->store, worker_cache_fd(worker_conn_cache(j->w)),
	                                    j->name);
}

static void publish_done(uv_work_t *req, int status)
{
	struct job *j = req->data;
	worker_shared_cache_unlock(worker_conn_shared(j->w)->store, j->lock);
	struct worker_session *s = worker_session_of(j->w);
	uint64_t size = 0;
	bool ok =
	    status == 0 && j->rc >= 0 && worker_cache_has(worker_conn_cache(j->w), j->name, &size);
	if (!ok)
		warn("shared cache: %s not published: %s", j->name,
		     status ? "cancelled" : htc_strerror(j->rc < 0 ? j->rc : -ENOENT));
	if (s && s->active && !s->closing && (s->caps & WQ_CAP_SHARED_CACHE) &&
	    (j->name[0] == 'F' || (s->caps & WQ_CAP_SHARED_DIRS))) {
		/* published, or not: then the master sends it to the workers of the store that
		 * wait for it (protocol 5.12) */
		json_t *m = ok ? json_pack("{s:s,s:[[s,I]],s:b}", "m", "store_have", "objects",
		                           j->name, (json_int_t)size, "last", true)
		               : json_pack("{s:s,s:[],s:b,s:[s]}", "m", "store_have", "objects",
		                           "last", true, "failed", j->name);
		ws_send(s, m);
	}
	free(j);
}

void worker_shared_recv_end(struct worker *w, const char *name, bool ok)
{
	struct worker_shared *sh = worker_conn_shared(w);
	if (!sh || (name[0] != 'F' && name[0] != 'D'))
		return;
	struct held *h = NULL;
	HASH_FIND_STR(sh->held, name, h);
	int lock = -1;
	if (h) {
		lock = h->fd;
		HASH_DEL(sh->held, h);
		free(h);
	}
	if (!ok) {
		worker_shared_cache_unlock(sh->store, lock);
		return;
	}
	struct job *j = xcalloc(1, sizeof *j);
	j->req.data = j;
	j->w = w;
	j->lock = lock;
	memcpy(j->name, name, sizeof j->name);
	if (uv_queue_work(worker_loop(w), &j->req, publish_work, publish_done) < 0) {
		worker_shared_cache_unlock(sh->store, lock);
		free(j);
	}
}

/* ---- what the store holds, at connection ---------------------------------------------- */

struct announce {
	struct worker_session *s;
	json_t *objs;
	size_t total;
};

static void announce_flush(struct announce *a)
{
	if (json_array_size(a->objs) == 0)
		return;
	ws_send(a->s,
	        json_pack("{s:s,s:o,s:b}", "m", "store_have", "objects", a->objs, "last", true));
	a->objs = json_array();
}

static int announce_one(const char *name, uint64_t size, void *arg)
{
	struct announce *a = arg;
	if (name[0] != 'F' && !(name[0] == 'D' && (a->s->caps & WQ_CAP_SHARED_DIRS)))
		return 0;
	json_array_append_new(a->objs, json_pack("[s,I]", name, (json_int_t)size));
	a->total++;
	if (json_array_size(a->objs) >= WQ_OBJECTS_MAX)
		announce_flush(a);
	return 0;
}

void worker_shared_announce(struct worker_session *s)
{
	struct worker_shared *sh = worker_conn_shared(W(s));
	if (!sh || !(s->caps & WQ_CAP_SHARED_CACHE))
		return;
	struct announce a = {s, json_array(), 0};
	worker_shared_cache_foreach(sh->store, announce_one, &a);
	announce_flush(&a);
	json_decref(a.objs);
	debug(D_WORKER, "shared cache: %zu objects of the store announced", a.total);
}

/* ---- cache_take ------------------------------------------------------------------------ */

/* Copies object NAME of the store into partial P, hashing it (P's finish checks it against
 * the name). */
static int copy_into(int objects_fd, const char *name, struct worker_cache_partial *p)
{
	int fd = openat(objects_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *buf = xmalloc(COPY_CHUNK);
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, buf, COPY_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		if ((r = worker_cache_partial_write(p, buf, (size_t)n)) < 0)
			break;
	}
	free(buf);
	close(fd);
	return r < 0 ? r : worker_cache_partial_finish(p, name + 2);
}

/* Fills partial P with directory object NAME of the store (its lock held) and checks the tree
 * against the name (P's finish_dir). */
static int take_dir(const struct worker_shared_cache *store, const char *name, uint64_t size,
                    struct worker_cache_partial *p)
{
	struct wq_listing *l = NULL;
	int r = worker_shared_cache_take_dir(store, name, size, worker_cache_partial_dirfd(p), &l);
	char hex[SHA256_HEX_SIZE];
	if (r == 0)
		r = wq_listing_hash(l, hex);
	if (r == 0)
		r = worker_cache_partial_finish_dir(p, l, wq_listing_count(l), hex);
	else
		worker_cache_partial_abort(p);
	wq_listing_delete(l);
	return r;
}

static void take_work(uv_work_t *req)
{
	struct job *j = req->data;
	struct worker_shared *sh = worker_conn_shared(j->w);
	int lock = worker_shared_cache_await(sh->store, j->name, j->size);
	if (lock < 0) {
		worker_cache_partial_abort(j->p);
		j->rc = lock;
		return;
	}
	int ofd = worker_shared_cache_objects_fd(sh->store);
	if (j->name[0] == 'D') {
		j->rc = take_dir(sh->store, j->name, j->size, j->p);
	} else {
		j->rc = worker_cache_partial_link(j->p, ofd, j->name);
		if (j->rc == -EXDEV)
			j->rc = copy_into(ofd, j->name, j->p);
	}
	worker_shared_cache_unlock(sh->store, lock);
}

static void send_taken(struct worker_session *s, const char *name, bool ok, uint64_t size,
                       const char *text)
{
	json_t *m = json_pack("{s:s,s:s,s:b,s:I}", "m", "cache_taken", "object", name, "ok", ok,
	                      "size", (json_int_t)size);
	if (m && text)
		json_object_set_new(m, "text", json_string(text));
	ws_send(s, m);
}

static void take_done(uv_work_t *req, int status)
{
	struct job *j = req->data;
	struct worker *w = j->w;
	bool ok = status == 0 && j->rc == 0;
	worker_cache_end(worker_conn_cache(w), j->p, ok);
	worker_ledger_set_cache(worker_ledger(w),
	                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
	struct worker_session *s = worker_session_of(w);
	if (s && s->conn == j->conn && !s->closing) {
		ws_pending_set(s, j->name, false);
		char text[160];
		snprintf(text, sizeof text, "not in the shared store: %s",
		         j->rc == -ENOENT  ? "missing"
		         : j->rc == -EFBIG ? "another size"
		                           : htc_strerror(j->rc));
		debug(D_WORKER, "shared cache: take %s: %s", j->name, ok ? "done" : text);
		send_taken(s, j->name, ok, j->size, ok ? NULL : text);
		if (ok)
			ws_object_arrived(s, j->name);
	}
	free(j);
}

void worker_shared_on_take(struct worker_session *s, json_t *msg)
{
	struct worker *w = W(s);
	struct worker_shared *sh = worker_conn_shared(w);
	if (!sh || !(s->caps & WQ_CAP_SHARED_CACHE)) {
		wq_conn_violation(s->conn, "proto",
		                  "message \"cache_take\" needs capability \"shared_cache\"");
		return;
	}
	struct wq_cache_take *t = NULL;
	char *why = NULL;
	if (wq_msg_cache_take_parse(msg, false, (s->caps & WQ_CAP_SHARED_DIRS) != 0, &t, &why) <
	    0) {
		wq_conn_violation(s->conn, "proto", "%s", why);
		free(why);
		return;
	}
	struct worker_cache *c = worker_conn_cache(w);
	uint64_t have = 0;
	if (worker_cache_has(c, t->object, &have)) {
		send_taken(s, t->object, true, have, NULL);
		wq_cache_take_free(t);
		return;
	}
	struct worker_cache_partial *p = NULL;
	int e = worker_cache_begin(c, t->object, WORKER_CACHE_KEEP_RUN,
	                           TAKE_XFER_0 + ++sh->take_seq, (uint64_t)t->size, &p);
	if (e < 0) {
		send_taken(s, t->object, false, (uint64_t)t->size,
		           e == HTC_EDUP ? "being received already" : htc_strerror(e));
		wq_cache_take_free(t);
		return;
	}
	struct job *j = xcalloc(1, sizeof *j);
	j->req.data = j;
	j->w = w;
	j->conn = s->conn;
	j->p = p;
	j->lock = -1;
	j->size = (uint64_t)t->size;
	memcpy(j->name, t->object, sizeof j->name);
	wq_cache_take_free(t);
	ws_pending_set(s, j->name, true);
	if (uv_queue_work(worker_loop(w), &j->req, take_work, take_done) < 0) {
		worker_cache_end(c, p, false);
		ws_pending_set(s, j->name, false);
		send_taken(s, j->name, false, j->size, "cannot start the take");
		free(j);
	}
}
