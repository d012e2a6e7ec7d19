/* worker_fetch.c: the worker's downloads of URL inputs into its cache (doc/work-queue-protocol.md
 * 5.5). Each download is a libcurl easy handle run in the libuv thread pool (at most
 * max_active at once, so the pool keeps threads for the worker's own disk work): the body goes
 * to a spool file under cache/.partial as it arrives, hashed on the way, and is then stored as a
 * cache object through worker_cache_begin / worker_cache_partial_* / worker_cache_end, whose
 * partials need their size up front. Cancelling sets a flag the transfer's progress callback reads.
 * With a shared store (--shared-cache), a download first takes the object's lock in the store:
 * an object already there is linked into the cache instead of fetched, and one fetched is
 * published into the store before the lock is released, so the workers of one store fetch
 * each URL object once (doc/work-queue-shared-cache.md).
 */
#include "worker_fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uthash.h>
#include <utlist.h>

#include "config.h"
#include "curl_init.h"
#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "sha256.h"
#include "worker_cache.h"
#include "worker_sandbox.h"
#include "worker_shared_cache.h"
#include "xalloc.h"
#include "banned.h"

#define COPY_CHUNK (256 * 1024)
#define ID_BIT     (UINT64_C(1) << 62) /* above every transfer id a master can use */

enum job_state { JOB_QUEUED, JOB_FETCHING, JOB_STORING };

struct job {
	struct worker_fetch *f; /* NULL once the fetcher is deleted (detached) */
	struct worker_cache *cache;
	uv_loop_t *loop;
	char object[WORKER_CACHE_NAME_LEN + 1];
	char *url;
	uint64_t limit;
	int refs;
	bool orphan; /* every user released it: out of the index, no failure callback */
	enum job_state state;
	atomic_int cancel;
	uv_work_t req;
	uint64_t id;
	int cache_fd;
	char spool[64]; /* relative to the cache directory */
	struct worker_fetch_opts o;
	struct worker_shared_cache *store; /* NULL: none, or not shared */
	int lock;                          /* the object's lock in the store, or -1 */
	/* Written by the thread, read on the loop after it. */
	int status;
	char *text;
	int werr; /* error of the write callback */
	int spool_fd;
	struct sha256_ctx *ctx;
	uint64_t size;
	bool from_store; /* the store has the object: no download */
	char sha[SHA256_HEX_SIZE];
	struct worker_cache_partial *p;
	UT_hash_handle hh;
	struct job *prev, *next; /* queue or flight list */
};

struct worker_fetch {
	uv_loop_t *loop;
	struct worker_cache *cache;
	struct worker_fetch_opts o;
	struct worker_shared_cache *store;
	worker_fetch_done_fn done;
	void *arg;
	struct job *index;  /* jobs with users, by object */
	struct job *queue;  /* waiting for a slot */
	struct job *flight; /* in the thread pool */
	int active;         /* jobs in JOB_FETCHING */
	uint64_t base, seq;
};

static void job_free(struct job *j)
{
	if (j->lock >= 0)
		worker_shared_cache_unlock(j->store, j->lock);
	free(j->url);
	free(j->text);
	free(j);
}

static void set_text(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_text(struct job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *t = NULL;
	if (vasprintf(&t, fmt, ap) < 0)
		t = NULL;
	va_end(ap);
	free(j->text);
	j->text = t;
}

/* ---- in the thread pool ------------------------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n;
	if (atomic_load(&j->cancel))
		return 0;
	if (len > j->limit - j->size) {
		j->werr = HTC_ETOOBIG;
		return 0;
	}
	int r = full_write(j->spool_fd, ptr, len);
	if (r == 0)
		r = sha256_ctx_update(j->ctx, ptr, len);
	if (r < 0) {
		j->werr = r;
		return 0;
	}
	j->size += len;
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	struct job *j = arg;
	return atomic_load(&j->cancel) ? 1 : 0;
}

static bool scheme_allowed(const char *url)
{
	return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

/* Runs the transfer into the spool file. 0, or a negative error with j->text. */
static int run_curl(struct job *j)
{
	CURL *c = curl_easy_init();
	if (!c) {
		set_text(j, "%s: cannot start libcurl", j->url);
		return -ENOMEM;
	}
	char errbuf[CURL_ERROR_SIZE];
	errbuf[0] = 0;
	curl_easy_setopt(c, CURLOPT_URL, j->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, j->o.max_redirects);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, j->o.connect_timeout_s);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, j->o.low_speed_limit);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, j->o.low_speed_time_s);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)j->limit);
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "htc-worker/" HTC_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, j);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);

	if (atomic_load(&j->cancel)) {
		set_text(j, "%s: cancelled", j->url);
		return -ECANCELED;
	}
	if (j->werr == HTC_ETOOBIG || rc == CURLE_FILESIZE_EXCEEDED) {
		set_text(j, "%s: larger than the %llu bytes free on the worker", j->url,
		         (unsigned long long)j->limit);
		return HTC_ETOOBIG;
	}
	if (j->werr) {
		set_text(j, "%s: cannot store it: %s", j->url, htc_strerror(j->werr));
		return j->werr;
	}
	if (rc == CURLE_HTTP_RETURNED_ERROR || (rc == CURLE_OK && (code < 200 || code > 299))) {
		set_text(j, "HTTP %ld for %s", code, j->url);
		return -EIO;
	}
	if (rc != CURLE_OK) {
		set_text(j, "%s: %s", j->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	return 0;
}

/* With a store: waits for the object's lock (a worker of the store fetching it holds it) and
 * looks for the object. True when that decided the job: the store has it (j->from_store, its
 * size in j->size) or it is larger than the limit (j->status). The lock is kept either way, until
 * the object is in the cache, or published after this worker fetched it, so that the store's
 * other workers wait for it rather than fetch it too. */
static bool store_lookup(struct job *j)
{
	j->lock = worker_shared_cache_lock(j->store, j->object, true);
	if (j->lock < 0) {
		debug(D_WORKER, "fetch %s: no lock in the shared cache (%s): fetched privately",
		      j->url, htc_strerror(j->lock));
		j->lock = -1;
		return false;
	}
	struct stat st;
	if (fstatat(worker_shared_cache_objects_fd(j->store), j->object, &st, AT_SYMLINK_NOFOLLOW) <
	        0 ||
	    !S_ISREG(st.st_mode))
		return false;
	if ((uint64_t)st.st_size > j->limit) {
		set_text(j, "%s: larger than the %llu bytes free on the worker", j->url,
		         (unsigned long long)j->limit);
		j->status = HTC_ETOOBIG;
		return true;
	}
	j->from_store = true;
	j->size = (uint64_t)st.st_size;
	return true;
}

static void fetch_work(uv_work_t *req)
{
	struct job *j = req->data;
	j->spool_fd = -1;
	if (atomic_load(&j->cancel)) {
		set_text(j, "%s: cancelled", j->url);
		j->status = -ECANCELED;
		return;
	}
	if (!scheme_allowed(j->url)) {
		set_text(j,
		         "%s: only http and https URLs are fetched (a worker reading other "
		         "schemes, such as file://, would escape its sandbox)",
		         j->url);
		j->status = HTC_EUNSUP;
		return;
	}
	if (j->limit == 0) {
		set_text(j, "%s: no free disk space on the worker", j->url);
		j->status = HTC_ETOOBIG;
		return;
	}
	if (j->store && store_lookup(j))
		return;
	j->ctx = sha256_ctx_create();
	j->spool_fd = openat(j->cache_fd, j->spool, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (!j->ctx || j->spool_fd < 0) {
		int e = j->ctx ? -errno : -ENOMEM;
		set_text(j, "%s: cannot create %s in the cache: %s", j->url, j->spool,
		         htc_strerror(e));
		j->status = e;
		goto out;
	}
	j->status = run_curl(j);
	if (close(j->spool_fd) < 0 && j->status == 0) {
		j->status = -errno;
		set_text(j, "%s: cannot store it: %s", j->url, htc_strerror(j->status));
	}
	j->spool_fd = -1;
	if (j->status == 0)
		j->status = sha256_ctx_final(j->ctx, j->sha);
	if (j->status < 0)
		unlinkat(j->cache_fd, j->spool, 0);
out:
	if (j->spool_fd >= 0)
		close(j->spool_fd);
	j->spool_fd = -1;
	sha256_ctx_delete(j->ctx);
	j->ctx = NULL;
}

/* Reads FD to its end into the cache partial of J: with CTX, hashing each chunk into CTX and
 * storing it unhashed (worker_cache_partial_store), else with worker_cache_partial_write. A
 * cancel stops it. 1 at the end, or a negative error. */
static int read_into_partial(struct job *j, int fd, struct sha256_ctx *ctx)
{
	char *buf = malloc(COPY_CHUNK);
	int r = buf ? 0 : -ENOMEM;
	while (r == 0) {
		if (atomic_load(&j->cancel)) {
			r = -ECANCELED;
			break;
		}
		ssize_t n = read(fd, buf, COPY_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 1;
			break;
		}
		if (!ctx)
			r = worker_cache_partial_write(j->p, buf, (size_t)n);
		else if ((r = sha256_ctx_update(ctx, buf, (size_t)n)) == 0)
			r = worker_cache_partial_store(j->p, buf, (size_t)n);
	}
	free(buf);
	return r;
}

/* Copies the spool into the cache partial and finishes it. */
static int store_spool(struct job *j)
{
	int fd = openat(j->cache_fd, j->spool, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? -errno : read_into_partial(j, fd, NULL);
	if (r == 1)
		r = worker_cache_partial_finish(j->p, j->sha);
	else
		worker_cache_partial_abort(j->p);
	if (fd >= 0)
		close(fd);
	return r < 0 ? r : 0;
}

/* Copies the store's object into the cache partial (another file system), hashing what it
 * stores. */
static int copy_from_store(struct job *j, int objects_fd)
{
	int fd = openat(objects_fd, j->object, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct sha256_ctx *ctx = fd >= 0 ? sha256_ctx_create() : NULL;
	int r = fd < 0 ? -errno : !ctx ? -ENOMEM : read_into_partial(j, fd, ctx);
	char hex[SHA256_HEX_SIZE];
	if (r == 1)
		r = sha256_ctx_final(ctx, hex);
	if (r == 0)
		r = worker_cache_partial_finish_hashed(j->p, hex, hex);
	else
		worker_cache_partial_abort(j->p);
	sha256_ctx_delete(ctx);
	if (fd >= 0)
		close(fd);
	return r;
}

/* Stores the download in the cache: from the spool (removed in every case), or from the store;
 * an object this worker fetched is then published into the store, and the store's lock is
 * released. */
static void store_work(uv_work_t *req)
{
	struct job *j = req->data;
	int r = 0;
	if (j->p && j->from_store) {
		int ofd = worker_shared_cache_objects_fd(j->store);
		r = worker_cache_partial_link(j->p, ofd, j->object);
		if (r == -EXDEV)
			r = copy_from_store(j, ofd);
		if (r < 0) {
			j->status = r;
			set_text(j, "%s: cannot take it from the shared cache: %s", j->url,
			         htc_strerror(r));
		}
	} else if (j->p) {
		r = store_spool(j);
		if (r < 0) {
			j->status = r;
			set_text(j, "%s: cannot store it in the cache: %s", j->url,
			         htc_strerror(r));
		}
	}
	if (!j->from_store)
		unlinkat(j->cache_fd, j->spool, 0);
	if (j->p && !j->from_store && j->status == 0 && j->lock >= 0) {
		r = worker_shared_cache_publish(j->store, j->cache_fd, j->object);
		if (r < 0)
			debug(D_WORKER, "fetch %s: not published in the shared cache: %s", j->url,
			      htc_strerror(r));
	}
	if (j->lock >= 0)
		worker_shared_cache_unlock(j->store, j->lock);
	j->lock = -1;
}

/* ---- on the loop ---------------------------------------------------------------------------- */

static void pump(struct worker_fetch *f);

/* The end of J (its spool is gone): the cache learns the outcome, the user is told. */
static void job_end(struct job *j)
{
	struct worker_fetch *f = j->f;
	if (j->p)
		worker_cache_end(j->cache, j->p, j->status == 0);
	j->p = NULL;
	if (j->status == 0 && j->size == 0)
		worker_cache_has(j->cache, j->object, &j->size);
	if (!f) {
		debug(D_WORKER, "fetch %s: detached download ended (%d)", j->url, j->status);
		job_free(j);
		return;
	}
	DL_DELETE(f->flight, j);
	if (!j->orphan)
		HASH_DEL(f->index, j);
	if (j->status == 0)
		debug(D_WORKER, "fetch %s: %s as %s (%llu bytes)", j->url,
		      j->from_store ? "taken from the shared cache" : "stored", j->object,
		      (unsigned long long)j->size);
	else
		debug(D_WORKER, "fetch %s: failed: %s", j->url, j->text ? j->text : "");
	if (!j->orphan || j->status == 0)
		f->done(j->object, j->status, j->size, j->text ? j->text : "fetch failed", f->arg);
	job_free(j);
}

static void store_after(uv_work_t *req, int status)
{
	(void)status; /* never cancelled with uv_cancel */
	job_end(req->data);
}

static void fetch_after(uv_work_t *req, int status)
{
	(void)status;
	struct job *j = req->data;
	struct worker_fetch *f = j->f;
	if (f) {
		f->active--;
		pump(f);
	}
	if (j->status < 0) {
		job_end(j); /* the thread removed the spool */
		return;
	}
	/* The download is complete in the spool: store it (or only remove the spool). */
	if (!atomic_load(&j->cancel)) {
		int r = worker_cache_begin(j->cache, j->object, WORKER_CACHE_KEEP_RUN, j->id,
		                           j->size, &j->p);
		if (r == HTC_EDUP) {
			debug(D_WORKER, "fetch %s: %s is already in the cache", j->url, j->object);
			j->size = 0;
		} else if (r < 0) {
			j->status = r;
			set_text(j, "%s: cannot store it in the cache: %s", j->url,
			         htc_strerror(r));
		}
	} else {
		j->status = -ECANCELED;
		set_text(j, "%s: cancelled", j->url);
	}
	j->state = JOB_STORING;
	if (uv_queue_work(j->loop, &j->req, store_work, store_after) < 0) {
		if (j->p)
			worker_cache_partial_abort(j->p);
		unlinkat(j->cache_fd, j->spool, 0);
		if (j->status == 0) {
			j->status = -EAGAIN;
			set_text(j, "%s: cannot queue the store", j->url);
		}
		job_end(j);
	}
}

static void pump(struct worker_fetch *f)
{
	while (f->queue && f->active < f->o.max_active) {
		struct job *j = f->queue;
		DL_DELETE(f->queue, j);
		j->state = JOB_FETCHING;
		j->req.data = j;
		if (uv_queue_work(f->loop, &j->req, fetch_work, fetch_after) < 0) {
			/* only when the loop is closing; the user still hears of it */
			j->status = -EAGAIN;
			set_text(j, "%s: cannot queue the download", j->url);
			DL_APPEND(f->flight, j);
			job_end(j);
			continue;
		}
		f->active++;
		DL_APPEND(f->flight, j);
	}
}

static long opt_or(long v, long dflt)
{
	return v > 0 ? v : dflt;
}

struct worker_fetch *worker_fetch_create(uv_loop_t *loop, struct worker_cache *cache,
                                         const struct worker_fetch_opts *o,
                                         worker_fetch_done_fn done, void *arg)
{
	static const struct worker_fetch_opts none;
	if (!o)
		o = &none;
	curl_init_once();
	struct worker_fetch *f = xcalloc(1, sizeof *f);
	f->loop = loop;
	f->cache = cache;
	f->done = done;
	f->arg = arg;
	f->o.connect_timeout_s = opt_or(o->connect_timeout_s, WORKER_FETCH_CONNECT_TIMEOUT_S);
	f->o.low_speed_time_s = opt_or(o->low_speed_time_s, WORKER_FETCH_LOW_SPEED_TIME_S);
	f->o.low_speed_limit = opt_or(o->low_speed_limit, WORKER_FETCH_LOW_SPEED_LIMIT);
	f->o.max_redirects = opt_or(o->max_redirects, WORKER_FETCH_MAX_REDIRECTS);
	f->o.max_active = (int)opt_or(o->max_active, WORKER_FETCH_MAX_ACTIVE);
	f->base = uv_hrtime();
	return f;
}

int worker_fetch_want(struct worker_fetch *f, const char *url, const char *object,
                      uint64_t size_limit)
{
	return worker_fetch_want_shared(f, url, object, size_limit, false);
}

int worker_fetch_want_shared(struct worker_fetch *f, const char *url, const char *object,
                             uint64_t size_limit, bool share)
{
	if (!f || !url || !*url || !worker_cache_name_valid(object) || object[0] != 'U')
		return -EINVAL;
	struct job *j = NULL;
	HASH_FIND_STR(f->index, object, j);
	if (j) {
		j->refs++;
		debug(D_WORKER, "fetch %s: joined (%d users)", url, j->refs);
		return 0;
	}
	j = xcalloc(1, sizeof *j);
	j->f = f;
	j->cache = f->cache;
	j->loop = f->loop;
	snprintf(j->object, sizeof j->object, "%s", object);
	j->url = xstrdup(url);
	j->limit = size_limit;
	j->refs = 1;
	j->o = f->o;
	j->id = ID_BIT | (f->base + ++f->seq);
	j->cache_fd = worker_cache_fd(f->cache);
	j->spool_fd = -1;
	j->store = share ? f->store : NULL;
	j->lock = -1;
	snprintf(j->spool, sizeof j->spool, ".partial/url.%llu", (unsigned long long)j->id);
	atomic_init(&j->cancel, 0);
	HASH_ADD_STR(f->index, object, j);
	DL_APPEND(f->queue, j);
	debug(D_WORKER, "fetch %s into %s (at most %llu bytes)", url, object,
	      (unsigned long long)size_limit);
	pump(f);
	return 0;
}

void worker_fetch_release(struct worker_fetch *f, const char *object)
{
	if (!f || !object)
		return;
	struct job *j = NULL;
	HASH_FIND_STR(f->index, object, j);
	if (!j || --j->refs > 0)
		return;
	HASH_DEL(f->index, j);
	if (j->state == JOB_QUEUED) {
		DL_DELETE(f->queue, j);
		debug(D_WORKER, "fetch %s: no longer wanted before it started", j->url);
		job_free(j);
		return;
	}
	debug(D_WORKER, "fetch %s: no longer wanted: cancelled", j->url);
	j->orphan = true;
	atomic_store(&j->cancel, 1);
}

void worker_fetch_set_store(struct worker_fetch *f, struct worker_shared_cache *store)
{
	f->store = store;
}

bool worker_fetch_busy(const struct worker_fetch *f, const char *object)
{
	struct job *j = NULL;
	if (!f || !object)
		return false;
	HASH_FIND_STR(f->index, object, j);
	return j != NULL;
}

int worker_fetch_count(const struct worker_fetch *f)
{
	return f ? (int)HASH_COUNT(f->index) : 0;
}

void worker_fetch_delete(struct worker_fetch *f)
{
	if (!f)
		return;
	struct job *j, *tmp;
	HASH_CLEAR(hh, f->index);
	DL_FOREACH_SAFE(f->queue, j, tmp)
	{
		DL_DELETE(f->queue, j);
		job_free(j);
	}
	DL_FOREACH_SAFE(f->flight, j, tmp)
	{
		DL_DELETE(f->flight, j);
		j->f = NULL;
		atomic_store(&j->cancel, 1);
	}
	free(f);
}
